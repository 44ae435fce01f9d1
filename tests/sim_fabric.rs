//! Fabrics in the simulator: a leaf–spine spreads QPs over its spines by ECMP on the UDP
//! source port and keeps each QP on one path; without PFC the lossless class becomes
//! lossy, frames drop, go-back-N recovers them and the all-reduce is still exact.

use rocelab::config::SwitchConfig;
use rocelab::config::endpoint::EndpointConfig;
use rocelab::endpoint::app::flow::Flow;
use rocelab::endpoint::app::{App, Application};
use rocelab::endpoint::{Completion, Endpoint, SendWr};
use rocelab::sim::allreduce::{self, allreduce_rank};
use rocelab::sim::topology;
use rocelab::time::Nanos;
use std::sync::Arc;

const RKEY: u32 = 0xabc;
const VA: u64 = 0x10_0000;

/// Sends `messages` WRITEs of `size` bytes on each of its QPs, all at once.
struct ManyQps {
    qps: Vec<usize>,
    messages: u64,
    size: usize,
    completed: u64,
}

impl Application for ManyQps {
    fn start(&mut self, _now: Nanos, ep: &mut Endpoint) {
        let data: Arc<[u8]> = vec![0x42; self.size].into();
        for &qp in &self.qps {
            for m in 0..self.messages {
                ep.post_write(
                    qp,
                    SendWr {
                        id: m,
                        data: data.clone().into(),
                        remote_va: VA,
                        rkey: RKEY,
                        imm: None,
                    },
                );
            }
        }
    }

    fn on_completion(&mut self, _now: Nanos, _ep: &mut Endpoint, c: Completion) {
        if let Completion::Sent { .. } = c {
            self.completed += 1;
        }
    }

    fn done(&self) -> bool {
        self.completed == self.qps.len() as u64 * self.messages
    }
}

#[test]
fn leaf_spine_spreads_qps_over_spines_by_udp_source_port() {
    let ep = EndpointConfig {
        link_gbps: 100.0,
        mtu: 4096,
        ..EndpointConfig::default()
    };
    let sw = SwitchConfig::preset("default").unwrap();
    // 2 leaves, 2 spines, 2 hosts per leaf: host 0 under leaf 0, host 2 under leaf 1.
    let mut net = topology::leaf_spine(&sw, &ep, 2, 2, 2, Nanos(1000), 1);
    let (size, messages) = (64 << 10, 8);
    net.endpoint_mut(2).register(RKEY, VA, size);
    // Eight QPs between the same two hosts: only the UDP source port tells them apart.
    let qps: Vec<usize> = (0..8).map(|_| net.connect_qp(0, 2).0).collect();
    let sports: Vec<u16> = qps
        .iter()
        .map(|&q| net.endpoint(0).qp_status(q, Nanos::ZERO).udp_sport)
        .collect();
    let mut unique = sports.clone();
    unique.dedup();
    assert_eq!(unique.len(), 8, "one source port per QP: {sports:?}");
    net.host_mut(0).app = Some(App::Custom(Box::new(ManyQps {
        qps,
        messages,
        size,
        completed: 0,
    })));
    let end = allreduce::run_to_done(&mut net, Nanos::from_secs(1)).unwrap();
    assert!(net.engine.apps_done(), "not done by {end:?}");

    let rx = net.endpoint(2).counters();
    let packets_per_qp = messages * (size as u64 / 4096);
    assert_eq!(
        rx.data_packets_received,
        8 * packets_per_qp,
        "every byte arrived once"
    );
    assert_eq!(rx.out_of_order_received, 0, "each QP kept one path");
    assert_eq!(net.endpoint(0).counters().retransmitted_packets, 0);
    // Spines are switches 2 and 3 (leaves first); port 0 of a spine faces leaf 0.
    let from_leaf0: Vec<u64> = (2..4)
        .map(|s| net.switch(s).counters(0).classes[3].rx_frames)
        .collect();
    assert!(
        from_leaf0.iter().all(|&f| f > 0),
        "both spines carry data: {from_leaf0:?}"
    );
    // Whole QPs, not packets, are spread: each spine's share is a multiple of a QP's packets.
    for f in &from_leaf0 {
        assert_eq!(f % packets_per_qp, 0, "{from_leaf0:?}");
    }
    assert_eq!(from_leaf0.iter().sum::<u64>(), 8 * packets_per_qp);
}

#[test]
fn without_pfc_frames_drop_and_go_back_n_keeps_the_allreduce_exact() {
    let ep = EndpointConfig {
        link_gbps: 25.0,
        mtu: 1024,
        ..EndpointConfig::default()
    };
    let mut sw = SwitchConfig::preset("default").unwrap();
    sw.disable_pfc();
    sw.disable_ecn();
    sw.shared_bytes = 256 << 10;
    // Ranks 0-3; hosts 4 and 5 push into rank 0's port, which overflows.
    let mut net = topology::star(&sw, &ep, 6, Nanos(1000), 0.0, 1);
    for s in [4, 5] {
        Flow::prepare_receiver(net.endpoint_mut(0), 4096);
        let (q, _) = net.connect_qp(s, 0);
        net.host_mut(s).app = Some(Flow::new(q, Some(4 << 20), 4096, Nanos(0)).into());
    }
    let count = 256 << 10;
    allreduce::ring_allreduce(&mut net, &[0, 1, 2, 3], count, 9, Nanos::ZERO);
    let end = allreduce::run_to_done(&mut net, Nanos::from_secs(10)).unwrap();
    assert!(net.engine.apps_done(), "not done by {end:?}");

    let sw = net.switch(0);
    let drops: u64 = (0..6).map(|p| sw.counters(p).classes[3].dropped()).sum();
    let pfc: u64 = (0..6)
        .map(|p| sw.counters(p).classes[3].tx_pause_frames)
        .sum();
    assert!(drops > 0, "a lossy class under incast drops");
    assert_eq!(pfc, 0, "PFC is off");
    let retrans: u64 = (0..6)
        .map(|h| net.endpoint(h).counters().retransmitted_packets)
        .sum();
    assert!(retrans > 0, "go-back-N resends what was dropped");
    for h in 0..4 {
        let rank = allreduce_rank(&net, h).expect("a rank");
        assert_eq!(rank.wrong(net.endpoint(h)), 0, "rank {h}");
    }
}
