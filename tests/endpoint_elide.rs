//! Short frames at the endpoint ([`Endpoint::set_elide`]): a WRITE of data nobody reads
//! (`WrData::Fill`) leaves as frames that carry its length; each is the whole frame once
//! restored, ICRC included; a receiver counts, places and acknowledges it as the whole
//! frame, writing the bytes it stands for into a region that keeps them; and
//! `poll_transmit`, which anyone may read, always lends a whole frame.

mod common;

use rocelab::config::endpoint::EndpointConfig;
use rocelab::endpoint::{Endpoint, SendWr, WrData};
use rocelab::time::Nanos;
use rocelab::wire::elide::{self, Elided};

const RKEY: u32 = 7;
/// Ten packets of 1024 and one of 785, which is no multiple of 4: that one goes whole
/// (a short frame's pad count must be the whole frame's).
const LEN: usize = 10 * 1024 + 785;

/// A sender with a QP to a receiver, a WRITE of `LEN` bytes of 0x5a posted, and the
/// receiver with a region that keeps its bytes.
fn pair(elide: bool) -> (Endpoint, Endpoint) {
    let cfg = EndpointConfig {
        link_gbps: 10.0,
        mtu: 1024,
        ..EndpointConfig::default()
    };
    let (mut a, mut b, qa) = common::peers::connected(&cfg);
    a.set_elide(elide);
    b.register(RKEY, 0, LEN);
    a.post_write(
        qa,
        SendWr {
            id: 1,
            data: WrData::Fill {
                byte: 0x5a,
                len: LEN,
            },
            remote_va: 0,
            rkey: RKEY,
            imm: Some(9),
        },
    );
    (a, b)
}

/// The WRITE's packets.
const PACKETS: usize = 11;

/// The frames of the WRITE `a` sends, each at the time its link frees, with what it
/// elides.
fn sent(a: &mut Endpoint) -> Vec<(Nanos, Vec<u8>, Elided)> {
    let mut out = Vec::new();
    let mut now = Nanos::ZERO;
    while out.len() < PACKETS {
        let mut buf = Vec::new();
        match a.poll_transmit_into(now, &mut buf) {
            Some(elided) => out.push((now, buf, elided)),
            None => match a.poll_timeout() {
                Some(t) if t > now => now = t,
                _ => panic!("{} frames of {PACKETS}", out.len()),
            },
        }
    }
    out
}

#[test]
fn short_frames_restore_to_the_frames_sent_whole() {
    let (mut short, _) = pair(true);
    let (mut whole, _) = pair(false);
    let short = sent(&mut short);
    let whole = sent(&mut whole);
    assert_eq!(short.len(), whole.len());
    let mut elided = 0;
    for ((t, frame, e), (tw, w, ew)) in short.into_iter().zip(whole) {
        assert_eq!(ew, Elided::NONE, "an endpoint that does not elide");
        // The same pacing: each short frame took the link as long as the whole one.
        assert_eq!(t, tw);
        assert_eq!(e.whole_len(&frame), w.len());
        if !e.is_none() {
            elided += 1;
            assert!(frame.len() < 100, "a short frame: {} bytes", frame.len());
            assert_eq!(e.byte, 0x5a);
        }
        let mut restored = frame;
        elide::restore(&mut restored, e).expect("a short frame restores");
        assert_eq!(restored, w, "the whole frame, ICRC included");
    }
    assert_eq!(elided, 10, "all but the packet of 785 bytes");
}

#[test]
fn a_receiver_takes_short_frames_as_whole_ones() {
    let (mut a, mut b) = pair(true);
    let frames = sent(&mut a);
    for (t, frame, e) in &frames {
        b.handle_elided_frame(*t + Nanos(1_000), frame, *e);
    }
    let c = b.counters();
    assert_eq!(
        (c.data_packets_received, c.data_bytes_received),
        (PACKETS as u64, LEN as u64)
    );
    assert_eq!((c.icrc_errors, c.access_errors), (0, 0));
    let region = b.region(RKEY).expect("a region that keeps its bytes");
    assert!(
        region.iter().all(|&x| x == 0x5a),
        "the bytes the frames stand for"
    );
    // Its ACKs take the WRITE off the sender.
    let mut now = Nanos(100_000);
    while let Some(ack) = b.poll_transmit(now) {
        let ack = ack.to_vec();
        a.handle_frame(now, &ack);
        now += Nanos(1_000);
    }
    assert!(a.poll_completion().is_some(), "the WRITE completes");
}

#[test]
fn a_short_frame_that_stands_for_other_bytes_fails_its_icrc() {
    let (mut a, mut b) = pair(true);
    let (t, frame, e) = sent(&mut a).remove(0);
    b.handle_elided_frame(t, &frame, Elided { byte: 0x5b, ..e });
    assert_eq!(b.counters().icrc_errors, 1);
    assert_eq!(b.counters().data_packets_received, 0);
}

#[test]
fn poll_transmit_lends_whole_frames() {
    let (mut a, _) = pair(true);
    let (mut w, _) = pair(false);
    let frame = a.poll_transmit(Nanos::ZERO).expect("a frame").to_vec();
    let whole = w.poll_transmit(Nanos::ZERO).expect("a frame").to_vec();
    assert!(frame.len() > 1024);
    assert_eq!(frame, whole);
}
