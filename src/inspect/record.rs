//! One frame, decoded for people: every field rocelab can read from it.

use crate::time::Nanos;
use crate::wire::ethernet::{EthernetRepr, ethertype};
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
    /// 1-based frame number in the capture.
    pub index: u64,
    /// Capture timestamp, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Frame length on the wire.
    pub len: u32,
    /// Bytes captured, when fewer than `len`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caplen: Option<u32>,
    /// Source MAC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eth_src: Option<String>,
    /// Destination MAC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eth_dst: Option<String>,
    /// 802.1Q PCP of the outer tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vlan_pcp: Option<u8>,
    /// 802.1Q VLAN id of the outer tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vlan_id: Option<u16>,
    /// 802.1Q DEI of the outer tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vlan_dei: Option<bool>,
    /// EtherType after any tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ethertype: Option<u16>,
    /// 4 or 6.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_version: Option<u8>,
    /// IP source address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_src: Option<String>,
    /// IP destination address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_dst: Option<String>,
    /// DSCP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    /// ECN, 0-3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<u8>,
    /// IP protocol (IPv6: next header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_proto: Option<u8>,
    /// IPv4 header checksum verifies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_checksum_ok: Option<bool>,
    /// UDP source port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_sport: Option<u16>,
    /// UDP destination port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_dport: Option<u16>,
    /// BTH opcode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bth_opcode: Option<u8>,
    /// BTH opcode name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opcode_name: Option<&'static str>,
    /// BTH destination QP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dest_qp: Option<u32>,
    /// BTH PSN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psn: Option<u32>,
    /// BTH AckReq.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_req: Option<bool>,
    /// BTH BECN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub becn: Option<bool>,
    /// BTH FECN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fecn: Option<bool>,
    /// BTH Solicited Event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solicited: Option<bool>,
    /// BTH PadCnt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pad_count: Option<u8>,
    /// BTH P_Key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pkey: Option<u16>,
    /// The stored ICRC matches the computed one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icrc_ok: Option<bool>,
    /// The stored ICRC value (as a number; stored least-significant byte first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icrc: Option<u32>,
    /// Payload bytes after the transport headers, pad excluded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload_len: Option<usize>,
    /// RETH virtual address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reth_va: Option<u64>,
    /// RETH R_Key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reth_rkey: Option<u32>,
    /// RETH DMA length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reth_dma_len: Option<u32>,
    /// AETH syndrome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aeth_syndrome: Option<u8>,
    /// AETH MSN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aeth_msn: Option<u32>,
    /// What the AETH syndrome says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aeth_kind: Option<&'static str>,
    /// DETH Q_Key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deth_qkey: Option<u32>,
    /// DETH source QP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deth_src_qp: Option<u32>,
    /// Immediate data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imm_data: Option<u32>,
    /// PFC class-enable vector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_enable: Option<u16>,
    /// PFC pause times c0..c7, in quanta.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc_quanta: Option<[u16; 8]>,
    /// 802.3x PAUSE time, in quanta.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_quanta: Option<u16>,
    /// Another MAC Control opcode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_control_opcode: Option<u16>,
    /// Why the frame could not be decoded further, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
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

impl FrameRecord {
    /// Decodes `frame`. Never fails: what cannot be decoded is named in `error`.
    /// Returns the record and, when the frame parsed, its [`FrameMeta`].
    pub fn decode(
        index: u64,
        ts: Nanos,
        orig_len: u32,
        frame: &[u8],
    ) -> (FrameRecord, Option<FrameMeta>) {
        let mut r = FrameRecord {
            index,
            ts_ns: ts.0,
            len: orig_len,
            caplen: (frame.len() as u64 != u64::from(orig_len)).then_some(frame.len() as u32),
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
        let meta = match crate::wire::parse(frame) {
            Ok(meta) => meta,
            Err(e) => {
                if let Ok((eth, l3)) = EthernetRepr::parse(frame) {
                    r.fill_ip_header(eth.ethertype, &frame[l3..]);
                }
                r.error = Some(describe(&e, frame.len(), orig_len));
                return (r, None);
            }
        };
        r.ethertype = Some(meta.ethertype());
        if let Err(e) = r.fill(frame, &meta) {
            r.error = Some(describe(&e, frame.len(), orig_len));
        }
        (r, Some(meta))
    }

    fn fill(&mut self, frame: &[u8], meta: &FrameMeta) -> Result<(), ParseError> {
        let l3 = usize::from(meta.l3_offset());
        self.fill_ip_header(meta.ethertype(), &frame[l3..]);
        if meta.is_ipv4() {
            self.fill_ipv4_checked(&frame[l3..])?;
        }
        if meta.flags().contains(MetaFlags::UDP) {
            let l4 = usize::from(meta.l4_offset());
            let udp = UdpDatagram::new_checked(&frame[l4..l4 + usize::from(meta.udp_len())])?;
            self.udp_sport = Some(udp.src_port());
            self.udp_dport = Some(udp.dst_port());
        }
        if let Some(pkt) = RocePacket::parse(frame, meta)? {
            let b = pkt.bth;
            self.bth_opcode = Some(b.opcode.0);
            self.opcode_name = Some(b.opcode.name());
            self.dest_qp = Some(b.dest_qp);
            self.psn = Some(b.psn);
            self.ack_req = Some(b.ack_req);
            self.becn = Some(b.becn);
            self.fecn = Some(b.fecn);
            self.solicited = Some(b.solicited);
            self.pad_count = Some(b.pad_count);
            self.pkey = Some(b.pkey);
            self.icrc = Some(pkt.icrc);
            self.icrc_ok = icrc::verify(frame, meta);
            self.payload_len = Some(pkt.payload.len());
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
        if meta.is_mac_control() {
            match MacControl::parse_frame(frame, meta)? {
                MacControl::Pause { quanta } => self.pause_quanta = Some(quanta),
                MacControl::Pfc(pfc) => {
                    self.pfc_enable = Some(pfc.enable_vector);
                    self.pfc_quanta = Some(pfc.quanta);
                }
                MacControl::Other { opcode } => self.mac_control_opcode = Some(opcode),
            }
        }
        Ok(())
    }

    /// IPv4 extras that need the whole, checked packet: the header checksum, and the UDP
    /// ports of a first fragment.
    fn fill_ipv4_checked(&mut self, packet: &[u8]) -> Result<(), ParseError> {
        let ip = Ipv4Packet::new_checked(packet)?;
        self.ip_checksum_ok = Some(ip.verify_checksum());
        // The first fragment of a UDP datagram still starts with the UDP header; show its
        // ports as tshark does (the datagram is not parsed further).
        if ip.is_fragment() && ip.frag_offset() == 0 && ip.protocol() == PROTO_UDP {
            if let [a, b, c, d, ..] = *ip.payload() {
                self.udp_sport = Some(u16::from_be_bytes([a, b]));
                self.udp_dport = Some(u16::from_be_bytes([c, d]));
            }
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
    fn snapped_frame_keeps_its_ip_fields_and_says_why_it_stops() {
        // tcpdump -s 40: the CNP cut inside its UDP header.
        let (r, meta) = FrameRecord::decode(1, Nanos(0), 74, &REAL_CNP[..40]);
        assert!(meta.is_none());
        assert_eq!(r.ip_src.as_deref(), Some("10.0.17.1"));
        assert_eq!((r.dscp, r.ecn, r.ip_proto), (Some(48), Some(2), Some(17)));
        assert_eq!(r.caplen, Some(40));
        let error = r.error.unwrap();
        assert!(error.contains("the capture kept 40 of 74 bytes"), "{error}");
        assert_eq!(r.bth_opcode, None);
    }

    #[test]
    fn whole_cnp_decodes() {
        let (r, meta) = FrameRecord::decode(1, Nanos(5), 74, &REAL_CNP);
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
