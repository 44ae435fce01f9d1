//! iWARP (RDMA over TCP) in the simulator: one flow at the framing's closed form, every
//! byte placed where it belongs under loss (ring all-reduce bit-exact), loss recovered
//! by SACK, an 8:1 incast without PFC, the RC error path (a connection that gets no
//! answer fails after its retries; a WRITE the responder cannot place is answered by a
//! Terminate), and `rocelab compare` with the four fabrics side by side.

use rocelab::config::SwitchConfig;
use rocelab::config::endpoint::EndpointConfig;
use rocelab::endpoint::app::allreduce::{DATA_RKEY, expected_sum};
use rocelab::endpoint::app::flow::{FLOW_RKEY, Flow};
use rocelab::endpoint::{IwarpConfig, WcStatus};
use rocelab::sim::allreduce;
use rocelab::sim::scenario::Scenario;
use rocelab::sim::summary::jain;
use rocelab::sim::topology::{self, Network};
use rocelab::time::Nanos;
use rocelab::wire::iwarp_goodput::IwarpFraming;

/// A star of `hosts` iWARP NICs at 25 Gb/s with 1 µs links losing `loss` of frames.
fn star(hosts: usize, loss: f64, seed: u64) -> Network {
    let cfg = SwitchConfig::preset("default").unwrap();
    let ep = EndpointConfig {
        link_gbps: 25.0,
        ..EndpointConfig::default()
    };
    let mut net = topology::star(&cfg, &ep, hosts, Nanos(1000), loss, seed);
    for h in 0..hosts {
        net.endpoint_mut(h)
            .set_iwarp(IwarpConfig::default())
            .unwrap();
    }
    net
}

fn run_to_done(net: &mut Network, limit: Nanos) {
    allreduce::run_to_done(net, limit).unwrap();
    assert!(net.engine.apps_done(), "not done by {limit:?}");
}

/// Goodput of one scenario's QPs, Gb/s.
fn goodputs(text: &str) -> Vec<f64> {
    let s = Scenario::from_toml("t", text, None).unwrap();
    let out = rocelab::sim::run::run(&s).unwrap();
    out.qps.iter().map(|q| q.gbps).collect()
}

/// One flow of 1 MiB WRITEs at 100 Gb/s on the iWARP fabric, over links losing `loss`.
fn one_flow(loss: f64, extra: &str) -> f64 {
    goodputs(&format!(
        r#"
duration_ms = 20
measure_from_ms = 2
fabric = "iwarp"
[topology]
kind = "star"
hosts = 2
link_gbps = 100
delay_ns = 1000
loss = {loss}
[endpoint]
dcqcn = {{ enabled = false }}
[iwarp]
{extra}
[[flow]]
from = 0
to = 1
message_bytes = "1M"
"#
    ))[0]
}

#[test]
fn one_flow_reaches_the_framing_closed_form() {
    // docs/iwarp.md: 4140 payload bytes in 4238 on the wire at an MTU of 4200.
    let closed = IwarpFraming::chelsio_t6(4200).goodput_bits_per_sec(100_000_000_000) / 1e9;
    assert!((closed - 97.688).abs() < 1e-3);
    let got = one_flow(0.0, "");
    assert!(
        (got - closed).abs() <= closed * 1e-3,
        "{got:.3} Gb/s against the closed form {closed:.3}"
    );
    // A 9000-byte MTU: 8940 payload bytes a segment.
    let jumbo = IwarpFraming::chelsio_t6(9000).goodput_bits_per_sec(100_000_000_000) / 1e9;
    let mut text = String::from("mtu = 9000");
    text.push_str("\n[switch]\nport_defaults.mtu = 9216");
    let got = one_flow(0.0, &text);
    assert!(
        (got - jumbo).abs() <= jumbo * 1e-3,
        "{got:.3} Gb/s against {jumbo:.3} at MTU 9000"
    );
}

/// 0.1 % random loss: SACK resends only what was lost and no timeout fires, but TCP
/// takes every loss for congestion and halves its window (RFC 5681: to half the flight,
/// here about one BDP of 15 segments), then regrows it: Reno and DCTCP by a segment per
/// RTT, about 5 % of the rate; CUBIC cuts to 0.7 and regrows faster. IRN, which does not
/// slow down on loss, keeps 99.7 %.
#[test]
fn sack_recovers_random_loss_without_timeouts_at_the_cost_of_window_cuts() {
    let closed = IwarpFraming::chelsio_t6(4200).goodput_bits_per_sec(100_000_000_000) / 1e9;
    let got = ["dctcp", "reno", "cubic"].map(|cc| one_flow(0.001, &format!("cc = \"{cc}\"")));
    for g in got {
        assert!(g >= 0.9 * closed, "{got:?} of {closed:.3} Gb/s");
    }
    let [dctcp, reno, cubic] = got;
    assert!(dctcp < 0.99 * closed && reno < 0.99 * closed, "{got:?}");
    assert!(cubic > reno, "{got:?}");
}

#[test]
fn ring_allreduce_over_a_lossy_fabric_is_bit_exact() {
    for (ranks, loss) in [(2usize, 0.0), (3, 0.01), (4, 0.02)] {
        let mut net = star(ranks, loss, 5);
        let hosts: Vec<usize> = (0..ranks).collect();
        allreduce::ring_allreduce(&mut net, &hosts, 50_000, 42, Nanos::ZERO);
        run_to_done(&mut net, Nanos::from_secs(2));
        for r in 0..ranks {
            let data = net.endpoint(r).region(DATA_RKEY).unwrap();
            let wrong = data
                .chunks_exact(4)
                .enumerate()
                .filter(|(i, b)| {
                    f32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_bits()
                        != expected_sum(42, ranks, *i).to_bits()
                })
                .count();
            assert_eq!(wrong, 0, "{ranks} ranks, loss {loss}, rank {r}");
        }
        if loss > 0.0 {
            let resent: u64 = (0..ranks)
                .map(|r| net.endpoint(r).counters().retransmitted_packets)
                .sum();
            assert!(resent > 0, "{ranks} ranks: TCP resent what was lost");
        }
    }
}

#[test]
fn an_incast_without_pfc_keeps_its_goodput_and_fairness() {
    let mut text = String::from(
        r#"
duration_ms = 20
measure_from_ms = 2
fabric = "iwarp"
[topology]
kind = "star"
hosts = 9
link_gbps = 100
delay_ns = 1000
[switch]
buffer.shared_bytes = 2097152
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

#[test]
fn a_connection_that_gets_no_answer_fails_after_retry_count_timeouts() {
    let mut net = star(2, 0.0, 1);
    net.engine
        .add_burst_loss(net.switches[0], 1, 0, u64::MAX / 2);
    let (q0, _) = net.connect_qp(0, 1);
    Flow::prepare_receiver(net.endpoint_mut(1), 4000);
    net.host_mut(0).app = Some(Flow::new(q0, Some(40_000), 4000, Nanos(0)).into());
    run_to_done(&mut net, Nanos::from_secs(2));
    let ep = net.endpoint(0);
    assert_eq!(ep.counters().qp_errors, 1);
    assert_eq!(ep.counters().timeouts, 7, "retry_count 7: 7 retries");
    let failure = ep.qp_failures()[0];
    assert_eq!(
        (failure.status, failure.retries, failure.peer_ip),
        (WcStatus::RetryExceeded, 7, topology::host_ip(1))
    );
    // RTO_min 1 ms, doubled at each expiry: 1 + 2 + ... + 128 ms, then the error state.
    let at = Nanos(failure.at_ns);
    assert!(
        at >= Nanos::from_millis(255) && at <= Nanos::from_millis(256),
        "{at:?}"
    );
    assert!(
        net.engine.now() <= at + Nanos::from_millis(1),
        "the run ends"
    );
}

#[test]
fn a_write_the_responder_cannot_place_is_terminated_and_fails() {
    let mut net = star(2, 0.0, 1);
    let (q0, _) = net.connect_qp(0, 1);
    // No receive region on host 1: its STag is unknown there.
    net.host_mut(0).app = Some(Flow::new(q0, Some(40_000), 4000, Nanos(0)).into());
    run_to_done(&mut net, Nanos::from_millis(10));
    assert!(net.endpoint(1).counters().access_errors >= 1);
    assert!(net.endpoint(1).region_len(FLOW_RKEY).is_none());
    let failure = net.endpoint(0).qp_failures()[0];
    assert_eq!(failure.status, WcStatus::RemoteAccess);
    assert_eq!(failure.retries, 0);
}

#[test]
fn a_bad_iwarp_table_is_refused_with_its_key() {
    let iwarp = "fabric = \"iwarp\"\n";
    for (fabric, table, key) in [
        (iwarp, "[iwarp]\ncc = \"vegas\"\n", "iwarp.cc"),
        (iwarp, "[iwarp]\nmtu = 9500\n", "iwarp.mtu"),
        (
            iwarp,
            "[iwarp]\nmtu = 9000\n[switch]\nport_defaults.mtu = 4200\n",
            "port MTU",
        ),
        (iwarp, "[iwarp]\nack_every = 0\n", "iwarp.ack_every"),
        ("", "[iwarp]\ncc = \"reno\"\n", "iwarp"),
    ] {
        let text = format!(
            "duration_ms = 1\n{fabric}[topology]\nkind = \"star\"\nhosts = 2\n\
             link_gbps = 100\n[[flow]]\nfrom = 0\nto = 1\n{table}"
        );
        let e = Scenario::from_toml("bad", &text, None).unwrap_err();
        assert!(e.to_string().contains(key), "{table}: {e}");
    }
}

#[test]
fn compare_sets_iwarp_beside_roce_irn_and_infiniband() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rocelab"))
        .args([
            "compare",
            "incast-8",
            "--fabrics",
            "roce,irn,iwarp,ib",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["fabrics"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["fabric"].as_str().unwrap()).collect();
    assert_eq!(names, ["roce", "irn", "iwarp", "ib"]);
    let iwarp = &rows[2];
    assert!(
        iwarp["summary"]["goodput_gbps"].as_f64().unwrap() > 20.0,
        "{iwarp}"
    );
}
