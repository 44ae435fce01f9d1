//! IPv6 (RFC 8200) fixed header view. RoCEv2 carries UDP after the fixed header, which the
//! frame parse finds behind any hop-by-hop, routing, fragment or destination options
//! headers.

use super::{
    BuildError, Field, Layer, ParseError, array, be16, ecn::Ecn, invalid, len16, need, truncated,
};
use std::net::Ipv6Addr;

mod field {
    pub(super) const VER_TC_FLOW: usize = 0;
    pub(super) const PAYLOAD_LEN: usize = 4;
    pub(super) const NEXT_HEADER: usize = 6;
    pub(super) const HOP_LIMIT: usize = 7;
    pub(super) const SRC: usize = 8;
    pub(super) const DST: usize = 24;
}

/// Length of the IPv6 fixed header.
pub const HEADER_LEN: usize = 40;

/// Next header: hop-by-hop options (RFC 8200 section 4.3).
pub const NEXT_HOP_BY_HOP: u8 = 0;
/// Next header: routing (RFC 8200 section 4.4).
pub const NEXT_ROUTING: u8 = 43;
/// Next header: fragment (RFC 8200 section 4.5).
pub const NEXT_FRAGMENT: u8 = 44;
/// Next header: destination options (RFC 8200 section 4.6).
pub const NEXT_DEST_OPTIONS: u8 = 60;

/// A view of an IPv6 packet whose header and payload length have been checked.
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buffer` (starting at the IPv6 header) after checking the version and that the
    /// payload length fits. Bytes after the payload (Ethernet padding) are allowed.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let b = buffer.as_ref();
        let Some(h) = b.first_chunk::<HEADER_LEN>() else {
            return Err(truncated(Layer::Ipv6, 0, HEADER_LEN, b.len()));
        };
        check_header(h, 0, b.len())?;
        Ok(Ipv6Packet { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn word0(&self) -> u32 {
        u32::from_be_bytes(array(self.b(), field::VER_TC_FLOW))
    }

    /// Traffic class: DSCP in the upper six bits, ECN in the lower two.
    pub fn traffic_class(&self) -> u8 {
        (self.word0() >> 20) as u8
    }

    /// Differentiated Services Code Point.
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// ECN codepoint: the low two bits of the traffic class (RFC 3168).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.traffic_class())
    }

    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0x000f_ffff
    }

    /// Payload length in bytes.
    pub fn payload_len(&self) -> usize {
        usize::from(be16(array(self.b(), field::PAYLOAD_LEN)))
    }

    /// Next header of the fixed header: 17 for RoCEv2's UDP, or the first extension header
    /// (the frame parse follows them; this view does not).
    pub fn next_header(&self) -> u8 {
        self.b()[field::NEXT_HEADER]
    }

    /// Hop limit: IPv6's TTL, decremented by each router.
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::HOP_LIMIT]
    }

    #[allow(missing_docs)]
    pub fn src(&self) -> Ipv6Addr {
        Ipv6Addr::from(array::<16>(self.b(), field::SRC))
    }

    #[allow(missing_docs)]
    pub fn dst(&self) -> Ipv6Addr {
        Ipv6Addr::from(array::<16>(self.b(), field::DST))
    }

    /// The payload (Ethernet padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..HEADER_LEN + self.payload_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Rewrites the traffic class. IPv6 has no header checksum to patch.
    pub fn set_traffic_class(&mut self, tc: u8) {
        set_traffic_class_in_header(self.buffer.as_mut(), tc);
    }
}

/// Checks the fixed header `h` of a packet at `offset` in a frame of `frame_len` bytes:
/// version 6 and the payload within the frame. Returns the packet's total length.
#[inline(always)]
pub(crate) fn check_header(
    h: &[u8; HEADER_LEN],
    offset: usize,
    frame_len: usize,
) -> Result<usize, ParseError> {
    if h[0] >> 4 != 6 {
        return Err(invalid(Field::Ipv6Version, usize::from(h[0] >> 4)));
    }
    let total_len =
        HEADER_LEN + usize::from(be16([h[field::PAYLOAD_LEN], h[field::PAYLOAD_LEN + 1]]));
    if frame_len - offset < total_len {
        return Err(truncated(Layer::Ipv6, offset, total_len, frame_len));
    }
    Ok(total_len)
}

/// Rewrites the traffic class of the IPv6 header at the start of `header` (at least 2
/// bytes): it straddles the first two bytes, after the 4-bit version.
#[inline]
pub(crate) fn set_traffic_class_in_header(header: &mut [u8], tc: u8) {
    header[0] = (header[0] & 0xf0) | (tc >> 4);
    header[1] = (header[1] & 0x0f) | (tc << 4);
}

/// The freely chosen fields of an IPv6 fixed header. Payload length and next header are
/// given when emitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // src, dst, ecn: the names say it
pub struct Ipv6Repr {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    /// DSCP, 0-63.
    pub dscp: u8,
    pub ecn: Ecn,
    /// Flow label (20 bits; higher bits are masked off).
    pub flow_label: u32,
    /// Hop limit: IPv6's TTL.
    pub hop_limit: u8,
}

impl Ipv6Repr {
    /// Reads the free fields back from a checked packet.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Ipv6Repr {
        Ipv6Repr {
            src: packet.src(),
            dst: packet.dst(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            flow_label: packet.flow_label(),
            hop_limit: packet.hop_limit(),
        }
    }

    /// Writes the 40-byte fixed header into `buf`; returns 40.
    pub fn emit(
        &self,
        buf: &mut [u8],
        next_header: u8,
        payload_len: usize,
    ) -> Result<usize, BuildError> {
        need(buf, HEADER_LEN)?;
        let payload_len = len16(Layer::Ipv6, payload_len)?;
        let h = &mut buf[..HEADER_LEN];
        let tc = u32::from((self.dscp << 2) | self.ecn as u8);
        let word0 = (6u32 << 28) | (tc << 20) | (self.flow_label & 0x000f_ffff);
        h[..4].copy_from_slice(&word0.to_be_bytes());
        h[field::PAYLOAD_LEN..field::PAYLOAD_LEN + 2].copy_from_slice(&payload_len.to_be_bytes());
        h[field::NEXT_HEADER] = next_header;
        h[field::HOP_LIMIT] = self.hop_limit;
        h[field::SRC..field::SRC + 16].copy_from_slice(&self.src.octets());
        h[field::DST..field::DST + 16].copy_from_slice(&self.dst.octets());
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_class_straddles_first_two_bytes() {
        let repr = Ipv6Repr {
            src: "2001:db8::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
            dscp: 26,
            ecn: Ecn::Ect0,
            flow_label: 0xabcde,
            hop_limit: 64,
        };
        let mut buf = [0u8; HEADER_LEN];
        repr.emit(&mut buf, 17, 0).unwrap();
        assert!(repr.emit(&mut buf, 17, 70_000).is_err());
        // version 6, TC 0x6a (26 << 2 | 2), flow label 0xabcde
        assert_eq!(&buf[..4], &[0x66, 0xaa, 0xbc, 0xde]);
        let mut p = Ipv6Packet::new_checked(buf).unwrap();
        assert_eq!(Ipv6Repr::parse(&p), repr);
        p.set_traffic_class(0x6b);
        assert_eq!(p.ecn(), Ecn::Ce);
        assert_eq!(p.dscp(), 26);
        assert_eq!(p.flow_label(), 0xabcde);
    }
}
