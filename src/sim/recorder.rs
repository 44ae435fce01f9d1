//! The simulator's recorder of a run's time series ([`crate::series`]): one
//! [`SwitchRecorder`] per switch and one [`HostRecorder`] per host (every QP), all
//! sampled at the same virtual times.

use super::topology::Network;
use crate::series::{HostRecorder, Series, SwitchRecorder};
use crate::time::Nanos;

/// The most rows a series keeps: past it, pairs of rows merge (see
/// [`Track::halve`](crate::series::Track::halve)) and the recorder keeps every other
/// sample from then on, so a long run at a fine step stays within memory.
pub const MAX_ROWS: usize = 200_000;

/// Records a simulated network.
#[derive(Debug, Clone)]
pub struct Recorder {
    times: Vec<Nanos>,
    /// Keep one sample in `stride` (doubles at each halving).
    stride: u64,
    /// Samples offered so far.
    offered: u64,
    switches: Vec<SwitchRecorder>,
    /// The recorded hosts, by index.
    hosts: Vec<(usize, HostRecorder)>,
}

impl Recorder {
    /// A recorder of `net` as built (its QPs all created), of the hosts `active` says
    /// and their switch ports (every port between switches too): a host no flow, workload,
    /// rank or fault uses carries nothing, and its columns would only be zeros.
    pub fn new(net: &Network, active: &[bool]) -> Recorder {
        let on = |h: usize| active.get(h).copied().unwrap_or(true);
        let switches = net
            .switches
            .iter()
            .enumerate()
            .filter_map(|(i, &node)| {
                let sw = net.engine.switch(node)?;
                let mut record = vec![true; sw.port_count()];
                for (h, &(n, port)) in net.attachments.iter().enumerate() {
                    if n == node && !on(h) {
                        record[port] = false;
                    }
                }
                Some(SwitchRecorder::of_ports(
                    &net.switch_names[i],
                    sw.config(),
                    &record,
                ))
            })
            .collect();
        let receive_only: std::collections::HashSet<(usize, usize)> =
            net.workload_receive_qps.iter().copied().collect();
        let hosts = (0..net.hosts.len())
            .filter(|&h| on(h))
            .map(|h| {
                let ep = net.endpoint(h);
                // A workload's QPs each carry many flows: their sum, not a column each.
                let workload = net
                    .host(h)
                    .app
                    .as_ref()
                    .is_some_and(|a| a.flows().is_some());
                let name = format!("h{h}");
                let recorder = if workload {
                    HostRecorder::summed(&name, ep.data_priority())
                } else {
                    let qps: Vec<(usize, u32)> = (0..ep.qp_count())
                        .filter(|&q| !receive_only.contains(&(h, q)))
                        .map(|q| (q, ep.qp_status(q, Nanos::ZERO).qpn))
                        .collect();
                    HostRecorder::new(&name, &qps, ep.data_priority())
                };
                (h, recorder)
            })
            .collect();
        Recorder {
            times: Vec::new(),
            stride: 1,
            offered: 0,
            switches,
            hosts,
        }
    }

    /// Takes one sample of `net` at its current time (once per instant).
    pub fn sample(&mut self, net: &Network) {
        let now = net.engine.now();
        if self.times.last() == Some(&now) {
            return;
        }
        self.offered += 1;
        if !(self.offered - 1).is_multiple_of(self.stride) {
            return;
        }
        if self.times.len() >= MAX_ROWS {
            self.halve();
        }
        self.times.push(now);
        for (i, rec) in self.switches.iter_mut().enumerate() {
            rec.sample(now, net.switch(i));
        }
        for (h, rec) in &mut self.hosts {
            let h = *h;
            rec.sample(now, net.endpoint(h));
        }
    }

    fn halve(&mut self) {
        self.times = self.times.chunks(2).map(|p| p[p.len() - 1]).collect();
        self.switches.iter_mut().for_each(SwitchRecorder::halve);
        self.hosts.iter_mut().for_each(|(_, r)| r.halve());
        self.stride *= 2;
    }

    /// The series recorded, switch tracks first, then host tracks.
    pub fn finish(self) -> Series {
        let tracks = self
            .switches
            .into_iter()
            .flat_map(SwitchRecorder::finish)
            .chain(self.hosts.into_iter().flat_map(|(_, r)| r.finish()))
            .collect();
        Series::on_grid(self.times, tracks)
    }
}
