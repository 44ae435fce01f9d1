//! The TOML parsers: the switch configuration, the endpoint configuration and simulator
//! scenarios. A scenario that validates is not run (a run can take long), only parsed,
//! validated and looked at. Nothing may panic, and no input may make validation slow or
//! allocate much (libFuzzer's -timeout and -rss_limit_mb catch that).
//!
//! A scenario's `switch.file` is read relative to a scratch directory that holds one
//! switch configuration, `switch.toml`; absolute paths and `..` are left out so that the
//! fuzzer cannot make it read /dev/zero or the rest of the machine.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rocelab::config::SwitchConfig;
use rocelab::config::endpoint::EndpointConfig;
use rocelab::sim::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = rocelab_fuzz::scratch_dir("config");
        std::fs::write(
            dir.join("switch.toml"),
            rocelab::config::preset_text("default").unwrap(),
        )
        .expect("switch.toml");
        dir
    })
}

/// A `switch.file` that stays inside the scratch directory, or none.
fn file_is_safe(text: &str) -> bool {
    let Ok(table) = text.parse::<toml::Table>() else {
        return true; // it will not parse as a scenario either
    };
    match table.get("switch").and_then(|s| s.get("file")) {
        Some(toml::Value::String(f)) => {
            let p = Path::new(f);
            p.is_relative()
                && p.components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        }
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cfg) = SwitchConfig::from_toml(text) {
        // What replay and the simulator do with a configuration.
        let mut c = cfg.clone();
        let port = c.port_or_default("fuzz");
        for pg in 0..rocelab::config::CLASSES {
            let _ = c.headroom_bytes(pg, &port);
        }
        c.disable_pfc();
        c.disable_ecn();
    }
    if let Ok(ep) = EndpointConfig::from_toml(text) {
        let _ = ep.validate("endpoint");
    }
    if file_is_safe(text) {
        if let Ok(s) = Scenario::from_toml("fuzz", text, Some(scratch())) {
            let _ = (
                s.topology.hosts(),
                s.flows.len(),
                s.allreduce.map(|a| a.sizes.len()),
            );
        }
    }
});
