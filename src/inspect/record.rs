//! One frame, decoded for people: every field rocelab can read from it.

use crate::time::Nanos;
use crate::wire::bth::{self, Bth, BthRepr};
use crate::wire::ethernet::{self, EthernetRepr, ethertype};
use crate::wire::ipv4::PROTO_UDP;
use crate::wire::pfc::MacControl;
use crate::wire::xth::AckKind;
use crate::wire::{FrameMeta, Ipv4Packet, MetaFlags, ParseError, RocePacket, UdpDatagram, icrc};
use serde::Serialize;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The decoded fields of one frame; `None` where a field does not apply. Serialised as
/// the per-frame object of `rocelab inspect --json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FrameRecord {
    /// The frame's number in the capture, from 1, as tshark's `frame.number`: records of
    /// skipped non-Ethernet interfaces are counted.
    pub index: u64,
    /// Capture timestamp, nanoseconds since the Unix epoch; `None` for a frame the capture
    /// gives no time (a pcapng Simple Packet Block).
    pub ts_ns: Option<u64>,
    /// Frame length on the wire.
    pub len: u32,
    /// Bytes captured, when fewer than `len`.
    pub caplen: Option<u32>,
    /// Source MAC.
    pub eth_src: Option<String>,
    /// Destination MAC.
    pub eth_dst: Option<String>,
    /// 802.1Q PCP of the outer tag.
    pub vlan_pcp: Option<u8>,
    /// 802.1Q VLAN id of the outer tag.
    pub vlan_id: Option<u16>,
    /// 802.1Q DEI of the outer tag.
    pub vlan_dei: Option<bool>,
    /// EtherType after any tag.
    pub ethertype: Option<u16>,
    /// 4 or 6.
    pub ip_version: Option<u8>,
    /// IP source address.
    pub ip_src: Option<String>,
    /// IP destination address.
    pub ip_dst: Option<String>,
    /// DSCP, 0-63: the upper six bits of the IPv4 TOS or IPv6 traffic class.
    pub dscp: Option<u8>,
    /// ECN, 0-3.
    pub ecn: Option<u8>,
    /// IP protocol (IPv6: the next header after any hop-by-hop, routing, fragment or
    /// destination options headers).
    pub ip_proto: Option<u8>,
    /// IPv4 header checksum verifies.
    pub ip_checksum_ok: Option<bool>,
    /// UDP source port.
    pub udp_sport: Option<u16>,
    /// UDP destination port.
    pub udp_dport: Option<u16>,
    /// BTH opcode byte (`opcode_name` spells it out).
    pub bth_opcode: Option<u8>,
    /// BTH opcode name as Wireshark gives it (`Reliable Connection (RC) - RDMA WRITE
    /// First`).
    pub opcode_name: Option<&'static str>,
    /// BTH opcode, IBTA name as the Linux kernel spells it (`RC_RDMA_WRITE_FIRST`).
    pub opcode: Option<&'static str>,
    /// BTH destination QP.
    pub dest_qp: Option<u32>,
    /// BTH PSN.
    pub psn: Option<u32>,
    /// BTH AckReq.
    pub ack_req: Option<bool>,
    /// BTH BECN.
    pub becn: Option<bool>,
    /// BTH FECN.
    pub fecn: Option<bool>,
    /// BTH Solicited Event.
    pub solicited: Option<bool>,
    /// BTH PadCnt.
    pub pad_count: Option<u8>,
    /// BTH P_Key.
    pub pkey: Option<u16>,
    /// The stored ICRC matches the computed one.
    pub icrc_ok: Option<bool>,
    /// The stored ICRC value (as a number; stored least-significant byte first).
    pub icrc: Option<u32>,
    /// Payload bytes after the transport headers, pad excluded.
    pub payload_len: Option<usize>,
    /// RETH virtual address.
    pub reth_va: Option<u64>,
    /// RETH R_Key.
    pub reth_rkey: Option<u32>,
    /// RETH DMA length.
    pub reth_dma_len: Option<u32>,
    /// AETH syndrome byte (`aeth_kind` spells it out).
    pub aeth_syndrome: Option<u8>,
    /// AETH MSN.
    pub aeth_msn: Option<u32>,
    /// What the AETH syndrome says.
    pub aeth_kind: Option<&'static str>,
    /// DETH Q_Key.
    pub deth_qkey: Option<u32>,
    /// DETH source QP.
    pub deth_src_qp: Option<u32>,
    /// ImmDt of a "... with Immediate" packet.
    pub imm_data: Option<u32>,
    /// PFC class-enable vector.
    pub pfc_enable: Option<u16>,
    /// PFC pause times c0..c7, in quanta.
    pub pfc_quanta: Option<[u16; 8]>,
    /// 802.3x PAUSE time, in quanta.
    pub pause_quanta: Option<u16>,
    /// Another MAC Control opcode.
    pub mac_control_opcode: Option<u16>,
    /// Why the frame could not be decoded further, if it could not.
    pub error: Option<String>,
}

fn ack_kind_name(kind: AckKind) -> &'static str {
    match kind {
        AckKind::Ack => "ACK",
        AckKind::RnrNak => "RNR NAK",
        AckKind::NakPsnSequenceError => "NAK PSN sequence error",
        AckKind::NakInvalidRequest => "NAK invalid request",
        AckKind::NakRemoteAccessError => "NAK remote access error",
        AckKind::NakRemoteOperationalError => "NAK remote operational error",
        AckKind::NakInvalidRdRequest => "NAK invalid RD request",
        AckKind::Reserved => "reserved syndrome",
    }
}

/// Frames longer than this are not padded back to their original length when a capture
/// cut them (no Ethernet frame is; it guards against a corrupt original length).
const MAX_FRAME: usize = 1 << 18;

impl FrameRecord {
    /// Decodes `frame`, captured at `ts` (if the capture says) as `frame.len()` of its
    /// `orig_len` bytes. Never fails:
    /// what cannot be decoded is named in `error`. A frame the capture cut short (tcpdump
    /// -s) is decoded as far as its bytes go, its lengths taken from its headers; its ICRC
    /// was not captured and is not judged. Returns the record and, when the frame's headers
    /// parsed, its [`FrameMeta`].
    pub fn decode(
        index: u64,
        ts: Option<Nanos>,
        orig_len: u32,
        frame: &[u8],
    ) -> (FrameRecord, Option<FrameMeta>) {
        let captured = frame.len();
        let mut r = FrameRecord {
            index,
            ts_ns: ts.map(|t| t.0),
            len: orig_len,
            caplen: (captured as u64 != u64::from(orig_len)).then_some(captured as u32),
            ..FrameRecord::default()
        };
        if let Ok((eth, _)) = EthernetRepr::parse(frame) {
            r.eth_src = Some(eth.src.to_string());
            r.eth_dst = Some(eth.dst.to_string());
            r.ethertype = Some(eth.ethertype);
            if let Some(tag) = eth.vlan {
                r.vlan_pcp = Some(tag.pcp);
                r.vlan_id = Some(tag.vid);
                r.vlan_dei = Some(tag.dei);
            }
        }
        // Parse a cut frame as if the rest were there; every field taken below is checked
        // to lie within the captured bytes.
        let orig = orig_len as usize;
        let padded: Vec<u8>;
        let bytes = if captured < orig && orig <= MAX_FRAME {
            padded = [frame, &vec![0; orig - captured]].concat();
            &padded[..]
        } else {
            frame
        };
        let meta = match crate::wire::parse(bytes) {
            Ok(meta) => meta,
            Err(e) => {
                if let Some((ethertype, l3)) = ethernet::l3_offset(frame) {
                    r.fill_ip_header(ethertype, &frame[l3..]);
                }
                r.error = Some(describe(&e, captured, orig_len));
                return (r, None);
            }
        };
        // The EtherType of a frame cut inside its Ethernet header is the padding's.
        if usize::from(meta.l3_offset()) <= captured {
            r.ethertype = Some(meta.ethertype());
        }
        r.fill(bytes, captured, &meta);
        (r, Some(meta))
    }

    /// True when the capture kept fewer bytes than the frame had (its snap length).
    pub fn cut(&self) -> bool {
        self.caplen.is_some_and(|c| c < self.len)
    }

    /// True for a RoCEv2 frame (UDP to port 4791, decoded without error) whose BTH the
    /// capture cut off: its transport is unknown, and it is not counted as RoCE.
    pub fn bth_cut(&self) -> bool {
        self.cut()
            && self.udp_dport == Some(crate::wire::udp::ROCEV2_PORT)
            && self.bth_opcode.is_none()
            && self.error.is_none()
    }

    /// True for a RoCE frame whose ICRC was not judged: the capture cut it off, or IPv6
    /// extension headers precede UDP (see [`icrc::compute`]).
    pub fn icrc_unchecked(&self) -> bool {
        self.bth_opcode.is_some() && self.icrc_ok.is_none()
    }

    /// Fills every field of a parsed frame whose bytes were captured (`captured` bytes of
    /// `frame`).
    fn fill(&mut self, frame: &[u8], captured: usize, meta: &FrameMeta) {
        let have = |end: usize| end <= captured;
        let l3 = usize::from(meta.l3_offset());
        let l4 = usize::from(meta.l4_offset());
        if meta.is_ip() && have(l3 + if meta.is_ipv4() { 20 } else { 40 }) {
            self.fill_ip_header(meta.ethertype(), &frame[l3..]);
            // Behind IPv6 extension headers: the protocol they lead to.
            if meta.is_ipv6() && have(l4) {
                self.ip_proto = Some(meta.ip_proto());
            }
        }
        if meta.is_ipv4()
            && have(l4.max(l3 + 20))
            && let Err(e) = self.fill_ipv4_checked(&frame[l3..], have(l4 + 4))
        {
            self.error = Some(e.to_string());
        }
        if meta.flags().contains(MetaFlags::UDP)
            && have(l4 + 8)
            && let Ok(udp) = UdpDatagram::new_checked(&frame[l4..l4 + usize::from(meta.udp_len())])
        {
            self.udp_sport = Some(udp.src_port());
            self.udp_dport = Some(udp.dst_port());
        }
        if meta.is_roce() {
            self.fill_roce(frame, captured, meta);
        }
        if meta.is_mac_control() && have(l3 + 20) {
            match MacControl::parse_frame(frame, meta) {
                Ok(MacControl::Pause { quanta }) => self.pause_quanta = Some(quanta),
                Ok(MacControl::Pfc(pfc)) => {
                    self.pfc_enable = Some(pfc.enable_vector);
                    self.pfc_quanta = Some(pfc.quanta);
                }
                Ok(MacControl::Other { opcode }) => self.mac_control_opcode = Some(opcode),
                Err(e) => self.error = Some(e.to_string()),
            }
        }
    }

    /// The BTH (from the parse, so it is shown even when what follows is damaged), the
    /// ICRC, then the extended headers and payload.
    fn fill_roce(&mut self, frame: &[u8], captured: usize, meta: &FrameMeta) {
        let bth_at = meta.bth_offset();
        if bth_at + bth::HEADER_LEN > captured {
            return;
        }
        let Ok(view) = Bth::new_checked(&frame[bth_at..]) else {
            return;
        };
        let b = BthRepr::parse(&view);
        self.bth_opcode = Some(b.opcode.0);
        self.opcode_name = Some(b.opcode.wireshark_name());
        self.opcode = Some(b.opcode.ibta_name());
        self.dest_qp = Some(b.dest_qp);
        self.psn = Some(b.psn);
        self.ack_req = Some(b.ack_req);
        self.becn = Some(b.becn);
        self.fecn = Some(b.fecn);
        self.solicited = Some(b.solicited);
        self.pad_count = Some(b.pad_count);
        self.pkey = Some(b.pkey);
        if meta.icrc_offset() + icrc::ICRC_LEN <= captured {
            self.icrc = icrc::stored(frame, meta);
            self.icrc_ok = icrc::verify(frame, meta);
        }
        let layout = b.opcode.layout();
        let pkt = match RocePacket::parse(frame, meta) {
            Ok(Some(pkt)) => pkt,
            Ok(None) => return,
            Err(e) => {
                let headers: Vec<&str> = layout.names().collect();
                let detail = match e {
                    ParseError::Invalid {
                        field: crate::wire::Field::BthPadCount,
                        ..
                    } => format!(
                        "; {} bytes follow the headers",
                        meta.icrc_offset()
                            .saturating_sub(bth_at + bth::HEADER_LEN + layout.len())
                    ),
                    _ if headers.is_empty() => String::new(),
                    _ => format!("; {} carries {}", b.opcode.name(), headers.join(", ")),
                };
                self.error = Some(format!("{e}{detail}"));
                return;
            }
        };
        self.payload_len = Some(pkt.payload.len());
        if bth_at + bth::HEADER_LEN + layout.len() > captured {
            return;
        }
        if let Some(reth) = pkt.ext.reth {
            self.reth_va = Some(reth.va);
            self.reth_rkey = Some(reth.rkey);
            self.reth_dma_len = Some(reth.dma_len);
        }
        if let Some(aeth) = pkt.ext.aeth {
            self.aeth_syndrome = Some(aeth.syndrome);
            self.aeth_msn = Some(aeth.msn);
            self.aeth_kind = Some(ack_kind_name(aeth.kind()));
        }
        if let Some(deth) = pkt.ext.deth {
            self.deth_qkey = Some(deth.qkey);
            self.deth_src_qp = Some(deth.src_qp);
        }
        self.imm_data = pkt.ext.immdt;
    }

    /// IPv4 extras that need the whole, checked packet: the header checksum, and the UDP
    /// ports of a first fragment.
    fn fill_ipv4_checked(&mut self, packet: &[u8], ports_captured: bool) -> Result<(), ParseError> {
        let ip = Ipv4Packet::new_checked(packet)?;
        self.ip_checksum_ok = Some(ip.verify_checksum());
        // The first fragment of a UDP datagram still starts with the UDP header; show its
        // ports as tshark does (the datagram is not parsed further).
        if ports_captured
            && ip.is_fragment()
            && ip.frag_offset() == 0
            && ip.protocol() == PROTO_UDP
            && let [a, b, c, d, ..] = *ip.payload()
        {
            self.udp_sport = Some(u16::from_be_bytes([a, b]));
            self.udp_dport = Some(u16::from_be_bytes([c, d]));
        }
        Ok(())
    }

    /// Fills version, addresses, DSCP, ECN and protocol from the fixed IP header at the
    /// start of `h`, when it is there: also for frames cut short by the snap length.
    fn fill_ip_header(&mut self, ethertype: u16, h: &[u8]) {
        let (version, tc, proto) = match ethertype {
            ethertype::IPV4 if h.len() >= 20 && h[0] >> 4 == 4 => {
                let addr = |at: usize| Ipv4Addr::new(h[at], h[at + 1], h[at + 2], h[at + 3]);
                self.ip_src = Some(addr(12).to_string());
                self.ip_dst = Some(addr(16).to_string());
                (4, h[1], h[9])
            }
            ethertype::IPV6 if h.len() >= 40 && h[0] >> 4 == 6 => {
                let addr = |at: usize| {
                    let mut a = [0u8; 16];
                    a.copy_from_slice(&h[at..at + 16]);
                    Ipv6Addr::from(a)
                };
                self.ip_src = Some(addr(8).to_string());
                self.ip_dst = Some(addr(24).to_string());
                (6, (h[0] << 4) | (h[1] >> 4), h[6])
            }
            _ => return,
        };
        self.ip_version = Some(version);
        self.dscp = Some(tc >> 2);
        self.ecn = Some(tc & 3);
        self.ip_proto = Some(proto);
    }
}

fn describe(e: &ParseError, caplen: usize, orig_len: u32) -> String {
    if (caplen as u64) < u64::from(orig_len) && matches!(e, ParseError::Truncated { .. }) {
        format!("{e} (the capture kept {caplen} of {orig_len} bytes)")
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::fixtures::REAL_CNP;

    #[test]
    fn frame_cut_inside_udp_keeps_its_ip_fields() {
        // tcpdump -s 40: the CNP cut inside its UDP header.
        let (r, meta) = FrameRecord::decode(1, Some(Nanos(0)), 74, &REAL_CNP[..40]);
        assert!(meta.is_some());
        assert_eq!(r.ip_src.as_deref(), Some("10.0.17.1"));
        assert_eq!((r.dscp, r.ecn, r.ip_proto), (Some(48), Some(2), Some(17)));
        assert_eq!(r.caplen, Some(40));
        assert_eq!((r.udp_dport, r.bth_opcode, r.icrc_ok), (None, None, None));
        assert_eq!(r.error, None);
    }

    #[test]
    fn frame_cut_after_the_bth_keeps_its_roce_fields_but_no_icrc_verdict() {
        // tcpdump -s 54: everything up to the end of the BTH.
        let (r, _) = FrameRecord::decode(1, Some(Nanos(0)), 74, &REAL_CNP[..54]);
        assert_eq!(r.udp_dport, Some(4791));
        assert_eq!(
            (r.bth_opcode, r.dest_qp, r.becn),
            (Some(0x81), Some(0x118), Some(true))
        );
        assert_eq!((r.icrc_ok, r.icrc), (None, None));
        assert_eq!(r.payload_len, Some(16), "from the lengths");
        assert_eq!(r.error, None);
    }

    #[test]
    fn damaged_extended_headers_keep_the_bth_and_the_icrc_verdict() {
        let mut f = REAL_CNP;
        f[42] = 0x13; // CmpSwap: needs a 28-byte AtomicETH, only 16 bytes follow
        let meta = crate::wire::parse(&f).unwrap();
        icrc::fill(&mut f, &meta);
        let (r, _) = FrameRecord::decode(1, Some(Nanos(0)), 74, &f);
        assert_eq!(
            (r.bth_opcode, r.dest_qp, r.icrc_ok),
            (Some(0x13), Some(0x118), Some(true))
        );
        let error = r.error.unwrap();
        assert!(error.contains("RC CmpSwap carries AtomicETH"), "{error}");
    }

    #[test]
    fn whole_cnp_decodes() {
        let (r, meta) = FrameRecord::decode(1, Some(Nanos(5)), 74, &REAL_CNP);
        assert!(meta.is_some_and(|m| m.is_roce()));
        assert_eq!(r.opcode_name, Some("CNP"));
        assert_eq!((r.icrc_ok, r.ip_checksum_ok), (Some(true), Some(true)));
        assert_eq!(
            (r.dest_qp, r.becn, r.payload_len),
            (Some(0x118), Some(true), Some(16))
        );
        assert_eq!(r.error, None);
    }
}
