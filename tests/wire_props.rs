//! (d) Property tests of the wire formats: arbitrary and mangled bytes never panic; build →
//! parse round-trips; CE marking keeps the IPv4 checksum right (checked by full
//! recomputation) and the ICRC valid; etherparse, an independent parser, agrees with
//! rocelab on the L2-L4 fields of every frame rocelab builds.

mod common;

use proptest::prelude::*;
use rocelab::inspect::FrameRecord;
use rocelab::time::Nanos;
use rocelab::wire::bth::{BthRepr, Opcode};
use rocelab::wire::ipv4::internet_checksum;
use rocelab::wire::pfc::{MacControl, PfcRepr};
use rocelab::wire::xth::{Aeth, AtomicEth, Deth, ExtHeaders, Reth};
use rocelab::wire::{
    CeMark, Ecn, IpRepr, Ipv4Repr, Ipv6Repr, MacAddr, RocePacket, RoceRepr, VlanTag, icrc,
};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Exercises every parser on `bytes`; the assertion is that nothing panics.
fn parse_everything(bytes: &[u8]) {
    if let Ok(meta) = rocelab::wire::parse(bytes) {
        let _ = icrc::verify(bytes, &meta);
        let _ = RocePacket::parse(bytes, &meta);
        if meta.is_mac_control() {
            let _ = MacControl::parse_frame(bytes, &meta);
        }
        let mut copy = bytes.to_vec();
        let _ = rocelab::wire::mark_ce(&mut copy, &meta);
    }
    let _ = FrameRecord::decode(1, Some(Nanos(0)), bytes.len() as u32 + 7, bytes);
}

fn ecn() -> impl Strategy<Value = Ecn> {
    (0u8..4).prop_map(Ecn::from_bits)
}

fn ip() -> impl Strategy<Value = IpRepr> {
    prop_oneof![
        (
            any::<[u8; 4]>(),
            any::<[u8; 4]>(),
            0u8..64,
            ecn(),
            any::<u16>(),
            any::<bool>(),
            any::<u8>()
        )
            .prop_map(|(s, d, dscp, ecn, ident, df, ttl)| IpRepr::V4(Ipv4Repr {
                src: Ipv4Addr::from(s),
                dst: Ipv4Addr::from(d),
                dscp,
                ecn,
                ident,
                dont_frag: df,
                ttl,
            })),
        (
            any::<[u8; 16]>(),
            any::<[u8; 16]>(),
            0u8..64,
            ecn(),
            0u32..1 << 20,
            any::<u8>()
        )
            .prop_map(
                |(s, d, dscp, ecn, flow_label, hop_limit)| IpRepr::V6(Ipv6Repr {
                    src: Ipv6Addr::from(s),
                    dst: Ipv6Addr::from(d),
                    dscp,
                    ecn,
                    flow_label,
                    hop_limit,
                })
            ),
    ]
}

/// Every defined opcode, with extended headers of random content in the layout it needs.
fn opcode_and_headers() -> impl Strategy<Value = (Opcode, ExtHeaders)> {
    let defined: Vec<u8> = (0..=255u8).filter(|&o| Opcode(o).is_defined()).collect();
    (
        proptest::sample::select(defined),
        any::<(u64, u32, u32, u8, u32, u64, u64)>(),
    )
        .prop_map(|(op, (a, b, c, d, e, f, g))| {
            let opcode = Opcode(op);
            let l = opcode.layout();
            let q24 = e & 0x00ff_ffff;
            let ext = ExtHeaders {
                rdeth: l.rdeth.then_some(q24),
                deth: l.deth.then_some(Deth {
                    qkey: b,
                    src_qp: q24,
                }),
                xrceth: l.xrceth.then_some(q24),
                feth: l.feth.then_some(b),
                reth: l.reth.then_some(Reth {
                    va: a,
                    rkey: b,
                    dma_len: c,
                }),
                atomic_eth: l.atomic_eth.then_some(AtomicEth {
                    va: a,
                    rkey: b,
                    swap_add: f,
                    compare: g,
                }),
                aeth: l.aeth.then_some(Aeth {
                    syndrome: d,
                    msn: q24,
                }),
                atomic_ack_eth: l.atomic_ack_eth.then_some(f),
                immdt: l.immdt.then_some(c),
                ieth: l.ieth.then_some(b),
            };
            (opcode, ext)
        })
}

/// An IPv6 extension header as `with_ipv6_extensions` takes it: `kind` (routing 43 or
/// destination options 60, or hop-by-hop 0) of 8 to 32 bytes, or an atomic fragment header
/// (44: offset 0, no More Fragments, any identification).
fn ipv6_extension(kinds: Vec<u8>) -> impl Strategy<Value = (u8, Vec<u8>)> {
    prop_oneof![
        (prop::sample::select(kinds), 0usize..4, any::<u8>())
            .prop_map(|(kind, units, fill)| (kind, vec![fill; 7 + 8 * units])),
        any::<u32>().prop_map(|ident| {
            let mut body = vec![0u8; 7];
            body[3..].copy_from_slice(&ident.to_be_bytes());
            (44, body)
        }),
    ]
}

/// A chain of one to five extension headers; hop-by-hop only first, as RFC 8200 section
/// 4.1 requires.
fn ipv6_extension_chain() -> impl Strategy<Value = Vec<(u8, Vec<u8>)>> {
    (
        proptest::option::of(ipv6_extension(vec![0])),
        proptest::collection::vec(ipv6_extension(vec![43, 60]), 0..4),
    )
        .prop_map(|(first, rest)| first.into_iter().chain(rest).collect::<Vec<_>>())
        .prop_filter("at least one", |c| !c.is_empty())
}

prop_compose! {
    fn roce_frame()(
        ip in ip(),
        vlan in proptest::option::of((0u8..8, any::<bool>(), 0u16..4096)),
        macs in any::<([u8; 6], [u8; 6])>(),
        udp_src_port in any::<u16>(),
        (opcode, ext) in opcode_and_headers(),
        flags in any::<(bool, bool, bool, bool, bool)>(),
        pkey in any::<u16>(),
        dest_qp in 0u32..1 << 24,
        psn in 0u32..1 << 24,
        payload in proptest::collection::vec(any::<u8>(), 0..1500),
    ) -> Built {
        let (solicited, migreq, fecn, becn, ack_req) = flags;
        let repr = RoceRepr {
            eth_dst: MacAddr(macs.0),
            eth_src: MacAddr(macs.1),
            vlan: vlan.map(|(pcp, dei, vid)| VlanTag { pcp, dei, vid }),
            ip,
            udp_src_port,
            bth: BthRepr {
                opcode, solicited, migreq, pad_count: 0, tver: 0, pkey, fecn, becn,
                dest_qp, ack_req, psn,
            },
            ext,
            payload: &payload,
        };
        let mut frame = vec![0u8; repr.frame_len()];
        let n = repr.emit(&mut frame).unwrap();
        frame.truncate(n);
        let header = RoceRepr { payload: &[], ..repr };
        Built { header, payload, frame }
    }
}

/// A frame rocelab built, with what it was built from.
#[derive(Debug, Clone)]
struct Built {
    /// The representation, payload aside.
    header: RoceRepr<'static>,
    payload: Vec<u8>,
    frame: Vec<u8>,
}

impl Built {
    fn repr(&self) -> RoceRepr<'_> {
        RoceRepr {
            payload: &self.payload,
            ..self.header
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1600)) {
        parse_everything(&bytes);
    }

    /// Random bytes rarely get past the EtherType; mangling real frames reaches the deep
    /// parsers (lengths that lie, pad counts past the payload, truncation at every layer).
    #[test]
    fn mangled_frames_never_panic(
        built in roce_frame(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut frame = built.frame;
        for (at, byte) in edits {
            let i = at.index(frame.len());
            frame[i] = byte;
        }
        let len = cut.index(frame.len() + 1);
        parse_everything(&frame[..len]);
        parse_everything(&frame);
    }

    #[test]
    fn roce_build_parse_round_trips(built in roce_frame()) {
        let (repr, frame) = (built.repr(), &built.frame);
        let meta = rocelab::wire::parse(frame).unwrap();
        prop_assert!(meta.is_roce());
        prop_assert_eq!(meta.bth_opcode(), repr.bth.opcode);
        prop_assert_eq!(meta.dest_qp(), repr.bth.dest_qp);
        prop_assert_eq!(meta.psn(), repr.bth.psn);
        prop_assert_eq!(meta.ack_req(), repr.bth.ack_req);
        prop_assert_eq!(meta.becn(), repr.bth.becn);
        prop_assert_eq!(meta.ecn(), repr.ip.ecn());
        prop_assert_eq!(meta.vlan_pcp(), repr.vlan.map(|v| v.pcp));
        prop_assert_eq!(icrc::verify(frame, &meta), Some(true));
        let pkt = RocePacket::parse(frame, &meta).unwrap().unwrap();
        let pad = (4 - repr.payload.len() % 4) % 4;
        prop_assert_eq!(pkt.bth, BthRepr { pad_count: pad as u8, ..repr.bth });
        prop_assert_eq!(pkt.ext, repr.ext);
        prop_assert_eq!(pkt.payload, repr.payload);
    }

    /// Building into a `Vec` whatever it held before gives the very frame `emit` writes,
    /// with and without the ICRC.
    #[test]
    fn emit_to_vec_writes_what_emit_writes(
        built in roce_frame(),
        stale in proptest::collection::vec(any::<u8>(), 0..3000),
    ) {
        let repr = built.repr();
        let mut out = stale.clone();
        prop_assert_eq!(repr.emit_to_vec(&mut out, true).unwrap(), built.frame.len());
        prop_assert_eq!(&out, &built.frame);
        let mut bare = vec![0u8; repr.frame_len()];
        let n = repr.emit_without_icrc(&mut bare).unwrap();
        bare.truncate(n);
        let mut out = stale;
        prop_assert_eq!(repr.emit_to_vec(&mut out, false).unwrap(), n);
        prop_assert_eq!(out, bare);
        // Into an empty Vec, the frame's length is allocated once: a buffer grown piece
        // by piece doubled past its ICRC, and frames in flight held twice their bytes.
        let mut fresh = Vec::new();
        repr.emit_to_vec(&mut fresh, true).unwrap();
        prop_assert!(
            fresh.capacity() < fresh.len() + 16,
            "{} bytes held for a {}-byte frame", fresh.capacity(), fresh.len()
        );
    }

    /// RoCEv2 over IPv6 behind extension headers parses as the same RoCE frame, UDP where
    /// the chain ends (etherparse, which walks them too, agrees), its ICRC not judged.
    #[test]
    fn ipv6_extension_headers_lead_to_the_same_roce_frame(
        built in roce_frame().prop_filter("IPv6", |b| matches!(b.header.ip, IpRepr::V6(_))),
        chain in ipv6_extension_chain(),
    ) {
        let plain = rocelab::wire::parse(&built.frame).unwrap();
        let l3 = usize::from(plain.l3_offset());
        let frame = common::net::with_ipv6_extensions(&built.frame, l3, &chain);
        let added = frame.len() - built.frame.len();
        let meta = rocelab::wire::parse(&frame).unwrap();
        prop_assert!(meta.is_roce());
        prop_assert_eq!(meta.ip_proto(), 17);
        prop_assert_eq!(usize::from(meta.l4_offset()), usize::from(plain.l4_offset()) + added);
        prop_assert_eq!(meta.icrc_offset(), plain.icrc_offset() + added);
        prop_assert_eq!(
            (meta.bth_opcode(), meta.dest_qp(), meta.psn(), meta.flags()),
            (plain.bth_opcode(), plain.dest_qp(), plain.psn(), plain.flags())
        );
        prop_assert_eq!((meta.tos(), meta.vlan_pcp()), (plain.tos(), plain.vlan_pcp()));
        let repr = built.repr();
        let pkt = RocePacket::parse(&frame, &meta).unwrap().unwrap();
        prop_assert_eq!(pkt.ext, repr.ext);
        prop_assert_eq!(pkt.payload, repr.payload);
        prop_assert_eq!(icrc::verify(&frame, &meta), None);
        use etherparse::{SlicedPacket, TransportSlice};
        let sliced = SlicedPacket::from_ethernet(&frame).unwrap();
        let Some(TransportSlice::Udp(u)) = sliced.transport.as_ref() else {
            return Err(TestCaseError::fail(format!("etherparse saw {:?}", sliced.transport)));
        };
        prop_assert_eq!((u.source_port(), u.destination_port()), (repr.udp_src_port, 4791));
    }

    #[test]
    fn etherparse_agrees_on_what_rocelab_builds(built in roce_frame()) {
        let (repr, frame) = (built.repr(), &built.frame);
        use etherparse::{NetSlice, SlicedPacket, TransportSlice};
        let sliced = SlicedPacket::from_ethernet(frame).unwrap();
        let link = sliced.link.as_ref().unwrap().to_header().unwrap();
        let eth = link.ethernet2().unwrap();
        prop_assert_eq!(eth.destination, repr.eth_dst.0);
        prop_assert_eq!(eth.source, repr.eth_src.0);
        if let Some(tag) = repr.vlan {
            let v = sliced.vlan().unwrap();
            let etherparse::VlanSlice::SingleVlan(single) = v else {
                return Err(TestCaseError::fail("rocelab built one tag, etherparse saw two"));
            };
            prop_assert_eq!(single.priority_code_point().value(), tag.pcp);
            prop_assert_eq!(single.vlan_identifier().value(), tag.vid);
        }
        match (sliced.net.as_ref().unwrap(), repr.ip) {
            (NetSlice::Ipv4(s), IpRepr::V4(r)) => {
                let h = s.header();
                prop_assert_eq!(h.source_addr(), r.src);
                prop_assert_eq!(h.destination_addr(), r.dst);
                prop_assert_eq!(h.dcp().value(), r.dscp);
                prop_assert_eq!(h.ecn().value(), r.ecn as u8);
                prop_assert_eq!(h.ttl(), r.ttl);
                let full = h.to_header();
                prop_assert_eq!(full.header_checksum, full.calc_header_checksum());
            }
            (NetSlice::Ipv6(s), IpRepr::V6(r)) => {
                let h = s.header();
                prop_assert_eq!(h.source_addr(), r.src);
                prop_assert_eq!(h.destination_addr(), r.dst);
                prop_assert_eq!(h.traffic_class(), (r.dscp << 2) | r.ecn as u8);
                prop_assert_eq!(h.flow_label().value(), r.flow_label);
            }
            (net, ip) => prop_assert!(false, "etherparse saw {net:?} for {ip:?}"),
        }
        match sliced.transport.as_ref().unwrap() {
            TransportSlice::Udp(u) => {
                prop_assert_eq!(u.source_port(), repr.udp_src_port);
                prop_assert_eq!(u.destination_port(), 4791);
                // The UDP payload is BTH + extended headers + payload + pad + ICRC.
                let pad = (4 - repr.payload.len() % 4) % 4;
                prop_assert_eq!(
                    u.payload().len(),
                    12 + repr.ext.layout().len() + repr.payload.len() + pad + 4
                );
            }
            other => prop_assert!(false, "etherparse saw {other:?}"),
        }
    }

    #[test]
    fn ce_marking_keeps_ipv4_checksum_and_icrc(built in roce_frame()) {
        let (repr, frame) = (built.repr(), &built.frame);
        let meta = rocelab::wire::parse(frame).unwrap();
        let mut marked = frame.clone();
        let result = rocelab::wire::mark_ce(&mut marked, &meta);
        let expected = match repr.ip.ecn() {
            Ecn::NotEct => CeMark::NotEct,
            Ecn::Ce => CeMark::AlreadyCe,
            Ecn::Ect0 | Ecn::Ect1 => CeMark::Marked,
        };
        prop_assert_eq!(result, expected);
        let after = rocelab::wire::parse(&marked).unwrap();
        if result == CeMark::Marked {
            prop_assert_eq!(after.ecn(), Ecn::Ce);
        } else {
            prop_assert_eq!(&marked, frame);
        }
        prop_assert_eq!(after.dscp(), meta.dscp());
        // Only the ECN bits (and the IPv4 checksum) may change.
        let l3 = usize::from(meta.l3_offset());
        let changed: Vec<usize> = (0..frame.len()).filter(|&i| frame[i] != marked[i]).collect();
        for i in changed {
            let allowed = if meta.is_ipv4() {
                i == l3 + 1 || i == l3 + 10 || i == l3 + 11
            } else {
                i == l3 + 1
            };
            prop_assert!(allowed, "byte {} changed", i);
        }
        if meta.is_ipv4() {
            let header = &marked[l3..usize::from(meta.l4_offset())];
            prop_assert_eq!(internet_checksum(header), 0, "IPv4 checksum after marking");
        }
        prop_assert_eq!(icrc::verify(&marked, &after), Some(true));
    }

    /// RFC 1624 on arbitrary IPv4 headers (any content, options included), not only the
    /// ones rocelab builds: the incremental update equals a full recomputation.
    #[test]
    fn incremental_checksum_equals_full_recompute(
        mut header in proptest::collection::vec(any::<u8>(), 20..=60),
        tos in any::<u8>(),
    ) {
        let ihl = header.len() / 4;
        header.truncate(ihl * 4);
        header[0] = 0x40 | ihl as u8;
        let total = header.len() as u16;
        header[2..4].copy_from_slice(&total.to_be_bytes());
        header[10] = 0;
        header[11] = 0;
        let sum = internet_checksum(&header);
        header[10..12].copy_from_slice(&sum.to_be_bytes());
        let mut p = rocelab::wire::Ipv4Packet::new_checked(header.clone()).unwrap();
        p.set_tos(tos);
        let incremental = p.checksum();
        p.fill_checksum();
        prop_assert_eq!(incremental, p.checksum());
        prop_assert!(p.verify_checksum());
    }

    #[test]
    fn pfc_and_pause_round_trip(enable in any::<u16>(), quanta in any::<[u16; 8]>(), src in any::<[u8; 6]>()) {
        let mut buf = [0u8; 64];
        for mc in [MacControl::Pfc(PfcRepr { enable_vector: enable, quanta }), MacControl::Pause { quanta: quanta[0] }] {
            let n = mc.emit(&mut buf, MacAddr(src)).unwrap();
            prop_assert_eq!(n, 60);
            let meta = rocelab::wire::parse(&buf[..n]).unwrap();
            prop_assert!(meta.is_mac_control() && !meta.is_roce());
            prop_assert_eq!(MacControl::parse_frame(&buf[..n], &meta).unwrap(), mc);
        }
    }
}
