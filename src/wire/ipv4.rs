//! IPv4 (RFC 791) header view, checksum, and the RFC 1624 incremental checksum update used
//! when a switch rewrites the TOS byte.

use super::{
    BuildError, Field, Layer, ParseError, array, be16, ecn::Ecn, invalid, len16, need, truncated,
};
use std::net::Ipv4Addr;

mod field {
    pub(super) const VER_IHL: usize = 0;
    pub(super) const TOS: usize = 1;
    pub(super) const LENGTH: usize = 2;
    pub(super) const IDENT: usize = 4;
    pub(super) const FLAGS_FRAG: usize = 6;
    pub(super) const TTL: usize = 8;
    pub(super) const PROTOCOL: usize = 9;
    pub(super) const CHECKSUM: usize = 10;
    pub(super) const SRC: usize = 12;
    pub(super) const DST: usize = 16;
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = 20;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1fff;

/// A view of an IPv4 packet whose header and total length have been checked.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buffer` (starting at the IPv4 header) after checking the version, the header
    /// length and that the total length fits in the buffer. Bytes after the total length
    /// (Ethernet padding) are allowed.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let b = buffer.as_ref();
        let Some(h) = b.first_chunk::<HEADER_LEN>() else {
            return Err(truncated(Layer::Ipv4, 0, HEADER_LEN, b.len()));
        };
        check_header(h, 0, b.len())?;
        Ok(Ipv4Packet { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[field::VER_IHL] & 0x0f) * 4
    }

    /// The TOS byte: DSCP in the upper six bits, ECN in the lower two.
    pub fn tos(&self) -> u8 {
        self.b()[field::TOS]
    }

    /// Differentiated Services Code Point.
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    /// ECN codepoint: the low two bits of the TOS byte (RFC 3168).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.tos())
    }

    /// Total length (header + payload) in bytes.
    pub fn total_len(&self) -> usize {
        usize::from(be16(array(self.b(), field::LENGTH)))
    }

    /// Identification: tells one datagram's fragments from another's (RFC 791).
    pub fn ident(&self) -> u16 {
        be16(array(self.b(), field::IDENT))
    }

    /// Don't Fragment flag.
    pub fn dont_frag(&self) -> bool {
        be16(array(self.b(), field::FLAGS_FRAG)) & FLAG_DF != 0
    }

    /// True when this is a fragment (More Fragments set or a non-zero offset).
    pub fn is_fragment(&self) -> bool {
        be16(array(self.b(), field::FLAGS_FRAG)) & (FLAG_MF | FRAG_OFFSET_MASK) != 0
    }

    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> usize {
        usize::from(be16(array(self.b(), field::FLAGS_FRAG)) & FRAG_OFFSET_MASK) * 8
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.b()[field::TTL]
    }

    /// Protocol of the payload.
    pub fn protocol(&self) -> u8 {
        self.b()[field::PROTOCOL]
    }

    /// Header checksum as stored.
    pub fn checksum(&self) -> u16 {
        be16(array(self.b(), field::CHECKSUM))
    }

    #[allow(missing_docs)]
    pub fn src(&self) -> Ipv4Addr {
        Ipv4Addr::from(array::<4>(self.b(), field::SRC))
    }

    #[allow(missing_docs)]
    pub fn dst(&self) -> Ipv4Addr {
        Ipv4Addr::from(array::<4>(self.b(), field::DST))
    }

    /// True when the header checksum is right (the one's complement sum over the header is
    /// all ones).
    pub fn verify_checksum(&self) -> bool {
        internet_checksum(&self.b()[..self.header_len()]) == 0
    }

    /// The payload, up to the total length (Ethernet padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..self.total_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Recomputes the header checksum from scratch.
    pub fn fill_checksum(&mut self) {
        let header_len = self.header_len();
        let b = self.buffer.as_mut();
        b[field::CHECKSUM..field::CHECKSUM + 2].fill(0);
        let sum = internet_checksum(&b[..header_len]);
        b[field::CHECKSUM..field::CHECKSUM + 2].copy_from_slice(&sum.to_be_bytes());
    }

    /// Rewrites the TOS byte and patches the checksum incrementally (RFC 1624).
    pub fn set_tos(&mut self, tos: u8) {
        set_tos_in_header(self.buffer.as_mut(), tos);
    }
}

/// Checks the fixed header `h` of a packet at `offset` in a frame of `frame_len` bytes:
/// version 4, IHL at least 5, total length covering the header and within the frame.
/// Returns (header length, total length).
#[inline(always)]
pub(crate) fn check_header(
    h: &[u8; HEADER_LEN],
    offset: usize,
    frame_len: usize,
) -> Result<(usize, usize), ParseError> {
    if h[field::VER_IHL] >> 4 != 4 {
        return Err(invalid(Field::Ipv4Version, usize::from(h[0] >> 4)));
    }
    let header_len = usize::from(h[field::VER_IHL] & 0x0f) * 4;
    if header_len < HEADER_LEN {
        return Err(invalid(Field::Ipv4HeaderLength, header_len / 4));
    }
    let total_len = usize::from(be16([h[field::LENGTH], h[field::LENGTH + 1]]));
    if total_len < header_len {
        return Err(invalid(Field::Ipv4TotalLength, total_len));
    }
    if frame_len - offset < total_len {
        return Err(truncated(Layer::Ipv4, offset, total_len, frame_len));
    }
    Ok((header_len, total_len))
}

/// Rewrites the TOS byte of the IPv4 header at the start of `header` (at least 12 bytes)
/// and updates its checksum incrementally.
///
/// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), over the 16-bit word that holds the TOS
/// (version/IHL in its high byte). This form never produces the -0 (0xffff → 0x0000)
/// ambiguity of RFC 1141's eqn. 2.
#[inline]
pub(crate) fn set_tos_in_header(header: &mut [u8], tos: u8) {
    let old_word = be16([header[field::VER_IHL], header[field::TOS]]);
    let new_word = be16([header[field::VER_IHL], tos]);
    let old_sum = be16([header[field::CHECKSUM], header[field::CHECKSUM + 1]]);
    let mut sum = u32::from(!old_sum) + u32::from(!old_word) + u32::from(new_word);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    header[field::TOS] = tos;
    header[field::CHECKSUM..field::CHECKSUM + 2].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// The Internet checksum (RFC 1071): the one's complement of the one's complement sum of
/// 16-bit big-endian words, an odd trailing byte padded with zero.
pub fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    let mut chunks = data.chunks_exact(2);
    for pair in &mut chunks {
        sum += u64::from(be16([pair[0], pair[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    fold_checksum(sum)
}

/// The one's-complement checksum of 16-bit words whose plain sum is `sum`.
#[inline]
fn fold_checksum(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The freely chosen fields of an IPv4 header without options. Length, protocol and
/// checksum are derived when emitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // src, dst, ecn: the names say it
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    /// DSCP, 0-63.
    pub dscp: u8,
    pub ecn: Ecn,
    /// Identification (RFC 791); RoCEv2 sets DF, so it never numbers fragments.
    pub ident: u16,
    /// Don't Fragment flag (RoCEv2 NICs set it).
    pub dont_frag: bool,
    /// Time to live.
    pub ttl: u8,
}

impl Ipv4Repr {
    /// Reads the free fields back from a checked packet.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Ipv4Repr {
        Ipv4Repr {
            src: packet.src(),
            dst: packet.dst(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            ttl: packet.ttl(),
        }
    }

    /// Writes a 20-byte header (no options) with the checksum into `buf`; returns 20.
    pub fn emit(
        &self,
        buf: &mut [u8],
        protocol: u8,
        payload_len: usize,
    ) -> Result<usize, BuildError> {
        need(buf, HEADER_LEN)?;
        let total = len16(Layer::Ipv4, payload_len + HEADER_LEN)?;
        let tos = (self.dscp << 2) | self.ecn as u8;
        let flags = if self.dont_frag { FLAG_DF } else { 0 };
        let (src, dst) = (u32::from(self.src), u32::from(self.dst));
        // The checksum of the fields' values, not of the bytes just written: reading
        // those back at once with wider loads than the stores that wrote them stalls the
        // CPU (no store forwarding), on every frame an endpoint sends.
        let words = [
            u32::from(be16([0x45, tos])),
            u32::from(total),
            u32::from(self.ident),
            u32::from(flags),
            u32::from(be16([self.ttl, protocol])),
            src >> 16,
            src & 0xffff,
            dst >> 16,
            dst & 0xffff,
        ];
        let sum = fold_checksum(words.iter().map(|&w| u64::from(w)).sum());
        let h = &mut buf[..HEADER_LEN];
        h[field::VER_IHL] = 0x45;
        h[field::TOS] = tos;
        h[field::LENGTH..field::LENGTH + 2].copy_from_slice(&total.to_be_bytes());
        h[field::IDENT..field::IDENT + 2].copy_from_slice(&self.ident.to_be_bytes());
        h[field::FLAGS_FRAG..field::FLAGS_FRAG + 2].copy_from_slice(&flags.to_be_bytes());
        h[field::TTL] = self.ttl;
        h[field::PROTOCOL] = protocol;
        h[field::CHECKSUM..field::CHECKSUM + 2].copy_from_slice(&sum.to_be_bytes());
        h[field::SRC..field::SRC + 4].copy_from_slice(&self.src.octets());
        h[field::DST..field::DST + 4].copy_from_slice(&self.dst.octets());
        debug_assert_eq!(internet_checksum(h), 0, "the header checks");
        Ok(HEADER_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 1071 section 3 example: words 0001 f203 f4f5 f6f7 sum to ddf2 (one's complement).
    #[test]
    fn checksum_matches_rfc1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(internet_checksum(&data), !0xddf2);
    }

    // A header from a real capture (roce_cnp_connectx4lx_1pkt.pcap) whose
    // checksum 0x9161 tshark reports as correct.
    const CNP_IP_HEADER: [u8; 20] = [
        0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11,
        0x01, 0x0a, 0x00, 0x12, 0x01,
    ];

    #[test]
    fn real_header_verifies_and_reads() {
        let p = Ipv4Packet::new_checked(&CNP_IP_HEADER[..]).err();
        // total length 60 > 20 bytes given: truncated, not a panic
        assert!(matches!(p, Some(ParseError::Truncated { needed: 60, .. })));
        let mut buf = CNP_IP_HEADER.to_vec();
        buf.resize(60, 0);
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.dscp(), 48);
        assert_eq!(p.ecn(), Ecn::Ect0);
        assert_eq!(p.src(), Ipv4Addr::new(10, 0, 17, 1));
        assert!(p.dont_frag());
        assert!(!p.is_fragment());
        assert_eq!(p.protocol(), PROTO_UDP);
    }

    #[test]
    fn emit_rebuilds_the_real_header_with_its_checksum() {
        let repr = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 17, 1),
            dst: Ipv4Addr::new(10, 0, 18, 1),
            dscp: 48,
            ecn: Ecn::Ect0,
            ident: 0x718c,
            dont_frag: true,
            ttl: 64,
        };
        let mut h = [0xffu8; HEADER_LEN];
        assert_eq!(repr.emit(&mut h, PROTO_UDP, 40).unwrap(), HEADER_LEN);
        assert_eq!(h, CNP_IP_HEADER);
    }

    #[test]
    fn incremental_update_equals_full_recompute() {
        let mut buf = CNP_IP_HEADER.to_vec();
        buf.resize(60, 0);
        for tos in 0..=255u8 {
            let mut p = Ipv4Packet::new_checked(buf.clone()).unwrap();
            p.set_tos(tos);
            let incremental = p.checksum();
            p.fill_checksum();
            assert_eq!(incremental, p.checksum(), "tos {tos:#04x}");
        }
    }

    #[test]
    fn rejects_bad_version_and_ihl() {
        let mut buf = CNP_IP_HEADER.to_vec();
        buf.resize(60, 0);
        buf[0] = 0x65;
        assert!(matches!(
            Ipv4Packet::new_checked(&buf[..]),
            Err(ParseError::Invalid {
                field: Field::Ipv4Version,
                ..
            })
        ));
        buf[0] = 0x44;
        assert!(matches!(
            Ipv4Packet::new_checked(&buf[..]),
            Err(ParseError::Invalid {
                field: Field::Ipv4HeaderLength,
                ..
            })
        ));
    }
}
