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

/// The in-flight row checks the worst alignment of the headroom formula's delay model:
/// the pause waits behind a whole frame and the peer's last frame starts as its response
/// ends. At 100 Gb/s, 5 m, MTU 9216 the formula gives 44 345 B (2 x 9216, plus 625 for
/// 2 x 25 ns of cable at 100 Gb/s, plus 72 for the PFC frame, which the peer's response
/// waits to have whole, plus 394 quanta of 64 B). The peer's frames then fill
/// all of it but the 24 bytes of FCS, preamble and gap of each of the five frames in
/// flight, less the 14-byte header of the two MTU frames: 92 B. So 44 345 B passes and
/// 128 B less (two quanta) drops a frame; the row used to pass 4.5 KB less (it tried
/// eight alignments, none of them the worst).
#[test]
fn the_in_flight_row_holds_at_the_ieee_headroom_and_not_below() {
    let ieee = 2 * 9216 + 625 + 72 + 394 * 64;
    let run = |headroom: u64| {
        let text = rocelab::config::preset_text("default")
            .unwrap()
            .replace("[pg.3]", &format!("[pg.3]\nheadroom_bytes = {headroom}"));
        let cfg = SwitchConfig::from_toml(&text).unwrap();
        let report = conformance::run(&cfg, "edge");
        report
            .checks
            .into_iter()
            .find(|c| c.id == "headroom_in_flight.pg3.default")
            .unwrap()
    };
    let at = run(ieee);
    assert_eq!(at.status, Status::Pass, "{at:?}");
    let used: u64 = at.measured.split(' ').nth(2).unwrap().parse().unwrap();
    assert!(ieee - used <= 92 + 16, "{at:?}");
    let below = run(ieee - 128);
    assert_eq!(below.status, Status::Fail, "{below:?}");
    assert!(below.measured.starts_with("1 drops"), "{below:?}");
}

/// At 1 Gb/s the peer may take 2 quanta (IEEE 802.3 annex 31B.3.7, as sonic-swss lists
/// it), not 10 Gb/s's 67: with MTU 1500 and 5 m the formula gives 3 207 B (2 x 1500, 7 for
/// 2 x 25 ns of cable, 72 for the PFC frame, 128 for the response), and the in-flight row,
/// whose peer answers that late, passes there and drops a frame 128 B below.
#[test]
fn at_1_gbps_the_peer_answers_in_2_quanta() {
    assert_eq!(rocelab::config::peer_response_quanta(1_000_000_000), 2);
    assert_eq!(rocelab::config::peer_response_quanta(100_000_000), 1);
    assert_eq!(rocelab::config::peer_response_quanta(2_500_000_000), 67);
    let ieee = 2 * 1500 + 7 + 72 + 2 * 64;
    let run = |headroom: Option<u64>| {
        let mut text = rocelab::config::preset_text("default")
            .unwrap()
            .replace("speed_gbps = 100", "speed_gbps = 1")
            .replace("mtu = 9216", "mtu = 1500");
        if let Some(h) = headroom {
            text = text.replace("[pg.3]", &format!("[pg.3]\nheadroom_bytes = {h}"));
        }
        let cfg = SwitchConfig::from_toml(&text).unwrap();
        assert_eq!(
            cfg.headroom_bytes(3, &cfg.port_defaults),
            headroom.unwrap_or(ieee)
        );
        let report = conformance::run(&cfg, "1g");
        report
            .checks
            .into_iter()
            .find(|c| c.id == "headroom_in_flight.pg3.default")
            .unwrap()
    };
    let at = run(None);
    assert_eq!(at.status, Status::Pass, "{at:?}");
    let below = run(Some(ieee - 128));
    assert_eq!(below.status, Status::Fail, "{below:?}");
}

/// A headroom too small for the part of the trigger frame above the XOFF point (here 0):
/// the switch still sends XOFF as that frame reaches the point, as a hardware MMU pauses on
/// the crossing cell, and drops the frame. Before, no PFC was sent at all, and the
/// expected headroom watermark wrapped to 18446744073709550884 B. With a static XOFF at
/// 10 000 B and 1082 B frames, frame 10 reaches it (820 B above): 9 frames are held, the
/// shared watermark is theirs, 9 738 B, and nothing is in headroom.
#[test]
fn a_trigger_frame_that_does_not_fit_the_headroom_still_sends_xoff() {
    let text = rocelab::config::preset_text("default")
        .unwrap()
        .replace(
            "threshold = \"dynamic\"",
            "threshold = \"static\"\nqueue_limit_bytes = 100000",
        )
        .replace("pg_alpha = 1.0", "")
        .replace("queue_alpha = 0.5", "")
        .replace(
            "xon_offset_bytes = 2496",
            "xoff_bytes = 10000\nxon_bytes = 5000\nheadroom_bytes = 0",
        );
    let cfg = SwitchConfig::from_toml(&text).unwrap();
    let report = conformance::run(&cfg, "no headroom");
    let row = |id: &str| {
        report
            .checks
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{id}: {report:#?}"))
    };
    assert_eq!(row("pfc_xoff.pg3").measured, "frame 10", "{report:#?}");
    assert_eq!(row("headroom.pg3.default").measured, "9 frames");
    assert_eq!(row("watermark.pg3.shared").measured, "9738 B");
    assert_eq!(row("watermark.pg3.headroom").expected, "0 B");
    assert_eq!(
        report.failing_ids(),
        ["headroom_in_flight.pg3.default"],
        "{report:#?}"
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

/// At 10 Mb/s (and 1 and 20 Mb/s) an XOFF of 65535 quanta lasts 65535 × 512 / 1e7 =
/// 3.36 s and is refreshed every half of that, 1.68 s: longer than the bench's 600 ms
/// storm, so the stormed queue receives one pause, at the storm's start. The watchdog
/// polls every 200 ms: it detects the storm at the first poll 200 ms after the queue got
/// stuck, and restores it at the next poll, the first at which it is stormed and has
/// had no pause for 200 ms. The check expected the restore 200 ms after that one pause,
/// before the detection (QA: "200.000 ms to 400.000 ms FAIL 533.326 ms").
#[test]
fn at_slow_ports_the_watchdog_restores_at_the_poll_after_detection() {
    for gbps in ["0.01", "0.001", "0.02"] {
        let text = rocelab::config::preset_text("default")
            .unwrap()
            .replace("speed_gbps = 100", &format!("speed_gbps = {gbps}"));
        let cfg = SwitchConfig::from_toml(&text).unwrap();
        let report = conformance::run(&cfg, gbps);
        let row = |id: &str| report.checks.iter().find(|c| c.id == id).unwrap();
        let (detect, restore) = (
            row("watchdog.detect.queue3"),
            row("watchdog.restore.queue3"),
        );
        assert_eq!(detect.status, Status::Pass, "{gbps}: {detect:?}");
        assert_eq!(restore.status, Status::Pass, "{gbps}: {restore:?}");
        let ms = |s: &str| s.trim_end_matches(" ms").parse::<f64>().unwrap();
        let gap = ms(&restore.measured) - ms(&detect.measured);
        assert!((gap - 200.0).abs() < 1e-6, "{gbps}: {detect:?} {restore:?}");
    }
}

/// The classification check waited a fixed 100 µs for each frame to leave: at 10 Mb/s
/// and slower a 128-byte frame takes longer, and every code point was reported as going
/// to no queue ("0 of 64; DSCP 0 -> [] (expected 0), ..."). It now waits as long as the
/// port takes, and a frame its queue drops (a buffer too small for one frame) is seen by
/// that queue's drop counter rather than called misclassified.
#[test]
fn classification_passes_at_slow_ports_and_with_tiny_queues() {
    let default = rocelab::config::preset_text("default").unwrap();
    for gbps in ["0.01", "0.001"] {
        let text = default.replace("speed_gbps = 100", &format!("speed_gbps = {gbps}"));
        let cfg = SwitchConfig::from_toml(&text).unwrap();
        let report = conformance::run(&cfg, gbps);
        let row = report
            .checks
            .iter()
            .find(|c| c.id == "classification")
            .unwrap();
        assert_eq!(row.status, Status::Pass, "{gbps}: {row:?}");
        assert_eq!(row.measured, "64 of 64", "{gbps}");
    }
}

/// A shared buffer of 100 B holds no frame: the lossy queues drop every test frame. The
/// classification check sees those frames by their queue's drop counter (it called them
/// misclassified: "2 of 64"), and the DWRR check, whose queues cannot stay backlogged,
/// is not applicable (it failed with shares of 0 % and 100 %).
#[test]
fn a_buffer_too_small_for_one_frame_is_not_read_as_misclassification() {
    let text = rocelab::config::preset_text("default")
        .unwrap()
        .replace("shared_bytes = 33554432", "shared_bytes = 100");
    let cfg = SwitchConfig::from_toml(&text).unwrap();
    let report = conformance::run(&cfg, "tiny");
    let row = |id: &str| report.checks.iter().find(|c| c.id == id).unwrap();
    let class = row("classification");
    assert_eq!(class.status, Status::Pass, "{class:?}");
    assert!(
        class.measured.starts_with("64 of 64 (")
            && class
                .measured
                .contains("seen by their queue's drop counter"),
        "{class:?}"
    );
    let dwrr = row("dwrr");
    assert_eq!(dwrr.status, Status::Skip, "{dwrr:?}");
    assert!(dwrr.basis.contains("queue 0 dropped"), "{dwrr:?}");
    assert_eq!(report.failed, 0, "{report:#?}");
}

/// Issue 40: 1600 Gb/s ports and a one-hour detection time (both valid) took 78 s and
/// 5.4 GB: the storm was held by a pause frame every 10.486 µs for the whole hour, 343
/// million of them, each an event in a list made up front. The procedure now runs on a
/// bench port slow enough to hold the storm with at most 100 000 pauses, says so, and
/// measures the same poll ticks.
#[test]
fn a_one_hour_watchdog_at_1600_gbps_is_checked_on_a_slower_bench_port() {
    let text = rocelab::config::preset_text("default")
        .unwrap()
        .replace("speed_gbps = 100", "speed_gbps = 1600")
        .replace("detection_ms = 200", "detection_ms = 3600000");
    let cfg = SwitchConfig::from_toml(&text).unwrap();
    assert_eq!(cfg.watchdog.detection.0, 3_600_000_000_000);
    let report = conformance::run(&cfg, "1600G, 1 h");
    assert!(report.failing_ids().is_empty(), "{report:#?}");
    let row = |id: &str| report.checks.iter().find(|c| c.id == id).unwrap();
    let (detect, restore) = (
        row("watchdog.detect.queue3"),
        row("watchdog.restore.queue3"),
    );
    assert_eq!(detect.status, Status::Pass, "{detect:?}");
    assert_eq!(restore.status, Status::Pass, "{restore:?}");
    // The bench starts at 1 ms, which anchors the 200 ms polls; the storm starts a third
    // of a poll and 7 µs later (67.673333 ms) and the queue is stuck 1 µs after that.
    // Detection is the first poll at least an hour after it got stuck: 3 600 201 ms, or
    // 3 600 133.327 ms after the storm's start. The pauses stop detection + two polls
    // after it (3 600 467.673 ms), and the first poll at least the restoration time, 200
    // ms, after the last one, 3 600 801 ms, restores.
    let storm_start_ms = 1.0 + 200.0 / 3.0 + 0.007;
    let ms = |s: &str| s.trim_end_matches(" ms").parse::<f64>().unwrap();
    assert!(
        (ms(&detect.measured) - (3_600_201.0 - storm_start_ms)).abs() < 0.001,
        "{detect:?}"
    );
    assert!(
        (ms(&restore.measured) - (3_600_801.0 - storm_start_ms)).abs() < 0.001,
        "{restore:?}"
    );
    for r in [detect, restore] {
        assert!(
            r.basis.contains("run on a bench port at")
                && r.basis
                    .contains("holding the storm at 1600 Gb/s takes 343353043 pause frames"),
            "{r:?}"
        );
    }
    // The presets' watchdog runs on the configured port, as before.
    let preset = conformance::run(&SwitchConfig::preset("default").unwrap(), "default");
    assert!(
        preset
            .checks
            .iter()
            .all(|c| !c.basis.contains("bench port at")),
        "{preset:#?}"
    );
}

/// The table cut long check names short with "..." and did not say where its expected and
/// measured values come from: both are rocelab's, so it is a self-consistency check.
#[test]
fn the_table_names_every_check_whole_and_says_it_tests_no_device() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args(["conformance"])
        .output()
        .expect("run rocelab conformance");
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(!table.contains("..."), "{table}");
    let said: String = table.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains("Both come from rocelab: a self-consistency check")
            && said.contains("not a test of a device"),
        "{table}"
    );
    // Every check's name is there, word for word: a name wraps under itself, so the
    // words of a name are in order among the table's words (between the row's columns).
    let cfg = rocelab::config::SwitchConfig::preset("default").unwrap();
    let report = conformance::run(&cfg, "default");
    let words: Vec<&str> = table.split_whitespace().collect();
    for c in &report.checks {
        let mut at = 0;
        for w in c.title.split_whitespace() {
            at += words[at..]
                .iter()
                .position(|x| *x == w)
                .unwrap_or_else(|| panic!("{:?}: {w:?} missing\n{table}", c.title))
                + 1;
        }
    }
    // The longest name ends on a line of its own, whole.
    assert!(table.lines().any(|l| l.trim() == "ingress drop"), "{table}");
}
