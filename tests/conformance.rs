//! `rocelab conformance`: the qos_sai procedures pass on every preset, and a wrong
//! configuration shows the failing row (a too-small headroom) or is refused (XON above
//! XOFF).

use rocelab::config::{PRESETS, SwitchConfig};
use rocelab::conformance::{self, Status};

#[test]
fn every_preset_passes_every_check() {
    for (name, _) in PRESETS {
        let cfg = SwitchConfig::preset(name).unwrap();
        let report = conformance::run(&cfg, name);
        assert!(report.failing_ids().is_empty(), "{name}: {report:#?}");
        // Every kind of procedure ran.
        for id in [
            "pfc_xoff.",
            "pfc_xon.",
            "headroom.",
            "headroom_in_flight.",
            "watermark.",
            "lossy_drop.",
            "classification",
            "dwrr.",
            "watchdog.detect",
            "watchdog.restore",
        ] {
            assert!(
                report
                    .checks
                    .iter()
                    .any(|c| c.id.starts_with(id) && c.status == Status::Pass),
                "{name}: no passing {id} check"
            );
        }
        assert_eq!(report.schema, "rocelab.conformance/1");
    }
}

/// Headroom below what 100 G over 5 m needs: the configuration loads with a warning, the
/// fill procedures still match the configuration (they measure what is configured), and
/// the late-peer row fails with drops.
#[test]
fn a_too_small_headroom_fails_the_in_flight_row() {
    let text = rocelab::config::preset_text("default")
        .unwrap()
        .replace("[pg.3]", "[pg.3]\nheadroom_bytes = 20000");
    let cfg = SwitchConfig::from_toml(&text).unwrap();
    assert!(cfg.lint().iter().any(|w| w.key == "pg.3.headroom_bytes"));
    let report = conformance::run(&cfg, "small");
    let failed = report.failing_ids();
    assert_eq!(failed, ["headroom_in_flight.pg3.default"], "{report:#?}");
    let row = &report.checks.iter().find(|c| c.id == failed[0]).unwrap();
    assert!(
        row.measured.contains("drops") && !row.measured.starts_with("0 "),
        "{row:?}"
    );
}

#[test]
fn xon_above_xoff_is_refused() {
    let text = "[pfc]\nlossless = [3]\n[classify]\ndscp_to_tc = [[26, 3]]\n[buffer]\nthreshold = \"static\"\nqueue_limit_bytes = 100000\n[pg.3]\nxoff_bytes = 100000\nxon_bytes = 200000\n[queue.3]\n";
    let e = SwitchConfig::from_toml(text).unwrap_err();
    assert_eq!(e.key, "pg.3.xon_bytes", "{e}");
}

/// Configurations far from the presets finish, quickly, with nothing failing: PCP trust at
/// 1 Gb/s with a 1 MiB pool, no lossless priority at all, and a 1 TiB pool whose fills
/// are beyond the bench (those checks are skipped and say why).
#[test]
fn odd_configurations_finish_without_failing() {
    let pcp = "trust = \"pcp\"\n[port_defaults]\nspeed_gbps = 1\nmtu = 1500\n[pfc]\nlossless = [3]\n[buffer]\nshared_bytes = 1048576\n[queue.3]\n[queue.6]\nschedule = \"strict\"\n";
    let huge = rocelab::config::preset_text("default")
        .unwrap()
        .lines()
        .map(|l| {
            if l.starts_with("shared_bytes") {
                "shared_bytes = 1099511627776".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    for (name, text, skipped) in [
        ("pcp", pcp.to_owned(), 1),
        (
            "no lossless",
            "[port_defaults]\nspeed_gbps = 25\n".to_owned(),
            2,
        ),
        ("1 TiB", huge, 5),
    ] {
        let cfg = SwitchConfig::from_toml(&text).unwrap();
        let report = conformance::run(&cfg, name);
        assert_eq!(report.failed, 0, "{name}: {report:#?}");
        assert_eq!(report.skipped, skipped, "{name}: {report:#?}");
        assert!(
            report
                .checks
                .iter()
                .filter(|c| c.status == Status::Skip)
                .all(|c| !c.basis.is_empty())
        );
    }
}
