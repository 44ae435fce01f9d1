//! Time series of a run, sampled by the driver: the depth of every egress queue, which
//! ingress priority groups hold their peer in XOFF, every recorded QP's sending rate
//! (measured between samples, and DCQCN's Rc) and whether a host is paused. The simulator
//! and the live lab feed the same recorders through two small probe traits that the cores
//! implement ([`SwitchProbe`], [`EndpointProbe`]); report only draws and writes the
//! result. Every column is written to CSV; the plots leave out columns that stay zero.

use crate::config::{CLASSES, SwitchConfig};
use crate::time::Nanos;
use std::io::{self, Write};

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// Egress queue depth, bytes: the deepest it was since the previous sample.
    QueueBytes,
    /// A QP's payload rate since the previous sample, Gb/s.
    RateGbps,
    /// A QP's DCQCN current rate Rc, Gb/s.
    RcGbps,
    /// A QP's DCQCN target rate Rt, Gb/s.
    RtGbps,
    /// CNPs a QP received since the previous sample.
    Cnps,
    /// 1 when a switch's ingress priority group held its peer in XOFF at the sample or
    /// sent an XOFF since the previous one (so pauses shorter than a step still show; an
    /// XON, which ends a pause, does not set it).
    Xoff,
    /// 1 when a host's data priority (or a switch's egress queue) was paused at the
    /// sample, or an XOFF arrived since the previous one (an XON does not set it).
    Paused,
    /// 1 when the PFC watchdog held a switch's egress queue as stormed at the sample.
    Stormed,
    /// An ingress priority group's shared-buffer use, bytes: the most since the previous
    /// sample (what XOFF is decided on).
    PgBytes,
    /// The shared-buffer use at which a lossless priority group sends XOFF, bytes, at the
    /// sample (it moves with the free buffer under a dynamic threshold).
    XoffBytes,
    /// The shared-buffer use at or below which a paused priority group sends XON, bytes,
    /// at the sample.
    XonBytes,
}

/// One column on the series' time grid.
#[derive(Debug, Clone)]
pub struct Column {
    /// CSV header, unit last where it has one (`queue_sw_h2_q3_bytes`).
    pub name: String,
    /// A short label for plots ("sw/h2 q3", "h0 qp 0x100").
    pub label: String,
    /// What it holds.
    pub kind: ColumnKind,
    /// One value per time of the series.
    pub values: Vec<f64>,
}

/// One column as recorded: samples at the recorder's own times.
#[derive(Debug, Clone)]
pub struct Track {
    /// CSV header of the column it becomes (`rate_h0_qp0x100_gbps`).
    pub name: String,
    /// Short plot label (`h0 qp 0x100`).
    pub label: String,
    /// What it holds.
    pub kind: ColumnKind,
    /// (time, value), in time order.
    pub samples: Vec<(Nanos, f64)>,
}

impl Track {
    fn new(name: String, label: String, kind: ColumnKind) -> Track {
        Track {
            name,
            label,
            kind,
            samples: Vec::new(),
        }
    }

    /// Merges each pair of samples into one at the later time, keeping what a plot of
    /// the column must not lose: a queue's peak, a pause (0/1) seen at either, a rate's
    /// mean, Rc as it ended.
    pub fn halve(&mut self) {
        let kind = self.kind;
        let merged = self
            .samples
            .chunks(2)
            .map(|pair| match *pair {
                [(_, a), (t, b)] => (
                    t,
                    match kind {
                        ColumnKind::QueueBytes
                        | ColumnKind::Xoff
                        | ColumnKind::Paused
                        | ColumnKind::Stormed
                        | ColumnKind::PgBytes => a.max(b),
                        ColumnKind::XoffBytes | ColumnKind::XonBytes => a.min(b),
                        ColumnKind::RateGbps => (a + b) / 2.0,
                        ColumnKind::RcGbps | ColumnKind::RtGbps => b,
                        ColumnKind::Cnps => a + b,
                    },
                ),
                [one] => one,
                _ => unreachable!("chunks(2) gives one or two"),
            })
            .collect();
        self.samples = merged;
    }
}

/// What a recorder reads from a switch.
pub trait SwitchProbe {
    /// Bytes in egress queue `queue` of `port`.
    fn queue_bytes(&self, port: usize, queue: usize) -> u64;
    /// The deepest egress queue `queue` of `port` was since the previous call, bytes
    /// (the first call: since the start). Each call starts the next interval at the
    /// queue's depth now, so a recorder that calls it once per sample misses no frame.
    fn queue_peak_bytes(&self, port: usize, queue: usize) -> u64;
    /// True while ingress priority group `pg` of `port` holds its peer in XOFF.
    fn pg_xoff(&self, port: usize, pg: usize) -> bool;
    /// PFC XOFF frames (a pause time above 0) `port` has sent for priority `pg` so far;
    /// XON frames are not counted: they end a pause.
    fn xoff_frames_sent(&self, port: usize, pg: usize) -> u64;
    /// True when a PFC (or PAUSE) frame from the peer holds egress `queue` of `port` at
    /// `now`.
    fn queue_paused(&self, port: usize, queue: usize, now: Nanos) -> bool;
    /// PFC XOFF frames (a pause time above 0) received on `port` for priority `pg` so far;
    /// XON frames are not counted.
    fn xoff_frames_received(&self, port: usize, pg: usize) -> u64;
    /// True when the PFC watchdog holds egress `queue` of `port` as stormed.
    fn queue_stormed(&self, port: usize, queue: usize) -> bool;
    /// The most shared buffer ingress PG `pg` of `port` used since the previous call,
    /// bytes (each call starts the next interval at its use now).
    fn pg_peak_bytes(&self, port: usize, pg: usize) -> u64;
    /// The shared-buffer use at which lossless PG `pg` sends XOFF now, bytes.
    fn pg_xoff_bytes(&self, pg: usize) -> u64;
    /// The shared-buffer use at or below which paused PG `pg` sends XON now, bytes.
    fn pg_xon_bytes(&self, pg: usize) -> u64;
}

/// What a recorder reads from an endpoint.
pub trait EndpointProbe {
    /// Payload bytes QP `qp` has sent so far.
    fn qp_bytes_sent(&self, qp: usize, now: Nanos) -> u64;
    /// QP `qp`'s DCQCN current rate, bits per second.
    fn qp_rate_bps(&self, qp: usize, now: Nanos) -> u64;
    /// A QP's DCQCN target rate Rt, bit/s.
    fn qp_target_bps(&self, qp: usize, now: Nanos) -> u64;
    /// CNPs a QP received so far.
    fn qp_cnps_received(&self, qp: usize, now: Nanos) -> u64;
    /// True while the endpoint's data priority is paused.
    fn data_paused(&self, now: Nanos) -> bool;
    /// PFC and PAUSE frames received so far.
    fn pauses_received(&self) -> u64;
    /// Payload bytes all its QPs sent so far together: the sum of
    /// [`qp_bytes_sent`](Self::qp_bytes_sent) over every QP, which an endpoint keeps as it
    /// sends rather than visiting each QP (a workload host has one per peer or more).
    fn bytes_sent(&self) -> u64;
}

/// 1.0 for true.
fn flag(on: bool) -> f64 {
    f64::from(u8::from(on))
}

/// Records one switch: every egress queue's depth and every lossless PG's XOFF state.
#[derive(Debug, Clone)]
pub struct SwitchRecorder {
    /// Per port: a track per queue in use, then per lossless PG an XOFF track, tracks of its egress
    /// queue paused by the peer and held as stormed by the watchdog, and its shared-buffer
    /// use; after the ports, an XOFF-point and an XON-point track per lossless PG.
    tracks: Vec<Track>,
    /// The ports recorded, in order.
    ports: Vec<usize>,
    /// The queues frames can reach (the others stay empty and are not recorded).
    recorded: Vec<usize>,
    lossless: Vec<usize>,
    /// The egress queue of each lossless priority.
    queues: Vec<usize>,
    last_pauses: Vec<u64>,
    last_received: Vec<u64>,
}

impl SwitchRecorder {
    /// A recorder for switch `name` configured as `cfg` (its ports in order).
    pub fn new(name: &str, cfg: &SwitchConfig) -> SwitchRecorder {
        SwitchRecorder::of_ports(name, cfg, &vec![true; cfg.ports.len()])
    }

    /// A recorder of the ports `record[p]` says of switch `name` (the others can carry no
    /// traffic in the run: the simulator leaves out the ports of idle hosts).
    pub fn of_ports(name: &str, cfg: &SwitchConfig, record: &[bool]) -> SwitchRecorder {
        let lossless: Vec<usize> = (0..CLASSES).filter(|&pg| cfg.pgs[pg].lossless).collect();
        let recorded = cfg.queues_in_use();
        let ports: Vec<usize> = (0..cfg.ports.len())
            .filter(|&p| record.get(p).copied().unwrap_or(true))
            .collect();
        let mut tracks = Vec::new();
        for &index in &ports {
            let p = &cfg.ports[index].name;
            for &q in &recorded {
                tracks.push(Track::new(
                    format!("queue_{name}_{p}_q{q}_bytes"),
                    format!("{name}/{p} q{q}"),
                    ColumnKind::QueueBytes,
                ));
            }
            for &pg in &lossless {
                tracks.push(Track::new(
                    format!("xoff_{name}_{p}_pg{pg}"),
                    format!("{name}/{p} PG{pg} XOFF"),
                    ColumnKind::Xoff,
                ));
                let q = cfg.tc_to_queue[pg];
                tracks.push(Track::new(
                    format!("paused_{name}_{p}_q{q}"),
                    format!("{name}/{p} q{q} paused"),
                    ColumnKind::Paused,
                ));
                tracks.push(Track::new(
                    format!("stormed_{name}_{p}_q{q}"),
                    format!("{name}/{p} q{q} watchdog storm"),
                    ColumnKind::Stormed,
                ));
                tracks.push(Track::new(
                    format!("pg_{name}_{p}_pg{pg}_bytes"),
                    format!("{name}/{p} PG{pg}"),
                    ColumnKind::PgBytes,
                ));
            }
        }
        for &pg in &lossless {
            tracks.push(Track::new(
                format!("xoff_at_{name}_pg{pg}_bytes"),
                format!("{name} PG{pg} XOFF point"),
                ColumnKind::XoffBytes,
            ));
            tracks.push(Track::new(
                format!("xon_at_{name}_pg{pg}_bytes"),
                format!("{name} PG{pg} XON point"),
                ColumnKind::XonBytes,
            ));
        }
        let queues = lossless
            .iter()
            .map(|&pg| usize::from(cfg.tc_to_queue[pg]))
            .collect();
        let last_pauses = vec![0; ports.len() * lossless.len()];
        SwitchRecorder {
            tracks,
            ports,
            recorded,
            lossless,
            queues,
            last_received: last_pauses.clone(),
            last_pauses,
        }
    }

    /// Takes one sample of `sw` at `now`.
    pub fn sample(&mut self, now: Nanos, sw: &impl SwitchProbe) {
        let base = self.recorded.len();
        let per_port = base + 4 * self.lossless.len();
        let ports_end = self.tracks.len() - 2 * self.lossless.len();
        for (k, &pg) in self.lossless.iter().enumerate() {
            self.tracks[ports_end + 2 * k]
                .samples
                .push((now, sw.pg_xoff_bytes(pg) as f64));
            self.tracks[ports_end + 2 * k + 1]
                .samples
                .push((now, sw.pg_xon_bytes(pg) as f64));
        }
        for (n, (tracks, &port)) in self.tracks[..ports_end]
            .chunks_mut(per_port)
            .zip(&self.ports)
            .enumerate()
        {
            for (track, &q) in tracks[..base].iter_mut().zip(&self.recorded) {
                track
                    .samples
                    .push((now, sw.queue_peak_bytes(port, q) as f64));
            }
            for (k, &pg) in self.lossless.iter().enumerate() {
                let i = n * self.lossless.len() + k;
                let sent = sw.xoff_frames_sent(port, pg);
                let fresh = sent != std::mem::replace(&mut self.last_pauses[i], sent);
                let on = sw.pg_xoff(port, pg) || fresh;
                tracks[base + 4 * k].samples.push((now, flag(on)));
                let got = sw.xoff_frames_received(port, pg);
                let fresh = got != std::mem::replace(&mut self.last_received[i], got);
                let paused = sw.queue_paused(port, self.queues[k], now) || fresh;
                tracks[base + 4 * k + 1].samples.push((now, flag(paused)));
                let stormed = sw.queue_stormed(port, self.queues[k]);
                tracks[base + 4 * k + 2].samples.push((now, flag(stormed)));
                tracks[base + 4 * k + 3]
                    .samples
                    .push((now, sw.pg_peak_bytes(port, pg) as f64));
            }
        }
    }

    /// Halves the samples kept so far (see [`Track::halve`]).
    pub fn halve(&mut self) {
        self.tracks.iter_mut().for_each(Track::halve);
    }

    /// Per port in order: the depth of each queue in use, then per lossless PG its XOFF flag, its
    /// queue's paused and stormed flags and its shared-buffer use; then the XOFF and XON
    /// points.
    pub fn finish(self) -> Vec<Track> {
        self.tracks
    }
}

/// Records one host: each recorded QP's rate and Rc, and whether it is paused.
#[derive(Debug, Clone)]
pub struct HostRecorder {
    qps: Vec<usize>,
    /// Per QP: rate, Rc, Rt and CNPs; last: paused. Or, summing the QPs, one rate, then
    /// paused.
    tracks: Vec<Track>,
    summed: bool,
    last_bytes: Vec<(Nanos, u64)>,
    last_cnps: Vec<u64>,
    last_pauses: u64,
}

/// Tracks per recorded QP.
const PER_QP: usize = 4;

impl HostRecorder {
    /// A recorder for host `name`, recording the QPs `qps` (index, QP number), whose data
    /// goes on priority `priority`.
    pub fn new(name: &str, qps: &[(usize, u32)], priority: u8) -> HostRecorder {
        let mut tracks = Vec::new();
        for &(_, qpn) in qps {
            let label = format!("{name} qp {qpn:#x}");
            tracks.push(Track::new(
                format!("rate_{name}_qp{qpn:#x}_gbps"),
                label.clone(),
                ColumnKind::RateGbps,
            ));
            tracks.push(Track::new(
                format!("rc_{name}_qp{qpn:#x}_gbps"),
                label.clone(),
                ColumnKind::RcGbps,
            ));
            tracks.push(Track::new(
                format!("rt_{name}_qp{qpn:#x}_gbps"),
                label.clone(),
                ColumnKind::RtGbps,
            ));
            tracks.push(Track::new(
                format!("cnps_{name}_qp{qpn:#x}"),
                label,
                ColumnKind::Cnps,
            ));
        }
        tracks.push(Track::new(
            format!("paused_{name}_p{priority}"),
            format!("{name} paused (prio {priority})"),
            ColumnKind::Paused,
        ));
        HostRecorder {
            qps: qps.iter().map(|&(q, _)| q).collect(),
            tracks,
            summed: false,
            last_bytes: vec![(Nanos::ZERO, 0); qps.len()],
            last_cnps: vec![0; qps.len()],
            last_pauses: 0,
        }
    }

    /// A recorder for host `name` whose QPs each carry many flows (a workload's sender):
    /// one payload-rate track over all of them, and whether it is paused.
    pub fn summed(name: &str, priority: u8) -> HostRecorder {
        HostRecorder {
            qps: Vec::new(),
            tracks: vec![
                Track::new(
                    format!("rate_{name}_gbps"),
                    format!("{name} all QPs"),
                    ColumnKind::RateGbps,
                ),
                Track::new(
                    format!("paused_{name}_p{priority}"),
                    format!("{name} paused (prio {priority})"),
                    ColumnKind::Paused,
                ),
            ],
            summed: true,
            last_bytes: vec![(Nanos::ZERO, 0)],
            last_cnps: Vec::new(),
            last_pauses: 0,
        }
    }

    /// Takes one sample of `ep` at `now`.
    pub fn sample(&mut self, now: Nanos, ep: &impl EndpointProbe) {
        if self.summed {
            let bytes = ep.bytes_sent();
            let (t, before) = std::mem::replace(&mut self.last_bytes[0], (now, bytes));
            let dt = now.0.saturating_sub(t.0);
            let gbps = if dt == 0 {
                0.0
            } else {
                bytes.saturating_sub(before) as f64 * 8.0 / dt as f64
            };
            self.tracks[0].samples.push((now, gbps));
        }
        for (k, &qp) in self.qps.iter().enumerate().filter(|_| !self.summed) {
            let bytes = ep.qp_bytes_sent(qp, now);
            let (t, before) = std::mem::replace(&mut self.last_bytes[k], (now, bytes));
            let dt = now.0.saturating_sub(t.0);
            let gbps = if dt == 0 {
                0.0
            } else {
                bytes.saturating_sub(before) as f64 * 8.0 / dt as f64
            };
            self.tracks[PER_QP * k].samples.push((now, gbps));
            let rc = ep.qp_rate_bps(qp, now) as f64 / 1e9;
            self.tracks[PER_QP * k + 1].samples.push((now, rc));
            let rt = ep.qp_target_bps(qp, now) as f64 / 1e9;
            self.tracks[PER_QP * k + 2].samples.push((now, rt));
            let cnps = ep.qp_cnps_received(qp, now);
            let fresh = cnps.saturating_sub(std::mem::replace(&mut self.last_cnps[k], cnps));
            self.tracks[PER_QP * k + 3]
                .samples
                .push((now, fresh as f64));
        }
        let got = ep.pauses_received();
        let fresh = got != std::mem::replace(&mut self.last_pauses, got);
        let paused = ep.data_paused(now) || fresh;
        if let Some(track) = self.tracks.last_mut() {
            track.samples.push((now, flag(paused)));
        }
    }

    /// Halves the samples kept so far (see [`Track::halve`]).
    pub fn halve(&mut self) {
        self.tracks.iter_mut().for_each(Track::halve);
    }

    /// Per QP a payload-rate track, Rc, Rt and CNP tracks, then the paused flag.
    pub fn finish(self) -> Vec<Track> {
        self.tracks
    }
}

/// A whole run's series: columns on one time grid.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// The grid: sample times since the run began, increasing.
    pub times: Vec<Nanos>,
    /// The columns, in a fixed order.
    pub columns: Vec<Column>,
}

impl Series {
    /// The rows from time `from` on (all of them from 0), for a plot of a window.
    pub fn since(&self, from: Nanos) -> Series {
        let first = self.times.partition_point(|&t| t < from);
        Series {
            times: self.times[first..].to_vec(),
            columns: self
                .columns
                .iter()
                .map(|c| Column {
                    values: c.values[first.min(c.values.len())..].to_vec(),
                    ..c.clone()
                })
                .collect(),
        }
    }

    /// Puts `tracks` on the grid `times`: at each time, a track's last sample at or before
    /// it (before its first sample, the first sample: an Rc of line rate before the QP
    /// sends, not 0). Tracks sampled at exactly `times` come out as they were.
    pub fn on_grid(times: Vec<Nanos>, tracks: Vec<Track>) -> Series {
        let step = match times.as_slice() {
            [a, b, ..] => b.saturating_sub(*a),
            _ => Nanos::ZERO,
        };
        let columns = tracks
            .into_iter()
            .map(|track| {
                let mut values = Vec::with_capacity(times.len());
                let mut j = 0;
                let mut value = track.samples.first().map_or(0.0, |s| s.1);
                // Past a track's last sample (a thread that stopped recording before the
                // others) nothing was measured: rates, depths and flags read 0 there;
                // states (Rc, Rt, thresholds) keep their last value.
                let end = track.samples.last().map_or(Nanos::ZERO, |s| s.0) + step;
                let holds = matches!(
                    track.kind,
                    ColumnKind::RcGbps
                        | ColumnKind::RtGbps
                        | ColumnKind::XoffBytes
                        | ColumnKind::XonBytes
                );
                for t in &times {
                    while j < track.samples.len() && track.samples[j].0 <= *t {
                        value = track.samples[j].1;
                        j += 1;
                    }
                    values.push(if *t > end && !holds { 0.0 } else { value });
                }
                Column {
                    name: track.name,
                    label: track.label,
                    kind: track.kind,
                    values,
                }
            })
            .collect();
        Series { times, columns }
    }

    /// The columns worth showing: every column with a non-zero value, a QP's Rc and Rt
    /// only when the QP sent data, and the XOFF points only when a PG held shared buffer.
    pub fn kept(&self) -> Vec<&Column> {
        let nonzero = |c: &Column| c.values.iter().any(|&v| v != 0.0);
        let sending: std::collections::HashSet<&str> = self
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::RateGbps && nonzero(c))
            .map(|c| c.label.as_str())
            .collect();
        let pgs_used = self
            .columns
            .iter()
            .any(|c| c.kind == ColumnKind::PgBytes && nonzero(c));
        self.columns
            .iter()
            .enumerate()
            .filter(|(_, c)| match c.kind {
                // Rc and Rt go with their QP's rate column (the same label).
                ColumnKind::RcGbps | ColumnKind::RtGbps => sending.contains(c.label.as_str()),
                ColumnKind::XoffBytes | ColumnKind::XonBytes => pgs_used,
                _ => nonzero(c),
            })
            .map(|(_, c)| c)
            .collect()
    }

    /// Writes every column as CSV: `time_us` first, one row per sample. The columns are
    /// fixed by the topology and the workload (the same scenario gives the same header
    /// whatever happened); the plots show only [`kept`](Self::kept) ones.
    pub fn write_csv(&self, w: &mut impl Write) -> io::Result<()> {
        let kept: Vec<&Column> = self.columns.iter().collect();
        write!(w, "time_us")?;
        for c in &kept {
            write!(w, ",{}", c.name)?;
        }
        writeln!(w)?;
        for (row, t) in self.times.iter().enumerate() {
            write!(w, "{}", t.0 as f64 / 1e3)?;
            for c in &kept {
                let v = c.values[row];
                match c.kind {
                    ColumnKind::QueueBytes
                    | ColumnKind::Xoff
                    | ColumnKind::Paused
                    | ColumnKind::Stormed
                    | ColumnKind::PgBytes
                    | ColumnKind::XoffBytes
                    | ColumnKind::XonBytes => write!(w, ",{v}")?,
                    ColumnKind::RateGbps | ColumnKind::RcGbps | ColumnKind::RtGbps => {
                        write!(w, ",{v:.4}")?
                    }
                    ColumnKind::Cnps => write!(w, ",{v}")?,
                }
            }
            writeln!(w)?;
        }
        Ok(())
    }

    /// The intervals during which a 0/1 column was 1, as (start, end) sample times; an
    /// interval still open at the last sample ends there.
    pub fn intervals(&self, column: &Column) -> Vec<(Nanos, Nanos)> {
        let mut out = Vec::new();
        let mut open: Option<Nanos> = None;
        for (&t, &v) in self.times.iter().zip(&column.values) {
            match (open, v != 0.0) {
                (None, true) => open = Some(t),
                (Some(start), false) => {
                    out.push((start, t));
                    open = None;
                }
                _ => {}
            }
        }
        if let (Some(start), Some(&end)) = (open, self.times.last()) {
            out.push((start, end));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct FakeSwitch {
        queue: u64,
        xoff: bool,
        pauses: u64,
    }

    impl SwitchProbe for FakeSwitch {
        fn queue_bytes(&self, _: usize, queue: usize) -> u64 {
            if queue == 3 { self.queue } else { 0 }
        }
        fn pg_xoff(&self, _: usize, _: usize) -> bool {
            self.xoff
        }
        fn xoff_frames_sent(&self, _: usize, _: usize) -> u64 {
            self.pauses
        }
        fn queue_peak_bytes(&self, port: usize, queue: usize) -> u64 {
            self.queue_bytes(port, queue)
        }
        fn queue_paused(&self, _: usize, _: usize, _: Nanos) -> bool {
            false
        }
        fn xoff_frames_received(&self, _: usize, _: usize) -> u64 {
            0
        }
        fn queue_stormed(&self, _: usize, _: usize) -> bool {
            false
        }
        fn pg_peak_bytes(&self, _: usize, _: usize) -> u64 {
            0
        }
        fn pg_xoff_bytes(&self, _: usize) -> u64 {
            0
        }
        fn pg_xon_bytes(&self, _: usize) -> u64 {
            0
        }
    }

    struct FakeHost {
        bytes: u64,
        pauses: u64,
    }

    impl EndpointProbe for FakeHost {
        fn qp_bytes_sent(&self, _: usize, _: Nanos) -> u64 {
            self.bytes
        }
        fn qp_rate_bps(&self, _: usize, _: Nanos) -> u64 {
            25_000_000_000
        }
        fn qp_target_bps(&self, _: usize, _: Nanos) -> u64 {
            25_000_000_000
        }
        fn qp_cnps_received(&self, _: usize, _: Nanos) -> u64 {
            0
        }
        fn data_paused(&self, _: Nanos) -> bool {
            false
        }
        fn pauses_received(&self) -> u64 {
            self.pauses
        }
        fn bytes_sent(&self) -> u64 {
            self.bytes
        }
    }

    /// A summed recorder's rate is the host's payload bytes between two samples over
    /// the time between them: 125,000 B in 1 µs is 1000 Gb/s.
    #[test]
    fn a_summed_host_rates_its_bytes_sent() {
        let mut r = HostRecorder::summed("h", 3);
        r.sample(
            Nanos::ZERO,
            &FakeHost {
                bytes: 0,
                pauses: 0,
            },
        );
        r.sample(
            Nanos(1_000),
            &FakeHost {
                bytes: 125_000,
                pauses: 0,
            },
        );
        r.sample(
            Nanos(3_000),
            &FakeHost {
                bytes: 150_000,
                pauses: 0,
            },
        );
        let tracks = r.finish();
        let rates: Vec<f64> = tracks[0].samples.iter().map(|&(_, g)| g).collect();
        assert_eq!(rates, [0.0, 1000.0, 100.0]);
        assert_eq!(tracks[0].name, "rate_h_gbps");
    }

    #[test]
    fn a_pause_shorter_than_a_step_still_shows() {
        let cfg = SwitchConfig::preset("default").unwrap();
        let mut cfg = cfg.clone();
        cfg.ports = vec![cfg.port_or_default("p0")];
        let mut rec = SwitchRecorder::new("sw", &cfg);
        let mut sw = FakeSwitch {
            queue: 4170,
            xoff: false,
            pauses: 0,
        };
        rec.sample(Nanos(0), &sw);
        // XOFF and XON both happened between two samples: one pause frame more.
        sw.pauses = 2;
        rec.sample(Nanos(1000), &sw);
        rec.sample(Nanos(2000), &sw);
        let tracks = rec.finish();
        let q3 = tracks
            .iter()
            .find(|t| t.name == "queue_sw_p0_q3_bytes")
            .unwrap();
        assert_eq!(q3.samples[0], (Nanos(0), 4170.0));
        let xoff = tracks.iter().find(|t| t.name == "xoff_sw_p0_pg3").unwrap();
        let on: Vec<f64> = xoff.samples.iter().map(|s| s.1).collect();
        assert_eq!(on, [0.0, 1.0, 0.0]);
    }

    #[test]
    fn rates_are_bytes_between_samples() {
        let mut rec = HostRecorder::new("h0", &[(0, 0x100)], 3);
        let mut ep = FakeHost {
            bytes: 0,
            pauses: 0,
        };
        rec.sample(Nanos(0), &ep);
        // 1250 bytes in 1 µs: 10 Gb/s.
        ep.bytes = 1250;
        rec.sample(Nanos(1000), &ep);
        let tracks = rec.finish();
        assert_eq!(tracks[0].name, "rate_h0_qp0x100_gbps");
        assert_eq!(tracks[0].samples[1], (Nanos(1000), 10.0));
        assert_eq!(tracks[1].samples[1], (Nanos(1000), 25.0));
        assert_eq!(tracks[2].name, "rt_h0_qp0x100_gbps");
        assert_eq!(tracks[3].name, "cnps_h0_qp0x100");
        assert_eq!(tracks[4].name, "paused_h0_p3");
    }

    #[test]
    fn a_track_that_ended_reads_zero_but_its_states_hold() {
        let track = |kind| Track {
            name: String::new(),
            label: String::new(),
            kind,
            samples: vec![(Nanos(0), 5.0), (Nanos(10), 7.0)],
        };
        let times: Vec<Nanos> = (0..5).map(|k| Nanos(k * 10)).collect();
        let s = Series::on_grid(
            times,
            vec![track(ColumnKind::RateGbps), track(ColumnKind::RcGbps)],
        );
        // Sampled to 10 ns, one step of grace to 20 ns, then nothing was measured.
        assert_eq!(s.columns[0].values, [5.0, 7.0, 7.0, 0.0, 0.0]);
        assert_eq!(s.columns[1].values, [5.0, 7.0, 7.0, 7.0, 7.0]);
    }

    #[test]
    fn halving_keeps_peaks_pauses_and_mean_rates() {
        let track = |kind, values: &[f64]| Track {
            name: String::new(),
            label: String::new(),
            kind,
            samples: values
                .iter()
                .enumerate()
                .map(|(i, &v)| (Nanos(i as u64 * 10), v))
                .collect(),
        };
        let mut q = track(ColumnKind::QueueBytes, &[1.0, 9.0, 3.0, 2.0, 5.0]);
        q.halve();
        assert_eq!(
            q.samples,
            [(Nanos(10), 9.0), (Nanos(30), 3.0), (Nanos(40), 5.0)]
        );
        let mut p = track(ColumnKind::Xoff, &[0.0, 1.0, 0.0, 0.0]);
        p.halve();
        assert_eq!(p.samples, [(Nanos(10), 1.0), (Nanos(30), 0.0)]);
        let mut r = track(ColumnKind::RateGbps, &[10.0, 20.0]);
        r.halve();
        assert_eq!(r.samples, [(Nanos(10), 15.0)]);
    }

    #[test]
    fn the_grid_takes_the_last_sample_at_or_before_each_time() {
        let track = Track {
            name: "x".into(),
            label: "x".into(),
            kind: ColumnKind::RcGbps,
            samples: vec![(Nanos(150), 7.0), (Nanos(310), 5.0)],
        };
        let grid = vec![Nanos(0), Nanos(100), Nanos(200), Nanos(300), Nanos(400)];
        let s = Series::on_grid(grid, vec![track]);
        // Before the first sample the column reads as the first sample.
        assert_eq!(s.columns[0].values, [7.0, 7.0, 7.0, 7.0, 5.0]);
    }
}
