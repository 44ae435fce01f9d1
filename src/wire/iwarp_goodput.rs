//! The closed form of iWARP single-flow goodput: how much of a link's rate an RDMA Write
//! stream carries as payload when every TCP segment holds one FPDU (docs/iwarp.md).

use super::ddp::TAGGED_HEADER_LEN;
use super::ethernet::HEADER_LEN as ETH_LEN;
use super::mpa::{self, MARKER_INTERVAL};
use super::{ipv4, tcp};
use crate::link::WIRE_OVERHEAD_BYTES;

/// Bytes of the TCP timestamps option as a data segment carries it (NOP, NOP, kind 8).
pub const TIMESTAMPS_OPTION_LEN: usize = 12;

/// How an iWARP connection frames an RDMA Write stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IwarpFraming {
    /// The interface MTU: the largest IP packet, bytes.
    pub ip_mtu: usize,
    /// TCP timestamps on every segment (12 option bytes).
    pub tcp_timestamps: bool,
    /// MPA markers every 512 stream bytes (4 bytes each).
    pub mpa_markers: bool,
}

/// One TCP segment of the stream, as [`IwarpFraming::segments`] lays it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The FPDU's distance from the marker origin, modulo 512.
    pub marker_phase: usize,
    /// RDMA Write payload bytes it carries.
    pub payload: usize,
    /// TCP payload: the FPDU with its pad, CRC and markers.
    pub tcp_payload: usize,
    /// The Ethernet frame's length (without FCS).
    pub frame_len: usize,
}

impl IwarpFraming {
    /// What a Chelsio T6 under Linux's iw_cxgb4 does by default at `ip_mtu`: MPA CRC on
    /// and markers off (module parameters `crc_enabled=1`, `markers_enabled=0`), TCP
    /// timestamps off (`enable_tcp_timestamps=0`), one FPDU per segment.
    pub const fn chelsio_t6(ip_mtu: usize) -> IwarpFraming {
        IwarpFraming {
            ip_mtu,
            tcp_timestamps: false,
            mpa_markers: false,
        }
    }

    /// The TCP maximum segment size: the MTU less IPv4 20, TCP 20 and the options every
    /// segment carries. `None` when the MTU leaves no room for an FPDU.
    pub fn mss(&self) -> Option<usize> {
        let opts = if self.tcp_timestamps {
            TIMESTAMPS_OPTION_LEN
        } else {
            0
        };
        let mss = self
            .ip_mtu
            .checked_sub(ipv4::HEADER_LEN + tcp::HEADER_LEN + opts)?;
        let smallest = mpa::fpdu_len(TAGGED_HEADER_LEN + 1);
        (mss >= smallest + 2 * mpa::MARKER_LEN).then_some(mss)
    }

    /// The segment that starts `phase` bytes after a marker position: the most payload
    /// whose FPDU (with markers, if on) fits the MSS.
    fn segment_at(&self, mss: usize, phase: usize) -> Segment {
        let header = ETH_LEN + self.ip_mtu - mss;
        // Without markers: 2 + 14 + payload + pad + 4 ≤ MSS, so 2 + 14 + payload is the
        // MSS less the CRC, rounded down to a multiple of 4.
        let most = (mss - mpa::CRC_LEN) / 4 * 4 - mpa::ULPDU_LENGTH_LEN - TAGGED_HEADER_LEN;
        let on_wire = |payload: usize| {
            let bare = mpa::fpdu_len(TAGGED_HEADER_LEN + payload);
            if self.mpa_markers {
                mpa::with_markers_len(phase as u64, bare)
            } else {
                bare
            }
        };
        let mut payload = most;
        while on_wire(payload) > mss {
            payload -= 1;
        }
        let tcp_payload = on_wire(payload);
        Segment {
            marker_phase: phase,
            payload,
            tcp_payload,
            frame_len: header + tcp_payload,
        }
    }

    /// The segments of a long stream, from the first FPDU (the marker origin) through
    /// one period: with markers the segments' phases repeat after at most 512 of them
    /// (the stream resumes where it began); without, every segment is alike and one is
    /// returned. Empty when the MTU is too small ([`mss`](Self::mss)).
    pub fn segments(&self) -> Vec<Segment> {
        let Some(mss) = self.mss() else {
            return Vec::new();
        };
        if !self.mpa_markers {
            return vec![self.segment_at(mss, 0)];
        }
        let mut seen = [usize::MAX; MARKER_INTERVAL];
        let mut out = Vec::new();
        let mut phase = 0;
        while seen[phase] == usize::MAX {
            seen[phase] = out.len();
            let s = self.segment_at(mss, phase);
            phase = (phase + s.tcp_payload) % MARKER_INTERVAL;
            out.push(s);
        }
        // The segments before the first repeated phase are a start-up, not the period.
        out.split_off(seen[phase])
    }

    /// The share of the line rate a long RDMA Write stream carries as payload: payload
    /// bytes over wire bytes (frame plus [`WIRE_OVERHEAD_BYTES`]) over one period.
    pub fn payload_share(&self) -> f64 {
        let segments = self.segments();
        let payload: usize = segments.iter().map(|s| s.payload).sum();
        let wire: u64 = segments
            .iter()
            .map(|s| s.frame_len as u64 + WIRE_OVERHEAD_BYTES)
            .sum();
        if wire == 0 {
            return 0.0;
        }
        payload as f64 / wire as f64
    }

    /// The goodput of one flow at `bits_per_sec`, bit/s.
    pub fn goodput_bits_per_sec(&self, bits_per_sec: u64) -> f64 {
        bits_per_sec as f64 * self.payload_share()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ddp::{DdpRepr, Placement, RdmapOpcode};
    use crate::wire::iwarp::{FpduRepr, IwarpRepr, TcpPayload};
    use crate::wire::tcp::{TcpFlags, TcpOptions, TcpRepr, Timestamps};
    use crate::wire::{Ecn, Ipv4Repr, MacAddr};
    use std::net::Ipv4Addr;

    // By hand (docs/iwarp.md): at MTU 4200 without timestamps the MSS is 4200 - 40 =
    // 4160; the FPDU fills it: 2 + 14 + 4140 + 0 pad + 4 = 4160. The frame is
    // 14 + 4200 = 4214 bytes, 4238 on the wire: 100 × 4140 / 4238 = 97.688 Gb/s.
    #[test]
    fn the_default_at_4200_matches_the_hand_computation() {
        let f = IwarpFraming::chelsio_t6(4200);
        assert_eq!(f.mss(), Some(4160));
        let s = f.segments();
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].payload, s[0].tcp_payload, s[0].frame_len),
            (4140, 4160, 4214)
        );
        let gbps = f.goodput_bits_per_sec(100_000_000_000) / 1e9;
        assert!((gbps - 100.0 * 4140.0 / 4238.0).abs() < 1e-9, "{gbps}");
        assert!((gbps - 97.688).abs() < 5e-4);
    }

    // With timestamps: MSS 4148; 2 + 14 + 4128 + 0 + 4 = 4148; 100 × 4128 / 4238.
    // At 9000 without: MSS 8960, payload 8940, 100 × 8940 / 9038 = 98.916 Gb/s.
    // At 4156, the MTU whose segments carry RoCE's 4096 bytes: 2 + 14 + 4096 + 4 = 4116 =
    // 4156 - 40; 14 + 4156 + 24 = 4194 bytes on the wire: 100 × 4096 / 4194.
    #[test]
    fn timestamps_and_jumbo_frames_match_the_hand_computations() {
        let ts = IwarpFraming {
            tcp_timestamps: true,
            ..IwarpFraming::chelsio_t6(4200)
        };
        assert_eq!(ts.segments()[0].payload, 4128);
        assert!((ts.payload_share() - 4128.0 / 4238.0).abs() < 1e-12);
        let jumbo = IwarpFraming::chelsio_t6(9000);
        assert_eq!(jumbo.segments()[0].payload, 8940);
        assert!((jumbo.payload_share() - 8940.0 / 9038.0).abs() < 1e-12);
        let like_roce = IwarpFraming::chelsio_t6(4156);
        assert_eq!(like_roce.segments()[0].payload, 4096);
        assert!((like_roce.payload_share() - 4096.0 / 4194.0).abs() < 1e-12);
        // Pad: MSS 4157 (MTU 4197) leaves 4153 for 2 + 14 + payload + pad: 4152 is the
        // most that is a multiple of 4, so 4136 bytes of payload and one unused byte.
        let odd = IwarpFraming::chelsio_t6(4197);
        assert_eq!(odd.segments()[0].payload, 4136);
        assert_eq!(odd.segments()[0].tcp_payload, 4156);
        assert!(IwarpFraming::chelsio_t6(60).segments().is_empty());
        assert_eq!(IwarpFraming::chelsio_t6(0).payload_share(), 0.0);
    }

    // By hand: at MTU 4200 without timestamps each segment is the MSS, 4160 = 8 × 512
    // + 64 stream bytes, so the phase comes back after 8 segments (33 280 = 65 × 512
    // bytes) that hold 65 markers: 4140 - 65 × 4 / 8 = 4107.5 bytes of payload a
    // segment, 100 × 4107.5 / 4238 = 96.921 Gb/s.
    #[test]
    fn markers_at_4200_match_the_hand_computation() {
        let f = IwarpFraming {
            mpa_markers: true,
            ..IwarpFraming::chelsio_t6(4200)
        };
        let period = f.segments();
        assert_eq!(period.len(), 8);
        assert!(period.iter().all(|s| s.tcp_payload == 4160));
        let payload: usize = period.iter().map(|s| s.payload).sum();
        assert_eq!(payload, 8 * 4140 - 65 * 4);
        assert!((f.payload_share() - 4107.5 / 4238.0).abs() < 1e-12);
    }

    /// The closed form with markers against frames the builder lays out: a stream of
    /// segments, each as full as the MSS allows, built one after the other, with its
    /// payload and wire bytes summed over the period.
    #[test]
    fn with_markers_the_period_matches_frames_built_one_by_one() {
        for (mtu, timestamps) in [(4200, false), (1500, true), (9000, false)] {
            let f = IwarpFraming {
                ip_mtu: mtu,
                tcp_timestamps: timestamps,
                mpa_markers: true,
            };
            let period = f.segments();
            assert!(!period.is_empty());
            let mss = f.mss().unwrap();
            let data = vec![0u8; mss];
            let (mut offset, mut payload, mut wire) = (0u64, 0usize, 0u64);
            let mut buf = vec![0u8; mtu + 14];
            // Two marker periods' worth of segments: the start-up is a small part.
            for _ in 0..1024 {
                // The most payload that fits, found by building frames (the answer lies
                // within the MSS less the 20 bytes of MPA and DDP).
                let (len, frame) = (0..=mss - 20)
                    .rev()
                    .find_map(|p| {
                        let repr = iwarp_frame(&data[..p], offset, timestamps);
                        (repr.frame_len() <= mtu + 14).then(|| (p, repr.emit(&mut buf).unwrap()))
                    })
                    .unwrap();
                offset += (frame - (mtu + 14 - mss)) as u64;
                payload += len;
                wire += frame as u64 + WIRE_OVERHEAD_BYTES;
            }
            let built = payload as f64 / wire as f64;
            assert!(
                (built - f.payload_share()).abs() < 1e-4,
                "MTU {mtu}: built {built}, closed form {}",
                f.payload_share()
            );
        }
    }

    fn iwarp_frame(payload: &[u8], marker_offset: u64, timestamps: bool) -> IwarpRepr<'_> {
        IwarpRepr {
            eth_dst: MacAddr([2, 0, 0, 0, 0, 2]),
            eth_src: MacAddr([2, 0, 0, 0, 0, 1]),
            vlan: None,
            ip: Ipv4Repr {
                src: Ipv4Addr::new(198, 18, 0, 1),
                dst: Ipv4Addr::new(198, 18, 0, 2),
                dscp: 26,
                ecn: Ecn::Ect0,
                ident: 0,
                dont_frag: true,
                ttl: 64,
            },
            tcp: TcpRepr {
                flags: TcpFlags::ACK,
                options: TcpOptions {
                    timestamps: timestamps.then_some(Timestamps::default()),
                    ..TcpOptions::default()
                },
                ..TcpRepr::default()
            },
            payload: TcpPayload::Fpdu(FpduRepr {
                ddp: DdpRepr {
                    last: true,
                    ddp_version: 1,
                    rdmap_version: 1,
                    opcode: RdmapOpcode::WRITE,
                    placement: Placement::Tagged { stag: 1, to: 0 },
                },
                read_request: None,
                payload,
                crc: true,
                marker_offset: Some(marker_offset),
            }),
        }
    }
}
