//! A link's line rate: the bits a frame occupies on the wire, its serialisation time, and
//! the exact transmitter that the switch's port shapers and the endpoint's NIC both use (a
//! leaf module, so that neither core imports the other).

use crate::time::Nanos;

/// Bytes a frame takes on the wire besides itself: FCS 4, preamble and SFD 8, minimum
/// inter-frame gap 12 (IEEE 802.3 clause 4).
pub const WIRE_OVERHEAD_BYTES: u64 = 24;
/// Frames shorter than this (without FCS) are padded on the wire.
const MIN_FRAME: u64 = 60;

/// The inter-frame gap, bytes.
const IFG_BYTES: u64 = 12;

/// Bits one frame of `len` bytes (without FCS) occupies on the wire, gap included.
#[inline]
pub fn wire_bits(len: usize) -> u64 {
    ((len as u64).max(MIN_FRAME) + WIRE_OVERHEAD_BYTES) * 8
}

/// Nanoseconds from a frame's first bit (preamble) to its last (FCS) at `bits_per_sec`:
/// when a receiver has all of it. Rounded up.
pub fn frame_time(len: usize, bits_per_sec: u64) -> Nanos {
    let bits = wire_bits(len) - IFG_BYTES * 8;
    Nanos((u128::from(bits) * 1_000_000_000).div_ceil(u128::from(bits_per_sec.max(1))) as u64)
}

/// A port's transmitter: when it is free again, at the emulated rate, exactly.
///
/// Time is kept as (start of the current busy period, bits sent since), so that departure
/// times are exact to the nanosecond however long the busy period, with no rounding drift
/// at rates where a bit is a fraction of a nanosecond.
#[derive(Debug, Clone)]
pub struct Transmitter {
    bits_per_sec: u64,
    busy_start: Nanos,
    bits: u64,
    /// `busy_start + ceil(bits / rate)`, kept so that asking is free.
    free_at: Nanos,
    /// Femtoseconds per bit when that is a whole number (every common rate: 1 Gb/s is
    /// 10^6, 400 Gb/s 2500), so that wire time is an integer product; 0 otherwise.
    fs_per_bit: u64,
    /// False when the port's transmit side is shut (tests stop an egress this way).
    pub enabled: bool,
}

impl Transmitter {
    /// An idle transmitter at `bits_per_sec`.
    pub fn new(bits_per_sec: u64) -> Transmitter {
        Transmitter {
            bits_per_sec,
            busy_start: Nanos::ZERO,
            bits: 0,
            free_at: Nanos::ZERO,
            fs_per_bit: if 1_000_000_000_000_000 % bits_per_sec.max(1) == 0 {
                1_000_000_000_000_000 / bits_per_sec.max(1)
            } else {
                0
            },
            enabled: true,
        }
    }

    /// The line rate frames are serialised at, bit/s.
    pub fn bits_per_sec(&self) -> u64 {
        self.bits_per_sec
    }

    /// The earliest time the next frame may start.
    #[inline]
    pub fn free_at(&self) -> Nanos {
        self.free_at
    }

    /// Starts a frame of `len` bytes at `now` (not before [`free_at`](Self::free_at));
    /// returns its start time.
    #[inline]
    pub fn start(&mut self, now: Nanos, len: usize) -> Nanos {
        if now > self.free_at || self.bits == 0 {
            // Idle since the last frame ended: a new busy period.
            self.busy_start = now;
            self.bits = 0;
        }
        self.bits += wire_bits(len);
        let ns = match self.bits.checked_mul(self.fs_per_bit) {
            Some(fs) if self.fs_per_bit != 0 => fs.div_ceil(1_000_000),
            _ => (u128::from(self.bits) * 1_000_000_000).div_ceil(u128::from(self.bits_per_sec))
                as u64,
        };
        self.free_at = self.busy_start.saturating_add(Nanos(ns));
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_time_at_100g_is_exact_over_a_long_burst() {
        let mut tx = Transmitter::new(100_000_000_000);
        let mut now = Nanos(1000);
        // 1000 frames of 1082 bytes: (1082 + 24) × 8 = 8848 bits = 88.48 ns each.
        for _ in 0..1000 {
            now = tx.start(now.max(tx.free_at()), 1082);
        }
        assert_eq!(tx.free_at(), Nanos(1000 + 88_480));
    }

    #[test]
    fn runt_frames_are_padded_on_the_wire() {
        assert_eq!(wire_bits(42), (60 + 24) * 8);
    }
}
