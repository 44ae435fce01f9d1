//! `[[fault]]` entries of a scenario: NIC faults (`pause-storm`, `slow-receiver`,
//! `ignore-pause`) that any host can be given, what each does is in
//! [`crate::endpoint::fault`]; and `slow-link`, a leaf-spine's link between a leaf and a
//! spine running below its speed for a while (the asymmetric fabric load balancers are
//! judged on).

use crate::config::ConfigError;
use crate::endpoint::fault::{Faults, PauseStorm, SlowReceiver};
use crate::time::Nanos;
use serde::Deserialize;

/// A fault as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub(super) enum FaultSpec {
    /// The host's NIC sends PFC XOFF without end.
    PauseStorm {
        host: usize,
        /// Default: the priority the endpoint's data uses.
        priority: Option<u8>,
        #[serde(default)]
        start_us: f64,
        stop_us: Option<f64>,
        #[serde(default = "max_quanta")]
        quanta: u32,
    },
    /// The host drains what it receives slower than its link.
    SlowReceiver {
        host: usize,
        drain_gbps: f64,
        #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
        buffer_bytes: Option<u64>,
        #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
        xoff_bytes: Option<u64>,
        #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
        xon_bytes: Option<u64>,
    },
    /// The host's NIC ignores the PFC and PAUSE frames it receives.
    IgnorePause { host: usize },
    /// The link between `leaf` and `spine` runs at `gbps`, both ways, from `start_us` to
    /// `stop_us` (or the end).
    SlowLink {
        leaf: usize,
        spine: usize,
        gbps: f64,
        #[serde(default)]
        start_us: f64,
        stop_us: Option<f64>,
    },
}

/// A link between a leaf and a spine that runs slower for a while, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkFault {
    /// The leaf's index.
    pub leaf: usize,
    /// The spine's index (the leaf's uplink of that number).
    pub spine: usize,
    /// Its speed meanwhile, bit/s.
    pub bits_per_sec: u64,
    /// From when.
    pub start: Nanos,
    /// Until when (back to the link's speed); `None`: to the end.
    pub stop: Option<Nanos>,
}

impl LinkFault {
    /// The share of its speed the link kept over `from..to` on average: 1 when the fault
    /// does not overlap the span.
    pub fn kept_share(&self, from: Nanos, to: Nanos, link_bps: u64) -> f64 {
        let start = self.start.max(from);
        let stop = self.stop.unwrap_or(to).min(to);
        if to <= from || stop <= start {
            return 1.0;
        }
        let slow = (stop - start).0 as f64 / (to - from).0 as f64;
        1.0 - slow * (1.0 - self.bits_per_sec as f64 / link_bps as f64)
    }
}

/// Resolves the `slow-link` entries of `[[fault]]` on a leaf-spine of `leaves` ×
/// `spines` (`None`: another shape, where they are refused) whose links run at
/// `link_bps`. A link has at most one.
pub(super) fn resolve_links(
    specs: &[FaultSpec],
    leaf_spine: Option<(usize, usize)>,
    link_bps: u64,
) -> Result<Vec<LinkFault>, ConfigError> {
    let mut out: Vec<LinkFault> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let FaultSpec::SlowLink {
            leaf,
            spine,
            gbps,
            start_us,
            stop_us,
        } = *spec
        else {
            continue;
        };
        let key = format!("fault[{i}]");
        let Some((leaves, spines)) = leaf_spine else {
            return Err(err(
                &key,
                "a slow-link fault needs topology.kind = \"leaf-spine\" (it slows a leaf's uplink)",
            ));
        };
        if leaf >= leaves {
            return Err(err(
                format!("{key}.leaf"),
                format!("leaf {leaf} does not exist; leaves are 0-{}", leaves - 1),
            ));
        }
        if spine >= spines {
            return Err(err(
                format!("{key}.spine"),
                format!("spine {spine} does not exist; spines are 0-{}", spines - 1),
            ));
        }
        if !(gbps.is_finite() && gbps > 0.0 && gbps * 1e9 < link_bps as f64) {
            return Err(err(
                format!("{key}.gbps"),
                format!(
                    "{gbps} is not allowed; give a rate above 0 and below the link's {} Gb/s \
                     (a link that fails is not modelled)",
                    link_bps as f64 / 1e9
                ),
            ));
        }
        let start = time_us(&format!("{key}.start_us"), start_us)?;
        let stop = stop_us
            .map(|us| time_us(&format!("{key}.stop_us"), us))
            .transpose()?;
        if stop.is_some_and(|s| s <= start) {
            return Err(err(format!("{key}.stop_us"), "must be after start_us"));
        }
        if out.iter().any(|f| f.leaf == leaf && f.spine == spine) {
            return Err(err(
                &key,
                format!(
                    "the link between leaf {leaf} and spine {spine} already has a slow-link fault"
                ),
            ));
        }
        out.push(LinkFault {
            leaf,
            spine,
            bits_per_sec: (gbps * 1e9).round() as u64,
            start,
            stop,
        });
    }
    Ok(out)
}

/// One line per link fault, for the run's header.
pub fn describe_links(faults: &[LinkFault]) -> Vec<String> {
    faults
        .iter()
        .map(|f| {
            let until = f.stop.map_or_else(|| "the end".to_owned(), |t| t.human());
            format!(
                "leaf {} - spine {}: slow link, {} Gb/s both ways from {} to {until}",
                f.leaf,
                f.spine,
                f.bits_per_sec as f64 / 1e9,
                f.start.human()
            )
        })
        .collect()
}

fn max_quanta() -> u32 {
    u32::from(u16::MAX)
}

fn err(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        message: message.into(),
    }
}

fn time_us(key: &str, us: f64) -> Result<Nanos, ConfigError> {
    if us.is_finite() && (0.0..1e12).contains(&us) {
        Ok(Nanos((us * 1e3).round() as u64))
    } else {
        Err(err(key, format!("{us} is not allowed; give 0 or more µs")))
    }
}

/// A host's fault, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostFault {
    /// The host that has it.
    pub host: usize,
    /// What it does (one kind set).
    pub faults: Faults,
}

/// Resolves the `[[fault]]` entries: hosts exist, values are in range, and a host has
/// each kind of fault at most once. `data_priority` is the priority a storm pauses by
/// default; `link_bps` the hosts' link rate; `largest_frame` the biggest frame a host
/// receives (a receive buffer must take at least two beyond its XOFF point).
pub(super) fn resolve(
    specs: &[FaultSpec],
    hosts: usize,
    data_priority: u8,
    link_bps: u64,
    largest_frame: u64,
) -> Result<Vec<HostFault>, ConfigError> {
    let mut out: Vec<HostFault> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let key = format!("fault[{i}]");
        let (host, kind) = match spec {
            FaultSpec::PauseStorm { host, .. } => (*host, "pause-storm"),
            FaultSpec::SlowReceiver { host, .. } => (*host, "slow-receiver"),
            FaultSpec::IgnorePause { host } => (*host, "ignore-pause"),
            FaultSpec::SlowLink { .. } => continue,
        };
        if host >= hosts {
            return Err(err(
                format!("{key}.host"),
                format!("host {host} does not exist; hosts are 0-{}", hosts - 1),
            ));
        }
        let mut faults = Faults::default();
        match *spec {
            FaultSpec::PauseStorm {
                priority,
                start_us,
                stop_us,
                quanta,
                ..
            } => {
                let priority = priority.unwrap_or(data_priority);
                if priority > 7 {
                    return Err(err(format!("{key}.priority"), "give 0 to 7"));
                }
                let quanta = u16::try_from(quanta)
                    .ok()
                    .filter(|&q| q > 0)
                    .ok_or_else(|| err(format!("{key}.quanta"), "give 1 to 65535"))?;
                let start = time_us(&format!("{key}.start_us"), start_us)?;
                let stop = stop_us
                    .map(|us| time_us(&format!("{key}.stop_us"), us))
                    .transpose()?;
                if stop.is_some_and(|s| s <= start) {
                    return Err(err(format!("{key}.stop_us"), "must be after start_us"));
                }
                faults.pause_storm = Some(PauseStorm {
                    priority,
                    start,
                    stop,
                    quanta,
                });
            }
            FaultSpec::SlowReceiver {
                drain_gbps,
                buffer_bytes,
                xoff_bytes,
                xon_bytes,
                ..
            } => {
                if !(drain_gbps.is_finite()
                    && drain_gbps > 0.0
                    && drain_gbps * 1e9 < link_bps as f64)
                {
                    return Err(err(
                        format!("{key}.drain_gbps"),
                        format!(
                            "{drain_gbps} is not allowed; give a rate above 0 and below the \
                             link's {} Gb/s",
                            link_bps as f64 / 1e9
                        ),
                    ));
                }
                let mut rx = SlowReceiver::with_drain((drain_gbps * 1e9).round() as u64);
                if let Some(b) = buffer_bytes {
                    rx = SlowReceiver {
                        buffer_bytes: b,
                        xoff_bytes: b / 2,
                        xon_bytes: b / 4,
                        ..rx
                    };
                }
                rx.xoff_bytes = xoff_bytes.unwrap_or(rx.xoff_bytes);
                rx.xon_bytes = xon_bytes.unwrap_or(rx.xon_bytes.min(rx.xoff_bytes / 2));
                if rx.xoff_bytes < largest_frame
                    || rx.xoff_bytes + 2 * largest_frame > rx.buffer_bytes
                {
                    return Err(err(
                        format!("{key}.xoff_bytes"),
                        format!(
                            "the XOFF point ({} B) must hold a frame ({largest_frame} B) and \
                             leave room for two more below buffer_bytes ({} B)",
                            rx.xoff_bytes, rx.buffer_bytes
                        ),
                    ));
                }
                if rx.xon_bytes >= rx.xoff_bytes {
                    return Err(err(
                        format!("{key}.xon_bytes"),
                        format!("must be below the XOFF point ({} B)", rx.xoff_bytes),
                    ));
                }
                faults.slow_receiver = Some(rx);
            }
            FaultSpec::IgnorePause { .. } => faults.ignore_pause = true,
            FaultSpec::SlowLink { .. } => continue,
        }
        match out.iter_mut().find(|f| f.host == host) {
            Some(f) => {
                let twice = (faults.pause_storm.is_some() && f.faults.pause_storm.is_some())
                    || (faults.slow_receiver.is_some() && f.faults.slow_receiver.is_some())
                    || (faults.ignore_pause && f.faults.ignore_pause);
                if twice {
                    return Err(err(&key, format!("host {host} already has a {kind} fault")));
                }
                f.faults.pause_storm = f.faults.pause_storm.or(faults.pause_storm);
                f.faults.slow_receiver = f.faults.slow_receiver.or(faults.slow_receiver);
                f.faults.ignore_pause |= faults.ignore_pause;
            }
            None => out.push(HostFault { host, faults }),
        }
    }
    Ok(out)
}

/// One line per fault, for the run's header.
pub fn describe(faults: &[HostFault], link_bps: u64) -> Vec<String> {
    let mut lines = Vec::new();
    for f in faults {
        let h = f.host;
        if let Some(s) = f.faults.pause_storm {
            let until = s.stop.map_or_else(|| "the end".to_owned(), |t| t.human());
            lines.push(format!(
                "host {h}: pause storm, PFC XOFF ({} quanta) on priority {} every {} from {} to {until}",
                s.quanta,
                s.priority,
                s.interval(link_bps).human(),
                s.start.human()
            ));
        }
        if let Some(r) = f.faults.slow_receiver {
            lines.push(format!(
                "host {h}: slow receiver, drains {} Gb/s; receive buffer {} B, XOFF at {} B, XON at {} B",
                r.drain_bps as f64 / 1e9,
                r.buffer_bytes,
                r.xoff_bytes,
                r.xon_bytes
            ));
        }
        if f.faults.ignore_pause {
            lines.push(format!("host {h}: ignores PFC and PAUSE frames"));
        }
    }
    lines
}
