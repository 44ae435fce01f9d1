//! HPCC's in-band network telemetry (Li et al., SIGCOMM 2019, §3.2; the HPCC simulator's
//! `int-header.h`): a trailer of hop records between a RoCE packet's payload and its ICRC.
//!
//! A sender that wants telemetry sets [`INT_REQUEST`] in the BTH's reserved FECN/BECN byte
//! (the byte the ICRC masks, so the flag costs no ICRC) and leaves [`TRAILER_LEN`] zero
//! bytes after the payload. Each switch appends its egress record as the packet leaves
//! (and writes the ICRC again). The receiver copies the trailer into the ACK, flagged
//! [`INT_ECHO`], which switches leave alone. The bytes travel on the wire, so the
//! telemetry's overhead shows in every rate.
//!
//! A hop is 8 bytes, big-endian, laid out as the HPCC simulator's `IntHop`: link rate code
//! (3 bits), timestamp (24 bits, ns, wrapping), transmitted bytes (20 bits, in 128-byte
//! units, wrapping), queue length (17 bits, in 80-byte units, saturating).

/// BTH byte 4 flag: switches append a hop record to this packet's trailer.
pub const INT_REQUEST: u8 = 0x20;
/// BTH byte 4 flag: this ACK echoes a data packet's trailer.
pub const INT_ECHO: u8 = 0x10;
/// Most hop records a trailer holds (HPCC's `maxHop`).
pub const MAX_HOPS: usize = 5;
/// Bytes of one hop record.
pub const HOP_LEN: usize = 8;
/// Bytes of the trailer: a 4-byte header (hop count, three reserved bytes) and the hops.
pub const TRAILER_LEN: usize = 4 + MAX_HOPS * HOP_LEN;

/// The link rates a hop's 3-bit code names, bit/s.
pub const RATES_BPS: [u64; 8] = [
    10_000_000_000,
    25_000_000_000,
    40_000_000_000,
    50_000_000_000,
    100_000_000_000,
    200_000_000_000,
    400_000_000_000,
    800_000_000_000,
];
/// Units of the byte counter, bytes.
pub const BYTES_UNIT: u64 = 128;
/// Units of the queue length, bytes.
pub const QLEN_UNIT: u64 = 80;
const TIME_BITS: u32 = 24;
const BYTES_BITS: u32 = 20;
const QLEN_BITS: u32 = 17;

/// One switch's egress record, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntHop {
    /// The egress link's rate, bit/s (one of [`RATES_BPS`]).
    pub rate_bps: u64,
    /// When the packet left, ns, modulo 2^24.
    pub time_ns: u64,
    /// Bytes the port had sent, in [`BYTES_UNIT`]s, modulo 2^20.
    pub tx_units: u64,
    /// The egress queue behind the packet, bytes (a multiple of [`QLEN_UNIT`]).
    pub qlen_bytes: u64,
}

impl IntHop {
    /// The record of a port at `rate_bps` that has sent `tx_bytes` and has `qlen_bytes`
    /// queued at `time_ns`. A rate not in [`RATES_BPS`] is recorded as the nearest.
    pub fn new(rate_bps: u64, time_ns: u64, tx_bytes: u64, qlen_bytes: u64) -> IntHop {
        let code = rate_code(rate_bps);
        IntHop {
            rate_bps: RATES_BPS[code],
            time_ns: time_ns & mask(TIME_BITS),
            tx_units: (tx_bytes / BYTES_UNIT) & mask(BYTES_BITS),
            qlen_bytes: (qlen_bytes / QLEN_UNIT).min(mask(QLEN_BITS)) * QLEN_UNIT,
        }
    }

    /// The 8 bytes on the wire.
    pub fn encode(&self) -> [u8; HOP_LEN] {
        let v = ((rate_code(self.rate_bps) as u64) << 61)
            | ((self.time_ns & mask(TIME_BITS)) << 37)
            | ((self.tx_units & mask(BYTES_BITS)) << 17)
            | (self.qlen_bytes / QLEN_UNIT).min(mask(QLEN_BITS));
        v.to_be_bytes()
    }

    /// Reads 8 bytes of the wire.
    pub fn decode(b: [u8; HOP_LEN]) -> IntHop {
        let v = u64::from_be_bytes(b);
        IntHop {
            rate_bps: RATES_BPS[(v >> 61) as usize],
            time_ns: (v >> 37) & mask(TIME_BITS),
            tx_units: (v >> 17) & mask(BYTES_BITS),
            qlen_bytes: (v & mask(QLEN_BITS)) * QLEN_UNIT,
        }
    }

    /// Nanoseconds from `earlier`'s timestamp to this one's (the clock wraps at 2^24).
    pub fn time_since(&self, earlier: &IntHop) -> u64 {
        self.time_ns.wrapping_sub(earlier.time_ns) & mask(TIME_BITS)
    }

    /// Bytes sent from `earlier`'s record to this one's (the counter wraps at 2^20 units).
    pub fn bytes_since(&self, earlier: &IntHop) -> u64 {
        (self.tx_units.wrapping_sub(earlier.tx_units) & mask(BYTES_BITS)) * BYTES_UNIT
    }
}

fn mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

/// The code of the rate in [`RATES_BPS`] nearest `rate_bps`.
fn rate_code(rate_bps: u64) -> usize {
    (0..RATES_BPS.len())
        .min_by_key(|&i| RATES_BPS[i].abs_diff(rate_bps))
        .unwrap_or(0)
}

/// Appends `hop` to `trailer` (the [`TRAILER_LEN`] bytes before the ICRC); `false` when
/// it is full or too short.
pub fn push_hop(trailer: &mut [u8], hop: &IntHop) -> bool {
    let Some(&n) = trailer.first() else {
        return false;
    };
    let n = usize::from(n);
    if trailer.len() < TRAILER_LEN || n >= MAX_HOPS {
        return false;
    }
    let at = 4 + n * HOP_LEN;
    trailer[at..at + HOP_LEN].copy_from_slice(&hop.encode());
    trailer[0] = (n + 1) as u8;
    true
}

/// The hops of a trailer, into `out` (cleared first); nothing if it is too short.
pub fn hops(trailer: &[u8], out: &mut Vec<IntHop>) {
    out.clear();
    if trailer.len() < TRAILER_LEN {
        return;
    }
    let n = usize::from(trailer[0]).min(MAX_HOPS);
    for k in 0..n {
        let at = 4 + k * HOP_LEN;
        let mut b = [0u8; HOP_LEN];
        b.copy_from_slice(&trailer[at..at + HOP_LEN]);
        out.push(IntHop::decode(b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record round-trips through its 8 bytes, with the units and wraps of the layout:
    /// 100 Gb/s; 2^24 + 5 ns wraps to 5; 1 280 000 bytes are 10 000 units of 128; a
    /// queue of 8 000 bytes is 100 units of 80.
    #[test]
    fn a_hop_round_trips_with_its_units() {
        let hop = IntHop::new(100_000_000_000, (1 << 24) + 5, 1_280_000, 8_000);
        assert_eq!(hop.time_ns, 5);
        assert_eq!(hop.tx_units, 10_000);
        assert_eq!(hop.qlen_bytes, 8_000);
        assert_eq!(IntHop::decode(hop.encode()), hop);
        let later = IntHop::new(100_000_000_000, (1 << 24) + 1_005, 1_280_000 + 12_800, 0);
        assert_eq!(later.time_since(&hop), 1_000);
        assert_eq!(later.bytes_since(&hop), 12_800);
        let wrapped = IntHop::new(100_000_000_000, 3, 0, 0);
        let before = IntHop::new(100_000_000_000, (1 << 24) - 7, 0, 0);
        assert_eq!(wrapped.time_since(&before), 10, "across the 24-bit wrap");
    }

    /// Five hops fit; a sixth is refused and the count stays 5.
    #[test]
    fn a_trailer_holds_five_hops() {
        let mut t = [0u8; TRAILER_LEN];
        for k in 0..5 {
            assert!(push_hop(&mut t, &IntHop::new(25_000_000_000, k, 0, 0)));
        }
        assert!(!push_hop(&mut t, &IntHop::default()));
        let mut out = Vec::new();
        hops(&t, &mut out);
        assert_eq!(out.len(), 5);
        assert_eq!(out[4].time_ns, 4);
        assert_eq!(out[0].rate_bps, 25_000_000_000);
    }
}
