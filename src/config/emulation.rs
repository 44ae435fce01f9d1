//! What emulating a fabric in software changes in its configuration: link rates far below
//! the hardware's (veth and threads move about a gigabit), and a pause that reaches the
//! sender through several threads instead of a cable.

use super::endpoint::DcqcnConfig;
use super::{CLASSES, PortConfig, SwitchConfig};

/// The link rate DCQCN's published rate steps are for (Zhu et al., SIGCOMM 2015: 40 Gb/s).
pub const DCQCN_PAPER_GBPS: f64 = 40.0;

/// Scales DCQCN's rate steps (Rai, Rhai) and floor (Rmin) from the paper's 40 Gb/s to a
/// link of `link_gbps`, so that recovery takes as long, relative to the link, as it would
/// on hardware: at 1 Gb/s the paper's 40 Mb/s per 55 µs would refill the link in about a
/// millisecond and keep a congested queue tens of ms deep.
pub fn scale_dcqcn(dcqcn: &mut DcqcnConfig, link_gbps: f64) {
    let scale = link_gbps / DCQCN_PAPER_GBPS;
    dcqcn.rai_mbps *= scale;
    dcqcn.rhai_mbps *= scale;
    dcqcn.rmin_mbps *= scale;
}

/// Bytes a link of `bits_per_sec` delivers in `ms` milliseconds (saturating).
pub fn bytes_in(bits_per_sec: u64, ms: f64) -> u64 {
    (bits_per_sec as f64 / 8.0 * ms / 1e3) as u64
}

/// Gives every lossless priority group at least the headroom that `ms` of traffic at
/// `bits_per_sec` needs, on top of what the cable formula gives for the default port: on
/// veth a pause reaches the sender through several threads, far slower than a cable.
pub fn software_headroom(cfg: &mut SwitchConfig, bits_per_sec: u64, ms: f64) {
    let software = bytes_in(bits_per_sec, ms);
    let port = PortConfig {
        bits_per_sec,
        ..cfg.port_defaults.clone()
    };
    for pg in 0..CLASSES {
        if cfg.pgs[pg].lossless {
            let have = cfg.headroom_bytes(pg, &port);
            cfg.pgs[pg].headroom_bytes = Some(have.max(software));
        }
    }
}

/// The shared buffer the lab's story gives its incast, per Gb/s of the emulated link:
/// 1 MiB, about 8 ms of the link. A switch's tens of megabytes hold a few milliseconds of
/// its 100–400 Gb/s ports; at the lab's gigabit the presets' 32–40 MB would be seconds,
/// and nothing would ever pause.
pub const STORY_BUFFER_PER_GBPS: u64 = 1 << 20;

/// Shrinks the shared buffer to [`STORY_BUFFER_PER_GBPS`] times the link's Gb/s (never
/// grows it, and keeps at least 64 KiB), so that an incast reaches the ECN and XOFF
/// thresholds at an emulated rate. Returns the new size.
pub fn scale_buffer(cfg: &mut SwitchConfig, bits_per_sec: u64) -> u64 {
    let scaled = ((STORY_BUFFER_PER_GBPS as f64 * bits_per_sec as f64 / 1e9) as u64).max(1 << 16);
    cfg.shared_bytes = cfg.shared_bytes.min(scaled);
    cfg.shared_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcqcn_steps_scale_with_the_link() {
        let mut d = DcqcnConfig::default();
        let (rai, rhai) = (d.rai_mbps, d.rhai_mbps);
        scale_dcqcn(&mut d, 1.0);
        assert_eq!(d.rai_mbps, rai / 40.0);
        assert_eq!(d.rhai_mbps, rhai / 40.0);
    }

    #[test]
    fn the_story_buffer_is_a_mebibyte_per_gigabit_and_never_grows() {
        let mut cfg = SwitchConfig::preset("nexus-ai").unwrap();
        assert_eq!(scale_buffer(&mut cfg, 1_000_000_000), 1 << 20);
        assert_eq!(
            scale_buffer(&mut cfg, 2_000_000_000),
            1 << 20,
            "never grows"
        );
        let mut cfg = SwitchConfig::preset("nexus-ai").unwrap();
        assert_eq!(
            scale_buffer(&mut cfg, 10_000_000),
            1 << 16,
            "a floor of 64 KiB"
        );
    }

    #[test]
    fn software_headroom_is_the_bytes_of_its_time() {
        let mut cfg = SwitchConfig::preset("nexus-ai").unwrap();
        // 8 ms at 1 Gb/s: 1 000 000 bytes, far above any cable's headroom.
        software_headroom(&mut cfg, 1_000_000_000, 8.0);
        for pg in 0..CLASSES {
            if cfg.pgs[pg].lossless {
                assert_eq!(cfg.pgs[pg].headroom_bytes, Some(1_000_000));
            }
        }
        // 0 ms keeps the cable formula's value.
        let mut cfg = SwitchConfig::preset("nexus-ai").unwrap();
        let port = PortConfig {
            bits_per_sec: 1_000_000_000,
            ..cfg.port_defaults.clone()
        };
        let cable = cfg.headroom_bytes(3, &port);
        software_headroom(&mut cfg, 1_000_000_000, 0.0);
        assert_eq!(cfg.pgs[3].headroom_bytes, Some(cable));
    }
}
