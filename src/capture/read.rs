//! Streaming reader for pcap (libpcap, microsecond or nanosecond) and pcapng files.

use super::{CaptureError, CaptureErrorKind, LINKTYPE_ETHERNET};
use crate::time::Nanos;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::ops::Range;
use std::path::Path;

/// Which of the two formats a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // Pcap, PcapNg: the names say it
pub enum Format {
    Pcap,
    PcapNg,
}

/// One captured frame, borrowed from the reader until the next call.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// The record's number in the capture, from 1, as tshark's `frame.number` counts: every
    /// packet record or block, those of skipped non-Ethernet interfaces included.
    pub number: u64,
    /// Capture timestamp, ns since the Unix epoch (any file resolution converted); `None`
    /// for a pcapng Simple Packet Block, which has none.
    pub ts: Option<Nanos>,
    /// The frame as captured (possibly cut at the snap length).
    pub data: &'a [u8],
    /// The frame's length on the wire.
    pub orig_len: u32,
    /// pcapng interface id (0 for pcap).
    pub interface: u32,
    /// Byte offset of the record or block in the file.
    pub offset: u64,
    /// pcapng packet comment, if any.
    pub comment: Option<&'a str>,
}

/// A pcapng interface, as its Interface Description Block describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// LINKTYPE_ value; frames of interfaces other than Ethernet (1) are skipped.
    pub link_type: u16,
    /// Snap length (0: no limit).
    pub snaplen: u32,
    /// `if_name`, if given.
    pub name: Option<String>,
    tsresol: TsResol,
    tsoffset_secs: i64,
}

/// Timestamp units per second: 10^n or 2^n (pcapng `if_tsresol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TsResol {
    Pow10(u8),
    Pow2(u8),
}

impl TsResol {
    fn to_nanos(self, units: u64) -> i128 {
        let units = i128::from(units);
        match self {
            TsResol::Pow10(e) if e <= 9 => units * 10i128.pow(u32::from(9 - e)),
            TsResol::Pow10(e) => units / 10i128.pow(u32::from(e - 9)),
            TsResol::Pow2(e) => (units * 1_000_000_000) >> e,
        }
    }
}

enum State {
    Pcap {
        big_endian: bool,
        nanos: bool,
        snaplen: u32,
    },
    PcapNg {
        big_endian: bool,
        interfaces: Vec<Interface>,
    },
}

/// Reads frames one at a time from a pcap or pcapng stream, keeping track of the byte
/// offset so that every error says where the file went wrong.
pub struct CaptureReader<R: Read> {
    input: R,
    offset: u64,
    format: Format,
    state: State,
    block: Vec<u8>,
    comment: String,
    skipped_non_ethernet: u64,
    /// Packet records and blocks read so far, skipped ones included.
    records: u64,
}

/// Largest record or block accepted; anything larger is taken as corruption (the largest
/// standard snap length is 256 KiB).
const MAX_BLOCK: u64 = 16 << 20;

impl CaptureReader<BufReader<File>> {
    /// Opens a file and reads its header.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let file = File::open(path).map_err(|e| CaptureError {
            offset: 0,
            kind: CaptureErrorKind::Open(e),
        })?;
        CaptureReader::new(BufReader::with_capacity(1 << 16, file))
    }
}

impl<R: Read> CaptureReader<R> {
    /// Reads the file header (pcap) or the first section header (pcapng).
    pub fn new(mut input: R) -> Result<Self, CaptureError> {
        let mut magic = [0u8; 4];
        let got = read_full(&mut input, &mut magic).map_err(|e| io_error(0, e))?;
        if got == 0 {
            return Err(CaptureError {
                offset: 0,
                kind: CaptureErrorKind::Empty,
            });
        }
        if got < 4 {
            return Err(truncated(0, "the file header", 4, got as u64));
        }
        let mut reader = CaptureReader {
            input,
            offset: 0,
            format: Format::Pcap,
            state: State::Pcap {
                big_endian: false,
                nanos: false,
                snaplen: 0,
            },
            block: Vec::new(),
            comment: String::new(),
            skipped_non_ethernet: 0,
            records: 0,
        };
        match magic {
            [0x0a, 0x0d, 0x0d, 0x0a] => {
                reader.format = Format::PcapNg;
                reader.state = State::PcapNg {
                    big_endian: false,
                    interfaces: Vec::new(),
                };
                reader.read_section_header()?;
            }
            _ => reader.read_pcap_header(magic)?,
        }
        Ok(reader)
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// pcapng packets skipped because their interface is not Ethernet.
    pub fn skipped_non_ethernet(&self) -> u64 {
        self.skipped_non_ethernet
    }

    /// Bytes read so far: the offset of the next record or block.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next frame, `Ok(None)` at a clean end of file.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        match self.state {
            State::Pcap {
                big_endian,
                nanos,
                snaplen,
            } => self.next_pcap_record(big_endian, nanos, snaplen),
            State::PcapNg { .. } => self.next_pcapng_packet(),
        }
    }

    /// Reads the next `N` bytes: `None` at a clean end of file, an error naming `what` if
    /// the file ends part way.
    fn read_head<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<Option<[u8; N]>, CaptureError> {
        let start = self.offset;
        let mut head = [0u8; N];
        let got = read_full(&mut self.input, &mut head).map_err(|e| io_error(start, e))?;
        match got {
            0 => Ok(None),
            n if n < N => Err(truncated(start, what, N as u64, n as u64)),
            _ => Ok(Some(head)),
        }
    }

    fn read_pcap_header(&mut self, magic: [u8; 4]) -> Result<(), CaptureError> {
        let (big_endian, nanos) = match magic {
            [0xd4, 0xc3, 0xb2, 0xa1] => (false, false),
            [0x4d, 0x3c, 0xb2, 0xa1] => (false, true),
            [0xa1, 0xb2, 0xc3, 0xd4] => (true, false),
            [0xa1, 0xb2, 0x3c, 0x4d] => (true, true),
            other => {
                return Err(CaptureError {
                    offset: 0,
                    kind: CaptureErrorKind::BadMagic(other),
                });
            }
        };
        let mut rest = [0u8; 20];
        let got = read_full(&mut self.input, &mut rest).map_err(|e| io_error(0, e))?;
        if got < rest.len() {
            return Err(truncated(0, "the pcap file header", 24, 4 + got as u64));
        }
        self.offset = 24;
        let u16_at = |at: usize| endian_u16(big_endian, [rest[at], rest[at + 1]]);
        let u32_at = |at: usize| {
            endian_u32(
                big_endian,
                [rest[at], rest[at + 1], rest[at + 2], rest[at + 3]],
            )
        };
        let (major, minor) = (u16_at(0), u16_at(2));
        if major != 2 {
            return Err(corrupt(
                0,
                "pcap file header",
                format!("version {major}.{minor}; only 2.x is defined"),
            ));
        }
        let snaplen = u32_at(12);
        // The upper bits of the link-type field may carry FCS information (pcap-linktype(7)).
        let link_type = (u32_at(16) & 0xffff) as u16;
        if link_type != LINKTYPE_ETHERNET {
            return Err(CaptureError {
                offset: 20,
                kind: CaptureErrorKind::UnsupportedLinkType(link_type),
            });
        }
        self.state = State::Pcap {
            big_endian,
            nanos,
            snaplen,
        };
        Ok(())
    }

    fn next_pcap_record(
        &mut self,
        big_endian: bool,
        nanos: bool,
        snaplen: u32,
    ) -> Result<Option<Packet<'_>>, CaptureError> {
        let start = self.offset;
        let Some(header) = self.read_head::<16>("a pcap record header")? else {
            return Ok(None);
        };
        let word = |i: usize| {
            endian_u32(
                big_endian,
                [header[i], header[i + 1], header[i + 2], header[i + 3]],
            )
        };
        let (secs, frac, incl_len, orig_len) = (word(0), word(4), word(8), word(12));
        let limit = MAX_BLOCK.min(u64::from(snaplen.max(super::SNAPLEN)));
        if u64::from(incl_len) > limit {
            return Err(corrupt(
                start,
                "pcap record header",
                format!(
                    "captured length {incl_len} exceeds the largest record accepted, {limit} bytes (the file is probably damaged here)"
                ),
            ));
        }
        self.block.resize(incl_len as usize, 0);
        let got = read_full(&mut self.input, &mut self.block).map_err(|e| io_error(start, e))?;
        if got < self.block.len() {
            return Err(truncated(
                start,
                "a pcap record",
                16 + u64::from(incl_len),
                16 + got as u64,
            ));
        }
        self.offset += 16 + u64::from(incl_len);
        self.records += 1;
        let frac_ns = if nanos {
            u64::from(frac)
        } else {
            u64::from(frac) * 1_000
        };
        Ok(Some(Packet {
            number: self.records,
            ts: Some(Nanos(u64::from(secs) * 1_000_000_000 + frac_ns)),
            data: &self.block,
            orig_len: wire_length(orig_len, incl_len),
            interface: 0,
            offset: start,
            comment: None,
        }))
    }

    /// Reads a whole pcapng block into `self.block` (body only); returns its type.
    /// `Ok(None)` at a clean end of file.
    fn read_block(&mut self) -> Result<Option<u32>, CaptureError> {
        let start = self.offset;
        let Some(head) = self.read_head::<8>("a pcapng block header")? else {
            return Ok(None);
        };
        if head[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
            // A new section: its byte order is only known after the byte-order magic.
            self.offset += 4;
            self.read_section_header_after_type(start, [head[4], head[5], head[6], head[7]])?;
            return Ok(Some(0x0a0d_0d0a));
        }
        let big_endian = self.big_endian();
        let block_type = endian_u32(big_endian, [head[0], head[1], head[2], head[3]]);
        let total_len = endian_u32(big_endian, [head[4], head[5], head[6], head[7]]);
        self.read_block_body(start, total_len, 8)?;
        Ok(Some(block_type))
    }

    /// Reads the rest of a block whose first `already` bytes were consumed, checks the
    /// trailing length, and leaves the body (between header and trailer) in `self.block`.
    fn read_block_body(
        &mut self,
        start: u64,
        total_len: u32,
        already: u32,
    ) -> Result<(), CaptureError> {
        let total = u64::from(total_len);
        if total < 12 || total % 4 != 0 || total > MAX_BLOCK || total < u64::from(already) + 4 {
            return Err(corrupt(
                start,
                "pcapng block",
                format!(
                    "block total length {total_len} (must be a multiple of 4, at least 12, at most {MAX_BLOCK})"
                ),
            ));
        }
        let rest = (total - u64::from(already)) as usize;
        self.block.resize(rest, 0);
        let got = read_full(&mut self.input, &mut self.block).map_err(|e| io_error(start, e))?;
        if got < rest {
            return Err(truncated(
                start,
                "a pcapng block",
                total,
                u64::from(already) + got as u64,
            ));
        }
        let t = &self.block[rest - 4..];
        let trailer = endian_u32(self.big_endian(), [t[0], t[1], t[2], t[3]]);
        if trailer != total_len {
            return Err(corrupt(
                start,
                "pcapng block",
                format!("leading length {total_len} and trailing length {trailer} differ"),
            ));
        }
        self.block.truncate(rest - 4);
        self.offset = start + total;
        Ok(())
    }

    fn big_endian(&self) -> bool {
        match &self.state {
            State::PcapNg { big_endian, .. } | State::Pcap { big_endian, .. } => *big_endian,
        }
    }

    fn read_section_header(&mut self) -> Result<(), CaptureError> {
        let mut len = [0u8; 4];
        let got = read_full(&mut self.input, &mut len).map_err(|e| io_error(0, e))?;
        if got < 4 {
            return Err(truncated(
                0,
                "the pcapng section header",
                12,
                4 + got as u64,
            ));
        }
        self.offset = 4;
        self.read_section_header_after_type(0, len)
    }

    /// Reads a Section Header Block after its type: the length is in `len_bytes`, whose
    /// byte order the byte-order magic that follows decides.
    fn read_section_header_after_type(
        &mut self,
        start: u64,
        len_bytes: [u8; 4],
    ) -> Result<(), CaptureError> {
        let mut bom = [0u8; 4];
        let got = read_full(&mut self.input, &mut bom).map_err(|e| io_error(start, e))?;
        if got < 4 {
            return Err(truncated(
                start,
                "a pcapng section header",
                12,
                8 + got as u64,
            ));
        }
        let big_endian = match bom {
            [0x4d, 0x3c, 0x2b, 0x1a] => false,
            [0x1a, 0x2b, 0x3c, 0x4d] => true,
            other => {
                return Err(corrupt(
                    start,
                    "pcapng section header",
                    format!(
                        "byte-order magic {other:02x?}, expected 1a2b3c4d in either byte order"
                    ),
                ));
            }
        };
        self.state = State::PcapNg {
            big_endian,
            interfaces: Vec::new(),
        };
        let total_len = endian_u32(big_endian, len_bytes);
        if total_len < 28 {
            return Err(corrupt(
                start,
                "pcapng section header",
                format!("block of {total_len} bytes; a section header needs at least 28"),
            ));
        }
        self.read_block_body(start, total_len, 12)?;
        let major = self
            .block
            .get(..2)
            .map(|b| endian_u16(big_endian, [b[0], b[1]]));
        if major != Some(1) {
            return Err(corrupt(
                start,
                "pcapng section header",
                format!("major version {major:?}; only 1 is defined"),
            ));
        }
        Ok(())
    }

    fn next_pcapng_packet(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        loop {
            let start = self.offset;
            let Some(block_type) = self.read_block()? else {
                return Ok(None);
            };
            match block_type {
                1 => self.read_interface(start)?,
                // Enhanced Packet Block, Obsolete Packet Block, Simple Packet Block.
                6 | 2 | 3 => {
                    let State::PcapNg {
                        big_endian,
                        interfaces,
                    } = &self.state
                    else {
                        return Ok(None); // pcapng blocks come only in the pcapng state
                    };
                    let p =
                        packet_from_block(*big_endian, interfaces, &self.block, start, block_type)?;
                    self.records += 1;
                    if p.link_type != LINKTYPE_ETHERNET {
                        // Another interface of the capture (say `any`): skip its frames,
                        // keep reading the Ethernet ones.
                        self.skipped_non_ethernet += 1;
                        continue;
                    }
                    self.comment.clear();
                    if let Some(c) = p.comment.clone() {
                        self.comment
                            .push_str(&String::from_utf8_lossy(&self.block[c]));
                    }
                    return Ok(Some(Packet {
                        number: self.records,
                        ts: p.ts,
                        data: &self.block[p.data],
                        orig_len: p.orig_len,
                        interface: p.interface,
                        offset: start,
                        comment: p.comment.map(|_| self.comment.as_str()),
                    }));
                }
                // Section headers were handled by read_block; name resolution, statistics,
                // secrets and custom blocks carry no frames.
                _ => {}
            }
        }
    }

    fn read_interface(&mut self, start: u64) -> Result<(), CaptureError> {
        let big_endian = self.big_endian();
        let b = &self.block;
        if b.len() < 8 {
            return Err(corrupt(
                start,
                "pcapng interface description",
                format!("body of {} bytes, at least 8 needed", b.len()),
            ));
        }
        let mut iface = Interface {
            link_type: endian_u16(big_endian, [b[0], b[1]]),
            snaplen: endian_u32(big_endian, [b[4], b[5], b[6], b[7]]),
            name: None,
            tsresol: TsResol::Pow10(6),
            tsoffset_secs: 0,
        };
        for (code, range) in options(big_endian, &b[8..], start, "pcapng interface option")? {
            let value = &b[8 + range.start..8 + range.end];
            match (code, value.len()) {
                (2, _) => iface.name = Some(String::from_utf8_lossy(value).into_owned()),
                (9, 1) => {
                    let v = value[0];
                    iface.tsresol = if v & 0x80 != 0 {
                        TsResol::Pow2(v & 0x7f)
                    } else {
                        TsResol::Pow10(v)
                    };
                    if matches!(iface.tsresol, TsResol::Pow10(e) if e > 30) {
                        return Err(corrupt(
                            start,
                            "pcapng interface option",
                            format!("if_tsresol 10^-{v} is finer than any clock"),
                        ));
                    }
                }
                (14, 8) => {
                    let bytes: [u8; 8] = value.try_into().unwrap_or_default();
                    iface.tsoffset_secs = if big_endian {
                        i64::from_be_bytes(bytes)
                    } else {
                        i64::from_le_bytes(bytes)
                    };
                }
                _ => {}
            }
        }
        if let State::PcapNg { interfaces, .. } = &mut self.state {
            interfaces.push(iface);
        }
        Ok(())
    }

    /// The interfaces of the current pcapng section (empty for pcap).
    pub fn interfaces(&self) -> &[Interface] {
        match &self.state {
            State::PcapNg { interfaces, .. } => interfaces,
            State::Pcap { .. } => &[],
        }
    }
}

/// Where a packet block's parts lie in its body.
struct BlockPacket {
    interface: u32,
    link_type: u16,
    ts: Option<Nanos>,
    data: Range<usize>,
    orig_len: u32,
    comment: Option<Range<usize>>,
}

/// Decodes an enhanced (6), obsolete (2) or simple (3) packet block body `b`.
fn packet_from_block(
    be: bool,
    interfaces: &[Interface],
    b: &[u8],
    start: u64,
    block_type: u32,
) -> Result<BlockPacket, CaptureError> {
    let u32_at = |at: usize| endian_u32(be, [b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let what = match block_type {
        6 => "pcapng enhanced packet block",
        2 => "pcapng obsolete packet block",
        _ => "pcapng simple packet block",
    };
    let fixed = if block_type == 3 { 4 } else { 20 };
    if b.len() < fixed {
        return Err(corrupt(
            start,
            what,
            format!("body of {} bytes, at least {fixed} needed", b.len()),
        ));
    }
    let (interface, ts_units, caplen, orig_len) = match block_type {
        3 => {
            let orig_len = u32_at(0);
            let snap = interfaces.first().map_or(0, |i| i.snaplen);
            let mut caplen = orig_len.min((b.len() - 4) as u32);
            if snap != 0 {
                caplen = caplen.min(snap);
            }
            (0, None, caplen, orig_len)
        }
        2 => {
            let if_id = u32::from(endian_u16(be, [b[0], b[1]]));
            let ts = (u64::from(u32_at(4)) << 32) | u64::from(u32_at(8));
            (if_id, Some(ts), u32_at(12), u32_at(16))
        }
        _ => {
            let ts = (u64::from(u32_at(4)) << 32) | u64::from(u32_at(8));
            (u32_at(0), Some(ts), u32_at(12), u32_at(16))
        }
    };
    let Some(iface) = interfaces.get(interface as usize) else {
        return Err(corrupt(
            start,
            what,
            format!(
                "packet on interface {interface}, but the section describes {} interface(s)",
                interfaces.len()
            ),
        ));
    };
    let padded_end = fixed + (caplen as usize).div_ceil(4) * 4;
    if padded_end > b.len() && block_type != 3 {
        return Err(corrupt(
            start,
            what,
            format!(
                "captured length {caplen} does not fit in a body of {} bytes",
                b.len()
            ),
        ));
    }
    let ts = ts_units.map(|units| {
        let ns = iface.tsresol.to_nanos(units) + i128::from(iface.tsoffset_secs) * 1_000_000_000;
        Nanos(ns.clamp(0, i128::from(u64::MAX)) as u64)
    });
    let mut comment = None;
    if block_type != 3 {
        let opts_at = padded_end.min(b.len());
        for (code, value) in options(be, &b[opts_at..], start, what)? {
            if code == 1 {
                comment = Some(opts_at + value.start..opts_at + value.end);
            }
        }
    }
    Ok(BlockPacket {
        interface,
        link_type: iface.link_type,
        ts,
        data: fixed..fixed + caplen as usize,
        orig_len: wire_length(orig_len, caplen),
        comment,
    })
}

/// A record's length on the wire: its original length, or its captured length where a
/// writer put a smaller original one (it cannot have lost bytes it captured; taking the
/// captured length keeps "cut short" meaning original > captured).
fn wire_length(orig_len: u32, captured: u32) -> u32 {
    orig_len.max(captured)
}

/// Splits a pcapng option list into (code, value range in `b`) pairs, stopping at
/// opt_endofopt.
fn options(
    big_endian: bool,
    b: &[u8],
    start: u64,
    what: &'static str,
) -> Result<Vec<(u16, Range<usize>)>, CaptureError> {
    let mut out = Vec::new();
    let mut at = 0;
    while b.len() - at >= 4 {
        let code = endian_u16(big_endian, [b[at], b[at + 1]]);
        let len = usize::from(endian_u16(big_endian, [b[at + 2], b[at + 3]]));
        if code == 0 {
            break;
        }
        if at + 4 + len > b.len() {
            return Err(corrupt(
                start,
                what,
                format!("option {code} of {len} bytes runs past the end of its block"),
            ));
        }
        out.push((code, at + 4..at + 4 + len));
        at = (at + 4 + len.div_ceil(4) * 4).min(b.len());
    }
    Ok(out)
}

fn endian_u16(big_endian: bool, b: [u8; 2]) -> u16 {
    if big_endian {
        u16::from_be_bytes(b)
    } else {
        u16::from_le_bytes(b)
    }
}

fn endian_u32(big_endian: bool, b: [u8; 4]) -> u32 {
    if big_endian {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn io_error(offset: u64, e: io::Error) -> CaptureError {
    CaptureError {
        offset,
        kind: CaptureErrorKind::Io(e),
    }
}

fn truncated(offset: u64, what: &'static str, needed: u64, available: u64) -> CaptureError {
    CaptureError {
        offset,
        kind: CaptureErrorKind::Truncated {
            what,
            needed,
            available,
        },
    }
}

fn corrupt(offset: u64, what: &'static str, detail: String) -> CaptureError {
    CaptureError {
        offset,
        kind: CaptureErrorKind::Corrupt { what, detail },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian microsecond pcap of one record: `data`, with `orig_len` as its
    /// original length.
    fn pcap(data: &[u8], orig_len: u32) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend(0xa1b2_c3d4u32.to_le_bytes());
        f.extend(2u16.to_le_bytes());
        f.extend(4u16.to_le_bytes());
        for word in [0u32, 0, 65535, 1] {
            f.extend(word.to_le_bytes());
        }
        for word in [1u32, 0, data.len() as u32, orig_len] {
            f.extend(word.to_le_bytes());
        }
        f.extend(data);
        f
    }

    #[test]
    fn an_original_length_below_the_captured_one_is_taken_as_the_captured_one() {
        let bytes = pcap(&[0xab; 100], 50);
        let mut r = CaptureReader::new(&bytes[..]).unwrap();
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!((p.data.len(), p.orig_len), (100, 100));
        // A record cut short keeps its original length.
        let bytes = pcap(&[0xab; 100], 1500);
        let mut r = CaptureReader::new(&bytes[..]).unwrap();
        assert_eq!(r.next_packet().unwrap().unwrap().orig_len, 1500);
    }
}
