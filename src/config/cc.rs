//! The endpoint's congestion control beyond DCQCN (docs/congestion-control.md): which one a
//! QP runs (`cc`), and the parameters of DCTCP, HPCC, TIMELY and Swift, each as its source
//! publishes them by default.

use super::ConfigError;
use crate::time::Nanos;
use serde::Deserialize;

/// Which congestion control the QPs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cc {
    /// DCQCN (Zhu et al., SIGCOMM 2015): rate cut on CNPs, timer and byte-counter recovery.
    #[default]
    Dcqcn,
    /// DCTCP on an RDMA NIC, as the HPCC simulator runs it: a rate cut by alpha/2 once per
    /// window on an ECN-echo, alpha from the marked fraction with gain g.
    Dctcp,
    /// HPCC (Li et al., SIGCOMM 2019): window and rate from the in-band telemetry the
    /// switches add.
    Hpcc,
    /// TIMELY (Mittal et al., SIGCOMM 2015): rate from the RTT gradient.
    Timely,
    /// Swift (Kumar et al., SIGCOMM 2020): AIMD of a window on the delay against a target.
    Swift,
}

impl Cc {
    /// Every name, as the configuration spells it.
    pub const NAMES: [&'static str; 5] = ["dcqcn", "dctcp", "hpcc", "timely", "swift"];

    /// Its name in the configuration.
    pub fn name(self) -> &'static str {
        Cc::NAMES[self as usize]
    }
}

/// Nanoseconds of `v` µs (validated values are finite and in range).
fn us(v: f64) -> Nanos {
    Nanos((v * 1000.0).round() as u64)
}

/// Checks that `v` is finite and in `lo..=hi`; the error names `key.field`.
fn in_range(key: &str, field: &str, v: f64, lo: f64, hi: f64) -> Result<(), ConfigError> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        return Ok(());
    }
    Err(ConfigError {
        key: format!("{key}.{field}"),
        message: format!("{v} is not allowed; give {lo} to {hi}"),
    })
}

/// Highest rate a parameter may name, Mb/s (the highest link rate).
const MAX_MBPS: f64 = super::endpoint::MAX_LINK_GBPS * 1000.0;
/// Longest time a parameter may name, µs (one second: these are round-trip scales).
const MAX_US: f64 = 1_000_000.0;

/// DCTCP as the HPCC simulator runs it on RDMA NICs (`rdma-hw.cc`, `HandleAckDctcp`;
/// run.py's `dctcp`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpConfig {
    /// Alpha gain g (run.py: 1/16).
    pub g: f64,
    /// Rate added once per window without marks, Mb/s (run.py: 615, one 1 KB packet per
    /// 13 µs RTT).
    pub rai_mbps: f64,
    /// Lowest rate, Mb/s (run.py: 1000).
    pub min_rate_mbps: f64,
    /// A window of BDP × rate / line rate bytes in flight (run.py: on).
    pub window: bool,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig {
            g: 1.0 / 16.0,
            rai_mbps: 615.0,
            min_rate_mbps: 1000.0,
            window: true,
        }
    }
}

impl DctcpConfig {
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        in_range(key, "g", self.g, 1e-6, 1.0)?;
        in_range(key, "rai_mbps", self.rai_mbps, 0.0, MAX_MBPS)?;
        in_range(key, "min_rate_mbps", self.min_rate_mbps, 0.001, MAX_MBPS)
    }
}

/// HPCC (Li et al., SIGCOMM 2019, algorithm 1; the HPCC simulator's `UpdateRateHp`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HpccConfig {
    /// Target utilization η (run.py: 0.95).
    pub eta: f64,
    /// Additive-increase stages before a multiplicative step (maxStage; 0, as the
    /// authors' simulator runs it: the paper's 5 was a typo, they say).
    pub max_stage: u32,
    /// W_AI as a rate, Mb/s: added at each update (run.py: 10 × bw/25 Gb/s, 40 at 100G).
    pub wai_mbps: f64,
    /// Lowest rate, Mb/s (run.py: 1000).
    pub min_rate_mbps: f64,
    /// React to every ACK against the last per-RTT reference (run.py FAST_REACT 1).
    pub fast_react: bool,
    /// The window follows the rate (W = BDP × rate / line rate, run.py VAR_WIN 1); off:
    /// a fixed BDP window (the `hpcc_fixed_win` preset).
    pub var_window: bool,
}

impl Default for HpccConfig {
    fn default() -> Self {
        HpccConfig {
            eta: 0.95,
            max_stage: 0,
            wai_mbps: 40.0,
            min_rate_mbps: 1000.0,
            fast_react: true,
            var_window: true,
        }
    }
}

impl HpccConfig {
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        in_range(key, "eta", self.eta, 0.01, 1.0)?;
        in_range(key, "max_stage", f64::from(self.max_stage), 0.0, 1000.0)?;
        in_range(key, "wai_mbps", self.wai_mbps, 0.0, MAX_MBPS)?;
        in_range(key, "min_rate_mbps", self.min_rate_mbps, 0.001, MAX_MBPS)
    }
}

/// TIMELY (Mittal et al., SIGCOMM 2015, algorithm 1; the HPCC simulator's
/// `UpdateRateTimely` and its defaults).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimelyConfig {
    /// EWMA weight of a new RTT difference (0.875).
    pub ewma_alpha: f64,
    /// Multiplicative decrease β (0.8).
    pub beta: f64,
    /// Below this RTT the rate only grows, µs (50).
    pub t_low_us: f64,
    /// Above this RTT the rate is cut by β (1 − T_high/RTT), µs (500).
    pub t_high_us: f64,
    /// The RTT that normalises the gradient, µs (20).
    pub min_rtt_us: f64,
    /// Additive step δ, Mb/s (run.py: 10 × bw/10 Gb/s, 100 at 100G).
    pub rai_mbps: f64,
    /// Hyper-active step after `hai_after` increases in a row, Mb/s (run.py: 50 × bw/10).
    pub rhai_mbps: f64,
    /// Increases in a row before the hyper-active step (the paper's N = 5).
    pub hai_after: u32,
    /// Lowest rate, Mb/s (run.py: 1000).
    pub min_rate_mbps: f64,
    /// A window of BDP × rate / line rate (run.py `timely_vwin`); off: rate only.
    pub window: bool,
}

impl Default for TimelyConfig {
    fn default() -> Self {
        TimelyConfig {
            ewma_alpha: 0.875,
            beta: 0.8,
            t_low_us: 50.0,
            t_high_us: 500.0,
            min_rtt_us: 20.0,
            rai_mbps: 100.0,
            rhai_mbps: 500.0,
            hai_after: 5,
            min_rate_mbps: 1000.0,
            window: false,
        }
    }
}

impl TimelyConfig {
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        in_range(key, "ewma_alpha", self.ewma_alpha, 0.0, 1.0)?;
        in_range(key, "beta", self.beta, 0.0, 1.0)?;
        in_range(key, "t_low_us", self.t_low_us, 0.0, MAX_US)?;
        in_range(key, "t_high_us", self.t_high_us, 0.001, MAX_US)?;
        in_range(key, "min_rtt_us", self.min_rtt_us, 0.001, MAX_US)?;
        if self.t_high_us < self.t_low_us {
            return Err(ConfigError {
                key: format!("{key}.t_high_us"),
                message: format!(
                    "{} is below t_low_us ({}); give T_high ≥ T_low",
                    self.t_high_us, self.t_low_us
                ),
            });
        }
        in_range(key, "rai_mbps", self.rai_mbps, 0.0, MAX_MBPS)?;
        in_range(key, "rhai_mbps", self.rhai_mbps, 0.0, MAX_MBPS)?;
        in_range(key, "hai_after", f64::from(self.hai_after), 0.0, 1000.0)?;
        in_range(key, "min_rate_mbps", self.min_rate_mbps, 0.001, MAX_MBPS)
    }

    /// T_low.
    pub fn t_low(&self) -> Nanos {
        us(self.t_low_us)
    }
    /// T_high.
    pub fn t_high(&self) -> Nanos {
        us(self.t_high_us)
    }
}

/// Swift (Kumar et al., SIGCOMM 2020, algorithm 1 and §3.2-3.5).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwiftConfig {
    /// Target delay before hop and flow scaling, µs: the fabric's base RTT plus this.
    pub base_target_us: f64,
    /// Target added per switch on the path, µs.
    pub per_hop_us: f64,
    /// Switches on the path (0: the simulator's longest path; 1 elsewhere). Swift reads
    /// them from the IP TTL; rocelab's switches do not decrement it.
    pub hops: u32,
    /// Most target the flow-count scaling adds (at `fs_min_cwnd`), µs.
    pub fs_range_us: f64,
    /// Window (packets) at which the flow scaling adds all of `fs_range_us`.
    pub fs_min_cwnd: f64,
    /// Window (packets) at which the flow scaling adds nothing.
    pub fs_max_cwnd: f64,
    /// Additive increment, packets per RTT.
    pub ai: f64,
    /// Multiplicative decrease constant β.
    pub beta: f64,
    /// Largest cut at once (max_mdf).
    pub max_mdf: f64,
    /// Smallest window, packets (below one, packets are paced RTT / cwnd apart).
    pub min_cwnd: f64,
}

impl Default for SwiftConfig {
    fn default() -> Self {
        SwiftConfig {
            base_target_us: 2.0,
            per_hop_us: 1.0,
            hops: 0,
            fs_range_us: 8.0,
            fs_min_cwnd: 0.1,
            fs_max_cwnd: 100.0,
            ai: 1.0,
            beta: 0.8,
            max_mdf: 0.5,
            min_cwnd: 0.01,
        }
    }
}

impl SwiftConfig {
    fn validate(&self, key: &str) -> Result<(), ConfigError> {
        in_range(key, "base_target_us", self.base_target_us, 0.0, MAX_US)?;
        in_range(key, "per_hop_us", self.per_hop_us, 0.0, MAX_US)?;
        in_range(key, "hops", f64::from(self.hops), 0.0, 255.0)?;
        in_range(key, "fs_range_us", self.fs_range_us, 0.0, MAX_US)?;
        in_range(key, "fs_min_cwnd", self.fs_min_cwnd, 0.001, 1e6)?;
        in_range(key, "fs_max_cwnd", self.fs_max_cwnd, 0.001, 1e6)?;
        if self.fs_max_cwnd <= self.fs_min_cwnd {
            return Err(ConfigError {
                key: format!("{key}.fs_max_cwnd"),
                message: format!(
                    "{} is not above fs_min_cwnd ({}); give a larger one",
                    self.fs_max_cwnd, self.fs_min_cwnd
                ),
            });
        }
        in_range(key, "ai", self.ai, 0.0, 1e6)?;
        in_range(key, "beta", self.beta, 0.0, 1.0)?;
        in_range(key, "max_mdf", self.max_mdf, 0.0, 1.0)?;
        in_range(key, "min_cwnd", self.min_cwnd, 0.001, 1e6)
    }
}

/// Checks the parameters of every algorithm and the base RTT; errors name the key under
/// `key` (`endpoint.hpcc.eta`).
pub(crate) fn validate(
    key: &str,
    base_rtt_us: f64,
    dctcp: &DctcpConfig,
    hpcc: &HpccConfig,
    timely: &TimelyConfig,
    swift: &SwiftConfig,
) -> Result<(), ConfigError> {
    if base_rtt_us != 0.0 {
        in_range(key, "base_rtt_us", base_rtt_us, 0.001, MAX_US)?;
    }
    dctcp.validate(&format!("{key}.dctcp"))?;
    hpcc.validate(&format!("{key}.hpcc"))?;
    timely.validate(&format!("{key}.timely"))?;
    swift.validate(&format!("{key}.swift"))
}

/// The base RTT an endpoint uses when `base_rtt_us` is 0 outside the simulator (which
/// puts its longest path's there): 10 µs, a small data centre's.
pub const FALLBACK_BASE_RTT: Nanos = Nanos(10_000);

/// The base RTT of `base_rtt_us` (0: [`FALLBACK_BASE_RTT`]).
pub fn base_rtt(base_rtt_us: f64) -> Nanos {
    if base_rtt_us > 0.0 {
        us(base_rtt_us).max(Nanos(1))
    } else {
        FALLBACK_BASE_RTT
    }
}

/// The names of the endpoint presets (`endpoint.preset`), for errors and help.
pub const PRESET_NAMES: [&str; 12] = [
    "dcqcn",
    "dcqcn_paper",
    "dcqcn_vwin",
    "dcqcn_paper_vwin",
    "hpcc",
    "hpcc_fixed_win",
    "timely",
    "timely_vwin",
    "dctcp",
    "swift",
    "connectx",
    "default",
];

/// The endpoint keys of preset `name` at `link_gbps` as TOML text, or `None` for an
/// unknown name. Every preset but `connectx` and `default` is a `--cc` of the HPCC
/// simulator's `simulation/run.py` (alibaba-edu/High-Precision-Congestion-Control), whose
/// rates scale with the link (`bw`, Gb/s); like it, each ACKs every packet
/// (`L2_ACK_INTERVAL 1`) and has a floor of 1 Gb/s (`MIN_RATE 1000Mb/s`).
pub fn preset_text(name: &str, link_gbps: f64) -> Option<String> {
    let bw = link_gbps;
    // run.py's DCQCN: mode 1, CLAMP_TARGET_RATE 0, FAST_RECOVERY_TIMES 1 (rocelab's F = 2:
    // the simulator compares before it counts, docs/dcqcn.md), no byte counter, RATE_AI 5 Mb/s × bw/25, RATE_HAI 50 Mb/s × bw/25, g 1/256; the RP cuts at
    // most once per RATE_DECREASE_INTERVAL and the NP marks every CE packet's ACK (no
    // CNP interval).
    let hpcc_dcqcn = |t_alpha: f64, t_dec: f64, t_inc: f64| {
        format!(
            "ack_every = 1\ncc = \"dcqcn\"\n[dcqcn]\ng = 0.00390625\nalpha_timer_us = {t_alpha}\n\
             min_cut_interval_us = {t_dec}\nrate_timer_us = {t_inc}\nbyte_counter_bytes = 0\n\
             fast_recovery_steps = 2\nrai_mbps = {}\nrhai_mbps = {}\nrmin_mbps = 1000.0\n\
             hyper_increase = \"constant\"\nclamp_target = \"after_timer_increase\"\n\
             cnp_interval_us = 0.0\n",
            5.0 * bw / 25.0,
            50.0 * bw / 25.0
        )
    };
    let timely = |window: bool| {
        // run.py "timely" / "timely_vwin": RATE_AI 10 Mb/s × bw/10, RATE_HAI 50 × bw/10,
        // TIMELY's other values the simulator's defaults (rdma-hw.cc).
        format!(
            "ack_every = 1\ncc = \"timely\"\n[timely]\nrai_mbps = {}\nrhai_mbps = {}\nwindow = {window}\n",
            10.0 * bw / 10.0,
            50.0 * bw / 10.0
        )
    };
    let hpcc = |var_window: bool| {
        // run.py "hp": mode 3, U_TARGET 0.95, MI_THRESH 0 (maxStage), RATE_AI 10 Mb/s ×
        // bw/25, FAST_REACT 1, VAR_WIN 1 (`hpcc_fixed_win`: VAR_WIN 0).
        format!(
            "ack_every = 1\ncc = \"hpcc\"\n[hpcc]\neta = 0.95\nmax_stage = 0\nwai_mbps = {}\n\
             fast_react = true\nvar_window = {var_window}\n",
            10.0 * bw / 25.0
        )
    };
    Some(match name {
        "dcqcn" => hpcc_dcqcn(1.0, 4.0, 300.0),
        // run.py "dcqcn_paper": the timers of the DCQCN paper (alpha 50, cut 50, rate 55 µs).
        "dcqcn_paper" => hpcc_dcqcn(50.0, 50.0, 55.0),
        // run.py "dcqcn_vwin" / "dcqcn_paper_vwin": the same with HAS_WIN 1, VAR_WIN 1.
        "dcqcn_vwin" => hpcc_dcqcn(1.0, 4.0, 300.0) + "window = true\n",
        "dcqcn_paper_vwin" => hpcc_dcqcn(50.0, 50.0, 55.0) + "window = true\n",
        "hpcc" => hpcc(true),
        "hpcc_fixed_win" => hpcc(false),
        "timely" => timely(false),
        "timely_vwin" => timely(true),
        // run.py "dctcp": mode 8, g 1/16, DCTCP_RATE_AI 615 Mb/s (one 1 KB packet per 13 µs
        // RTT), HAS_WIN 1, VAR_WIN 1; its switches mark by step at K = 30 KB × bw/10.
        "dctcp" => "ack_every = 1\ncc = \"dctcp\"\n[dctcp]\ng = 0.0625\nrai_mbps = 615.0\nwindow = true\n"
            .to_owned(),
        // Swift (Kumar et al., SIGCOMM 2020) with [`SwiftConfig`]'s values, every packet
        // ACKed as the NIC timestamps each.
        "swift" => "ack_every = 1\ncc = \"swift\"\n".to_owned(),
        // NVIDIA ConnectX DCQCN firmware defaults (DOCA "DCQCN CC Parameters"; the table in
        // docs/dcqcn.md): g 5/1024, alpha every 1 µs
        // (dce_tcp_rtt), rate timer 300 µs (rpg_time_reset), byte counter 32767 × 64 B
        // (rpg_byte_reset), F 1 (rpg_threshold), Rai 5 Mb/s, Rhai 50 Mb/s, Rmin 1 Mb/s,
        // cuts at most every 4 µs, target clamped only after a timer increase, CNPs at most
        // every 4 µs (min_time_between_cnps).
        "connectx" => "cc = \"dcqcn\"\n[dcqcn]\ng = 0.0048828125\nalpha_timer_us = 1.0\n\
                       rate_timer_us = 300.0\nbyte_counter_bytes = 2097088\nfast_recovery_steps = 1\n\
                       rai_mbps = 5.0\nrhai_mbps = 50.0\nrmin_mbps = 1.0\nhyper_increase = \"constant\"\n\
                       min_cut_interval_us = 4.0\nclamp_target = \"after_timer_increase\"\n\
                       cnp_interval_us = 4.0\n"
            .to_owned(),
        // The endpoint's own defaults: DCQCN as the paper has it.
        "default" => String::new(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::endpoint::EndpointConfig;

    fn preset(name: &str, gbps: f64) -> EndpointConfig {
        let mut cfg = EndpointConfig::from_toml(&preset_text(name, gbps).unwrap()).unwrap();
        cfg.link_gbps = gbps;
        cfg.validate("endpoint").unwrap();
        cfg
    }

    /// Every preset parses and validates at 25, 100 and 400 Gb/s; the rates scale with the
    /// link as run.py's do: at 100 Gb/s DCQCN's Rai is 5 × 100/25 = 20 Mb/s and Rhai 200,
    /// HPCC's W_AI 10 × 100/25 = 40 Mb/s, TIMELY's δ 10 × 100/10 = 100 Mb/s and its hyper
    /// step 500; at 25 Gb/s HPCC's W_AI is 10 Mb/s.
    #[test]
    fn presets_scale_with_the_link_as_run_py() {
        for name in PRESET_NAMES {
            for gbps in [25.0, 100.0, 400.0] {
                preset(name, gbps);
            }
        }
        let d = preset("dcqcn", 100.0);
        assert_eq!((d.cc, d.ack_every), (Cc::Dcqcn, 1));
        assert_eq!((d.dcqcn.rai_mbps, d.dcqcn.rhai_mbps), (20.0, 200.0));
        assert_eq!(d.dcqcn.rate_timer_us, 300.0);
        assert_eq!(preset("dcqcn_paper", 100.0).dcqcn.rate_timer_us, 55.0);
        let h = preset("hpcc", 100.0);
        assert_eq!((h.cc, h.hpcc.eta, h.hpcc.max_stage), (Cc::Hpcc, 0.95, 0));
        assert_eq!(h.hpcc.wai_mbps, 40.0);
        assert!(h.hpcc.var_window);
        assert_eq!(preset("hpcc", 25.0).hpcc.wai_mbps, 10.0);
        assert!(!preset("hpcc_fixed_win", 100.0).hpcc.var_window);
        let t = preset("timely", 100.0);
        assert_eq!((t.timely.rai_mbps, t.timely.rhai_mbps), (100.0, 500.0));
        assert!(!t.timely.window && preset("timely_vwin", 100.0).timely.window);
        let c = preset("dctcp", 100.0);
        assert_eq!(
            (c.cc, c.dctcp.g, c.dctcp.rai_mbps),
            (Cc::Dctcp, 0.0625, 615.0)
        );
        let x = preset("connectx", 100.0);
        assert_eq!((x.dcqcn.g, x.dcqcn.rmin_mbps), (5.0 / 1024.0, 1.0));
        assert_eq!(
            preset("default", 100.0),
            EndpointConfig {
                link_gbps: 100.0,
                ..EndpointConfig::default()
            }
        );
        assert!(preset("dcqcn_vwin", 100.0).dcqcn.window);
        assert!(!preset("dcqcn", 100.0).dcqcn.window);
        let pv = preset("dcqcn_paper_vwin", 100.0);
        assert!(pv.dcqcn.window && pv.dcqcn.rate_timer_us == 55.0);
        assert!(preset_text("dcqcn_typo", 100.0).is_none());
    }

    /// Out-of-range parameters are refused by key.
    #[test]
    fn bad_parameters_name_their_key() {
        let mut cfg = EndpointConfig::default();
        cfg.timely.t_high_us = 10.0;
        let e = cfg.validate("endpoint").unwrap_err();
        assert_eq!(e.key, "endpoint.timely.t_high_us");
        let mut cfg = EndpointConfig::default();
        cfg.swift.beta = f64::NAN;
        assert_eq!(
            cfg.validate("endpoint").unwrap_err().key,
            "endpoint.swift.beta"
        );
        let cfg = EndpointConfig {
            base_rtt_us: -1.0,
            ..EndpointConfig::default()
        };
        assert_eq!(
            cfg.validate("endpoint").unwrap_err().key,
            "endpoint.base_rtt_us"
        );
        let mut cfg = EndpointConfig::default();
        cfg.dctcp.g = 0.0;
        assert_eq!(
            cfg.validate("endpoint").unwrap_err().key,
            "endpoint.dctcp.g"
        );
    }
}
