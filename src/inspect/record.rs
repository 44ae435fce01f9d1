//! One frame, decoded for people: every field rocelab can read from it.

use crate::time::Nanos;
use crate::wire::ethernet::{EthernetRepr, ethertype};
use crate::wire::ipv4::PROTO_UDP;
use crate::wire::pfc::MacControl;
use crate::wire::xth::AckKind;
use crate::wire::{
    FrameMeta, Ipv4Packet, Ipv6Packet, MetaFlags, ParseError, RocePacket, UdpDatagram, icrc,
};
use serde::Serialize;

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
                r.fill_ip_best_effort(frame);
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
        if meta.is_ip() {
            self.fill_ip(frame, l3)?;
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

    fn fill_ip(&mut self, frame: &[u8], l3: usize) -> Result<(), ParseError> {
        match self.ethertype {
            Some(ethertype::IPV4) => {
                let ip = Ipv4Packet::new_checked(&frame[l3..])?;
                self.ip_version = Some(4);
                self.ip_src = Some(ip.src().to_string());
                self.ip_dst = Some(ip.dst().to_string());
                self.dscp = Some(ip.dscp());
                self.ecn = Some(ip.ecn() as u8);
                self.ip_proto = Some(ip.protocol());
                self.ip_checksum_ok = Some(ip.verify_checksum());
                // The first fragment of a UDP datagram still starts with the UDP header;
                // show its ports as tshark does (the datagram is not parsed further).
                if ip.is_fragment() && ip.frag_offset() == 0 && ip.protocol() == PROTO_UDP {
                    if let [a, b, c, d, ..] = *ip.payload() {
                        self.udp_sport = Some(u16::from_be_bytes([a, b]));
                        self.udp_dport = Some(u16::from_be_bytes([c, d]));
                    }
                }
            }
            Some(ethertype::IPV6) => {
                let ip = Ipv6Packet::new_checked(&frame[l3..])?;
                self.ip_version = Some(6);
                self.ip_src = Some(ip.src().to_string());
                self.ip_dst = Some(ip.dst().to_string());
                self.dscp = Some(ip.dscp());
                self.ecn = Some(ip.ecn() as u8);
                self.ip_proto = Some(ip.next_header());
            }
            _ => {}
        }
        Ok(())
    }

    /// For a frame cut short by the snap length, shows the IP addresses and DSCP/ECN when
    /// the fixed IP header itself was captured.
    fn fill_ip_best_effort(&mut self, frame: &[u8]) {
        let Ok((eth, l3)) = EthernetRepr::parse(frame) else {
            return;
        };
        let rest = &frame[l3..];
        match eth.ethertype {
            ethertype::IPV4 if rest.len() >= 20 && rest[0] >> 4 == 4 => {
                self.ip_version = Some(4);
                self.ip_src = Some(
                    std::net::Ipv4Addr::new(rest[12], rest[13], rest[14], rest[15]).to_string(),
                );
                self.ip_dst = Some(
                    std::net::Ipv4Addr::new(rest[16], rest[17], rest[18], rest[19]).to_string(),
                );
                self.dscp = Some(rest[1] >> 2);
                self.ecn = Some(rest[1] & 3);
            }
            ethertype::IPV6 if rest.len() >= 40 && rest[0] >> 4 == 6 => {
                let tc = (rest[0] << 4) | (rest[1] >> 4);
                let addr = |at: usize| {
                    let mut a = [0u8; 16];
                    a.copy_from_slice(&rest[at..at + 16]);
                    std::net::Ipv6Addr::from(a).to_string()
                };
                self.ip_version = Some(6);
                self.ip_src = Some(addr(8));
                self.ip_dst = Some(addr(24));
                self.dscp = Some(tc >> 2);
                self.ecn = Some(tc & 3);
            }
            _ => {}
        }
    }
}

fn describe(e: &ParseError, caplen: usize, orig_len: u32) -> String {
    if (caplen as u64) < u64::from(orig_len) && matches!(e, ParseError::Truncated { .. }) {
        format!("{e} (the capture kept {caplen} of {orig_len} bytes)")
    } else {
        e.to_string()
    }
}
