//! A time series of a simulated network, sampled at a fixed step: the depth of every
//! egress queue, every QP's sending rate (measured over the step, and DCQCN's Rc), which
//! ingress priority groups hold their peer in XOFF, and which hosts are paused. Columns
//! that stay zero are left out when the series is written.

use super::topology::Network;
use crate::config::CLASSES;
use crate::time::Nanos;
use std::io::{self, Write};

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// Egress queue depth, bytes.
    QueueBytes,
    /// A QP's payload rate over the last step, Gb/s.
    RateGbps,
    /// A QP's DCQCN current rate Rc, Gb/s.
    RcGbps,
    /// 1 when a switch's ingress priority group held its peer in XOFF at the sample or
    /// sent a PFC pause during the step (so pauses shorter than a step still show).
    Xoff,
    /// 1 when a host's data priority was paused at the sample, or a pause arrived during
    /// the step.
    Paused,
}

/// One column.
#[derive(Debug, Clone)]
pub struct Column {
    /// Its CSV header.
    pub name: String,
    /// A short label for plots ("sw/h2 q3", "h0 qp 0x100").
    pub label: String,
    /// What it holds.
    pub kind: ColumnKind,
    /// One value per sample.
    pub values: Vec<f64>,
}

/// Where a column's value comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    Queue {
        switch: usize,
        port: usize,
        queue: usize,
    },
    Rate {
        host: usize,
        qp: usize,
    },
    Rc {
        host: usize,
        qp: usize,
    },
    Xoff {
        switch: usize,
        port: usize,
        pg: usize,
    },
    Paused {
        host: usize,
    },
}

/// The series being recorded.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Sample times.
    pub times: Vec<Nanos>,
    /// The columns, in a fixed order.
    pub columns: Vec<Column>,
    sources: Vec<Source>,
    /// Per column, the counter it differences (bytes sent, pause frames).
    last_count: Vec<u64>,
    last_time: Nanos,
}

impl Series {
    /// A series of `net` as built (its QPs all created).
    pub fn new(net: &Network) -> Series {
        let mut s = Series::default();
        for (si, &node) in net.switches.iter().enumerate() {
            let Some(sw) = net.engine.switch(node) else {
                continue;
            };
            let name = &net.switch_names[si];
            let cfg = sw.config();
            for port in 0..sw.port_count() {
                let pname = &cfg.ports[port].name;
                for queue in 0..CLASSES {
                    s.add(
                        format!("queue_{name}_{pname}_q{queue}_bytes"),
                        format!("{name}/{pname} q{queue}"),
                        ColumnKind::QueueBytes,
                        Source::Queue {
                            switch: si,
                            port,
                            queue,
                        },
                    );
                }
                for pg in 0..CLASSES {
                    if cfg.pgs[pg].lossless {
                        s.add(
                            format!("xoff_{name}_{pname}_pg{pg}"),
                            format!("{name}/{pname} PG{pg} XOFF"),
                            ColumnKind::Xoff,
                            Source::Xoff {
                                switch: si,
                                port,
                                pg,
                            },
                        );
                    }
                }
            }
        }
        for host in 0..net.hosts.len() {
            let ep = net.endpoint(host);
            for qp in 0..ep.qp_count() {
                let qpn = ep.qp_status(qp, Nanos::ZERO).qpn;
                s.add(
                    format!("rate_h{host}_qp{qpn:#x}_gbps"),
                    format!("h{host} qp {qpn:#x}"),
                    ColumnKind::RateGbps,
                    Source::Rate { host, qp },
                );
                s.add(
                    format!("rc_h{host}_qp{qpn:#x}_gbps"),
                    format!("h{host} qp {qpn:#x}"),
                    ColumnKind::RcGbps,
                    Source::Rc { host, qp },
                );
            }
            let p = ep.data_priority();
            s.add(
                format!("paused_h{host}_p{p}"),
                format!("h{host} paused (prio {p})"),
                ColumnKind::Paused,
                Source::Paused { host },
            );
        }
        s.last_count = vec![0; s.sources.len()];
        s
    }

    /// A series from columns recorded elsewhere (one value per time in each), for
    /// writing and plotting.
    pub fn from_columns(times: Vec<Nanos>, columns: Vec<Column>) -> Series {
        Series {
            times,
            columns,
            ..Series::default()
        }
    }

    fn add(&mut self, name: String, label: String, kind: ColumnKind, source: Source) {
        self.columns.push(Column {
            name,
            label,
            kind,
            values: Vec::new(),
        });
        self.sources.push(source);
    }

    /// Takes one sample of `net` at its current time (once per instant).
    pub fn sample(&mut self, net: &Network) {
        let now = net.engine.now();
        if self.times.last() == Some(&now) {
            return;
        }
        let step = now.0.saturating_sub(self.last_time.0);
        for (i, source) in self.sources.iter().enumerate() {
            let value = match *source {
                Source::Queue {
                    switch,
                    port,
                    queue,
                } => net.switch(switch).queue_bytes(port, queue) as f64,
                Source::Xoff { switch, port, pg } => {
                    let sw = net.switch(switch);
                    let sent = sw.counters(port).classes[pg].tx_pause_frames;
                    let fresh = sent != std::mem::replace(&mut self.last_count[i], sent);
                    f64::from(u8::from(sw.pg_state(port, pg).xoff || fresh))
                }
                Source::Rate { host, qp } => {
                    let bytes = net
                        .endpoint(host)
                        .qp_status(qp, now)
                        .counters
                        .data_bytes_sent;
                    let delta = bytes - std::mem::replace(&mut self.last_count[i], bytes);
                    if step == 0 {
                        0.0
                    } else {
                        delta as f64 * 8.0 / step as f64
                    }
                }
                Source::Rc { host, qp } => {
                    net.endpoint(host).qp_status(qp, now).rate_bps as f64 / 1e9
                }
                Source::Paused { host } => {
                    let ep = net.endpoint(host);
                    let got = ep.counters().pauses_received + ep.counters().link_pauses_received;
                    let fresh = got != std::mem::replace(&mut self.last_count[i], got);
                    f64::from(u8::from(ep.paused(ep.data_priority(), now) || fresh))
                }
            };
            self.columns[i].values.push(value);
        }
        self.times.push(now);
        self.last_time = now;
    }

    /// The columns worth showing: every column with a non-zero value, and a QP's Rc only
    /// when the QP sent data.
    pub fn kept(&self) -> Vec<&Column> {
        let nonzero = |c: &Column| c.values.iter().any(|&v| v != 0.0);
        self.columns
            .iter()
            .enumerate()
            .filter(|(i, c)| match c.kind {
                // Rc sits after its rate column.
                ColumnKind::RcGbps => nonzero(&self.columns[i - 1]),
                _ => nonzero(c),
            })
            .map(|(_, c)| c)
            .collect()
    }

    /// Writes the kept columns as CSV: `time_us` first, one row per sample.
    pub fn write_csv(&self, w: &mut impl Write) -> io::Result<()> {
        let kept = self.kept();
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
                    ColumnKind::QueueBytes | ColumnKind::Xoff | ColumnKind::Paused => {
                        write!(w, ",{v}")?
                    }
                    ColumnKind::RateGbps | ColumnKind::RcGbps => write!(w, ",{v:.4}")?,
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
