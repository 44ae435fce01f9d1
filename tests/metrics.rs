//! The Prometheus metrics page: rendered from a switch that paused, marked and dropped in
//! virtual time, parsed by the official Python client's parser, and checked against the
//! switch's own counters and Prometheus's naming practices; and the HTTP endpoint that
//! serves it, which no slow or silent client holds up.

mod common;

use common::net::{Driver, config, roce};
use rocelab::time::Nanos;
use rocelab::wire::Ecn;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const CFG: &str = r#"
[port_defaults]
speed_gbps = 100
cable_m = 5
[classify]
dscp_to_tc = [[26, 3]]
[pfc]
lossless = [3]
[buffer]
threshold = "static"
shared_bytes = 4194304
queue_limit_bytes = 20000
[pg.3]
xoff_bytes = 100000
xon_bytes = 50000
[queue.0]
[queue.3]
ecn = { kmin_bytes = 10000, kmax_bytes = 20000, pmax = 1.0 }
"#;

/// A switch that paused, marked and dropped in virtual time, and its metrics page as the
/// official Python client's parser read it (family name → type and samples); `None`
/// where that parser is not installed.
fn scraped(test: &str) -> Option<(Driver, BTreeMap<String, serde_json::Value>)> {
    if !common::have_python_module(test, "prometheus_client.parser") {
        return None;
    }
    let cfg = config(CFG, 3);
    let mut d = Driver::new(&cfg);
    d.learn_hosts();
    d.sw.set_tx_enabled(1, false);
    // Lossless frames past XOFF (PFC, CE marks), lossy frames past the tail limit.
    for psn in 0..200 {
        d.rx(0, &roce(0, 1, 26, Ecn::Ect0, 1082, psn));
    }
    for psn in 0..40 {
        d.rx(2, &roce(2, 1, 0, Ecn::NotEct, 1082, psn));
    }
    // An 802.3x PAUSE from p2's peer (every queue of p2, 1000 quanta), and a frame for
    // a host behind the port it came in on.
    let mut pause = vec![0u8; 60];
    pause[..6].copy_from_slice(&[0x01, 0x80, 0xc2, 0, 0, 0x01]);
    pause[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
    pause[12..18].copy_from_slice(&[0x88, 0x08, 0x00, 0x01, 0x03, 0xe8]);
    d.rx(2, &pause);
    d.rx(1, &roce(1, 1, 0, Ecn::NotEct, 202, 0));
    d.sw.set_tx_enabled(1, true);
    d.run_for(Nanos::from_millis(1));
    // Socket statistics for p0 and p1 only: p2's are counted as none.
    let kernel = [
        rocelab::io::KernelStats {
            packets: 300,
            drops: 7,
            truncated: 2,
            tx_refused: 1,
        },
        rocelab::io::KernelStats::default(),
    ];
    let page = rocelab::runtime::metrics::render(&d.sw, &kernel, d.now, 1_764_547_200.5);

    let out = common::run_with_input(
        Command::new("python3").arg(common::repo("scripts/check_metrics.py")),
        page.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}\n{page}",
        String::from_utf8_lossy(&out.stderr)
    );
    let families: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&out.stdout).unwrap();

    Some((d, families))
}

/// The value of `sample` with `labels` in `family`.
fn value(
    families: &BTreeMap<String, serde_json::Value>,
    family: &str,
    sample: &str,
    labels: &[(&str, &str)],
) -> f64 {
    families[family]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == sample)
        .find(|s| labels.iter().all(|(k, v)| s["labels"][k] == *v))
        .unwrap_or_else(|| panic!("{sample} {labels:?}"))["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn the_metrics_page_parses_and_follows_the_naming_practices() {
    let Some((_, families)) = scraped("the_metrics_page_parses_and_follows_the_naming_practices")
    else {
        return;
    };
    // Names: the official practices (base units, unit nouns, _total on counters).
    for (name, v) in &families {
        let kind = v["type"].as_str().unwrap();
        if name == "process_start_time_seconds" {
            continue;
        }
        assert!(name.starts_with("rocelab_"), "{name}");
        match kind {
            "counter" => assert!(
                ["_frames", "_bytes", "_seconds", "_storms", "_restorations"]
                    .iter()
                    .any(|u| name.contains(u)),
                "counter {name} has no unit noun"
            ),
            "gauge" => assert!(
                name.ends_with("_bytes") || name == "rocelab_pg_xoff",
                "gauge {name}"
            ),
            "histogram" => assert!(name.ends_with("_seconds"), "{name}"),
            other => panic!("{name}: type {other}"),
        }
        // One label name per dimension: never "class".
        for s in v["samples"].as_array().unwrap() {
            let labels: BTreeSet<&str> = s["labels"]
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert!(!labels.contains("class"), "{name}: {labels:?}");
            assert!(labels.contains("port"), "{name}: {labels:?}");
        }
        // No series twice: Prometheus would keep one of them and say nothing.
        let mut seen = BTreeSet::new();
        for s in v["samples"].as_array().unwrap() {
            let series = (s["name"].to_string(), s["labels"].to_string());
            assert!(seen.insert(series.clone()), "{name}: {series:?} twice");
        }
    }
    for want in [
        "rocelab_pfc_frames_sent",
        "rocelab_pfc_frames_received",
        "rocelab_dropped_frames",
        "rocelab_queue_depth_bytes",
        "rocelab_pg_shared_watermark_bytes",
        "rocelab_pg_headroom_watermark_bytes",
        "rocelab_pg_xoff",
        "rocelab_pause_seconds",
        "rocelab_queue_sojourn_seconds",
        "rocelab_watchdog_storms",
        "rocelab_ecn_marked_frames",
        "rocelab_port_dropped_frames",
        "rocelab_filtered_frames",
        "rocelab_malformed_frames",
        "rocelab_link_pause_frames_received",
        "rocelab_link_pause_seconds",
    ] {
        assert!(
            families.contains_key(want),
            "{want} missing: {:?}",
            families.keys()
        );
    }
    assert_eq!(families["process_start_time_seconds"]["type"], "gauge");
}

#[test]
fn the_metrics_page_counts_what_the_switch_counted() {
    let Some((d, families)) = scraped("the_metrics_page_counts_what_the_switch_counted") else {
        return;
    };
    let value = |family: &str, sample: &str, labels: &[(&str, &str)]| {
        value(&families, family, sample, labels)
    };
    let c0 = &d.sw.counters(0).classes[3];
    let c1 = &d.sw.counters(1).classes;
    assert!(c0.tx_pause_frames > c0.tx_xon_frames && c0.tx_xon_frames > 0);
    assert_eq!(
        value(
            "rocelab_pfc_frames_sent",
            "rocelab_pfc_frames_sent_total",
            &[("port", "p0"), ("priority", "3"), ("kind", "xoff")]
        ),
        (c0.tx_pause_frames - c0.tx_xon_frames) as f64
    );
    assert_eq!(
        value(
            "rocelab_pfc_frames_sent",
            "rocelab_pfc_frames_sent_total",
            &[("port", "p0"), ("priority", "3"), ("kind", "xon")]
        ),
        c0.tx_xon_frames as f64
    );
    assert!(c1[0].dropped_tail > 0);
    assert_eq!(
        value(
            "rocelab_dropped_frames",
            "rocelab_dropped_frames_total",
            &[("port", "p1"), ("queue", "0"), ("reason", "tail")]
        ),
        c1[0].dropped_tail as f64
    );
    // Ingress drops by priority, port drops by reason, PAUSE and filtering by port.
    for pg in 0..8 {
        let want = d.sw.counters(0).classes[pg].dropped_ingress_overflow as f64;
        let p = pg.to_string();
        assert_eq!(
            value(
                "rocelab_ingress_dropped_frames",
                "rocelab_ingress_dropped_frames_total",
                &[("port", "p0"), ("priority", &p)]
            ),
            want
        );
    }
    let port_drop = |port: &str, reason: &str| {
        value(
            "rocelab_port_dropped_frames",
            "rocelab_port_dropped_frames_total",
            &[("port", port), ("reason", reason)],
        )
    };
    assert_eq!(port_drop("p0", "kernel_receive"), 7.0);
    assert_eq!(port_drop("p0", "truncated"), 2.0);
    assert_eq!(port_drop("p0", "tx_refused"), 1.0);
    assert_eq!(port_drop("p2", "kernel_receive"), 0.0);
    assert_eq!(port_drop("p1", "oversize"), 0.0);
    assert_eq!(d.sw.counters(2).rx_link_pause_frames, 1);
    assert_eq!(
        value(
            "rocelab_link_pause_frames_received",
            "rocelab_link_pause_frames_received_total",
            &[("port", "p2")]
        ),
        1.0
    );
    // 1000 quanta of 512 bit times at 100 Gb/s: 5.12 µs, long over by the render.
    assert_eq!(
        value(
            "rocelab_link_pause_seconds",
            "rocelab_link_pause_seconds_total",
            &[("port", "p2")]
        ),
        5.12e-6
    );
    assert_eq!(
        value(
            "rocelab_filtered_frames",
            "rocelab_filtered_frames_total",
            &[("port", "p1")]
        ),
        d.sw.counters(1).filtered_frames as f64
    );
    assert!(d.sw.counters(1).filtered_frames > 0);
    assert!(c1[3].ecn_marked > 0);
    assert_eq!(
        value(
            "rocelab_ecn_marked_frames",
            "rocelab_ecn_marked_frames_total",
            &[("port", "p1"), ("queue", "3")]
        ),
        c1[3].ecn_marked as f64
    );
}

#[test]
fn the_sojourn_histogram_holds_every_frame_the_queue_sent() {
    let Some((d, families)) = scraped("the_sojourn_histogram_holds_every_frame_the_queue_sent")
    else {
        return;
    };
    let value = |family: &str, sample: &str, labels: &[(&str, &str)]| {
        value(&families, family, sample, labels)
    };
    let c1 = &d.sw.counters(1).classes;
    // The sojourn histogram: +Inf holds every frame sent from the queue, and the
    // buckets never decrease.
    let bucket = |le: &str| {
        value(
            "rocelab_queue_sojourn_seconds",
            "rocelab_queue_sojourn_seconds_bucket",
            &[("port", "p1"), ("queue", "3"), ("le", le)],
        )
    };
    assert_eq!(bucket("+Inf"), c1[3].tx_frames as f64);
    let les = [
        "1e-06", "1e-05", "0.0001", "0.001", "0.01", "0.1", "1.0", "+Inf",
    ];
    for w in les.windows(2) {
        assert!(bucket(w[0]) <= bucket(w[1]), "{w:?}");
    }
    assert_eq!(
        value(
            "rocelab_queue_sojourn_seconds",
            "rocelab_queue_sojourn_seconds_count",
            &[("port", "p1"), ("queue", "3")]
        ),
        c1[3].tx_frames as f64
    );
}

/// One HTTP exchange with the endpoint at `addr`: `request` sent in `parts` with a pause
/// between them; the whole reply.
fn exchange(addr: std::net::SocketAddr, parts: &[&[u8]]) -> String {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        conn.write_all(part).unwrap();
    }
    let mut reply = Vec::new();
    conn.read_to_end(&mut reply)
        .unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(parts[0])));
    String::from_utf8_lossy(&reply).into_owned()
}

/// The endpoint: 503 until the first page, then GET and HEAD of /metrics (a query string
/// allowed, a request in two segments read whole); 404 for other paths, 405 for other
/// methods, 400 for what is not HTTP; a client that sends nothing, sends slowly or reads
/// nothing holds up no other scrape, past the writers' limit too.
#[test]
fn the_endpoint_answers_every_client_and_none_holds_up_another() {
    use rocelab::runtime::metrics;
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let listener = metrics::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let page = metrics::serve(Arc::new(listener), Arc::clone(&stop)).unwrap();
    let get = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";

    let early = exchange(addr, &[get]);
    assert!(early.starts_with("HTTP/1.0 503 "), "{early}");
    // A page larger than any socket buffer, so that a client that reads none of it
    // leaves the server's write waiting.
    let body = "rocelab_x{port=\"p0\"} 1\n".repeat(400_000);
    page.set(body.clone());

    let ok = exchange(addr, &[get]);
    assert!(ok.starts_with("HTTP/1.0 200 OK\r\n"), "{}", &ok[..80]);
    assert!(ok.ends_with(&body));
    assert!(ok.contains(&format!("Content-Length: {}\r\n", body.len())));
    let split = exchange(addr, &[b"GET /met", b"rics?debug=1 HTTP/1.1\r\n\r\n"]);
    assert!(split.starts_with("HTTP/1.0 200 OK"), "{}", &split[..80]);
    let head = exchange(addr, &[b"HEAD /metrics HTTP/1.1\r\n\r\n"]);
    assert!(head.starts_with("HTTP/1.0 200 OK"), "{head}");
    assert!(head.contains(&format!("Content-Length: {}\r\n", body.len())));
    assert!(head.ends_with("\r\n\r\n"), "headers only: {head}");
    for (request, status) in [
        (&b"GET /metricsfoo HTTP/1.1\r\n\r\n"[..], "404 "),
        (b"GET / HTTP/1.0\r\n\r\n", "404 "),
        (
            b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "405 ",
        ),
        (b"hello\r\n\r\n", "400 "),
        (b"GET /metrics HTTP/1.0\n\n", "200 "),
    ] {
        let reply = exchange(addr, &[request]);
        assert!(
            reply.starts_with(&format!("HTTP/1.0 {status}")),
            "{:?}: {reply}",
            String::from_utf8_lossy(request)
        );
    }
    assert!(exchange(addr, &[b"PUT /metrics HTTP/1.1\r\n\r\n"]).contains("Allow: GET, HEAD\r\n"));

    // A client that asks and never reads, and three that never ask: the next scrape is
    // answered in full all the same.
    let mut stuck = std::net::TcpStream::connect(addr).unwrap();
    stuck.write_all(get).unwrap();
    let silent: Vec<_> = (0..3)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let beside = exchange(addr, &[get]);
    assert!(beside.ends_with(&body), "{}", &beside[..80]);
    drop((stuck, silent));

    // Clients that send their heads a byte at a time, more of them than heads are read at
    // once: the oldest are let go, and a scrape beside them is answered.
    let slow: Vec<_> = (0..metrics::MAX_PENDING + 8)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.write_all(b"G").unwrap();
            c
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let beside = exchange(addr, &[get]);
    assert!(beside.ends_with(&body), "{}", &beside[..80]);
    drop(slow);
    // More clients that take none of a page than pages are written at once: they hold
    // no place a scrape needs (they once held every writer, and scrapes got 503).
    let readers_stuck: Vec<_> = (0..metrics::MAX_WRITERS + 8)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.write_all(get).unwrap();
            c
        })
        .collect();
    std::thread::sleep(metrics::STALLED * 3);
    let beside = exchange(addr, &[get]);
    assert!(
        beside.ends_with(&body),
        "{}",
        beside.get(..80).unwrap_or(&beside)
    );
    drop(readers_stuck);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Issue 40: 60 requests a second from local clients that never read turned 80 % of real
/// scrapes into 503s: each held one of 16 page writers for 10 s. A swarm asks for the
/// page 100 times a second and never reads (up to 300 of them open at once), another
/// sends half a request head and stops (up to 100 open), and a third keeps 20 clients
/// that read a byte every 50 ms; 12 real scrapes beside them, after the swarm had a
/// second to fill every place, get the whole page, every one.
#[test]
fn a_swarm_of_clients_that_never_read_turns_no_scrape_away() {
    use rocelab::runtime::metrics;
    use std::io::{Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let listener = metrics::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let page = metrics::serve(Arc::new(listener), Arc::clone(&stop)).unwrap();
    // 2 MB: more than a socket buffer takes at once, so a client that never reads leaves
    // its page half written.
    let body = "rocelab_x{port=\"p0\"} 1\n".repeat(80_000);
    page.set(body.clone());
    let get = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    // The swarm runs until the scrapes are done, 10 s at most.
    let done = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(10);
    let running = {
        let done = Arc::clone(&done);
        move || !done.load(Ordering::Relaxed) && Instant::now() < deadline
    };
    let never_read = std::thread::spawn({
        let running = running.clone();
        move || {
            let mut open = std::collections::VecDeque::new();
            while running() {
                if let Ok(mut c) = std::net::TcpStream::connect(addr) {
                    let _ = c.write_all(get);
                    open.push_back(c);
                }
                if open.len() > 300 {
                    open.pop_front();
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    });
    let half_sent = std::thread::spawn({
        let running = running.clone();
        move || {
            let mut open = std::collections::VecDeque::new();
            while running() {
                if let Ok(mut c) = std::net::TcpStream::connect(addr) {
                    let _ = c.write_all(b"GET /metr");
                    open.push_back(c);
                }
                if open.len() > 100 {
                    open.pop_front();
                }
                std::thread::sleep(Duration::from_millis(30));
            }
        }
    });
    let slow_read = std::thread::spawn(move || {
        let mut open = Vec::new();
        while running() {
            if open.len() < 20
                && let Ok(mut c) = std::net::TcpStream::connect(addr)
            {
                let _ = c.write_all(get);
                let _ = c.set_nonblocking(true);
                open.push(c);
            }
            for c in &mut open {
                let _ = c.read(&mut [0u8; 1]);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    // Let the swarm fill every place first.
    std::thread::sleep(Duration::from_secs(1));
    for scrape in 0..12 {
        std::thread::sleep(Duration::from_millis(100));
        let reply = exchange(addr, &[get]);
        assert!(
            reply.starts_with("HTTP/1.0 200 OK\r\n") && reply.ends_with(&body),
            "scrape {scrape}: {}",
            reply.get(..120).unwrap_or(&reply)
        );
    }
    done.store(true, Ordering::Relaxed);
    for t in [never_read, half_sent, slow_read] {
        t.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
}
