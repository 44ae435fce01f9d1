//! A link's line rate: the bits a frame occupies on the wire, its serialisation time, the
//! exact transmitter that the switch's port shapers and the endpoint's NIC both use, and
//! the [`Wire`] (that transmitter, then the cable) that the simulator, the live lab and
//! replay carry frames over (a leaf module, so that neither core imports the other).

use crate::time::Nanos;
use crate::wire::elide::Elided;

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
    bits_time(wire_bits(len) - IFG_BYTES * 8, bits_per_sec)
}

/// How a link puts frames on the wire.
///
/// Every core builds RoCEv2 frames (Ethernet, IPv4, UDP, BTH, ICRC); an InfiniBand link
/// carries the same transport packet behind a Local Route Header instead, so its wire
/// time is that of the InfiniBand packet the frame stands for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    /// IEEE 802.3: the frame padded to 60 bytes, FCS, preamble and SFD, inter-frame gap.
    #[default]
    Ethernet,
    /// InfiniBand: LRH (8 bytes) in place of the Ethernet, IP and UDP headers (a GRH in
    /// place of an IPv6 header), the VCRC (2) after the ICRC, a start and an end
    /// delimiter, and no gap. A flow-control link packet is 6 bytes and its delimiters.
    #[serde(rename = "infiniband")]
    InfiniBand,
}

/// Bytes of the delimiters around an InfiniBand packet on the wire: one start and one
/// end symbol (rocelab's simplification of the physical layer's framing, which is also
/// why no gap is counted).
pub const IB_DELIMITER_BYTES: u64 = 2;
/// Bytes of an InfiniBand flow-control link packet (IBA vol. 1, 7.9.4).
pub const IB_LINK_PACKET_BYTES: u64 = 6;
/// EtherType of the envelope the simulator carries InfiniBand link packets in: IEEE
/// 802's Local Experimental EtherType 1 (never seen outside the simulator).
pub const IB_LINK_PACKET_ETHERTYPE: u16 = 0x88b5;

impl Framing {
    /// Bits one frame occupies on the wire, gap or delimiters included.
    #[inline]
    pub fn wire_bits(self, frame: &[u8]) -> u64 {
        match self {
            Framing::Ethernet => wire_bits(frame.len()),
            Framing::InfiniBand => (ib_packet_bytes(frame) + IB_DELIMITER_BYTES) * 8,
        }
    }

    /// [`wire_bits`](Self::wire_bits) of a short frame and the payload it elides (see
    /// [`crate::wire::elide`]): a short frame is never padded, so each elided byte is
    /// one more on the wire.
    #[inline]
    pub fn wire_bits_elided(self, frame: &[u8], elided: Elided) -> u64 {
        self.wire_bits(frame) + u64::from(elided.len) * 8
    }

    /// Bits of the gap after a frame: counted in its wire bits, not in its frame time.
    fn gap_bits(self) -> u64 {
        match self {
            Framing::Ethernet => IFG_BYTES * 8,
            Framing::InfiniBand => 0,
        }
    }

    /// Nanoseconds from a frame's first bit to its last: when a receiver has all of it.
    /// Rounded up.
    pub fn frame_time(self, frame: &[u8], bits_per_sec: u64) -> Nanos {
        bits_time(self.wire_bits(frame) - self.gap_bits(), bits_per_sec)
    }
}

/// The length of the InfiniBand packet a RoCEv2 frame stands for, LRH to VCRC: the
/// frame less its Ethernet header (and 802.1Q tag), IPv4 header and UDP header, plus the
/// LRH and the VCRC. An IPv6 header becomes a GRH of the same 40 bytes. A link-packet
/// envelope is the link packet's 6 bytes.
pub fn ib_packet_bytes(frame: &[u8]) -> u64 {
    let len = frame.len() as u64;
    let ethertype_at = |i: usize| {
        frame
            .get(i..i + 2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    };
    let (l2, ethertype) = match ethertype_at(12) {
        0x8100 => (18, ethertype_at(16)),
        t => (14, t),
    };
    match ethertype {
        IB_LINK_PACKET_ETHERTYPE => IB_LINK_PACKET_BYTES,
        0x0800 => len.saturating_sub(l2 + 20 + UDP) + LRH + VCRC,
        0x86dd => len.saturating_sub(l2 + UDP) + LRH + VCRC,
        // Not a RoCEv2 frame: carried whole behind an LRH (raw packet).
        _ => len.saturating_sub(l2) + LRH + VCRC,
    }
}

/// [`ib_packet_bytes`] of an untagged RoCEv2 IPv4 frame of `len` bytes (what the
/// simulator's endpoints send), without the frame.
pub fn ib_packet_bytes_ipv4(len: usize) -> u64 {
    (len as u64).saturating_sub(14 + 20 + UDP) + LRH + VCRC
}

/// Bytes of an InfiniBand Local Route Header.
const LRH: u64 = 8;
/// Bytes of an InfiniBand variant CRC.
const VCRC: u64 = 2;
/// Bytes of a UDP header.
const UDP: u64 = 8;

fn bits_time(bits: u64, bits_per_sec: u64) -> Nanos {
    Nanos(scaled_div_ceil(bits, 1_000_000_000, bits_per_sec) as u64)
}

/// `ceil(x × scale / divisor)` (a divisor of 0 taken as 1), exact: in 64 bits whenever the
/// product fits (a frame's bits in ns or ps always do), since a 128-bit division is a
/// library call, and the cores compute a wire time for every frame.
#[inline]
pub fn scaled_div_ceil(x: u64, scale: u64, divisor: u64) -> u128 {
    let divisor = divisor.max(1);
    match x.checked_mul(scale) {
        Some(n) => u128::from(n.div_ceil(divisor)),
        None => (u128::from(x) * u128::from(scale)).div_ceil(u128::from(divisor)),
    }
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
    framing: Framing,
    /// False when the port's transmit side is shut (tests stop an egress this way).
    pub enabled: bool,
}

impl Transmitter {
    /// An idle Ethernet transmitter at `bits_per_sec`.
    pub fn new(bits_per_sec: u64) -> Transmitter {
        Transmitter::with_framing(bits_per_sec, Framing::Ethernet)
    }

    /// An idle transmitter at `bits_per_sec` that frames as `framing` does.
    pub fn with_framing(bits_per_sec: u64, framing: Framing) -> Transmitter {
        Transmitter {
            framing,
            bits_per_sec,
            busy_start: Nanos::ZERO,
            bits: 0,
            free_at: Nanos::ZERO,
            fs_per_bit: fs_per_bit(bits_per_sec),
            enabled: true,
        }
    }

    /// Runs at `bits_per_sec` from now on (a link that renegotiates its speed). The frame
    /// on the wire finishes at the old rate: the next one starts no sooner than
    /// [`free_at`](Self::free_at) says now.
    pub fn set_rate(&mut self, bits_per_sec: u64) {
        self.bits_per_sec = bits_per_sec.max(1);
        self.fs_per_bit = fs_per_bit(self.bits_per_sec);
        // A new busy period from the end of the last one: the bits before it were timed
        // at the old rate.
        self.busy_start = self.free_at;
        self.bits = 0;
    }

    /// The line rate frames are serialised at, bit/s.
    pub fn bits_per_sec(&self) -> u64 {
        self.bits_per_sec
    }

    /// How it puts frames on the wire.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// The earliest time the next frame may start.
    #[inline]
    pub fn free_at(&self) -> Nanos {
        self.free_at
    }

    /// If a frame started at `now` would run on from the frame before it (the link was
    /// busy until a fraction of a nanosecond before `now`), when the link freed, in
    /// picoseconds.
    pub fn runs_on_ps(&self, now: Nanos) -> Option<u128> {
        if self.bits == 0 || now > self.free_at {
            return None;
        }
        let ps = (u128::from(self.bits) * 1_000_000_000_000) / u128::from(self.bits_per_sec);
        Some(u128::from(self.busy_start.0) * 1000 + ps)
    }

    /// Starts `frame` at `now` (not before [`free_at`](Self::free_at)); returns its
    /// start time.
    #[inline]
    pub fn start(&mut self, now: Nanos, frame: &[u8]) -> Nanos {
        let bits = self.framing.wire_bits(frame);
        self.start_bits(now, bits)
    }

    /// Starts a frame that occupies `bits` on the wire (its [`Framing::wire_bits`]) at
    /// `now`; returns its start time.
    #[inline]
    pub fn start_bits(&mut self, now: Nanos, bits: u64) -> Nanos {
        if now > self.free_at || self.bits == 0 {
            // Idle since the last frame ended: a new busy period (after a rate change, no
            // sooner than the frame before it ended).
            self.busy_start = now.max(self.free_at);
            self.bits = 0;
        }
        self.bits += bits;
        let ns = match self.bits.checked_mul(self.fs_per_bit) {
            Some(fs) if self.fs_per_bit != 0 => fs.div_ceil(1_000_000),
            _ => (u128::from(self.bits) * 1_000_000_000).div_ceil(u128::from(self.bits_per_sec))
                as u64,
        };
        self.free_at = self.busy_start.saturating_add(Nanos(ns));
        now
    }
}

/// Femtoseconds per bit at `bits_per_sec` when that is a whole number, else 0.
fn fs_per_bit(bits_per_sec: u64) -> u64 {
    if 1_000_000_000_000_000 % bits_per_sec.max(1) == 0 {
        1_000_000_000_000_000 / bits_per_sec.max(1)
    } else {
        0
    }
}

/// One direction of a link: a [`Transmitter`] that puts frames on the wire one after
/// another at the line rate, then a cable that delays each by the propagation time
/// (htsim's queue and pipe, less the queue's buffer: whoever hands frames over holds them
/// until they go).
///
/// A frame handed over at `at` starts once the wire is free, and lands (its last bit has
/// crossed the cable) its [`Framing::frame_time`] and the propagation delay later, never
/// before the frame ahead of it: frames never pass each other.
#[derive(Debug, Clone)]
pub struct Wire {
    tx: Transmitter,
    propagation: Nanos,
    /// When the last frame carried landed.
    last_landed: Nanos,
}

/// One frame's trip over a [`Wire`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trip {
    /// When its first bit went on the wire.
    pub start: Nanos,
    /// When its last bit had crossed the cable.
    pub landed: Nanos,
    /// How much later it started than the wire was free for it: the time a floor held it
    /// (see [`Wire::carry_landing_no_sooner`]).
    pub held: Nanos,
}

impl Wire {
    /// An idle wire: `tx` (its rate and framing), then a cable of `propagation`.
    pub fn new(tx: Transmitter, propagation: Nanos) -> Wire {
        Wire {
            tx,
            propagation,
            last_landed: Nanos::ZERO,
        }
    }

    /// The line rate frames are serialised at, bit/s.
    pub fn bits_per_sec(&self) -> u64 {
        self.tx.bits_per_sec()
    }

    /// The cable's one-way propagation delay.
    pub fn propagation(&self) -> Nanos {
        self.propagation
    }

    /// The earliest time the next frame may start.
    #[inline]
    pub fn free_at(&self) -> Nanos {
        self.tx.free_at()
    }

    /// Carries `frame`, handed over at `at`: it starts once the wire is free, then takes
    /// its serialisation time and the cable.
    #[inline]
    pub fn carry(&mut self, at: Nanos, frame: &[u8]) -> Trip {
        self.carry_landing_no_sooner(at, frame, Nanos::ZERO)
    }

    /// As [`carry`](Self::carry), for a short frame and the payload it elides.
    #[inline]
    pub fn carry_elided(&mut self, at: Nanos, frame: &[u8], elided: Elided) -> Trip {
        let bits = self.tx.framing().wire_bits_elided(frame, elided);
        self.carry_bits(at, bits, Nanos::ZERO)
    }

    /// As [`carry`](Self::carry), but a frame that would land before `floor` starts late
    /// enough to land then, as over a cable that much longer; the frames behind it keep
    /// their spacing on the wire. [`Trip::held`] says how much later it started.
    #[inline]
    pub fn carry_landing_no_sooner(&mut self, at: Nanos, frame: &[u8], floor: Nanos) -> Trip {
        let bits = self.tx.framing().wire_bits(frame);
        self.carry_bits(at, bits, floor)
    }

    /// Carries a frame of `bits` on the wire (gap included), landing no sooner than
    /// `floor`.
    #[inline]
    fn carry_bits(&mut self, at: Nanos, bits: u64, floor: Nanos) -> Trip {
        let framing = self.tx.framing();
        let serialise = bits_time(bits - framing.gap_bits(), self.tx.bits_per_sec());
        let due = at.max(self.tx.free_at());
        let earliest = floor.saturating_sub(serialise + self.propagation);
        let start = self.tx.start_bits(due.max(earliest), bits);
        let landed = (start + serialise + self.propagation).max(self.last_landed);
        self.last_landed = landed;
        Trip {
            start,
            landed,
            held: start - due,
        }
    }

    /// When the first `bits` of the frame of `trip` had crossed the cable (a cut-through
    /// receiver takes a frame in then); never after the whole frame.
    pub fn head_landed(&self, trip: &Trip, bits: u64) -> Nanos {
        (trip.start + bits_time(bits, self.tx.bits_per_sec()) + self.propagation).min(trip.landed)
    }

    /// Serialises at `bits_per_sec` from now on; the frame on the wire finishes at the old
    /// rate.
    pub fn set_rate(&mut self, bits_per_sec: u64) {
        self.tx.set_rate(bits_per_sec);
    }

    /// Forgets the frames still waiting for the wire: the next frame starts when it is
    /// handed over (it still lands no sooner than the frame ahead of it).
    pub fn drop_backlog(&mut self) {
        self.tx = Transmitter::with_framing(self.tx.bits_per_sec(), self.tx.framing());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_change_times_the_next_frame_at_the_new_rate() {
        // 100 Gb/s: a 1000-byte frame (with gap) is 1024 B = 81.92 ns on the wire.
        let mut tx = Transmitter::new(100_000_000_000);
        tx.start(Nanos(0), &[0; 1000]);
        assert_eq!(tx.free_at(), Nanos(82));
        // Slower from now: the frame on the wire keeps its end; the next one starts
        // there and takes four times as long at 25 Gb/s (327.68 ns).
        tx.set_rate(25_000_000_000);
        assert_eq!(tx.free_at(), Nanos(82));
        assert_eq!(tx.start(Nanos(82), &[0; 1000]), Nanos(82));
        assert_eq!(tx.free_at(), Nanos(82 + 328));
        // Back to 100 Gb/s on an idle link.
        tx.set_rate(100_000_000_000);
        tx.start(Nanos(1000), &[0; 1000]);
        assert_eq!(tx.free_at(), Nanos(1082));
    }

    #[test]
    fn wire_times_are_the_128_bit_quotient_rounded_up_on_both_sides_of_the_fast_path() {
        let exact = |bits: u64, rate: u64| {
            Nanos((u128::from(bits) * 1_000_000_000).div_ceil(u128::from(rate.max(1))) as u64)
        };
        let ps = |bits: u64, rate: u64| {
            (u128::from(bits) * 1_000_000_000_000).div_ceil(u128::from(rate.max(1)))
        };
        let edge = u64::MAX / 1_000_000_000;
        let edge_ps = u64::MAX / 1_000_000_000_000;
        for bits in [
            0,
            1,
            672,
            8848,
            72_000,
            edge_ps - 1,
            edge_ps,
            edge_ps + 1,
            edge - 1,
            edge,
            edge + 1,
            u64::MAX / 2,
        ] {
            for rate in [
                0,
                1,
                3,
                1_000_000_000,
                25_000_000_000,
                400_000_000_000,
                7_777_777_777,
            ] {
                assert_eq!(
                    bits_time(bits, rate),
                    exact(bits, rate),
                    "{bits} bits at {rate}"
                );
                assert_eq!(
                    scaled_div_ceil(bits, 1_000_000_000_000, rate),
                    ps(bits, rate),
                    "{bits} bits at {rate}, in ps"
                );
            }
        }
    }

    #[test]
    fn wire_time_at_100g_is_exact_over_a_long_burst() {
        let mut tx = Transmitter::new(100_000_000_000);
        let mut now = Nanos(1000);
        // 1000 frames of 1082 bytes: (1082 + 24) × 8 = 8848 bits = 88.48 ns each.
        for _ in 0..1000 {
            now = tx.start(now.max(tx.free_at()), &[0; 1082]);
        }
        assert_eq!(tx.free_at(), Nanos(1000 + 88_480));
    }

    #[test]
    fn an_infiniband_packet_is_the_frame_with_an_lrh_for_its_ethernet_ip_and_udp_headers() {
        let frame = |ethertype: [u8; 2], tagged: bool, len: usize| {
            let mut f = vec![0u8; len];
            if tagged {
                f[12..14].copy_from_slice(&[0x81, 0x00]);
                f[16..18].copy_from_slice(&ethertype);
            } else {
                f[12..14].copy_from_slice(&ethertype);
            }
            f
        };
        // A 4 KiB WRITE middle: 14 + 20 + 8 + 12 + 4096 + 4 = 4154 bytes; as IB, LRH 8 +
        // BTH 12 + 4096 + ICRC 4 + VCRC 2 = 4122.
        assert_eq!(ib_packet_bytes(&frame([0x08, 0x00], false, 4154)), 4122);
        assert_eq!(ib_packet_bytes_ipv4(4154), 4122);
        // Tagged: the 4-byte tag goes too.
        assert_eq!(ib_packet_bytes(&frame([0x08, 0x00], true, 4158)), 4122);
        // IPv6: its 40-byte header becomes a GRH of the same size.
        assert_eq!(
            ib_packet_bytes(&frame([0x86, 0xdd], false, 4174)),
            4122 + 40
        );
        // On the wire, two delimiters and no gap: 4124 bytes at 100 Gb/s is 329.92 ns.
        let f = frame([0x08, 0x00], false, 4154);
        assert_eq!(Framing::InfiniBand.wire_bits(&f), 4124 * 8);
        assert_eq!(
            Framing::InfiniBand.frame_time(&f, 100_000_000_000),
            Nanos(330)
        );
    }

    /// A frame of `len` bytes on the wire, IEEE 802.3: padded to 60, then FCS and
    /// preamble (its last bit), then the gap (the next frame's first), in ns at `gbps`.
    fn ethernet_ns(len: u64, gbps: u64) -> (u64, u64) {
        let last_bit = (len.max(60) + 4 + 8) * 8;
        ((last_bit).div_ceil(gbps), (last_bit + 96).div_ceil(gbps))
    }

    #[test]
    fn a_frame_on_an_idle_wire_lands_its_frame_time_and_the_cable_after_it_is_handed_over() {
        for (gbps, len) in [(1, 4138), (10, 42), (25, 1000), (100, 1082), (400, 9000)] {
            let rate = gbps * 1_000_000_000;
            let mut w = Wire::new(Transmitter::new(rate), Nanos(700));
            let trip = w.carry(Nanos(5_000), &vec![0; len as usize]);
            let (last_bit, _) = ethernet_ns(len, gbps);
            assert_eq!(trip.start, Nanos(5_000), "{gbps} Gb/s, {len} B");
            assert_eq!(
                trip.landed,
                Nanos(5_000 + last_bit + 700),
                "{gbps} Gb/s, {len} B"
            );
            assert_eq!(
                trip.landed,
                Nanos(5_000) + frame_time(len as usize, rate) + Nanos(700)
            );
            assert_eq!(trip.held, Nanos::ZERO);
        }
    }

    #[test]
    fn frames_handed_over_together_go_back_to_back_a_wire_time_apart_exactly() {
        // 100 Gb/s, 1082-byte frames: (1082 + 24) × 8 = 8848 bits = 88.48 ns apart, the
        // k-th starting at ⌈88.48 k⌉ with no drift; each has its last bit 87.52 → 88 ns
        // after it starts (no gap), then the cable.
        let mut w = Wire::new(Transmitter::new(100_000_000_000), Nanos(1_000));
        for k in 0..1000u64 {
            let trip = w.carry(Nanos(0), &[0; 1082]);
            let start = (8848 * k).div_ceil(100);
            assert_eq!(trip.start, Nanos(start), "frame {k}");
            assert_eq!(trip.landed, Nanos(start + 88 + 1_000), "frame {k}");
        }
        assert_eq!(w.free_at(), Nanos(88_480));
        // Handed over after the wire went idle: it starts at once.
        assert_eq!(w.carry(Nanos(100_000), &[0; 1082]).start, Nanos(100_000));
    }

    #[test]
    fn frames_never_pass_each_other() {
        let mut w = Wire::new(Transmitter::new(1_000_000_000), Nanos(500));
        let mut last = Nanos::ZERO;
        let mut check = |trip: Trip| {
            assert!(trip.landed >= last, "{trip:?} lands before {last:?}");
            last = trip.landed;
        };
        // A jumbo frame, then a runt whose wire is forgotten: the runt would land 72 µs
        // sooner, and lands with the jumbo instead.
        let jumbo = w.carry(Nanos(0), &[0; 9000]);
        check(jumbo);
        w.drop_backlog();
        let runt = w.carry(Nanos(0), &[0; 60]);
        assert_eq!(runt.start, Nanos(0));
        assert_eq!(runt.landed, jumbo.landed);
        check(runt);
        // A floor far ahead, then none: the frames behind it still land after it.
        check(w.carry_landing_no_sooner(Nanos(1_000), &[0; 100], Nanos(1_000_000)));
        for len in [9000, 64, 1500, 60, 4138] {
            check(w.carry(Nanos(1_000), &vec![0; len]));
        }
    }

    #[test]
    fn a_floor_holds_a_frame_to_land_then_and_the_frames_behind_keep_their_spacing() {
        // 1 Gb/s, 4138-byte frames: 33,200 ns to the last bit, 33,296 ns apart.
        let mut w = Wire::new(Transmitter::new(1_000_000_000), Nanos(500));
        let floor = Nanos(100_000);
        let first = w.carry_landing_no_sooner(Nanos(0), &[0; 4138], floor);
        assert_eq!(first.landed, floor);
        assert_eq!(first.start, Nanos(100_000 - 33_200 - 500));
        assert_eq!(first.held, first.start);
        for k in 1..3u64 {
            let trip = w.carry_landing_no_sooner(Nanos(0), &[0; 4138], floor);
            assert_eq!(trip.landed, floor + Nanos(k * 33_296));
            assert_eq!(trip.held, Nanos::ZERO, "the wire, not the floor, held it");
        }
        // A floor already behind the wire holds nothing.
        let late = w.carry_landing_no_sooner(Nanos(500_000), &[0; 4138], floor);
        assert_eq!(late.landed, Nanos(500_000 + 33_200 + 500));
    }

    #[test]
    fn a_cut_through_receiver_has_the_head_its_header_time_after_the_start() {
        // 100 Gb/s: a 64-byte header is 512 bits, 5.12 → 6 ns, then the 300 ns cable.
        let mut w = Wire::new(Transmitter::new(100_000_000_000), Nanos(300));
        let trip = w.carry(Nanos(1_000), &[0; 4154]);
        assert_eq!(w.head_landed(&trip, 512), Nanos(1_000 + 6 + 300));
        // A header longer than the frame: the whole frame.
        let runt = w.carry(Nanos(10_000), &[0; 60]);
        assert_eq!(w.head_landed(&runt, 100_000), runt.landed);
    }

    #[test]
    fn an_infiniband_wire_spaces_packets_by_their_delimiters_and_no_gap() {
        // A 4154-byte RoCEv2 WRITE middle is a 4122-byte InfiniBand packet, 4124 bytes
        // with its delimiters: 329.92 ns at 100 Gb/s, back to back with no gap.
        let mut w = Wire::new(
            Transmitter::with_framing(100_000_000_000, Framing::InfiniBand),
            Nanos(100),
        );
        let mut frame = vec![0u8; 4154];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        for k in 0..4u64 {
            let trip = w.carry(Nanos(0), &frame);
            let start = (4124 * 8 * k).div_ceil(100);
            assert_eq!(trip.start, Nanos(start));
            assert_eq!(trip.landed, Nanos((4124 * 8 * (k + 1)).div_ceil(100) + 100));
        }
    }

    #[test]
    fn runt_frames_are_padded_on_the_wire() {
        assert_eq!(wire_bits(42), (60 + 24) * 8);
    }
}
