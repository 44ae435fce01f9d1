//! Capture files: reading pcap and pcapng, writing pcap and pcapng.
//!
//! Written here rather than taken from a crate because rocelab needs three things together
//! that the pcap crates did not offer at once: the byte offset of every record (errors must
//! name where a file is truncated or corrupt), pcapng timestamps honouring `if_tsresol`
//! and `if_tsoffset` exactly, and pcapng output with named interfaces and packet comments.

mod read;
mod write;

pub use read::{CaptureReader, Format, Packet};
pub use write::{PcapNgWriter, PcapWriter};

use std::fmt;

/// LINKTYPE_ETHERNET: the only link type rocelab reads and writes.
pub const LINKTYPE_ETHERNET: u16 = 1;
/// Snap length written into headers: the largest frame libpcap captures by default.
pub const SNAPLEN: u32 = 262_144;

/// Where reading a capture failed, and why.
#[derive(Debug, thiserror::Error)]
pub struct CaptureError {
    /// Byte offset in the file of the header, record or block that failed.
    pub offset: u64,
    /// What went wrong.
    pub kind: CaptureErrorKind,
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            CaptureErrorKind::Open(_) | CaptureErrorKind::Empty => write!(f, "{}", self.kind),
            kind => write!(f, "at byte offset {}: {kind}", self.offset),
        }
    }
}

/// What went wrong reading a capture.
#[derive(Debug, thiserror::Error)]
pub enum CaptureErrorKind {
    /// The file could not be opened.
    #[error("cannot open it: {0}")]
    Open(std::io::Error),
    /// The operating system failed the read.
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    /// The file has no bytes at all.
    #[error("the file is empty")]
    Empty,
    /// The file does not start with a pcap or pcapng magic number.
    #[error(
        "not a pcap or pcapng file: it starts with {0:02x?}; pcap starts with a1b2c3d4 or a1b23c4d (either byte order), pcapng with 0a0d0d0a"
    )]
    BadMagic([u8; 4]),
    /// The file ends in the middle of a header, record or block.
    #[error("file ends inside {what}: {needed} bytes needed, {available} present")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes the file still had.
        available: u64,
    },
    /// A length, count or option does not make sense.
    #[error("corrupt {what}: {detail}")]
    Corrupt {
        /// What was being read.
        what: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// The capture is not of Ethernet frames.
    #[error(
        "link type {0} ({name}) is not supported: rocelab reads Ethernet captures (link type 1); capture on an Ethernet interface rather than 'any'",
        name = link_type_name(*.0)
    )]
    UnsupportedLinkType(u16),
}

fn link_type_name(link_type: u16) -> &'static str {
    match link_type {
        0 => "BSD loopback",
        1 => "Ethernet",
        101 => "raw IP",
        105 => "802.11",
        113 => "Linux cooked SLL",
        127 => "802.11 radiotap",
        228 => "raw IPv4",
        229 => "raw IPv6",
        276 => "Linux cooked SLL2",
        _ => "unknown",
    }
}

/// The capture file format.
impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Pcap => "pcap",
            Format::PcapNg => "pcapng",
        })
    }
}
