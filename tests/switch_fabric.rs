//! The switch with link peers at line rate, in virtual time: DWRR shares, strict priority,
//! and N:1 incast where the lossless class loses nothing while a lossy class drops.

mod common;

use common::net::{config, hello, roce, wire_bits};
use rocelab::config::SwitchConfig;
use rocelab::replay::Fabric;
use rocelab::switch::Switch;
use rocelab::time::Nanos;
use rocelab::wire::Ecn;

const RATE: u64 = 100_000_000_000;
const L: usize = 1082;

const SCHED: &str = r#"
[port_defaults]
speed_gbps = 100
cable_m = 5
[classify]
dscp_to_tc = [[26, 3], [10, 1], [12, 2], [48, 6]]
[pfc]
lossless = [3]
[queue.1]
schedule = "dwrr"
weight = 1
[queue.2]
schedule = "dwrr"
weight = 3
[queue.3]
schedule = "dwrr"
[queue.6]
schedule = "strict"
"#;

fn fabric(cfg: &SwitchConfig) -> Fabric {
    let mut f = Fabric::new(Switch::new(cfg));
    for p in 0..cfg.ports.len() {
        f.offer(p, Nanos(0), hello(p));
    }
    f.run_until(Nanos(10_000), &mut |_| {}).unwrap();
    f
}

/// Two DWRR queues of weights 1 and 3, both backlogged on one egress: the bytes sent are
/// within 2 % of 1/4 and 3/4.
#[test]
fn dwrr_shares_within_two_percent_of_the_weights() {
    let cfg = config(SCHED, 3);
    let mut f = fabric(&cfg);
    let start = Nanos(20_000);
    for i in 0..20_000u32 {
        f.offer(0, start, roce(0, 2, 10, Ecn::NotEct, L, i));
        f.offer(1, start, roce(1, 2, 12, Ecn::NotEct, L, i));
    }
    // Both queues stay backlogged: each peer alone could fill the egress.
    let window = Nanos(1_000_000);
    f.run_until(start + window, &mut |_| {}).unwrap();
    let c = f.switch().counters(2);
    let (b1, b2) = (c.classes[1].tx_bytes as f64, c.classes[2].tx_bytes as f64);
    let share = b2 / (b1 + b2);
    assert!(
        (share - 0.75).abs() <= 0.02 * 0.75,
        "queue 2 got {share:.4} of the bytes"
    );
    // The egress ran at line rate meanwhile.
    let frames = c.classes[1].tx_frames + c.classes[2].tx_frames;
    let line_frames = window.0 * RATE / 1_000_000_000 / wire_bits(L);
    assert!(
        frames + 2 >= line_frames && frames <= line_frames + 2,
        "{frames} vs {line_frames}"
    );
}

/// A strict queue offered 30 % of the line gets all of it at once; the DWRR queue below it
/// gets the remaining 70 %: strict priority starves nothing it should not.
#[test]
fn strict_priority_takes_its_load_and_leaves_the_rest() {
    let cfg = config(SCHED, 3);
    let mut f = fabric(&cfg);
    let start = Nanos(20_000);
    let frame_ns = wire_bits(L) as f64 * 1e9 / RATE as f64;
    let gap = frame_ns / 0.3;
    let n_strict = 3000u32;
    for i in 0..n_strict {
        f.offer(
            0,
            Nanos(start.0 + (f64::from(i) * gap) as u64),
            roce(0, 2, 48, Ecn::NotEct, L, i),
        );
    }
    for i in 0..20_000u32 {
        f.offer(1, start, roce(1, 2, 10, Ecn::NotEct, L, i));
    }
    let window = Nanos((f64::from(n_strict) * gap) as u64);
    f.run_until(start + window, &mut |_| {}).unwrap();
    let c = f.switch().counters(2);
    let strict = &c.classes[6];
    assert!(
        strict.tx_frames + 2 >= u64::from(n_strict),
        "strict sent {}",
        strict.tx_frames
    );
    assert_eq!(strict.dropped(), 0);
    // A strict frame waits at most for the frame already on the wire.
    let (_, _, max_wait) = c.sojourn_summary(6).unwrap();
    assert!(
        max_wait as f64 <= frame_ns * 1.05 + 1.0,
        "strict waited {max_wait} ns"
    );
    let lower_share = c.classes[1].tx_bytes as f64 * 8.0 / (RATE as f64 * window.0 as f64 / 1e9);
    let lower_ideal = 0.7 * L as f64 / (L + 24) as f64; // wire overhead is not payload
    assert!(
        (lower_share - lower_ideal).abs() < 0.02,
        "DWRR queue got {lower_share:.3} of the line"
    );
}

/// N peers send lossless and lossy traffic at line rate into one port: PFC holds the
/// lossless class back and it loses nothing (frames and bytes in = out), while the lossy
/// class overflows and drops. Built-in default configuration (dynamic thresholds).
fn incast(n: usize) {
    let mut text = rocelab::config::preset_text("default").unwrap().to_owned();
    // A smaller shared buffer makes the lossy class overflow sooner.
    text = text.replace("shared_bytes = 33554432", "shared_bytes = 4194304");
    let cfg = config(&text, n + 1);
    let mut f = fabric(&cfg);
    let sink = n;
    let per_peer = 3000u32;
    for p in 0..n {
        for i in 0..per_peer {
            f.offer(p, Nanos(20_000), roce(p, sink, 26, Ecn::Ect0, L, i));
            f.offer(p, Nanos(20_000), roce(p, sink, 0, Ecn::NotEct, L, i));
        }
    }
    let mut out_lossless = (0u64, 0u64);
    f.run_to_idle(&mut |tx| {
        if tx.port == sink
            && let Ok(m) = rocelab::wire::parse(tx.frame)
            && m.dscp() == 26
        {
            out_lossless.0 += 1;
            out_lossless.1 += tx.frame.len() as u64;
        }
    })
    .unwrap();
    let sw = f.switch();
    let offered = (
        n as u64 * u64::from(per_peer),
        n as u64 * u64::from(per_peer) * L as u64,
    );
    assert_eq!(
        out_lossless, offered,
        "{n}:1 lossless frames and bytes in = out"
    );
    let lossless_drops: u64 = (0..=n).map(|p| sw.counters(p).classes[3].dropped()).sum();
    assert_eq!(lossless_drops, 0);
    let pfc_sent: u64 = (0..n)
        .map(|p| sw.counters(p).classes[3].tx_pause_frames)
        .sum();
    assert!(pfc_sent > 0, "{n}:1 must pause the senders");
    let lossy_drops = sw.counters(sink).classes[0].dropped();
    assert!(lossy_drops > 0, "{n}:1 lossy class must drop");
    let headroom_used: u64 = (0..n)
        .map(|p| sw.counters(p).classes[3].pg_headroom_watermark_bytes)
        .max()
        .unwrap();
    let headroom_size = sw.mmu().headroom_size(0, 3);
    assert!(headroom_used <= headroom_size);
    for p in 0..n {
        assert_eq!(f.peer_totals(p).backlog_frames, 0);
    }
}

#[test]
fn incast_2_to_1_loses_no_lossless_frame() {
    incast(2);
}

#[test]
fn incast_8_to_1_loses_no_lossless_frame() {
    incast(8);
}

/// A peer that ignores PFC overflows the headroom: the lossless class drops, and the
/// counters say so (ingress overflow on the ingress PG).
#[test]
fn a_peer_ignoring_pause_overflows_the_headroom() {
    let text = rocelab::config::preset_text("default")
        .unwrap()
        .replace("shared_bytes = 33554432", "shared_bytes = 1048576");
    let cfg = config(&text, 3);
    let mut f = fabric(&cfg);
    f.set_peer_honors_pause(0, false);
    for i in 0..5000u32 {
        f.offer(0, Nanos(20_000), roce(0, 2, 26, Ecn::Ect0, L, i));
        f.offer(1, Nanos(20_000), roce(1, 2, 26, Ecn::Ect0, L, i));
    }
    f.run_to_idle(&mut |_| {}).unwrap();
    let sw = f.switch();
    assert!(sw.counters(0).classes[3].dropped_ingress_overflow > 0);
    assert_eq!(
        sw.counters(1).classes[3].dropped(),
        0,
        "the compliant peer loses nothing"
    );
    // Headroom filled to within one frame (frames are admitted whole).
    let watermark = sw.counters(0).classes[3].pg_headroom_watermark_bytes;
    let size = sw.mmu().headroom_size(0, 3);
    assert!(
        watermark <= size && watermark + L as u64 > size,
        "{watermark} of {size}"
    );
}
