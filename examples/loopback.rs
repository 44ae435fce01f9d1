//! Two RoCEv2 endpoints and a switch on a virtual clock, with no socket and no thread: how
//! the cores are driven (the sans-IO contract in docs/design.md, the one the simulator,
//! the live drivers and the tests all follow).
//!
//! Host A writes 4 MiB into a memory region of host B through a switch with two 25 Gb/s
//! ports and 2 m cables. The loop below is a whole driver: it hands each frame to its
//! receiver when the frame's last bit arrives, runs each core when its timer falls due,
//! and asks each core what it sends. At the end it checks B's memory byte for byte and
//! prints the goodput and the switch's counters.
//!
//! ```text
//! cargo run --release --example loopback
//! ```

use rocelab::config::SwitchConfig;
use rocelab::config::endpoint::EndpointConfig;
use rocelab::endpoint::{Completion, Endpoint, Peer, SendWr};
use rocelab::link::Framing;
use rocelab::switch::{ClassCounters, Switch};
use rocelab::time::Nanos;
use rocelab::wire::MacAddr;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::Ipv4Addr;

const GBPS: f64 = 25.0;
/// 2 m of fibre at 5 ns/m.
const CABLE: Nanos = Nanos(10);
const RKEY: u32 = 7;
const MESSAGE: usize = 1 << 20;
const MESSAGES: u64 = 4;

/// Who takes a frame at the end of a cable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum To {
    /// A switch port.
    Switch(usize),
    /// A host, by index (host i sits on switch port i).
    Host(usize),
}

/// A frame on its cable: when its last bit arrives, the order it was sent in (frames that
/// land together keep it), its receiver and its bytes.
type OnCable = (Nanos, u64, To, Vec<u8>);

fn main() -> anyhow::Result<()> {
    let switch_cfg = SwitchConfig::from_toml(
        "[port_defaults]\nspeed_gbps = 25\n[[ports]]\nname = \"a\"\n[[ports]]\nname = \"b\"\n",
    )?;
    let mut switch = Switch::new(&switch_cfg);
    let (mut a, mut b, qp) = hosts(&mut switch);
    let mut hosts = [&mut a, &mut b];

    // Frames on their cables: (when the last bit arrives, order sent, receiver, bytes).
    let mut cables: BinaryHeap<Reverse<OnCable>> = BinaryHeap::new();
    let mut sent = 0u64;
    let mut put_on_cable = |at: Nanos, to: To, frame: &[u8], cables: &mut BinaryHeap<_>| {
        let last_bit = at + Framing::Ethernet.frame_time(frame, (GBPS * 1e9) as u64) + CABLE;
        sent += 1;
        cables.push(Reverse((last_bit, sent, to, frame.to_vec())));
    };

    let mut now = Nanos::ZERO;
    let mut done = 0;
    loop {
        // Everything each core releases at `now` goes on its cable.
        for (i, host) in hosts.iter_mut().enumerate() {
            while let Some(frame) = host.poll_transmit(now) {
                put_on_cable(now, To::Switch(i), frame, &mut cables);
            }
        }
        while let Some(t) = switch.poll_transmit(now) {
            put_on_cable(t.time, To::Host(t.port), t.frame, &mut cables);
        }
        while let Some(c) = hosts[0].poll_completion() {
            if let Completion::Sent { .. } = c {
                done += 1;
            }
        }
        if done == MESSAGES {
            break;
        }
        // The next event: a frame's arrival or a core's timer.
        let next = [
            cables.peek().map(|Reverse((t, ..))| *t),
            hosts[0].poll_timeout(),
            hosts[1].poll_timeout(),
            switch.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next else {
            anyhow::bail!("nothing left to do with {done} of {MESSAGES} writes acknowledged");
        };
        now = next.max(now);
        while let Some(Reverse((t, _, to, frame))) = cables.peek().cloned()
            && t <= now
        {
            cables.pop();
            match to {
                To::Switch(port) => {
                    switch.handle_frame(t, port, &frame);
                }
                To::Host(i) => hosts[i].handle_frame(t, &frame),
            }
        }
        for host in hosts.iter_mut() {
            host.handle_timeout(now);
        }
        switch.handle_timeout(now);
    }

    let region = b.region(RKEY).expect("B registered the region");
    let whole = (0..MESSAGES).all(|i| {
        let part = &region[i as usize * MESSAGE..(i as usize + 1) * MESSAGE];
        part.iter().all(|&byte| byte == i as u8 + 1)
    });
    anyhow::ensure!(whole, "B's memory differs from what A wrote");
    let bytes = MESSAGES * MESSAGE as u64;
    println!(
        "A wrote {bytes} B into B's memory over QP index {qp} in {:.1} µs of virtual time: {:.2} Gb/s of a {GBPS} Gb/s link; every byte checked",
        now.0 as f64 / 1e3,
        bytes as f64 * 8.0 / now.0 as f64
    );
    for port in 0..switch.port_count() {
        let c = switch.counters(port);
        let sum = |f: fn(&ClassCounters) -> u64| c.classes.iter().map(f).sum::<u64>();
        println!(
            "switch port {}: {} frames in, {} out, deepest queue {} B, {} PFC frames sent, {} dropped",
            c.name,
            sum(|k| k.rx_frames),
            sum(|k| k.tx_frames),
            c.classes
                .iter()
                .map(|k| k.queue_watermark_bytes)
                .max()
                .unwrap_or(0),
            sum(|k| k.tx_pause_frames),
            sum(|k| k.dropped_ingress_overflow + k.dropped_tail + k.dropped_wred),
        );
    }
    Ok(())
}

/// Host A and host B, one QP each way, B's region registered, A's writes posted; the
/// switch told where each MAC lives. Returns A, B and A's QP.
fn hosts(switch: &mut Switch) -> (Endpoint, Endpoint, usize) {
    let cfg = EndpointConfig {
        link_gbps: GBPS,
        mtu: 4096,
        ..EndpointConfig::default()
    };
    let mac = |i: u8| MacAddr([2, 0, 0, 0, 0, i]);
    let ip = |i: u8| Ipv4Addr::new(198, 18, 0, i);
    let mut a = Endpoint::new(&cfg, mac(1), ip(1));
    let mut b = Endpoint::new(&cfg, mac(2), ip(2));
    let peer = |i: u8, qpn: u32| Peer {
        mac: mac(i),
        ip: ip(i),
        qpn,
    };
    let qp = a.create_qp(0x100, peer(2, 0x101), 0);
    b.create_qp(0x101, peer(1, 0x100), 0);
    b.register(RKEY, 0, MESSAGES as usize * MESSAGE);
    for i in 0..MESSAGES {
        a.post_write(
            qp,
            SendWr {
                id: i,
                data: vec![i as u8 + 1; MESSAGE].into(),
                remote_va: i * MESSAGE as u64,
                rkey: RKEY,
                imm: None,
            },
        );
    }
    switch.add_route(mac(1), &[0]);
    switch.add_route(mac(2), &[1]);
    (a, b, qp)
}
