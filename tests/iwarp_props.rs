//! Property tests of the iWARP wire formats: arbitrary and mangled bytes never panic any
//! parser; every frame built (TCP with any options, an MPA start frame or an FPDU with or
//! without CRC and markers, any RDMAP message) parses back to what it was built from;
//! etherparse, an independent parser, agrees on the TCP header and checksum.

use proptest::prelude::*;
use rocelab::wire::ddp::{DdpRepr, Placement, RdmapOpcode, ReadRequest};
use rocelab::wire::iwarp::{FpduRepr, IwarpFrame, IwarpPacket, IwarpRepr, TcpPayload};
use rocelab::wire::mpa::{self, Fpdu, MpaStartRepr, StartKind};
use rocelab::wire::tcp::{SackBlocks, TcpFlags, TcpOptions, TcpRepr, Timestamps};
use rocelab::wire::{Ecn, Ipv4Repr, MacAddr};
use std::net::Ipv4Addr;

/// Runs every iWARP parser on `bytes`; the assertion is that nothing panics.
fn parse_everything(bytes: &[u8]) {
    if let Ok(Some(f)) = IwarpFrame::parse(bytes) {
        let _ = MpaStartRepr::parse(f.payload);
        let _ = IwarpPacket::parse_fpdu(f.payload, true);
        let _ = mpa::strip_markers(f.payload, u64::from(f.tcp.seq), true);
    }
    let _ = TcpOptions::parse(bytes);
    let _ = MpaStartRepr::parse(bytes);
    let _ = Fpdu::parse(bytes, true);
    let _ = IwarpPacket::parse(bytes);
    for offset in [0, 1, 511] {
        let _ = mpa::strip_markers(bytes, offset, false);
    }
}

fn options() -> impl Strategy<Value = TcpOptions> {
    (
        proptest::option::of(any::<u16>()),
        proptest::option::of(0u8..15),
        any::<bool>(),
        proptest::option::of(any::<(u32, u32)>()),
        proptest::collection::vec(any::<(u32, u32)>(), 0..4),
    )
        .prop_map(
            |(mss, window_scale, sack_permitted, ts, blocks)| TcpOptions {
                mss,
                window_scale,
                sack_permitted,
                timestamps: ts.map(|(value, echo)| Timestamps { value, echo }),
                sack: SackBlocks::new(&blocks).expect("at most 3"),
            },
        )
        .prop_filter("fits in 40 bytes", |o| o.len() <= 40)
}

fn ddp() -> impl Strategy<Value = (DdpRepr, Option<ReadRequest>)> {
    (
        0u8..8,
        any::<bool>(),
        any::<(u32, u64, u32, u32, u32)>(),
        any::<(u32, u64, u32, u32, u64)>(),
    )
        .prop_map(|(op, last, (stag, to, msn, mo, inval), rr)| {
            let opcode = RdmapOpcode(op);
            let placement = match opcode.queue() {
                None => Placement::Tagged { stag, to },
                Some(qn) => Placement::Untagged {
                    qn,
                    msn,
                    mo,
                    inval_stag: inval,
                },
            };
            let read_request = (opcode == RdmapOpcode::READ_REQUEST).then_some(ReadRequest {
                sink_stag: rr.0,
                sink_to: rr.1,
                size: rr.2,
                source_stag: rr.3,
                source_to: rr.4,
            });
            let ddp = DdpRepr {
                last,
                ddp_version: 1,
                rdmap_version: 1,
                opcode,
                placement,
            };
            (ddp, read_request)
        })
}

/// What a generated frame carries, owned.
#[derive(Debug, Clone)]
enum Body {
    Empty,
    Start(StartKind, bool, bool, bool, Vec<u8>),
    Fpdu(DdpRepr, Option<ReadRequest>, Vec<u8>, bool, Option<u64>),
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        Just(Body::Empty),
        (
            any::<bool>(),
            any::<(bool, bool, bool)>(),
            proptest::collection::vec(any::<u8>(), 0..=512)
        )
            .prop_map(|(req, (m, c, r), pd)| {
                let kind = if req {
                    StartKind::Request
                } else {
                    StartKind::Reply
                };
                Body::Start(kind, m, c, r, pd)
            }),
        (
            ddp(),
            proptest::collection::vec(any::<u8>(), 0..3000),
            any::<bool>(),
            proptest::option::of(0u64..100_000)
        )
            .prop_map(|((d, rr), p, crc, m)| Body::Fpdu(d, rr, p, crc, m)),
    ]
}

fn payload(body: &Body) -> TcpPayload<'_> {
    match body {
        Body::Empty => TcpPayload::Empty,
        Body::Start(kind, markers, crc, reject, pd) => TcpPayload::Start(MpaStartRepr {
            kind: *kind,
            markers: *markers,
            crc: *crc,
            reject: *reject,
            revision: 1,
            private_data: pd,
        }),
        Body::Fpdu(ddp, read_request, payload, crc, marker_offset) => TcpPayload::Fpdu(FpduRepr {
            ddp: *ddp,
            read_request: *read_request,
            payload,
            crc: *crc,
            marker_offset: *marker_offset,
        }),
    }
}

prop_compose! {
    fn header()(
        addrs in any::<([u8; 4], [u8; 4], [u8; 6], [u8; 6])>(),
        dscp in 0u8..64,
        ecn in 0u8..4,
        ports in any::<(u16, u16)>(),
        seq in any::<(u32, u32)>(),
        flags in any::<u8>(),
        window in any::<u16>(),
        options in options(),
    ) -> IwarpRepr<'static> {
        IwarpRepr {
            eth_dst: MacAddr(addrs.2),
            eth_src: MacAddr(addrs.3),
            vlan: None,
            ip: Ipv4Repr {
                src: Ipv4Addr::from(addrs.0),
                dst: Ipv4Addr::from(addrs.1),
                dscp,
                ecn: Ecn::from_bits(ecn),
                ident: 7,
                dont_frag: true,
                ttl: 64,
            },
            tcp: TcpRepr {
                src_port: ports.0,
                dst_port: ports.1,
                seq: seq.0,
                ack: seq.1,
                flags: TcpFlags::from_bits_retain(flags),
                window,
                urgent: 0,
                options,
            },
            payload: TcpPayload::Empty,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        parse_everything(&bytes);
    }

    #[test]
    fn built_frames_parse_back_and_etherparse_agrees(h in header(), body in body()) {
        let repr = IwarpRepr { payload: payload(&body), ..h };
        let mut buf = vec![0u8; repr.frame_len()];
        let n = repr.emit(&mut buf).unwrap();
        prop_assert_eq!(n, repr.frame_len());
        let frame = &buf[..n];
        let f = IwarpFrame::parse(frame).unwrap().unwrap();
        prop_assert!(f.tcp_checksum_ok);
        prop_assert_eq!(f.ip, repr.ip);
        prop_assert_eq!(f.tcp, repr.tcp);
        prop_assert_eq!(f.payload.len(), repr.payload.len());

        let theirs = etherparse::SlicedPacket::from_ethernet(frame).unwrap();
        let Some(etherparse::TransportSlice::Tcp(tcp)) = theirs.transport else {
            panic!("etherparse found no TCP");
        };
        prop_assert_eq!(tcp.sequence_number(), repr.tcp.seq);
        prop_assert_eq!(tcp.acknowledgment_number(), repr.tcp.ack);
        prop_assert_eq!(usize::from(tcp.data_offset()) * 4, repr.tcp.header_len());
        prop_assert_eq!(tcp.ece(), repr.tcp.flags.contains(TcpFlags::ECE));
        prop_assert_eq!(tcp.cwr(), repr.tcp.flags.contains(TcpFlags::CWR));
        let sum = tcp
            .to_header()
            .calc_checksum_ipv4_raw(repr.ip.src.octets(), repr.ip.dst.octets(), tcp.payload())
            .unwrap();
        prop_assert_eq!(sum, tcp.checksum());

        match repr.payload {
            TcpPayload::Empty => prop_assert!(f.payload.is_empty()),
            TcpPayload::Start(start) => {
                prop_assert_eq!(MpaStartRepr::parse(f.payload).unwrap(), (start, start.len()));
            }
            TcpPayload::Fpdu(fpdu) => {
                let bare = match fpdu.marker_offset {
                    Some(offset) => mpa::strip_markers(f.payload, offset, fpdu.crc).unwrap(),
                    None => f.payload.to_vec(),
                };
                let p = IwarpPacket::parse_fpdu(&bare, fpdu.crc && fpdu.marker_offset.is_none())
                    .unwrap();
                prop_assert_eq!(p.ddp, fpdu.ddp);
                prop_assert_eq!(p.read_request, fpdu.read_request);
                prop_assert_eq!(p.payload, fpdu.payload);
            }
        }
    }

    #[test]
    fn a_flipped_byte_in_an_fpdu_never_passes_its_crc(
        ddp in ddp(),
        data in proptest::collection::vec(any::<u8>(), 1..2000),
        flip in any::<(usize, u8)>(),
        marker_offset in proptest::option::of(0u64..4096),
    ) {
        let fpdu = FpduRepr {
            ddp: ddp.0,
            read_request: ddp.1,
            payload: &data,
            crc: true,
            marker_offset,
        };
        let mut buf = vec![0u8; fpdu.len()];
        let n = fpdu.emit(&mut buf).unwrap();
        let at = flip.0 % n;
        buf[at] ^= flip.1.max(1);
        let caught = match marker_offset {
            Some(offset) => mpa::strip_markers(&buf[..n], offset, true).is_err(),
            None => Fpdu::parse(&buf[..n], true).is_err(),
        };
        prop_assert!(caught, "flip at {} of {}", at, n);
    }

    #[test]
    fn every_prefix_of_a_built_frame_is_an_error_or_none(h in header(), body in body()) {
        let repr = IwarpRepr { payload: payload(&body), ..h };
        let mut buf = vec![0u8; repr.frame_len()];
        let n = repr.emit(&mut buf).unwrap();
        for cut in [0, 13, 14, 33, 34, 40, 53, 60, 80, n / 2, n - 1] {
            if cut < n {
                parse_everything(&buf[..cut]);
            }
        }
    }
}
