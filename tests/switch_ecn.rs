//! RED-ECN in virtual time: with Kmin = Kmax the first frame above is marked; the marked
//! fraction against queue depth follows the configured line within binomial bounds; Not-ECT
//! frames are dropped by WRED on lossy queues and left alone on lossless ones; a marked
//! frame keeps a valid IPv4 checksum and ICRC; a marking rate (InfiniBand's) spaces the
//! marks.

mod common;

use common::net::{Driver, config, roce};
use rocelab::time::Nanos;
use rocelab::wire::{Ecn, icrc};

const L: usize = 1082;

fn ecn_config(kmin: u64, kmax: u64, pmax: f64, mark_at: &str) -> String {
    format!(
        r#"
seed = 42
[port_defaults]
speed_gbps = 100
cable_m = 5
[classify]
dscp_to_tc = [[26, 3], [10, 1]]
[pfc]
lossless = [3]
[buffer]
threshold = "static"
shared_bytes = 67108864
queue_limit_bytes = 4000000
[pg.3]
xoff_bytes = 60000000
xon_bytes = 50000000
[queue.1]
schedule = "dwrr"
ecn = {{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = {pmax} }}
mark_at = "{mark_at}"
[queue.3]
schedule = "dwrr"
ecn = {{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = {pmax} }}
mark_at = "{mark_at}"
"#
    )
}

/// With Kmin = Kmax = K, a frame is marked exactly when the queue it joins holds more
/// than K bytes: the first marked frame is number floor(K / L) + 2.
#[test]
fn kmin_equal_kmax_marks_the_first_frame_above() {
    let k: u64 = 100_000;
    let mut d = Driver::new(&config(&ecn_config(k, k, 1.0, "enqueue"), 2));
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    let n = 200;
    for psn in 0..n {
        d.rx(0, &roce(0, 1, 26, Ecn::Ect0, L, psn));
    }
    d.sw.set_tx_enabled(1, true);
    d.run_for(Nanos(10_000_000));
    let sent = d.data_sent(1);
    assert_eq!(sent.len(), n as usize);
    let first_marked = (k / L as u64 + 2) as usize; // 1-based
    for (i, s) in sent.iter().enumerate() {
        let want = if i + 1 >= first_marked {
            Ecn::Ce
        } else {
            Ecn::Ect0
        };
        assert_eq!(s.ecn(), Some(want), "frame {}", i + 1);
        let meta = rocelab::wire::parse(&s.frame).unwrap();
        assert_eq!(icrc::verify(&s.frame, &meta), Some(true), "frame {}", i + 1);
        let ip = rocelab::wire::Ipv4Packet::new_checked(&s.frame[14..]).unwrap();
        assert!(ip.verify_checksum(), "frame {}", i + 1);
    }
    assert_eq!(
        d.sw.counters(1).classes[3].ecn_marked,
        n as u64 + 1 - first_marked as u64
    );
    let note = sent[first_marked - 1].note.as_deref().unwrap();
    assert!(note.starts_with("CE: queue 3 at"), "{note}");
}

/// The marked fraction at each depth follows p(q) = Pmax (q − Kmin) / (Kmax − Kmin):
/// over many fills, the marks in each depth band are within 4.5 standard deviations of the
/// sum of p over the decisions in the band (a binomial sum; the seed is fixed).
#[test]
fn marked_fraction_follows_the_red_line() {
    let (kmin, kmax, pmax) = (100_000u64, 700_000u64, 0.2);
    let mut d = Driver::new(&config(&ecn_config(kmin, kmax, pmax, "enqueue"), 2));
    d.learn_hosts();
    let per_fill = (kmax / L as u64) as usize + 5;
    let bands = 6usize;
    let band_of =
        |depth: u64| ((depth.saturating_sub(kmin)) * bands as u64 / (kmax - kmin)) as usize;
    let (mut expected, mut variance, mut observed) =
        (vec![0.0; bands], vec![0.0; bands], vec![0u64; bands]);
    for fill in 0..150 {
        d.sw.set_tx_enabled(1, false);
        for i in 0..per_fill {
            d.rx(0, &roce(0, 1, 26, Ecn::Ect0, L, i as u32));
        }
        d.sw.set_tx_enabled(1, true);
        d.sent.clear();
        d.run_for(Nanos(100_000_000));
        assert_eq!(d.data_sent(1).len(), per_fill, "fill {fill}");
        for (i, s) in d.data_sent(1).iter().enumerate() {
            let depth = i as u64 * L as u64; // what frame i saw when it joined
            if depth <= kmin || depth > kmax {
                let want = if depth > kmax { Ecn::Ce } else { Ecn::Ect0 };
                assert_eq!(s.ecn(), Some(want), "outside the RED band at {depth} B");
                continue;
            }
            let p = pmax * (depth - kmin) as f64 / (kmax - kmin) as f64;
            let b = band_of(depth).min(bands - 1);
            expected[b] += p;
            variance[b] += p * (1.0 - p);
            observed[b] += u64::from(s.ecn() == Some(Ecn::Ce));
        }
    }
    for b in 0..bands {
        let sd = variance[b].sqrt();
        let diff = observed[b] as f64 - expected[b];
        assert!(
            diff.abs() <= 4.5 * sd,
            "band {b}: observed {} marks, expected {:.1} ± {:.1}",
            observed[b],
            expected[b],
            sd
        );
    }
    assert!(
        expected.iter().sum::<f64>() > 1000.0,
        "enough marks to judge"
    );
}

/// On a lossy queue, Not-ECT frames in the RED band are dropped (WRED), ECT ones marked;
/// on a lossless queue, Not-ECT frames are never dropped by RED.
#[test]
fn wred_drops_not_ect_on_lossy_queues_only() {
    let k = 50_000u64;
    let mut d = Driver::new(&config(&ecn_config(k, k, 1.0, "enqueue"), 2));
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    let n = 100u64;
    for psn in 0..n {
        d.rx(0, &roce(0, 1, 10, Ecn::NotEct, L, psn as u32)); // lossy class 1
        d.rx(0, &roce(0, 1, 26, Ecn::NotEct, L, psn as u32)); // lossless class 3
    }
    let admitted = k / L as u64 + 1; // joins while the queue holds ≤ K bytes
    let c = d.sw.counters(1);
    assert_eq!(c.classes[1].dropped_wred, n - admitted);
    assert_eq!(d.sw.queue_frames(1, 1) as u64, admitted);
    assert_eq!(c.classes[3].dropped(), 0);
    assert_eq!(d.sw.queue_frames(1, 3) as u64, n);
    assert_eq!(c.classes[3].ecn_marked, 0, "Not-ECT is never marked");
}

/// Marking at dequeue decides on the bytes left behind the departing frame.
#[test]
fn dequeue_marking_uses_the_queue_left_behind() {
    let k = 100_000u64;
    let mut d = Driver::new(&config(&ecn_config(k, k, 1.0, "dequeue"), 2));
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    let n = 200u64;
    for psn in 0..n {
        d.rx(0, &roce(0, 1, 26, Ecn::Ect0, L, psn as u32));
    }
    d.sw.set_tx_enabled(1, true);
    d.run_for(Nanos(10_000_000));
    let sent = d.data_sent(1);
    for (i, s) in sent.iter().enumerate() {
        let behind = (n - 1 - i as u64) * L as u64;
        let want = if behind > k { Ecn::Ce } else { Ecn::Ect0 };
        assert_eq!(
            s.ecn(),
            Some(want),
            "frame {} with {behind} B behind it",
            i + 1
        );
    }
}

/// With a `marking_rate` of 3 (InfiniBand's `Marking_Rate`, which a simulated InfiniBand
/// fabric sets) a queue marks one frame in four of those RED hits, the first of them, at
/// enqueue and at dequeue alike; a Not-ECT frame on the lossless queue is not one it can
/// mark, so it does not count.
#[test]
fn a_marking_rate_marks_one_hit_in_rate_plus_one() {
    for mark_at in ["enqueue", "dequeue"] {
        let mut cfg = config(&ecn_config(0, 0, 1.0, mark_at), 2);
        cfg.queues[3].marking_rate = 3;
        let mut d = Driver::new(&cfg);
        d.learn_hosts();
        d.sw.set_tx_enabled(1, false);
        // Every frame but the first joins a non-empty queue (enqueue) or leaves one behind
        // it (dequeue): all but one are hits. Frames 6 and 7 are Not-ECT.
        let n = 14u32;
        for psn in 0..n {
            let ecn = if matches!(psn, 5 | 6) {
                Ecn::NotEct
            } else {
                Ecn::Ect0
            };
            d.rx(0, &roce(0, 1, 26, ecn, L, psn));
        }
        d.sw.set_tx_enabled(1, true);
        d.run_for(Nanos(10_000_000));
        let marked: Vec<u32> = d
            .data_sent(1)
            .iter()
            .enumerate()
            .filter(|(_, s)| s.ecn() == Some(Ecn::Ce))
            .map(|(i, _)| i as u32)
            .collect();
        // Hits: frames 1-13 at enqueue (frame 0 found the queue empty), 0-12 at dequeue
        // (frame 13 leaves it empty); 5 and 6 cannot be marked.
        let want = match mark_at {
            "enqueue" => [1, 7, 11],
            _ => [0, 4, 10],
        };
        assert_eq!(marked, want, "{mark_at}");
        assert_eq!(d.sw.counters(1).classes[3].ecn_marked, 3, "{mark_at}");
    }
}

/// The story's ECN line gave marks as a share of the frames sent: a run ending on a full
/// queue of marked frames read "marked 5 frames CE (inf % ...)" or over 100 %. Marks are
/// made as frames are queued, so the share is of the frames queued.
#[test]
fn the_story_counts_marks_against_the_frames_queued_not_sent() {
    use rocelab::report::story::{Fabric, what_happened};
    let mut d = Driver::new(&config(&ecn_config(0, 1, 1.0, "enqueue"), 2));
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    for psn in 0..5 {
        d.rx(0, &roce(0, 1, 26, Ecn::Ect0, L, psn));
    }
    let story = what_happened(&Fabric {
        switches: vec![("sw", &d.sw)],
        hosts: Vec::new(),
        now: d.now,
        series: None,
        line_bps: 100_000_000_000,
    });
    assert_eq!(d.sw.counters(1).classes[3].tx_frames, 0);
    assert!(
        story.contains("queue 3 marked 4 frames CE (80 % of the 5 it queued)"),
        "{story}"
    );
}
