//! Writers for pcap (nanosecond timestamps) and pcapng (named interfaces, packet comments).
//! Both write little-endian files of Ethernet frames.

use super::{LINKTYPE_ETHERNET, SNAPLEN};
use crate::time::Nanos;
use std::io::{self, Write};

/// Writes a libpcap file with nanosecond timestamps (magic a1b23c4d).
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut header = Vec::with_capacity(24);
        header.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        header.extend_from_slice(&2u16.to_le_bytes());
        header.extend_from_slice(&4u16.to_le_bytes());
        header.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        header.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        header.extend_from_slice(&SNAPLEN.to_le_bytes());
        header.extend_from_slice(&u32::from(LINKTYPE_ETHERNET).to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter { out })
    }

    /// Appends one frame.
    pub fn write_packet(&mut self, ts: Nanos, frame: &[u8]) -> io::Result<()> {
        let len = frame_len_u32(frame)?;
        let secs = u32::try_from(ts.0 / 1_000_000_000).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "timestamp beyond 2106 does not fit a pcap record",
            )
        })?;
        let mut header = [0u8; 16];
        header[..4].copy_from_slice(&secs.to_le_bytes());
        header[4..8].copy_from_slice(&((ts.0 % 1_000_000_000) as u32).to_le_bytes());
        header[8..12].copy_from_slice(&len.to_le_bytes());
        header[12..16].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&header)?;
        self.out.write_all(frame)
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Writes a pcapng file: one section, interfaces added as needed, nanosecond timestamps.
pub struct PcapNgWriter<W: Write> {
    out: W,
    interfaces: u32,
    block: Vec<u8>,
}

const SHB: u32 = 0x0a0d_0d0a;
const IDB: u32 = 1;
const EPB: u32 = 6;
const OPT_COMMENT: u16 = 1;
/// EPB option `epb_flags` (pcapng §4.3.1): bits 0-1 are the direction, 01 inbound.
const EPB_FLAGS: u16 = 2;
const EPB_INBOUND: u32 = 0b01;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;

impl<W: Write> PcapNgWriter<W> {
    /// Writes the section header, naming `application` as the writer.
    pub fn new(out: W, application: &str) -> io::Result<Self> {
        let mut w = PcapNgWriter {
            out,
            interfaces: 0,
            block: Vec::with_capacity(2048),
        };
        w.begin(SHB);
        w.block.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
        w.block.extend_from_slice(&1u16.to_le_bytes());
        w.block.extend_from_slice(&0u16.to_le_bytes());
        w.block.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
        w.option(SHB_USERAPPL, application.as_bytes());
        w.end_options();
        w.finish_block()?;
        Ok(w)
    }

    /// Describes an Ethernet interface named `name`; returns its id.
    pub fn add_interface(&mut self, name: &str) -> io::Result<u32> {
        self.begin(IDB);
        self.block
            .extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        self.block.extend_from_slice(&0u16.to_le_bytes());
        self.block.extend_from_slice(&SNAPLEN.to_le_bytes());
        self.option(IF_NAME, name.as_bytes());
        self.option(IF_TSRESOL, &[9]); // nanoseconds
        self.end_options();
        self.finish_block()?;
        self.interfaces += 1;
        Ok(self.interfaces - 1)
    }

    /// Appends one frame on `interface`, with an optional packet comment.
    pub fn write_packet(
        &mut self,
        interface: u32,
        ts: Nanos,
        frame: &[u8],
        comment: Option<&str>,
    ) -> io::Result<()> {
        self.write_packet_in(interface, ts, frame, comment, false)
    }

    /// As [`write_packet`](Self::write_packet), the frame marked as received on the
    /// interface (`epb_flags` inbound) when `inbound`, not sent.
    pub fn write_packet_in(
        &mut self,
        interface: u32,
        ts: Nanos,
        frame: &[u8],
        comment: Option<&str>,
        inbound: bool,
    ) -> io::Result<()> {
        if interface >= self.interfaces {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "interface {interface} was not added ({} so far)",
                    self.interfaces
                ),
            ));
        }
        let len = frame_len_u32(frame)?;
        self.begin(EPB);
        self.block.extend_from_slice(&interface.to_le_bytes());
        self.block
            .extend_from_slice(&((ts.0 >> 32) as u32).to_le_bytes());
        self.block.extend_from_slice(&(ts.0 as u32).to_le_bytes());
        self.block.extend_from_slice(&len.to_le_bytes());
        self.block.extend_from_slice(&len.to_le_bytes());
        self.block.extend_from_slice(frame);
        self.pad();
        if let Some(c) = comment {
            self.option(OPT_COMMENT, c.as_bytes());
        }
        if inbound {
            self.option(EPB_FLAGS, &EPB_INBOUND.to_le_bytes());
        }
        if comment.is_some() || inbound {
            self.end_options();
        }
        self.finish_block()
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    fn begin(&mut self, block_type: u32) {
        self.block.clear();
        self.block.extend_from_slice(&block_type.to_le_bytes());
        self.block.extend_from_slice(&0u32.to_le_bytes()); // length, patched at the end
    }

    fn pad(&mut self) {
        let padded = self.block.len().div_ceil(4) * 4;
        self.block.resize(padded, 0);
    }

    fn option(&mut self, code: u16, value: &[u8]) {
        // An option value is at most 65535 bytes; a longer comment is cut at a char boundary.
        let mut len = value.len().min(usize::from(u16::MAX));
        while std::str::from_utf8(&value[..len]).is_err() && len > 0 {
            len -= 1;
        }
        self.block.extend_from_slice(&code.to_le_bytes());
        self.block.extend_from_slice(&(len as u16).to_le_bytes());
        self.block.extend_from_slice(&value[..len]);
        self.pad();
    }

    fn end_options(&mut self) {
        self.block.extend_from_slice(&[0; 4]);
    }

    fn finish_block(&mut self) -> io::Result<()> {
        let total = (self.block.len() + 4) as u32;
        self.block[4..8].copy_from_slice(&total.to_le_bytes());
        self.block.extend_from_slice(&total.to_le_bytes());
        self.out.write_all(&self.block)
    }
}

fn frame_len_u32(frame: &[u8]) -> io::Result<u32> {
    if frame.len() > SNAPLEN as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a {}-byte frame exceeds the {SNAPLEN}-byte snap length",
                frame.len()
            ),
        ));
    }
    Ok(frame.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::super::{CaptureErrorKind, CaptureReader, Format};
    use super::*;

    fn frames() -> Vec<Vec<u8>> {
        vec![
            vec![0xab; 60],
            vec![
                1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x88, 0x08, 0, 1, 0, 5,
            ],
            vec![7; 1514],
        ]
    }

    #[test]
    fn pcap_round_trip_keeps_nanoseconds() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        for (i, f) in frames().iter().enumerate() {
            w.write_packet(Nanos(1_700_000_000_123_456_789 + i as u64), f)
                .unwrap();
        }
        let bytes = w.finish().unwrap();
        let mut r = CaptureReader::new(&bytes[..]).unwrap();
        assert_eq!(r.format(), Format::Pcap);
        let mut offset = 24;
        for (i, f) in frames().iter().enumerate() {
            let p = r.next_packet().unwrap().unwrap();
            assert_eq!(p.ts, Some(Nanos(1_700_000_000_123_456_789 + i as u64)));
            assert_eq!(p.data, &f[..]);
            assert_eq!(p.offset, offset);
            offset += 16 + f.len() as u64;
        }
        assert!(r.next_packet().unwrap().is_none());
    }

    #[test]
    fn pcapng_round_trip_keeps_interfaces_and_comments() {
        let mut w = PcapNgWriter::new(Vec::new(), "rocelab test").unwrap();
        let a = w.add_interface("port0").unwrap();
        let b = w.add_interface("port1").unwrap();
        let f = frames();
        w.write_packet(a, Nanos(5), &f[0], None).unwrap();
        w.write_packet(
            b,
            Nanos(1_700_000_000_000_000_001),
            &f[1],
            Some("CE: queue 3"),
        )
        .unwrap();
        assert!(w.write_packet(2, Nanos(0), &f[1], None).is_err());
        let bytes = w.finish().unwrap();
        let mut r = CaptureReader::new(&bytes[..]).unwrap();
        assert_eq!(r.format(), Format::PcapNg);
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.ts, p.interface, p.data, p.comment),
            (Some(Nanos(5)), 0, &f[0][..], None)
        );
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(p.ts, Some(Nanos(1_700_000_000_000_000_001)));
        assert_eq!((p.interface, p.comment), (1, Some("CE: queue 3")));
        assert_eq!(p.data, &f[1][..]);
        assert!(r.next_packet().unwrap().is_none());
        let names: Vec<_> = r.interfaces().iter().map(|i| i.name.clone()).collect();
        assert_eq!(names, [Some("port0".to_owned()), Some("port1".to_owned())]);
    }

    #[test]
    fn every_truncation_is_an_error_with_an_offset() {
        let mut w = PcapNgWriter::new(Vec::new(), "t").unwrap();
        let i = w.add_interface("p").unwrap();
        for f in frames() {
            w.write_packet(i, Nanos(1), &f, Some("x")).unwrap();
        }
        let ng = w.finish().unwrap();
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        for f in frames() {
            w.write_packet(Nanos(1), &f).unwrap();
        }
        let pcap = w.finish().unwrap();
        for bytes in [ng, pcap] {
            let mut boundaries = vec![];
            for cut in 0..bytes.len() {
                let result = CaptureReader::new(&bytes[..cut]).and_then(|mut r| {
                    while r.next_packet()?.is_some() {}
                    Ok(r.offset())
                });
                match result {
                    Ok(end) => boundaries.push((cut, end)),
                    Err(e) => assert!(
                        matches!(
                            e.kind,
                            CaptureErrorKind::Truncated { .. } | CaptureErrorKind::Empty
                        ),
                        "cut {cut}: {e}"
                    ),
                }
            }
            // A clean end only where a record ends.
            assert!(boundaries.iter().all(|&(cut, end)| cut as u64 == end));
        }
    }

    #[test]
    fn bad_magic_and_link_type_are_named() {
        let e = CaptureReader::new(&b"GIF89a......................"[..])
            .err()
            .unwrap();
        assert!(matches!(e.kind, CaptureErrorKind::BadMagic(_)));
        let mut w = PcapWriter::new(Vec::new()).unwrap().finish().unwrap();
        w[20] = 113; // Linux cooked capture
        let e = CaptureReader::new(&w[..]).err().unwrap();
        assert!(matches!(e.kind, CaptureErrorKind::UnsupportedLinkType(113)));
        assert_eq!(e.offset, 20);
        assert!(e.to_string().contains("Linux cooked"));
    }
}
