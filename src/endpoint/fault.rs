//! Faults a NIC can have, to add to any host of a scenario: a NIC stuck sending PFC XOFF
//! (a pause storm, as a hung host's NIC sends when its receive ring stops draining), a
//! slow receiver whose receive buffer drains slower than the link and pauses the switch
//! when it fills, and a sender that ignores the pause frames it receives.
//!
//! The faults live in the endpoint core, so the simulator and the live endpoint behave
//! alike. The frames they make are real 802.1Qbb PFC frames from the NIC's MAC address.

use crate::time::Nanos;
use crate::wire::pfc::pause_duration;
use std::collections::VecDeque;

/// A NIC that keeps pausing its link partner: from `start` until `stop` it sends a PFC
/// frame with `quanta` for `priority` every half of that pause time, so the partner stays
/// paused without a gap, and never an XON (a stuck NIC just stops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseStorm {
    /// The priority it pauses, 0–7.
    pub priority: u8,
    /// When the first XOFF goes out.
    pub start: Nanos,
    /// When it stops sending them (`None`: never).
    pub stop: Option<Nanos>,
    /// The pause time in each frame, quanta of 512 bit times (1–65535).
    pub quanta: u16,
}

impl PauseStorm {
    /// Time between two of its XOFF frames at `bits_per_sec`: half the pause time they
    /// carry, at least 1 ns.
    pub fn interval(&self, bits_per_sec: u64) -> Nanos {
        Nanos((pause_duration(self.quanta, bits_per_sec).0 / 2).max(1))
    }
}

/// A receiver slower than its link: arriving frames wait in a receive buffer of
/// `buffer_bytes`, which drains at `drain_bps` (a host bus or a CPU that cannot keep up).
/// When the buffer holds `xoff_bytes` or more, the NIC sends PFC XOFF for the priority
/// its data uses (refreshed at half the pause time while it holds), and XON when it is
/// down to `xon_bytes`. A frame that does not fit is dropped: the headroom above
/// `xoff_bytes` was too small for what was in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowReceiver {
    /// Drain rate of the receive buffer, bit/s.
    pub drain_bps: u64,
    /// Receive buffer size, bytes.
    pub buffer_bytes: u64,
    /// XOFF point, bytes.
    pub xoff_bytes: u64,
    /// XON point, bytes (below the XOFF point).
    pub xon_bytes: u64,
}

impl SlowReceiver {
    /// Default receive buffer: 256 KiB, the order of a ConnectX port's per-priority
    /// receive buffer.
    pub const DEFAULT_BUFFER_BYTES: u64 = 256 << 10;

    /// A slow receiver at `drain_bps` with the default buffer: XOFF at half of it (the
    /// other half is headroom for what is in flight), XON at a quarter.
    pub fn with_drain(drain_bps: u64) -> SlowReceiver {
        let buffer_bytes = Self::DEFAULT_BUFFER_BYTES;
        SlowReceiver {
            drain_bps,
            buffer_bytes,
            xoff_bytes: buffer_bytes / 2,
            xon_bytes: buffer_bytes / 4,
        }
    }
}

/// The faults of one NIC. The default is a healthy NIC.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Sends PFC XOFF without end (a stuck NIC).
    pub pause_storm: Option<PauseStorm>,
    /// Drains its receive buffer slower than the link and pauses the switch.
    pub slow_receiver: Option<SlowReceiver>,
    /// Counts the PFC and PAUSE frames it receives, and keeps sending.
    pub ignore_pause: bool,
}

impl Faults {
    /// True for a healthy NIC.
    pub fn is_none(&self) -> bool {
        *self == Faults::default()
    }
}

/// A pause storm in progress.
#[derive(Debug)]
pub(super) struct StormState {
    pub storm: PauseStorm,
    /// When the next XOFF goes out; `None` once the storm stopped.
    pub next: Option<Nanos>,
}

impl StormState {
    pub(super) fn new(storm: PauseStorm) -> StormState {
        StormState {
            storm,
            next: Some(storm.start),
        }
    }

    /// If an XOFF is due at `now`, schedules the one after it and returns true.
    pub(super) fn due(&mut self, now: Nanos, bits_per_sec: u64) -> bool {
        match self.next {
            Some(t) if t <= now => {
                let after = t + self.storm.interval(bits_per_sec);
                self.next = match self.storm.stop {
                    Some(stop) if after >= stop => None,
                    _ => Some(after),
                };
                true
            }
            _ => false,
        }
    }
}

/// What the receive buffer asks of the NIC after a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pfc {
    /// Send XOFF (or refresh it).
    Xoff,
    /// Send XON.
    Xon,
}

/// The receive buffer of a slow receiver: frames in arrival order, each with the time its
/// last byte has drained (rounded up to the next whole nanosecond).
///
/// The drain keeps exact time: the end of the drain is held as whole nanoseconds plus a
/// remainder in 1/`drain_bps` of a nanosecond, carried from frame to frame as the link
/// `Transmitter` carries bits, so back-to-back frames drain at exactly `drain_bps` (a
/// 174-byte frame at 10 Gb/s takes 139.2 ns, not 140).
#[derive(Debug)]
pub(super) struct RxBuffer {
    pub cfg: SlowReceiver,
    frames: VecDeque<(Nanos, Vec<u8>)>,
    bytes: u64,
    /// When the last frame in the buffer has drained: whole nanoseconds...
    drained_at: Nanos,
    /// ...plus this many 1/`drain_bps` of a nanosecond (below `drain_bps`).
    drained_at_rem: u128,
    /// XOFF sent and not yet released by an XON.
    pub xoff: bool,
    /// While XOFF holds: when to send it again.
    pub refresh_at: Option<Nanos>,
    /// Highest occupancy, bytes.
    pub watermark: u64,
    spare: Vec<Vec<u8>>,
}

impl RxBuffer {
    pub(super) fn new(cfg: SlowReceiver) -> RxBuffer {
        RxBuffer {
            cfg,
            frames: VecDeque::new(),
            bytes: 0,
            drained_at: Nanos::ZERO,
            drained_at_rem: 0,
            xoff: false,
            refresh_at: None,
            watermark: 0,
            spare: Vec::new(),
        }
    }

    /// A frame arrives at `now`. Returns `Err(())` when it does not fit (dropped), and
    /// whether XOFF is to be sent.
    pub(super) fn push(&mut self, now: Nanos, frame: &[u8]) -> Result<Option<Pfc>, ()> {
        let len = frame.len() as u64;
        if self.bytes + len > self.cfg.buffer_bytes {
            return Err(());
        }
        // The drain of this frame starts when the one before it has drained, exactly, or
        // when it arrives if the buffer is idle by then.
        let rate = u128::from(self.cfg.drain_bps.max(1));
        let (start, rem) =
            if now > self.drained_at || (now == self.drained_at && self.drained_at_rem == 0) {
                (now, 0)
            } else {
                (self.drained_at, self.drained_at_rem)
            };
        let exact = rem + u128::from(len) * 8 * 1_000_000_000;
        self.drained_at = start + Nanos((exact / rate) as u64);
        self.drained_at_rem = exact % rate;
        let done = self.drained_at + Nanos(u64::from(self.drained_at_rem > 0));
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        self.frames.push_back((done, buf));
        self.bytes += len;
        self.watermark = self.watermark.max(self.bytes);
        Ok((!self.xoff && self.bytes >= self.cfg.xoff_bytes).then_some(Pfc::Xoff))
    }

    /// The next frame that has drained by `now`, if any.
    pub(super) fn pop(&mut self, now: Nanos) -> Option<Vec<u8>> {
        if self.frames.front().is_none_or(|(done, _)| *done > now) {
            return None;
        }
        let (_, frame) = self.frames.pop_front()?;
        self.bytes -= frame.len() as u64;
        Some(frame)
    }

    /// Gives a frame's buffer back once it has been handled.
    pub(super) fn recycle(&mut self, buf: Vec<u8>) {
        if self.spare.len() < 64 {
            self.spare.push(buf);
        }
    }

    /// After frames drained: XON when XOFF holds and the buffer is down to the XON point.
    pub(super) fn after_drain(&self) -> Option<Pfc> {
        (self.xoff && self.bytes <= self.cfg.xon_bytes).then_some(Pfc::Xon)
    }

    /// When the next frame has drained.
    pub(super) fn next_drain(&self) -> Option<Nanos> {
        self.frames.front().map(|(done, _)| *done)
    }

    /// Bytes waiting.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storm_sends_every_half_pause_time_until_it_stops() {
        // 65535 quanta at 10 Gb/s: 3 355 392 ns of pause; one frame every 1 677 696 ns.
        let storm = PauseStorm {
            priority: 3,
            start: Nanos(1_000),
            stop: Some(Nanos(5_000_000)),
            quanta: 65535,
        };
        assert_eq!(storm.interval(10_000_000_000), Nanos(1_677_696));
        let mut s = StormState::new(storm);
        let sent: Vec<u64> = (0..6_000_000u64)
            .step_by(1_000)
            .filter(|&t| s.due(Nanos(t), 10_000_000_000))
            .collect();
        assert_eq!(sent, [1_000, 1_679_000, 3_357_000]);
        // 1000 + 3 × 1 677 696 = 5 034 088 is past the stop: no fourth frame.
        assert_eq!(s.next, None);
    }

    #[test]
    fn the_buffer_drains_at_its_rate_and_pauses_at_its_thresholds() {
        let mut rx = RxBuffer::new(SlowReceiver {
            drain_bps: 8_000_000_000, // 1 byte per ns
            buffer_bytes: 4000,
            xoff_bytes: 3000,
            xon_bytes: 1000,
        });
        assert_eq!(rx.push(Nanos(0), &[0; 1000]), Ok(None));
        assert_eq!(rx.push(Nanos(0), &[0; 1000]), Ok(None));
        assert_eq!(rx.push(Nanos(0), &[0; 1000]), Ok(Some(Pfc::Xoff)));
        rx.xoff = true;
        assert_eq!(rx.push(Nanos(0), &[0; 1000]), Ok(None));
        assert_eq!(rx.push(Nanos(0), &[0; 1]), Err(()), "full: dropped");
        assert_eq!(rx.next_drain(), Some(Nanos(1000)));
        assert!(rx.pop(Nanos(999)).is_none());
        assert_eq!(rx.pop(Nanos(1000)).map(|f| f.len()), Some(1000));
        assert_eq!(rx.after_drain(), None, "3000 bytes left, above XON");
        assert!(rx.pop(Nanos(3000)).is_some());
        assert!(rx.pop(Nanos(3000)).is_some());
        assert_eq!(rx.bytes(), 1000);
        assert_eq!(rx.after_drain(), Some(Pfc::Xon));
        assert_eq!(rx.watermark, 4000);
    }

    #[test]
    fn back_to_back_frames_drain_at_exactly_the_drain_rate() {
        // 174-byte frames at 10 Gb/s: 174 × 8 / 10e9 s = 139.2 ns each, so n frames
        // queued together have drained after n × 139.2 ns (rounded up), not n × 140.
        let mut rx = RxBuffer::new(SlowReceiver {
            drain_bps: 10_000_000_000,
            buffer_bytes: 1 << 30,
            xoff_bytes: 1 << 29,
            xon_bytes: 1 << 28,
        });
        for _ in 0..1000 {
            rx.push(Nanos(0), &[0; 174]).unwrap();
        }
        let mut done = Vec::new();
        while let Some(t) = rx.next_drain() {
            done.push(t.0);
            rx.pop(t).unwrap();
        }
        assert_eq!(done.len(), 1000);
        assert_eq!(done[0], 140, "139.2 ns, up to a whole ns");
        assert_eq!(done[4], 696, "5 × 139.2 ns exactly");
        assert_eq!(done[999], 139_200, "1000 × 139.2 ns: no rounding piled up");
        // The drained rate over the run is the drain rate.
        let rate = 1000.0 * 174.0 * 8.0 / (done[999] as f64 * 1e-9);
        assert!((rate / 10e9 - 1.0).abs() < 1e-9, "{rate}");

        // A frame that arrives after the buffer went idle starts its own drain at its
        // arrival, with nothing carried.
        rx.push(Nanos(200_000), &[0; 174]).unwrap();
        assert_eq!(rx.next_drain(), Some(Nanos(200_140)));
    }
}
