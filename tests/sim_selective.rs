//! Selective repeat (IRN) and the RC error path in the simulator: every byte delivered
//! with only the lost packets resent; the figures of a lossy link and of an incast with
//! PFC off; a QP that gets no answer fails after its retries; a WRITE the responder
//! cannot place is NAKed and fails.

use rocelab::config::SwitchConfig;
use rocelab::config::endpoint::{EndpointConfig, Transport};
use rocelab::endpoint::WcStatus;
use rocelab::endpoint::app::flow::{FLOW_RKEY, Flow};
use rocelab::sim::scenario::Scenario;
use rocelab::sim::summary::jain;
use rocelab::sim::topology::{self, Network};
use rocelab::time::Nanos;

fn ep_cfg(transport: Transport) -> EndpointConfig {
    EndpointConfig {
        link_gbps: 25.0,
        transport,
        ..EndpointConfig::default()
    }
}

fn star(transport: Transport, loss: f64, seed: u64) -> Network {
    let cfg = SwitchConfig::preset("default").unwrap();
    let mut ep = ep_cfg(transport);
    ep.selective_repeat.bdp_cap_packets = 16;
    topology::star(&cfg, &ep, 2, Nanos(1000), loss, seed)
}

/// A transfer of `bytes` from host 0 to host 1 in messages of 4000 bytes.
fn transfer(net: &mut Network, bytes: u64) {
    let (q0, _) = net.connect_qp(0, 1);
    Flow::prepare_receiver(net.endpoint_mut(1), 4000);
    net.host_mut(0).app = Some(Flow::new(q0, Some(bytes), 4000, Nanos(0)).into());
}

fn run_to_done(net: &mut Network, limit: Nanos) {
    rocelab::sim::allreduce::run_to_done(net, limit).unwrap();
    assert!(net.engine.apps_done(), "not done by {limit:?}");
}

#[test]
fn selective_repeat_delivers_every_byte_and_resends_far_less_than_go_back_n() {
    let packets = 2_000_000u64.div_ceil(4000) * 4;
    let mut resent = Vec::new();
    for transport in [Transport::GoBackN, Transport::SelectiveRepeat] {
        let mut net = star(transport, 0.01, 7);
        transfer(&mut net, 2_000_000);
        run_to_done(&mut net, Nanos::from_millis(500));
        let (tx, rx) = (net.endpoint(0).counters(), net.endpoint(1).counters());
        assert_eq!(
            rx.data_packets_received, packets,
            "{transport:?}: each once"
        );
        resent.push((tx.retransmitted_packets, net.engine.stats().frames_lost));
    }
    let (gbn, sr) = (resent[0], resent[1]);
    // A lost first packet makes the rest of its 4-packet message unplaceable: at most
    // four resends per frame lost (ACKs and NAKs are among the frames lost).
    assert!(sr.0 > 0 && sr.0 <= 4 * sr.1, "selective repeat {sr:?}");
    assert!(
        sr.0 * 5 < gbn.0,
        "go-back-N {gbn:?}, selective repeat {sr:?}"
    );
}

#[test]
fn a_burst_loss_is_recovered_without_a_timeout() {
    let mut net = star(Transport::SelectiveRepeat, 0.0, 3);
    // 10 frames in a row: fewer than the 16 in flight, so later packets reveal them.
    net.engine.add_burst_loss(net.switches[0], 1, 100, 10);
    transfer(&mut net, 400_000);
    run_to_done(&mut net, Nanos::from_millis(100));
    let (tx, rx) = (net.endpoint(0).counters(), net.endpoint(1).counters());
    assert_eq!(rx.data_packets_received, 400);
    assert_eq!(tx.timeouts, 0);
    assert!(
        rx.out_of_order_placed > 0 && rx.max_reorder_depth > 0,
        "{rx:?}"
    );
}

#[test]
fn a_lost_tail_is_found_by_the_short_timeout() {
    let mut net = star(Transport::SelectiveRepeat, 0.0, 3);
    // The last 3 of 20 packets lost: nothing follows them, so only a timeout finds them;
    // with 3 in flight it is IRN's RTO_low (100 µs), not RTO_high (320 µs).
    net.engine.add_burst_loss(net.switches[0], 1, 17, 3);
    transfer(&mut net, 20_000);
    run_to_done(&mut net, Nanos::from_millis(100));
    assert_eq!(net.endpoint(1).counters().data_packets_received, 20);
    assert_eq!(net.endpoint(0).counters().timeouts, 1);
    let app = net.host(0).app.as_ref();
    let end = app.and_then(|a| a.flow()).and_then(Flow::finished).unwrap();
    assert!(
        end > Nanos::from_micros(100) && end < Nanos::from_micros(150),
        "done at {end:?}"
    );
}

/// Goodput of one scenario's QPs, Gb/s.
fn goodputs(text: &str) -> Vec<f64> {
    let s = Scenario::from_toml("t", text, None).unwrap();
    let out = rocelab::sim::run::run(&s).unwrap();
    out.qps.iter().map(|q| q.gbps).collect()
}

#[test]
fn one_flow_over_a_lossy_link_keeps_its_goodput_with_selective_repeat() {
    let one = |transport: &str, loss: f64| {
        goodputs(&format!(
            r#"
duration_ms = 20
measure_from_ms = 2
[topology]
kind = "star"
hosts = 2
link_gbps = 100
delay_ns = 1000
loss = {loss}
[endpoint]
mtu = 4096
transport = "{transport}"
dcqcn = {{ enabled = false }}
[[flow]]
from = 0
to = 1
message_bytes = "1M"
"#
        ))[0]
    };
    // 1 MiB messages at MTU 4096 (Ethernet, IPv4, UDP, BTH, ICRC: 58 bytes a packet, a
    // RETH of 16 on each message's first; 24 of preamble and gap).
    let m = 1u64 << 20;
    let closed = 100.0 * m as f64 / (m + 256 * (58 + 24) + 16) as f64;
    let lossless = one("selective-repeat", 0.0);
    assert!(
        (lossless - closed).abs() < closed * 1e-4,
        "{lossless} vs {closed}"
    );
    let sr = one("selective-repeat", 0.001);
    let gbn = one("go-back-n", 0.001);
    assert!(
        sr >= 0.995 * closed,
        "selective repeat {sr:.3} of {closed:.3}"
    );
    assert!(gbn < 0.98 * closed, "go-back-N {gbn:.3} of {closed:.3}");
}

#[test]
fn an_incast_without_pfc_keeps_its_goodput_and_fairness_with_selective_repeat() {
    let mut text = String::from(
        r#"
duration_ms = 20
measure_from_ms = 2
[topology]
kind = "star"
hosts = 9
link_gbps = 100
delay_ns = 1000
[switch]
pfc = false
buffer.shared_bytes = 2097152
[endpoint]
mtu = 4096
transport = "selective-repeat"
"#,
    );
    for from in 0..8 {
        text.push_str(&format!("[[flow]]\nfrom = {from}\nto = 8\n"));
    }
    let rates = goodputs(&text);
    let total: f64 = rates.iter().sum();
    let fairness = jain(&rates).unwrap();
    assert!(total >= 88.0, "{total:.2} Gb/s: {rates:?}");
    assert!(fairness >= 0.9, "Jain {fairness:.3}: {rates:?}");
}

/// Host 0 writes to host 1 over a link that loses everything; returns the failure.
fn fails_after_its_retries(transport: Transport) -> (rocelab::endpoint::QpFailure, Nanos) {
    let mut net = star(transport, 0.0, 1);
    net.engine
        .add_burst_loss(net.switches[0], 1, 0, u64::MAX / 2);
    transfer(&mut net, 40_000);
    run_to_done(&mut net, Nanos::from_secs(2));
    let ep = net.endpoint(0);
    assert_eq!(ep.counters().qp_errors, 1);
    assert_eq!(ep.counters().timeouts, 7, "retry_count 7: 7 retries");
    let failure = ep.qp_failures()[0];
    assert_eq!(
        (failure.status, failure.retries, failure.peer_ip),
        (WcStatus::RetryExceeded, 7, topology::host_ip(1))
    );
    (failure, net.engine.now())
}

#[test]
fn a_qp_that_gets_no_answer_fails_after_retry_count_timeouts() {
    let (failure, end) = fails_after_its_retries(Transport::GoBackN);
    // Eight timeouts of 4.096 µs × 2^14 from the first send, then the error state.
    let rto = Nanos(4096 * (1 << 14));
    assert!(
        failure.at_ns >= 8 * rto.0 && failure.at_ns <= 8 * rto.0 + 100_000,
        "{failure:?}"
    );
    assert!(end.0 <= failure.at_ns + 1_000_000, "the run ends: {end:?}");
    let (failure, _) = fails_after_its_retries(Transport::SelectiveRepeat);
    // IRN's timeouts: RTO_high (320 µs) with more than 3 packets in flight.
    assert!(failure.at_ns <= 8 * 320_000 + 100_000, "{failure:?}");
}

#[test]
fn a_write_the_responder_cannot_place_is_naked_and_fails() {
    for transport in [Transport::GoBackN, Transport::SelectiveRepeat] {
        let mut net = star(transport, 0.0, 1);
        let (q0, _) = net.connect_qp(0, 1);
        // No receive region on host 1: its R_Key is unknown there.
        net.host_mut(0).app = Some(Flow::new(q0, Some(40_000), 4000, Nanos(0)).into());
        run_to_done(&mut net, Nanos::from_millis(10));
        assert!(net.endpoint(1).counters().access_errors >= 1);
        assert!(net.endpoint(1).region_len(FLOW_RKEY).is_none());
        let failure = net.endpoint(0).qp_failures()[0];
        assert_eq!(failure.status, WcStatus::RemoteAccess, "{transport:?}");
        assert_eq!(failure.retries, 0);
    }
}

#[test]
fn compare_puts_irn_beside_roce() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args([
            "compare",
            "incast-8",
            "--fabrics",
            "roce,irn",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let fabrics: Vec<&str> = doc["fabrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["fabric"].as_str().unwrap())
        .collect();
    assert_eq!(fabrics, ["roce", "irn"]);
}
