//! The endpoint configuration: RC transport, marking, and DCQCN with every parameter of
//! DCQCN (docs/dcqcn.md), the paper's values by default and the published variants as options.

pub use super::cc::{Cc, DctcpConfig, HpccConfig, SwiftConfig, TimelyConfig};
use super::{ConfigError, MAX_BUFFER_BYTES, pairs, parse_toml};
use crate::time::Nanos;
use crate::wire::Ecn;
use serde::Deserialize;

/// The ECN codepoint an endpoint puts on its data packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HyperIncrease {
    /// Rt += Rhai × (min(iT, iB) − F + 1), or × (iT − F) without a byte counter: the paper.
    #[default]
    Linear,
    /// Rt += Rhai: HPCC's simulator and NIC firmware.
    Constant,
}

/// When a cut sets the target rate to the current rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClampTarget {
    /// On every cut: the paper.
    #[default]
    Always,
    /// Only if a rate-timer increase happened since the last cut (firmware
    /// clamp_tgt_rate 0, clamp_tgt_rate_after_time_inc 1).
    AfterTimerIncrease,
}

/// What the notification point does with a CE mark inside its CNP interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CnpMode {
    /// A mark inside the interval is answered by one CNP when the interval ends, so no
    /// congestion goes unreported (rocelab's default; what the DCQCN paper's fluid model
    /// assumes: a CNP for every interval with a mark).
    #[default]
    Deferred,
    /// The first mark is answered at once and later marks inside the interval are
    /// ignored: the DCQCN paper's notification point as its text states it, and its
    /// authors' ns-3 model.
    FirstMark,
}

/// How an RC QP recovers lost packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// `"go-back-n"`: the responder discards a packet out of order and NAKs the PSN it
    /// expected; the requester resends everything from there (IBA 9.7.5.1; what RoCE
    /// NICs do on a lossless class).
    #[default]
    GoBackN,
    /// `"selective-repeat"`: IRN (Mittal et al., SIGCOMM 2018). The responder places an
    /// out-of-order packet directly and NAKs with the PSN it expects and the one that
    /// came; the requester resends only what is lost, keeps at most a BDP of packets in
    /// flight, and times out after a short RTO when few packets are outstanding.
    SelectiveRepeat,
}

/// `[selective_repeat]`: IRN's parameters, used when `transport = "selective-repeat"`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelectiveRepeatConfig {
    /// Most packets in flight per QP (sent and neither acknowledged nor selectively
    /// acknowledged): IRN's BDP cap. 0: the simulator sets it to the bandwidth-delay
    /// product of the longest path in its topology; elsewhere, no cap below
    /// `window_packets`.
    pub bdp_cap_packets: u32,
    /// The retransmission timeout, µs (IRN's RTO_high).
    pub rto_high_us: f64,
    /// The timeout when at most `rto_low_packets` are outstanding, µs (IRN's RTO_low): a
    /// loss at the end of a message is found without waiting for RTO_high.
    pub rto_low_us: f64,
    /// Outstanding packets at or below which `rto_low_us` applies (IRN's N).
    pub rto_low_packets: u32,
    /// The reorder tolerance: a packet is lost only once one sent this many sends after
    /// it has arrived (1: IRN's rule, for paths that keep order). 0: the simulator picks
    /// (1, or half the BDP cap when the fabric sprays packets); elsewhere 1.
    #[serde(skip_serializing_if = "is_zero")]
    pub reorder_packets: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Default for SelectiveRepeatConfig {
    fn default() -> Self {
        SelectiveRepeatConfig {
            bdp_cap_packets: 0,
            rto_high_us: 320.0,
            rto_low_us: 100.0,
            rto_low_packets: 3,
            reorder_packets: 0,
        }
    }
}

/// DCQCN (Zhu et al., SIGCOMM 2015): reaction point and notification point.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
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
    /// Byte counter B, bytes (0: off, and the rate timer alone sets the recovery phase).
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
    /// Notification point: a mark inside the interval gets a CNP at its end
    /// (`deferred`), or is ignored (`first_mark`, the paper's).
    pub cnp_mode: CnpMode,
    /// A window of BDP × Rc / line rate bytes in flight besides the rate (the HPCC
    /// simulator's `HAS_WIN 1, VAR_WIN 1`, run.py's `dcqcn_vwin`); off by default.
    pub window: bool,
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
            cnp_mode: CnpMode::Deferred,
            window: false,
        }
    }
}

/// Longest configured time, µs: one hour.
pub const MAX_TIME_US: f64 = 3_600_000_000.0;

/// Shortest non-zero configured time, µs: one nanosecond (times are kept in whole ns).
pub const MIN_TIME_US: f64 = 0.001;

/// Highest link rate, Gb/s (and so the highest DCQCN rate, 1 600 000 Mb/s).
pub const MAX_LINK_GBPS: f64 = 1600.0;

/// Lowest link rate, Gb/s.
pub const MIN_LINK_GBPS: f64 = 0.001;

/// Most fast-recovery steps F (NVIDIA firmware's `rpg_threshold` allows 1 to 31).
pub const MAX_FAST_RECOVERY_STEPS: u32 = 1000;

/// Lowest Rmin, Mb/s: 1 kb/s.
pub const MIN_RMIN_MBPS: f64 = 0.001;

/// Whole ns of `v` µs; saturating (the float cast saturates, NaN gives 0), though
/// validated values are 0 or 1 ns to 1 hour.
fn us(v: f64) -> Nanos {
    Nanos((v * 1000.0).round() as u64)
}

/// bit/s of `v` Mb/s, saturating like [`us`].
fn mbps(v: f64) -> u64 {
    (v * 1e6).round() as u64
}

/// What is wrong with `v` µs as a time, unless it is in [`MIN_TIME_US`, `MAX_TIME_US`]
/// (or 0 when `zero_ok`).
fn time_us_problem(v: f64, zero_ok: bool) -> Option<String> {
    if (zero_ok && v == 0.0) || (v.is_finite() && (MIN_TIME_US..=MAX_TIME_US).contains(&v)) {
        return None;
    }
    Some(format!(
        "{v} is not allowed; give {}0.001 to 3600000000 µs (1 ns to 1 hour)",
        if zero_ok { "0, or " } else { "" }
    ))
}

fn dscp_priority_pairs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<[u8; 2]>, D::Error> {
    pairs(d, "dscp, priority")
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
        for (field, v, zero_ok) in [
            ("alpha_timer_us", self.alpha_timer_us, false),
            ("rate_timer_us", self.rate_timer_us, false),
            ("min_cut_interval_us", self.min_cut_interval_us, true),
            ("cnp_interval_us", self.cnp_interval_us, true),
        ] {
            if let Some(why) = time_us_problem(v, zero_ok) {
                return bad(field, &why);
            }
        }
        if self.byte_counter_bytes > MAX_BUFFER_BYTES {
            return bad(
                "byte_counter_bytes",
                &format!(
                    "{} is not allowed; give 0 (off) to {MAX_BUFFER_BYTES} bytes (1 TiB)",
                    self.byte_counter_bytes
                ),
            );
        }
        if !(1..=MAX_FAST_RECOVERY_STEPS).contains(&self.fast_recovery_steps) {
            return bad(
                "fast_recovery_steps",
                &format!(
                    "{} is not allowed; give 1 to {MAX_FAST_RECOVERY_STEPS}",
                    self.fast_recovery_steps
                ),
            );
        }
        let max_mbps = MAX_LINK_GBPS * 1000.0;
        for (field, v) in [("rai_mbps", self.rai_mbps), ("rhai_mbps", self.rhai_mbps)] {
            if !(v.is_finite() && (0.0..=max_mbps).contains(&v)) {
                return bad(
                    field,
                    &format!(
                        "{v} is not allowed; give 0 to {max_mbps} Mb/s (and at most the link rate)"
                    ),
                );
            }
        }
        if self.rmin_mbps <= 0.0 {
            return bad(
                "rmin_mbps",
                "must be above 0, or a cut could stop a flow for good",
            );
        }
        if !(self.rmin_mbps.is_finite() && (MIN_RMIN_MBPS..=max_mbps).contains(&self.rmin_mbps)) {
            return bad(
                "rmin_mbps",
                &format!(
                    "{} is not allowed; give {MIN_RMIN_MBPS} to {max_mbps} Mb/s (and at most the link rate)",
                    self.rmin_mbps
                ),
            );
        }
        Ok(())
    }

    /// Checks the values ([`validate`](Self::validate)) and that the rates Rai, Rhai and
    /// Rmin are at most the link rate `link_gbps`.
    pub fn validate_for_link(&self, key: &str, link_gbps: f64) -> Result<(), ConfigError> {
        self.validate(key)?;
        let link_mbps = link_gbps * 1000.0;
        for (field, v) in [
            ("rai_mbps", self.rai_mbps),
            ("rhai_mbps", self.rhai_mbps),
            ("rmin_mbps", self.rmin_mbps),
        ] {
            if v > link_mbps {
                return Err(ConfigError {
                    key: format!("{key}.{field}"),
                    message: format!(
                        "{v} Mb/s is above the link rate ({link_gbps} Gb/s = {link_mbps} Mb/s); give at most {link_mbps}"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// An endpoint (one RoCE NIC port).
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
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
    #[serde(deserialize_with = "dscp_priority_pairs")]
    pub dscp_to_priority: Vec<[u8; 2]>,
    /// AckReq on every this-many packets of a message (and always on its last).
    pub ack_every: u32,
    /// Most packets outstanding (unacknowledged) per QP.
    pub window_packets: u32,
    /// Most QPs a host opens to one peer for workload flows (`[[workload]]`): a flow that
    /// arrives while all of them are busy waits for one.
    pub max_qps_per_peer: u32,
    /// Retransmission timeout, µs: the IB local ACK timeout, 4.096 µs × 2^exponent. The
    /// default is exponent 14 (67.1 ms), the value RoCE NIC guides recommend; much
    /// shorter and a QP that DCQCN slows down times out before its ACK can come back.
    /// With `transport = "selective-repeat"`, IRN's timeouts
    /// (`[selective_repeat]`) apply instead.
    pub rto_us: f64,
    /// Retransmissions after a timeout without progress before the QP gives up (IBA
    /// retry_cnt, 0 to 7; verbs' default 7): the QP goes to the error state and its
    /// outstanding work completes with `IBV_WC_RETRY_EXC_ERR`.
    pub retry_count: u8,
    /// How lost packets are recovered: `"go-back-n"` or `"selective-repeat"` (IRN).
    pub transport: Transport,
    /// IRN's parameters.
    pub selective_repeat: SelectiveRepeatConfig,
    /// `[dcqcn]`: the QPs' rate control (Zhu et al., SIGCOMM 2015).
    pub dcqcn: DcqcnConfig,
    /// The congestion control the QPs run: `dcqcn` (the default), `dctcp`, `hpcc`,
    /// `timely` or `swift` (docs/congestion-control.md).
    pub cc: Cc,
    /// The fabric's base RTT the window-based controls size their window from (BDP = line
    /// rate × base RTT), µs; 0: the simulator's longest path (10 µs elsewhere).
    pub base_rtt_us: f64,
    /// `[dctcp]`: DCTCP's parameters (with `cc = "dctcp"`).
    pub dctcp: DctcpConfig,
    /// `[hpcc]`: HPCC's parameters (with `cc = "hpcc"`).
    pub hpcc: HpccConfig,
    /// `[timely]`: TIMELY's parameters (with `cc = "timely"`).
    pub timely: TimelyConfig,
    /// `[swift]`: Swift's parameters (with `cc = "swift"`).
    pub swift: SwiftConfig,
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
            max_qps_per_peer: 4,
            rto_us: 4.096 * f64::from(1u32 << 14),
            retry_count: 7,
            transport: Transport::GoBackN,
            selective_repeat: SelectiveRepeatConfig::default(),
            dcqcn: DcqcnConfig::default(),
            cc: Cc::Dcqcn,
            base_rtt_us: 0.0,
            dctcp: DctcpConfig::default(),
            hpcc: HpccConfig::default(),
            timely: TimelyConfig::default(),
            swift: SwiftConfig::default(),
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
        parse_toml(text, "endpoint").map_err(|e| {
            let known = super::did_you_mean::leaf_keys(&[super::ENDPOINT_DEFAULTS], "");
            super::did_you_mean::with_hint(e, &known)
        })
    }

    /// Checks the values; errors name the key under `key` (e.g. "endpoint").
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        let bad = |field: &str, why: String| {
            Err(ConfigError {
                key: format!("{key}.{field}"),
                message: why,
            })
        };
        if !(self.link_gbps.is_finite()
            && (MIN_LINK_GBPS..=MAX_LINK_GBPS).contains(&self.link_gbps))
        {
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
        if self.dscp > 63 {
            return bad("dscp", "DSCPs are 0-63".into());
        }
        if self.cnp_dscp > 63 {
            return bad("cnp_dscp", "DSCPs are 0-63".into());
        }
        if self.ack_every == 0 {
            return bad(
                "ack_every",
                "give at least 1 (an ACK every N packets)".into(),
            );
        }
        if self.window_packets == 0 {
            return bad(
                "window_packets",
                "give at least 1 (packets in flight per QP)".into(),
            );
        }
        if self.window_packets >= 1 << 23 {
            return bad(
                "window_packets",
                "must stay below 2^23 (half the PSN space)".into(),
            );
        }
        if self.ack_every > self.window_packets {
            return bad(
                "ack_every",
                format!(
                    "{} is above window_packets ({}): a message longer than the window would wait for an ACK nobody asked for",
                    self.ack_every, self.window_packets
                ),
            );
        }
        if !(1..=1024).contains(&self.max_qps_per_peer) {
            return bad("max_qps_per_peer", "give 1 to 1024".into());
        }
        if let Some(why) = time_us_problem(self.rto_us, false) {
            return bad("rto_us", why);
        }
        if self.retry_count > 7 {
            return bad(
                "retry_count",
                format!(
                    "{} does not fit IBA's 3-bit retry_cnt; give 0 to 7",
                    self.retry_count
                ),
            );
        }
        self.selective_repeat
            .validate(&format!("{key}.selective_repeat"))?;
        let mut listed_at = [None; 64];
        for (i, [d, p]) in self.dscp_to_priority.iter().copied().enumerate() {
            if d > 63 || p > 7 {
                return bad(
                    "dscp_to_priority",
                    format!("[{d}, {p}]: DSCP 0-63, priority 0-7"),
                );
            }
            if let Some(first) = listed_at[usize::from(d)].replace(i) {
                return bad(
                    "dscp_to_priority",
                    format!(
                        "[{d}, {p}]: DSCP {d} is listed twice (entries {first} and {i}); give each DSCP one priority"
                    ),
                );
            }
        }
        self.dcqcn
            .validate_for_link(&format!("{key}.dcqcn"), self.link_gbps)?;
        super::cc::validate(
            key,
            self.base_rtt_us,
            &self.dctcp,
            &self.hpcc,
            &self.timely,
            &self.swift,
        )
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

impl SelectiveRepeatConfig {
    /// Checks the values; errors name the key under `key`.
    pub fn validate(&self, key: &str) -> Result<(), ConfigError> {
        for (field, v) in [
            ("rto_high_us", self.rto_high_us),
            ("rto_low_us", self.rto_low_us),
        ] {
            if let Some(why) = time_us_problem(v, false) {
                return Err(ConfigError {
                    key: format!("{key}.{field}"),
                    message: why,
                });
            }
        }
        if self.rto_low_us > self.rto_high_us {
            return Err(ConfigError {
                key: format!("{key}.rto_low_us"),
                message: format!(
                    "{} µs is above rto_high_us ({} µs): the short timeout must not be the longer one",
                    self.rto_low_us, self.rto_high_us
                ),
            });
        }
        Ok(())
    }

    /// `rto_high_us` as a duration.
    pub fn rto_high(&self) -> Nanos {
        us(self.rto_high_us)
    }

    /// `rto_low_us` as a duration.
    pub fn rto_low(&self) -> Nanos {
        us(self.rto_low_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_toml_keys_errors_by_line_column_and_key() {
        let e = EndpointConfig::from_toml("mtu = 1024\ndscp = 26\necn = \"ce\"\n").unwrap_err();
        assert!(e.key.starts_with("line 3"), "{e}");
        assert!(e.message.contains("unknown variant `ce`"), "{e}");
        assert!(e.message.contains("`ect0`, `ect1`, `not-ect`"), "{e}");
        let e = EndpointConfig::from_toml("mtu = 1024\n\nlink_gbps = \"fast\"\n").unwrap_err();
        assert_eq!(e.key, "line 3, column 13 (link_gbps)", "{e}");
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

    /// Review item 1: timers of 1e-4 µs rounded to 0 ns and of 1e300 µs saturated and then
    /// wrapped when added to the clock; Rmin above the link showed Rc as 18 446 744 073
    /// Gb/s. Each is refused with its key and range.
    #[test]
    fn timers_and_rates_out_of_range_are_refused() {
        let key_of = |cfg: EndpointConfig| cfg.validate("endpoint").unwrap_err();
        for v in [1e-4, 1e300, 0.0, -1.0, f64::NAN, f64::INFINITY, 3.6e9 + 1.0] {
            let mut cfg = EndpointConfig::default();
            cfg.dcqcn.rate_timer_us = v;
            let e = key_of(cfg);
            assert_eq!(e.key, "endpoint.dcqcn.rate_timer_us", "{v}: {e}");
            assert!(e.message.contains("1 ns to 1 hour"), "{e}");
            let e = key_of(EndpointConfig {
                rto_us: v,
                ..EndpointConfig::default()
            });
            assert_eq!(e.key, "endpoint.rto_us", "{v}: {e}");
            let mut cfg = EndpointConfig::default();
            cfg.dcqcn.cnp_interval_us = v;
            if v != 0.0 {
                assert_eq!(key_of(cfg).key, "endpoint.dcqcn.cnp_interval_us", "{v}");
            } else {
                cfg.validate("endpoint").unwrap();
            }
        }
        let mut cfg = EndpointConfig::default();
        cfg.dcqcn.rate_timer_us = 0.001;
        cfg.rto_us = 3.6e9;
        cfg.validate("endpoint").unwrap();
        assert_eq!(cfg.dcqcn.rate_timer(), Nanos(1));
        assert_eq!(cfg.rto(), Nanos(3_600_000_000_000));

        let mut cfg = EndpointConfig {
            link_gbps: 10.0,
            ..EndpointConfig::default()
        };
        cfg.dcqcn.rmin_mbps = 10_001.0;
        let e = key_of(cfg.clone());
        assert_eq!(e.key, "endpoint.dcqcn.rmin_mbps", "{e}");
        assert!(e.message.contains("above the link rate (10 Gb/s"), "{e}");
        cfg.dcqcn.rmin_mbps = 10_000.0;
        cfg.validate("endpoint").unwrap();
        cfg.dcqcn.rhai_mbps = 1e300;
        assert_eq!(key_of(cfg.clone()).key, "endpoint.dcqcn.rhai_mbps");
        cfg.dcqcn.rhai_mbps = 200.0;
        cfg.dcqcn.fast_recovery_steps = u32::MAX;
        assert_eq!(
            key_of(cfg.clone()).key,
            "endpoint.dcqcn.fast_recovery_steps"
        );
        cfg.dcqcn.fast_recovery_steps = 5;
        cfg.dcqcn.byte_counter_bytes = u64::MAX;
        assert_eq!(key_of(cfg.clone()).key, "endpoint.dcqcn.byte_counter_bytes");
        cfg.dcqcn.byte_counter_bytes = 0;
        cfg.ack_every = 2000;
        assert_eq!(key_of(cfg.clone()).key, "endpoint.ack_every");
    }

    /// Review item 2: a `[dscp, priority]` pair with extra elements, and a DSCP listed
    /// twice (the first silently won), are refused.
    #[test]
    fn dscp_to_priority_pairs_are_pairs_each_dscp_once() {
        let e = EndpointConfig::from_toml(
            "dscp_to_priority = [[26, 3], [48, 6, 1]]
",
        )
        .unwrap_err();
        assert!(e.key.starts_with("line 1"), "{e}");
        assert!(
            e.message.contains("entry 1 has 3 element(s)")
                && e.message.contains("[dscp, priority]"),
            "{e}"
        );
        let cfg = EndpointConfig::from_toml(
            "dscp_to_priority = [[26, 3], [48, 6], [26, 5]]
",
        )
        .unwrap();
        let e = cfg.validate("endpoint").unwrap_err();
        assert_eq!(e.key, "endpoint.dscp_to_priority", "{e}");
        assert!(e.message.contains("DSCP 26 is listed twice"), "{e}");
        let e = EndpointConfig {
            cnp_dscp: 64,
            ..EndpointConfig::default()
        }
        .validate("endpoint")
        .unwrap_err();
        assert_eq!(e.key, "endpoint.cnp_dscp", "{e}");
    }

    #[test]
    fn from_toml_does_not_validate() {
        let cfg = EndpointConfig::from_toml("link_gbps = 0").unwrap();
        let e = cfg.validate("endpoint").unwrap_err();
        assert_eq!(e.key, "endpoint.link_gbps", "{e}");
    }
}
