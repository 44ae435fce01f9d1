//! PFC in virtual time: the sonic-mgmt PFC test, XON on drain, exact pause durations,
//! refresh, PFC never forwarded, a paused priority stops while others flow. Every expected
//! number is computed here from the configuration and the standards' formulas.

mod common;

use common::net::{Driver, bits_to_ns, config, pause_ns, pfc, roce, wire_bits};
use rocelab::time::Nanos;
use rocelab::wire::Ecn;
use rocelab::wire::pfc::PrioritySet;

const RATE: u64 = 100_000_000_000;
const MTU: u64 = 9216;
const CABLE_NS: u64 = 25; // 5 m at 5 ns/m
const RESERVE: u64 = 9000;
const XOFF: u64 = 200_000;
const XON: u64 = 150_000;
const LOSSY_LIMIT: u64 = 100_000;
const PAUSE_QUANTA: u16 = 65535;
const REFRESH_QUANTA: u16 = 32768;
const L: usize = 1082; // a 1 KiB RoCE segment

const STATIC: &str = r#"
[port_defaults]
speed_gbps = 100
cable_m = 5
mtu = 9216
[classify]
dscp_to_tc = [[26, 3]]
[pfc]
lossless = [3]
pause_quanta = 65535
refresh_quanta = 32768
[buffer]
threshold = "static"
shared_bytes = 4194304
queue_limit_bytes = 100000
[pg.3]
reserve_bytes = 9000
xoff_bytes = 200000
xon_bytes = 150000
[queue.0]
schedule = "dwrr"
[queue.3]
schedule = "dwrr"
"#;

/// 2 × MTU + 2 × cable delay × rate + the peer's response (IEEE 802.3 annex 31B: 394
/// quanta at 100G), bytes.
fn headroom() -> u64 {
    2 * MTU + (2 * CABLE_NS * RATE).div_ceil(8 * 1_000_000_000) + 394 * 512 / 8
}

fn lossless(psn: u32) -> Vec<u8> {
    roce(0, 1, 26, Ecn::Ect0, L, psn)
}

/// sonic-mgmt's PFC test (tests/qos): with the egress stopped, (frames to trigger PFC − 1)
/// send no PFC and drop nothing; one more sends PFC; filling up to the ingress drop point
/// drops nothing on the lossless PG; one more drops; a lossy PG drops at its limit.
#[test]
fn sonic_mgmt_pfc_trigger_and_ingress_drop_points() {
    let cfg = config(STATIC, 3);
    let mut d = Driver::new(&cfg);
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    let l = L as u64;
    let to_trigger = (RESERVE + XOFF).div_ceil(l);
    let drop_point = (RESERVE + XOFF + headroom()) / l; // frames that still fit
    assert!(drop_point > to_trigger + 10);

    for psn in 0..to_trigger - 1 {
        d.rx(0, &lossless(psn as u32));
    }
    assert!(d.pfc_sent(0).is_empty(), "PFC before the trigger point");
    assert_eq!(d.sw.counters(0).classes[3].dropped(), 0);

    d.rx(0, &lossless(to_trigger as u32));
    let pfcs = d.pfc_sent(0);
    assert_eq!(pfcs.len(), 1, "one more frame sends PFC");
    assert_eq!(pfcs[0].1.enable_vector, 1 << 3);
    assert_eq!(pfcs[0].1.quanta[3], PAUSE_QUANTA);
    assert_eq!(d.sw.counters(0).classes[3].tx_pause_frames, 1);

    for psn in to_trigger..drop_point {
        d.rx(0, &lossless(psn as u32));
    }
    assert_eq!(
        d.sw.counters(0).classes[3].dropped(),
        0,
        "up to the drop point"
    );
    let pg = d.sw.pg_state(0, 3);
    assert_eq!(pg.reserve + pg.shared + pg.headroom, drop_point * l);
    assert_eq!(pg.shared, XOFF);
    d.rx(0, &lossless(0));
    let c = &d.sw.counters(0).classes[3];
    assert_eq!(
        (c.dropped_ingress_overflow, c.dropped()),
        (1, 1),
        "one past the drop point"
    );
    assert_eq!(d.sw.queue_frames(1, 3) as u64, drop_point);

    // A lossy PG on another port fills its queue to the limit, then drops.
    let lossy_fit = LOSSY_LIMIT / l;
    for psn in 0..lossy_fit + 3 {
        d.rx(2, &roce(2, 1, 0, Ecn::NotEct, L, psn as u32));
    }
    let c = &d.sw.counters(1).classes[0];
    assert_eq!(c.dropped_tail, 3);
    assert_eq!(d.sw.queue_frames(1, 0) as u64, lossy_fit);
    assert!(d.pfc_sent(2).is_empty(), "a lossy PG never sends PFC");
}

/// Draining the egress sends XON (time 0) when the PG falls to the XON point: after the
/// frame whose departure leaves (reserve + xon) bytes or less, headroom emptied first.
#[test]
fn xon_when_the_pg_drains_below_xon() {
    let cfg = config(STATIC, 2);
    let mut d = Driver::new(&cfg);
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    let l = L as u64;
    let n = (RESERVE + XOFF).div_ceil(l) + 20; // into the headroom
    for psn in 0..n {
        d.rx(0, &lossless(psn as u32));
    }
    assert!(d.sw.pg_state(0, 3).headroom > 0);
    let t0 = d.now;
    d.sw.set_tx_enabled(1, true);
    d.run_for(Nanos(1_000_000));
    // XON goes with the k-th departure, the first after which (n − k) × L ≤ reserve + xon.
    let k = n - (RESERVE + XON) / l;
    let start_of_kth = t0.0 + bits_to_ns((k - 1) * wire_bits(L), RATE);
    let pfcs = d.pfc_sent(0);
    assert_eq!(pfcs.len(), 2, "XOFF then XON: {pfcs:?}");
    assert_eq!(pfcs[1].1.quanta[3], 0);
    assert_eq!(pfcs[1].0, Nanos(start_of_kth));
    assert_eq!(d.sw.counters(0).classes[3].tx_xon_frames, 1);
    assert_eq!(d.data_sent(1).len() as u64, n);
}

/// The time series' XOFF flag is set by an XOFF in force at a sample or sent since the
/// one before, not by the XON that ends it: an XON counted as a pause sent drew
/// pfc-incast's XOFF bands solid from 0.18 ms to the end (2.83 ms) where the PG held its
/// peer in XOFF for 2.135 ms. The same for the paused flag of a queue that receives an
/// XON.
#[test]
fn an_xon_does_not_set_the_series_xoff_or_paused_flag() {
    use rocelab::series::{ColumnKind, SwitchRecorder};
    let cfg = config(STATIC, 2);
    let mut d = Driver::new(&cfg);
    d.learn_hosts();
    let mut rec = SwitchRecorder::new("sw", &cfg);
    rec.sample(d.now, &d.sw);
    d.sw.set_tx_enabled(1, false);
    let n = (RESERVE + XOFF).div_ceil(L as u64) + 20;
    for psn in 0..n {
        d.rx(0, &lossless(psn as u32));
    }
    // Port 1's queue 3 paused by its peer, then resumed.
    d.rx(1, &pfc(1, PrioritySet::single(3), PAUSE_QUANTA));
    rec.sample(d.now, &d.sw);
    d.rx(1, &pfc(1, PrioritySet::single(3), 0));
    d.sw.set_tx_enabled(1, true);
    d.run_for(Nanos(1_000_000));
    assert_eq!(
        d.pfc_sent(0).len(),
        2,
        "XOFF, then XON since the last sample"
    );
    rec.sample(d.now, &d.sw);
    let flags = |kind: ColumnKind, port: &str| -> Vec<f64> {
        rec.clone()
            .finish()
            .into_iter()
            .find(|t| t.kind == kind && t.name.contains(&format!("_{port}_")))
            .unwrap()
            .samples
            .iter()
            .map(|&(_, v)| v)
            .collect()
    };
    let (p0, p1) = (&cfg.ports[0].name, &cfg.ports[1].name);
    assert_eq!(flags(ColumnKind::Xoff, p0), [0.0, 1.0, 0.0]);
    assert_eq!(flags(ColumnKind::Paused, p1), [0.0, 1.0, 0.0]);
}

/// A received PFC pauses the queue for exactly quanta × 512 bit times at the port's rate;
/// a new PFC replaces the time left; time 0 resumes at once.
#[test]
fn pause_duration_is_exact_at_1_25_and_100_gbps() {
    for (gbps, rate) in [
        (1, 1_000_000_000u64),
        (25, 25_000_000_000),
        (100, 100_000_000_000),
    ] {
        let body = STATIC.replace("speed_gbps = 100", &format!("speed_gbps = {gbps}"));
        for quanta in [1u16, 100, 65535] {
            let mut d = Driver::new(&config(&body, 2));
            d.learn_hosts();
            let t0 = d.now;
            d.rx(1, &pfc(1, PrioritySet::single(3), quanta));
            d.rx(0, &lossless(7));
            d.run_for(Nanos(50_000_000));
            let sent = d.data_sent(1);
            assert_eq!(sent.len(), 1);
            assert_eq!(
                sent[0].time,
                Nanos(t0.0 + pause_ns(quanta, rate)),
                "{gbps} Gb/s, {quanta} quanta"
            );
        }
        // Replacement: 65535 quanta, then 10 quanta 1 µs later; then 0 resumes at once.
        let mut d = Driver::new(&config(&body, 2));
        d.learn_hosts();
        d.rx(1, &pfc(1, PrioritySet::single(3), 65535));
        d.rx(0, &lossless(1));
        d.run_for(Nanos(1000));
        let t1 = d.now;
        d.rx(1, &pfc(1, PrioritySet::single(3), 10));
        d.run_for(Nanos(1_000_000_000));
        assert_eq!(d.data_sent(1)[0].time, Nanos(t1.0 + pause_ns(10, rate)));
        d.rx(1, &pfc(1, PrioritySet::single(3), 65535));
        d.rx(0, &lossless(2));
        d.run_for(Nanos(500));
        let t2 = d.now;
        d.rx(1, &pfc(1, PrioritySet::single(3), 0));
        assert_eq!(d.data_sent(1)[1].time, t2, "XON resumes at once");
    }
}

/// A live switch's thread that ran late takes the frames that waited in the kernel at
/// their arrival times, but its XOFF leaves only when the thread runs: past a full
/// headroom, a frame that arrived before the pause left is held (counted as
/// `late_pause_frames`), since its sender would still have it had the pause left on
/// time; a frame that arrived after the pause left is an ingress-overflow drop, as ever.
/// XON waits until the held bytes have left too.
#[test]
fn frames_sent_before_a_late_pause_left_are_held_not_dropped() {
    let mut d = Driver::new(&config(STATIC, 2));
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    let l = L as u64;
    let drop_point = (RESERVE + XOFF + headroom()) / l;
    // The thread wakes 1 ms after the first of these frames arrived: nothing it sends
    // leaves before then.
    let stalled_until = d.now + Nanos(1_000_000);
    d.sw.set_release_floor(stalled_until);
    let late = 5;
    for psn in 0..drop_point + late {
        d.rx(0, &lossless(psn as u32));
        d.now += Nanos(100);
    }
    assert!(d.now < stalled_until);
    let c = &d.sw.counters(0).classes[3];
    assert_eq!((c.dropped(), c.late_pause_frames), (0, late));
    let pg = d.sw.pg_state(0, 3);
    assert_eq!(pg.late, late * l);
    assert_eq!(pg.reserve + pg.shared + pg.headroom, drop_point * l);
    // Once the pause has left, a frame past the full headroom is dropped.
    d.run_until(stalled_until);
    d.rx(0, &lossless(0));
    let c = &d.sw.counters(0).classes[3];
    assert_eq!((c.dropped_ingress_overflow, c.late_pause_frames), (1, late));
    // Draining: the held bytes leave first, and XON goes with the k-th departure, the
    // first after which what is left fits (reserve + xon), as without them.
    let t0 = d.now;
    d.sw.set_tx_enabled(1, true);
    d.run_for(Nanos(1_000_000));
    let pfcs = d.pfc_sent(0);
    let xons: Vec<_> = pfcs.iter().filter(|(_, p)| p.quanta[3] == 0).collect();
    assert_eq!(xons.len(), 1, "one XON: {pfcs:?}");
    let n = drop_point + late;
    let k = n - (RESERVE + XON) / l;
    assert_eq!(
        xons[0].0,
        Nanos(t0.0 + bits_to_ns((k - 1) * wire_bits(L), RATE))
    );
    let pg = d.sw.pg_state(0, 3);
    assert_eq!((pg.late, pg.headroom), (0, 0));
    assert_eq!(d.sw.queue_frames(1, 3), 0);
    // The story says so, apart from the one drop.
    let story = rocelab::report::story::what_happened(&rocelab::report::story::Fabric {
        switches: vec![("sw", &d.sw)],
        hosts: Vec::new(),
        now: d.now,
        series: None,
        line_bps: RATE,
    });
    assert!(story.contains("lost 1 frame in the switches"), "{story}");
    assert!(
        story.contains("held 5 frames past full headrooms"),
        "{story}"
    );
}

/// The thread can also stall between deciding a pause and sending it: the driver then
/// says when its sends returned (`released_by`), and frames that arrived before that are
/// held past a full headroom just the same.
#[test]
fn a_pause_sent_late_within_a_round_holds_what_arrived_before_it_left() {
    let mut d = Driver::new(&config(STATIC, 2));
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    let drop_point = (RESERVE + XOFF + headroom()) / L as u64;
    // The round starts now, decides XOFF, and its send returns 1 ms later.
    d.sw.set_release_floor(d.now);
    let mut psn = 0u32;
    while d.pfc_sent(0).is_empty() {
        d.rx(0, &lossless(psn));
        psn += 1;
    }
    let sent_at = d.now + Nanos(1_000_000);
    d.sw.released_by(sent_at);
    // The next round takes what came meanwhile: past the drop point, held.
    let late = 3;
    while u64::from(psn) < drop_point + late {
        d.now += Nanos(100);
        d.rx(0, &lossless(psn));
        psn += 1;
    }
    assert!(d.now < sent_at);
    let c = &d.sw.counters(0).classes[3];
    assert_eq!((c.dropped(), c.late_pause_frames), (0, late));
}

/// While XOFF holds, the pause is refreshed every refresh_quanta × 512 bit times.
#[test]
fn xoff_is_refreshed_while_congested() {
    let mut d = Driver::new(&config(STATIC, 2));
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    for psn in 0..(RESERVE + XOFF).div_ceil(L as u64) {
        d.rx(0, &lossless(psn as u32));
    }
    let pfcs = d.pfc_sent(0);
    assert_eq!(pfcs.len(), 1);
    let t_xoff = pfcs[0].0;
    let interval = pause_ns(REFRESH_QUANTA, RATE);
    d.run_until(Nanos(t_xoff.0 + 5 * interval + interval / 2));
    let pfcs = d.pfc_sent(0);
    assert_eq!(pfcs.len(), 6, "XOFF and five refreshes");
    for (k, (t, p)) in pfcs.iter().enumerate() {
        assert_eq!(*t, Nanos(t_xoff.0 + k as u64 * interval));
        assert_eq!(p.quanta[3], PAUSE_QUANTA);
    }
    // The refresh comes before the peer's pause would run out.
    assert!(interval < pause_ns(PAUSE_QUANTA, RATE));
}

/// PFC and PAUSE frames are consumed, never forwarded, and counted per priority.
#[test]
fn pfc_and_pause_are_never_forwarded() {
    let mut d = Driver::new(&config(STATIC, 3));
    d.learn_hosts();
    let mut pause = vec![0u8; 60];
    rocelab::wire::pfc::MacControl::Pause { quanta: 10 }
        .emit(&mut pause, common::net::host(0))
        .unwrap();
    for frame in [
        pfc(0, PrioritySet(0xff), 100),
        pfc(0, PrioritySet::single(3), 0),
        pause,
    ] {
        assert_eq!(d.rx(0, &frame), rocelab::switch::RxOutcome::Consumed);
    }
    d.run_for(Nanos(1_000_000));
    assert!(d.sent.is_empty(), "forwarded: {:?}", d.sent);
    let c = d.sw.counters(0);
    assert_eq!(c.classes[3].rx_pause_frames, 2);
    assert_eq!(c.classes[3].rx_xon_frames, 1);
    assert_eq!(c.classes[0].rx_pause_frames, 1);
    assert_eq!(c.rx_link_pause_frames, 1);
}

/// A paused priority stops while the others keep flowing.
#[test]
fn a_paused_priority_stops_while_others_flow() {
    let mut d = Driver::new(&config(STATIC, 2));
    d.learn_hosts();
    let t0 = d.now;
    d.rx(1, &pfc(1, PrioritySet::single(3), 65535));
    for i in 0..20 {
        d.rx(0, &lossless(i));
        d.rx(0, &roce(0, 1, 0, Ecn::NotEct, L, 1000 + i));
    }
    let pause_end = Nanos(t0.0 + pause_ns(65535, RATE));
    d.run_until(Nanos(pause_end.0 - 1));
    let sent = d.data_sent(1);
    assert_eq!(sent.len(), 20, "all lossy frames, no lossless one");
    assert!(
        sent.iter()
            .all(|s| rocelab::wire::parse(&s.frame).unwrap().dscp() == 0)
    );
    d.run_until(Nanos(pause_end.0 + 100_000));
    let sent = d.data_sent(1);
    assert_eq!(sent.len(), 40);
    assert_eq!(
        sent[20].time, pause_end,
        "lossless resumes exactly when the pause ends"
    );
}
