//! The switch configuration: a TOML schema (serde), built-in presets, and validation into a
//! [`SwitchConfig`] with every derived value (rates in bit/s, delays in ns, headroom)
//! computed. Errors name the key and say what is allowed.

pub mod cc;
pub mod did_you_mean;
pub mod emulation;
pub mod endpoint;
pub mod export;
pub mod headroom;
pub mod import;
pub mod lint;
mod presets;
mod resolve;

pub use headroom::{CABLE_NS_PER_M, min_headroom_bytes, peer_response_quanta};
pub use presets::{ENDPOINT_DEFAULTS, PRESETS, preset_text};

use crate::time::Nanos;
use crate::wire::PrioritySet;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Number of traffic classes, priorities, queues and priority groups per port.
pub const CLASSES: usize = 8;

/// A configuration that cannot be used: which key, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct ConfigError {
    /// The TOML key, dotted (`queue.3.ecn.kmin_bytes`).
    pub key: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

/// Most ports a configuration may list (`ports`).
pub const MAX_PORTS: usize = 4096;

/// Largest byte quantity of the buffer (`shared_bytes`, reserves, limits, thresholds,
/// headroom, RED Kmin/Kmax): 1 TiB, far above any switch's buffer.
pub const MAX_BUFFER_BYTES: u64 = 1 << 40;

/// Longest cable, metres (`cable_m`): 100 km, the reach of long-haul optics.
pub const MAX_CABLE_M: f64 = 100_000.0;

/// Longest cable delay, ns (`cable_ns`): 100 km at [`CABLE_NS_PER_M`].
pub const MAX_CABLE_NS: u64 = 100_000 * CABLE_NS_PER_M;

/// Smallest and largest dynamic-threshold alpha: SONiC's `dynamic_th` -7 to 3 (alpha =
/// 2^dynamic_th).
pub const ALPHA_RANGE: (f64, f64) = (1.0 / 128.0, 8.0);

/// Largest configuration file [`read_text`] reads: 4 MiB (configuration files are a
/// few KB; 4096 ports fit in well under 1 MiB).
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// A configuration file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Opening or reading failed.
    #[error("cannot read configuration {}: {cause}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why (in the message, not chained: a chain would print it twice).
        cause: std::io::Error,
    },
    /// A directory where a file was expected.
    #[error("configuration {} is a directory; give a file", path.display())]
    IsDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// More than [`MAX_CONFIG_BYTES`].
    #[error(
        "configuration {} is larger than {limit} bytes (4 MiB); configuration files are a few KB",
        path.display()
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, bytes.
        limit: u64,
    },
    /// Not UTF-8 text.
    #[error("configuration {} is not UTF-8 text", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
}

/// Reads a configuration file as text, refusing more than [`MAX_CONFIG_BYTES`]: at most
/// that many bytes plus one are ever read, so `/dev/zero`, a FIFO or a pipe that never
/// ends gives [`ReadError::TooLarge`] instead of filling memory.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    read_text_limited(path, MAX_CONFIG_BYTES)
}

/// [`read_text`] with a limit of `limit` bytes.
pub fn read_text_limited(path: &Path, limit: u64) -> Result<String, ReadError> {
    let io = |cause| ReadError::Io {
        path: path.to_owned(),
        cause,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    // Linux opens a directory for reading; only the read fails, with an errno to decode.
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(ReadError::IsDirectory {
            path: path.to_owned(),
        });
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotText {
        path: path.to_owned(),
    })
}

fn err(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        message: message.into(),
    }
}

/// What the switch classifies by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// The IP DSCP (L3), the RoCEv2 norm.
    #[default]
    Dscp,
    /// The 802.1Q PCP (L2); untagged frames get priority 0.
    Pcp,
}

/// The configuration file as written (every field optional where a default exists).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Seed of the RED/ECN random draws.
    #[serde(default = "one")]
    pub seed: u64,
    /// DSCP or PCP classification.
    #[serde(default)]
    pub trust: Trust,
    /// MAC table aging, seconds.
    #[serde(default = "default_mac_age")]
    pub mac_age_secs: u64,
    /// Defaults for every port.
    #[serde(default)]
    pub port_defaults: PortSpec,
    /// The ports, in order.
    #[serde(default)]
    pub ports: Vec<PortSpec>,
    /// `[classify]`: DSCP or PCP to traffic class, traffic class to queue.
    #[serde(default)]
    pub classify: ClassifySpec,
    /// `[pfc]`: lossless priorities and pause timing (IEEE 802.1Qbb).
    #[serde(default)]
    pub pfc: PfcSpec,
    /// `[buffer]`: shared pool size, threshold mode and reserves.
    #[serde(default)]
    pub buffer: BufferSpec,
    /// Per priority group (keyed "0".."7").
    #[serde(default)]
    pub pg: BTreeMap<String, PgSpec>,
    /// Per egress queue (keyed "0".."7").
    #[serde(default)]
    pub queue: BTreeMap<String, QueueSpec>,
    /// `[watchdog]`: PFC storm detection and recovery; off unless enabled.
    #[serde(default)]
    pub watchdog: WatchdogSpec,
}

fn one() -> u64 {
    1
}

fn default_mac_age() -> u64 {
    300
}

/// A port as written; unset fields come from `port_defaults`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSpec {
    /// Port name (required in `ports`, ignored in `port_defaults`).
    pub name: Option<String>,
    /// Emulated line rate, Gb/s.
    pub speed_gbps: Option<f64>,
    /// Cable length, metres.
    pub cable_m: Option<f64>,
    /// Cable delay, ns (instead of `cable_m`).
    pub cable_ns: Option<u64>,
    /// Largest frame, bytes.
    pub mtu: Option<u32>,
}

/// Classification maps as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifySpec {
    /// `[dscp, tc]` pairs.
    #[serde(default, deserialize_with = "dscp_class_pairs")]
    pub dscp_to_tc: Vec<[u32; 2]>,
    /// Class of DSCPs not listed.
    #[serde(default)]
    pub default_tc: u32,
    /// Class per PCP.
    #[serde(default = "identity")]
    pub pcp_to_tc: Vec<u32>,
    /// Queue per class.
    #[serde(default = "identity")]
    pub tc_to_queue: Vec<u32>,
}

impl Default for ClassifySpec {
    fn default() -> Self {
        ClassifySpec {
            dscp_to_tc: Vec::new(),
            default_tc: 0,
            pcp_to_tc: identity(),
            tc_to_queue: identity(),
        }
    }
}

fn identity() -> Vec<u32> {
    (0..CLASSES as u32).collect()
}

/// PFC as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcSpec {
    /// Priorities 0-7 that PFC protects; empty (the default) makes every priority lossy.
    #[serde(default)]
    pub lossless: Vec<u32>,
    /// Pause time sent in XOFF frames, quanta.
    #[serde(default = "default_quanta")]
    pub pause_quanta: u32,
    /// Refresh interval while XOFF holds, quanta; below `pause_quanta` (default half of it).
    pub refresh_quanta: Option<u32>,
}

impl Default for PfcSpec {
    fn default() -> Self {
        PfcSpec {
            lossless: Vec::new(),
            pause_quanta: default_quanta(),
            refresh_quanta: None,
        }
    }
}

fn default_quanta() -> u32 {
    0xffff
}

/// How buffer limits are set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThresholdMode {
    /// Limits are alpha × the free shared buffer (Broadcom/SONiC "dynamic_th").
    #[default]
    Dynamic,
    /// Fixed byte limits.
    Static,
}

/// The shared buffer as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferSpec {
    /// Shared pool, bytes.
    #[serde(
        default = "default_shared",
        deserialize_with = "crate::bytes::deserialize"
    )]
    pub shared_bytes: u64,
    /// Dynamic or static limits.
    #[serde(default)]
    pub threshold: ThresholdMode,
    /// Dynamic: a lossless PG's shared limit is `pg_alpha × free shared`.
    pub pg_alpha: Option<f64>,
    /// Dynamic: a lossy queue's limit is `queue_alpha × free shared`.
    pub queue_alpha: Option<f64>,
    /// Static: a lossy queue's limit, bytes.
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    pub queue_limit_bytes: Option<u64>,
    /// Guaranteed bytes per egress queue.
    #[serde(default, deserialize_with = "crate::bytes::deserialize")]
    pub queue_reserve_bytes: u64,
    /// Guaranteed bytes per ingress PG (unless the PG sets its own).
    #[serde(default, deserialize_with = "crate::bytes::deserialize")]
    pub pg_reserve_bytes: u64,
    /// How headroom is computed where `pg.N.headroom_bytes` is not given.
    #[serde(default)]
    pub headroom_model: headroom::HeadroomModel,
}

impl Default for BufferSpec {
    fn default() -> Self {
        BufferSpec {
            shared_bytes: default_shared(),
            threshold: ThresholdMode::Dynamic,
            pg_alpha: None,
            queue_alpha: None,
            queue_limit_bytes: None,
            queue_reserve_bytes: 0,
            pg_reserve_bytes: 0,
            headroom_model: headroom::HeadroomModel::Ieee,
        }
    }
}

/// The shared pool when a configuration does not give one (32 MiB).
pub(crate) fn default_shared() -> u64 {
    32 << 20
}

/// A priority group as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PgSpec {
    /// Guaranteed bytes, charged before the shared pool (default `buffer.pg_reserve_bytes`).
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    pub reserve_bytes: Option<u64>,
    /// Static: XOFF when the PG's shared use reaches this.
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    pub xoff_bytes: Option<u64>,
    /// Static: XON when it falls to this or below.
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    pub xon_bytes: Option<u64>,
    /// Dynamic: XON this far below the XOFF point, bytes (default 0).
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    pub xon_offset_bytes: Option<u64>,
    /// Headroom, bytes (computed when absent).
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    pub headroom_bytes: Option<u64>,
}

/// Scheduling discipline of a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScheduleSpec {
    /// Deficit weighted round robin.
    #[default]
    Dwrr,
    /// Strict priority (higher queue numbers first).
    Strict,
}

/// When RED-ECN decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MarkAt {
    /// When the frame joins the queue (WRED on hardware).
    #[default]
    Enqueue,
    /// When the frame leaves (HPCC's simulator).
    Dequeue,
}

/// A RED-ECN profile as written.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedSpec {
    /// No marking at or below this queue depth.
    #[serde(deserialize_with = "crate::bytes::deserialize")]
    pub kmin_bytes: u64,
    /// Every ECT frame marked above this depth.
    #[serde(deserialize_with = "crate::bytes::deserialize")]
    pub kmax_bytes: u64,
    /// Marking probability reached at `kmax_bytes`.
    pub pmax: f64,
    /// Gentle RED (Floyd 2000): above `kmax_bytes` the probability rises on from `pmax`
    /// to 1 at twice `kmax_bytes`, instead of jumping to 1.
    #[serde(default)]
    pub gentle: bool,
}

/// An egress queue as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// Strict or DWRR.
    #[serde(default)]
    pub schedule: ScheduleSpec,
    /// DWRR weight, 1 to 1000 (default 1); not allowed on a strict queue.
    pub weight: Option<u32>,
    /// RED-ECN (and WRED for Not-ECT frames on lossy queues).
    pub ecn: Option<RedSpec>,
    /// Whether RED decides at enqueue (the default) or at dequeue.
    #[serde(default)]
    pub mark_at: MarkAt,
}

/// What the watchdog does to a stormed queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WatchdogAction {
    /// Flush the queue, drop its arrivals, stop PFC for its priority.
    #[default]
    Drop,
    /// Ignore received PFC on the queue.
    Forward,
    /// Count the storm (`storms_detected`) and change nothing else.
    Alert,
}

/// The PFC watchdog as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchdogSpec {
    /// Off by default; the times are checked only when it is on.
    #[serde(default)]
    pub enabled: bool,
    /// Detection time, ms: 1 to 3600000 (default 200).
    #[serde(default = "default_wd_ms")]
    pub detection_ms: u64,
    /// Restoration time, ms: 1 to 3600000 (default 200).
    #[serde(default = "default_wd_ms")]
    pub restoration_ms: u64,
    /// Poll interval, ms: 1 to 3600000 (default 200).
    #[serde(default = "default_wd_ms")]
    pub poll_ms: u64,
    /// What happens to a stormed queue (default `drop`).
    #[serde(default)]
    pub action: WatchdogAction,
}

impl Default for WatchdogSpec {
    fn default() -> Self {
        WatchdogSpec {
            enabled: false,
            detection_ms: default_wd_ms(),
            restoration_ms: default_wd_ms(),
            poll_ms: default_wd_ms(),
            action: WatchdogAction::Drop,
        }
    }
}

fn default_wd_ms() -> u64 {
    200
}

/// A port, resolved.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PortConfig {
    /// Interface name; `default` for `port_defaults`.
    pub name: String,
    /// Emulated line rate, bit/s (from `speed_gbps`, default 100 Gb/s).
    pub bits_per_sec: u64,
    /// One-way cable delay (from `cable_ns` or `cable_m`, default 0).
    #[serde(rename = "cable_ns")]
    pub cable: Nanos,
    /// Largest frame without the Ethernet header and VLAN tag, bytes: 64 to 16384
    /// (default 9216).
    pub mtu: u32,
}

/// A RED-ECN profile, resolved.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RedProfile {
    /// No marking at or below this queue depth.
    pub kmin_bytes: u64,
    /// Every ECT frame marked above this queue depth.
    pub kmax_bytes: u64,
    /// Marking probability at `kmax_bytes`; it rises linearly from 0 at `kmin_bytes`.
    pub pmax: f64,
    /// Above `kmax_bytes`: from `pmax` linearly to 1 at twice `kmax_bytes` (gentle RED),
    /// or 1 at once (false, the WRED of switches and the DCQCN paper).
    pub gentle: bool,
}

impl RedProfile {
    /// The marking (or WRED drop) probability at queue depth `depth_bytes`.
    pub fn probability(&self, depth_bytes: u64) -> f64 {
        if depth_bytes <= self.kmin_bytes {
            0.0
        } else if depth_bytes > self.kmax_bytes {
            if self.gentle && depth_bytes < 2 * self.kmax_bytes {
                self.pmax
                    + (1.0 - self.pmax) * (depth_bytes - self.kmax_bytes) as f64
                        / self.kmax_bytes.max(1) as f64
            } else {
                1.0
            }
        } else {
            self.pmax * (depth_bytes - self.kmin_bytes) as f64
                / (self.kmax_bytes - self.kmin_bytes) as f64
        }
    }
}

/// Scheduling of a queue, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// Strict priority: served before every DWRR queue, higher queue numbers first.
    Strict,
    /// DWRR with this weight.
    Dwrr(u32),
}

/// An egress queue, resolved.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct QueueConfig {
    /// Strict or DWRR.
    pub schedule: Schedule,
    /// RED-ECN marking, and WRED drops of Not-ECT frames on lossy queues; `None`: neither.
    pub ecn: Option<RedProfile>,
    /// When RED decides.
    pub mark_at: MarkAt,
    /// Frames RED would mark that are left unmarked between two marks: InfiniBand's
    /// `Marking_Rate` (IBA annex A10, "the mean number of packets between markings"),
    /// set by a simulated InfiniBand fabric's congestion control. 0, as on Ethernet
    /// switches: every one is marked.
    #[serde(skip_serializing_if = "is_zero")]
    pub marking_rate: u16,
}

fn is_zero(n: &u16) -> bool {
    *n == 0
}

/// How a lossless PG decides XOFF and XON.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum XoffRule {
    /// XOFF at `xoff_bytes` of shared use, XON at or below `xon_bytes`.
    Static {
        /// Shared-pool use that sends XOFF, bytes.
        xoff_bytes: u64,
        /// Shared-pool use at or below which XON is sent, bytes (below `xoff_bytes`).
        xon_bytes: u64,
    },
    /// XOFF at `alpha × free shared`; XON `xon_offset_bytes` below that.
    Dynamic {
        /// The XOFF point as a fraction of the free shared pool, in (0, 64] (`pg_alpha`).
        alpha: f64,
        /// XON this many bytes below the XOFF point.
        xon_offset_bytes: u64,
    },
}

/// A priority group, resolved.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PgConfig {
    /// Lossless (PFC) or lossy.
    pub lossless: bool,
    /// Guaranteed bytes, charged before the shared pool and returned last.
    pub reserve_bytes: u64,
    /// XOFF/XON rule (lossless only).
    pub xoff: XoffRule,
    /// Headroom given in the file; otherwise computed per port.
    pub headroom_bytes: Option<u64>,
}

/// Lossy egress queue limits, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueLimit {
    /// `alpha × free shared`.
    Dynamic(f64),
    /// A fixed limit, bytes (`queue_limit_bytes`).
    Static(u64),
}

/// The PFC watchdog, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct WatchdogConfig {
    /// Off: no polls run and no queue is ever stormed.
    pub enabled: bool,
    /// A paused queue holding frames that sends nothing for this long is declared stormed
    /// (SONiC PFC_WD detection_time).
    #[serde(rename = "detection_ns")]
    pub detection: Nanos,
    /// A stormed queue that receives no PFC pause for this long is restored (SONiC PFC_WD
    /// restoration_time).
    #[serde(rename = "restoration_ns")]
    pub restoration: Nanos,
    /// Polls tick every `poll` from the first instant the switch saw; detection and
    /// restoration take effect at the next tick.
    #[serde(rename = "poll_ns")]
    pub poll: Nanos,
    /// What happens to a stormed queue.
    pub action: WatchdogAction,
}

/// A validated switch configuration, every derived value computed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SwitchConfig {
    /// Seed of the RED/ECN draws.
    pub seed: u64,
    /// Whether frames are classified by DSCP or by PCP.
    pub trust: Trust,
    /// A MAC table entry unrefreshed for this long ages out (`mac_age_secs`).
    #[serde(rename = "mac_age_ns")]
    pub mac_age: Nanos,
    /// Template for ports not listed.
    pub port_defaults: PortConfig,
    /// The listed ports, in file order: their indices are the switch's port numbers.
    pub ports: Vec<PortConfig>,
    /// Class per DSCP (in JSON a list of 64).
    #[serde(serialize_with = "serialize_slice")]
    pub dscp_to_tc: [u8; 64],
    /// Class per PCP.
    pub pcp_to_tc: [u8; CLASSES],
    /// Queue per class.
    pub tc_to_queue: [u8; CLASSES],
    /// Priorities PFC protects (IEEE 802.1Qbb); the others are lossy.
    pub lossless: PrioritySet,
    /// XOFF pause time, quanta.
    pub pause_quanta: u16,
    /// XOFF is resent this often while it holds, quanta; below `pause_quanta`.
    pub refresh_quanta: u16,
    /// Shared pool, bytes.
    pub shared_bytes: u64,
    /// How headroom is computed where a PG does not give it.
    pub headroom_model: headroom::HeadroomModel,
    /// Guaranteed bytes per egress queue, on top of a lossy queue's limit.
    pub queue_reserve_bytes: u64,
    /// Lossy queue limits.
    pub queue_limit: QueueLimit,
    /// Per ingress priority group, indexed by priority.
    pub pgs: [PgConfig; CLASSES],
    /// Per egress queue, indexed by queue number.
    pub queues: [QueueConfig; CLASSES],
    /// The PFC watchdog that breaks pause storms.
    pub watchdog: WatchdogConfig,
}

impl SwitchConfig {
    /// Parses and validates a TOML text.
    pub fn from_toml(text: &str) -> Result<SwitchConfig, ConfigError> {
        let file: ConfigFile = parse_toml(text, "config")
            .map_err(|e| did_you_mean::with_hint(e, &did_you_mean::switch_keys()))?;
        file.resolve()
    }

    /// A built-in preset by name (`default`, `nexus-ai`, `sonic`).
    pub fn preset(name: &str) -> Result<SwitchConfig, ConfigError> {
        let text = preset_text(name).ok_or_else(|| {
            err(
                "preset",
                format!(
                    "no preset named '{name}'; the presets are {}",
                    PRESETS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        SwitchConfig::from_toml(text)
    }

    /// Validates a configuration given as a TOML table (as a file would parse to).
    pub fn from_table(table: toml::Table) -> Result<SwitchConfig, ConfigError> {
        let file: ConfigFile = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| {
                let path = e.path().to_string();
                let key = if path == "." {
                    "config".to_owned()
                } else {
                    path
                };
                let e = err(key, e.into_inner().message().trim_end().to_owned());
                did_you_mean::with_hint(e, &did_you_mean::switch_keys())
            })?;
        file.resolve()
    }

    /// The egress queues frames can reach: those the trusted field's map (all 64 DSCPs,
    /// or all 8 PCPs) leads to, lowest first. A frame that does not parse takes DSCP 0's
    /// (PCP 0's) class, which is in the map too.
    pub fn queues_in_use(&self) -> Vec<usize> {
        let classes: Vec<u8> = match self.trust {
            Trust::Dscp => self.dscp_to_tc.to_vec(),
            Trust::Pcp => self.pcp_to_tc.to_vec(),
        };
        let mut used = [false; CLASSES];
        for tc in classes {
            used[usize::from(self.tc_to_queue[usize::from(tc & 7)])] = true;
        }
        (0..CLASSES).filter(|&q| used[q]).collect()
    }

    /// The egress queues that carry a lossless class, as bits (bit q: queue q): PFC for
    /// priority p pauses queue `tc_to_queue[p]`, and these are the queues it can stop.
    pub fn lossless_queues(&self) -> u8 {
        self.lossless
            .iter()
            .fold(0, |bits, p| bits | 1 << self.tc_to_queue[usize::from(p)])
    }

    /// PFC off: every priority lossy, so congestion drops instead of pausing.
    pub fn disable_pfc(&mut self) {
        self.lossless = PrioritySet::EMPTY;
        for pg in &mut self.pgs {
            pg.lossless = false;
        }
    }

    /// ECN marking off on every queue (and with it WRED's drops of Not-ECT frames).
    pub fn disable_ecn(&mut self) {
        for q in &mut self.queues {
            q.ecn = None;
        }
    }

    /// The port named `name`, or one with the port defaults under that name.
    pub fn port_or_default(&self, name: &str) -> PortConfig {
        self.ports
            .iter()
            .find(|p| p.name == name)
            .cloned()
            .unwrap_or_else(|| PortConfig {
                name: name.to_owned(),
                ..self.port_defaults.clone()
            })
    }

    /// The headroom of priority group `pg` on `port`: as configured, or the minimum
    /// computed from the port's speed, cable and MTU.
    pub fn headroom_bytes(&self, pg: usize, port: &PortConfig) -> u64 {
        self.pgs[pg]
            .headroom_bytes
            .unwrap_or_else(|| self.headroom_model.bytes(port))
    }
}

/// In JSON `{"kind": "strict"}` or `{"kind": "dwrr", "weight": 15}`.
impl serde::Serialize for Schedule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut m = s.serialize_map(None)?;
        match self {
            Schedule::Strict => m.serialize_entry("kind", "strict")?,
            Schedule::Dwrr(w) => {
                m.serialize_entry("kind", "dwrr")?;
                m.serialize_entry("weight", w)?;
            }
        }
        m.end()
    }
}

/// In JSON `{"mode": "dynamic", "alpha": 0.5}` or `{"mode": "static", "limit_bytes": N}`.
impl serde::Serialize for QueueLimit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut m = s.serialize_map(None)?;
        match self {
            QueueLimit::Dynamic(a) => {
                m.serialize_entry("mode", "dynamic")?;
                m.serialize_entry("alpha", a)?;
            }
            QueueLimit::Static(b) => {
                m.serialize_entry("mode", "static")?;
                m.serialize_entry("limit_bytes", b)?;
            }
        }
        m.end()
    }
}

/// A fixed-size array as a JSON list (serde derives only up to 32 elements).
fn serialize_slice<S: serde::Serializer>(v: &[u8; 64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter())
}

/// `[a, b]` pairs of exactly two elements each (serde's fixed-size arrays would ignore
/// extra ones); `what` names the pair's parts in the error.
pub(crate) fn pairs<'de, D, T>(d: D, what: &str) -> Result<Vec<[T; 2]>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Vec::<Vec<T>>::deserialize(d)?
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let n = v.len();
            <[T; 2]>::try_from(v).map_err(|_| {
                serde::de::Error::custom(format!(
                    "entry {i} has {n} element(s); each entry is exactly [{what}]"
                ))
            })
        })
        .collect()
}

fn dscp_class_pairs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<[u32; 2]>, D::Error> {
    pairs(d, "dscp, class")
}

/// Applies one `KEY=VALUE` assignment (`--set`) to `table`: KEY is a dotted path
/// (`buffer.shared_bytes`, `queue.3.ecn.kmin_bytes`), tables on the way are made when
/// missing, and an array of tables takes an index (`workload.0.load`, `flow.1.bytes`);
/// VALUE is a TOML value (`4194304`, `true`, `[3, 4]`, `{ kmin_bytes = 1 }`,
/// `"4M"`), or else taken as a string (`4M`, `sonic`).
pub fn set_key(table: &mut toml::Table, assignment: &str) -> Result<(), ConfigError> {
    let (key, value) = assignment.split_once('=').ok_or_else(|| {
        err(
            assignment,
            "--set takes KEY=VALUE, e.g. buffer.shared_bytes=4M or pfc.lossless=[3,4]",
        )
    })?;
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(err(
            key,
            "a key is names joined by dots, e.g. buffer.shared_bytes",
        ));
    }
    let value = value.trim();
    let parsed = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_owned()));
    let (last, path) = parts.split_last().expect("split gives at least one part");
    let mut here = table;
    let mut i = 0;
    while i < path.len() {
        let entry = here
            .entry(path[i].to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        // An array of tables (`[[workload]]`, `[[flow]]`) takes an index: workload.0.load.
        let entry = match entry {
            toml::Value::Array(items) => {
                let Some(index) = path.get(i + 1) else {
                    return Err(err(
                        parts[..=i].join("."),
                        "is a list: give an item's index and a key in it, e.g. workload.0.load",
                    ));
                };
                let n = items.len();
                i += 1;
                index
                    .parse::<usize>()
                    .ok()
                    .and_then(|k| items.get_mut(k))
                    .ok_or_else(|| {
                        err(
                            parts[..=i].join("."),
                            format!("give an index from 0 to {}", n.saturating_sub(1)),
                        )
                    })?
            }
            other => other,
        };
        here = entry.as_table_mut().ok_or_else(|| {
            err(
                parts[..=i].join("."),
                "is a value, not a table: --set cannot go inside it",
            )
        })?;
        i += 1;
    }
    here.insert((*last).to_owned(), parsed);
    Ok(())
}

/// [`merge_toml`] for switch configurations: a layer that gives `buffer.threshold` sets
/// that mode with its own limits, so the base's keys of the other mode go (a preset's
/// `pg_alpha` under `threshold = "static"`, or its static limits under `"dynamic"`),
/// rather than contradict it.
pub fn merge_switch_toml(base: &mut toml::Table, over: toml::Table) {
    let mode = over
        .get("buffer")
        .and_then(|b| b.get("threshold"))
        .and_then(toml::Value::as_str)
        .map(str::to_owned);
    // The other mode's keys; an unknown mode drops nothing and is refused by name later.
    let (buffer_keys, pg_keys): (&[&str], &[&str]) = match mode.as_deref() {
        Some("static") => (&["pg_alpha", "queue_alpha"], &["xon_offset_bytes"]),
        Some("dynamic") => (&["queue_limit_bytes"], &["xoff_bytes", "xon_bytes"]),
        _ => (&[], &[]),
    };
    if let Some(toml::Value::Table(b)) = base.get_mut("buffer") {
        buffer_keys.iter().for_each(|k| drop(b.remove(*k)));
    }
    if let Some(toml::Value::Table(pgs)) = base.get_mut("pg") {
        for pg in pgs.iter_mut().filter_map(|(_, pg)| pg.as_table_mut()) {
            pg_keys.iter().for_each(|k| drop(pg.remove(*k)));
        }
    }
    merge_toml(base, over);
}

/// Lays `over` onto `base`: tables merge key by key, any other value replaces.
pub fn merge_toml(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_toml(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Parses a TOML text into `T`; a syntax or schema error is keyed by "line L, column C"
/// where it is (by `whole` when the parser gives no position).
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    whole: &str,
) -> Result<T, ConfigError> {
    let located = |e: &toml::de::Error| e.span().map(|s| location(text, s.start));
    let de = toml::de::Deserializer::parse(text).map_err(|e| {
        err(
            located(&e).unwrap_or_else(|| whole.to_owned()),
            e.message().to_owned(),
        )
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let key = match (located(&inner), path.as_str()) {
            (Some(line), ".") => line,
            (Some(line), _) => format!("{line} ({path})"),
            (None, ".") => whole.to_owned(),
            (None, _) => path,
        };
        err(key, inner.message().to_owned())
    })
}

/// "line L, column C" for a byte offset, for parse errors.
pub(crate) fn location(text: &str, offset: usize) -> String {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("line {line}, column {column}")
}

impl fmt::Display for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Trust::Dscp => "dscp",
            Trust::Pcp => "pcp",
        })
    }
}

#[cfg(test)]
mod tests;
