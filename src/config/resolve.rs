//! Validation of a [`ConfigFile`] into a [`SwitchConfig`]: one step per section, run in
//! the order of the file's sections, the first problem found reported with its key.

use super::{
    ALPHA_RANGE, CABLE_NS_PER_M, CLASSES, ConfigError, ConfigFile, MAX_BUFFER_BYTES, MAX_CABLE_M,
    MAX_CABLE_NS, MAX_PORTS, MarkAt, PgConfig, PgSpec, PortConfig, PortSpec, QueueConfig,
    QueueLimit, QueueSpec, RedProfile, RedSpec, Schedule, ScheduleSpec, SwitchConfig,
    ThresholdMode, Trust, WatchdogConfig, XoffRule, err,
};
use crate::time::Nanos;
use crate::wire::PrioritySet;
use std::collections::{BTreeMap, HashSet};

/// MAC aging, seconds: 1 to 1 000 000 (NX-OS allows up to 918 000).
const MAC_AGE_SECS: (u64, u64) = (1, 1_000_000);

/// The classification maps, resolved.
struct ClassMaps {
    dscp_to_tc: [u8; 64],
    pcp_to_tc: [u8; CLASSES],
    tc_to_queue: [u8; CLASSES],
}

/// PFC, resolved.
struct Pfc {
    lossless: PrioritySet,
    pause_quanta: u16,
    refresh_quanta: u16,
}

/// The buffer's threshold mode and limits, resolved.
struct Buffer {
    dynamic: bool,
    pg_alpha: f64,
    queue_limit: QueueLimit,
}

impl ConfigFile {
    /// Validates and computes the derived values.
    pub fn resolve(&self) -> Result<SwitchConfig, ConfigError> {
        let (lo, hi) = MAC_AGE_SECS;
        if !(lo..=hi).contains(&self.mac_age_secs) {
            return Err(err(
                "mac_age_secs",
                format!(
                    "{} is not allowed; give {lo} to {hi} seconds",
                    self.mac_age_secs
                ),
            ));
        }
        let (port_defaults, ports) = self.resolve_ports()?;
        let maps = self.resolve_classify()?;
        let pfc = self.resolve_pfc()?;
        let buffer = self.resolve_buffer()?;
        let pgs = self.resolve_pgs(pfc.lossless, &buffer)?;
        let (queues, configured) = self.resolve_queues()?;
        self.check_lossless(pfc.lossless, &maps, &configured)?;
        let watchdog = self.resolve_watchdog()?;
        Ok(SwitchConfig {
            seed: self.seed,
            trust: self.trust,
            mac_age: Nanos::from_secs(self.mac_age_secs),
            port_defaults,
            ports,
            dscp_to_tc: maps.dscp_to_tc,
            pcp_to_tc: maps.pcp_to_tc,
            tc_to_queue: maps.tc_to_queue,
            lossless: pfc.lossless,
            pause_quanta: pfc.pause_quanta,
            refresh_quanta: pfc.refresh_quanta,
            shared_bytes: self.buffer.shared_bytes,
            headroom_model: self.buffer.headroom_model,
            queue_reserve_bytes: self.buffer.queue_reserve_bytes,
            queue_limit: buffer.queue_limit,
            pgs,
            queues,
            watchdog,
        })
    }

    /// `port_defaults` and the listed ports: at most [`MAX_PORTS`], named, each name once.
    fn resolve_ports(&self) -> Result<(PortConfig, Vec<PortConfig>), ConfigError> {
        if self.port_defaults.name.is_some() {
            return Err(err("port_defaults.name", "the defaults have no name"));
        }
        if self.port_defaults.cable_m.is_some() && self.port_defaults.cable_ns.is_some() {
            return Err(err("port_defaults", "give cable_m or cable_ns, not both"));
        }
        let port_defaults =
            self.resolve_port(&PortSpec::default(), "port_defaults", "default".into())?;
        if self.ports.len() > MAX_PORTS {
            return Err(err(
                "ports",
                format!(
                    "{} ports are listed; give at most {MAX_PORTS}",
                    self.ports.len()
                ),
            ));
        }
        let mut ports = Vec::with_capacity(self.ports.len());
        let mut names = HashSet::with_capacity(self.ports.len());
        for (i, spec) in self.ports.iter().enumerate() {
            let key = format!("ports[{i}]");
            let name = spec
                .name
                .as_deref()
                .filter(|n| !n.is_empty())
                .ok_or_else(|| err(format!("{key}.name"), "every port needs a name"))?;
            if !names.insert(name) {
                return Err(err(
                    format!("{key}.name"),
                    format!("port '{name}' is listed twice"),
                ));
            }
            ports.push(self.resolve_port(spec, &key, name.to_owned())?);
        }
        Ok((port_defaults, ports))
    }

    /// One port, its unset fields from `port_defaults`.
    fn resolve_port(
        &self,
        spec: &PortSpec,
        key: &str,
        name: String,
    ) -> Result<PortConfig, ConfigError> {
        let d = &self.port_defaults;
        let speed = spec.speed_gbps.or(d.speed_gbps).unwrap_or(100.0);
        if !(speed.is_finite() && (0.001..=1600.0).contains(&speed)) {
            return Err(err(
                format!("{key}.speed_gbps"),
                format!("{speed} is not allowed; give 0.001 to 1600 Gb/s"),
            ));
        }
        let cable = match (spec.cable_ns, spec.cable_m) {
            (Some(_), Some(_)) => {
                return Err(err(key, "give cable_m or cable_ns, not both"));
            }
            (Some(ns), None) => cable_from_ns(&format!("{key}.cable_ns"), ns)?,
            (None, Some(m)) => cable_from_m(&format!("{key}.cable_m"), m)?,
            (None, None) => match (d.cable_ns, d.cable_m) {
                (Some(ns), _) => cable_from_ns("port_defaults.cable_ns", ns)?,
                (None, Some(m)) => cable_from_m("port_defaults.cable_m", m)?,
                (None, None) => Nanos(0),
            },
        };
        let mtu = spec.mtu.or(d.mtu).unwrap_or(9216);
        if !(68..=16384).contains(&mtu) {
            return Err(err(
                format!("{key}.mtu"),
                format!("{mtu} is not allowed; give 68 to 16384 bytes"),
            ));
        }
        Ok(PortConfig {
            name,
            bits_per_sec: (speed * 1e9).round() as u64,
            cable,
            mtu,
        })
    }

    /// `[classify]`: DSCP → class, PCP → class, class → queue.
    fn resolve_classify(&self) -> Result<ClassMaps, ConfigError> {
        let c = &self.classify;
        let default_tc = class("classify.default_tc", c.default_tc)?;
        let mut dscp_to_tc = [default_tc; 64];
        let mut listed_at: [Option<usize>; 64] = [None; 64];
        for (i, [dscp, tc]) in c.dscp_to_tc.iter().copied().enumerate() {
            let key = format!("classify.dscp_to_tc[{i}]");
            if dscp > 63 {
                return Err(err(key, format!("DSCP {dscp} is not 0-63")));
            }
            if let Some(first) = listed_at[dscp as usize].replace(i) {
                return Err(err(
                    key,
                    format!(
                        "DSCP {dscp} is listed twice (first at classify.dscp_to_tc[{first}]); give each DSCP one class"
                    ),
                ));
            }
            dscp_to_tc[dscp as usize] = class(&key, tc)?;
        }
        Ok(ClassMaps {
            dscp_to_tc,
            pcp_to_tc: class_table("classify.pcp_to_tc", &c.pcp_to_tc)?,
            tc_to_queue: class_table("classify.tc_to_queue", &c.tc_to_queue)?,
        })
    }

    /// `[pfc]`: the lossless priorities, pause time and refresh interval.
    fn resolve_pfc(&self) -> Result<Pfc, ConfigError> {
        let mut lossless = PrioritySet::EMPTY;
        for (i, &p) in self.pfc.lossless.iter().enumerate() {
            lossless.insert(class(&format!("pfc.lossless[{i}]"), p)?);
        }
        let pause_quanta = quanta("pfc.pause_quanta", self.pfc.pause_quanta)?;
        if pause_quanta < 2 {
            // The refresh, at least 1 quantum, must come before the pause ends.
            return Err(err(
                "pfc.pause_quanta",
                format!(
                    "{pause_quanta} leaves no room for the refresh, which must come at least 1 quantum before the pause ends; give 2 to 65535"
                ),
            ));
        }
        let refresh_quanta = quanta(
            "pfc.refresh_quanta",
            self.pfc
                .refresh_quanta
                .unwrap_or(u32::from(pause_quanta).div_ceil(2)),
        )?;
        if refresh_quanta >= pause_quanta {
            return Err(err(
                "pfc.refresh_quanta",
                format!(
                    "{refresh_quanta} must be below pfc.pause_quanta ({pause_quanta}), or the peer resumes before the refresh"
                ),
            ));
        }
        Ok(Pfc {
            lossless,
            pause_quanta,
            refresh_quanta,
        })
    }

    /// `[buffer]`: the shared pool and the (dynamic or static) limits.
    fn resolve_buffer(&self) -> Result<Buffer, ConfigError> {
        let b = &self.buffer;
        if b.shared_bytes == 0 {
            return Err(err("buffer.shared_bytes", "must be more than 0"));
        }
        buffer_bytes("buffer.shared_bytes", b.shared_bytes)?;
        buffer_bytes("buffer.queue_reserve_bytes", b.queue_reserve_bytes)?;
        buffer_bytes("buffer.pg_reserve_bytes", b.pg_reserve_bytes)?;
        let dynamic = b.threshold == ThresholdMode::Dynamic;
        let queue_limit = if dynamic {
            if b.queue_limit_bytes.is_some() {
                return Err(err(
                    "buffer.queue_limit_bytes",
                    "only with threshold = \"static\"; dynamic limits use queue_alpha",
                ));
            }
            QueueLimit::Dynamic(alpha("buffer.queue_alpha", b.queue_alpha, 0.5)?)
        } else {
            if b.queue_alpha.is_some() || b.pg_alpha.is_some() {
                return Err(err(
                    "buffer",
                    "pg_alpha and queue_alpha apply only with threshold = \"dynamic\"",
                ));
            }
            let limit = b.queue_limit_bytes.ok_or_else(|| {
                err(
                    "buffer.queue_limit_bytes",
                    "threshold = \"static\" needs a lossy queue limit in bytes",
                )
            })?;
            QueueLimit::Static(buffer_bytes("buffer.queue_limit_bytes", limit)?)
        };
        let pg_alpha = if dynamic {
            alpha("buffer.pg_alpha", b.pg_alpha, 1.0)?
        } else {
            0.0
        };
        Ok(Buffer {
            dynamic,
            pg_alpha,
            queue_limit,
        })
    }

    /// `[pg.N]`: every priority group. A headroom below what a port needs is allowed, as
    /// a switch allows it; [`SwitchConfig::lint`] warns.
    fn resolve_pgs(
        &self,
        lossless: PrioritySet,
        buffer: &Buffer,
    ) -> Result<[PgConfig; CLASSES], ConfigError> {
        let specs = by_class("pg", &self.pg)?;
        let mut pgs = [PgConfig {
            lossless: false,
            reserve_bytes: self.buffer.pg_reserve_bytes,
            xoff: XoffRule::Dynamic {
                alpha: buffer.pg_alpha,
                xon_offset_bytes: 0,
            },
            headroom_bytes: None,
        }; CLASSES];
        for (pg, cfg) in pgs.iter_mut().enumerate() {
            let key = format!("pg.{pg}");
            let spec = specs[pg].cloned().unwrap_or_default();
            cfg.lossless = lossless.contains(pg as u8);
            if let Some(r) = spec.reserve_bytes {
                buffer_bytes(&format!("{key}.reserve_bytes"), r)?;
            }
            cfg.reserve_bytes = spec.reserve_bytes.unwrap_or(self.buffer.pg_reserve_bytes);
            if !cfg.lossless {
                check_lossy_pg(&key, pg, specs[pg])?;
                continue;
            }
            cfg.xoff = self.xoff_rule(&key, &spec, buffer)?;
            cfg.headroom_bytes = spec.headroom_bytes;
            if let Some(h) = spec.headroom_bytes {
                buffer_bytes(&format!("{key}.headroom_bytes"), h)?;
            }
        }
        Ok(pgs)
    }

    /// The XOFF/XON rule of the lossless priority group at `key`.
    fn xoff_rule(
        &self,
        key: &str,
        spec: &PgSpec,
        buffer: &Buffer,
    ) -> Result<XoffRule, ConfigError> {
        if !buffer.dynamic {
            return static_xoff_rule(key, spec, self.buffer.shared_bytes);
        }
        if spec.xoff_bytes.is_some() || spec.xon_bytes.is_some() {
            return Err(err(
                key,
                "xoff_bytes and xon_bytes apply only with buffer.threshold = \"static\"; dynamic thresholds use buffer.pg_alpha and xon_offset_bytes",
            ));
        }
        let xon_offset_bytes = spec.xon_offset_bytes.unwrap_or(0);
        buffer_bytes(&format!("{key}.xon_offset_bytes"), xon_offset_bytes)?;
        Ok(XoffRule::Dynamic {
            alpha: buffer.pg_alpha,
            xon_offset_bytes,
        })
    }

    /// `[queue.N]`: every egress queue, and which queues have a section.
    fn resolve_queues(&self) -> Result<([QueueConfig; CLASSES], [bool; CLASSES]), ConfigError> {
        let specs = by_class("queue", &self.queue)?;
        let mut queues = [QueueConfig {
            schedule: Schedule::Dwrr(1),
            ecn: None,
            mark_at: MarkAt::Enqueue,
            marking_rate: 0,
        }; CLASSES];
        for (q, cfg) in queues.iter_mut().enumerate() {
            if let Some(spec) = specs[q] {
                *cfg = resolve_queue(&format!("queue.{q}"), spec)?;
            }
        }
        Ok((queues, specs.map(|s| s.is_some())))
    }

    /// Every lossless priority is reached by classification, and has a configured queue
    /// of its own (no lossy class shares it).
    fn check_lossless(
        &self,
        lossless: PrioritySet,
        maps: &ClassMaps,
        configured: &[bool; CLASSES],
    ) -> Result<(), ConfigError> {
        for p in lossless.iter() {
            self.check_reachable(p, maps)?;
            let q = usize::from(maps.tc_to_queue[usize::from(p)]);
            if !configured[q] {
                return Err(err(
                    "pfc.lossless",
                    format!(
                        "lossless class {p} goes to queue {q} (classify.tc_to_queue), which has no [queue.{q}] section: give it a schedule (and usually ecn)"
                    ),
                ));
            }
            let shared: Vec<usize> = (0..CLASSES)
                .filter(|&tc| {
                    tc != usize::from(p)
                        && usize::from(maps.tc_to_queue[tc]) == q
                        && !lossless.contains(tc as u8)
                })
                .collect();
            if !shared.is_empty() {
                return Err(err(
                    "classify.tc_to_queue",
                    format!(
                        "lossless class {p} shares queue {q} with lossy class(es) {shared:?}; a paused queue would stall them too (and their drops would hit lossless traffic): give class {p} a queue of its own"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Some DSCP (or PCP, by `trust`) maps to the lossless class `p`.
    fn check_reachable(&self, p: u8, maps: &ClassMaps) -> Result<(), ConfigError> {
        let (reached, what, map) = match self.trust {
            Trust::Dscp => (maps.dscp_to_tc.contains(&p), "DSCP", "dscp_to_tc"),
            Trust::Pcp => (maps.pcp_to_tc.contains(&p), "PCP", "pcp_to_tc"),
        };
        if reached {
            return Ok(());
        }
        Err(err(
            "pfc.lossless",
            format!(
                "priority {p} is lossless but no {what} maps to traffic class {p}: it has no queue to protect; add it to classify.{map}"
            ),
        ))
    }

    /// `[watchdog]`: the times are checked whether or not it is enabled.
    fn resolve_watchdog(&self) -> Result<WatchdogConfig, ConfigError> {
        let w = &self.watchdog;
        for (key, v) in [
            ("watchdog.detection_ms", w.detection_ms),
            ("watchdog.restoration_ms", w.restoration_ms),
            ("watchdog.poll_ms", w.poll_ms),
        ] {
            if !(1..=3_600_000).contains(&v) {
                return Err(err(
                    key,
                    format!("{v} is not allowed; give 1 to 3600000 ms"),
                ));
            }
        }
        Ok(WatchdogConfig {
            enabled: w.enabled,
            detection: Nanos::from_millis(w.detection_ms),
            restoration: Nanos::from_millis(w.restoration_ms),
            poll: Nanos::from_millis(w.poll_ms),
            action: w.action,
        })
    }
}

/// A lossy priority group (`spec` as written, if any) sets nothing that only lossless
/// ones have.
fn check_lossy_pg(key: &str, pg: usize, spec: Option<&PgSpec>) -> Result<(), ConfigError> {
    let Some(spec) = spec else { return Ok(()) };
    if spec.xoff_bytes.is_some()
        || spec.xon_bytes.is_some()
        || spec.xon_offset_bytes.is_some()
        || spec.headroom_bytes.is_some()
    {
        return Err(err(
            key,
            format!(
                "priority {pg} is not in pfc.lossless; XOFF, XON and headroom apply only to lossless priority groups"
            ),
        ));
    }
    Ok(())
}

/// Static thresholds: both given, XON below XOFF, XOFF within the `shared` pool.
fn static_xoff_rule(key: &str, spec: &PgSpec, shared: u64) -> Result<XoffRule, ConfigError> {
    let needs = |field: &str, value: Option<u64>| {
        value.ok_or_else(|| {
            err(
                format!("{key}.{field}"),
                format!("a lossless PG with static thresholds needs {field}"),
            )
        })
    };
    let xoff = needs("xoff_bytes", spec.xoff_bytes)?;
    let xon = needs("xon_bytes", spec.xon_bytes)?;
    if xon >= xoff {
        return Err(err(
            format!("{key}.xon_bytes"),
            format!(
                "{xon} must be below xoff_bytes ({xoff}), or XON and XOFF would chase each other"
            ),
        ));
    }
    if xoff > shared {
        return Err(err(
            format!("{key}.xoff_bytes"),
            format!("{xoff} exceeds buffer.shared_bytes ({shared})"),
        ));
    }
    Ok(XoffRule::Static {
        xoff_bytes: xoff,
        xon_bytes: xon,
    })
}

/// One egress queue as written at `key`.
fn resolve_queue(key: &str, spec: &QueueSpec) -> Result<QueueConfig, ConfigError> {
    let schedule = match spec.schedule {
        ScheduleSpec::Strict => {
            if spec.weight.is_some() {
                return Err(err(
                    format!("{key}.weight"),
                    "a strict-priority queue has no weight",
                ));
            }
            Schedule::Strict
        }
        ScheduleSpec::Dwrr => {
            let w = spec.weight.unwrap_or(1);
            if !(1..=1000).contains(&w) {
                return Err(err(
                    format!("{key}.weight"),
                    format!("{w} is not allowed; give 1 to 1000"),
                ));
            }
            Schedule::Dwrr(w)
        }
    };
    let ecn = match spec.ecn {
        Some(red) => Some(red_profile(&format!("{key}.ecn"), red)?),
        None => None,
    };
    Ok(QueueConfig {
        schedule,
        ecn,
        mark_at: spec.mark_at,
        marking_rate: 0,
    })
}

/// A RED-ECN profile as written at `key`.
fn red_profile(key: &str, red: RedSpec) -> Result<RedProfile, ConfigError> {
    buffer_bytes(&format!("{key}.kmax_bytes"), red.kmax_bytes)?;
    if red.kmin_bytes > red.kmax_bytes {
        return Err(err(
            format!("{key}.kmin_bytes"),
            format!(
                "{} must not exceed kmax_bytes ({})",
                red.kmin_bytes, red.kmax_bytes
            ),
        ));
    }
    if !(red.pmax.is_finite() && red.pmax > 0.0 && red.pmax <= 1.0) {
        return Err(err(
            format!("{key}.pmax"),
            format!("{} is not a probability in (0, 1]", red.pmax),
        ));
    }
    Ok(RedProfile {
        kmin_bytes: red.kmin_bytes,
        kmax_bytes: red.kmax_bytes,
        pmax: red.pmax,
        gentle: red.gentle,
    })
}

/// The sections `[section.N]`, indexed by N (0-7).
fn by_class<'a, T>(
    section: &str,
    specs: &'a BTreeMap<String, T>,
) -> Result<[Option<&'a T>; CLASSES], ConfigError> {
    let mut out = [None; CLASSES];
    for (key, spec) in specs {
        // Keys are exactly "0".."7", so no two name the same section ("3" and "03").
        out[class_key(section, key)?] = Some(spec);
    }
    Ok(out)
}

fn class(key: &str, value: u32) -> Result<u8, ConfigError> {
    u8::try_from(value)
        .ok()
        .filter(|&v| usize::from(v) < CLASSES)
        .ok_or_else(|| err(key, format!("{value} is not a traffic class; use 0-7")))
}

/// A map of 8 entries, each a traffic class (or queue).
fn class_table(key: &str, v: &[u32]) -> Result<[u8; CLASSES], ConfigError> {
    if v.len() != CLASSES {
        return Err(err(key, format!("needs 8 entries, has {}", v.len())));
    }
    let mut out = [0u8; CLASSES];
    for (i, &x) in v.iter().enumerate() {
        out[i] = class(&format!("{key}[{i}]"), x)?;
    }
    Ok(out)
}

fn class_key(section: &str, key: &str) -> Result<usize, ConfigError> {
    key.parse::<usize>()
        .ok()
        .filter(|&v| v < CLASSES && v.to_string() == key)
        .ok_or_else(|| err(format!("{section}.{key}"), "sections are numbered 0-7"))
}

/// A PFC time in quanta: 1 to 65535.
fn quanta(key: &str, v: u32) -> Result<u16, ConfigError> {
    u16::try_from(v)
        .ok()
        .filter(|&q| q > 0)
        .ok_or_else(|| err(key, format!("{v} is not allowed; give 1 to 65535 quanta")))
}

/// A dynamic-threshold alpha: 1/128 to 8, SONiC's `dynamic_th` -7 to 3.
fn alpha(key: &str, value: Option<f64>, default: f64) -> Result<f64, ConfigError> {
    let a = value.unwrap_or(default);
    let (lo, hi) = ALPHA_RANGE;
    if a.is_finite() && (lo..=hi).contains(&a) {
        Ok(a)
    } else {
        Err(err(
            key,
            format!(
                "{a} is not allowed; alpha must be in [1/128, 8] (0.0078125 to 8, SONiC dynamic_th -7 to 3)"
            ),
        ))
    }
}

/// A byte quantity of the buffer: 0 to [`MAX_BUFFER_BYTES`] (1 TiB).
fn buffer_bytes(key: &str, v: u64) -> Result<u64, ConfigError> {
    if v > MAX_BUFFER_BYTES {
        return Err(err(
            key,
            format!("{v} is not allowed; give at most {MAX_BUFFER_BYTES} bytes (1 TiB)"),
        ));
    }
    Ok(v)
}

fn cable_from_m(key: &str, m: f64) -> Result<Nanos, ConfigError> {
    if !(m.is_finite() && (0.0..=MAX_CABLE_M).contains(&m)) {
        return Err(err(key, format!("{m} is not allowed; give 0 to 100000 m")));
    }
    Ok(Nanos((m * CABLE_NS_PER_M as f64).round() as u64))
}

fn cable_from_ns(key: &str, ns: u64) -> Result<Nanos, ConfigError> {
    if ns > MAX_CABLE_NS {
        return Err(err(
            key,
            format!(
                "{ns} is not allowed; give 0 to {MAX_CABLE_NS} ns (100 km at {CABLE_NS_PER_M} ns/m)"
            ),
        ));
    }
    Ok(Nanos(ns))
}
