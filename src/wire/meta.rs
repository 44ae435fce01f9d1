//! The one hot-path parse: a frame in, a small [`FrameMeta`] out.
//!
//! The switch classifies, accounts and marks from `FrameMeta` alone, so the frame's headers
//! are read exactly once. The parse checks every length it relies on and never reads out
//! of bounds; headers past the ones it needs (extended transport headers, payload) are left
//! to the views.

use super::ethernet::{HEADER_LEN as ETH_LEN, VLAN_TAG_LEN, ethertype};
use super::{
    Field, Layer, ParseError, be16, be24, bth, ecn::Ecn, invalid, ipv4, ipv6, truncated, udp,
};
use bitflags::bitflags;
use std::num::NonZeroU16;

bitflags! {
    /// What a frame turned out to be.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct MetaFlags: u16 {
        /// Carries an 802.1Q (or 802.1ad) tag; the PCP is the outer tag's.
        const VLAN = 1 << 0;
        /// Carries two tags (QinQ).
        const QINQ = 1 << 1;
        /// IPv4.
        const IPV4 = 1 << 2;
        /// IPv6.
        const IPV6 = 1 << 3;
        /// An IPv4 fragment (no L4 header is read from it).
        const IP_FRAGMENT = 1 << 4;
        /// UDP, with the datagram within the IP packet.
        const UDP = 1 << 5;
        /// RoCEv2: UDP destination port 4791 with room for a BTH and an ICRC.
        const ROCE = 1 << 6;
        /// MAC Control (EtherType 0x8808): PAUSE or PFC.
        const MAC_CONTROL = 1 << 7;
        /// BTH AckReq.
        const ACK_REQ = 1 << 8;
        /// BTH BECN.
        const BECN = 1 << 9;
        /// BTH FECN.
        const FECN = 1 << 10;
    }
}

/// Everything the switch needs from a frame, from one parse.
///
/// Fields are private so that a `FrameMeta` always describes a frame [`parse`] accepted;
/// functions that take a frame and its meta still check bounds, in case they are handed
/// a different frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameMeta {
    /// Never zero (at least the Ethernet header): the niche lets `Result<FrameMeta, _>`
    /// be returned in the meta's own 24 bytes, with no tag to copy around.
    l3_offset: NonZeroU16,
    l4_offset: u16,
    l4_len: u16,
    ethertype: u16,
    flags: MetaFlags,
    pcp: u8,
    tos: u8,
    ip_proto: u8,
    bth_opcode: u8,
    dest_qp: u32,
    psn: u32,
}

impl FrameMeta {
    /// Offset of the L3 header (after the Ethernet header and any tags).
    #[inline]
    pub fn l3_offset(&self) -> u16 {
        self.l3_offset.get()
    }

    /// Offset of the UDP header; 0 when not UDP.
    #[inline]
    pub fn l4_offset(&self) -> u16 {
        self.l4_offset
    }

    /// UDP length (header + payload); 0 when not UDP.
    #[inline]
    pub fn udp_len(&self) -> u16 {
        self.l4_len
    }

    /// The EtherType after any tags.
    #[inline]
    pub fn ethertype(&self) -> u16 {
        self.ethertype
    }

    /// What the frame turned out to be: tags, IP version, UDP, RoCE and BTH bits.
    #[inline]
    pub fn flags(&self) -> MetaFlags {
        self.flags
    }

    /// The outer tag's PCP, if the frame is tagged.
    #[inline]
    pub fn vlan_pcp(&self) -> Option<u8> {
        self.flags.contains(MetaFlags::VLAN).then_some(self.pcp)
    }

    /// IPv4 TOS or IPv6 traffic class; 0 for non-IP frames.
    #[inline]
    pub fn tos(&self) -> u8 {
        self.tos
    }

    /// DSCP; 0 for non-IP frames.
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.tos >> 2
    }

    /// ECN codepoint; Not-ECT for non-IP frames.
    #[inline]
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.tos)
    }

    /// IP protocol (IPv6: next header); 0 for non-IP frames.
    #[inline]
    pub fn ip_proto(&self) -> u8 {
        self.ip_proto
    }

    /// True for IPv4 or IPv6.
    #[inline]
    pub fn is_ip(&self) -> bool {
        self.flags.intersects(MetaFlags::IPV4 | MetaFlags::IPV6)
    }

    /// True for IPv4.
    #[inline]
    pub fn is_ipv4(&self) -> bool {
        self.flags.contains(MetaFlags::IPV4)
    }

    /// True for IPv6.
    #[inline]
    pub fn is_ipv6(&self) -> bool {
        self.flags.contains(MetaFlags::IPV6)
    }

    /// True for RoCEv2 frames.
    #[inline]
    pub fn is_roce(&self) -> bool {
        self.flags.contains(MetaFlags::ROCE)
    }

    /// True for MAC Control frames (PAUSE, PFC).
    #[inline]
    pub fn is_mac_control(&self) -> bool {
        self.flags.contains(MetaFlags::MAC_CONTROL)
    }

    /// BTH opcode; 0 when not RoCE.
    #[inline]
    pub fn bth_opcode(&self) -> bth::Opcode {
        bth::Opcode(self.bth_opcode)
    }

    /// BTH destination QP; 0 when not RoCE.
    #[inline]
    pub fn dest_qp(&self) -> u32 {
        self.dest_qp
    }

    /// BTH PSN; 0 when not RoCE.
    #[inline]
    pub fn psn(&self) -> u32 {
        self.psn
    }

    /// BTH AckReq.
    #[inline]
    pub fn ack_req(&self) -> bool {
        self.flags.contains(MetaFlags::ACK_REQ)
    }

    /// BTH BECN (set in CNPs).
    #[inline]
    pub fn becn(&self) -> bool {
        self.flags.contains(MetaFlags::BECN)
    }

    /// BTH FECN.
    #[inline]
    pub fn fecn(&self) -> bool {
        self.flags.contains(MetaFlags::FECN)
    }

    /// Offset of the BTH (RoCE frames only).
    #[inline]
    pub fn bth_offset(&self) -> usize {
        usize::from(self.l4_offset) + udp::HEADER_LEN
    }

    /// Offset of the ICRC: the last four bytes of the UDP payload (meaningful for RoCE
    /// frames only; 0 for frames without UDP).
    #[inline]
    pub fn icrc_offset(&self) -> usize {
        (usize::from(self.l4_offset) + usize::from(self.l4_len))
            .saturating_sub(super::icrc::ICRC_LEN)
    }
}

/// Parses a frame (Ethernet II, without FCS) into a [`FrameMeta`].
///
/// `Ok` with `is_roce() == false` is "not RoCE": ARP, TCP, other UDP, PFC and so on.
/// `Err` means a header the frame announces is cut short or holds an impossible value.
#[inline]
pub fn parse(frame: &[u8]) -> Result<FrameMeta, ParseError> {
    if let Some(meta) = parse_untagged_rocev4(frame) {
        return Ok(meta);
    }
    parse_general(frame)
}

/// [`parse`] for a caller that only needs to know whether the frame parsed: the meta is
/// built where the caller keeps it. Through `Result::ok` the fast path's field-by-field
/// stores are copied again at once, as whole words, which the CPU cannot forward from
/// the pending narrow stores (a store-forwarding stall on every frame of the switch).
#[inline]
pub fn parse_meta(frame: &[u8]) -> Option<FrameMeta> {
    match parse_untagged_rocev4(frame) {
        Some(meta) => Some(meta),
        None => parse_general(frame).ok(),
    }
}

/// The L3 offset of an untagged frame.
const ETH_L3: NonZeroU16 = NonZeroU16::new(ETH_LEN as u16).unwrap();

/// Bytes of an untagged IPv4 RoCE frame up to the end of the BTH.
const ROCEV4_PREFIX: usize = ETH_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN;

/// The fast path for the frame a RoCE switch sees most: untagged IPv4 without options,
/// not a fragment, UDP to 4791, BTH version 0, all lengths consistent. Every header is at
/// a fixed offset, so all checks are on one 54-byte prefix, folded into a single branch.
/// Anything else returns `None` and goes the general way, which reaches the same result
/// for the frames accepted here (a property test checks this).
#[inline(always)]
fn parse_untagged_rocev4(frame: &[u8]) -> Option<FrameMeta> {
    const L3: usize = ETH_LEN;
    const L4: usize = L3 + ipv4::HEADER_LEN;
    const BTH: usize = L4 + udp::HEADER_LEN;
    const MIN_UDP: u32 = (udp::HEADER_LEN + bth::HEADER_LEN + super::icrc::ICRC_LEN) as u32;
    let h = frame.first_chunk::<ROCEV4_PREFIX>()?;
    let word = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    // EtherType 0x0800, then version 4 / IHL 5.
    let ethertype_ver_ihl = (word(12) >> 8) ^ 0x08_00_45;
    // Flags + fragment offset (DF may be set, nothing else), TTL (any), protocol UDP.
    let fragment_proto = (word(L3 + 6) & 0x3fff_00ff) ^ u32::from(ipv4::PROTO_UDP);
    // UDP destination port 4791, and the BTH TVer nibble 0.
    let port = u32::from(be16([h[L4 + 2], h[L4 + 3]]) ^ udp::ROCEV2_PORT);
    let tver = u32::from(h[BTH + 1] & 0x0f);
    let total_len = u32::from(be16([h[L3 + 2], h[L3 + 3]]));
    let udp_len = u32::from(be16([h[L4 + 4], h[L4 + 5]]));
    let lengths_ok = (udp_len >= MIN_UDP)
        & (udp_len + ipv4::HEADER_LEN as u32 <= total_len)
        & (total_len as usize <= frame.len() - L3);
    if (ethertype_ver_ihl | fragment_proto | port | tver) != 0 || !lengths_ok {
        return None;
    }
    let dest_qp = word(BTH + 4); // FECN/BECN byte, then the 24-bit dest QP
    let psn = word(BTH + 8); // AckReq byte, then the 24-bit PSN
    Some(FrameMeta {
        l3_offset: ETH_L3,
        l4_offset: L4 as u16,
        l4_len: udp_len as u16,
        ethertype: ethertype::IPV4,
        flags: MetaFlags::IPV4
            | MetaFlags::UDP
            | MetaFlags::ROCE
            | bth_flags((dest_qp >> 24) as u8, (psn >> 24) as u8),
        pcp: 0,
        tos: h[L3 + 1],
        ip_proto: ipv4::PROTO_UDP,
        bth_opcode: h[BTH],
        dest_qp: dest_qp & bth::MAX_24BIT,
        psn: psn & bth::MAX_24BIT,
    })
}

/// The general parse: tags, IPv4 options, IPv6, non-RoCE frames and every error.
/// Kept out of line so that the fast path stays small where `parse` is inlined.
#[inline(never)]
fn parse_general(frame: &[u8]) -> Result<FrameMeta, ParseError> {
    let Some(eth) = frame.first_chunk::<ETH_LEN>() else {
        return Err(truncated(Layer::Ethernet, 0, ETH_LEN, frame.len()));
    };
    let mut meta = FrameMeta {
        l3_offset: ETH_L3,
        l4_offset: 0,
        l4_len: 0,
        ethertype: be16([eth[12], eth[13]]),
        flags: MetaFlags::empty(),
        pcp: 0,
        tos: 0,
        ip_proto: 0,
        bth_opcode: 0,
        dest_qp: 0,
        psn: 0,
    };
    if meta.ethertype == ethertype::VLAN || meta.ethertype == ethertype::QINQ {
        let tag = tag_at(frame, ETH_LEN)?;
        meta.pcp = tag[0] >> 5;
        meta.ethertype = be16([tag[2], tag[3]]);
        meta.flags = MetaFlags::VLAN;
        meta.l3_offset = meta.l3_offset.saturating_add(VLAN_TAG_LEN as u16);
        if meta.ethertype == ethertype::VLAN {
            let inner = tag_at(frame, ETH_LEN + VLAN_TAG_LEN)?;
            meta.ethertype = be16([inner[2], inner[3]]);
            meta.flags |= MetaFlags::QINQ;
            meta.l3_offset = meta.l3_offset.saturating_add(VLAN_TAG_LEN as u16);
        }
    }
    let l3 = usize::from(meta.l3_offset.get());
    let ip_end = match meta.ethertype {
        ethertype::IPV4 => parse_ipv4(frame, l3, &mut meta)?,
        ethertype::IPV6 => parse_ipv6(frame, l3, &mut meta)?,
        ethertype::MAC_CONTROL => {
            meta.flags |= MetaFlags::MAC_CONTROL;
            return Ok(meta);
        }
        _ => return Ok(meta),
    };
    if meta.ip_proto == ipv4::PROTO_UDP && !meta.flags.contains(MetaFlags::IP_FRAGMENT) {
        parse_udp(frame, ip_end, &mut meta)?;
    }
    Ok(meta)
}

#[inline(always)]
fn tag_at(frame: &[u8], at: usize) -> Result<&[u8; VLAN_TAG_LEN], ParseError> {
    frame
        .get(at..)
        .and_then(|rest| rest.first_chunk::<VLAN_TAG_LEN>())
        .ok_or_else(|| truncated(Layer::Vlan, at, VLAN_TAG_LEN, frame.len()))
}

/// Returns the end of the IPv4 packet (its total length), which may be before the end of
/// the frame (Ethernet padding).
#[inline(always)]
fn parse_ipv4(frame: &[u8], l3: usize, meta: &mut FrameMeta) -> Result<usize, ParseError> {
    let Some(h) = frame
        .get(l3..)
        .and_then(|rest| rest.first_chunk::<{ ipv4::HEADER_LEN }>())
    else {
        return Err(truncated(Layer::Ipv4, l3, ipv4::HEADER_LEN, frame.len()));
    };
    let (header_len, total_len) = ipv4::check_header(h, l3, frame.len())?;
    meta.flags |= MetaFlags::IPV4;
    meta.tos = h[1];
    meta.ip_proto = h[9];
    // More Fragments or a fragment offset: only the first fragment has the UDP header,
    // and a fragmented RoCE packet cannot be delivered anyway.
    if be16([h[6], h[7]]) & 0x3fff != 0 {
        meta.flags |= MetaFlags::IP_FRAGMENT;
    }
    meta.l4_offset = (l3 + header_len) as u16;
    Ok(l3 + total_len)
}

#[inline(always)]
fn parse_ipv6(frame: &[u8], l3: usize, meta: &mut FrameMeta) -> Result<usize, ParseError> {
    let Some(h) = frame
        .get(l3..)
        .and_then(|rest| rest.first_chunk::<{ ipv6::HEADER_LEN }>())
    else {
        return Err(truncated(Layer::Ipv6, l3, ipv6::HEADER_LEN, frame.len()));
    };
    let total_len = ipv6::check_header(h, l3, frame.len())?;
    meta.flags |= MetaFlags::IPV6;
    meta.tos = (h[0] << 4) | (h[1] >> 4);
    let end = l3 + total_len;
    // RoCEv2 puts UDP right after the fixed header, but a host or router may insert
    // extension headers (RFC 8200 section 4) before it; walk the common ones, as tshark
    // does, so that such a frame is classified as what it carries.
    let mut next = h[6];
    let first = l3 + ipv6::HEADER_LEN;
    let mut at = first;
    for _ in 0..MAX_IPV6_EXTENSIONS {
        let ext = frame[..end].get(at..).unwrap_or_default();
        let len = match next {
            // Hop-by-hop options only right after the fixed header (RFC 8200 section 4.1:
            // anywhere else the packet is discarded); the walk stops at a later one.
            ipv6::NEXT_HOP_BY_HOP if at != first => break,
            ipv6::NEXT_HOP_BY_HOP | ipv6::NEXT_ROUTING | ipv6::NEXT_DEST_OPTIONS => match ext {
                // Hdr Ext Len: 8-octet units beyond the first 8.
                [_, units, ..] => (usize::from(*units) + 1) * 8,
                _ => return Err(truncated(Layer::Ipv6Extension, at, 2, end)),
            },
            ipv6::NEXT_FRAGMENT => IPV6_FRAGMENT_LEN,
            _ => break,
        };
        if ext.len() < len {
            return Err(truncated(Layer::Ipv6Extension, at, len, end));
        }
        let fragment = next == ipv6::NEXT_FRAGMENT && be16([ext[2], ext[3]]) & 0xfff9 != 0;
        next = ext[0];
        at += len;
        if fragment {
            // A fragment offset or More Fragments: as for IPv4, only the first fragment
            // carries the UDP header, and a fragmented RoCE packet cannot be delivered;
            // what follows a later fragment's header is not a header.
            meta.flags |= MetaFlags::IP_FRAGMENT;
            break;
        }
    }
    meta.ip_proto = next;
    meta.l4_offset = at as u16;
    Ok(end)
}

/// The most IPv6 extension headers walked; behind a longer chain the packet counts as
/// carrying the extension header it stopped at (not UDP). Real chains hold one or two.
const MAX_IPV6_EXTENSIONS: usize = 8;

// The walk ends within u16 of the frame's start: two tags, the fixed header and eight
// extension headers of the largest length (2 KiB).
const _: () = assert!(
    ETH_LEN + 2 * VLAN_TAG_LEN + ipv6::HEADER_LEN + MAX_IPV6_EXTENSIONS * 256 * 8
        <= u16::MAX as usize
);

/// Length of the IPv6 fragment header.
const IPV6_FRAGMENT_LEN: usize = 8;

#[inline(always)]
fn parse_udp(frame: &[u8], ip_end: usize, meta: &mut FrameMeta) -> Result<(), ParseError> {
    let l4 = usize::from(meta.l4_offset);
    // ip_end <= frame.len() and l4 <= ip_end were checked by the IP parse.
    let ip_payload = &frame[l4..ip_end];
    let Some(h) = ip_payload.first_chunk::<{ udp::HEADER_LEN }>() else {
        return Err(truncated(Layer::Udp, l4, udp::HEADER_LEN, ip_end));
    };
    let udp_len = udp::check_header(h, l4, ip_end)?;
    meta.flags |= MetaFlags::UDP;
    meta.l4_len = udp_len as u16;
    if be16([h[2], h[3]]) != udp::ROCEV2_PORT {
        return Ok(());
    }
    // The datagram is all there (checked above): one too short for a BTH and an ICRC has
    // a UDP length that cannot be RoCE.
    let b = match ip_payload[udp::HEADER_LEN..udp_len].first_chunk::<{ bth::HEADER_LEN }>() {
        Some(b) if udp_len >= udp::HEADER_LEN + bth::HEADER_LEN + super::icrc::ICRC_LEN => b,
        _ => return Err(invalid(Field::RoceUdpLength, udp_len)),
    };
    let tver = b[1] & 0x0f;
    if tver != 0 {
        return Err(invalid(Field::BthTransportVersion, usize::from(tver)));
    }
    meta.flags |= MetaFlags::ROCE | bth_flags(b[4], b[8]);
    meta.bth_opcode = b[0];
    meta.dest_qp = be24([b[5], b[6], b[7]]);
    meta.psn = be24([b[9], b[10], b[11]]);
    Ok(())
}

/// FECN, BECN (BTH byte 4, bits 7 and 6) and AckReq (byte 8, bit 7) as flags, without
/// branches: the flag bits are placed so that a shift lines them up.
#[inline(always)]
fn bth_flags(fecn_becn: u8, ack_req: u8) -> MetaFlags {
    const _: () = assert!(MetaFlags::FECN.bits() == 0x80 << 3);
    const _: () = assert!(MetaFlags::BECN.bits() == 0x40 << 3);
    const _: () = assert!(MetaFlags::ACK_REQ.bits() == 0x80 << 1);
    MetaFlags::from_bits_retain(
        (u16::from(fecn_becn & 0xc0) << 3) | (u16::from(ack_req & 0x80) << 1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::fixtures::REAL_CNP;

    #[test]
    fn parses_real_cnp() {
        let m = parse(&REAL_CNP).unwrap();
        assert!(m.is_roce() && m.is_ipv4() && m.becn() && !m.ack_req());
        assert_eq!(m.bth_opcode(), bth::Opcode::CNP);
        assert_eq!((m.dscp(), m.ecn()), (48, Ecn::Ect0));
        assert_eq!((m.dest_qp(), m.psn()), (0x118, 0));
        assert_eq!((m.l3_offset(), m.l4_offset(), m.udp_len()), (14, 34, 40));
        assert_eq!(m.icrc_offset(), 70);
        assert_eq!(m.vlan_pcp(), None);
    }

    #[test]
    fn every_prefix_of_a_roce_frame_is_an_error_not_a_panic() {
        for n in 0..REAL_CNP.len() {
            let r = parse(&REAL_CNP[..n]);
            assert!(r.is_err(), "prefix {n} parsed as {r:?}");
        }
    }

    #[test]
    fn ethernet_padding_after_the_ip_packet_is_ignored() {
        let mut padded = REAL_CNP.to_vec();
        padded.extend_from_slice(&[0xaa; 6]);
        let m = parse(&padded).unwrap();
        assert_eq!(m.icrc_offset(), 70);
    }

    #[test]
    fn non_roce_is_not_an_error() {
        let mut arp = [0u8; 60];
        arp[12..14].copy_from_slice(&ethertype::ARP.to_be_bytes());
        let m = parse(&arp).unwrap();
        assert!(!m.is_roce() && !m.is_ip());
        let mut other_port = REAL_CNP;
        other_port[37] = 0xb8; // dport 4792
        let m = parse(&other_port).unwrap();
        assert!(m.flags().contains(MetaFlags::UDP) && !m.is_roce());
    }

    proptest::proptest! {
        /// The fast path accepts only frames the general parse accepts, with the same meta.
        #[test]
        fn fast_path_agrees_with_the_general_parse(
            edits in proptest::collection::vec((0usize..80, proptest::prelude::any::<u8>()), 0..6),
            extra in 0usize..40,
            cut in 0usize..120,
        ) {
            let mut frame = REAL_CNP.to_vec();
            frame.resize(REAL_CNP.len() + extra, 0);
            for (at, byte) in edits {
                if let Some(b) = frame.get_mut(at) {
                    *b = byte;
                }
            }
            frame.truncate(cut.min(frame.len()));
            if let Some(fast) = parse_untagged_rocev4(&frame) {
                proptest::prop_assert_eq!(Ok(fast), parse_general(&frame));
            }
        }
    }

    #[test]
    fn result_needs_no_room_beyond_the_meta() {
        assert_eq!(
            std::mem::size_of::<Result<FrameMeta, ParseError>>(),
            std::mem::size_of::<FrameMeta>()
        );
    }

    #[test]
    fn fast_path_takes_the_real_cnp() {
        assert_eq!(
            parse_untagged_rocev4(&REAL_CNP).map(Ok),
            Some(parse_general(&REAL_CNP))
        );
    }

    /// An IPv6 CNP (14 + 40 + 8 + 12 + 16 + 4 bytes) to QP 0x118, with `chain` (each
    /// header's bytes, its next-header byte set here) after the fixed header.
    fn ipv6_cnp_with(chain: &[(u8, &[u8])]) -> Vec<u8> {
        use crate::wire::cnp::CnpRepr;
        use crate::wire::{IpRepr, Ipv6Repr, MacAddr};
        let cnp = CnpRepr {
            eth_dst: MacAddr([2, 0, 0, 0, 0, 1]),
            eth_src: MacAddr([2, 0, 0, 0, 0, 2]),
            vlan: None,
            ip: IpRepr::V6(Ipv6Repr {
                src: "2001:db8::2".parse().unwrap(),
                dst: "2001:db8::1".parse().unwrap(),
                dscp: 48,
                ecn: Ecn::Ect0,
                flow_label: 0,
                hop_limit: 64,
            }),
            udp_src_port: 0xc000,
            pkey: 0xffff,
            dest_qp: 0x118,
        }
        .to_roce();
        let mut f = vec![0u8; cnp.frame_len()];
        let n = cnp.emit(&mut f).unwrap();
        f.truncate(n);
        let mut kinds: Vec<u8> = chain.iter().map(|(k, _)| *k).collect();
        kinds.push(f[ETH_LEN + 6]);
        let mut out = f[..ETH_LEN + ipv6::HEADER_LEN].to_vec();
        out[ETH_LEN + 6] = kinds[0];
        for (i, (_, bytes)) in chain.iter().enumerate() {
            out.push(kinds[i + 1]);
            out.extend(&bytes[1..]);
        }
        out.extend(&f[ETH_LEN + ipv6::HEADER_LEN..]);
        let payload = (out.len() - ETH_LEN - ipv6::HEADER_LEN) as u16;
        out[ETH_LEN + 4..ETH_LEN + 6].copy_from_slice(&payload.to_be_bytes());
        out
    }

    /// QA: RoCEv2 over IPv6 behind a hop-by-hop header (`11 00 01 04 00 00 00 00`: UDP
    /// next, length 0, a PadN option) parsed as "IP proto 0", not RoCE, where tshark
    /// decodes the BTH. The parse walks the extension headers to UDP.
    #[test]
    fn ipv6_extension_headers_are_walked_to_udp() {
        let hop_by_hop: &[u8] = &[0x11, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00];
        let f = ipv6_cnp_with(&[(0, hop_by_hop)]);
        let m = parse(&f).unwrap();
        assert!(m.is_roce() && m.is_ipv6() && m.becn());
        assert_eq!((m.ip_proto(), m.l4_offset()), (17, 14 + 40 + 8));
        assert_eq!((m.bth_opcode(), m.dest_qp()), (bth::Opcode::CNP, 0x118));
        assert_eq!((m.dscp(), m.ecn()), (48, Ecn::Ect0));
        // Routing (24 bytes: length 2) and destination options too, in a chain.
        let routing: &[u8] = &[
            0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        let f = ipv6_cnp_with(&[(0, hop_by_hop), (43, routing), (60, hop_by_hop)]);
        let m = parse(&f).unwrap();
        assert!(m.is_roce());
        assert_eq!(m.l4_offset(), 14 + 40 + 8 + 24 + 8);
        assert_eq!(m.icrc_offset(), f.len() - 4);
        // An atomic fragment (offset 0, no More Fragments) is whole.
        let atomic: &[u8] = &[0, 0, 0, 0, 0, 0, 0, 1];
        assert!(parse(&ipv6_cnp_with(&[(44, atomic)])).unwrap().is_roce());
    }

    #[test]
    fn ipv6_fragments_and_long_or_cut_chains_are_not_roce() {
        // A first fragment (More Fragments) and a later one (offset 1): fragments, and
        // what follows a later one's header is not read as a header.
        for frag in [[0u8, 0, 0, 1, 0, 0, 0, 1], [0, 0, 0, 8, 0, 0, 0, 1]] {
            let m = parse(&ipv6_cnp_with(&[(44, &frag)])).unwrap();
            assert!(m.flags().contains(MetaFlags::IP_FRAGMENT) && !m.is_roce());
        }
        // Hop-by-hop options anywhere but first (RFC 8200 section 4.1): not walked.
        let hop_by_hop: &[u8] = &[0x11, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00];
        let m = parse(&ipv6_cnp_with(&[(60, hop_by_hop), (0, hop_by_hop)])).unwrap();
        assert!(!m.is_roce() && !m.flags().contains(MetaFlags::UDP));
        assert_eq!((m.ip_proto(), m.l4_offset()), (0, 14 + 40 + 8));
        // Nine headers: the walk stops at eight, at an extension header, not UDP.
        let empty: &[u8] = &[0; 8];
        let nine = vec![(60, empty); 9];
        let m = parse(&ipv6_cnp_with(&nine)).unwrap();
        assert!(!m.is_roce() && !m.flags().contains(MetaFlags::UDP));
        assert_eq!(m.ip_proto(), 60);
        // A header that runs past the packet's payload length is an error naming it.
        let mut f = ipv6_cnp_with(&[(0, empty)]);
        f[ETH_LEN + 40 + 1] = 200; // Hdr Ext Len: 1608 bytes
        let e = parse(&f).unwrap_err();
        assert!(
            matches!(
                e,
                ParseError::Truncated {
                    layer: Layer::Ipv6Extension,
                    offset: 54,
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn fragments_are_not_roce() {
        let mut frag = REAL_CNP;
        frag[20] = 0x20; // MF
        let m = parse(&frag).unwrap();
        assert!(m.flags().contains(MetaFlags::IP_FRAGMENT) && !m.is_roce());
    }
}
