//! Frames whose payload is carried as its length.
//!
//! A simulated flow whose data nobody reads (one repeated byte, into a receive ring that
//! keeps nothing) need not hold 4 KB of that byte in every frame it has in flight: the
//! simulator passes such a RoCEv2 frame as a *short frame*, its headers and the first
//! [`KEPT`] bytes of its payload, with an [`Elided`] beside it that says how many bytes
//! of which value follow on the wire. The short frame is a well-formed frame of its own
//! (its lengths, checksum and ICRC placement are its own), so every parser takes it as
//! it is; what counts a frame's bytes (a wire's time, a buffer's cells, counters) counts
//! [`Elided::len`] as well. [`restore`] turns it back into the frame that was sent, byte
//! for byte, for anything that must see the whole of it.
//!
//! The kept bytes hold the short frame at or above Ethernet's 60-byte minimum, whose
//! padding would otherwise make the frame's length on the wire ambiguous: a WRITE Middle's
//! headers and ICRC are 58 bytes.

use super::ethernet::MIN_FRAME_LEN;
use super::icrc::ICRC_LEN;
use super::meta::{FrameMeta, parse_meta};
use super::{icrc, ipv4, udp};

/// Payload bytes a short frame keeps.
pub const KEPT: usize = 4;

/// Payload bytes a frame carries on the wire but not in its buffer: `len` copies of
/// `byte`, between the payload the buffer holds and the ICRC. The default elides nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Elided {
    /// How many.
    pub len: u32,
    /// Their value.
    pub byte: u8,
}

impl Elided {
    /// Nothing elided: a whole frame.
    pub const NONE: Elided = Elided { len: 0, byte: 0 };

    /// True when the frame is whole.
    #[inline]
    pub fn is_none(self) -> bool {
        self.len == 0
    }

    /// The length of `part` (a short frame, or the payload it holds) with the elided
    /// bytes put back: a short frame's length on the wire, or its whole payload's.
    #[inline]
    pub fn whole_len(self, part: &[u8]) -> usize {
        part.len() + self.len as usize
    }
}

/// Why a frame cannot be restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// Not a RoCEv2 frame whose UDP datagram ends where its buffer does.
    #[error("not a short RoCEv2 frame")]
    NotShort,
    /// The restored frame would be longer than IP's length fields allow.
    #[error("restored frame too long for its IP length field")]
    TooLong,
}

/// True when `frame`, parsed as `meta`, can be a short frame: a RoCEv2 frame that is
/// never padded (its UDP datagram ends where the buffer does, the ICRC last) and at least
/// Ethernet's minimum frame. Only then do its elided bytes add to its length on the wire
/// as they do to its length.
pub fn can_be_short(frame: &[u8], meta: &FrameMeta) -> bool {
    let l4 = usize::from(meta.l4_offset());
    let end = l4 + usize::from(meta.udp_len());
    meta.is_roce()
        && end == frame.len()
        && end >= MIN_FRAME_LEN
        && end >= l4 + udp::HEADER_LEN + ICRC_LEN
}

/// Puts the elided bytes back into `frame`, a short frame: they go before its ICRC, and
/// the UDP length and the IP length (and the IPv4 checksum) grow with them. On error
/// `frame` is unchanged.
pub fn restore(frame: &mut Vec<u8>, elided: Elided) -> Result<(), RestoreError> {
    if elided.is_none() {
        return Ok(());
    }
    let meta = parse_meta(frame)
        .filter(|m| can_be_short(frame, m))
        .ok_or(RestoreError::NotShort)?;
    let (l3, l4) = (usize::from(meta.l3_offset()), usize::from(meta.l4_offset()));
    let end = l4 + usize::from(meta.udp_len());
    let add = elided.len as usize;
    let grow = |at: usize, frame: &[u8]| -> Result<[u8; 2], RestoreError> {
        let old = usize::from(u16::from_be_bytes([frame[at], frame[at + 1]]));
        u16::try_from(old + add)
            .map(u16::to_be_bytes)
            .map_err(|_| RestoreError::TooLong)
    };
    // Every new length first, so that an error leaves the frame as it was.
    let udp_len = grow(l4 + 4, frame)?;
    let ip_len = if meta.is_ipv4() {
        (l3 + 2, grow(l3 + 2, frame)?)
    } else {
        (l3 + 4, grow(l3 + 4, frame)?)
    };
    frame[l4 + 4..l4 + 6].copy_from_slice(&udp_len);
    frame[ip_len.0..ip_len.0 + 2].copy_from_slice(&ip_len.1);
    let icrc_at = end - ICRC_LEN;
    frame.splice(
        icrc_at..icrc_at,
        std::iter::repeat_n(elided.byte, elided.len as usize),
    );
    if meta.is_ipv4()
        && let Ok(mut ip) = ipv4::Ipv4Packet::new_checked(&mut frame[l3..])
    {
        ip.fill_checksum();
    }
    Ok(())
}

/// The ICRC of the frame `short` stands for, written into its ICRC field, which a short
/// frame has last. `scratch` holds the whole frame meanwhile. Costs what the whole
/// frame's ICRC costs: for checking builds (a release simulation computes no ICRC).
pub fn fill_icrc(short: &mut [u8], elided: Elided, scratch: &mut Vec<u8>) -> Option<u32> {
    scratch.clear();
    scratch.extend_from_slice(short);
    restore(scratch, elided).ok()?;
    let meta = parse_meta(scratch)?;
    let icrc = icrc::fill(scratch, &meta)?;
    let at = short.len().checked_sub(ICRC_LEN)?;
    short[at..].copy_from_slice(&scratch[scratch.len() - ICRC_LEN..]);
    Some(icrc)
}

/// Whether the ICRC field of `short` holds the ICRC of the frame it stands for (`None`
/// when that is no RoCEv2 frame).
pub fn verify_icrc(short: &[u8], elided: Elided, scratch: &mut Vec<u8>) -> Option<bool> {
    scratch.clear();
    scratch.extend_from_slice(short);
    restore(scratch, elided).ok()?;
    let meta = parse_meta(scratch)?;
    icrc::verify(scratch, &meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{
        BthRepr, Ecn, ExtHeaders, IpRepr, Ipv4Repr, Ipv6Repr, MacAddr, Opcode, RoceRepr, VlanTag,
        xth::Reth,
    };
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn repr(ip: IpRepr, vlan: Option<VlanTag>, opcode: Opcode, payload: &[u8]) -> RoceRepr<'_> {
        let reth =
            matches!(opcode, Opcode::RC_WRITE_FIRST | Opcode::RC_WRITE_ONLY).then_some(Reth {
                va: 0x1000,
                rkey: 7,
                dma_len: 8192,
            });
        let immdt = (opcode == Opcode::RC_WRITE_LAST_IMM).then_some(9);
        RoceRepr {
            eth_dst: MacAddr([2, 0, 0, 0, 0, 1]),
            eth_src: MacAddr([2, 0, 0, 0, 0, 2]),
            vlan,
            ip,
            udp_src_port: 0xc001,
            bth: BthRepr {
                opcode,
                dest_qp: 0x11,
                psn: 5,
                ..BthRepr::default()
            },
            ext: ExtHeaders {
                reth,
                immdt,
                ..ExtHeaders::default()
            },
            payload,
        }
    }

    fn v4() -> IpRepr {
        IpRepr::V4(Ipv4Repr {
            src: Ipv4Addr::new(198, 18, 0, 1),
            dst: Ipv4Addr::new(198, 18, 0, 2),
            dscp: 26,
            ecn: Ecn::Ect0,
            ident: 0x1234,
            dont_frag: true,
            ttl: 64,
        })
    }

    /// The whole frame, and the short frame with what it elides.
    fn both(r: RoceRepr<'_>, byte: u8) -> (Vec<u8>, Vec<u8>, Elided) {
        let mut whole = Vec::new();
        r.emit_to_vec(&mut whole, true).unwrap();
        let kept = [byte; KEPT];
        let mut short = Vec::new();
        let s = RoceRepr {
            payload: &kept,
            ..r
        };
        s.emit_to_vec(&mut short, false).unwrap();
        let elided = Elided {
            len: (r.payload.len() - KEPT) as u32,
            byte,
        };
        (whole, short, elided)
    }

    #[test]
    fn a_restored_short_frame_is_the_frame_sent() {
        let v6 = IpRepr::V6(Ipv6Repr {
            src: Ipv6Addr::LOCALHOST,
            dst: Ipv6Addr::UNSPECIFIED,
            dscp: 26,
            ecn: Ecn::Ect0,
            flow_label: 0x12345,
            hop_limit: 64,
        });
        let vlan = Some(VlanTag {
            pcp: 3,
            dei: false,
            vid: 10,
        });
        let v4 = v4();
        for ip in [v4, v6] {
            for tag in [None, vlan] {
                for opcode in [
                    Opcode::RC_WRITE_FIRST,
                    Opcode::RC_WRITE_MIDDLE,
                    Opcode::RC_WRITE_LAST,
                    Opcode::RC_WRITE_LAST_IMM,
                    Opcode::RC_WRITE_ONLY,
                ] {
                    for len in [KEPT, 8, 1024, 4096] {
                        let payload = vec![0x5a; len];
                        let (whole, mut short, elided) =
                            both(repr(ip, tag, opcode, &payload), 0x5a);
                        assert!(short.len() >= MIN_FRAME_LEN, "{opcode:?}: never padded");
                        assert_eq!(elided.whole_len(&short), whole.len());
                        restore(&mut short, elided).unwrap();
                        lengths_hold_for_etherparse(&short, len);
                        // The ICRC was computed over the whole frame only: fill it in.
                        let meta = parse_meta(&short).unwrap();
                        icrc::fill(&mut short, &meta).unwrap();
                        assert_eq!(short, whole, "{ip:?} {tag:?} {opcode:?} {len}");
                    }
                }
            }
        }
    }

    /// What an independent parser (etherparse) reads of a restored frame: an IPv4
    /// header checksum that is right, an IP packet and a UDP datagram that end where the
    /// frame does, and in it `payload` bytes of 0x5a then the ICRC.
    fn lengths_hold_for_etherparse(frame: &[u8], payload: usize) {
        use etherparse::{NetSlice, SlicedPacket, TransportSlice};
        let s = SlicedPacket::from_ethernet(frame).expect("etherparse reads it");
        let at = |part: &[u8]| part.as_ptr() as usize - frame.as_ptr() as usize;
        let (ip_start, ip_len) = match s.net.as_ref().expect("an IP packet") {
            NetSlice::Ipv4(v4) => {
                let h = v4.header().to_header();
                assert_eq!(h.header_checksum, h.calc_header_checksum());
                (at(v4.header().slice()), usize::from(h.total_len))
            }
            NetSlice::Ipv6(v6) => (
                at(v6.header().slice()),
                40 + v6.header().payload_length() as usize,
            ),
            NetSlice::Arp(_) => panic!("not IP"),
        };
        assert_eq!(
            ip_start + ip_len,
            frame.len(),
            "the IP packet ends with the frame"
        );
        let Some(TransportSlice::Udp(u)) = s.transport.as_ref() else {
            panic!("not UDP: {:?}", s.transport)
        };
        let datagram = u.payload();
        assert_eq!(
            at(datagram) + datagram.len(),
            frame.len(),
            "so does the datagram"
        );
        assert_eq!(usize::from(u.length()), datagram.len() + 8);
        let body = &datagram[..datagram.len() - ICRC_LEN];
        assert!(body.len() >= payload);
        assert!(body[body.len() - payload..].iter().all(|&b| b == 0x5a));
    }

    #[test]
    fn the_icrc_of_a_short_frame_is_the_whole_frames() {
        let payload = [0x5a; 1024];
        let (whole, mut short, elided) =
            both(repr(v4(), None, Opcode::RC_WRITE_MIDDLE, &payload), 0x5a);
        let mut scratch = Vec::new();
        assert_eq!(verify_icrc(&short, elided, &mut scratch), Some(false));
        fill_icrc(&mut short, elided, &mut scratch).unwrap();
        assert_eq!(short[short.len() - 4..], whole[whole.len() - 4..]);
        assert_eq!(verify_icrc(&short, elided, &mut scratch), Some(true));
        // A byte of the elided payload that is not what was sent fails it.
        let other = Elided {
            byte: 0x5b,
            ..elided
        };
        assert_eq!(verify_icrc(&short, other, &mut scratch), Some(false));
    }

    #[test]
    fn nothing_elided_is_nothing_to_restore() {
        let mut frame = vec![1, 2, 3];
        restore(&mut frame, Elided::NONE).unwrap();
        assert_eq!(frame, [1, 2, 3]);
    }

    #[test]
    fn what_is_not_a_short_frame_is_refused_unchanged() {
        let payload = [0u8; 64];
        let (whole, _, _) = both(repr(v4(), None, Opcode::RC_WRITE_MIDDLE, &payload), 0);
        let some = Elided { len: 8, byte: 0 };
        // Ethernet padding after the datagram: not a short frame.
        let mut padded = whole.clone();
        padded.extend_from_slice(&[0; 6]);
        let before = padded.clone();
        assert_eq!(restore(&mut padded, some), Err(RestoreError::NotShort));
        assert_eq!(padded, before);
        // Not RoCE at all.
        let mut junk = vec![0xff; 80];
        assert_eq!(restore(&mut junk, some), Err(RestoreError::NotShort));
        assert_eq!(junk, vec![0xff; 80]);
        // Lengths that would pass 65535.
        let mut frame = whole;
        let before = frame.clone();
        let huge = Elided {
            len: 65_535,
            byte: 0,
        };
        assert_eq!(restore(&mut frame, huge), Err(RestoreError::TooLong));
        assert_eq!(frame, before);
    }
}
