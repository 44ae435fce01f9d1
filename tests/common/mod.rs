//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub(crate) mod net;
pub(crate) mod peers;

use rocelab::capture::CaptureReader;
use rocelab::time::Nanos;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A path inside the repository.
pub(crate) fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// True when running in CI, where a skipped test is a failure.
pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips the calling test with a reason, or fails it under `CI=true`.
pub(crate) fn skip(test: &str, why: &str) {
    if in_ci() {
        panic!("{test}: cannot run under CI=true: {why}");
    }
    eprintln!("SKIPPED {test}: {why}");
}

/// True when `tool --version` runs; otherwise skips (or fails under CI).
pub(crate) fn have_tool(test: &str, tool: &str, install: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(test, &format!("{tool} is not installed ({install})"));
    }
    ok
}

/// True when python3 can import scapy; otherwise skips (or fails under CI).
pub(crate) fn have_scapy(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import scapy.contrib.roce"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            test,
            "python3 with scapy is not installed (pip install -r scripts/requirements.txt)",
        );
    }
    ok
}

/// True when python3 can import `module`; otherwise skips (or fails under CI).
pub(crate) fn have_python_module(test: &str, module: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(
            test,
            &format!("python3 cannot import {module} (pip install -r scripts/requirements.txt)"),
        );
    }
    ok
}

/// The environment variable naming the folder of third-party captures (`.ci/run` sets it
/// when the developers' captures are beside the checkout).
pub(crate) const SHARED_PCAPS_VAR: &str = "ROCELAB_SHARED_PCAPS";

/// The folder of third-party captures named by [`SHARED_PCAPS_VAR`], or `None`: the test
/// says it was skipped and why, and passes, also under `CI=true` (a clone with nothing
/// beside it has no such captures, and that is no failure). A variable that names a
/// folder that is not there fails the test: the captures were asked for.
pub(crate) fn shared_pcaps(test: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os(SHARED_PCAPS_VAR).filter(|d| !d.is_empty()) else {
        eprintln!(
            "SKIPPED {test}: {SHARED_PCAPS_VAR} is not set (it names a folder of third-party \
             RoCE captures, which the repository does not carry; .ci/run sets it when they \
             are there)"
        );
        return None;
    };
    let dir = PathBuf::from(dir);
    assert!(
        dir.is_dir(),
        "{test}: {SHARED_PCAPS_VAR}={} is not a folder",
        dir.display()
    );
    Some(dir)
}

/// Every frame of a capture, with its timestamp (every frame must have one).
pub(crate) fn read_frames(path: &Path) -> Vec<(Nanos, Vec<u8>)> {
    let mut reader =
        CaptureReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    while let Some(p) = reader
        .next_packet()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    {
        let ts = p
            .ts
            .unwrap_or_else(|| panic!("{}: frame {} has no timestamp", path.display(), p.number));
        out.push((ts, p.data.to_vec()));
    }
    out
}

/// Parses a number as tshark prints it: decimal or 0x-prefixed hex.
pub(crate) fn tshark_number(s: &str) -> u64 {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .unwrap_or_else(|e| panic!("tshark printed {s:?}, not a number: {e}"))
}

/// Replay options with the default preset, at capture speed, peers honouring pause,
/// writing `out`.
pub(crate) fn replay_options(
    inputs: rocelab::replay::Inputs,
    out: PathBuf,
) -> rocelab::replay::ReplayOptions {
    rocelab::replay::ReplayOptions {
        config: rocelab::config::SwitchConfig::preset("default").unwrap(),
        inputs,
        speed: 1.0,
        align_start: false,
        peer_ignores_pause: false,
        out: Some(out),
    }
}

/// Writes `frames` (capture time, bytes) as a pcap at `path`.
pub(crate) fn write_pcap(path: &Path, frames: impl IntoIterator<Item = (Nanos, Vec<u8>)>) {
    let mut w = rocelab::capture::PcapWriter::new(std::fs::File::create(path).unwrap()).unwrap();
    for (t, f) in frames {
        w.write_packet(t, &f).unwrap();
    }
    w.finish().unwrap();
}

/// Runs `cmd` with `input` on its standard input; its output, whatever its status.
pub(crate) fn run_with_input(cmd: &mut Command, input: &[u8]) -> std::process::Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Runs `cmd`, which must succeed and print one JSON document (`--json -`).
pub(crate) fn json_of(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What of document `v` (written by rocelab `what`) docs/json.md does not list: its schema
/// if that is not `rocelab.<kind>/1` or not in the document, and every object key the
/// document does not name, with the path where it was first seen.
pub(crate) fn undocumented_keys(what: &str, v: &serde_json::Value) -> Vec<String> {
    fn keys(
        v: &serde_json::Value,
        path: &str,
        out: &mut std::collections::BTreeSet<(String, String)>,
    ) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    out.insert((k.clone(), path.to_owned()));
                    keys(v, &format!("{path}.{k}"), out);
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    keys(item, &format!("{path}[]"), out);
                }
            }
            _ => {}
        }
    }
    let doc = std::fs::read_to_string(repo("docs/json.md")).unwrap();
    let mut missing = Vec::new();
    match v["schema"].as_str() {
        Some(schema) if schema.starts_with("rocelab.") && schema.ends_with("/1") => {
            if !doc.contains(&format!("`{schema}`")) {
                missing.push(format!("schema {schema}"));
            }
        }
        other => missing.push(format!("{what}: schema {other:?}")),
    }
    let mut found = std::collections::BTreeSet::new();
    keys(v, what, &mut found);
    for (k, path) in found {
        if !doc.contains(&format!("`{k}`")) && !doc.contains(&format!(".{k}`")) {
            missing.push(format!("{k} (at {path})"));
        }
    }
    missing
}
