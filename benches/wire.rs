//! Hot-path benchmarks of the wire layer: the one parse into `FrameMeta`, beside
//! etherparse's `SlicedPacket::from_ethernet` on the same frames in the same run; CE marking;
//! the ICRC.
//!
//! Run: `cargo bench --bench wire`. Frames: RDMA WRITE Middle over IPv4, the smallest one
//! (4 bytes of payload: 62 bytes, 66 with the FCS, the "64-byte" class) and one carrying a
//! 1 KiB segment (IB MTU 1024: 1082 bytes). Benchmark ids carry the frame length.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rocelab::wire::bth::{BthRepr, Opcode};
use rocelab::wire::xth::ExtHeaders;
use rocelab::wire::{CeMark, Ecn, IpRepr, Ipv4Repr, MacAddr, RoceRepr, icrc, mark_ce, parse};
use std::hint::black_box;
use std::net::Ipv4Addr;

/// Frame lengths benchmarked.
const LENGTHS: [usize; 2] = [62, 1082];

/// An RDMA WRITE Middle frame of exactly `len` bytes (Ethernet 14 + IPv4 20 + UDP 8 +
/// BTH 12 + payload + ICRC 4; `len` - 58 must be a multiple of 4, so no pad).
fn roce_frame(len: usize) -> Vec<u8> {
    let payload = vec![0x5a; len - (14 + 20 + 8 + 12 + 4)];
    let repr = RoceRepr {
        eth_dst: MacAddr([2, 0, 0, 0, 0, 2]),
        eth_src: MacAddr([2, 0, 0, 0, 0, 1]),
        vlan: None,
        ip: IpRepr::V4(Ipv4Repr {
            src: Ipv4Addr::new(198, 18, 0, 1),
            dst: Ipv4Addr::new(198, 18, 0, 2),
            dscp: 26,
            ecn: Ecn::Ect0,
            ident: 1,
            dont_frag: true,
            ttl: 64,
        }),
        udp_src_port: 0xc000,
        bth: BthRepr {
            opcode: Opcode::RC_WRITE_MIDDLE,
            pkey: 0xffff,
            dest_qp: 0x12,
            psn: 1000,
            ..BthRepr::default()
        },
        ext: ExtHeaders::default(),
        payload: &payload,
    };
    let mut frame = vec![0u8; repr.frame_len()];
    let n = repr.emit(&mut frame).unwrap();
    assert_eq!(n, len);
    frame
}

/// Each result is handed to `black_box` by reference, so it is written out in full but not
/// copied again: a by-value copy of a freshly written struct measures the CPU's
/// store-forwarding stall, not the parser.
fn parse_vs_etherparse(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    for len in LENGTHS {
        let frame = roce_frame(len);
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(
            BenchmarkId::new("rocelab_frame_meta", len),
            &frame,
            |b, f| b.iter(|| black_box(&parse(black_box(f))).is_ok()),
        );
        group.bench_with_input(
            BenchmarkId::new("etherparse_sliced_packet", len),
            &frame,
            |b, f| {
                b.iter(|| black_box(&etherparse::SlicedPacket::from_ethernet(black_box(f))).is_ok())
            },
        );
    }
    group.finish();
}

fn ce_marking(c: &mut Criterion) {
    let mut group = c.benchmark_group("ce_mark");
    for len in LENGTHS {
        let mut frame = roce_frame(len);
        let meta = parse(&frame).unwrap();
        // Marking is one-way: put the first 32 bytes back after each mark, with two 16-byte
        // stores, so that every iteration marks an ECT(0) frame. (Restoring byte by byte
        // would make the next iteration's wider loads wait on store forwarding.)
        let saved: [u8; 32] = frame[..32].try_into().unwrap();
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new("mark_ce", len), |b| {
            b.iter(|| {
                let r = mark_ce(black_box(&mut frame), black_box(&meta));
                frame[..32].copy_from_slice(&saved);
                r
            })
        });
        group.bench_function(BenchmarkId::new("parse_then_mark_ce", len), |b| {
            b.iter(|| {
                let r = match parse(black_box(&frame)) {
                    Ok(meta) => mark_ce(&mut frame, &meta),
                    Err(_) => CeMark::NotIp,
                };
                frame[..32].copy_from_slice(&saved);
                r
            })
        });
    }
    group.finish();
}

fn icrc_compute(c: &mut Criterion) {
    let mut group = c.benchmark_group("icrc");
    for len in LENGTHS {
        let frame = roce_frame(len);
        let meta = parse(&frame).unwrap();
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::new("verify", len), &frame, |b, f| {
            b.iter(|| icrc::verify(black_box(f), &meta).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, parse_vs_etherparse, ce_marking, icrc_compute);
criterion_main!(benches);
