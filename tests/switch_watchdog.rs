//! The PFC watchdog in virtual time: a lossless queue paused by a PFC storm is detected
//! within [stuck + detection, stuck + detection + poll] and restored within
//! [last pause + restoration, last pause + restoration + poll]; during the storm its frames
//! are dropped (drop), sent anyway (forward) or only counted (alert), exactly.

mod common;

use common::net::{Driver, config, pfc, roce};
use rocelab::switch::DropCause;
use rocelab::time::Nanos;
use rocelab::wire::Ecn;
use rocelab::wire::pfc::PrioritySet;

const MS: u64 = 1_000_000;
const DETECT: u64 = 10 * MS;
const RESTORE: u64 = 20 * MS;
const POLL: u64 = 2 * MS;
const L: usize = 1082;

fn watchdog_config(action: &str) -> String {
    remapped_config(action, [0, 1, 2, 3, 4, 5, 6, 7])
}

/// The watchdog configuration with the lossless class 3 sent to queue `tc_to_queue[3]`.
fn remapped_config(action: &str, tc_to_queue: [u8; 8]) -> String {
    let q = tc_to_queue[3];
    format!(
        r#"
[port_defaults]
speed_gbps = 100
cable_m = 5
[classify]
dscp_to_tc = [[26, 3]]
tc_to_queue = {tc_to_queue:?}
[pfc]
lossless = [3]
[queue.{q}]
schedule = "dwrr"
[watchdog]
enabled = true
detection_ms = 10
restoration_ms = 20
poll_ms = 2
action = "{action}"
"#
    )
}

struct Storm {
    /// When each poll found the queue stormed (true) or not.
    first_stormed_tick: Option<Nanos>,
    first_restored_tick: Option<Nanos>,
    stuck_at: Nanos,
    last_pause: Nanos,
    frames_offered: u64,
    frames_before_restore: u64,
    /// The egress queue of class 3.
    queue: usize,
    d: Driver,
}

/// A storm on port 1 (PFC for priority 3 every 100 µs from `storm_start` to `storm_end`)
/// while port 0 sends a lossless frame to port 1 every 50 µs.
fn storm(action: &str) -> Storm {
    storm_on(&watchdog_config(action), 3)
}

/// [`storm`] with the configuration `body`, in which class 3 goes to `queue`.
fn storm_on(body: &str, queue: usize) -> Storm {
    let mut d = Driver::new(&config(body, 2));
    let anchor = d.now; // the first time the switch sees: ticks at anchor + k × poll
    d.learn_hosts();
    let storm_start = Nanos(anchor.0 + 3 * MS + 7_000);
    let storm_end = Nanos(storm_start.0 + 40 * MS);
    let stuck_at = Nanos(storm_start.0 + 1_000);
    let mut events: Vec<(Nanos, usize)> = Vec::new();
    let mut t = storm_start.0;
    while t <= storm_end.0 {
        events.push((Nanos(t), 1));
        t += 100_000;
    }
    let last_pause = events.last().unwrap().0;
    let mut t = stuck_at.0;
    while t < storm_end.0 + 40 * MS {
        events.push((Nanos(t), 0));
        t += 50_000;
    }
    let ticks: Vec<Nanos> = (1..60).map(|k| Nanos(anchor.0 + k * POLL)).collect();
    let mut points: Vec<(Nanos, Option<usize>)> =
        events.iter().map(|&(t, p)| (t, Some(p))).collect();
    points.extend(ticks.iter().map(|&t| (t, None)));
    points.sort_by_key(|&(t, p)| (t, p.is_none()));
    let (mut first_stormed_tick, mut first_restored_tick) = (None, None);
    let (mut frames_offered, mut frames_before_restore, mut psn) = (0, 0, 0);
    for (t, what) in points {
        d.run_until(t);
        match what {
            Some(1) => {
                d.rx(1, &pfc(1, PrioritySet::single(3), 65535));
            }
            Some(_) => {
                psn += 1;
                frames_offered += 1;
                if first_restored_tick.is_none() {
                    frames_before_restore += 1;
                }
                d.rx(0, &roce(0, 1, 26, Ecn::Ect0, L, psn));
            }
            None => {
                let stormed = d.sw.is_stormed(1, queue);
                if stormed && first_stormed_tick.is_none() {
                    first_stormed_tick = Some(t);
                }
                if !stormed && first_stormed_tick.is_some() && first_restored_tick.is_none() {
                    first_restored_tick = Some(t);
                }
            }
        }
    }
    d.run_for(Nanos(100 * MS));
    Storm {
        first_stormed_tick,
        first_restored_tick,
        stuck_at,
        last_pause,
        frames_offered,
        frames_before_restore,
        queue,
        d,
    }
}

fn check_windows(s: &Storm) {
    let detected = s.first_stormed_tick.expect("storm detected");
    assert!(
        detected.0 >= s.stuck_at.0 + DETECT && detected.0 <= s.stuck_at.0 + DETECT + POLL,
        "detected at {} ns, stuck at {} ns",
        detected.0,
        s.stuck_at.0
    );
    let restored = s.first_restored_tick.expect("storm restored");
    assert!(
        restored.0 >= s.last_pause.0 + RESTORE && restored.0 <= s.last_pause.0 + RESTORE + POLL,
        "restored at {} ns, last pause at {} ns",
        restored.0,
        s.last_pause.0
    );
    let c = &s.d.sw.counters(1).classes[s.queue];
    assert_eq!((c.storms_detected, c.storms_restored), (1, 1));
}

#[test]
fn drop_action_drops_every_frame_of_the_storm_and_counts_it() {
    let s = storm("drop");
    check_windows(&s);
    let c = &s.d.sw.counters(1).classes[3];
    // Every frame that arrived before restoration was flushed or refused; nothing was sent
    // while the queue was paused; everything after restoration got through.
    assert_eq!(c.dropped_watchdog, s.frames_before_restore);
    assert_eq!(c.tx_frames, s.frames_offered - s.frames_before_restore);
    assert_eq!(s.d.sw.queue_frames(1, 3), 0);
}

/// With class 3 in queue 5 (`tc_to_queue`), PFC for priority 3 pauses queue 5, and that
/// is the queue the watchdog finds stormed, drops from and restores: queue 3 carries
/// nothing and is never stormed.
#[test]
fn a_storm_on_a_remapped_lossless_queue_is_detected_and_restored() {
    let s = storm_on(&remapped_config("drop", [0, 1, 2, 5, 4, 3, 6, 7]), 5);
    check_windows(&s);
    let c = &s.d.sw.counters(1).classes[5];
    assert_eq!(c.dropped_watchdog, s.frames_before_restore);
    assert_eq!(c.tx_frames, s.frames_offered - s.frames_before_restore);
    let q3 = &s.d.sw.counters(1).classes[3];
    assert_eq!((q3.storms_detected, q3.tx_frames), (0, 0));
}

#[test]
fn forward_action_sends_through_the_pause_and_counts_it() {
    let s = storm("forward");
    check_windows(&s);
    let c = &s.d.sw.counters(1).classes[3];
    assert_eq!(c.dropped(), 0);
    assert_eq!(
        c.tx_frames, s.frames_offered,
        "everything delivered in the end"
    );
    // Sent while stormed: everything between detection and restoration, the backlog
    // included.
    let detected = s.first_stormed_tick.unwrap();
    let during = sent_between(&s, detected, s.first_restored_tick.unwrap());
    assert_eq!(c.tx_during_storm, during);
    // The backlog leaves at the detection tick, through the pause.
    assert!(sent_between(&s, detected, Nanos(detected.0 + 100_000)) > 100);
    assert_eq!(
        sent_between(&s, s.stuck_at, detected),
        0,
        "nothing before detection"
    );
}

/// Frames sent on port 1 between `from` (inclusive) and `to` (exclusive).
fn sent_between(s: &Storm, from: Nanos, to: Nanos) -> u64 {
    s.d.data_sent(1)
        .iter()
        .filter(|f| f.time >= from && f.time < to)
        .count() as u64
}

#[test]
fn alert_action_only_counts() {
    let s = storm("alert");
    check_windows(&s);
    let c = &s.d.sw.counters(1).classes[3];
    assert_eq!(c.dropped(), 0);
    // Nothing goes through the pause: the queue waits until the last pause runs out.
    let pause_end = Nanos(s.last_pause.0 + common::net::pause_ns(65535, 100_000_000_000));
    assert_eq!(sent_between(&s, s.stuck_at, pause_end), 0);
    assert_eq!(
        s.d.data_sent(1)
            .iter()
            .find(|f| f.time >= pause_end)
            .unwrap()
            .time,
        pause_end
    );
    // What left after the pause but before restoration is counted as sent during the storm.
    let during = sent_between(
        &s,
        s.first_stormed_tick.unwrap(),
        s.first_restored_tick.unwrap(),
    );
    assert_eq!(c.tx_during_storm, during);
    assert_eq!(
        c.tx_frames, s.frames_offered,
        "everything delivered after the storm"
    );
}

/// Port 1's peer is stuck sending PFC for priority 3 (every 100 µs from 3 ms to 43 ms)
/// and also sends lossless frames to port 0 (10 Gb/s) at 17 Gb/s until 75 ms, holding
/// back while the switch pauses it; port 0 sends a lossless frame to port 1 every 50 µs,
/// which the storm holds there. Returns the driver after everything drained, and the
/// ticks that first found port 1's queue 3 stormed and restored.
fn storm_with_pfc_back(action: &str) -> (Driver, Nanos, Nanos) {
    let body = watchdog_config(action)
        + "[buffer]\nshared_bytes = 2097152\n\
           [[ports]]\nname = \"p0\"\nspeed_gbps = 10\n[[ports]]\nname = \"p1\"\n";
    let mut d = Driver::new(&config(&body, 0));
    let anchor = d.now;
    d.learn_hosts();
    let start = Nanos(anchor.0 + 3 * MS);
    let storm_end = start.0 + 40 * MS;
    let data_end = start.0 + 72 * MS;
    // (time, what): 0 a frame from port 0, 1 a storm PFC, 2 a frame from port 1's peer,
    // 3 a watchdog tick to look at.
    let mut points: Vec<(u64, u8)> = Vec::new();
    points.extend((start.0..=storm_end).step_by(100_000).map(|t| (t, 1)));
    points.extend((start.0 + 1_000..data_end).step_by(50_000).map(|t| (t, 0)));
    points.extend((start.0 + 500..data_end).step_by(500).map(|t| (t, 2)));
    points.extend((1..60).map(|k| (anchor.0 + k * POLL, 3)));
    points.sort();
    let (mut detected, mut restored) = (None, None);
    let (mut psn, mut peer_paused_until, mut seen) = (0, 0, 0);
    for (t, what) in points {
        d.run_until(Nanos(t));
        // The peer honours the switch's PFC: a pause holds priority 3 for its time.
        for s in d.sent[seen..].iter().filter(|s| s.port == 1) {
            if let Some(p) = s.pfc().filter(|p| p.priorities().contains(3)) {
                peer_paused_until = s.time.0 + common::net::pause_ns(p.quanta[3], 100_000_000_000);
            }
        }
        seen = d.sent.len();
        psn += 1;
        match what {
            0 => {
                d.rx(0, &roce(0, 1, 26, Ecn::Ect0, L, psn));
            }
            1 => {
                d.rx(1, &pfc(1, PrioritySet::single(3), 65535));
            }
            2 if t >= peer_paused_until => {
                d.rx(1, &roce(1, 0, 26, Ecn::Ect0, L, psn));
            }
            2 => {}
            _ => {
                let stormed = d.sw.is_stormed(1, 3);
                if stormed && detected.is_none() {
                    detected = Some(Nanos(t));
                }
                if !stormed && detected.is_some() && restored.is_none() {
                    restored = Some(Nanos(t));
                }
            }
        }
    }
    d.run_for(Nanos(100 * MS));
    (
        d,
        detected.expect("storm detected"),
        restored.expect("storm restored"),
    )
}

/// The PFC frames for priority 3 the switch sent to port 1, with their times and quanta.
fn pfc_to_port_1(d: &Driver) -> Vec<(Nanos, u16)> {
    d.pfc_sent(1)
        .into_iter()
        .filter(|(_, p)| p.priorities().contains(3))
        .map(|(t, p)| (t, p.quanta[3]))
        .collect()
}

/// Action drop stops PFC for the ingress PG that matches the stormed queue: while port
/// 1's queue 3 is stormed the switch sends port 1 no PFC for priority 3 (no XOFF, no
/// refresh, no XON), though that PG, which then overflows, would have paused the peer;
/// the peer's last pause runs out by itself. After restoration the PG pauses again, and
/// when the traffic ends it drains to nothing and resumes its peer with an XON.
#[test]
fn drop_action_stops_pfc_to_the_stormed_port_until_restored() {
    let (d, detected, restored) = storm_with_pfc_back("drop");
    let pfc = pfc_to_port_1(&d);
    let last_before = pfc.iter().rfind(|&&(t, _)| t < detected).unwrap();
    assert!(
        last_before.1 > 0,
        "the PG held its peer in XOFF at detection"
    );
    let during: Vec<_> = pfc
        .iter()
        .filter(|&&(t, _)| t >= detected && t < restored)
        .collect();
    assert!(during.is_empty(), "PFC while stormed: {during:?}");
    assert!(
        pfc.iter().any(|&(t, q)| t >= restored && q > 0),
        "XOFF after"
    );
    // Without pause the peer sent more than the PG holds: those frames were dropped at
    // ingress, the PG being lossy meanwhile.
    let c = &d.sw.counters(1).classes[3];
    assert!(c.dropped_ingress_overflow > 0);
    let first =
        d.sw.drops()
            .iter()
            .find(|r| r.port == 1 && r.cause == DropCause::IngressOverflow)
            .unwrap();
    assert!(first.pfc_stopped && first.at >= detected && first.at < restored);
    let why = first.explain(d.sw.config(), Nanos::ZERO);
    assert!(why.contains("PFC watchdog (action drop)"), "{why}");
    let pg = d.sw.pg_state(1, 3);
    assert_eq!((pg.shared, pg.headroom, pg.late, pg.xoff), (0, 0, 0, false));
    assert_eq!(pfc.last().unwrap().1, 0, "the last PFC frame is an XON");
    assert_eq!(c.tx_pause_frames, pfc.len() as u64);
}

/// Forward and alert keep the PG's PFC: only received PFC is ignored (forward) or
/// nothing changes but the counters (alert).
#[test]
fn forward_and_alert_keep_sending_pfc_to_the_stormed_port() {
    for action in ["forward", "alert"] {
        let (d, detected, restored) = storm_with_pfc_back(action);
        let pfc = pfc_to_port_1(&d);
        assert!(
            pfc.iter()
                .any(|&(t, q)| t >= detected && t < restored && q > 0),
            "{action}: XOFF while stormed"
        );
        assert_eq!(
            d.sw.counters(1).classes[3].dropped_ingress_overflow,
            0,
            "{action}"
        );
    }
}
