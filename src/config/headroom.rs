//! PFC headroom: the buffer a lossless priority group keeps for the bytes that still
//! arrive after it sends XOFF.
//!
//! After the switch decides to pause, it may first have to finish the frame it is sending
//! (one MTU), the PFC frame then crosses the cable, the peer takes its response time to
//! act, finishes the frame it is sending (one MTU), and the last bit crosses the cable
//! back: headroom = 2 × MTU + 2 × cable delay × rate + peer response
//! (docs/qos.md; IEEE 802.1Qbb annex N, IEEE 802.3 annex 31B).

use super::PortConfig;

/// Propagation delay of light in fibre or copper, ns per metre (about 2/3 c).
pub const CABLE_NS_PER_M: u64 = 5;

/// The time a peer may take to act on a PFC frame, in quanta of 512 bit times
/// (IEEE 802.3 annex 31B: 10G 67, 25G 80, 40G 118, 100G 394). Speeds between the listed
/// ones take the next higher value; above 100 Gb/s the 100G value scales with the rate,
/// an assumption where the standard gives no figure.
pub fn peer_response_quanta(bits_per_sec: u64) -> u64 {
    const G: u64 = 1_000_000_000;
    match bits_per_sec {
        r if r <= 10 * G => 67,
        r if r <= 25 * G => 80,
        r if r <= 40 * G => 118,
        r if r <= 100 * G => 394,
        r => saturate((394 * u128::from(r)).div_ceil(u128::from(100 * G))),
    }
}

/// The smallest headroom that loses nothing on `port`, in bytes. The arithmetic saturates
/// (at `u64::MAX`) instead of wrapping, so a longer cable, a faster port or a larger MTU
/// never gives less; validation keeps real values far below that.
pub fn min_headroom_bytes(port: &PortConfig) -> u64 {
    let mtu = u64::from(port.mtu);
    // 2 × cable delay × rate, in bytes, rounded up; the product of two u64 fits a u128.
    let cable_bytes = (u128::from(port.cable.0) * u128::from(port.bits_per_sec))
        .saturating_mul(2)
        .div_ceil(8 * 1_000_000_000);
    let response_bytes = peer_response_quanta(port.bits_per_sec).saturating_mul(512 / 8);
    (2 * mtu)
        .saturating_add(saturate(cable_bytes))
        .saturating_add(response_bytes)
}

fn saturate(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Nanos;

    #[test]
    fn headroom_at_100g_5m_mtu_9216() {
        let port = PortConfig {
            name: "p".into(),
            bits_per_sec: 100_000_000_000,
            cable: Nanos(25),
            mtu: 9216,
        };
        // 2 × 9216 + 2 × 25 ns × 100 Gb/s / 8 + 394 × 64
        assert_eq!(min_headroom_bytes(&port), 18432 + 625 + 25216);
    }
}
