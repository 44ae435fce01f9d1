//! The endpoint honours link-level flow control as a NIC does: a PFC frame stops the
//! paused priority for exactly quanta × 512 bit times at the link rate, other priorities
//! (the CNP's) keep going, a time of 0 resumes at once, a new frame replaces the remaining
//! time, and an 802.3x PAUSE stops everything.

mod common;

use rocelab::config::endpoint::EndpointConfig;
use rocelab::endpoint::{Endpoint, SendWr};
use rocelab::time::Nanos;
use rocelab::wire::pfc::{MacControl, PfcRepr, PrioritySet, pause_duration};
use rocelab::wire::{self, MacAddr};

const RATE_GBPS: f64 = 10.0;
const RKEY: u32 = 7;

/// A frame that left an endpoint: when it started, its PFC priority (from its DSCP, by
/// the endpoint's map), and its bytes.
#[derive(Debug)]
struct Sent {
    at: Nanos,
    dscp: u8,
    frame: Vec<u8>,
}

fn cfg() -> EndpointConfig {
    EndpointConfig {
        link_gbps: RATE_GBPS,
        mtu: 1024,
        ..EndpointConfig::default()
    }
}

/// Endpoint A with a QP to B and 256 KB of WRITEs posted; B with the region.
fn pair() -> (Endpoint, Endpoint) {
    let (mut a, mut b, qa) = common::peers::connected(&cfg());
    b.register(RKEY, 0, 256 << 10);
    for i in 0..4u64 {
        a.post_write(
            qa,
            SendWr {
                id: i,
                data: vec![i as u8; 64 << 10].into(),
                remote_va: i * (64 << 10),
                rkey: RKEY,
                imm: None,
            },
        );
    }
    (a, b)
}

/// Runs `ep` alone from `from` to `to`, collecting what it sends.
fn drain(ep: &mut Endpoint, from: Nanos, to: Nanos) -> Vec<Sent> {
    let mut out = Vec::new();
    let mut t = from;
    while t < to {
        ep.handle_timeout(t);
        if let Some(f) = ep.poll_transmit(t) {
            let meta = wire::parse(f).unwrap();
            out.push(Sent {
                at: t,
                dscp: meta.dscp(),
                frame: f.to_vec(),
            });
            continue;
        }
        t = match ep.poll_timeout() {
            Some(next) if next > t => next.min(to),
            _ => to,
        };
    }
    out
}

fn pfc(priorities: &[u8], quanta: u16) -> Vec<u8> {
    let mut set = PrioritySet::EMPTY;
    for &p in priorities {
        set.insert(p);
    }
    let mut buf = vec![0; 60];
    MacControl::Pfc(PfcRepr::new(set, quanta))
        .emit(&mut buf, MacAddr([2, 0, 0, 0, 0, 0xfe]))
        .unwrap();
    buf
}

fn pause(quanta: u16) -> Vec<u8> {
    let mut buf = vec![0; 60];
    MacControl::Pause { quanta }
        .emit(&mut buf, MacAddr([2, 0, 0, 0, 0, 0xfe]))
        .unwrap();
    buf
}

fn bps() -> u64 {
    (RATE_GBPS * 1e9) as u64
}

#[test]
fn pfc_on_the_data_priority_stops_data_for_exactly_its_quanta() {
    let (mut a, _) = pair();
    let t0 = Nanos::from_micros(10);
    let before = drain(&mut a, Nanos::ZERO, t0);
    assert!(!before.is_empty());
    a.handle_frame(t0, &pfc(&[3], 1000));
    // 1000 quanta × 512 bit times at 10 Gb/s = 51.2 µs.
    let resume = t0 + pause_duration(1000, bps());
    assert_eq!(resume, t0 + Nanos(51_200));
    let during = drain(&mut a, t0, resume);
    // A frame already on the wire at t0 finishes; nothing new starts.
    assert!(
        during.is_empty(),
        "sent while paused at {:?}",
        during.first().map(|s| s.at)
    );
    let after = drain(&mut a, resume, resume + Nanos::from_micros(5));
    assert_eq!(
        after.first().map(|s| s.at),
        Some(resume),
        "resumes exactly at the end of the pause"
    );
    assert_eq!(a.counters().pauses_received, 1);
}

#[test]
fn other_priorities_are_not_paused() {
    let (mut a, _) = pair();
    a.handle_frame(Nanos::ZERO, &pfc(&[0, 1, 2, 4, 5, 7], 0xffff));
    let sent = drain(&mut a, Nanos::ZERO, Nanos::from_micros(20));
    assert!(sent.len() > 20, "priority 3 keeps sending");
    assert_eq!(
        a.counters().pauses_received,
        0,
        "no pause on a priority it uses"
    );
}

#[test]
fn xon_resumes_at_once_and_a_new_pause_replaces_the_remaining_time() {
    let (mut a, _) = pair();
    a.handle_frame(Nanos::ZERO, &pfc(&[3], 0xffff));
    let t1 = Nanos::from_micros(100);
    assert!(drain(&mut a, Nanos::ZERO, t1).is_empty());
    a.handle_frame(t1, &pfc(&[3], 0));
    let sent = drain(&mut a, t1, t1 + Nanos::from_micros(1));
    assert_eq!(sent.first().map(|s| s.at), Some(t1), "XON resumes at once");

    // A long pause, then a short one: the short one replaces what was left.
    let t2 = Nanos::from_micros(200);
    drain(&mut a, t1 + Nanos::from_micros(1), t2);
    a.handle_frame(t2, &pfc(&[3], 0xffff));
    let t3 = t2 + Nanos::from_micros(10);
    assert!(drain(&mut a, t2, t3).is_empty());
    a.handle_frame(t3, &pfc(&[3], 100));
    let resume = t3 + pause_duration(100, bps());
    assert!(drain(&mut a, t3, resume).is_empty());
    let sent = drain(&mut a, resume, resume + Nanos::from_micros(1));
    assert_eq!(sent.first().map(|s| s.at), Some(resume));
}

#[test]
fn a_cnp_goes_out_while_the_data_priority_is_paused_but_not_under_pause() {
    let (mut a, mut b) = pair();
    // A's first data frame reaches B CE-marked: B owes A a CNP (DSCP 48, priority 6)
    // and, for AckReq frames, an ACK (DSCP 26, priority 3).
    let sent = drain(&mut a, Nanos::ZERO, Nanos::from_micros(20));
    let mut frame = sent.iter().find(|s| s.dscp == 26).unwrap().frame.clone();
    let meta = wire::parse(&frame).unwrap();
    wire::ecn::mark_ce(&mut frame, &meta);
    b.handle_frame(Nanos::ZERO, &pfc(&[3], 0xffff));
    b.handle_frame(Nanos(100), &frame);
    let out = drain(&mut b, Nanos(100), Nanos::from_micros(50));
    assert_eq!(out.len(), 1, "only the CNP: {out:?}");
    assert_eq!(out[0].dscp, 48);
    assert_eq!(b.counters().cnps_sent, 1);

    // 802.3x PAUSE stops the link: a second CE frame after the CNP interval gets its CNP
    // only when the PAUSE ends.
    let (mut a, mut b) = pair();
    let sent = drain(&mut a, Nanos::ZERO, Nanos::from_micros(20));
    let mut frame = sent.iter().find(|s| s.dscp == 26).unwrap().frame.clone();
    let meta = wire::parse(&frame).unwrap();
    wire::ecn::mark_ce(&mut frame, &meta);
    b.handle_frame(Nanos::ZERO, &pause(200));
    b.handle_frame(Nanos(100), &frame);
    let resume = pause_duration(200, bps());
    let out = drain(&mut b, Nanos(100), Nanos::from_micros(50));
    assert_eq!(
        out.first().map(|s| (s.at, s.dscp)),
        Some((resume, 48)),
        "{out:?}"
    );
    assert_eq!(b.counters().link_pauses_received, 1);
    // A PAUSE of time 0 resumes the link at once: not a pause, as PFC's XON is not (the
    // time series flagged the host paused for it).
    let later = Nanos::from_micros(60);
    b.handle_frame(later, &pause(200));
    assert!(b.paused(3, later));
    assert_eq!(b.counters().link_pauses_received, 2);
    b.handle_frame(later + Nanos(100), &pause(0));
    assert!(!b.paused(3, later + Nanos(100)));
    assert_eq!(b.counters().link_pauses_received, 2);
}
