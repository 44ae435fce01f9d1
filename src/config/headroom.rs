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
        r => (394 * r).div_ceil(100 * G),
    }
}

/// The smallest headroom that loses nothing on `port`, in bytes.
pub fn min_headroom_bytes(port: &PortConfig) -> u64 {
    let mtu = u64::from(port.mtu);
    // 2 × cable delay × rate, in bytes, rounded up.
    let cable_bytes = (2 * u128::from(port.cable.0) * u128::from(port.bits_per_sec))
        .div_ceil(8 * 1_000_000_000) as u64;
    let response_bytes = peer_response_quanta(port.bits_per_sec) * 512 / 8;
    2 * mtu + cable_bytes + response_bytes
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
