//! DDP, Direct Data Placement (RFC 5041), with the RDMAP control byte (RFC 5040) it
//! carries: tagged segments (STag, tagged offset) for RDMA Writes and Read Responses,
//! untagged ones (queue number, message sequence number, message offset) for Sends,
//! Read Requests and Terminates; and the Read Request's and Terminate's own fields.

use super::iwarp::{IwarpBuildError, IwarpLayer, IwarpParseError};
use super::{array, need};
use std::fmt;

/// Length of a tagged DDP header: control 1, RDMAP control 1, STag 4, TO 8.
pub const TAGGED_HEADER_LEN: usize = 14;
/// Length of an untagged DDP header: control 1, RsvdULP 5 (RDMAP control and the
/// Invalidate STag), QN 4, MSN 4, MO 4.
pub const UNTAGGED_HEADER_LEN: usize = 18;
/// Length of a Read Request's message (RFC 5040 4.4): sink STag 4, sink TO 8, size 4,
/// source STag 4, source TO 8.
pub const READ_REQUEST_LEN: usize = 28;
/// Length of a Terminate's control field (RFC 5040 4.8).
pub const TERMINATE_CONTROL_LEN: usize = 4;
/// The DDP version RFC 5041 defines.
pub const DDP_VERSION: u8 = 1;
/// The RDMAP version RFC 5040 defines.
pub const RDMAP_VERSION: u8 = 1;

/// Untagged queue numbers RDMAP uses (RFC 5040 5.1).
pub mod queue {
    /// Sends.
    pub const SEND: u32 = 0;
    /// Read Requests.
    pub const READ_REQUEST: u32 = 1;
    /// Terminates.
    pub const TERMINATE: u32 = 2;
}

mod bits {
    /// T: tagged.
    pub(super) const TAGGED: u8 = 0x80;
    /// L: last segment of the message.
    pub(super) const LAST: u8 = 0x40;
    pub(super) const DV: u8 = 0x03;
    pub(super) const RV_SHIFT: u8 = 6;
    pub(super) const OPCODE: u8 = 0x0f;
}

/// An RDMAP opcode (RFC 5040 4.3).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RdmapOpcode(pub u8);

impl RdmapOpcode {
    /// RDMA Write (tagged).
    pub const WRITE: RdmapOpcode = RdmapOpcode(0);
    /// RDMA Read Request (untagged, queue 1).
    pub const READ_REQUEST: RdmapOpcode = RdmapOpcode(1);
    /// RDMA Read Response (tagged).
    pub const READ_RESPONSE: RdmapOpcode = RdmapOpcode(2);
    /// Send (untagged, queue 0).
    pub const SEND: RdmapOpcode = RdmapOpcode(3);
    /// Send with Invalidate.
    pub const SEND_INVALIDATE: RdmapOpcode = RdmapOpcode(4);
    /// Send with Solicited Event.
    pub const SEND_SE: RdmapOpcode = RdmapOpcode(5);
    /// Send with Solicited Event and Invalidate.
    pub const SEND_SE_INVALIDATE: RdmapOpcode = RdmapOpcode(6);
    /// Terminate (untagged, queue 2).
    pub const TERMINATE: RdmapOpcode = RdmapOpcode(7);
    /// Immediate Data (RFC 7306 4.4: eight bytes on the untagged Send queue, what verbs
    /// call the immediate of an RDMA Write with Immediate).
    pub const IMMEDIATE_DATA: RdmapOpcode = RdmapOpcode(8);
    /// Immediate Data with Solicited Event (RFC 7306 4.4).
    pub const IMMEDIATE_DATA_SE: RdmapOpcode = RdmapOpcode(9);

    /// The name RFC 5040 or RFC 7306 gives, `reserved` for the rest (RFC 7306's
    /// atomics are not read).
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "RDMA Write",
            1 => "RDMA Read Request",
            2 => "RDMA Read Response",
            3 => "Send",
            4 => "Send with Invalidate",
            5 => "Send with Solicited Event",
            6 => "Send with Solicited Event and Invalidate",
            7 => "Terminate",
            8 => "Immediate Data",
            9 => "Immediate Data with Solicited Event",
            _ => "reserved",
        }
    }

    /// True for the opcodes carried in tagged segments (Write, Read Response).
    pub fn is_tagged(self) -> bool {
        self == RdmapOpcode::WRITE || self == RdmapOpcode::READ_RESPONSE
    }

    /// The untagged queue the opcode travels on, `None` for tagged and reserved ones.
    pub fn queue(self) -> Option<u32> {
        match self.0 {
            1 => Some(queue::READ_REQUEST),
            3..=6 | 8 | 9 => Some(queue::SEND),
            7 => Some(queue::TERMINATE),
            _ => None,
        }
    }
}

impl fmt::Debug for RdmapOpcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.0, self.name())
    }
}

/// Where a DDP segment's payload goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Tagged buffer model: a registered buffer named by STag, at a tagged offset.
    Tagged {
        /// Steering tag of the data sink's buffer.
        stag: u32,
        /// Tagged offset: the address in that buffer.
        to: u64,
    },
    /// Untagged buffer model: the next buffer posted on a queue.
    Untagged {
        /// Queue number (see [`queue`]).
        qn: u32,
        /// Message sequence number, per queue, from 1.
        msn: u32,
        /// Message offset: where in the message this segment lies.
        mo: u32,
        /// The Invalidate STag of a Send with Invalidate (RsvdULP's last four bytes),
        /// zero otherwise.
        inval_stag: u32,
    },
}

/// A DDP segment header with its RDMAP control byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DdpRepr {
    /// L: the last segment of its message.
    pub last: bool,
    /// DV: DDP version (1).
    pub ddp_version: u8,
    /// RV: RDMAP version (1).
    pub rdmap_version: u8,
    /// RDMAP opcode.
    pub opcode: RdmapOpcode,
    /// Tagged or untagged placement (the T bit).
    pub placement: Placement,
}

impl DdpRepr {
    /// Header length: 14 tagged, 18 untagged.
    pub fn header_len(&self) -> usize {
        match self.placement {
            Placement::Tagged { .. } => TAGGED_HEADER_LEN,
            Placement::Untagged { .. } => UNTAGGED_HEADER_LEN,
        }
    }

    /// Reads the header from the start of a ULPDU; returns it and its length. The
    /// versions are returned as found (a receiver that wants 1 checks them).
    pub fn parse(bytes: &[u8]) -> Result<(DdpRepr, usize), IwarpParseError> {
        let Some(&[control, rdmap]) = bytes.first_chunk::<2>() else {
            return Err(IwarpParseError::truncated(
                IwarpLayer::Ddp,
                0,
                TAGGED_HEADER_LEN,
                bytes.len(),
            ));
        };
        let tagged = control & bits::TAGGED != 0;
        let len = if tagged {
            TAGGED_HEADER_LEN
        } else {
            UNTAGGED_HEADER_LEN
        };
        if bytes.len() < len {
            return Err(IwarpParseError::truncated(
                IwarpLayer::Ddp,
                0,
                len,
                bytes.len(),
            ));
        }
        let be32 = |at| u32::from_be_bytes(array(bytes, at));
        let placement = if tagged {
            Placement::Tagged {
                stag: be32(2),
                to: u64::from_be_bytes(array(bytes, 6)),
            }
        } else {
            Placement::Untagged {
                inval_stag: be32(2),
                qn: be32(6),
                msn: be32(10),
                mo: be32(14),
            }
        };
        let repr = DdpRepr {
            last: control & bits::LAST != 0,
            ddp_version: control & bits::DV,
            rdmap_version: rdmap >> bits::RV_SHIFT,
            opcode: RdmapOpcode(rdmap & bits::OPCODE),
            placement,
        };
        Ok((repr, len))
    }

    /// Writes the header into `buf`; returns its length. Reserved bits are zero, the
    /// versions masked to their two bits.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, IwarpBuildError> {
        let len = self.header_len();
        need(buf, len)?;
        let tagged = matches!(self.placement, Placement::Tagged { .. });
        buf[0] = if tagged { bits::TAGGED } else { 0 }
            | if self.last { bits::LAST } else { 0 }
            | (self.ddp_version & bits::DV);
        buf[1] = ((self.rdmap_version & 3) << bits::RV_SHIFT) | (self.opcode.0 & bits::OPCODE);
        match self.placement {
            Placement::Tagged { stag, to } => {
                buf[2..6].copy_from_slice(&stag.to_be_bytes());
                buf[6..14].copy_from_slice(&to.to_be_bytes());
            }
            Placement::Untagged {
                qn,
                msn,
                mo,
                inval_stag,
            } => {
                buf[2..6].copy_from_slice(&inval_stag.to_be_bytes());
                buf[6..10].copy_from_slice(&qn.to_be_bytes());
                buf[10..14].copy_from_slice(&msn.to_be_bytes());
                buf[14..18].copy_from_slice(&mo.to_be_bytes());
            }
        }
        Ok(len)
    }
}

/// The message of an RDMA Read Request: read `size` bytes from the source buffer into
/// the sink buffer (RFC 5040 4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadRequest {
    /// STag of the requester's buffer, where the Read Response writes.
    pub sink_stag: u32,
    /// Tagged offset in it.
    pub sink_to: u64,
    /// RDMA Read Message Size, bytes.
    pub size: u32,
    /// STag of the responder's buffer, read from.
    pub source_stag: u32,
    /// Tagged offset in it.
    pub source_to: u64,
}

impl ReadRequest {
    /// Reads the 28 bytes after the untagged header.
    pub fn parse(bytes: &[u8]) -> Result<ReadRequest, IwarpParseError> {
        if bytes.len() < READ_REQUEST_LEN {
            return Err(IwarpParseError::truncated(
                IwarpLayer::Rdmap,
                0,
                READ_REQUEST_LEN,
                bytes.len(),
            ));
        }
        Ok(ReadRequest {
            sink_stag: u32::from_be_bytes(array(bytes, 0)),
            sink_to: u64::from_be_bytes(array(bytes, 4)),
            size: u32::from_be_bytes(array(bytes, 12)),
            source_stag: u32::from_be_bytes(array(bytes, 16)),
            source_to: u64::from_be_bytes(array(bytes, 20)),
        })
    }

    /// Writes the 28 bytes; returns 28.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, IwarpBuildError> {
        need(buf, READ_REQUEST_LEN)?;
        buf[0..4].copy_from_slice(&self.sink_stag.to_be_bytes());
        buf[4..12].copy_from_slice(&self.sink_to.to_be_bytes());
        buf[12..16].copy_from_slice(&self.size.to_be_bytes());
        buf[16..20].copy_from_slice(&self.source_stag.to_be_bytes());
        buf[20..28].copy_from_slice(&self.source_to.to_be_bytes());
        Ok(READ_REQUEST_LEN)
    }
}

/// The control field of a Terminate message (RFC 5040 4.8): which layer failed, how,
/// and which headers follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TerminateControl {
    /// Layer: 0 RDMA, 1 DDP, 2 LLP (MPA/TCP).
    pub layer: u8,
    /// Error type within the layer.
    pub error_type: u8,
    /// Error code.
    pub error_code: u8,
    /// M: the DDP segment length follows.
    pub ddp_segment_len_valid: bool,
    /// D: the DDP header of the offending segment follows.
    pub ddp_header: bool,
    /// R: its RDMAP header follows.
    pub rdmap_header: bool,
}

impl TerminateControl {
    /// Reads the four bytes.
    pub fn parse(bytes: &[u8]) -> Result<TerminateControl, IwarpParseError> {
        let Some(b) = bytes.first_chunk::<TERMINATE_CONTROL_LEN>() else {
            return Err(IwarpParseError::truncated(
                IwarpLayer::Rdmap,
                0,
                TERMINATE_CONTROL_LEN,
                bytes.len(),
            ));
        };
        Ok(TerminateControl {
            layer: b[0] >> 4,
            error_type: b[0] & 0x0f,
            error_code: b[1],
            ddp_segment_len_valid: b[2] & 0x80 != 0,
            ddp_header: b[2] & 0x40 != 0,
            rdmap_header: b[2] & 0x20 != 0,
        })
    }

    /// Writes the four bytes; returns 4.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, IwarpBuildError> {
        need(buf, TERMINATE_CONTROL_LEN)?;
        buf[0] = (self.layer << 4) | (self.error_type & 0x0f);
        buf[1] = self.error_code;
        buf[2] = u8::from(self.ddp_segment_len_valid) << 7
            | u8::from(self.ddp_header) << 6
            | u8::from(self.rdmap_header) << 5;
        buf[3] = 0;
        Ok(TERMINATE_CONTROL_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_write_header_is_14_bytes_as_rfc_5041_draws_it() {
        let repr = DdpRepr {
            last: true,
            ddp_version: DDP_VERSION,
            rdmap_version: RDMAP_VERSION,
            opcode: RdmapOpcode::WRITE,
            placement: Placement::Tagged {
                stag: 0x1122_3344,
                to: 0x0102_0304_0506_0708,
            },
        };
        let mut buf = [0u8; 14];
        assert_eq!(repr.emit(&mut buf).unwrap(), 14);
        // T=1 L=1 DV=01: 0xc1; RV=01 opcode 0: 0x40.
        assert_eq!(
            buf,
            [0xc1, 0x40, 0x11, 0x22, 0x33, 0x44, 1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(DdpRepr::parse(&buf).unwrap(), (repr, 14));
        assert!(DdpRepr::parse(&buf[..13]).is_err());
    }

    #[test]
    fn an_untagged_send_with_invalidate_carries_its_stag_in_rsvdulp() {
        let repr = DdpRepr {
            last: false,
            ddp_version: DDP_VERSION,
            rdmap_version: RDMAP_VERSION,
            opcode: RdmapOpcode::SEND_INVALIDATE,
            placement: Placement::Untagged {
                qn: queue::SEND,
                msn: 7,
                mo: 4096,
                inval_stag: 0xabcd,
            },
        };
        let mut buf = [0u8; 18];
        repr.emit(&mut buf).unwrap();
        assert_eq!(&buf[..6], &[0x01, 0x44, 0, 0, 0xab, 0xcd]);
        assert_eq!(DdpRepr::parse(&buf).unwrap(), (repr, 18));
        assert!(DdpRepr::parse(&buf[..14]).is_err());
        assert_eq!(RdmapOpcode::SEND_INVALIDATE.queue(), Some(queue::SEND));
        assert_eq!(RdmapOpcode(9).name(), "Immediate Data with Solicited Event");
        assert_eq!(RdmapOpcode(10).name(), "reserved");
    }

    #[test]
    fn read_request_and_terminate_round_trip() {
        let rr = ReadRequest {
            sink_stag: 1,
            sink_to: 2,
            size: 3,
            source_stag: 4,
            source_to: 5,
        };
        let mut buf = [0u8; 28];
        rr.emit(&mut buf).unwrap();
        assert_eq!(buf[15], 3);
        assert_eq!(ReadRequest::parse(&buf).unwrap(), rr);
        assert!(ReadRequest::parse(&buf[..27]).is_err());
        let t = TerminateControl {
            layer: 1,
            error_type: 2,
            error_code: 0x03,
            ddp_segment_len_valid: true,
            ddp_header: true,
            rdmap_header: false,
        };
        t.emit(&mut buf).unwrap();
        assert_eq!(&buf[..4], &[0x12, 0x03, 0xc0, 0]);
        assert_eq!(TerminateControl::parse(&buf).unwrap(), t);
    }
}
