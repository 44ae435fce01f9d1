//! MAC Control frames: IEEE 802.3 Annex 31B PAUSE and IEEE 802.1Qbb priority-based flow
//! control (PFC).
//!
//! Both go to 01:80:C2:00:00:01 with EtherType 0x8808 and are padded to the 60-byte minimum.
//! PAUSE: opcode 0x0001 and one pause time. PFC: opcode 0x0101, a two-byte class-enable
//! vector (bit n = priority n, high octet reserved zero) and eight pause times. Times are in
//! quanta of 512 bit times at the link speed; time 0 resumes (XON). Link-local: a bridge
//! consumes them and never forwards them.

use super::ethernet::{EthernetRepr, MIN_FRAME_LEN, MacAddr, ethertype};
use super::{BuildError, Layer, ParseError, array, be16, truncated};
use crate::time::Nanos;
use std::fmt;

/// The reserved multicast address MAC Control frames are sent to.
pub const MAC_CONTROL_DST: MacAddr = MacAddr([0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);
/// MAC Control opcode of 802.3x PAUSE.
pub const OPCODE_PAUSE: u16 = 0x0001;
/// MAC Control opcode of 802.1Qbb PFC (class-based flow control).
pub const OPCODE_PFC: u16 = 0x0101;
/// Length of a PAUSE or PFC frame without FCS.
pub const FRAME_LEN: usize = MIN_FRAME_LEN;
/// One pause quantum is 512 bit times (IEEE 802.3 31B.2, 802.1Qbb 36.1.3.1).
pub const BITS_PER_QUANTUM: u64 = 512;

/// How long `quanta` pause a link of `bits_per_sec`: quanta × 512 bit times, rounded up
/// to whole nanoseconds (a pause never ends early).
pub fn pause_duration(quanta: u16, bits_per_sec: u64) -> Nanos {
    let bits = u128::from(quanta) * u128::from(BITS_PER_QUANTUM);
    Nanos((bits * 1_000_000_000).div_ceil(u128::from(bits_per_sec.max(1))) as u64)
}

const PFC_BODY_LEN: usize = 2 + 2 + 16;
const PAUSE_BODY_LEN: usize = 2 + 2;

/// A set of the eight 802.1p priorities, bit n = priority n.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PrioritySet(pub u8);

/// In JSON a list of the priorities, lowest first: `[3, 4]`.
impl serde::Serialize for PrioritySet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl PrioritySet {
    /// The empty set (with PFC off, no priority is lossless).
    pub const EMPTY: PrioritySet = PrioritySet(0);

    /// The set holding only `priority` (0-7).
    pub fn single(priority: u8) -> PrioritySet {
        PrioritySet(1 << (priority & 7))
    }

    /// True when `priority` is in the set.
    pub fn contains(self, priority: u8) -> bool {
        priority < 8 && self.0 & (1 << priority) != 0
    }

    /// Adds `priority` (0-7).
    pub fn insert(&mut self, priority: u8) {
        self.0 |= 1 << (priority & 7);
    }

    /// The priorities in the set, lowest first.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        (0..8).filter(move |&p| self.contains(p))
    }

    /// True when no priority is in the set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Debug for PrioritySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for PrioritySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for p in self.iter() {
            if !first {
                f.write_str(",")?;
            }
            write!(f, "{p}")?;
            first = false;
        }
        if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

/// A PFC frame's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PfcRepr {
    /// The class-enable vector as sent: bit n = priority n; the high octet is reserved
    /// and should be zero. Receivers act on the low octet only.
    pub enable_vector: u16,
    /// Pause time per priority, in quanta; meaningful where the enable bit is set.
    pub quanta: [u16; 8],
}

impl PfcRepr {
    /// A PFC frame pausing `priorities` for `quanta` each (0 resumes them).
    pub fn new(priorities: PrioritySet, quanta: u16) -> PfcRepr {
        let mut repr = PfcRepr {
            enable_vector: u16::from(priorities.0),
            quanta: [0; 8],
        };
        for p in priorities.iter() {
            repr.quanta[usize::from(p)] = quanta;
        }
        repr
    }

    /// The priorities the frame acts on.
    pub fn priorities(&self) -> PrioritySet {
        PrioritySet(self.enable_vector as u8)
    }
}

/// A decoded MAC Control frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacControl {
    /// 802.3x PAUSE: the whole link, for `quanta` × 512 bit times.
    Pause {
        /// Pause time in quanta.
        quanta: u16,
    },
    /// 802.1Qbb PFC.
    Pfc(PfcRepr),
    /// Another MAC Control opcode (EPON GATE, REPORT, ...): not flow control.
    Other {
        /// The MAC Control opcode (not 0x0001 PAUSE nor 0x0101 PFC).
        opcode: u16,
    },
}

impl MacControl {
    /// Decodes the MAC Control PDU that starts at `body` (the bytes after the EtherType);
    /// `offset` is where `body` starts in the frame, for error messages.
    pub fn parse(body: &[u8], offset: usize) -> Result<MacControl, ParseError> {
        if body.len() < 2 {
            return Err(truncated(Layer::MacControl, offset, 2, offset + body.len()));
        }
        let opcode = be16(array(body, 0));
        match opcode {
            OPCODE_PAUSE => {
                if body.len() < PAUSE_BODY_LEN {
                    return Err(truncated(
                        Layer::MacControl,
                        offset,
                        PAUSE_BODY_LEN,
                        offset + body.len(),
                    ));
                }
                Ok(MacControl::Pause {
                    quanta: be16(array(body, 2)),
                })
            }
            OPCODE_PFC => {
                if body.len() < PFC_BODY_LEN {
                    return Err(truncated(
                        Layer::MacControl,
                        offset,
                        PFC_BODY_LEN,
                        offset + body.len(),
                    ));
                }
                let mut quanta = [0u16; 8];
                for (i, q) in quanta.iter_mut().enumerate() {
                    *q = be16(array(body, 4 + 2 * i));
                }
                Ok(MacControl::Pfc(PfcRepr {
                    enable_vector: be16(array(body, 2)),
                    quanta,
                }))
            }
            opcode => Ok(MacControl::Other { opcode }),
        }
    }

    /// Decodes a whole frame whose [`FrameMeta`](super::FrameMeta) says MAC Control.
    pub fn parse_frame(
        frame: &[u8],
        meta: &super::meta::FrameMeta,
    ) -> Result<MacControl, ParseError> {
        let at = usize::from(meta.l3_offset());
        MacControl::parse(frame.get(at..).unwrap_or_default(), at)
    }

    /// Writes a 60-byte frame (untagged, zero padded) into `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8], src: MacAddr) -> Result<usize, BuildError> {
        if buf.len() < FRAME_LEN {
            return Err(BuildError::BufferTooSmall {
                needed: FRAME_LEN,
                available: buf.len(),
            });
        }
        let frame = &mut buf[..FRAME_LEN];
        frame.fill(0);
        let at = EthernetRepr {
            dst: MAC_CONTROL_DST,
            src,
            vlan: None,
            ethertype: ethertype::MAC_CONTROL,
        }
        .emit(frame)?;
        let body = &mut frame[at..];
        match *self {
            MacControl::Pause { quanta } => {
                body[..2].copy_from_slice(&OPCODE_PAUSE.to_be_bytes());
                body[2..4].copy_from_slice(&quanta.to_be_bytes());
            }
            MacControl::Pfc(pfc) => {
                body[..2].copy_from_slice(&OPCODE_PFC.to_be_bytes());
                body[2..4].copy_from_slice(&pfc.enable_vector.to_be_bytes());
                for (i, q) in pfc.quanta.iter().enumerate() {
                    body[4 + 2 * i..6 + 2 * i].copy_from_slice(&q.to_be_bytes());
                }
            }
            MacControl::Other { opcode } => {
                body[..2].copy_from_slice(&opcode.to_be_bytes());
            }
        }
        Ok(FRAME_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::meta::parse;

    #[test]
    fn pfc_frame_layout_matches_802_1qbb() {
        let mut buf = [0xaau8; 64];
        let pfc = PfcRepr::new(PrioritySet(0b0001_1000), 0xffff);
        let n = MacControl::Pfc(pfc)
            .emit(&mut buf, MacAddr([2, 0, 0, 0, 0, 1]))
            .unwrap();
        assert_eq!(n, 60);
        let expected_head = [
            0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, // dst
            0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
            0x88, 0x08, // MAC Control
            0x01, 0x01, // PFC
            0x00, 0x18, // priorities 3 and 4
            0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, // c0..c7
        ];
        assert_eq!(&buf[..34], &expected_head);
        assert!(buf[34..60].iter().all(|&b| b == 0));
        let meta = parse(&buf[..n]).unwrap();
        assert!(meta.is_mac_control());
        assert_eq!(
            MacControl::parse_frame(&buf[..n], &meta),
            Ok(MacControl::Pfc(pfc))
        );
    }

    #[test]
    fn pause_round_trips_and_short_bodies_are_errors() {
        let mut buf = [0u8; 60];
        MacControl::Pause { quanta: 100 }
            .emit(&mut buf, MacAddr::default())
            .unwrap();
        assert_eq!(&buf[14..18], &[0x00, 0x01, 0x00, 0x64]);
        let meta = parse(&buf).unwrap();
        assert_eq!(
            MacControl::parse_frame(&buf, &meta),
            Ok(MacControl::Pause { quanta: 100 })
        );
        assert!(MacControl::parse_frame(&buf[..15], &meta).is_err());
        assert!(MacControl::parse(&[0x01, 0x01, 0, 8], 14).is_err());
    }

    #[test]
    fn pause_durations_at_common_rates() {
        // 65535 × 512 bits: 33.554 ms at 1 Gb/s, 1.342 ms at 25 Gb/s, 335.5392 µs at 100.
        assert_eq!(pause_duration(0xffff, 1_000_000_000), Nanos(33_553_920));
        assert_eq!(pause_duration(0xffff, 25_000_000_000), Nanos(1_342_157)); // 1342156.8
        assert_eq!(pause_duration(0xffff, 100_000_000_000), Nanos(335_540)); // 335539.2
        assert_eq!(pause_duration(0, 100_000_000_000), Nanos(0));
    }

    #[test]
    fn priority_set_display() {
        assert_eq!(PrioritySet(0b1000_1001).to_string(), "0,3,7");
        assert_eq!(PrioritySet::EMPTY.to_string(), "none");
    }
}
