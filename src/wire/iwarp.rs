//! Whole iWARP frames: Ethernet (optional tag) / IPv4 / TCP / MPA (a start frame or an
//! FPDU) / DDP / RDMAP / payload, built into a caller's buffer and parsed back into
//! those layers; and the errors of the iWARP layers.
//!
//! iWARP frames are IPv4 here; the RoCE frames' [`ParseError`] and [`BuildError`] are
//! kept for the Ethernet and IP layers and wrapped.

use super::ddp::{DdpRepr, RdmapOpcode, ReadRequest, TerminateControl};
use super::ethernet::{EthernetRepr, MIN_FRAME_LEN, MacAddr, VlanTag, ethertype};
use super::ipv4::{self, Ipv4Packet, Ipv4Repr};
use super::mpa::{self, Fpdu, MpaStartRepr};
use super::tcp::{TcpRepr, TcpSegment};
use super::{BuildError, ParseError, need};
use std::fmt;

/// The iWARP layer an [`IwarpParseError`] or [`IwarpBuildError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IwarpLayer {
    /// TCP header.
    Tcp,
    /// A TCP option.
    TcpOption,
    /// MPA Request or Reply frame.
    MpaStart,
    /// MPA FPDU or marker.
    Mpa,
    /// DDP header.
    Ddp,
    /// RDMAP message fields (Read Request, Terminate).
    Rdmap,
}

impl fmt::Display for IwarpLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IwarpLayer::Tcp => "TCP",
            IwarpLayer::TcpOption => "TCP option",
            IwarpLayer::MpaStart => "MPA start frame",
            IwarpLayer::Mpa => "MPA FPDU",
            IwarpLayer::Ddp => "DDP",
            IwarpLayer::Rdmap => "RDMAP",
        })
    }
}

/// Why bytes could not be read as an iWARP frame or one of its layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IwarpParseError {
    /// A header or a length field points past the end of the bytes present.
    #[error("{layer} truncated: needs {needed} bytes at offset {offset}, only {available} present")]
    Truncated {
        /// Layer being parsed.
        layer: IwarpLayer,
        /// Offset of the layer in the bytes given to its parser.
        offset: u32,
        /// Bytes the layer needs from `offset`.
        needed: u32,
        /// Bytes present from `offset`.
        available: u32,
    },
    /// A field holds a value the standard does not allow.
    #[error("{layer} {field} = {value} is invalid: {rule}")]
    Invalid {
        /// Layer of the field.
        layer: IwarpLayer,
        /// The field's name, as the standard names it.
        field: &'static str,
        /// The value found.
        value: u32,
        /// What the standard allows.
        rule: &'static str,
    },
    /// An FPDU whose CRC32c does not match its bytes.
    #[error("MPA CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Crc {
        /// The CRC in the FPDU.
        stored: u32,
        /// The CRC of its bytes.
        computed: u32,
    },
    /// The Ethernet or IPv4 layer.
    #[error(transparent)]
    Frame(#[from] ParseError),
}

impl IwarpParseError {
    /// A [`IwarpParseError::Truncated`] for `layer` at `offset`, needing `needed` bytes
    /// of bytes that end at `end`.
    #[cold]
    pub(crate) fn truncated(
        layer: IwarpLayer,
        offset: usize,
        needed: usize,
        end: usize,
    ) -> IwarpParseError {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        IwarpParseError::Truncated {
            layer,
            offset: clamp(offset),
            needed: clamp(needed),
            available: clamp(end.saturating_sub(offset)),
        }
    }

    /// An [`IwarpParseError::Invalid`].
    #[cold]
    pub(crate) fn invalid(
        layer: IwarpLayer,
        field: &'static str,
        value: usize,
        rule: &'static str,
    ) -> IwarpParseError {
        IwarpParseError::Invalid {
            layer,
            field,
            value: u32::try_from(value).unwrap_or(u32::MAX),
            rule,
        }
    }
}

/// Why an iWARP frame could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IwarpBuildError {
    /// The buffer, or an Ethernet or IPv4 length.
    #[error(transparent)]
    Frame(#[from] BuildError),
    /// A part longer than its length field or its standard allows.
    #[error("{layer} {what} of {length} bytes exceeds {max}")]
    TooLong {
        /// Layer of the part.
        layer: IwarpLayer,
        /// What is too long.
        what: &'static str,
        /// Its length.
        length: usize,
        /// The most allowed.
        max: usize,
    },
    /// The RDMAP fields given do not match the opcode.
    #[error("RDMAP opcode {opcode:?} {problem}")]
    Mismatch {
        /// The opcode.
        opcode: RdmapOpcode,
        /// What is missing or extra.
        problem: &'static str,
    },
}

/// A DDP segment in an FPDU, to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FpduRepr<'a> {
    /// DDP header with the RDMAP control byte.
    pub ddp: DdpRepr,
    /// The Read Request's fields: present exactly when the opcode is a Read Request.
    pub read_request: Option<ReadRequest>,
    /// The payload (data of a Write, Send or Read Response; a Terminate's control and
    /// headers).
    pub payload: &'a [u8],
    /// MPA CRC on (zero CRC otherwise).
    pub crc: bool,
    /// With markers on: the FPDU's distance in the TCP stream from the marker origin
    /// (the first FPDU this side sent). `None`: markers off.
    pub marker_offset: Option<u64>,
}

impl FpduRepr<'_> {
    fn ulpdu_len(&self) -> usize {
        let rr = if self.read_request.is_some() {
            super::ddp::READ_REQUEST_LEN
        } else {
            0
        };
        self.ddp.header_len() + rr + self.payload.len()
    }

    /// Bytes on the TCP stream: the FPDU with its markers.
    pub fn len(&self) -> usize {
        let bare = mpa::fpdu_len(self.ulpdu_len());
        match self.marker_offset {
            Some(offset) => mpa::with_markers_len(offset, bare),
            None => bare,
        }
    }

    /// Always false: an FPDU has at least its length field and CRC.
    pub fn is_empty(&self) -> bool {
        false
    }

    fn check(&self) -> Result<(), IwarpBuildError> {
        let opcode = self.ddp.opcode;
        let is_rr = opcode == RdmapOpcode::READ_REQUEST;
        if is_rr != self.read_request.is_some() {
            return Err(IwarpBuildError::Mismatch {
                opcode,
                problem: if is_rr {
                    "needs the Read Request's fields"
                } else {
                    "carries no Read Request fields"
                },
            });
        }
        let tagged = matches!(self.ddp.placement, super::ddp::Placement::Tagged { .. });
        if tagged != opcode.is_tagged() {
            return Err(IwarpBuildError::Mismatch {
                opcode,
                problem: if tagged {
                    "travels in an untagged segment"
                } else {
                    "travels in a tagged segment"
                },
            });
        }
        Ok(())
    }

    /// Writes the FPDU into `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, IwarpBuildError> {
        self.check()?;
        let ulpdu_len = self.ulpdu_len();
        if ulpdu_len > usize::from(u16::MAX) {
            return Err(IwarpBuildError::TooLong {
                layer: IwarpLayer::Mpa,
                what: "ULPDU",
                length: ulpdu_len,
                max: usize::from(u16::MAX),
            });
        }
        let len = self.len();
        need(buf, len)?;
        let write_ulpdu = |u: &mut [u8]| -> Result<(), IwarpBuildError> {
            let mut at = self.ddp.emit(u)?;
            if let Some(rr) = self.read_request {
                at += rr.emit(&mut u[at..])?;
            }
            u[at..at + self.payload.len()].copy_from_slice(self.payload);
            Ok(())
        };
        match self.marker_offset {
            None => {
                write_ulpdu(&mut buf[mpa::ULPDU_LENGTH_LEN..])?;
                mpa::emit_fpdu(buf, ulpdu_len, self.crc)
            }
            Some(offset) => {
                let mut ulpdu = vec![0u8; ulpdu_len];
                write_ulpdu(&mut ulpdu)?;
                mpa::emit_fpdu_with_markers(buf, &ulpdu, offset, self.crc)
            }
        }
    }
}

/// What a TCP segment of an iWARP connection carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpPayload<'a> {
    /// Nothing: a SYN, a pure ACK, a FIN.
    Empty,
    /// An MPA Request or Reply.
    Start(MpaStartRepr<'a>),
    /// One FPDU (iWARP NICs align one FPDU to one segment).
    Fpdu(FpduRepr<'a>),
}

impl TcpPayload<'_> {
    /// Bytes it takes in the segment.
    pub fn len(&self) -> usize {
        match self {
            TcpPayload::Empty => 0,
            TcpPayload::Start(s) => s.len(),
            TcpPayload::Fpdu(f) => f.len(),
        }
    }

    /// True for [`TcpPayload::Empty`].
    pub fn is_empty(&self) -> bool {
        matches!(self, TcpPayload::Empty)
    }
}

/// An iWARP frame to build. Lengths, the IPv4 and TCP checksums, the MPA pad and CRC
/// and the markers are derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IwarpRepr<'a> {
    /// Destination MAC.
    pub eth_dst: MacAddr,
    /// Source MAC.
    pub eth_src: MacAddr,
    /// 802.1Q tag, if any.
    pub vlan: Option<VlanTag>,
    /// IPv4 header fields (DSCP and ECN among them).
    pub ip: Ipv4Repr,
    /// TCP header fields and options.
    pub tcp: TcpRepr,
    /// What the segment carries.
    pub payload: TcpPayload<'a>,
}

impl IwarpRepr<'_> {
    fn eth(&self) -> EthernetRepr {
        EthernetRepr {
            dst: self.eth_dst,
            src: self.eth_src,
            vlan: self.vlan,
            ethertype: ethertype::IPV4,
        }
    }

    /// Length of the frame `emit` writes (at least the 60-byte Ethernet minimum).
    pub fn frame_len(&self) -> usize {
        let len =
            self.eth().header_len() + ipv4::HEADER_LEN + self.tcp.header_len() + self.payload.len();
        len.max(MIN_FRAME_LEN)
    }

    /// Writes the frame into the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, IwarpBuildError> {
        let frame_len = self.frame_len();
        need(buf, frame_len)?;
        let frame = &mut buf[..frame_len];
        let ip_at = self.eth().emit(frame)?;
        let tcp_at = ip_at + ipv4::HEADER_LEN;
        let data_at = tcp_at + self.tcp.header_len();
        let payload_len = match self.payload {
            TcpPayload::Empty => 0,
            TcpPayload::Start(s) => s.emit(&mut frame[data_at..])?,
            TcpPayload::Fpdu(f) => f.emit(&mut frame[data_at..])?,
        };
        let segment_len = self.tcp.header_len() + payload_len;
        self.ip
            .emit(&mut frame[ip_at..], ipv4::PROTO_TCP, segment_len)?;
        self.tcp
            .emit(&mut frame[tcp_at..], self.ip.src, self.ip.dst, payload_len)?;
        frame[data_at + payload_len..].fill(0);
        Ok(frame_len)
    }
}

/// An Ethernet / IPv4 / TCP frame, read down to its TCP payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IwarpFrame<'a> {
    /// Ethernet header (with the tag, if any).
    pub eth: EthernetRepr,
    /// IPv4 header fields.
    pub ip: Ipv4Repr,
    /// TCP header and options.
    pub tcp: TcpRepr,
    /// True when the TCP checksum is right.
    pub tcp_checksum_ok: bool,
    /// The TCP payload (up to the IPv4 total length; Ethernet padding cut).
    pub payload: &'a [u8],
}

impl<'a> IwarpFrame<'a> {
    /// Reads a frame; `Ok(None)` when it is not IPv4 carrying TCP (or is a fragment).
    pub fn parse(frame: &'a [u8]) -> Result<Option<IwarpFrame<'a>>, IwarpParseError> {
        let (eth, ip_at) = EthernetRepr::parse(frame)?;
        if eth.ethertype != ethertype::IPV4 {
            return Ok(None);
        }
        let ip = Ipv4Packet::new_checked(&frame[ip_at..])?;
        if ip.protocol() != ipv4::PROTO_TCP || ip.is_fragment() {
            return Ok(None);
        }
        let segment = TcpSegment::new_checked(ip.payload())?;
        let tcp = TcpRepr::parse(&segment)?;
        let tcp_checksum_ok = segment.verify_checksum(ip.src(), ip.dst());
        let start = ip_at + ip.header_len() + segment.header_len();
        Ok(Some(IwarpFrame {
            eth,
            ip: Ipv4Repr::parse(&ip),
            tcp,
            tcp_checksum_ok,
            payload: &frame[start..ip_at + ip.total_len()],
        }))
    }
}

/// A DDP segment read from an FPDU's ULPDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IwarpPacket<'a> {
    /// DDP header with the RDMAP control byte.
    pub ddp: DdpRepr,
    /// A Read Request's fields.
    pub read_request: Option<ReadRequest>,
    /// A Terminate's control field (its payload holds the rest).
    pub terminate: Option<TerminateControl>,
    /// The payload after the headers (a Read Request's fields excluded).
    pub payload: &'a [u8],
}

impl<'a> IwarpPacket<'a> {
    /// Reads the DDP segment an FPDU carried (its ULPDU).
    pub fn parse(ulpdu: &'a [u8]) -> Result<IwarpPacket<'a>, IwarpParseError> {
        let (ddp, at) = DdpRepr::parse(ulpdu)?;
        let rest = &ulpdu[at..];
        let mut packet = IwarpPacket {
            ddp,
            read_request: None,
            terminate: None,
            payload: rest,
        };
        if ddp.opcode == RdmapOpcode::READ_REQUEST {
            packet.read_request = Some(ReadRequest::parse(rest)?);
            packet.payload = &rest[super::ddp::READ_REQUEST_LEN..];
        } else if ddp.opcode == RdmapOpcode::TERMINATE {
            packet.terminate = Some(TerminateControl::parse(rest)?);
        }
        Ok(packet)
    }

    /// Reads an FPDU without markers at the start of a TCP payload and the DDP segment
    /// in it, checking the CRC when `crc` is on.
    pub fn parse_fpdu(
        tcp_payload: &'a [u8],
        crc: bool,
    ) -> Result<IwarpPacket<'a>, IwarpParseError> {
        let (fpdu, _) = Fpdu::parse(tcp_payload, crc)?;
        IwarpPacket::parse(fpdu.ulpdu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Ecn;
    use crate::wire::ddp::{Placement, queue};
    use crate::wire::tcp::{TcpFlags, TcpOptions, Timestamps};
    use std::net::Ipv4Addr;

    fn frame<'a>(payload: TcpPayload<'a>) -> IwarpRepr<'a> {
        IwarpRepr {
            eth_dst: MacAddr([2, 0, 0, 0, 0, 2]),
            eth_src: MacAddr([2, 0, 0, 0, 0, 1]),
            vlan: None,
            ip: Ipv4Repr {
                src: Ipv4Addr::new(198, 18, 0, 1),
                dst: Ipv4Addr::new(198, 18, 0, 2),
                dscp: 26,
                ecn: Ecn::Ect0,
                ident: 1,
                dont_frag: true,
                ttl: 64,
            },
            tcp: TcpRepr {
                src_port: 49152,
                dst_port: 4420,
                seq: 1000,
                ack: 2000,
                flags: TcpFlags::ACK | TcpFlags::PSH,
                window: 512,
                options: TcpOptions {
                    timestamps: Some(Timestamps { value: 1, echo: 2 }),
                    ..TcpOptions::default()
                },
                ..TcpRepr::default()
            },
            payload,
        }
    }

    fn write(payload: &[u8]) -> FpduRepr<'_> {
        FpduRepr {
            ddp: DdpRepr {
                last: true,
                ddp_version: 1,
                rdmap_version: 1,
                opcode: RdmapOpcode::WRITE,
                placement: Placement::Tagged {
                    stag: 0x100,
                    to: 0x7000,
                },
            },
            read_request: None,
            payload,
            crc: true,
            marker_offset: None,
        }
    }

    #[test]
    fn a_write_frame_has_every_layer_where_the_rfcs_put_it() {
        let data = [0x5au8; 4096];
        let repr = frame(TcpPayload::Fpdu(write(&data)));
        let mut buf = vec![0u8; 5000];
        let n = repr.emit(&mut buf).unwrap();
        // 14 + 20 + 32 (TCP with timestamps) + 2 + 14 + 4096 + 0 pad + 4: the sum of
        // the framing in docs/iwarp.md.
        assert_eq!(n, 14 + 20 + 32 + 2 + 14 + 4096 + 4);
        let f = IwarpFrame::parse(&buf[..n]).unwrap().unwrap();
        assert!(f.tcp_checksum_ok);
        assert_eq!((f.ip, f.tcp), (repr.ip, repr.tcp));
        let p = IwarpPacket::parse_fpdu(f.payload, true).unwrap();
        assert_eq!(p.ddp, write(&data).ddp);
        assert_eq!(p.payload, &data[..]);
        let ip = Ipv4Packet::new_checked(&buf[14..n]).unwrap();
        assert!(ip.verify_checksum());
        // A flipped payload bit: the TCP checksum and the MPA CRC both catch it.
        buf[n - 100] ^= 1;
        let f = IwarpFrame::parse(&buf[..n]).unwrap().unwrap();
        assert!(!f.tcp_checksum_ok);
        assert!(matches!(
            IwarpPacket::parse_fpdu(f.payload, true),
            Err(IwarpParseError::Crc { .. })
        ));
    }

    #[test]
    fn a_read_request_must_carry_its_fields_and_only_it() {
        let rr = ReadRequest {
            sink_stag: 1,
            sink_to: 2,
            size: 4096,
            source_stag: 3,
            source_to: 4,
        };
        let mut fpdu = FpduRepr {
            ddp: DdpRepr {
                last: true,
                ddp_version: 1,
                rdmap_version: 1,
                opcode: RdmapOpcode::READ_REQUEST,
                placement: Placement::Untagged {
                    qn: queue::READ_REQUEST,
                    msn: 1,
                    mo: 0,
                    inval_stag: 0,
                },
            },
            read_request: Some(rr),
            payload: &[],
            crc: true,
            marker_offset: None,
        };
        let mut buf = [0u8; 128];
        let n = frame(TcpPayload::Fpdu(fpdu)).emit(&mut buf).unwrap();
        let f = IwarpFrame::parse(&buf[..n]).unwrap().unwrap();
        let p = IwarpPacket::parse_fpdu(f.payload, true).unwrap();
        assert_eq!(p.read_request, Some(rr));
        fpdu.read_request = None;
        assert!(matches!(
            fpdu.emit(&mut buf),
            Err(IwarpBuildError::Mismatch { .. })
        ));
        let write_untagged = FpduRepr {
            ddp: DdpRepr {
                opcode: RdmapOpcode::WRITE,
                ..fpdu.ddp
            },
            ..fpdu
        };
        assert!(write_untagged.emit(&mut buf).is_err());
    }

    #[test]
    fn frames_that_are_not_tcp_are_none_and_short_ones_errors() {
        let repr = frame(TcpPayload::Empty);
        let mut buf = [0u8; 128];
        let n = repr.emit(&mut buf).unwrap();
        assert_eq!(n, 66);
        assert!(IwarpFrame::parse(&buf[..n]).unwrap().is_some());
        assert!(IwarpFrame::parse(&buf[..40]).is_err());
        buf[23] = ipv4::PROTO_UDP;
        assert!(IwarpFrame::parse(&buf[..n]).unwrap().is_none());
        assert!(matches!(
            repr.emit(&mut buf[..65]),
            Err(IwarpBuildError::Frame(BuildError::BufferTooSmall { .. }))
        ));
    }
}
