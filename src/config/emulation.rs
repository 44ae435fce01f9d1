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
/// grows it, and keeps at least 64 KiB), so that an incast reaches the XOFF point at an
/// emulated rate, and brings every queue's ECN Kmin and Kmax below it with the buffer
/// ([`ECN_KMIN_SHARE`], [`ECN_KMAX_SHARE`]; never raised): a Kmax left at 3 MB in a
/// 1 MiB buffer lies above the XOFF point, and ECN marked about 1 % of frames while PFC
/// did the work. Returns the new size.
pub fn scale_buffer(cfg: &mut SwitchConfig, bits_per_sec: u64) -> u64 {
    let scaled = ((STORY_BUFFER_PER_GBPS as f64 * bits_per_sec as f64 / 1e9) as u64).max(1 << 16);
    cfg.shared_bytes = cfg.shared_bytes.min(scaled);
    let share = |f: f64| (cfg.shared_bytes as f64 * f) as u64;
    let (kmin, kmax) = (share(ECN_KMIN_SHARE), share(ECN_KMAX_SHARE));
    for q in &mut cfg.queues {
        if let Some(ecn) = &mut q.ecn {
            ecn.kmin_bytes = ecn.kmin_bytes.min(kmin);
            ecn.kmax_bytes = ecn.kmax_bytes.min(kmax).max(ecn.kmin_bytes + 1);
        }
    }
    cfg.shared_bytes
}

/// Where the story's ECN starts marking, as a share of its shared buffer: well before a
/// paused PG's XOFF point (alpha 1 and three paused PGs: a quarter of the buffer each).
pub const ECN_KMIN_SHARE: f64 = 0.05;
/// Where it marks with Pmax: below the egress queue that three PGs at their XOFF points
/// make (three quarters of the buffer), so that DCQCN is cutting before PFC pauses; an
/// incast's first burst still reaches XOFF, and both act.
pub const ECN_KMAX_SHARE: f64 = 0.4;

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

    /// The story's buffer brings ECN below the XOFF point: nexus-ai's 150 KB / 3 MB
    /// become 5 % and 40 % of 1 MiB (Kmin is already lower: it stays); Pmax is kept.
    #[test]
    fn the_story_buffer_brings_ecn_below_its_xoff_point() {
        let mut cfg = SwitchConfig::preset("nexus-ai").unwrap();
        scale_buffer(&mut cfg, 1_000_000_000);
        let ecn = cfg.queues[3].ecn.as_ref().unwrap();
        assert_eq!((ecn.kmin_bytes, ecn.kmax_bytes), (52_428, 419_430));
        assert_eq!(ecn.pmax, 0.07);
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
