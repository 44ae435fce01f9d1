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

/// The time a peer may take to act on a PFC frame, in quanta of 512 bit times: the
/// upper bound of IEEE 802.3 annex 31B.3.7 (timing considerations for PAUSE operation, as
/// amended for each new rate): 100M 1, 1G 2, 10G 67, 25G 80, 40G 118, 50G 147, 100G 394,
/// 200G 453, 400G 905, as sonic-swss's headroom plugins list them from that clause
/// (`pause_quanta_per_speed` in `cfgmgr/buffer_headroom_mellanox.lua`). The response
/// does not scale with the rate: 400G's is 2.3 times 100G's, not 4 times. Speeds between
/// the listed ones take the next higher value (2.5G and 5G: 10G's); above 400 Gb/s the
/// 400G value stands (SONiC uses it for 800G; no figure of IEEE 802.3df was found).
pub fn peer_response_quanta(bits_per_sec: u64) -> u64 {
    const M: u64 = 1_000_000;
    const G: u64 = 1_000_000_000;
    match bits_per_sec {
        r if r <= 100 * M => 1,
        r if r <= G => 2,
        r if r <= 10 * G => 67,
        r if r <= 25 * G => 80,
        r if r <= 40 * G => 118,
        r if r <= 50 * G => 147,
        r if r <= 100 * G => 394,
        r if r <= 200 * G => 453,
        _ => 905,
    }
}

/// Bytes of line time the PFC frame itself takes to arrive whole (64 B and an 8-byte
/// preamble): the peer's response runs from its reception (IEEE 802.3 annex 31B.3.7), and
/// 802.1Qbb annex N counts it as a delay of its own.
pub const PFC_FRAME_WIRE_BYTES: u64 = 72;

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
        .saturating_add(PFC_FRAME_WIRE_BYTES)
        .saturating_add(response_bytes)
}

/// How a lossless PG's headroom is computed when the configuration does not give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadroomModel {
    /// [`min_headroom_bytes`]: 2 × MTU + 2 × cable delay × rate + the PFC frame + the
    /// peer's response (IEEE 802.1Qbb annex N, 802.3 annex 31B), the least that loses
    /// nothing when every delay is what the standards allow.
    #[default]
    Ieee,
    /// [`mlx5_headroom_bytes`]: the formula NVIDIA's Linux driver (mlx5e) programs into
    /// its NICs' receive buffers, with margins for the MAC, PHY and pipeline.
    Mlx5,
    /// [`sonic_mellanox_headroom_bytes`]: the `xoff` SONiC's dynamic buffer model computes
    /// for a Spectrum-1 switch (sonic-swss `cfgmgr/buffer_headroom_mellanox.lua`).
    SonicMellanox,
}

/// SONiC's dynamic buffer model on a Mellanox Spectrum-1 switch
/// (`cfgmgr/buffer_headroom_mellanox.lua` in sonic-swss, constants from
/// `platform/mellanox/asic_table.j2` in sonic-buildimage): cell 96 B, MAC/PHY delay
/// 0.8 KiB, no gearbox, and the default lossless traffic pattern (CONFIG_DB
/// `LOSSLESS_TRAFFIC_PATTERN`: lossless MTU 1024 B, 50 % small packets).
pub mod sonic_mellanox {
    /// Cell size of Spectrum-1, bytes.
    pub const CELL_BYTES: f64 = 96.0;
    /// MAC and PHY delay, bytes (0.8 KiB).
    pub const MAC_PHY_BYTES: f64 = 0.8 * 1024.0;
    /// Pipeline latency, bytes (19 KiB): the profile's `xon`, the PG's reserve.
    pub const PIPELINE_BYTES: u64 = 19 * 1024;
    /// Largest frame of the lossless traffic, bytes (`LOSSLESS_TRAFFIC_PATTERN|mtu`).
    pub const LOSSLESS_MTU: f64 = 1024.0;
    /// Share of small (64-byte) packets, percent (`small_packet_percentage`).
    pub const SMALL_PACKET_PERCENT: f64 = 50.0;
    /// Light in the cable, m/s, as the plugin takes it.
    pub const LIGHT_M_PER_S: f64 = 198e6;
    /// The peer's response, quanta, per port speed in Mb/s (the plugin's table, which
    /// cites IEEE 802.3 annex 31B.3.7; [`super::peer_response_quanta`] has the same
    /// values); other speeds take the ASIC's peer response time of 3.8 KiB.
    pub fn pause_quanta(speed_mbps: u64) -> Option<u64> {
        match speed_mbps {
            100 => Some(1),
            1_000 => Some(2),
            10_000 => Some(67),
            25_000 => Some(80),
            40_000 => Some(118),
            50_000 => Some(147),
            100_000 => Some(394),
            200_000 => Some(453),
            400_000 | 800_000 => Some(905),
            _ => None,
        }
    }
}

fn roundup_1024(x: f64) -> u64 {
    ((x / 1024.0).ceil() * 1024.0) as u64
}

/// The headroom (`xoff`) SONiC's dynamic buffer model gives a lossless PG of `port` on a
/// Spectrum-1 switch without a shared headroom pool:
///
/// ```text
/// wcf   = ceil(2 × cell / (1 + cell))                 worst-case cells per 64 B packet
/// spb   = 100 × 64 / ((spp × 64 + (100 − spp) × lossless_mtu) / 100)
/// occ   = (100 − spb + spb × wcf) / 100               buffer per byte received
/// prop  = MTU + 2 × cable × speed / light / 8 × 1000/1024 + mac_phy + peer response (quanta × 64)
/// xoff  = roundup_1024(lossless_mtu + prop × occ), plus 2048 when that is more than
///         2048 below roundup_1024(lossless_mtu + prop × wcf)
/// ```
///
/// At 100 Gb/s, 5 m, MTU 9100: 44 032 B (xon 19 456, size 63 488), as the plugin gives.
pub fn sonic_mellanox_headroom_bytes(port: &PortConfig) -> u64 {
    use sonic_mellanox::*;
    let speed_mbps = port.bits_per_sec / 1_000_000;
    let wcf = if CELL_BYTES > 128.0 {
        (CELL_BYTES / 64.0).ceil()
    } else {
        (2.0 * CELL_BYTES / (1.0 + CELL_BYTES)).ceil()
    };
    let spp = SMALL_PACKET_PERCENT;
    let spb = 100.0 * 64.0 / ((spp * 64.0 + (100.0 - spp) * LOSSLESS_MTU) / 100.0);
    let occ = (100.0 - spb + spb * wcf) / 100.0;
    let peer = match pause_quanta(speed_mbps) {
        Some(q) => (q * 512 / 8) as f64,
        None => 3.8 * 1024.0,
    };
    let metres = port.cable.0 as f64 / CABLE_NS_PER_M as f64;
    // The plugin's arithmetic: 2 × length × speed in Mb/s × 10^9 / light / (8 × 1024),
    // 1000/1024 of the bytes on the cable (2.4 % fewer), kept to give its values.
    let cable = 2.0 * metres * speed_mbps as f64 * 1e9 / LIGHT_M_PER_S / (8.0 * 1024.0);
    let prop = f64::from(port.mtu) + cable + MAC_PHY_BYTES + peer;
    let mut xoff = roundup_1024(LOSSLESS_MTU + prop * occ);
    let worst = roundup_1024(LOSSLESS_MTU + prop * wcf);
    if xoff + 2048 < worst {
        xoff += 2048;
    }
    xoff
}

/// The XOFF headroom Linux's mlx5e driver sets for a port buffer (`calculate_xoff` in
/// `drivers/net/ethernet/mellanox/mlx5/core/en/port_buffer.c`): (301 + 2.16 × cable
/// length in metres) × speed in Gb/s, the speed taken as at least 40, plus 2.72 × MTU,
/// in bytes. At 100 G that is 216 B per metre of cable against the IEEE formula's 125,
/// and about 12 KB more for the fixed part: vendor practice, with margins.
pub fn mlx5_headroom_bytes(port: &PortConfig) -> u64 {
    let gbps = (port.bits_per_sec as f64 / 1e9).max(40.0);
    let metres = port.cable.0 as f64 / CABLE_NS_PER_M as f64;
    let bytes = (301.0 + 2.16 * metres) * gbps + 2.72 * f64::from(port.mtu);
    if bytes.is_finite() && bytes < u64::MAX as f64 {
        bytes.ceil() as u64
    } else {
        u64::MAX
    }
}

impl HeadroomModel {
    /// The headroom this model gives `port`, bytes.
    pub fn bytes(self, port: &PortConfig) -> u64 {
        match self {
            HeadroomModel::Ieee => min_headroom_bytes(port),
            HeadroomModel::Mlx5 => mlx5_headroom_bytes(port),
            HeadroomModel::SonicMellanox => sonic_mellanox_headroom_bytes(port),
        }
    }

    /// The formula with `port`'s inputs, in words (for explanations of drops).
    pub fn describe(self, port: &PortConfig) -> String {
        let gbps = port.bits_per_sec as f64 / 1e9;
        let metres = port.cable.0 / CABLE_NS_PER_M;
        match self {
            HeadroomModel::Ieee => {
                let q = peer_response_quanta(port.bits_per_sec);
                format!(
                    "2 x MTU {} + 2 x cable {} x {gbps} Gb/s + the PFC frame {PFC_FRAME_WIRE_BYTES} B + the peer's response {q} quanta ({} B), the smallest that loses nothing when the peer pauses on time",
                    port.mtu,
                    port.cable.human(),
                    q * 64
                )
            }
            HeadroomModel::Mlx5 => format!(
                "(301 + 2.16 x cable {metres} m) x {gbps} Gb/s (at least 40) + 2.72 x MTU {}, mlx5e's formula (buffer.headroom_model = \"mlx5\")",
                port.mtu
            ),
            HeadroomModel::SonicMellanox => format!(
                "SONiC's dynamic buffer model on Spectrum-1 for {gbps} Gb/s, {metres} m, MTU {} (buffer.headroom_model = \"sonic_mellanox\")",
                port.mtu
            ),
        }
    }

    /// Its name in a configuration file.
    pub fn name(self) -> &'static str {
        match self {
            HeadroomModel::Ieee => "ieee",
            HeadroomModel::Mlx5 => "mlx5",
            HeadroomModel::SonicMellanox => "sonic_mellanox",
        }
    }
}

fn saturate(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Nanos;

    #[test]
    fn mlx5_headroom_follows_the_drivers_formula() {
        let port = |gbps: u64, metres: u64, mtu: u32| PortConfig {
            name: "p".into(),
            bits_per_sec: gbps * 1_000_000_000,
            cable: Nanos(metres * CABLE_NS_PER_M),
            mtu,
        };
        // 100 G, 5 m, MTU 9216: (301 + 10.8) x 100 + 2.72 x 9216 = 31 180 + 25 067.52.
        assert_eq!(mlx5_headroom_bytes(&port(100, 5, 9216)), 56_248);
        // 216 B per metre at 100 G: 100 m more is 21 600 B more.
        assert_eq!(
            mlx5_headroom_bytes(&port(100, 105, 9216)) - mlx5_headroom_bytes(&port(100, 5, 9216)),
            21_600
        );
        // Below 40 G the driver takes 40: 10 G and 40 G give the same.
        assert_eq!(
            mlx5_headroom_bytes(&port(10, 5, 1500)),
            mlx5_headroom_bytes(&port(40, 5, 1500))
        );
        // Above the IEEE minimum at every common rate.
        for gbps in [10, 25, 40, 100, 400] {
            let p = port(gbps, 5, 9216);
            assert!(mlx5_headroom_bytes(&p) > min_headroom_bytes(&p), "{gbps} G");
        }
    }

    /// The worked examples of SONiC's plugin (Spectrum-1, lossless MTU 1024, 50 % small
    /// packets): 100 G, MTU 9100: 44 032 B at 5 m, 48 128 B at 40 m.
    #[test]
    fn sonic_mellanox_headroom_matches_the_plugins_examples() {
        let port = |metres: u64| PortConfig {
            name: "p".into(),
            bits_per_sec: 100_000_000_000,
            cable: Nanos(metres * CABLE_NS_PER_M),
            mtu: 9100,
        };
        assert_eq!(sonic_mellanox_headroom_bytes(&port(5)), 44_032);
        assert_eq!(sonic_mellanox_headroom_bytes(&port(40)), 48_128);
        assert_eq!(sonic_mellanox::PIPELINE_BYTES + 44_032, 63_488);
    }

    /// IEEE 802.3 annex 31B.3.7's bounds in bit times: 100G 201 728, 400G 463 360; and
    /// SONiC's table (the same clause) agrees at every speed it lists.
    #[test]
    fn peer_response_is_the_standards_bound_not_an_extrapolation() {
        const G: u64 = 1_000_000_000;
        assert_eq!(peer_response_quanta(100 * G) * 512, 201_728);
        assert_eq!(peer_response_quanta(400 * G) * 512, 463_360);
        assert_eq!(peer_response_quanta(200 * G), 453);
        // Between listed speeds, the next higher one's.
        assert_eq!(peer_response_quanta(300 * G), 905);
        assert_eq!(peer_response_quanta(800 * G), 905);
        for gbps in [10, 25, 40, 50, 100, 200, 400] {
            assert_eq!(
                sonic_mellanox::pause_quanta(gbps * 1000),
                Some(peer_response_quanta(gbps * G)),
                "{gbps} G"
            );
        }
        // 400 G, 5 m, MTU 9216: 2 x 9216 + 2 x 25 ns x 400 Gb/s / 8 + 905 x 64.
        let port = PortConfig {
            name: "p".into(),
            bits_per_sec: 400 * G,
            cable: Nanos(25),
            mtu: 9216,
        };
        assert_eq!(min_headroom_bytes(&port), 18_432 + 2_500 + 72 + 57_920);
    }

    #[test]
    fn headroom_at_100g_5m_mtu_9216() {
        let port = PortConfig {
            name: "p".into(),
            bits_per_sec: 100_000_000_000,
            cable: Nanos(25),
            mtu: 9216,
        };
        // 2 × 9216 + 2 × 25 ns × 100 Gb/s / 8 + the PFC frame + 394 × 64
        assert_eq!(min_headroom_bytes(&port), 18432 + 625 + 72 + 25216);
    }
}
