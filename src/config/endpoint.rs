//! The endpoint configuration: RC transport, marking, and DCQCN with every parameter of
//! DCQCN (docs/dcqcn.md), the paper's values by default and the published variants as options.

use super::{ConfigError, parse_toml};
use crate::time::Nanos;
use crate::wire::Ecn;
use serde::Deserialize;

/// The ECN codepoint an endpoint puts on its data packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnCodepoint {
    /// ECT(0), `"ect0"`: ECN-capable, the RoCEv2 norm.
    #[default]
    Ect0,
    /// ECT(1), `"ect1"`.
    Ect1,
    /// Not-ECT, `"not-ect"`: switches drop (WRED) instead of marking.
    NotEct,
}

impl From<EcnCodepoint> for Ecn {
    fn from(c: EcnCodepoint) -> Ecn {
        match c {
            EcnCodepoint::Ect0 => Ecn::Ect0,
            EcnCodepoint::Ect1 => Ecn::Ect1,
            EcnCodepoint::NotEct => Ecn::NotEct,
        }
    }
}

/// How the hyper-increase step grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HyperIncrease {
    /// Rt += Rhai × (min(iT, iB) − F + 1): the paper.
    #[default]
    Linear,
    /// Rt += Rhai: HPCC's simulator and NIC firmware.
    Constant,
}

/// When a cut sets the target rate to the current rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClampTarget {
    /// On every cut: the paper.
    #[default]
    Always,
    /// Only if a rate-timer increase happened since the last cut (firmware
    /// clamp_tgt_rate 0, clamp_tgt_rate_after_time_inc 1).
    AfterTimerIncrease,
}

/// DCQCN (Zhu et al., SIGCOMM 2015): reaction point and notification point.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DcqcnConfig {
    /// Rate control on (off: the sender always sends at line rate).
    pub enabled: bool,
    /// Alpha gain g.
    pub g: f64,
    /// Alpha timer K, µs.
    pub alpha_timer_us: f64,
    /// Rate-increase timer T, µs.
    pub rate_timer_us: f64,
    /// Byte counter B, bytes (0: off).
    pub byte_counter_bytes: u64,
    /// Fast-recovery steps F.
    pub fast_recovery_steps: u32,
    /// Additive increase Rai, Mb/s.
    pub rai_mbps: f64,
    /// Hyper increase Rhai, Mb/s.
    pub rhai_mbps: f64,
    /// Minimum rate Rmin, Mb/s.
    pub rmin_mbps: f64,
    /// How the hyper-increase step grows (default `linear`, the paper's).
    pub hyper_increase: HyperIncrease,
    /// Cuts closer than this are ignored, µs (0: every CNP cuts; HPCC and firmware: 4).
    pub min_cut_interval_us: f64,
    /// When a cut clamps the target rate.
    pub clamp_target: ClampTarget,
    /// Notification point: at most one CNP per QP per this many µs (N).
    pub cnp_interval_us: f64,
}

impl Default for DcqcnConfig {
    /// The paper's parameters (Zhu et al., SIGCOMM 2015, table 1; Rhai and Rmin, not given
    /// in the paper, from the authors' ns-3 sample).
    fn default() -> Self {
        DcqcnConfig {
            enabled: true,
            g: 1.0 / 256.0,
            alpha_timer_us: 55.0,
            rate_timer_us: 55.0,
            byte_counter_bytes: 10_000_000,
            fast_recovery_steps: 5,
            rai_mbps: 40.0,
            rhai_mbps: 200.0,
            rmin_mbps: 100.0,
            hyper_increase: HyperIncrease::Linear,
            min_cut_interval_us: 0.0,
            clamp_target: ClampTarget::Always,
            cnp_interval_us: 50.0,
        }
    }
}

fn us(v: f64) -> Nanos {
    Nanos((v * 1000.0).round() as u64)
}

fn mbps(v: f64) -> u64 {
    (v * 1e6).round() as u64
}

impl DcqcnConfig {
    /// Alpha timer K.
    pub fn alpha_timer(&self) -> Nanos {
        us(self.alpha_timer_us)
    }
    /// Rate timer T.
    pub fn rate_timer(&self) -> Nanos {
        us(self.rate_timer_us)
    }
    /// Minimum interval between cuts.
    pub fn min_cut_interval(&self) -> Nanos {
        us(self.min_cut_interval_us)
    }
    /// CNP interval N.
    pub fn cnp_interval(&self) -> Nanos {
        us(self.cnp_interval_us)
    }
    /// Rai, bit/s.
    pub fn rai(&self) -> u64 {
        mbps(self.rai_mbps)
    }
    /// Rhai, bit/s.
    pub fn rhai(&self) -> u64 {
        mbps(self.rhai_mbps)
    }
    /// Rmin, bit/s.
    pub fn rmin(&self) -> u64 {
        mbps(self.rmin_mbps)
    }

    /// Checks the values; errors name the key under `key`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let bad = |field: &str, why: &str| {
            Err(ConfigError {
                key: format!("{key}.{field}"),
                message: why.to_owned(),
            })
        };
        if !(self.g > 0.0 && self.g <= 1.0) {
            return bad("g", "must be in (0, 1]");
        }
        for (field, v) in [
            ("alpha_timer_us", self.alpha_timer_us),
            ("rate_timer_us", self.rate_timer_us),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(field, "must be a positive number of µs");
            }
        }
        for (field, v) in [
            ("min_cut_interval_us", self.min_cut_interval_us),
            ("cnp_interval_us", self.cnp_interval_us),
            ("rai_mbps", self.rai_mbps),
            ("rhai_mbps", self.rhai_mbps),
            ("rmin_mbps", self.rmin_mbps),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(field, "must be 0 or more");
            }
        }
        if self.fast_recovery_steps == 0 {
            return bad("fast_recovery_steps", "must be at least 1");
        }
        if self.rmin_mbps <= 0.0 {
            return bad(
                "rmin_mbps",
                "must be above 0, or a cut could stop a flow for good",
            );
        }
        Ok(())
    }
}

/// An endpoint (one RoCE NIC port).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EndpointConfig {
    /// Link rate, Gb/s.
    pub link_gbps: f64,
    /// Path MTU: payload bytes per packet, 256 to 4096, a power of two.
    pub mtu: u32,
    /// DSCP of data and acknowledges.
    pub dscp: u8,
    /// ECN codepoint of data: "ect0", "ect1" or "not-ect".
    pub ecn: EcnCodepoint,
    /// DSCP of CNPs.
    pub cnp_dscp: u8,
    /// `[dscp, priority]` pairs the NIC uses to pick the PFC priority of what it sends;
    /// unlisted DSCPs go on priority 0.
    pub dscp_to_priority: Vec<[u8; 2]>,
    /// AckReq on every this-many packets of a message (and always on its last).
    pub ack_every: u32,
    /// Most packets outstanding (unacknowledged) per QP.
    pub window_packets: u32,
    /// Retransmission timeout, µs: the IB local ACK timeout, 4.096 µs × 2^exponent. The
    /// default is exponent 14 (67.1 ms), the value RoCE NIC guides recommend; much
    /// shorter and a QP that DCQCN slows down times out before its ACK can come back.
    pub rto_us: f64,
    /// `[dcqcn]`: the QPs' rate control (Zhu et al., SIGCOMM 2015).
    pub dcqcn: DcqcnConfig,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            link_gbps: 100.0,
            mtu: 1024,
            dscp: 26,
            ecn: EcnCodepoint::Ect0,
            cnp_dscp: 48,
            dscp_to_priority: vec![[24, 3], [26, 3], [48, 6]],
            ack_every: 16,
            window_packets: 1024,
            rto_us: 4.096 * f64::from(1u32 << 14),
            dcqcn: DcqcnConfig::default(),
        }
    }
}

impl EndpointConfig {
    /// Parses a TOML text (the keys of [`EndpointConfig`]; unset keys keep their
    /// defaults, unknown keys are refused). A syntax or schema error, or a value of the
    /// wrong type or spelling, is keyed by "line L, column C", as
    /// [`SwitchConfig::from_toml`](super::SwitchConfig::from_toml) does.
    ///
    /// This only parses: it does not [`validate`](Self::validate), because callers
    /// override fields first (the link rate from the command line or the topology) and
    /// must validate the result themselves.
    pub fn from_toml(text: &str) -> Result<EndpointConfig, ConfigError> {
        parse_toml(text, "endpoint")
    }

    /// Checks the values; errors name the key under `key` (e.g. "endpoint").
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let bad = |field: &str, why: String| {
            Err(ConfigError {
                key: format!("{key}.{field}"),
                message: why,
            })
        };
        if !(self.link_gbps.is_finite() && (0.001..=1600.0).contains(&self.link_gbps)) {
            return bad(
                "link_gbps",
                format!("{} is not allowed; give 0.001 to 1600", self.link_gbps),
            );
        }
        if !(256..=4096).contains(&self.mtu) || !self.mtu.is_power_of_two() {
            return bad(
                "mtu",
                format!(
                    "{} is not an IB path MTU: 256, 512, 1024, 2048 or 4096",
                    self.mtu
                ),
            );
        }
        if self.dscp > 63 || self.cnp_dscp > 63 {
            return bad("dscp", "DSCPs are 0-63".into());
        }
        if self.ack_every == 0 || self.window_packets == 0 {
            return bad(
                "ack_every",
                "ack_every and window_packets must be at least 1".into(),
            );
        }
        if self.window_packets >= 1 << 23 {
            return bad(
                "window_packets",
                "must stay below 2^23 (half the PSN space)".into(),
            );
        }
        if !(self.rto_us.is_finite() && self.rto_us > 0.0) {
            return bad("rto_us", "must be a positive number of µs".into());
        }
        for [d, p] in &self.dscp_to_priority {
            if *d > 63 || *p > 7 {
                return bad(
                    "dscp_to_priority",
                    format!("[{d}, {p}]: DSCP 0-63, priority 0-7"),
                );
            }
        }
        self.dcqcn.validate(&format!("{key}.dcqcn"))
    }

    /// Link rate, bit/s.
    pub fn bits_per_sec(&self) -> u64 {
        (self.link_gbps * 1e9).round() as u64
    }

    /// The PFC priority the NIC sends `dscp` on.
    pub fn priority_of(&self, dscp: u8) -> u8 {
        self.dscp_to_priority
            .iter()
            .find(|[d, _]| *d == dscp)
            .map_or(0, |[_, p]| *p)
    }

    /// `rto_us` as a duration.
    pub fn rto(&self) -> Nanos {
        us(self.rto_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_toml_keys_errors_by_line_and_column() {
        let e = EndpointConfig::from_toml("mtu = 1024\ndscp = 26\necn = \"ce\"\n").unwrap_err();
        assert!(e.key.starts_with("line 3"), "{e}");
        assert!(e.message.contains("unknown variant `ce`"), "{e}");
        assert!(e.message.contains("`ect0`, `ect1`, `not-ect`"), "{e}");
        let e = EndpointConfig::from_toml("mtu = 1024\n\nlink_gbps = \"fast\"\n").unwrap_err();
        assert_eq!(e.key, "line 3, column 13", "{e}");
        let e = EndpointConfig::from_toml("mtu = 1024\n[dcqcn]\ngg = 0.5\n").unwrap_err();
        assert!(e.key.starts_with("line 3"), "{e}");
        assert!(e.message.contains("unknown field `gg`"), "{e}");
    }

    #[test]
    fn from_toml_keeps_defaults_and_the_ecn_spellings() {
        assert_eq!(
            EndpointConfig::from_toml("").unwrap(),
            EndpointConfig::default()
        );
        for (text, ecn) in [
            ("ect0", EcnCodepoint::Ect0),
            ("ect1", EcnCodepoint::Ect1),
            ("not-ect", EcnCodepoint::NotEct),
        ] {
            let cfg = EndpointConfig::from_toml(&format!("ecn = \"{text}\"")).unwrap();
            assert_eq!(cfg.ecn, ecn);
            cfg.validate("endpoint").unwrap();
        }
        assert_eq!(Ecn::from(EcnCodepoint::NotEct), Ecn::NotEct);
    }

    #[test]
    fn from_toml_does_not_validate() {
        let cfg = EndpointConfig::from_toml("link_gbps = 0").unwrap();
        let e = cfg.validate("endpoint").unwrap_err();
        assert_eq!(e.key, "endpoint.link_gbps", "{e}");
    }
}
