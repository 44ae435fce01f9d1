//! Datacenter workloads in the simulator (`[[workload]]`): flows drawn as the scenario
//! says, each one's completion time, and its ideal FCT checked against the simulator
//! itself: a flow alone on an empty path must take exactly its ideal time.

use rocelab::sim::run::{Outcome, run};
use rocelab::sim::scenario::Scenario;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml("test", text, None).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn refused(text: &str) -> String {
    Scenario::from_toml("test", text, None)
        .map(|_| ())
        .expect_err("refused")
        .to_string()
}

fn outcome(text: &str) -> (Scenario, Outcome) {
    let s = scenario(text);
    let o = run(&s).unwrap();
    (s, o)
}

const STAR: &str = r#"
duration_ms = 50
[topology]
kind = "star"
hosts = 4
link_gbps = 100
delay_ns = 1000
"#;

/// One flow of `bytes` alone, every 2 ms, three times, on `topology`.
fn lone(topology: &str, from: usize, to: usize, bytes: u64) -> String {
    format!(
        "duration_ms = 50\n{topology}\n[[workload]]\nkind = \"incast-bursts\"\nhosts = [{from}, {to}]\nto = {to}\nbytes = {bytes}\nperiod_us = 2000\nbursts = 3\n"
    )
}

#[test]
fn a_flow_alone_takes_its_ideal_fct_on_every_path() {
    let star = "[topology]\nkind = \"star\"\nhosts = 4\nlink_gbps = 100\ndelay_ns = 1000";
    let leaf_spine = "[topology]\nkind = \"leaf-spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\nlink_gbps = 400\ndelay_ns = 500";
    let ring = "[topology]\nkind = \"ring\"\nswitches = 5\nhosts_per_switch = 1\nlink_gbps = 25\ndelay_ns = 2000";
    // (topology, from, to, links on the path)
    let paths = [
        (star, 0, 3, 2),
        (leaf_spine, 0, 1, 2),
        (leaf_spine, 0, 3, 4),
        (ring, 0, 2, 4),
    ];
    for (topology, from, to, hops) in paths {
        for bytes in [1u64, 1000, 1024, 100_000, 1_048_577, 5_000_000] {
            let (s, o) = outcome(&lone(topology, from, to, bytes));
            assert_eq!(s.topology.hops(from, to), hops);
            assert_eq!(o.flows.len(), 3, "{bytes} B");
            for f in &o.flows {
                let fct = f.fct().expect("finished").0;
                // The simulator runs on whole nanoseconds: within a nanosecond per link
                // crossed (the data's and the ACK's), or 0.01 % of a long flow.
                let tolerance = (2 * hops as u64 + 1).max(f.ideal.0 / 10_000);
                assert!(
                    fct.abs_diff(f.ideal.0) <= tolerance,
                    "{bytes} B over {hops} links: FCT {fct} ns, ideal {} ns",
                    f.ideal.0
                );
            }
        }
    }
}

#[test]
fn all_to_all_sends_every_pair_and_loses_nothing() {
    let (_, o) = outcome(&format!(
        "{STAR}\n[[workload]]\nkind = \"all-to-all\"\nbytes = \"256K\"\nstart_us = 10\n"
    ));
    assert_eq!(o.flows.len(), 12, "4 x 3 pairs");
    let mut pairs: Vec<(usize, usize)> = o.flows.iter().map(|f| (f.from, f.to)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    assert_eq!(pairs.len(), 12);
    for f in &o.flows {
        assert_eq!(f.arrival.0, 10_000);
        assert!(f.finished.is_some(), "{f:?}");
        // Three flows into each host share its link: slower than alone, never faster.
        assert!(f.slowdown().unwrap() >= 1.0, "{f:?}");
    }
    let dropped: u64 = (0..o.net.switches.len())
        .flat_map(|s| {
            let sw = o.net.switch(s);
            (0..sw.port_count()).map(move |p| {
                sw.counters(p)
                    .classes
                    .iter()
                    .map(|c| c.dropped())
                    .sum::<u64>()
            })
        })
        .sum();
    assert_eq!(dropped, 0, "PFC keeps the RoCE class lossless");
}

#[test]
fn poisson_arrivals_offer_the_load_asked_for() {
    // 16 hosts at 10 G, web-search sizes at 30 % for 2 s of arrivals: about 7 000 flows.
    // The generator alone (the flows are drawn when the scenario loads).
    let s = scenario(
        r#"
duration_ms = 2000
[topology]
kind = "star"
hosts = 16
link_gbps = 10
[[workload]]
kind = "poisson"
cdf = "web-search"
load = 0.3
"#,
    );
    let offered: u64 = s.jobs.iter().map(|j| j.bytes).sum();
    let load = offered as f64 * 8.0 / (2.0 * 16.0 * 10e9);
    assert!((load - 0.3).abs() < 0.03, "offered {load:.3} of the links");
    // Arrivals spread over the whole span, every host sends and nobody sends to itself.
    assert!(
        s.jobs
            .iter()
            .all(|j| j.from != j.to && j.arrival.0 < 2_000_000_000)
    );
    for h in 0..16 {
        let mine = s.jobs.iter().filter(|j| j.from == h).count() as f64;
        let expected = s.jobs.len() as f64 / 16.0;
        assert!(
            (mine - expected).abs() < 5.0 * expected.sqrt(),
            "host {h}: {mine} flows"
        );
    }
    // Gaps are exponential: their coefficient of variation is 1.
    let gaps: Vec<f64> = s
        .jobs
        .iter()
        .filter(|j| j.from == 0)
        .collect::<Vec<_>>()
        .windows(2)
        .map(|w| (w[1].arrival.0 - w[0].arrival.0) as f64)
        .collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!((sd / mean - 1.0).abs() < 0.2, "cv {}", sd / mean);
    // The same seed draws the same flows; another seed others.
    let again = scenario(&format!("seed = 1\n{}", WS_TEXT));
    let other = scenario(&format!("seed = 2\n{}", WS_TEXT));
    assert_eq!(scenario(&format!("seed = 1\n{}", WS_TEXT)).jobs, again.jobs);
    assert_ne!(other.jobs, again.jobs);
}

/// Web-search arrivals for 1 ms at 50 % on 8 hosts, then time to drain.
const WS_TEXT: &str = r#"
duration_ms = 30
[topology]
kind = "star"
hosts = 8
link_gbps = 100
[[workload]]
kind = "poisson"
cdf = "web-search"
load = 0.5
duration_us = 1000
"#;

#[test]
fn a_poisson_run_reports_every_arrived_flow() {
    let (s, o) = outcome(WS_TEXT);
    assert_eq!(
        o.flows.len(),
        s.jobs.len(),
        "every flow arrives within the run"
    );
    assert!(o.flows.windows(2).all(|w| w[0].id < w[1].id));
    assert!(o.flows.len() > 5, "{} flows", o.flows.len());
    for f in &o.flows {
        assert!(f.arrival.0 < 1_000_000, "{f:?}");
        assert!(
            f.slowdown().is_some_and(|x| x >= 0.999),
            "every flow drains: {f:?}"
        );
    }
    // The table's last row counts them all.
    let all = rocelab::sim::fct::buckets(&o.flows).pop().unwrap();
    assert_eq!((all.flows, all.finished), (o.flows.len(), o.flows.len()));
}

#[test]
fn flows_beyond_the_qp_limit_wait_for_a_qp() {
    // One sender, a 1 MB flow every 20 µs (each takes about 85 µs alone at 100 G).
    let text = |limit: u32| {
        format!(
            "{STAR}\n[endpoint]\nmax_qps_per_peer = {limit}\n[[workload]]\nkind = \"incast-bursts\"\nhosts = [0, 1]\nto = 1\nbytes = \"1M\"\nperiod_us = 20\nbursts = 6\n"
        )
    };
    let (_, one) = outcome(&text(1));
    assert_eq!(one.net.endpoint(0).qp_count(), 1);
    // On one QP the flows run one after the other: each starts when the one before ends.
    for w in one.flows.windows(2) {
        assert_eq!(w[1].started, w[0].finished, "{w:?}");
    }
    let (_, four) = outcome(&text(4));
    assert_eq!(four.net.endpoint(0).qp_count(), 4);
    assert!(four.flows[..4].iter().all(|f| f.started == Some(f.arrival)));
    assert!(
        four.flows[4].started > Some(four.flows[4].arrival),
        "the fifth waits"
    );
    assert!(
        one.flows
            .iter()
            .chain(&four.flows)
            .all(|f| f.finished.is_some())
    );
}

#[test]
fn incast_bursts_draw_distinct_senders_each_time() {
    let s = scenario(
        r#"
duration_ms = 10
[topology]
kind = "star"
hosts = 9
link_gbps = 100
[[workload]]
kind = "incast-bursts"
to = 8
fan_in = 5
bytes = "64K"
period_us = 100
bursts = 20
"#,
    );
    assert_eq!(s.jobs.len(), 100);
    for burst in s.jobs.chunks(5) {
        let mut from: Vec<usize> = burst.iter().map(|j| j.from).collect();
        from.sort_unstable();
        from.dedup();
        assert_eq!(from.len(), 5, "{burst:?}");
        assert!(burst.iter().all(|j| j.to == 8 && j.from != 8));
        assert!(burst.iter().all(|j| j.arrival == burst[0].arrival));
    }
    // Not the same five every time.
    assert_ne!(
        s.jobs[..5].iter().map(|j| j.from).collect::<Vec<_>>(),
        s.jobs[5..10].iter().map(|j| j.from).collect::<Vec<_>>()
    );
}

#[test]
fn bad_workloads_are_refused_with_the_key() {
    let with = |w: &str| format!("{STAR}\n[[workload]]\n{w}\n");
    for (w, key, says) in [
        (
            "kind = \"elephant\"",
            "workload[0].kind",
            "poisson, all-to-all, permutation or incast-bursts",
        ),
        (
            "kind = \"permutation\"",
            "workload[0].bytes",
            "1 B to 1 TiB",
        ),
        (
            "kind = \"permutation\"\nbytes = 1000\nhosts = [3]",
            "workload[0].hosts",
            "at least two",
        ),
        (
            "kind = \"poisson\"\nload = 0.5",
            "workload[0].cdf",
            "web-search, data-mining",
        ),
        (
            "kind = \"poisson\"\ncdf = \"web-search\"\nload = 1.5",
            "workload[0].load",
            "at most 1",
        ),
        (
            "kind = \"poisson\"\ncdf = \"nope.txt\"\nload = 0.5",
            "workload[0].cdf",
            "nope.txt",
        ),
        (
            "kind = \"poisson\"\ncdf = \"web-search\"\nload = 0.5\nbytes = 5",
            "workload[0].bytes",
            "does not take bytes",
        ),
        (
            "kind = \"all-to-all\"\nbytes = 1000\nhosts = [0, 9]",
            "workload[0].hosts",
            "host 9 does not exist",
        ),
        (
            "kind = \"all-to-all\"\nbytes = 1000\nhosts = [1, 1]",
            "workload[0].hosts",
            "twice",
        ),
        (
            "kind = \"incast-bursts\"\nto = 0\nbytes = 1000\nperiod_us = 10\nfan_in = 4",
            "workload[0].fan_in",
            "give 1 to 3",
        ),
        (
            "kind = \"incast-bursts\"\nto = 0\nbytes = 1000",
            "workload[0].period_us",
            "period",
        ),
    ] {
        let e = refused(&with(w));
        assert!(e.contains(key) && e.contains(says), "{w}: {e}");
    }
    // A rank runs the all-reduce: it cannot also send workload flows.
    let e = refused(&format!(
        "{STAR}\n[allreduce]\nranks = [0, 1]\nmax_bytes = \"64K\"\n[[workload]]\nkind = \"all-to-all\"\nbytes = 1000\n"
    ));
    assert!(
        e.contains("workload[0].hosts") && e.contains("all-reduce rank"),
        "{e}"
    );
    // Whether a host that sends a [[flow]] is one a workload sends from was decided by
    // the flows drawn: a 3-host star with flow 0 -> 1 and Poisson arrivals on every host
    // ran at 1 ms and was refused at 5 ms. It is refused at any duration, by the hosts
    // the workload lists; an incast's receiver may be such a host.
    let mixed = |duration: &str, workload: &str| {
        format!(
            "duration_ms = {duration}\n[topology]\nkind = \"star\"\nhosts = 3\nlink_gbps = 10\n\
             [[flow]]\nfrom = 0\nto = 1\n[[workload]]\n{workload}\n"
        )
    };
    let poisson = "kind = \"poisson\"\ncdf = \"web-search\"\nload = 0.5";
    for duration in ["0.001", "1", "5"] {
        let e = refused(&mixed(duration, poisson));
        assert!(
            e.contains("workload[0].hosts") && e.contains("host 0 sends flow[0]"),
            "{duration} ms: {e}"
        );
    }
    scenario(&mixed("1", &format!("{poisson}\nhosts = [1, 2]")));
    let bursts = "kind = \"incast-bursts\"\nto = 0\nbytes = 1000\nperiod_us = 100";
    scenario(&mixed("1", bursts));
    let e = refused(&mixed("1", &bursts.replace("to = 0", "to = 2")));
    assert!(e.contains("host 0 sends flow[0]"), "{e}");
    // Poisson arrivals need the run's end.
    let e = refused(
        &with("kind = \"poisson\"\ncdf = \"web-search\"\nload = 0.5")
            .replace("duration_ms = 50\n", ""),
    );
    assert!(e.contains("duration_ms"), "{e}");
}

/// Flows a workload makes after the run's end never start: `bursts = 100` said "300
/// flows" where the table counted 39. The plan says how many arrive within the run.
#[test]
fn a_workload_says_how_many_of_its_flows_arrive_within_the_run() {
    let text = "duration_ms = 1.2\n[topology]\nkind = \"star\"\nhosts = 4\nlink_gbps = 10\n\
                [[workload]]\nkind = \"incast-bursts\"\nto = 3\nbytes = 1000\nperiod_us = 100\nbursts = 100\n";
    let (s, o) = outcome(text);
    // Bursts at 0, 100, ..., 1200 µs arrive by the end at 1.2 ms: 13 of 100, 3 flows each.
    assert_eq!(
        (s.workloads[0].flows, s.workloads[0].flows_in_run),
        (300, 39)
    );
    assert_eq!(o.flows.len(), 39);
    let table = rocelab::report::sim::fct_table(&s, &o);
    assert!(
        table.contains("(300 flows; 39 arrive within the run, 261 after it ends and never start)"),
        "{table}"
    );
}

#[test]
fn a_run_that_would_take_hours_is_refused_before_it_starts() {
    // 128 hosts at 100 G for 2 s: up to 1.4e10 frames.
    let long = rocelab::sim::scenario::scenario_text("web-search")
        .unwrap()
        .replace("duration_ms = 10", "duration_ms = 2000");
    let e = refused(&long);
    assert!(e.contains("max_frames") && e.contains("7.9 hours"), "{e}");
    // Raised, it loads.
    scenario(&format!(
        "max_frames = 20000000000\nmemory_budget_mib = 100000\n{long}"
    ));
}

#[test]
fn a_workload_sender_has_one_rate_column_over_its_qps() {
    let (_, o) = outcome(WS_TEXT);
    let names: Vec<&str> = o.series.columns.iter().map(|c| c.name.as_str()).collect();
    assert!(names.contains(&"rate_h0_gbps"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("_qp")), "{names:?}");
    // What the column carried adds up to what the host's QPs sent (a 10 µs grid).
    let col = o
        .series
        .columns
        .iter()
        .find(|c| c.name == "rate_h0_gbps")
        .unwrap();
    let step_ns = (o.series.times[1].0 - o.series.times[0].0) as f64;
    let bytes: f64 = col.values.iter().map(|g| g * step_ns / 8.0).sum();
    let ep = o.net.endpoint(0);
    let sent: u64 = (0..ep.qp_count())
        .map(|q| ep.qp_status(q, o.net.engine.now()).counters.data_bytes_sent)
        .sum();
    assert!(
        (bytes - sent as f64).abs() <= sent as f64 * 0.01 + 1.0,
        "{bytes} vs {sent}"
    );
}

/// The table said under its last row, in one long line, that unfinished flows are left
/// out of the percentiles: it says so above the table, with how many and what share, and
/// how to let them drain. Stopping the arrivals early (`duration_us`) lets every flow
/// finish.
#[test]
fn unfinished_flows_are_counted_above_the_table_and_an_early_stop_lets_them_drain() {
    // Every 100 µs, 3 senders each send 100 kB to host 3: 3 × 100 kB × 8 / 100 µs =
    // 24 Gb/s offered into a 10 Gb/s link, so a backlog builds and the flows of the last
    // bursts cannot finish by the end.
    let base = "duration_ms = 1\n[topology]\nkind = \"star\"\nhosts = 4\nlink_gbps = 10\n\
                [[workload]]\nkind = \"incast-bursts\"\nto = 3\nbytes = 100000\nperiod_us = 100\n";
    let (s, o) = outcome(base);
    let all = o.flows.len();
    let unfinished = o.flows.iter().filter(|f| f.finished.is_none()).count();
    // Without `bursts` they fill the run: 0, 100, ..., 900 µs, 10 bursts, 30 flows: 3 MB,
    // 2.4 ms of the link; at most 1 ms of it (1.25 MB, 12 flows) can be through.
    assert_eq!(all, 30);
    assert!(unfinished >= 30 - 12, "{unfinished}");
    let table = rocelab::report::sim::fct_table(&s, &o);
    let note = format!(
        "{unfinished} of the 30 flows ({:.1} %) had not finished when the run ended",
        100.0 * unfinished as f64 / 30.0
    );
    let at = table.find(&note).unwrap_or_else(|| panic!("{table}"));
    assert!(
        at < table.find("size ").unwrap(),
        "above the table:\n{table}"
    );
    assert!(table.contains("the workload's duration_us"), "{table}");

    // Bursts at 0, 100 and 200 µs only (duration_us = 300: a burst at 300 µs would be at
    // the stop), 900 kB in all, about 0.75 ms of the link: they all finish by 3 ms.
    let (s, o) = outcome(
        &base
            .replace("duration_ms = 1", "duration_ms = 3")
            .replace("period_us = 100\n", "period_us = 100\nduration_us = 300\n"),
    );
    assert_eq!(o.flows.len(), 9);
    assert!(o.flows.iter().all(|f| f.finished.is_some()));
    let table = rocelab::report::sim::fct_table(&s, &o);
    assert!(!table.contains("had not finished"), "{table}");
}

#[test]
fn a_permutation_sends_once_from_and_to_every_host_never_to_itself() {
    let text = |seed: u64| {
        format!(
            "seed = {seed}\nduration_ms = 5\n[topology]\nkind = \"leaf-spine\"\nleaves = 4\n\
             spines = 2\nhosts_per_leaf = 4\nlink_gbps = 100\ndelay_ns = 1000\n\
             [[workload]]\nkind = \"permutation\"\nbytes = \"256K\"\nstart_us = 5\n"
        )
    };
    let draws: Vec<Vec<usize>> = (1..=6)
        .map(|seed| {
            let s = scenario(&text(seed));
            assert_eq!(s.jobs.len(), 16);
            let mut to = vec![usize::MAX; 16];
            for j in &s.jobs {
                assert_ne!(j.from, j.to, "seed {seed}: {j:?}");
                assert_eq!((j.arrival.0, j.bytes), (5_000, 256 << 10));
                assert_eq!(std::mem::replace(&mut to[j.from], j.to), usize::MAX);
            }
            let mut received = to.clone();
            received.sort_unstable();
            assert_eq!(received, (0..16).collect::<Vec<_>>(), "seed {seed}");
            to
        })
        .collect();
    // The seed draws it: the same again, another for another seed.
    assert_eq!(
        scenario(&text(1)).jobs,
        scenario(&text(1)).jobs,
        "a function of the seed"
    );
    assert!(draws.windows(2).any(|w| w[0] != w[1]));
    // Every flow finishes, and the receivers hold none of the data (nothing reads it).
    let (_, o) = outcome(&text(1));
    assert_eq!(o.flows.len(), 16);
    assert!(o.flows.iter().all(|f| f.finished.is_some()));
    for h in 0..16 {
        let ep = o.net.endpoint(h);
        // Registered, room for a workload's messages, and no bytes kept.
        let len = ep.region_len(rocelab::endpoint::app::flow::FLOW_RKEY);
        assert!(len.is_some_and(|l| l >= rocelab::sim::scenario::WORKLOAD_MESSAGE_BYTES));
        assert!(ep.region(rocelab::endpoint::app::flow::FLOW_RKEY).is_none());
    }
    let e = refused(&text(1).replace("bytes = \"256K\"", "bytes = 0"));
    assert!(e.contains("workload[0].bytes"), "{e}");
    let e = refused(&text(1).replace("start_us = 5", "cdf = \"web-search\""));
    assert!(e.contains("workload[0].cdf"), "{e}");
}
