//! TCP (RFC 9293) header view and options: MSS, window scale and timestamps (RFC 7323),
//! SACK-permitted and SACK blocks (RFC 2018); ECE and CWR (RFC 3168) for DCTCP; the
//! checksum over the IPv4 pseudo-header. iWARP runs MPA over this.

use super::iwarp::{IwarpBuildError, IwarpLayer, IwarpParseError};
use super::{array, be16, need};
use bitflags::bitflags;
use std::net::Ipv4Addr;

/// Length of the TCP header without options.
pub const HEADER_LEN: usize = 20;
/// Most option bytes a header holds (data offset 15 words, 60 bytes).
pub const MAX_OPTIONS_LEN: usize = 40;
/// Most SACK blocks one option holds (RFC 2018: 4 × 8 + 2 ≤ 40).
pub const MAX_SACK_BLOCKS: usize = 4;

mod field {
    pub(super) const SRC_PORT: usize = 0;
    pub(super) const DST_PORT: usize = 2;
    pub(super) const SEQ: usize = 4;
    pub(super) const ACK: usize = 8;
    /// Data offset (bits 7-4); the low four bits are reserved (AccECN's AE is bit 0).
    pub(super) const DATA_OFFSET: usize = 12;
    pub(super) const FLAGS: usize = 13;
    pub(super) const WINDOW: usize = 14;
    pub(super) const CHECKSUM: usize = 16;
    pub(super) const URGENT: usize = 18;
}

/// Option kinds (IANA "TCP Option Kind Numbers").
mod kind {
    pub(super) const END: u8 = 0;
    pub(super) const NOP: u8 = 1;
    pub(super) const MSS: u8 = 2;
    pub(super) const WINDOW_SCALE: u8 = 3;
    pub(super) const SACK_PERMITTED: u8 = 4;
    pub(super) const SACK: u8 = 5;
    pub(super) const TIMESTAMPS: u8 = 8;
}

bitflags! {
    /// The eight flag bits of byte 13.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct TcpFlags: u8 {
        /// No more data from the sender.
        const FIN = 0x01;
        /// Synchronise sequence numbers.
        const SYN = 0x02;
        /// Reset the connection.
        const RST = 0x04;
        /// Push.
        const PSH = 0x08;
        /// The acknowledgment number is valid.
        const ACK = 0x10;
        /// The urgent pointer is valid.
        const URG = 0x20;
        /// ECN-Echo (RFC 3168): the receiver saw CE; DCTCP echoes each CE this way.
        const ECE = 0x40;
        /// Congestion Window Reduced (RFC 3168).
        const CWR = 0x80;
    }
}

/// A view of a TCP segment whose data offset has been checked.
#[derive(Debug, Clone)]
pub struct TcpSegment<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpSegment<T> {
    /// Wraps `buffer` (the IP payload) after checking that the header, with its options,
    /// fits in it.
    pub fn new_checked(buffer: T) -> Result<Self, IwarpParseError> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(IwarpParseError::truncated(
                IwarpLayer::Tcp,
                0,
                HEADER_LEN,
                b.len(),
            ));
        }
        let header_len = usize::from(b[field::DATA_OFFSET] >> 4) * 4;
        if header_len < HEADER_LEN {
            return Err(IwarpParseError::invalid(
                IwarpLayer::Tcp,
                "data offset",
                header_len / 4,
                "must be at least 5 (20 bytes)",
            ));
        }
        if b.len() < header_len {
            return Err(IwarpParseError::truncated(
                IwarpLayer::Tcp,
                0,
                header_len,
                b.len(),
            ));
        }
        Ok(TcpSegment { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    #[allow(missing_docs)]
    pub fn src_port(&self) -> u16 {
        be16(array(self.b(), field::SRC_PORT))
    }

    #[allow(missing_docs)]
    pub fn dst_port(&self) -> u16 {
        be16(array(self.b(), field::DST_PORT))
    }

    /// Sequence number of the first payload byte (of the SYN itself on a SYN).
    pub fn seq(&self) -> u32 {
        u32::from_be_bytes(array(self.b(), field::SEQ))
    }

    /// Acknowledgment number: the next byte the sender expects.
    pub fn ack(&self) -> u32 {
        u32::from_be_bytes(array(self.b(), field::ACK))
    }

    /// Header length in bytes, options included (data offset × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[field::DATA_OFFSET] >> 4) * 4
    }

    /// The flag bits.
    pub fn flags(&self) -> TcpFlags {
        TcpFlags::from_bits_retain(self.b()[field::FLAGS])
    }

    /// Receive window, before scaling.
    pub fn window(&self) -> u16 {
        be16(array(self.b(), field::WINDOW))
    }

    /// Checksum as stored.
    pub fn checksum(&self) -> u16 {
        be16(array(self.b(), field::CHECKSUM))
    }

    /// Urgent pointer.
    pub fn urgent(&self) -> u16 {
        be16(array(self.b(), field::URGENT))
    }

    /// The option bytes, as stored.
    pub fn options(&self) -> &[u8] {
        &self.b()[HEADER_LEN..self.header_len()]
    }

    /// The payload: everything after the header (the caller cuts the IP packet at its
    /// total length).
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..]
    }

    /// True when the checksum over the IPv4 pseudo-header and the segment is right.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        checksum_v4(src, dst, self.b()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpSegment<T> {
    /// Recomputes the checksum over the IPv4 pseudo-header and the whole segment.
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let b = self.buffer.as_mut();
        b[field::CHECKSUM..field::CHECKSUM + 2].fill(0);
        let sum = checksum_v4(src, dst, b);
        b[field::CHECKSUM..field::CHECKSUM + 2].copy_from_slice(&sum.to_be_bytes());
    }
}

/// The Internet checksum (RFC 1071) of the IPv4 pseudo-header (RFC 9293 3.1: source,
/// destination, zero, protocol 6, TCP length) followed by `segment`.
pub fn checksum_v4(src: Ipv4Addr, dst: Ipv4Addr, segment: &[u8]) -> u16 {
    let (s, d) = (u32::from(src), u32::from(dst));
    let mut sum = u64::from(s >> 16) + u64::from(s & 0xffff);
    sum += u64::from(d >> 16) + u64::from(d & 0xffff);
    sum += u64::from(super::ipv4::PROTO_TCP) + segment.len() as u64;
    let mut pairs = segment.chunks_exact(2);
    for pair in &mut pairs {
        sum += u64::from(be16([pair[0], pair[1]]));
    }
    if let [last] = pairs.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The TSval and TSecr of the timestamps option (RFC 7323).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timestamps {
    /// TSval: the sender's clock.
    pub value: u32,
    /// TSecr: the latest TSval received.
    pub echo: u32,
}

/// Up to four SACK blocks (RFC 2018), each the left edge and the right edge (the first
/// sequence number past the block) of bytes received out of order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackBlocks {
    blocks: [(u32, u32); MAX_SACK_BLOCKS],
    len: u8,
}

impl SackBlocks {
    /// The blocks of `blocks`, or `None` for more than four.
    pub fn new(blocks: &[(u32, u32)]) -> Option<SackBlocks> {
        let mut out = SackBlocks::default();
        for &b in blocks {
            out.push(b).ok()?;
        }
        Some(out)
    }

    /// Adds a block; fails when four are already held.
    pub fn push(&mut self, block: (u32, u32)) -> Result<(), (u32, u32)> {
        let Some(slot) = self.blocks.get_mut(usize::from(self.len)) else {
            return Err(block);
        };
        *slot = block;
        self.len += 1;
        Ok(())
    }

    /// The blocks, most recent first as RFC 2018 4 asks of a receiver.
    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..usize::from(self.len)]
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True without blocks.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The options rocelab reads and writes. Unknown options are skipped when parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpOptions {
    /// Maximum segment size (SYN only).
    pub mss: Option<u16>,
    /// Window scale shift count (SYN only; RFC 7323 caps its use at 14).
    pub window_scale: Option<u8>,
    /// SACK-permitted (SYN only).
    pub sack_permitted: bool,
    /// Timestamps.
    pub timestamps: Option<Timestamps>,
    /// SACK blocks.
    pub sack: SackBlocks,
}

impl TcpOptions {
    /// Reads the option bytes of a header. Unknown kinds are skipped by their length;
    /// a known kind of the wrong length, or a length past the end, is an error.
    pub fn parse(bytes: &[u8]) -> Result<TcpOptions, IwarpParseError> {
        let mut out = TcpOptions::default();
        let mut at = 0;
        while at < bytes.len() {
            let k = bytes[at];
            if k == kind::END {
                break;
            }
            if k == kind::NOP {
                at += 1;
                continue;
            }
            let len = usize::from(*bytes.get(at + 1).ok_or_else(|| {
                IwarpParseError::truncated(IwarpLayer::TcpOption, at, 2, bytes.len())
            })?);
            if len < 2 {
                return Err(IwarpParseError::invalid(
                    IwarpLayer::TcpOption,
                    "length",
                    len,
                    "must be at least 2 (kind and length)",
                ));
            }
            let body = bytes.get(at + 2..at + len).ok_or_else(|| {
                IwarpParseError::truncated(IwarpLayer::TcpOption, at, len, bytes.len())
            })?;
            out.read_one(k, body)?;
            at += len;
        }
        Ok(out)
    }

    fn read_one(&mut self, k: u8, body: &[u8]) -> Result<(), IwarpParseError> {
        let wrong = |rule| {
            Err(IwarpParseError::invalid(
                IwarpLayer::TcpOption,
                "length",
                body.len() + 2,
                rule,
            ))
        };
        match k {
            kind::MSS => match body {
                [a, b] => self.mss = Some(be16([*a, *b])),
                _ => return wrong("of MSS must be 4"),
            },
            kind::WINDOW_SCALE => match body {
                [shift] => self.window_scale = Some(*shift),
                _ => return wrong("of window scale must be 3"),
            },
            kind::SACK_PERMITTED => match body {
                [] => self.sack_permitted = true,
                _ => return wrong("of SACK-permitted must be 2"),
            },
            kind::TIMESTAMPS => match body {
                [..] if body.len() == 8 => {
                    self.timestamps = Some(Timestamps {
                        value: u32::from_be_bytes(array(body, 0)),
                        echo: u32::from_be_bytes(array(body, 4)),
                    })
                }
                _ => return wrong("of timestamps must be 10"),
            },
            kind::SACK => {
                if body.is_empty()
                    || !body.len().is_multiple_of(8)
                    || body.len() > 8 * MAX_SACK_BLOCKS
                {
                    return wrong("of SACK must be 2 + 8 × (1 to 4 blocks)");
                }
                let mut sack = SackBlocks::default();
                for b in body.chunks_exact(8) {
                    let edges = (
                        u32::from_be_bytes(array(b, 0)),
                        u32::from_be_bytes(array(b, 4)),
                    );
                    // At most four: the length was checked above.
                    let _ = sack.push(edges);
                }
                self.sack = sack;
            }
            _ => {}
        }
        Ok(())
    }

    /// Bytes `emit` writes: a multiple of 4, laid out as Linux lays them (MSS;
    /// SACK-permitted with timestamps, or NOPs before either; NOP and window scale;
    /// NOP NOP before SACK blocks).
    pub fn len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        n += match (self.sack_permitted, self.timestamps.is_some()) {
            (true, true) => 12,
            (false, true) => 12,
            (true, false) => 4,
            (false, false) => 0,
        };
        if self.window_scale.is_some() {
            n += 4;
        }
        if !self.sack.is_empty() {
            n += 4 + 8 * self.sack.len();
        }
        n
    }

    /// True when no option is set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the options into `buf`; returns their length ([`len`](Self::len)).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, IwarpBuildError> {
        let len = self.len();
        if len > MAX_OPTIONS_LEN {
            return Err(IwarpBuildError::TooLong {
                layer: IwarpLayer::TcpOption,
                what: "options",
                length: len,
                max: MAX_OPTIONS_LEN,
            });
        }
        need(buf, len)?;
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            buf[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        if let Some(mss) = self.mss {
            let m = mss.to_be_bytes();
            put(&[kind::MSS, 4, m[0], m[1]]);
        }
        match (self.sack_permitted, self.timestamps) {
            (true, Some(_)) => put(&[kind::SACK_PERMITTED, 2]),
            (false, Some(_)) => put(&[kind::NOP, kind::NOP]),
            (true, None) => put(&[kind::NOP, kind::NOP, kind::SACK_PERMITTED, 2]),
            (false, None) => {}
        }
        if let Some(ts) = self.timestamps {
            put(&[kind::TIMESTAMPS, 10]);
            put(&ts.value.to_be_bytes());
            put(&ts.echo.to_be_bytes());
        }
        if let Some(shift) = self.window_scale {
            put(&[kind::NOP, kind::WINDOW_SCALE, 3, shift]);
        }
        if !self.sack.is_empty() {
            put(&[kind::NOP, kind::NOP, kind::SACK, 2 + 8 * self.sack.len]);
            for (left, right) in self.sack.as_slice() {
                put(&left.to_be_bytes());
                put(&right.to_be_bytes());
            }
        }
        Ok(at)
    }
}

/// A TCP header as plain fields; the data offset and the checksum are derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpRepr {
    #[allow(missing_docs)]
    pub src_port: u16,
    #[allow(missing_docs)]
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number (meaningful with [`TcpFlags::ACK`]).
    pub ack: u32,
    /// Flags.
    pub flags: TcpFlags,
    /// Receive window, before scaling.
    pub window: u16,
    /// Urgent pointer (meaningful with [`TcpFlags::URG`]).
    pub urgent: u16,
    /// Options.
    pub options: TcpOptions,
}

impl TcpRepr {
    /// Reads a checked segment's header and options.
    pub fn parse<T: AsRef<[u8]>>(segment: &TcpSegment<T>) -> Result<TcpRepr, IwarpParseError> {
        Ok(TcpRepr {
            src_port: segment.src_port(),
            dst_port: segment.dst_port(),
            seq: segment.seq(),
            ack: segment.ack(),
            flags: segment.flags(),
            window: segment.window(),
            urgent: segment.urgent(),
            options: TcpOptions::parse(segment.options())?,
        })
    }

    /// Header length with options.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Writes the header into the start of `segment`, whose next `payload_len` bytes
    /// after the header already hold the payload, and fills the checksum over the
    /// pseudo-header, header and payload. Returns the header length.
    pub fn emit(
        &self,
        segment: &mut [u8],
        src: Ipv4Addr,
        dst: Ipv4Addr,
        payload_len: usize,
    ) -> Result<usize, IwarpBuildError> {
        let header_len = self.header_len();
        need(segment, header_len + payload_len)?;
        self.options.emit(&mut segment[HEADER_LEN..])?;
        let h = &mut segment[..HEADER_LEN];
        h[field::SRC_PORT..field::SRC_PORT + 2].copy_from_slice(&self.src_port.to_be_bytes());
        h[field::DST_PORT..field::DST_PORT + 2].copy_from_slice(&self.dst_port.to_be_bytes());
        h[field::SEQ..field::SEQ + 4].copy_from_slice(&self.seq.to_be_bytes());
        h[field::ACK..field::ACK + 4].copy_from_slice(&self.ack.to_be_bytes());
        h[field::DATA_OFFSET] = ((header_len / 4) as u8) << 4;
        h[field::FLAGS] = self.flags.bits();
        h[field::WINDOW..field::WINDOW + 2].copy_from_slice(&self.window.to_be_bytes());
        h[field::URGENT..field::URGENT + 2].copy_from_slice(&self.urgent.to_be_bytes());
        TcpSegment {
            buffer: &mut segment[..header_len + payload_len],
        }
        .fill_checksum(src, dst);
        Ok(header_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A Linux SYN (10.0.0.1:42424 -> 10.0.0.2:80) as the kernel lays it out: MSS 1460,
    // SACK-permitted, timestamps, NOP, window scale 7; checksum left 0 here, computed
    // by etherparse (an independent implementation) in the test.
    const SYN: [u8; 40] = [
        0xa5, 0xb8, 0x00, 0x50, 0x12, 0x34, 0x56, 0x78, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa,
        0xf0, 0x00, 0x00, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x00, 0x00,
        0x00, 0x64, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
    ];

    fn syn_repr() -> TcpRepr {
        TcpRepr {
            src_port: 42424,
            dst_port: 80,
            seq: 0x1234_5678,
            flags: TcpFlags::SYN,
            window: 64240,
            options: TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some(Timestamps {
                    value: 100,
                    echo: 0,
                }),
                ..TcpOptions::default()
            },
            ..TcpRepr::default()
        }
    }

    #[test]
    fn a_linux_syn_is_laid_out_as_linux_lays_it() {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut buf = [0u8; 40];
        assert_eq!(syn_repr().emit(&mut buf, a, b, 0).unwrap(), 40);
        let (theirs, _) = etherparse::TcpHeader::from_slice(&SYN).unwrap();
        let sum = theirs
            .calc_checksum_ipv4_raw(a.octets(), b.octets(), &[])
            .unwrap();
        let mut expect = SYN;
        expect[16..18].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(buf, expect);
        let seg = TcpSegment::new_checked(&buf[..]).unwrap();
        assert!(seg.verify_checksum(a, b));
        assert!(!seg.verify_checksum(a, Ipv4Addr::new(10, 0, 0, 3)));
        assert_eq!(TcpRepr::parse(&seg).unwrap(), syn_repr());
    }

    #[test]
    fn sack_blocks_round_trip_and_a_fifth_is_refused() {
        let mut sack = SackBlocks::new(&[(1, 2), (3, 4), (5, 6)]).unwrap();
        let repr = TcpRepr {
            flags: TcpFlags::ACK | TcpFlags::ECE,
            options: TcpOptions {
                timestamps: Some(Timestamps { value: 7, echo: 8 }),
                sack,
                ..TcpOptions::default()
            },
            ..TcpRepr::default()
        };
        // NOP NOP TS (12) + NOP NOP SACK with three blocks (28): the 40 bytes of room.
        assert_eq!(repr.options.len(), 40);
        let mut buf = [0u8; 60];
        let ip = Ipv4Addr::LOCALHOST;
        repr.emit(&mut buf, ip, ip, 0).unwrap();
        let seg = TcpSegment::new_checked(&buf[..]).unwrap();
        assert_eq!(TcpRepr::parse(&seg).unwrap(), repr);
        assert!(seg.flags().contains(TcpFlags::ECE));
        sack.push((7, 8)).unwrap();
        assert!(sack.push((9, 10)).is_err());
        let too_many = TcpRepr {
            options: TcpOptions {
                sack,
                ..repr.options
            },
            ..repr
        };
        assert!(matches!(
            too_many.emit(&mut [0u8; 80], ip, ip, 0),
            Err(IwarpBuildError::TooLong { length: 48, .. })
        ));
    }

    #[test]
    fn bad_offsets_and_options_are_errors_not_panics() {
        let mut buf = SYN;
        buf[12] = 0x40;
        assert!(matches!(
            TcpSegment::new_checked(&buf[..]),
            Err(IwarpParseError::Invalid { value: 4, .. })
        ));
        buf[12] = 0xb0;
        assert!(matches!(
            TcpSegment::new_checked(&buf[..]),
            Err(IwarpParseError::Truncated { needed: 44, .. })
        ));
        // An MSS option of length 3, an option running past the end, a length of 1.
        for bad in [&[2u8, 3, 5, 0][..], &[8, 10, 0, 0], &[1, 1, 30, 1]] {
            assert!(TcpOptions::parse(bad).is_err(), "{bad:?}");
        }
        // Unknown kinds are skipped; END stops.
        let opts = TcpOptions::parse(&[30, 4, 9, 9, 2, 4, 0x23, 0x28, 0, 77]).unwrap();
        assert_eq!(opts.mss, Some(9000));
    }
}
