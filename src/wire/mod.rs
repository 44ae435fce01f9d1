//! Wire formats: zero-copy views over frame bytes, plain `Repr` structs that parse from and
//! emit into them, and the one hot-path parse that turns a frame into a [`FrameMeta`].
//!
//! Every parser here is total: any byte string yields a value, a typed [`ParseError`], or
//! "not RoCE" (`FrameMeta::is_roce() == false`). Nothing panics and nothing reads out of
//! bounds. Views follow smoltcp's shape: `new_checked` validates the length once, after
//! which getters cannot fail; setters exist only for `T: AsMut<[u8]>`.

pub mod bth;
pub mod cnp;
pub mod ddp;
pub mod ecn;
pub mod elide;
pub mod ethernet;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod icrc;
pub mod int;
pub mod ipv4;
pub mod ipv6;
pub mod iwarp;
pub mod iwarp_goodput;
pub mod meta;
pub mod mpa;
pub mod pfc;
pub mod roce;
pub mod tcp;
pub mod udp;
pub mod xth;

pub use bth::{Bth, BthRepr, Opcode};
pub use ecn::{CeMark, Ecn, mark_ce};
pub use ethernet::{EthernetFrame, EthernetRepr, MacAddr, VlanTag, ethertype};
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6Packet, Ipv6Repr};
pub use meta::{FrameMeta, MetaFlags, parse, parse_meta};
pub use pfc::{MacControl, PfcRepr, PrioritySet};
pub use roce::{IpRepr, RocePacket, RoceRepr};
pub use udp::{ROCEV2_PORT, UdpDatagram};
pub use xth::ExtHeaders;

use std::fmt;

/// The protocol layer a [`ParseError`] or [`BuildError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    /// Ethernet II header.
    Ethernet,
    /// IEEE 802.1Q tag.
    Vlan,
    /// IPv4 header or packet.
    Ipv4,
    /// IPv6 header or packet.
    Ipv6,
    /// IPv6 extension header (hop-by-hop, routing, fragment, destination options).
    Ipv6Extension,
    /// UDP header or datagram.
    Udp,
    /// InfiniBand Base Transport Header (with the ICRC behind the payload).
    Bth,
    /// InfiniBand extended transport headers (RETH, AETH, DETH, ImmDt, ...).
    ExtHeaders,
    /// MAC Control frame (802.3x PAUSE, 802.1Qbb PFC).
    MacControl,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Ethernet => "Ethernet",
            Layer::Vlan => "802.1Q tag",
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Ipv6Extension => "IPv6 extension header",
            Layer::Udp => "UDP",
            Layer::Bth => "BTH",
            Layer::ExtHeaders => "extended transport header",
            Layer::MacControl => "MAC Control",
        })
    }
}

/// A header field whose value can make a frame invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// IPv4 version nibble.
    Ipv4Version,
    /// IPv4 IHL (header length in 32-bit words).
    Ipv4HeaderLength,
    /// IPv4 total length.
    Ipv4TotalLength,
    /// IPv6 version nibble.
    Ipv6Version,
    /// UDP length (header + payload, at least 8).
    UdpLength,
    /// UDP length of a datagram to port 4791.
    RoceUdpLength,
    /// BTH TVer.
    BthTransportVersion,
    /// BTH PadCnt.
    BthPadCount,
}

impl Field {
    /// The layer the field belongs to.
    pub fn layer(self) -> Layer {
        match self {
            Field::Ipv4Version | Field::Ipv4HeaderLength | Field::Ipv4TotalLength => Layer::Ipv4,
            Field::Ipv6Version => Layer::Ipv6,
            Field::UdpLength | Field::RoceUdpLength => Layer::Udp,
            Field::BthTransportVersion | Field::BthPadCount => Layer::Bth,
        }
    }

    /// The field's name, as the standard names it.
    pub fn name(self) -> &'static str {
        match self {
            Field::Ipv4Version | Field::Ipv6Version => "version",
            Field::Ipv4HeaderLength => "IHL",
            Field::Ipv4TotalLength => "total length",
            Field::UdpLength | Field::RoceUdpLength => "length",
            Field::BthTransportVersion => "TVer",
            Field::BthPadCount => "PadCnt",
        }
    }

    /// What the standard allows.
    pub fn rule(self) -> &'static str {
        match self {
            Field::Ipv4Version => "must be 4 in a frame of EtherType 0x0800",
            Field::Ipv4HeaderLength => "must be at least 5 (20 bytes)",
            Field::Ipv4TotalLength => "must cover at least the header",
            Field::Ipv6Version => "must be 6 in a frame of EtherType 0x86DD",
            Field::UdpLength => "must be at least 8 (the header)",
            Field::RoceUdpLength => "on port 4791 must be at least 24 (UDP 8 + BTH 12 + ICRC 4)",
            Field::BthTransportVersion => "only transport header version 0 is defined",
            Field::BthPadCount => "must not exceed the payload",
        }
    }
}

/// Why a frame could not be parsed. Small (16 bytes) so that the hot-path `Result` stays
/// cheap to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A header or a length field points past the end of the bytes present.
    #[error("{layer} truncated: needs {needed} bytes at offset {offset}, only {available} present")]
    Truncated {
        /// Layer being parsed.
        layer: Layer,
        /// Offset of the layer in the frame.
        offset: u32,
        /// Bytes the layer needs from `offset`.
        needed: u32,
        /// Bytes present from `offset`.
        available: u32,
    },
    /// A field holds a value the standard does not allow.
    #[error("{} {} = {value} is invalid: {}", .field.layer(), .field.name(), .field.rule())]
    Invalid {
        /// Which field holds it; its `rule()` says what is allowed.
        field: Field,
        /// The value found.
        value: u32,
    },
}

/// Why a frame could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The caller's buffer is shorter than what is to be written.
    #[error("buffer of {available} bytes is too small for {needed} bytes")]
    BufferTooSmall {
        /// Bytes the frame needs.
        needed: usize,
        /// Bytes in the buffer.
        available: usize,
    },
    /// The frame would not fit the 16-bit length fields of IP or UDP.
    #[error("{layer} length {length} exceeds 65535 bytes")]
    TooLong {
        /// Layer whose length field overflows.
        layer: Layer,
        /// The length that does not fit.
        length: usize,
    },
    /// The extended headers given do not match what the opcode carries.
    #[error("BTH opcode {opcode:#04x} ({name}) {problem}")]
    HeadersMismatch {
        /// The BTH opcode byte.
        opcode: u8,
        /// The opcode's short name, as [`Opcode::name`](bth::Opcode::name) prints it.
        name: &'static str,
        /// What is missing or extra.
        problem: &'static str,
    },
}

/// A [`ParseError::Truncated`] for `layer` at `offset`, needing `needed` bytes of a frame
/// (or enclosing packet) that ends at `end`.
#[cold]
pub(crate) fn truncated(layer: Layer, offset: usize, needed: usize, end: usize) -> ParseError {
    let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    ParseError::Truncated {
        layer,
        offset: clamp(offset),
        needed: clamp(needed),
        available: clamp(end.saturating_sub(offset)),
    }
}

/// A [`ParseError::Invalid`].
#[cold]
pub(crate) fn invalid(field: Field, value: usize) -> ParseError {
    ParseError::Invalid {
        field,
        value: u32::try_from(value).unwrap_or(u32::MAX),
    }
}

/// Checks that a builder's buffer holds `needed` bytes.
pub(crate) fn need(buf: &[u8], needed: usize) -> Result<(), BuildError> {
    if buf.len() < needed {
        return Err(BuildError::BufferTooSmall {
            needed,
            available: buf.len(),
        });
    }
    Ok(())
}

/// A length for a 16-bit length field, or [`BuildError::TooLong`].
pub(crate) fn len16(layer: Layer, length: usize) -> Result<u16, BuildError> {
    u16::try_from(length).map_err(|_| BuildError::TooLong { layer, length })
}

#[inline(always)]
pub(crate) fn be16(b: [u8; 2]) -> u16 {
    u16::from_be_bytes(b)
}

#[inline(always)]
pub(crate) fn be24(b: [u8; 3]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

#[inline(always)]
pub(crate) fn put_be24(out: &mut [u8], value: u32) {
    out[..3].copy_from_slice(&value.to_be_bytes()[1..]);
}

/// Reads `N` bytes at `at`; the caller has checked the bounds (views after `new_checked`).
#[inline(always)]
pub(crate) fn array<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}
