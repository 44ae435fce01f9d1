//! What an endpoint takes as its own: RoCE to its MAC and its IPv4 address (its one
//! GID), with a good ICRC. RoCE to another address, or over IPv6, is not for it and is
//! not an ICRC error either (both counted as ICRC errors before).

mod common;

use rocelab::config::endpoint::EndpointConfig;
use rocelab::endpoint::{Endpoint, SendWr};
use rocelab::time::Nanos;
use rocelab::wire::{self, Ecn, IpRepr, Ipv6Repr, MacAddr, RocePacket, RoceRepr};

const RKEY: u32 = 7;

/// Endpoint A with a QP to B and one 4 KB WRITE posted; B with the region. Returns A's
/// first data frame, and B.
fn first_frame_and_receiver() -> (Vec<u8>, Endpoint) {
    let cfg = EndpointConfig {
        link_gbps: 10.0,
        mtu: 1024,
        ..EndpointConfig::default()
    };
    let (mut a, mut b, qa) = common::peers::connected(&cfg);
    b.register(RKEY, 0, 4096);
    a.post_write(
        qa,
        SendWr {
            id: 1,
            data: vec![0x5a; 4096].into(),
            remote_va: 0,
            rkey: RKEY,
            imm: None,
        },
    );
    let frame = a.poll_transmit(Nanos::ZERO).expect("a data frame").to_vec();
    (frame, b)
}

/// What `b` does with `frame`: the bytes of the region it wrote, and its ICRC errors.
fn written_and_errors(b: &mut Endpoint, frame: &[u8]) -> (usize, u64) {
    b.handle_frame(Nanos(1_000), frame);
    let written = b
        .region(RKEY)
        .unwrap()
        .iter()
        .filter(|&&x| x == 0x5a)
        .count();
    (written, b.counters().icrc_errors)
}

#[test]
fn roce_to_its_address_with_a_good_icrc_is_taken() {
    let (frame, mut b) = first_frame_and_receiver();
    assert_eq!(written_and_errors(&mut b, &frame), (1024, 0));
    // A bad ICRC is still an ICRC error.
    let (mut bad, mut b) = first_frame_and_receiver();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert_eq!(written_and_errors(&mut b, &bad), (0, 1));
}

#[test]
fn roce_to_another_ipv4_address_is_not_its_own() {
    let (mut frame, mut b) = first_frame_and_receiver();
    let meta = wire::parse(&frame).unwrap();
    let dst = usize::from(meta.l3_offset()) + 16;
    frame[dst + 3] = 99; // 198.18.0.99
    let meta = wire::parse(&frame).unwrap();
    wire::icrc::fill(&mut frame, &meta);
    assert_eq!(written_and_errors(&mut b, &frame), (0, 0));
}

#[test]
fn roce_over_ipv6_is_not_its_own() {
    let (frame, mut b) = first_frame_and_receiver();
    let meta = wire::parse(&frame).unwrap();
    let pkt = RocePacket::parse(&frame, &meta).unwrap().unwrap();
    let v6 = RoceRepr {
        eth_dst: MacAddr([2, 0, 0, 0, 0, 2]),
        eth_src: MacAddr([2, 0, 0, 0, 0, 1]),
        vlan: None,
        ip: IpRepr::V6(Ipv6Repr {
            src: "::ffff:198.18.0.1".parse().unwrap(),
            dst: "::ffff:198.18.0.2".parse().unwrap(),
            dscp: meta.dscp(),
            ecn: Ecn::Ect0,
            flow_label: 0,
            hop_limit: 64,
        }),
        udp_src_port: 0xc000,
        bth: pkt.bth,
        ext: pkt.ext,
        payload: pkt.payload,
    };
    let mut out = vec![0u8; v6.frame_len()];
    let n = v6.emit(&mut out).unwrap();
    out.truncate(n);
    let meta = wire::parse(&out).unwrap();
    assert!(meta.is_roce() && meta.is_ipv6());
    assert_eq!(wire::icrc::verify(&out, &meta), Some(true));
    assert_eq!(written_and_errors(&mut b, &out), (0, 0));
}

/// A region that keeps nothing takes a WRITE into its bounds as any region does (counted,
/// acknowledged) and refuses one past them, holding no bytes either way.
#[test]
fn a_discarding_region_checks_writes_and_keeps_no_bytes() {
    let (frame, mut b) = first_frame_and_receiver();
    b.register_discarding(RKEY, 0, 4096);
    b.handle_frame(Nanos(1_000), &frame);
    assert_eq!(b.counters().data_packets_received, 1);
    assert_eq!(b.counters().access_errors, 0);
    assert_eq!((b.region(RKEY), b.region_len(RKEY)), (None, Some(4096)));
    // The same WRITE into a region too short for it is an access error.
    let (frame, mut b) = first_frame_and_receiver();
    b.register_discarding(RKEY, 0, 1000);
    b.handle_frame(Nanos(1_000), &frame);
    assert_eq!(b.counters().access_errors, 1);
}
