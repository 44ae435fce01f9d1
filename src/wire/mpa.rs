//! MPA, Marker PDU Aligned framing (RFC 5044): the start frames that open an iWARP
//! connection ("MPA ID Req Frame" / "MPA ID Rep Frame"), and FPDUs: ULPDU_Length, the
//! ULPDU (DDP segment), pad to 4 bytes, CRC32c, and markers every 512 bytes of the TCP
//! stream when negotiated.

use super::iwarp::{IwarpBuildError, IwarpLayer, IwarpParseError};
use super::{array, be16, need};

/// Key of an MPA Request frame (RFC 5044 7.1.1).
pub const REQUEST_KEY: &[u8; 16] = b"MPA ID Req Frame";
/// Key of an MPA Reply frame.
pub const REPLY_KEY: &[u8; 16] = b"MPA ID Rep Frame";
/// Length of a start frame before its private data: key 16, flags 1, revision 1,
/// private data length 2.
pub const START_HEADER_LEN: usize = 20;
/// Most private data a start frame carries (RFC 5044 7.1.4).
pub const MAX_PRIVATE_DATA_LEN: usize = 512;
/// The MPA revision RFC 5044 defines.
pub const REVISION: u8 = 1;
/// Length of the ULPDU_Length field.
pub const ULPDU_LENGTH_LEN: usize = 2;
/// Length of the CRC field (present whether or not CRCs were negotiated; zero if not).
pub const CRC_LEN: usize = 4;
/// Distance between markers in the TCP stream.
pub const MARKER_INTERVAL: usize = 512;
/// Length of a marker: 16 reserved bits and the 16-bit FPDUPTR.
pub const MARKER_LEN: usize = 4;

mod flag {
    /// M: the sender wants to receive markers.
    pub(super) const MARKERS: u8 = 0x80;
    /// C: the sender wants CRCs.
    pub(super) const CRC: u8 = 0x40;
    /// R: the responder rejects the connection (reply only).
    pub(super) const REJECT: u8 = 0x20;
}

/// Request (from the initiator) or reply (from the responder).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StartKind {
    /// "MPA ID Req Frame".
    Request,
    /// "MPA ID Rep Frame".
    Reply,
}

/// An MPA Request or Reply frame, the first bytes each side sends on the TCP stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpaStartRepr<'a> {
    /// Request or reply.
    pub kind: StartKind,
    /// M: markers wanted in the FPDUs this side receives.
    pub markers: bool,
    /// C: CRCs wanted (used if either side asks).
    pub crc: bool,
    /// R: connection rejected (a reply's).
    pub reject: bool,
    /// Revision (1).
    pub revision: u8,
    /// Private data for the ULP (at most 512 bytes).
    pub private_data: &'a [u8],
}

impl<'a> MpaStartRepr<'a> {
    /// Reads a start frame from the start of a TCP stream's bytes; returns it and its
    /// length. Reserved flag bits are ignored, as RFC 5044 asks of a receiver.
    pub fn parse(bytes: &'a [u8]) -> Result<(MpaStartRepr<'a>, usize), IwarpParseError> {
        let Some(h) = bytes.first_chunk::<START_HEADER_LEN>() else {
            return Err(IwarpParseError::truncated(
                IwarpLayer::MpaStart,
                0,
                START_HEADER_LEN,
                bytes.len(),
            ));
        };
        let kind = match &h[..16] {
            k if k == REQUEST_KEY => StartKind::Request,
            k if k == REPLY_KEY => StartKind::Reply,
            _ => {
                return Err(IwarpParseError::invalid(
                    IwarpLayer::MpaStart,
                    "key",
                    usize::from(h[0]),
                    "must be \"MPA ID Req Frame\" or \"MPA ID Rep Frame\"",
                ));
            }
        };
        let pd_len = usize::from(be16([h[18], h[19]]));
        if pd_len > MAX_PRIVATE_DATA_LEN {
            return Err(IwarpParseError::invalid(
                IwarpLayer::MpaStart,
                "private data length",
                pd_len,
                "must not exceed 512",
            ));
        }
        let len = START_HEADER_LEN + pd_len;
        let Some(private_data) = bytes.get(START_HEADER_LEN..len) else {
            return Err(IwarpParseError::truncated(
                IwarpLayer::MpaStart,
                0,
                len,
                bytes.len(),
            ));
        };
        let flags = h[16];
        let repr = MpaStartRepr {
            kind,
            markers: flags & flag::MARKERS != 0,
            crc: flags & flag::CRC != 0,
            reject: flags & flag::REJECT != 0,
            revision: h[17],
            private_data,
        };
        Ok((repr, len))
    }

    /// Length `emit` writes.
    pub fn len(&self) -> usize {
        START_HEADER_LEN + self.private_data.len()
    }

    /// Always false: a start frame has its 20-byte header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the frame into `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, IwarpBuildError> {
        if self.private_data.len() > MAX_PRIVATE_DATA_LEN {
            return Err(IwarpBuildError::TooLong {
                layer: IwarpLayer::MpaStart,
                what: "private data",
                length: self.private_data.len(),
                max: MAX_PRIVATE_DATA_LEN,
            });
        }
        let len = self.len();
        need(buf, len)?;
        buf[..16].copy_from_slice(match self.kind {
            StartKind::Request => REQUEST_KEY,
            StartKind::Reply => REPLY_KEY,
        });
        buf[16] = if self.markers { flag::MARKERS } else { 0 }
            | if self.crc { flag::CRC } else { 0 }
            | if self.reject { flag::REJECT } else { 0 };
        buf[17] = self.revision;
        buf[18..20].copy_from_slice(&(self.private_data.len() as u16).to_be_bytes());
        buf[START_HEADER_LEN..len].copy_from_slice(self.private_data);
        Ok(len)
    }
}

/// What the two sides agreed on in their start frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MpaMode {
    /// CRCs on (either side asked: RFC 5044 7.1.2).
    pub crc: bool,
    /// Markers in this direction (the receiver asked).
    pub markers: bool,
}

/// Bytes of pad after a ULPDU of `ulpdu_len` bytes: ULPDU_Length + ULPDU + pad is a
/// multiple of 4 (RFC 5044 4.1).
pub const fn pad_len(ulpdu_len: usize) -> usize {
    (4 - (ULPDU_LENGTH_LEN + ulpdu_len) % 4) % 4
}

/// Length of an FPDU without markers: ULPDU_Length, ULPDU, pad, CRC.
pub const fn fpdu_len(ulpdu_len: usize) -> usize {
    ULPDU_LENGTH_LEN + ulpdu_len + pad_len(ulpdu_len) + CRC_LEN
}

/// Number of markers in `len` stream bytes starting `offset` bytes after the marker
/// origin (the first FPDU of the direction: a marker lies at every multiple of 512).
pub const fn markers_in(offset: u64, len: usize) -> usize {
    let interval = MARKER_INTERVAL as u64;
    let first = (interval - offset % interval) % interval;
    if first >= len as u64 {
        0
    } else {
        ((len as u64 - first - 1) / interval + 1) as usize
    }
}

/// The CRC32c (Castagnoli, as iSCSI's) of `bytes`. MPA stores it least significant
/// byte first, as iSCSI does (RFC 3720 B.4 shows the CRC of 32 zero bytes, 0x8a9136aa,
/// as the bytes aa 36 91 8a); Wireshark and Linux's siw read and write it so.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// Completes an FPDU in `buf` whose ULPDU (`ulpdu_len` bytes) is already written at
/// `buf[2..]`: writes ULPDU_Length, zero pad and the CRC (zero when `crc` is off).
/// Returns the FPDU's length. Markers, if on, are inserted afterwards with
/// [`insert_markers`].
pub fn emit_fpdu(buf: &mut [u8], ulpdu_len: usize, crc: bool) -> Result<usize, IwarpBuildError> {
    let length = u16::try_from(ulpdu_len).map_err(|_| IwarpBuildError::TooLong {
        layer: IwarpLayer::Mpa,
        what: "ULPDU",
        length: ulpdu_len,
        max: usize::from(u16::MAX),
    })?;
    let len = fpdu_len(ulpdu_len);
    need(buf, len)?;
    buf[..ULPDU_LENGTH_LEN].copy_from_slice(&length.to_be_bytes());
    let crc_at = len - CRC_LEN;
    buf[ULPDU_LENGTH_LEN + ulpdu_len..crc_at].fill(0);
    let value = if crc { crc32c(&buf[..crc_at]) } else { 0 };
    buf[crc_at..len].copy_from_slice(&value.to_le_bytes());
    Ok(len)
}

/// An FPDU read from a TCP segment's payload, markers removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fpdu<'a> {
    /// The ULPDU: a DDP segment.
    pub ulpdu: &'a [u8],
    /// The CRC's value (stored least significant byte first).
    pub crc: u32,
}

impl<'a> Fpdu<'a> {
    /// Reads an FPDU (markers already removed) from the start of `bytes`; with CRCs on,
    /// checks the CRC. Returns it and its length.
    pub fn parse(bytes: &'a [u8], crc: bool) -> Result<(Fpdu<'a>, usize), IwarpParseError> {
        let Some(l) = bytes.first_chunk::<ULPDU_LENGTH_LEN>() else {
            return Err(IwarpParseError::truncated(
                IwarpLayer::Mpa,
                0,
                ULPDU_LENGTH_LEN,
                bytes.len(),
            ));
        };
        let ulpdu_len = usize::from(be16(*l));
        let len = fpdu_len(ulpdu_len);
        if bytes.len() < len {
            return Err(IwarpParseError::truncated(
                IwarpLayer::Mpa,
                0,
                len,
                bytes.len(),
            ));
        }
        let crc_at = len - CRC_LEN;
        let stored = u32::from_le_bytes(array(bytes, crc_at));
        if crc {
            let computed = crc32c(&bytes[..crc_at]);
            if computed != stored {
                return Err(IwarpParseError::Crc { stored, computed });
            }
        }
        let ulpdu = &bytes[ULPDU_LENGTH_LEN..ULPDU_LENGTH_LEN + ulpdu_len];
        Ok((Fpdu { ulpdu, crc: stored }, len))
    }
}

/// Copies `fpdu` into `out` with a marker at every stream position that is a multiple
/// of 512 from the marker origin; `offset` is the FPDU's first byte's distance from that
/// origin. Each marker's FPDUPTR counts the bytes back to the FPDU's start (RFC 5044
/// 5.2; 0 for a marker the FPDU starts with). Returns the bytes written.
///
/// The CRC covers the markers (RFC 5044 5.1), so [`emit_fpdu`]'s CRC does not hold
/// once markers are in: use [`emit_fpdu_with_markers`] to build such FPDUs.
pub fn insert_markers(fpdu: &[u8], offset: u64, out: &mut [u8]) -> Result<usize, IwarpBuildError> {
    let total = with_markers_len(offset, fpdu.len());
    need(out, total)?;
    let interval = MARKER_INTERVAL as u64;
    let (mut from, mut to) = (0, 0);
    while to < total {
        let pos = offset + to as u64;
        if pos.is_multiple_of(interval) {
            // FPDUPTR is 16 bits: a marker 2^16 bytes or more into an FPDU (ULPDU_Length
            // allows 65535 bytes, plus markers) wraps, as the field does.
            let back = to as u16;
            out[to..to + 2].fill(0);
            out[to + 2..to + 4].copy_from_slice(&back.to_be_bytes());
            to += MARKER_LEN;
            continue;
        }
        let next_marker = (interval - pos % interval) as usize;
        let n = next_marker.min(fpdu.len() - from);
        out[to..to + n].copy_from_slice(&fpdu[from..from + n]);
        from += n;
        to += n;
    }
    Ok(total)
}

/// Length of an FPDU of `fpdu_len` bytes once markers are inserted at `offset` from the
/// marker origin.
pub fn with_markers_len(offset: u64, fpdu_len: usize) -> usize {
    // Each marker pushes the rest along; count them over the growing span.
    let mut total = fpdu_len;
    loop {
        let n = fpdu_len + MARKER_LEN * markers_in(offset, total);
        if n == total {
            return total;
        }
        total = n;
    }
}

/// Builds a whole FPDU with markers in `buf`: ULPDU_Length, `ulpdu`, pad, markers at
/// `offset` from the marker origin, and the CRC over all of them (zero with `crc` off).
/// Returns its length. A marker may fall between the pad and the CRC.
pub fn emit_fpdu_with_markers(
    buf: &mut [u8],
    ulpdu: &[u8],
    offset: u64,
    crc: bool,
) -> Result<usize, IwarpBuildError> {
    let bare_len = fpdu_len(ulpdu.len()) - CRC_LEN;
    let mut bare = vec![0u8; bare_len];
    bare[ULPDU_LENGTH_LEN..ULPDU_LENGTH_LEN + ulpdu.len()].copy_from_slice(ulpdu);
    let length = u16::try_from(ulpdu.len()).map_err(|_| IwarpBuildError::TooLong {
        layer: IwarpLayer::Mpa,
        what: "ULPDU",
        length: ulpdu.len(),
        max: usize::from(u16::MAX),
    })?;
    bare[..ULPDU_LENGTH_LEN].copy_from_slice(&length.to_be_bytes());
    // The CRC's own position may hold a marker: lay out the whole FPDU, CRC included.
    let total = with_markers_len(offset, bare_len + CRC_LEN);
    need(buf, total)?;
    let mut with_crc = bare;
    with_crc.extend_from_slice(&[0; CRC_LEN]);
    insert_markers(&with_crc, offset, buf)?;
    let crc_at = total - CRC_LEN;
    let value = if crc { crc32c(&buf[..crc_at]) } else { 0 };
    buf[crc_at..total].copy_from_slice(&value.to_le_bytes());
    Ok(total)
}

/// Removes the markers from an FPDU that starts `offset` bytes after the marker origin
/// and is `bytes.len()` long on the wire; returns the FPDU without them, and checks
/// the CRC (over the bytes with markers) when `crc` is on.
pub fn strip_markers(bytes: &[u8], offset: u64, crc: bool) -> Result<Vec<u8>, IwarpParseError> {
    if crc && bytes.len() >= CRC_LEN {
        let crc_at = bytes.len() - CRC_LEN;
        let stored = u32::from_le_bytes(array(bytes, crc_at));
        let computed = crc32c(&bytes[..crc_at]);
        if stored != computed {
            return Err(IwarpParseError::Crc { stored, computed });
        }
    }
    let interval = MARKER_INTERVAL as u64;
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let pos = offset + at as u64;
        if pos.is_multiple_of(interval) {
            if bytes.len() - at < MARKER_LEN {
                return Err(IwarpParseError::truncated(
                    IwarpLayer::Mpa,
                    at,
                    MARKER_LEN,
                    bytes.len(),
                ));
            }
            at += MARKER_LEN;
            continue;
        }
        let n = ((interval - pos % interval) as usize).min(bytes.len() - at);
        out.extend_from_slice(&bytes[at..at + n]);
        at += n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_is_castagnolis_not_ieees() {
        // The catalogued check value of CRC-32/ISCSI over "123456789"; IEEE's is
        // 0xcbf43926.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        // RFC 3720 B.4: 32 bytes of zeros give the CRC bytes aa 36 91 8a on the wire.
        assert_eq!(crc32c(&[0u8; 32]).to_le_bytes(), [0xaa, 0x36, 0x91, 0x8a]);
    }

    #[test]
    fn start_frames_round_trip_and_bad_ones_are_refused() {
        let pd = [1u8, 2, 3];
        let req = MpaStartRepr {
            kind: StartKind::Request,
            markers: false,
            crc: true,
            reject: false,
            revision: REVISION,
            private_data: &pd,
        };
        let mut buf = [0u8; 40];
        let n = req.emit(&mut buf).unwrap();
        assert_eq!(n, 23);
        assert_eq!(&buf[..17], b"MPA ID Req Frame\x40");
        assert_eq!(MpaStartRepr::parse(&buf[..n]).unwrap(), (req, 23));
        assert!(matches!(
            MpaStartRepr::parse(&buf[..22]),
            Err(IwarpParseError::Truncated { needed: 23, .. })
        ));
        buf[18] = 0x02;
        buf[19] = 0x01;
        assert!(matches!(
            MpaStartRepr::parse(&buf[..]),
            Err(IwarpParseError::Invalid { value: 513, .. })
        ));
        buf[4] = b'x';
        assert!(MpaStartRepr::parse(&buf[..]).is_err());
        let big = [0u8; 513];
        let too_big = MpaStartRepr {
            private_data: &big,
            ..req
        };
        assert!(too_big.emit(&mut [0u8; 600]).is_err());
    }

    #[test]
    fn an_fpdu_pads_to_four_and_its_crc_catches_a_flipped_bit() {
        // 2 + 5 = 7: one byte of pad, then the CRC: 12 bytes.
        let mut buf = [0u8; 16];
        buf[2..7].copy_from_slice(b"hello");
        assert_eq!(emit_fpdu(&mut buf, 5, true).unwrap(), 12);
        assert_eq!(&buf[..8], b"\x00\x05hello\x00");
        assert_eq!(
            u32::from_le_bytes(array(&buf, 8)),
            crc32c(b"\x00\x05hello\x00")
        );
        let (fpdu, n) = Fpdu::parse(&buf, true).unwrap();
        assert_eq!((fpdu.ulpdu, n), (&b"hello"[..], 12));
        buf[3] ^= 1;
        assert!(matches!(
            Fpdu::parse(&buf, true),
            Err(IwarpParseError::Crc { .. })
        ));
        assert!(Fpdu::parse(&buf, false).is_ok());
        assert!(Fpdu::parse(&buf[..11], false).is_err());
    }

    #[test]
    fn markers_fall_every_512_stream_bytes_and_come_out_again() {
        assert_eq!(markers_in(0, 1), 1);
        assert_eq!(markers_in(1, 511), 0);
        assert_eq!(markers_in(1, 512), 1);
        assert_eq!(markers_in(0, 1025), 3);
        let ulpdu: Vec<u8> = (0..1500u32).map(|i| i as u8).collect();
        for offset in [0u64, 3, 508, 510, 511, 4096 + 100] {
            let mut buf = vec![0u8; 2000];
            let n = emit_fpdu_with_markers(&mut buf, &ulpdu, offset, true).unwrap();
            let bare = fpdu_len(ulpdu.len());
            assert_eq!(n, bare + MARKER_LEN * markers_in(offset, n), "{offset}");
            // Every marker is where the stream position is a multiple of 512, and
            // points back to the FPDU's start.
            for at in (0..n).filter(|&at| (offset + at as u64).is_multiple_of(512)) {
                assert_eq!(buf[at..at + 2], [0, 0]);
                assert_eq!(usize::from(be16(array(&buf, at + 2))), at);
            }
            let stripped = strip_markers(&buf[..n], offset, true).unwrap();
            let (fpdu, len) = Fpdu::parse(&stripped, false).unwrap();
            assert_eq!((fpdu.ulpdu, len), (&ulpdu[..], bare));
            buf[n / 2] ^= 0x10;
            assert!(strip_markers(&buf[..n], offset, true).is_err());
        }
    }
}
