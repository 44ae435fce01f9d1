//! The switch and short frames (`wire::elide`), as a simulator hands them in: counted at
//! their length on the wire, handed on short to a simulator, restored whole for anyone
//! else (the owned and the borrowed transmit, each flooded copy, a drop record), and
//! refused when what claims to be short is not RoCE, or is below the minimum frame.

mod common;

use common::net::{config, hello, roce};
use rocelab::switch::{RxOutcome, Switch};
use rocelab::time::Nanos;
use rocelab::wire::elide::{self, Elided};
use rocelab::wire::{Ecn, icrc, parse_meta};

/// A data frame's length on the wire, and a short frame's.
const L: usize = 1082;
const SHORT: usize = 62;

const CFG: &str = r#"
[port_defaults]
speed_gbps = 100
cable_m = 5
[classify]
dscp_to_tc = [[26, 3], [10, 1]]
[pfc]
lossless = [3]
[buffer]
threshold = "static"
queue_limit_bytes = 5000
[pg.3]
xoff_bytes = 100000
xon_bytes = 50000
[queue.1]
schedule = "dwrr"
[queue.3]
schedule = "dwrr"
"#;

/// A switch of 3 ports that knows host `p` on port `p`.
fn switch() -> Switch {
    let mut sw = Switch::new(&config(CFG, 3));
    for p in 0..3 {
        sw.handle_frame(Nanos(0), p, &hello(p));
    }
    // The hellos, flooded, leave before the tests' first frame comes at 1 µs.
    let mut now = Nanos(0);
    loop {
        while sw.poll_transmit_owned(now).is_some() {}
        match sw.poll_timeout() {
            Some(t) if t < Nanos(1_000) => now = now.max(t),
            _ => break,
        }
    }
    assert_eq!((0..3).map(|p| sw.queue_bytes(p, 0)).sum::<u64>(), 0);
    sw
}

/// Frame `psn` from host `src` to host `dst` with DSCP `dscp`: short, with what it
/// elides, and whole.
fn frames(src: usize, dst: usize, dscp: u8, psn: u32) -> (Vec<u8>, Elided, Vec<u8>) {
    let short = roce(src, dst, dscp, Ecn::Ect0, SHORT, psn);
    let elided = Elided {
        len: (L - SHORT) as u32,
        byte: 0xab,
    };
    (short, elided, roce(src, dst, dscp, Ecn::Ect0, L, psn))
}

/// `frame` restored (if short) with the ICRC of what it is then.
fn whole(mut frame: Vec<u8>, elided: Elided) -> Vec<u8> {
    elide::restore(&mut frame, elided).expect("a short frame");
    let meta = parse_meta(&frame).expect("a frame");
    icrc::fill(&mut frame, &meta);
    frame
}

#[test]
fn a_short_frame_is_counted_at_its_length_and_handed_on_short() {
    let mut sw = switch();
    let (short, elided, _) = frames(0, 2, 26, 1);
    let t = Nanos(1_000);
    sw.handle_elided_frame(t, 0, short.clone(), elided);
    assert_eq!(sw.counters(0).classes[3].rx_bytes, L as u64);
    assert_eq!(sw.queue_bytes(2, 3), L as u64);
    assert_eq!(
        sw.pg_state(0, 3).shared + sw.pg_state(0, 3).headroom,
        L as u64
    );
    let (port, out, e) = sw.poll_transmit_elided(t).expect("the frame leaves");
    assert_eq!((port, out, e), (2, short, elided));
    assert_eq!(sw.counters(2).classes[3].tx_bytes, L as u64);
    // Its time on the wire is the whole frame's (88 ns at 100 Gb/s, the short one's
    // 7 ns): the frame behind it waits that long.
    let (short, elided, _) = frames(0, 2, 26, 2);
    sw.handle_elided_frame(t, 0, short, elided);
    assert!(sw.poll_transmit_elided(t).is_none(), "the port is busy");
    let next = sw.poll_timeout().expect("the next frame's time");
    assert!(next >= t + Nanos(88), "{next:?}");
    assert!(sw.poll_transmit_elided(next).is_some());
    assert_eq!(sw.pg_state(0, 3).shared, 0, "released at its length");
}

#[test]
fn anyone_else_gets_the_whole_frame() {
    let mut sw = switch();
    let (short, elided, expected) = frames(0, 2, 26, 1);
    sw.handle_elided_frame(Nanos(1_000), 0, short, elided);
    let (_, out) = sw
        .poll_transmit_owned(Nanos(1_000))
        .expect("the frame leaves");
    assert_eq!(whole(out, Elided::NONE), expected);
    // The borrowed transmit, at the next free time of the port.
    let (short, elided, expected) = frames(0, 2, 26, 2);
    sw.handle_elided_frame(Nanos(1_000), 0, short, elided);
    let later = Nanos(10_000);
    let sent = sw
        .poll_transmit(later)
        .expect("the frame leaves")
        .frame
        .to_vec();
    assert_eq!(whole(sent, Elided::NONE), expected);
}

#[test]
fn each_flooded_copy_is_the_whole_frame() {
    let mut sw = switch();
    // Host 9 is unknown: the frame goes to every other port.
    let (short, elided, expected) = frames(0, 9, 26, 1);
    let out = sw.handle_elided_frame(Nanos(1_000), 0, short, elided);
    assert_eq!(
        out,
        RxOutcome::Queued {
            copies: 2,
            dropped: 0
        }
    );
    let mut ports = Vec::new();
    while let Some((port, frame, e)) = sw.poll_transmit_elided(Nanos(1_000)) {
        assert_eq!(whole(frame, e), expected);
        ports.push(port);
    }
    assert_eq!(ports, [1, 2]);
    assert_eq!(sw.counters(1).classes[3].tx_bytes, L as u64);
}

#[test]
fn a_drop_record_keeps_the_whole_frame() {
    let mut sw = switch();
    sw.set_explain(true);
    sw.set_tx_enabled(2, false);
    // A lossy class (DSCP 10) into a queue of 5000 bytes: the fifth frame does not fit.
    for psn in 0..5 {
        let (short, elided, _) = frames(0, 2, 10, psn);
        sw.handle_elided_frame(Nanos(1_000), 0, short, elided);
    }
    let drop = sw.drops().first().expect("a tail drop");
    assert_eq!(drop.bytes, L as u64);
    let (_, _, expected) = frames(0, 2, 10, 4);
    let kept = drop.frame.clone().expect("explain keeps the frame");
    assert_eq!(whole(kept, Elided::NONE), expected);
    assert_eq!(sw.counters(2).classes[1].dropped_bytes, L as u64);
}

#[test]
fn what_claims_to_be_short_and_is_padded_or_below_the_minimum_frame_is_malformed() {
    // A RoCEv2 frame without payload: 58 bytes, padded to 60. Padded, or cut to its 58,
    // bytes elided from it would not add to its wire length as they do to its length.
    let mut sw = switch();
    let padded = roce(0, 2, 26, Ecn::Ect0, 58, 1);
    let mut cut = padded.clone();
    cut.truncate(58);
    let some = Elided {
        len: 1000,
        byte: 0xab,
    };
    for (i, frame) in [padded, cut].into_iter().enumerate() {
        assert!(parse_meta(&frame).is_some_and(|m| m.is_roce()));
        let out = sw.handle_elided_frame(Nanos(1_000), 0, frame, some);
        assert_eq!(out, RxOutcome::Discarded);
        assert_eq!(sw.counters(0).rx_malformed_frames, i as u64 + 1);
    }
    assert!(sw.poll_transmit_owned(Nanos(1_000)).is_none());
}

#[test]
fn what_claims_to_be_short_and_is_not_roce_is_malformed() {
    let mut sw = switch();
    let some = Elided { len: 1000, byte: 0 };
    let out = sw.handle_elided_frame(Nanos(1_000), 0, hello(0), some);
    assert_eq!(out, RxOutcome::Discarded);
    assert_eq!(sw.counters(0).rx_malformed_frames, 1);
    assert!(sw.poll_transmit_owned(Nanos(1_000)).is_none());
}
