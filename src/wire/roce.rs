//! Whole RoCEv2 frames: decoding the transport part of a parsed frame, and building a
//! frame (Ethernet, optional tag, IPv4 or IPv6, UDP 4791, BTH, extended headers, payload,
//! pad, ICRC) into a caller's buffer.

use super::bth::{self, Bth, BthRepr};
use super::ecn::Ecn;
use super::ethernet::{
    EthernetRepr, HEADER_LEN as ETH_LEN, MIN_FRAME_LEN, MacAddr, VLAN_TAG_LEN, VlanTag, ethertype,
};
use super::icrc::{self, ICRC_LEN};
use super::ipv4::{self, Ipv4Repr};
use super::ipv6::{self, Ipv6Repr};
use super::meta::FrameMeta;
use super::xth::{ExtHeaders, Layout};
use super::{BuildError, Field, Layer, ParseError, udp};

/// The transport part of a RoCEv2 frame, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RocePacket<'a> {
    /// The BTH as received; its `pad_count` bytes are already cut from `payload`.
    pub bth: BthRepr,
    /// The extended headers the opcode carries.
    pub ext: ExtHeaders,
    /// The payload, without pad bytes.
    pub payload: &'a [u8],
    /// The ICRC as stored.
    pub icrc: u32,
}

impl<'a> RocePacket<'a> {
    /// Decodes the BTH, extended headers and payload of a frame whose `meta` says RoCE.
    /// Returns `Ok(None)` for frames that are not RoCE.
    pub fn parse(frame: &'a [u8], meta: &FrameMeta) -> Result<Option<RocePacket<'a>>, ParseError> {
        if !meta.is_roce() {
            return Ok(None);
        }
        let bth_at = meta.bth_offset();
        let icrc_at = meta.icrc_offset();
        let Some(bth_bytes) = frame.get(bth_at..icrc_at) else {
            return Err(super::truncated(
                Layer::Bth,
                bth_at,
                icrc_at + ICRC_LEN - bth_at,
                frame.len(),
            ));
        };
        let bth = BthRepr::parse(&Bth::new_checked(bth_bytes)?);
        let after_bth = &bth_bytes[bth::HEADER_LEN..];
        let ext = ExtHeaders::parse_for(bth.opcode, after_bth, bth_at + bth::HEADER_LEN)?;
        let padded = &after_bth[Layout::len_of(bth.opcode)..];
        let pad = usize::from(bth.pad_count);
        if padded.len() < pad {
            return Err(super::invalid(Field::BthPadCount, pad));
        }
        Ok(Some(RocePacket {
            bth,
            ext,
            payload: &padded[..padded.len() - pad],
            icrc: icrc::stored(frame, meta).unwrap_or_default(),
        }))
    }
}

/// The IP header of a frame to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // V4, V6: the names say it
pub enum IpRepr {
    V4(Ipv4Repr),
    V6(Ipv6Repr),
}

impl IpRepr {
    fn header_len(&self) -> usize {
        match self {
            IpRepr::V4(_) => ipv4::HEADER_LEN,
            IpRepr::V6(_) => ipv6::HEADER_LEN,
        }
    }

    fn ethertype(&self) -> u16 {
        match self {
            IpRepr::V4(_) => ethertype::IPV4,
            IpRepr::V6(_) => ethertype::IPV6,
        }
    }

    /// The ECN codepoint, of either IP version.
    pub fn ecn(&self) -> Ecn {
        match self {
            IpRepr::V4(r) => r.ecn,
            IpRepr::V6(r) => r.ecn,
        }
    }
}

/// A RoCEv2 frame to build. The pad count, all lengths, the IPv4 checksum and the ICRC are
/// derived; the UDP checksum is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceRepr<'a> {
    /// Destination MAC.
    pub eth_dst: MacAddr,
    /// Source MAC.
    pub eth_src: MacAddr,
    /// 802.1Q tag, if any.
    pub vlan: Option<VlanTag>,
    /// IP header fields.
    pub ip: IpRepr,
    /// UDP source port (NICs hash the QP into it for ECMP entropy).
    pub udp_src_port: u16,
    /// BTH; `pad_count` is overwritten from the payload length.
    pub bth: BthRepr,
    /// Extended headers: exactly those the opcode carries.
    pub ext: ExtHeaders,
    /// Payload, before padding.
    pub payload: &'a [u8],
}

impl RoceRepr<'_> {
    fn pad_count(&self) -> usize {
        (4 - self.payload.len() % 4) % 4
    }

    fn udp_payload_len(&self) -> usize {
        self.udp_payload_len_with(self.ext.layout().len())
    }

    /// [`udp_payload_len`](Self::udp_payload_len) with the extended headers' length known.
    #[inline]
    fn udp_payload_len_with(&self, ext_len: usize) -> usize {
        bth::HEADER_LEN + ext_len + self.payload.len() + self.pad_count() + ICRC_LEN
    }

    fn eth_header_len(&self) -> usize {
        ETH_LEN + if self.vlan.is_some() { VLAN_TAG_LEN } else { 0 }
    }

    /// Length of the frame `emit` writes (at least the 60-byte Ethernet minimum).
    pub fn frame_len(&self) -> usize {
        self.frame_len_with(self.udp_payload_len())
    }

    #[inline]
    fn frame_len_with(&self, udp_payload_len: usize) -> usize {
        let len = self.eth_header_len() + self.ip.header_len() + udp::HEADER_LEN + udp_payload_len;
        len.max(MIN_FRAME_LEN)
    }

    /// Writes the frame into the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, BuildError> {
        self.emit_with(buf, true)
    }

    /// [`emit`](Self::emit) with the ICRC left zero: for frames that only ever reach
    /// cores that do not check it (a simulation's), which saves a CRC over the frame.
    pub fn emit_without_icrc(&self, buf: &mut [u8]) -> Result<usize, BuildError> {
        self.emit_with(buf, false)
    }

    /// Writes the frame into `out`, which takes its length, and returns that length; the
    /// ICRC is left zero unless `icrc`. The payload is copied once, straight in: `out`
    /// is not zeroed first, as [`emit`](Self::emit) into a buffer grown to the frame's
    /// length would have it (a whole frame of zeroes, then the payload over them).
    pub fn emit_to_vec(&self, out: &mut Vec<u8>, icrc: bool) -> Result<usize, BuildError> {
        self.ext.check_for(self.bth.opcode)?;
        let payload_at = self.eth_header_len()
            + self.ip.header_len()
            + udp::HEADER_LEN
            + bth::HEADER_LEN
            + Layout::len_of(self.bth.opcode);
        out.clear();
        // The whole frame at once: grown piece by piece, a buffer would double when the
        // ICRC lands past a payload that just filled it (8 KB held for a 4 KB frame).
        out.reserve(self.frame_len());
        out.resize(payload_at, 0);
        out.extend_from_slice(self.payload);
        out.resize(self.frame_len(), 0);
        self.emit_checked_headers(out, icrc, Payload::InPlace)
    }

    #[inline]
    fn emit_with(&self, buf: &mut [u8], icrc: bool) -> Result<usize, BuildError> {
        self.ext.check_for(self.bth.opcode)?;
        self.emit_checked_headers(buf, icrc, Payload::Copy)
    }

    /// The frame into the start of `buf`, its payload copied there or already in place;
    /// the caller has checked its extended headers against its opcode.
    #[inline]
    fn emit_checked_headers(
        &self,
        buf: &mut [u8],
        icrc: bool,
        payload: Payload,
    ) -> Result<usize, BuildError> {
        // The headers are the opcode's (checked): their length is the table's.
        let ext_len = Layout::len_of(self.bth.opcode);
        let udp_len = udp::HEADER_LEN + self.udp_payload_len_with(ext_len);
        let frame_len = self.frame_len_with(udp_len - udp::HEADER_LEN);
        if buf.len() < frame_len {
            return Err(BuildError::BufferTooSmall {
                needed: frame_len,
                available: buf.len(),
            });
        }
        let ip_payload_len = match self.ip {
            IpRepr::V4(_) => udp_len + ipv4::HEADER_LEN,
            IpRepr::V6(_) => udp_len,
        };
        if ip_payload_len > usize::from(u16::MAX) {
            let layer = match self.ip {
                IpRepr::V4(_) => Layer::Ipv4,
                IpRepr::V6(_) => Layer::Ipv6,
            };
            return Err(BuildError::TooLong {
                layer,
                length: ip_payload_len,
            });
        }
        let frame = &mut buf[..frame_len];
        let mut at = EthernetRepr {
            dst: self.eth_dst,
            src: self.eth_src,
            vlan: self.vlan,
            ethertype: self.ip.ethertype(),
        }
        .emit(frame)?;
        at += match self.ip {
            IpRepr::V4(r) => r.emit(&mut frame[at..], ipv4::PROTO_UDP, udp_len)?,
            IpRepr::V6(r) => r.emit(&mut frame[at..], ipv4::PROTO_UDP, udp_len)?,
        };
        at += udp::emit(
            &mut frame[at..],
            self.udp_src_port,
            udp::ROCEV2_PORT,
            udp_len - udp::HEADER_LEN,
        )?;
        let bth = BthRepr {
            pad_count: self.pad_count() as u8,
            ..self.bth
        };
        at += bth.emit(&mut frame[at..])?;
        if ext_len > 0 {
            // The frame has room for them: its length counted them.
            at += self.ext.put(&mut frame[at..]);
        }
        match payload {
            Payload::Copy => frame[at..at + self.payload.len()].copy_from_slice(self.payload),
            Payload::InPlace => debug_assert!(
                frame[at..at + self.payload.len()] == *self.payload,
                "emit_to_vec put the payload where the headers end"
            ),
        }
        at += self.payload.len();
        // Pad bytes, ICRC placeholder, Ethernet padding: most often the ICRC alone, four
        // bytes stored at once rather than a call to memset.
        match <&mut [u8; ICRC_LEN]>::try_from(&mut frame[at..]) {
            Ok(tail) => *tail = [0; ICRC_LEN],
            Err(_) => frame[at..].fill(0),
        }
        if !icrc {
            return Ok(frame_len);
        }
        let l3 = self.eth_header_len();
        let l4 = l3 + self.ip.header_len();
        let icrc_at = l4 + udp_len - ICRC_LEN;
        let crc = icrc::compute_at(frame, l3, l4, matches!(self.ip, IpRepr::V4(_)), icrc_at)
            .expect("offsets computed above lie within the frame");
        frame[icrc_at..icrc_at + ICRC_LEN].copy_from_slice(&crc.to_le_bytes());
        Ok(frame_len)
    }
}

/// Whether [`RoceRepr::emit_checked_headers`] copies the payload into the frame, or finds
/// it there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Payload {
    Copy,
    InPlace,
}

/// The largest IPv4 packet RoCEv2 makes with a path MTU of `path_mtu` payload bytes, the
/// size an interface's MTU must take (it counts from the IP header; the Ethernet header
/// and a VLAN tag lie outside it): an RC WRITE ONLY with immediate carrying a whole path
/// MTU, IPv4 + UDP + BTH + RETH + ImmDt + payload and pad + ICRC (IBA 9.2, RoCEv2 A17.4).
pub const fn ipv4_packet_len_for(path_mtu: usize) -> usize {
    ipv4::HEADER_LEN
        + udp::HEADER_LEN
        + bth::HEADER_LEN
        + super::xth::RETH_LEN
        + super::xth::IMMDT_LEN
        + path_mtu.next_multiple_of(4)
        + ICRC_LEN
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_full_write_only_with_immediate_is_the_path_mtu_plus_64_bytes_of_ip() {
        // 20 (IPv4) + 8 (UDP) + 12 (BTH) + 16 (RETH) + 4 (ImmDt) + 4 (ICRC).
        assert_eq!(super::ipv4_packet_len_for(4096), 4096 + 64);
        assert_eq!(super::ipv4_packet_len_for(1024), 1088);
    }

    use super::*;
    use crate::wire::bth::Opcode;
    use crate::wire::meta::parse;
    use crate::wire::xth::Reth;
    use std::net::Ipv4Addr;

    fn write_only(payload: &[u8]) -> RoceRepr<'_> {
        RoceRepr {
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
                opcode: Opcode::RC_WRITE_ONLY,
                pkey: 0xffff,
                dest_qp: 0x11,
                ack_req: true,
                psn: 9_209_053,
                ..BthRepr::default()
            },
            ext: ExtHeaders {
                reth: Some(Reth {
                    va: 0x1000,
                    rkey: 0x2d5,
                    dma_len: payload.len() as u32,
                }),
                ..ExtHeaders::default()
            },
            payload,
        }
    }

    #[test]
    fn built_frame_parses_back_with_pad_and_valid_icrc() {
        let payload = [7u8; 18];
        let repr = write_only(&payload);
        let mut buf = [0u8; 256];
        let n = repr.emit(&mut buf).unwrap();
        // 14 + 20 + 8 + 12 + 16 (RETH) + 18 + 2 (pad) + 4 (ICRC), like frame 4 of
        // roce_rxe_rc_write_read_cm_a.pcap
        assert_eq!(n, 94);
        let frame = &buf[..n];
        let meta = parse(frame).unwrap();
        assert!(meta.is_roce() && meta.ack_req());
        assert_eq!(icrc::verify(frame, &meta), Some(true));
        let pkt = RocePacket::parse(frame, &meta).unwrap().unwrap();
        assert_eq!(pkt.bth.pad_count, 2);
        assert_eq!(pkt.payload, &payload);
        assert_eq!(pkt.ext, repr.ext);
        let ip = ipv4::Ipv4Packet::new_checked(&frame[14..]).unwrap();
        assert!(ip.verify_checksum());
        // Without the ICRC: the same bytes but for a zero ICRC.
        let mut bare = [0xffu8; 256];
        assert_eq!(repr.emit_without_icrc(&mut bare).unwrap(), n);
        let at = meta.icrc_offset();
        assert_eq!(bare[..at], frame[..at]);
        assert_eq!(bare[at..n], [0; 4]);
        assert_ne!(frame[at..n], [0; 4]);
    }

    #[test]
    fn wrong_extended_headers_are_refused() {
        let payload = [0u8; 4];
        let mut repr = write_only(&payload);
        repr.bth.opcode = Opcode::RC_SEND_ONLY;
        let mut buf = [0u8; 256];
        assert!(matches!(
            repr.emit(&mut buf),
            Err(BuildError::HeadersMismatch { opcode: 0x04, .. })
        ));
        repr.bth.opcode = Opcode::RC_WRITE_ONLY;
        assert!(matches!(
            repr.emit(&mut buf[..50]),
            Err(BuildError::BufferTooSmall { needed: 78, .. })
        ));
    }
}
