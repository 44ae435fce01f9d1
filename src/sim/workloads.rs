//! Datacenter workloads for a scenario's `[[workload]]` entries: Poisson flow arrivals with
//! sizes drawn from a published flow-size distribution at a target load, all-to-all
//! exchanges and periodic incast bursts. Each becomes a list of flows (source, destination,
//! arrival, bytes) drawn up front from the scenario's seed, so a run is a function of its
//! inputs; the endpoints then run them (see [`crate::endpoint::app::flows`]) and report each
//! flow's completion time.

use crate::config::ConfigError;
use crate::rand::Rng;
use crate::time::Nanos;
use serde::Deserialize;
use std::path::Path;

/// The built-in flow-size distributions: (name, text). Each file says where its numbers
/// come from.
pub const CDFS: [(&str, &str); 3] = [
    ("web-search", include_str!("cdfs/web-search.txt")),
    ("data-mining", include_str!("cdfs/data-mining.txt")),
    ("fb-hadoop", include_str!("cdfs/fb-hadoop.txt")),
];

/// The most flows a scenario's workloads may make (each costs a few hundred bytes and
/// its share of events).
pub const MAX_FLOWS: usize = 2_000_000;

fn err(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        message: message.into(),
    }
}

/// A flow-size distribution: sizes and the fraction of flows at or below each, drawn by
/// inverse transform with linear interpolation between points (as the ns-3 RDMA
/// simulators' traffic generators draw them).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeCdf {
    /// Its name (built-in) or file path.
    pub name: String,
    points: Vec<(f64, f64)>,
}

impl SizeCdf {
    /// A built-in distribution by name, or a file of `bytes fraction` lines (`#` starts a
    /// comment; fractions 0 to 1 that never decrease and end at 1, or percentages to 100; a
    /// first fraction above 0 is the share of flows of the first size), relative to `dir`.
    pub fn load(key: &str, name: &str, dir: Option<&Path>) -> Result<SizeCdf, ConfigError> {
        if let Some((n, text)) = CDFS.iter().find(|(n, _)| *n == name) {
            return SizeCdf::parse(key, n, text);
        }
        let path = dir.map_or_else(|| Path::new(name).to_path_buf(), |d| d.join(name));
        let text = crate::config::read_text(&path).map_err(|e| {
            err(
                key,
                format!(
                    "{e}; give a file of 'bytes fraction' lines or a built-in distribution ({})",
                    CDFS.map(|(n, _)| n).join(", ")
                ),
            )
        })?;
        SizeCdf::parse(key, name, &text)
    }

    /// Parses `bytes fraction` lines.
    pub fn parse(key: &str, name: &str, text: &str) -> Result<SizeCdf, ConfigError> {
        let mut points = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = || format!("{key} ({name}, line {})", i + 1);
            let fields: Vec<&str> = line
                .split([' ', '\t', ','])
                .filter(|f| !f.is_empty())
                .collect();
            let [x, p] = fields[..] else {
                return Err(err(at(), format!("'{line}': give 'bytes fraction'")));
            };
            let (Ok(x), Ok(p)) = (x.parse::<f64>(), p.parse::<f64>()) else {
                return Err(err(at(), format!("'{line}': give two numbers")));
            };
            if !(x.is_finite() && x >= 0.0 && x <= (1u64 << 40) as f64 && p.is_finite()) {
                return Err(err(
                    at(),
                    format!("'{line}': sizes 0 to 1 TiB, a finite fraction"),
                ));
            }
            // Whether the file is in fractions or percent shows at its end; below 0 is
            // neither, and above the end a later line must decrease.
            if p < 0.0 {
                return Err(err(
                    at(),
                    format!("'{line}': the fraction {p} is below 0; give 0 to 1 (or 0 to 100 %)"),
                ));
            }
            if let Some(&(px, pp)) = points.last()
                && (x < px || p < pp)
            {
                return Err(err(at(), "sizes and fractions must not decrease"));
            }
            points.push((x, p));
        }
        let Some(&(_, last)) = points.last() else {
            return Err(err(key, format!("{name}: no 'bytes fraction' lines")));
        };
        // Percentages (HPCC's files) or fractions.
        let scale = if (last - 100.0).abs() < 1e-9 {
            100.0
        } else if (last - 1.0).abs() < 1e-9 {
            1.0
        } else {
            return Err(err(
                key,
                format!("{name}: the last fraction is {last}; a distribution ends at 1 (or 100 %)"),
            ));
        };
        for p in &mut points {
            p.1 /= scale;
        }
        if points.len() < 2 || points.last().is_some_and(|&(x, _)| x < 1.0) {
            return Err(err(
                key,
                format!("{name}: give at least two points, the last at 1 byte or more"),
            ));
        }
        Ok(SizeCdf {
            name: name.to_owned(),
            points,
        })
    }

    /// The size at cumulative fraction `u` (0 ≤ u < 1), at least 1 byte.
    pub fn quantile(&self, u: f64) -> u64 {
        let i = self.points.partition_point(|&(_, p)| p <= u);
        let size = match (i.checked_sub(1).map(|k| self.points[k]), self.points.get(i)) {
            (Some((x0, p0)), Some(&(x1, p1))) if p1 > p0 => x0 + (x1 - x0) * (u - p0) / (p1 - p0),
            (Some((x0, _)), _) => x0,
            (None, Some(&(x1, _))) => x1,
            (None, None) => 1.0,
        };
        (size.round() as u64).max(1)
    }

    /// The mean size, bytes (of the interpolated distribution): the first point's size
    /// for the fraction at it (the draws below it are that size), then each segment's
    /// midpoint for the fraction it spans.
    pub fn mean(&self) -> f64 {
        let (x0, p0) = self.points[0];
        let segments: f64 = self
            .points
            .windows(2)
            .map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0)
            .sum();
        (x0 * p0 + segments).max(1.0)
    }

    /// One draw.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        self.quantile(rng.next_f64())
    }
}

/// Upper bounds of a workload's `bytes`, with their names for errors.
const GIB: (u64, &str) = (1 << 30, "1 GiB");
const TIB: (u64, &str) = (1 << 40, "1 TiB");

/// A `[[workload]]` entry as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WorkloadSpec {
    kind: String,
    /// The hosts taking part (default all).
    hosts: Option<Vec<usize>>,
    #[serde(default)]
    start_us: f64,
    duration_us: Option<f64>,
    /// poisson: a built-in distribution or a file.
    cdf: Option<String>,
    /// poisson: offered load as a fraction of each host's link rate; incast-bursts: the
    /// bursts' bytes as a fraction of all members' links (instead of `period_us`).
    load: Option<f64>,
    /// all-to-all, permutation and incast-bursts: bytes per flow.
    #[serde(default, deserialize_with = "crate::bytes::deserialize_option")]
    bytes: Option<u64>,
    /// incast-bursts: the receiver (default: one drawn for each burst).
    to: Option<usize>,
    /// incast-bursts: senders per burst.
    fan_in: Option<usize>,
    /// incast-bursts: time from one burst to the next.
    period_us: Option<f64>,
    /// incast-bursts: bursts (default: as many as fit the duration).
    bursts: Option<u64>,
}

/// One flow of a workload: from a host to another, arriving at a time, of some bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadFlow {
    /// Sending host.
    pub from: usize,
    /// Receiving host.
    pub to: usize,
    /// When the application hands it to the endpoint (its FCT counts from here).
    pub arrival: Nanos,
    /// Payload bytes.
    pub bytes: u64,
    /// Which `[[workload]]` made it (index in the file).
    pub workload: usize,
}

/// A resolved workload: what it is, in words and numbers, for the report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WorkloadPlan {
    /// `poisson`, `all-to-all`, `permutation` or `incast-bursts`.
    pub kind: String,
    /// One line: the distribution and load, or the pattern.
    pub summary: String,
    /// Flows it made.
    pub flows: usize,
    /// Of those, the flows that arrive by the end of the run; the others never start.
    pub flows_in_run: usize,
}

fn time(key: &str, us: f64) -> Result<Nanos, ConfigError> {
    if us.is_finite() && (0.0..=3.6e9).contains(&us) {
        Ok(Nanos((us * 1e3).round() as u64))
    } else {
        Err(err(
            key,
            format!("{us} µs is not allowed; give 0 to one hour"),
        ))
    }
}

/// Where an entry's flows may go and when: its hosts and the span they arrive in, and
/// the entry's index (for its keys, and each flow's `workload`).
struct Span {
    index: usize,
    members: Vec<usize>,
    start: Nanos,
    stop: Nanos,
}

impl Span {
    /// The dotted key of the entry's `k`.
    fn key(&self, k: &str) -> String {
        format!("workload[{}].{k}", self.index)
    }

    /// A flow of the entry.
    fn job(&self, from: usize, to: usize, arrival: Nanos, bytes: u64) -> WorkloadFlow {
        WorkloadFlow {
            from,
            to,
            arrival,
            bytes,
            workload: self.index,
        }
    }
}

impl WorkloadSpec {
    /// The flows of entry `index` among `hosts` hosts at `link_bps`, drawn from `rng`,
    /// arriving before `end` (the scenario's duration when the entry gives none).
    pub(super) fn resolve(
        &self,
        index: usize,
        hosts: usize,
        link_bps: u64,
        end: Nanos,
        dir: Option<&Path>,
        rng: &mut Rng,
    ) -> Result<(WorkloadPlan, Vec<WorkloadFlow>), ConfigError> {
        let span = self.span(index, hosts, end)?;
        let (summary, jobs) = match self.kind.as_str() {
            "poisson" => {
                self.takes(&span, &["cdf", "load", "duration_us"])?;
                self.poisson(&span, link_bps, dir, rng)?
            }
            "all-to-all" => {
                self.takes(&span, &["bytes"])?;
                self.all_to_all(&span)?
            }
            "permutation" => {
                self.takes(&span, &["bytes"])?;
                self.permutation(&span, rng)?
            }
            "incast-bursts" => {
                self.takes(
                    &span,
                    &[
                        "to",
                        "fan_in",
                        "bytes",
                        "period_us",
                        "load",
                        "bursts",
                        "duration_us",
                    ],
                )?;
                self.incast_bursts(&span, link_bps, rng)?
            }
            other => {
                return Err(err(
                    span.key("kind"),
                    format!("'{other}': give poisson, all-to-all, permutation or incast-bursts"),
                ));
            }
        };
        Ok((
            WorkloadPlan {
                kind: self.kind.clone(),
                summary,
                flows: jobs.len(),
                flows_in_run: jobs.iter().filter(|j| j.arrival <= end).count(),
            },
            jobs,
        ))
    }

    /// The entry's hosts (each once, at least two) and the span its flows arrive in.
    fn span(&self, index: usize, hosts: usize, end: Nanos) -> Result<Span, ConfigError> {
        let key = |k: &str| format!("workload[{index}].{k}");
        let members: Vec<usize> = match &self.hosts {
            Some(h) => h.clone(),
            None => (0..hosts).collect(),
        };
        if let Some(&bad) = members.iter().find(|&&h| h >= hosts) {
            return Err(err(
                key("hosts"),
                format!("host {bad} does not exist (0 to {})", hosts - 1),
            ));
        }
        let mut seen = vec![false; hosts];
        for &h in &members {
            if std::mem::replace(&mut seen[h], true) {
                return Err(err(key("hosts"), format!("host {h} is listed twice")));
            }
        }
        if members.len() < 2 {
            return Err(err(key("hosts"), "give at least two hosts"));
        }
        let start = time(&key("start_us"), self.start_us)?;
        let stop = match self.duration_us {
            Some(d) => start + time(&key("duration_us"), d)?,
            None => end,
        };
        Ok(Span {
            index,
            members,
            start,
            stop,
        })
    }

    /// Refuses a key the entry's kind does not take (`allowed` are those it does).
    fn takes(&self, span: &Span, allowed: &[&str]) -> Result<(), ConfigError> {
        let given = [
            ("cdf", self.cdf.is_some()),
            ("load", self.load.is_some()),
            ("bytes", self.bytes.is_some()),
            ("to", self.to.is_some()),
            ("fan_in", self.fan_in.is_some()),
            ("period_us", self.period_us.is_some()),
            ("bursts", self.bursts.is_some()),
            ("duration_us", self.duration_us.is_some()),
        ];
        match given.iter().find(|(n, set)| *set && !allowed.contains(n)) {
            Some((n, _)) => Err(err(
                span.key(n),
                format!("a {} workload does not take {n}", self.kind),
            )),
            None => Ok(()),
        }
    }

    /// Poisson arrivals at every host, sizes from the distribution, at the offered load.
    fn poisson(
        &self,
        span: &Span,
        link_bps: u64,
        dir: Option<&Path>,
        rng: &mut Rng,
    ) -> Result<(String, Vec<WorkloadFlow>), ConfigError> {
        let key = |k: &str| span.key(k);
        let cdf_name = self.cdf.as_deref().ok_or_else(|| {
            err(
                key("cdf"),
                format!(
                    "give a flow-size distribution: {} or a file",
                    CDFS.map(|(n, _)| n).join(", ")
                ),
            )
        })?;
        let cdf = SizeCdf::load(&key("cdf"), cdf_name, dir)?;
        let load = self.load.ok_or_else(|| {
            err(
                key("load"),
                "give the offered load, a fraction of the host link rate (0.5 is 50 %)",
            )
        })?;
        if !(load.is_finite() && load > 0.0 && load <= 1.0) {
            return Err(err(
                key("load"),
                format!("{load}: give more than 0 and at most 1"),
            ));
        }
        // Per host: flows per second = load × rate / (8 × mean size); exponential gaps.
        let per_sec = load * link_bps as f64 / (8.0 * cdf.mean());
        let (start, stop) = (span.start, span.stop);
        let expected =
            per_sec * span.members.len() as f64 * stop.0.saturating_sub(start.0) as f64 / 1e9;
        if expected > MAX_FLOWS as f64 {
            return Err(err(
                key("load"),
                format!(
                    "about {expected:.0} flows: more than {MAX_FLOWS}; shorten duration_us or lower the load"
                ),
            ));
        }
        let mean_gap_ns = 1e9 / per_sec;
        let mut jobs = Vec::new();
        for &from in &span.members {
            let mut t = start.0 as f64;
            loop {
                t += -mean_gap_ns * (1.0 - rng.next_f64()).ln();
                if t >= stop.0 as f64 {
                    break;
                }
                // The destination is drawn before the size: the stream's order.
                let to = other(&span.members, from, rng);
                jobs.push(span.job(from, to, Nanos(t as u64), cdf.sample(rng)));
            }
        }
        let summary = format!(
            "Poisson arrivals, {} sizes (mean {}), {:.0} % load on {} hosts",
            cdf.name,
            super::fct::decimal_bytes(cdf.mean()),
            load * 100.0,
            span.members.len()
        );
        Ok((summary, jobs))
    }

    /// `bytes`, given and from 1 B to `max` (a GiB or a TiB, named): what `who` sends.
    fn bytes(&self, span: &Span, max: (u64, &str), who: &str) -> Result<u64, ConfigError> {
        let (max, named) = max;
        self.bytes.filter(|b| (1..=max).contains(b)).ok_or_else(|| {
            err(
                span.key("bytes"),
                format!("give the bytes {who}, 1 B to {named}"),
            )
        })
    }

    /// Every host sends `bytes` to every other, all at the start.
    fn all_to_all(&self, span: &Span) -> Result<(String, Vec<WorkloadFlow>), ConfigError> {
        let bytes = self.bytes(span, GIB, "each host sends to each other")?;
        let mut jobs = Vec::new();
        for &from in &span.members {
            for &to in span.members.iter().filter(|&&t| t != from) {
                jobs.push(span.job(from, to, span.start, bytes));
            }
        }
        let summary = format!(
            "all-to-all, {} from each of {} hosts to each other",
            crate::bytes::human(bytes),
            span.members.len()
        );
        Ok((summary, jobs))
    }

    /// At `start_us`, one flow of `bytes` from every host to another, each host receiving
    /// one: a permutation with no host sending to itself, drawn uniformly among those (a
    /// shuffle, drawn again while some host maps to itself: about e ≈ 2.7 draws). The
    /// traffic matrix of the packet simulators' permutation benchmarks.
    fn permutation(
        &self,
        span: &Span,
        rng: &mut Rng,
    ) -> Result<(String, Vec<WorkloadFlow>), ConfigError> {
        let bytes = self.bytes(span, TIB, "each host sends")?;
        let n = span.members.len();
        let mut to: Vec<usize> = (0..n).collect();
        loop {
            rng.shuffle(&mut to);
            if to.iter().enumerate().all(|(i, &t)| i != t) {
                break;
            }
        }
        let jobs = to
            .iter()
            .enumerate()
            .map(|(i, &t)| span.job(span.members[i], span.members[t], span.start, bytes))
            .collect();
        let summary = format!(
            "permutation, {} from each of {n} hosts to another, each receiving one",
            crate::bytes::human(bytes)
        );
        Ok((summary, jobs))
    }

    /// Bursts into one host every period, each from a fresh draw of `fan_in` senders; the
    /// host is `to`, or without it one drawn afresh for each burst. The period is
    /// `period_us`, or the one at which the bursts' bytes are `load` of the members'
    /// links together.
    fn incast_bursts(
        &self,
        span: &Span,
        link_bps: u64,
        rng: &mut Rng,
    ) -> Result<(String, Vec<WorkloadFlow>), ConfigError> {
        let key = |k: &str| span.key(k);
        if let Some(to) = self.to
            && !span.members.contains(&to)
        {
            return Err(err(
                key("to"),
                format!("host {to} is not one of the workload's hosts"),
            ));
        }
        let others = span.members.len() - 1;
        let fan_in = self.fan_in.unwrap_or(others);
        if !(1..=others).contains(&fan_in) {
            return Err(err(
                key("fan_in"),
                format!("{fan_in}: give 1 to {others} (the other hosts)"),
            ));
        }
        let bytes = self.bytes(span, GIB, "each sender sends per burst")?;
        let period = self.burst_period(span, link_bps, fan_in as u64 * bytes)?;
        let fit = span.stop.0.saturating_sub(span.start.0).div_ceil(period.0);
        let bursts = self.bursts.unwrap_or(fit);
        if bursts == 0 || bursts.saturating_mul(fan_in as u64) > MAX_FLOWS as u64 {
            return Err(err(
                key("bursts"),
                format!(
                    "{bursts} bursts of {fan_in}: give 1 to {} flows in all",
                    MAX_FLOWS
                ),
            ));
        }
        let mut jobs = Vec::new();
        for k in 0..bursts {
            let at = span.start + Nanos(period.0 * k);
            let to = self
                .to
                .unwrap_or_else(|| span.members[rng.below(span.members.len())]);
            // Each burst's senders: a fresh draw of fan_in of the others.
            let mut pool: Vec<usize> = span.members.iter().copied().filter(|&h| h != to).collect();
            for i in 0..fan_in {
                let j = i + rng.below(pool.len() - i);
                pool.swap(i, j);
                jobs.push(span.job(pool[i], to, at, bytes));
            }
        }
        let summary = format!(
            "{bursts} incast burst{} into {}, {fan_in} sender{} of {} each, every {}",
            if bursts == 1 { "" } else { "s" },
            self.to.map_or_else(
                || "a host drawn each time".to_owned(),
                |to| format!("h{to}")
            ),
            if fan_in == 1 { "" } else { "s" },
            crate::bytes::human(bytes),
            period.human()
        );
        Ok((summary, jobs))
    }

    /// An incast's period: `period_us`, or from `load`, the time in which the members'
    /// links together carry `load` of a burst's `burst_bytes` (on the wire, payload
    /// only: the load is offered bytes, as a poisson entry's is).
    fn burst_period(
        &self,
        span: &Span,
        link_bps: u64,
        burst_bytes: u64,
    ) -> Result<Nanos, ConfigError> {
        let key = |k: &str| span.key(k);
        let period = match (self.period_us, self.load) {
            (Some(us), None) => time(&key("period_us"), us)?,
            (None, Some(load)) => {
                if !(load.is_finite() && load > 0.0 && load <= 1.0) {
                    return Err(err(
                        key("load"),
                        format!("{load} is not allowed; give a fraction above 0, at most 1"),
                    ));
                }
                let capacity = span.members.len() as f64 * link_bps as f64 * load;
                Nanos((burst_bytes as f64 * 8.0 / capacity * 1e9).round() as u64)
            }
            (Some(_), Some(_)) => {
                return Err(err(
                    key("load"),
                    "give period_us or load, not both: the load sets the period",
                ));
            }
            (None, None) => {
                return Err(err(
                    key("period_us"),
                    "give the time from one burst to the next (or load, to set it)",
                ));
            }
        };
        if period == Nanos::ZERO {
            return Err(err(key("period_us"), "give a period above 0"));
        }
        Ok(period)
    }
}

impl WorkloadSpec {
    /// `poisson`, `all-to-all`, `permutation` or `incast-bursts`, as written.
    pub(super) fn kind(&self) -> &str {
        &self.kind
    }

    /// The hosts the entry may send from, whatever the draws: every host it lists (all by
    /// default), but an incast's receiver. Meaningful once [`resolve`](Self::resolve) took
    /// the entry.
    pub(super) fn senders(&self, hosts: usize) -> Vec<usize> {
        let members: Vec<usize> = match &self.hosts {
            Some(h) => h.clone(),
            None => (0..hosts).collect(),
        };
        match (self.kind.as_str(), self.to) {
            ("incast-bursts", Some(to)) => members.into_iter().filter(|&h| h != to).collect(),
            _ => members,
        }
    }
}

/// A member other than `from`, uniformly.
fn other(members: &[usize], from: usize, rng: &mut Rng) -> usize {
    loop {
        let h = members[rng.below(members.len())];
        if h != from {
            return h;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_distributions_load_and_have_their_published_means() {
        let ws = SizeCdf::load("cdf", "web-search", None).unwrap();
        // By the table: about 1.71 MB.
        assert!((ws.mean() - 1_711_250.0).abs() < 1.0, "{}", ws.mean());
        assert_eq!(ws.quantile(0.0), 1);
        assert_eq!(ws.quantile(0.15), 10_000);
        assert_eq!(ws.quantile(0.999_999), 29_999_333);
        let dm = SizeCdf::load("cdf", "data-mining", None).unwrap();
        assert_eq!(dm.quantile(0.0), 100);
        assert_eq!(dm.quantile(0.9), 400_000);
        let hadoop = SizeCdf::load("cdf", "fb-hadoop", None).unwrap();
        // By the table: 120,420.75 B.
        assert!(
            (hadoop.mean() - 120_420.75).abs() < 1.0,
            "{}",
            hadoop.mean()
        );
        assert_eq!(hadoop.quantile(0.5), 700);
        assert_eq!(hadoop.quantile(0.9), 120_000);
        // Drawn: the sample mean converges on the table's.
        let mut rng = Rng::new(3);
        let n = 200_000;
        let mean = (0..n).map(|_| ws.sample(&mut rng) as f64).sum::<f64>() / n as f64;
        assert!((mean / ws.mean() - 1.0).abs() < 0.02, "{mean}");
    }

    #[test]
    fn bad_distributions_are_refused_with_the_line() {
        let e = SizeCdf::parse("w.cdf", "f", "0 0\n100 0.5\n50 1\n").unwrap_err();
        assert!(
            e.key.contains("line 3") && e.message.contains("decrease"),
            "{e}"
        );
        let e = SizeCdf::parse("w.cdf", "f", "0 0\n100 0.5\n").unwrap_err();
        assert!(e.message.contains("ends at 1"), "{e}");
        let e = SizeCdf::parse("w.cdf", "f", "0 0\nten 1\n").unwrap_err();
        assert!(e.message.contains("two numbers"), "{e}");
        assert!(SizeCdf::parse("w.cdf", "f", "# nothing\n").is_err());
        // HPCC's percentages read the same as fractions.
        let pct = SizeCdf::parse("c", "p", "0 0\n100 50\n200 100\n").unwrap();
        assert_eq!(pct.quantile(0.75), 150);
        // A fraction below 0 was taken (and weighed the mean negatively).
        for text in ["1000 -1\n10000 1\n", "1000 -50\n10000 100\n"] {
            let e = SizeCdf::parse("w.cdf", "f", text).unwrap_err();
            assert!(
                e.key.contains("line 1") && e.key.contains('f') && e.message.contains("below 0"),
                "{e}"
            );
        }
        let e = SizeCdf::parse("w.cdf", "f", "1000 0.5\n2000 1.5\n3000 1\n").unwrap_err();
        assert!(
            e.key.contains("line 3") && e.message.contains("decrease"),
            "{e}"
        );
    }

    /// A first fraction above 0 is the share of flows of the first size exactly: the mean
    /// once left it out ("1000 0.5 / 1000 1" had a mean of 500 B, its flows all 1000 B,
    /// and a Poisson workload offered twice its load).
    #[test]
    fn the_mass_at_the_first_point_counts_in_the_mean() {
        let one = SizeCdf::parse("c", "f", "1000 0.5\n1000 1\n").unwrap();
        assert_eq!(one.mean(), 1000.0);
        assert_eq!((one.quantile(0.1), one.quantile(0.9)), (1000, 1000));
        // Half the flows 1000 B, half spread evenly over 1000-3000 B (mean 2000): 1500 B.
        for text in ["1000 0.5\n3000 1\n", "1000 50\n3000 100\n"] {
            let c = SizeCdf::parse("c", "f", text).unwrap();
            assert_eq!(c.mean(), 1500.0, "{text}");
            let mut rng = Rng::new(5);
            let n = 100_000;
            let drawn = (0..n).map(|_| c.sample(&mut rng) as f64).sum::<f64>() / n as f64;
            assert!((drawn / 1500.0 - 1.0).abs() < 0.01, "{drawn}");
        }
    }
}
