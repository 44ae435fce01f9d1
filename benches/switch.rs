//! One frame through the whole switch core: ingress parse, MAC learning and lookup,
//! classification, MMU accounting, RED, enqueue, scheduling, dequeue, transmit.
//!
//! Run: `cargo bench --bench switch`. Each iteration hands one 1082-byte RoCE frame (a
//! 1 KiB segment) to port 0, which the switch copies into one of its buffers, and takes one
//! frame out of port 1, with the virtual clock advanced by one frame time so the port is
//! free: a steady state with a standing queue of 16 frames (17 KB), so that RED sees a real
//! depth. "marking" configures RED with Kmin = Kmax = 8 KB (every frame marked CE, its
//! checksum patched), "red_draws" Kmin 0, Kmax 1 MB, Pmax 1 (a random draw per frame),
//! "no_ecn" no RED. "no_ecn_deep_queue" keeps 100 frames (108 KB) queued: the buffers no
//! longer fit the L1 cache, and the difference is the cost of touching them.
//!
//! "no_ecn_owned" is "no_ecn" as the live switch runs it: the frame comes in a buffer
//! handed over (the kernel received into it), and leaves the same way
//! (`handle_owned_frame`, `poll_transmit_owned`), so there is no copy; the buffer that
//! leaves is handed in again as the next frame, its bytes unchanged.
//!
//! For scale, in the same run: `etherparse_parse` is etherparse's `SlicedPacket::from_ethernet`
//! of the same frame (headers only, no switching), and `copy_frame` copies it into a reused
//! buffer (the one copy the switch core makes of every borrowed frame).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rocelab::config::SwitchConfig;
use rocelab::switch::Switch;
use rocelab::time::Nanos;
use rocelab::wire::bth::{BthRepr, Opcode};
use rocelab::wire::xth::ExtHeaders;
use rocelab::wire::{Ecn, IpRepr, Ipv4Repr, MacAddr, RoceRepr};
use std::hint::black_box;
use std::net::Ipv4Addr;

fn mac(i: u8) -> MacAddr {
    MacAddr([2, 0, 0, 0, 0, i])
}

fn frame(src: u8, dst: u8) -> Vec<u8> {
    let payload = vec![0x5a; 1024];
    let repr = RoceRepr {
        eth_dst: mac(dst),
        eth_src: mac(src),
        vlan: None,
        ip: IpRepr::V4(Ipv4Repr {
            src: Ipv4Addr::new(198, 18, 0, src),
            dst: Ipv4Addr::new(198, 18, 0, dst),
            dscp: 26,
            ecn: Ecn::Ect0,
            ident: 0,
            dont_frag: true,
            ttl: 64,
        }),
        udp_src_port: 0xc000,
        bth: BthRepr {
            opcode: Opcode::RC_WRITE_MIDDLE,
            pkey: 0xffff,
            dest_qp: 0x12,
            psn: 1,
            ..BthRepr::default()
        },
        ext: ExtHeaders::default(),
        payload: &payload,
    };
    let mut buf = vec![0u8; repr.frame_len()];
    repr.emit(&mut buf).unwrap();
    buf
}

fn config(ecn: &str) -> SwitchConfig {
    let text = format!(
        r#"
[port_defaults]
speed_gbps = 100
[classify]
dscp_to_tc = [[26, 3]]
[pfc]
lossless = [3]
[queue.3]
schedule = "dwrr"
{ecn}
[[ports]]
name = "p0"
[[ports]]
name = "p1"
"#
    );
    SwitchConfig::from_toml(&text).unwrap()
}

fn through_the_core(c: &mut Criterion) {
    let mut group = c.benchmark_group("switch");
    group.throughput(Throughput::Elements(1));
    for (name, ecn, standing) in [
        ("no_ecn", "", 16),
        (
            "marking",
            "ecn = { kmin_bytes = 8000, kmax_bytes = 8000, pmax = 1.0 }",
            16,
        ),
        (
            "red_draws",
            "ecn = { kmin_bytes = 0, kmax_bytes = 1000000, pmax = 1.0 }",
            16,
        ),
        ("no_ecn_deep_queue", "", 100),
    ] {
        let mut sw = Switch::new(&config(ecn));
        let data = frame(1, 2);
        let mut now = Nanos(1_000);
        // Learn host 2 behind port 1, host 1 behind port 0.
        sw.handle_frame(now, 1, &frame(2, 1));
        while sw.poll_transmit(now).is_some() {}
        // A standing queue on port 1.
        sw.set_tx_enabled(1, false);
        for _ in 0..standing {
            sw.handle_frame(now, 0, &data);
        }
        sw.set_tx_enabled(1, true);
        let frame_ns = Nanos((1082 + 24) * 8 / 100 + 1);
        group.bench_function(BenchmarkId::new("frame_in_and_out", name), |b| {
            b.iter(|| {
                now += frame_ns;
                sw.handle_frame(now, 0, black_box(&data));
                let tx = sw.poll_transmit(now).expect("the port is free");
                black_box(tx.frame.len())
            })
        });
        assert_eq!(sw.queue_frames(1, 3), standing, "{name}: steady state");
        if name == "no_ecn" {
            let mut buf = data.clone();
            group.bench_function(BenchmarkId::new("frame_in_and_out", "no_ecn_owned"), |b| {
                b.iter(|| {
                    now += frame_ns;
                    sw.handle_owned_frame(now, 0, std::mem::take(&mut buf));
                    let (_, out) = sw.poll_transmit_owned(now).expect("the port is free");
                    buf = black_box(out);
                })
            });
            assert_eq!(buf, data, "the frame leaves unchanged");
            assert_eq!(
                sw.queue_frames(1, 3),
                standing,
                "no_ecn_owned: steady state"
            );
        }
    }
    let data = frame(1, 2);
    group.bench_function(BenchmarkId::new("scale", "etherparse_parse"), |b| {
        b.iter(|| etherparse::SlicedPacket::from_ethernet(black_box(&data)).is_ok())
    });
    let mut buf = Vec::with_capacity(data.len());
    group.bench_function(BenchmarkId::new("scale", "copy_frame"), |b| {
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(black_box(&data));
            black_box(buf.len())
        })
    });
    group.finish();
}

criterion_group!(benches, through_the_core);
criterion_main!(benches);
