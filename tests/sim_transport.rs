//! The endpoint's RC transport in the simulator: every byte delivered in order under
//! random and burst loss (go-back-N), across the PSN wrap; ring all-reduce bit-exact.

use rocelab::config::SwitchConfig;
use rocelab::config::endpoint::EndpointConfig;
use rocelab::endpoint::app::allreduce::{DATA_RKEY, expected_sum};
use rocelab::endpoint::app::flow::{FLOW_RKEY, Flow};
use rocelab::sim::allreduce;
use rocelab::sim::topology::{self, Network};
use rocelab::time::Nanos;

fn ep_cfg() -> EndpointConfig {
    EndpointConfig {
        link_gbps: 25.0,
        ..EndpointConfig::default()
    }
}

fn run_to_done(net: &mut Network, limit: Nanos) {
    allreduce::run_to_done(net, limit).unwrap();
    assert!(net.engine.apps_done(), "not done by {limit:?}");
}

/// A transfer of `bytes` from host 0 to host 1 in messages of 4000 bytes.
fn transfer(net: &mut Network, bytes: u64) {
    let (q0, _) = net.connect_qp(0, 1);
    Flow::prepare_receiver(net.endpoint_mut(1), 4000);
    net.host_mut(0).app = Some(Flow::new(q0, Some(bytes), 4000, Nanos(0)).into());
}

#[test]
fn lossless_transfer_delivers_everything() {
    let cfg = SwitchConfig::preset("default").unwrap();
    let mut net = topology::star(&cfg, &ep_cfg(), 2, Nanos(1000), 0.0, 1);
    transfer(&mut net, 2_000_000);
    run_to_done(&mut net, Nanos::from_millis(50));
    let rx = net.endpoint(1).counters();
    assert_eq!(rx.data_packets_received, 2_000_000u64.div_ceil(4000) * 4);
    let tx = net.endpoint(0).counters();
    assert_eq!((tx.retransmitted_packets, tx.timeouts), (0, 0));
}

#[test]
fn go_back_n_delivers_every_byte_under_random_loss() {
    let cfg = SwitchConfig::preset("default").unwrap();
    let mut net = topology::star(&cfg, &ep_cfg(), 2, Nanos(1000), 0.01, 7);
    transfer(&mut net, 2_000_000);
    run_to_done(&mut net, Nanos::from_millis(500));
    let tx = net.endpoint(0).counters();
    let rx = net.endpoint(1).counters();
    let packets = 2_000_000u64.div_ceil(4000) * 4;
    assert_eq!(
        rx.data_packets_received, packets,
        "every packet accepted once, in order"
    );
    assert!(
        tx.retransmitted_packets > 0 && rx.naks_sent > 0,
        "{tx:?} {rx:?}"
    );
    assert!(net.engine.stats().frames_lost > 0);
}

#[test]
fn go_back_n_recovers_a_burst_loss() {
    let cfg = SwitchConfig::preset("default").unwrap();
    let mut net = topology::star(&cfg, &ep_cfg(), 2, Nanos(1000), 0.0, 3);
    // 50 frames in a row lost on the switch's port to host 1: one NAK, one go-back.
    net.engine.add_burst_loss(net.switches[0], 1, 100, 50);
    transfer(&mut net, 400_000);
    run_to_done(&mut net, Nanos::from_millis(100));
    assert_eq!(
        net.endpoint(1).counters().data_packets_received,
        400_000u64.div_ceil(4000) * 4
    );
    assert_eq!(net.endpoint(1).counters().naks_sent, 1);
    assert_eq!(net.endpoint(0).counters().timeouts, 0);
}

#[test]
fn a_lost_tail_is_recovered_by_the_retransmission_timeout() {
    let cfg = SwitchConfig::preset("default").unwrap();
    let mut net = topology::star(&cfg, &ep_cfg(), 2, Nanos(1000), 0.0, 3);
    // The last 3 of 20 packets lost: nothing follows them to reveal the hole, so only the
    // timeout (500 µs) can.
    net.engine.add_burst_loss(net.switches[0], 1, 17, 3);
    transfer(&mut net, 20_000);
    run_to_done(&mut net, Nanos::from_millis(100));
    assert_eq!(net.endpoint(1).counters().data_packets_received, 20);
    assert_eq!(net.endpoint(0).counters().timeouts, 1);
    assert_eq!(net.endpoint(1).counters().naks_sent, 0);
}

#[test]
fn transfer_across_the_psn_wrap() {
    let cfg = SwitchConfig::preset("default").unwrap();
    let mut net = topology::star(&cfg, &ep_cfg(), 2, Nanos(1000), 0.0, 1);
    let q0 = net.endpoint_mut(0).create_qp(
        0x77,
        rocelab::endpoint::Peer {
            mac: topology::host_mac(1),
            ip: topology::host_ip(1),
            qpn: 0x88,
        },
        0x00ff_ff00,
    );
    net.endpoint_mut(1).create_qp(
        0x88,
        rocelab::endpoint::Peer {
            mac: topology::host_mac(0),
            ip: topology::host_ip(0),
            qpn: 0x77,
        },
        0x00ff_ff00,
    );
    Flow::prepare_receiver(net.endpoint_mut(1), 4000);
    net.host_mut(0).app = Some(Flow::new(q0, Some(1_000_000), 4000, Nanos(0)).into());
    run_to_done(&mut net, Nanos::from_millis(50));
    // 1000 packets from PSN 0xFFFF00: the wrap comes after 256.
    assert_eq!(net.endpoint(1).counters().data_packets_received, 1000);
    assert!(net.endpoint(1).region_len(FLOW_RKEY).is_some());
}

/// Ring all-reduce on N ranks: every rank ends with the closed-form sum, bit for bit.
#[test]
fn allreduce_is_bit_exact_for_2_3_4_and_8_ranks() {
    let cfg = SwitchConfig::preset("default").unwrap();
    for ranks in [2usize, 3, 4, 8] {
        for count in [1usize, 1000, 50_000] {
            let mut net = topology::star(&cfg, &ep_cfg(), ranks, Nanos(1000), 0.0, 1);
            let hosts: Vec<usize> = (0..ranks).collect();
            allreduce::ring_allreduce(&mut net, &hosts, count, 42, Nanos::ZERO);
            run_to_done(&mut net, Nanos::from_secs(1));
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
                assert_eq!(wrong, 0, "{ranks} ranks, {count} elements, rank {r}");
            }
        }
    }
}

/// A sweep of sizes on the same QPs, ranks starting at different times (as separate
/// processes do live): a rank gets data for sizes it has not started, and every size
/// still ends bit-exact on every rank.
#[test]
fn allreduce_sweep_with_ranks_starting_apart_is_exact() {
    use rocelab::endpoint::app::Application;
    use rocelab::endpoint::app::size_sweep::SizeSweep;
    let cfg = SwitchConfig::preset("default").unwrap();
    let mut net = topology::star(&cfg, &ep_cfg(), 3, Nanos(1000), 0.0, 1);
    let sizes = [4096u64, 16384, 65536, 262_144];
    let qps: Vec<usize> = (0..3).map(|r| net.connect_qp(r, (r + 1) % 3).0).collect();
    for (r, &qp) in qps.iter().enumerate() {
        let sweep = SizeSweep::new(net.endpoint_mut(r), r, 3, &sizes, 7, qp)
            .starting_at(Nanos::from_micros(40 * r as u64));
        net.host_mut(r).app = Some(sweep.into());
    }
    run_to_done(&mut net, Nanos::from_secs(1));
    for r in 0..3 {
        let sweep = net
            .host(r)
            .app
            .as_ref()
            .and_then(|a| a.size_sweep())
            .unwrap();
        assert!(sweep.done());
        for (size, run) in sweep.runs() {
            assert_eq!(run.wrong(net.endpoint(r)), 0, "rank {r}, {size} B");
            let (start, end) = run.elapsed().expect("ran");
            assert!(end > start);
        }
    }
}

/// One flow at line rate delivers the closed-form goodput: payload over payload plus
/// every packet's headers and wire overhead (Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4,
/// FCS 4, preamble 8, gap 12) and one RETH per message. The pacer once restarted each gap
/// from the driver's rounded-up nanosecond and lost the fraction on every packet: -0.58 %
/// at 100 G, -3.8 % at 400 G, -7.8 % at 800 G.
#[test]
fn a_single_flow_reaches_the_closed_form_goodput_at_every_rate() {
    use rocelab::sim::scenario::Scenario;
    for gbps in [100u64, 400, 800] {
        let text = format!(
            r#"
duration_ms = 2
measure_from_ms = 0.5
[topology]
kind = "star"
hosts = 2
link_gbps = {gbps}
[endpoint]
mtu = 1024
dcqcn = {{ enabled = false }}
[[flow]]
from = 0
to = 1
message_bytes = "1M"
"#
        );
        let s = Scenario::from_toml("one", &text, None).unwrap();
        let out = rocelab::sim::run::run(&s).unwrap();
        let (m, mtu) = (1u64 << 20, 1024u64);
        let wire = m + (m / mtu) * (14 + 20 + 8 + 12 + 4 + 4 + 8 + 12) + 16;
        let closed = gbps as f64 * m as f64 / wire as f64;
        let got = out.qps[0].gbps;
        assert!(
            (got - closed).abs() <= closed * 2e-4,
            "{gbps} G: {got:.3} Gb/s, closed form {closed:.3}"
        );
    }
}
