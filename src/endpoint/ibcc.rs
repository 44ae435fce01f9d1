//! InfiniBand congestion control at the source (IBA vol. 1, annex A10), as host channel
//! adapters implement it: every BECN (here, a CNP answering a FECN-marked packet) raises
//! the QP's index into the congestion control table (CCTI) by `ccti_increase`, up to
//! `ccti_limit`; a timer lowers it by one every `ccti_timer` down to `ccti_min`; and the
//! table entry at the index sets an injection rate delay between packets of
//! `multiplier / 2^shift` packet times (as Linux's hfi1 driver computes it), so that the
//! QP sends at `line / (1 + multiplier / 2^shift)`.

use crate::time::Nanos;
use serde::Serialize;

/// One entry of the congestion control table: the delay is `multiplier / 2^shift`
/// packet times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CctEntry {
    /// 0-3.
    pub shift: u8,
    /// 0-16383.
    pub multiplier: u16,
}

/// The congestion control agent's settings for every QP of a NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IbCcConfig {
    /// CCTI steps per BECN.
    pub ccti_increase: u16,
    /// The highest CCTI (at most the table's last index).
    pub ccti_limit: u16,
    /// The lowest CCTI the timer brings it down to.
    pub ccti_min: u16,
    /// How often the CCTI falls by one.
    #[serde(rename = "ccti_timer_ns")]
    pub ccti_timer: Nanos,
    /// The congestion control table.
    pub table: Vec<CctEntry>,
}

impl IbCcConfig {
    /// rocelab's default table: 128 entries, entry i a delay of i/8 packet times (shift
    /// 3, multiplier i), so that the rate falls from the line rate to 1/16.9 of it in
    /// steps of an eighth of a packet.
    pub fn default_table() -> Vec<CctEntry> {
        (0..128)
            .map(|i| CctEntry {
                shift: 3,
                multiplier: i,
            })
            .collect()
    }
}

/// One QP's congestion control agent.
#[derive(Debug, Clone)]
pub struct Cca {
    cfg: IbCcConfig,
    ccti: u16,
    timer: Option<Nanos>,
}

impl Cca {
    /// A QP at CCTI `ccti_min`: no delay unless the table says otherwise.
    pub fn new(cfg: IbCcConfig) -> Cca {
        Cca {
            ccti: cfg.ccti_min,
            cfg,
            timer: None,
        }
    }

    /// The index into the table now.
    pub fn ccti(&self) -> u16 {
        self.ccti
    }

    /// The rate the table's entry allows, bit/s, on a line of `line_bps`.
    pub fn rate_bps(&self, line_bps: u64) -> u64 {
        let entry = self
            .cfg
            .table
            .get(usize::from(self.ccti))
            .or(self.cfg.table.last())
            .copied()
            .unwrap_or(CctEntry {
                shift: 0,
                multiplier: 0,
            });
        let unit = 1u64 << entry.shift.min(3);
        (u128::from(line_bps) * u128::from(unit) / u128::from(unit + u64::from(entry.multiplier)))
            as u64
    }

    /// A BECN at `now`: the index rises, and the timer runs.
    pub fn on_becn(&mut self, now: Nanos) {
        self.ccti = self
            .ccti
            .saturating_add(self.cfg.ccti_increase)
            .min(self.cfg.ccti_limit);
        if self.timer.is_none() && self.ccti > self.cfg.ccti_min {
            self.timer = Some(now + self.cfg.ccti_timer.max(Nanos(1)));
        }
    }

    /// When the index next falls, if it is above its floor.
    pub fn deadline(&self) -> Option<Nanos> {
        self.timer
    }

    /// Runs the timer's steps due by `now`.
    pub fn on_timeout(&mut self, now: Nanos) {
        while let Some(t) = self.timer.filter(|&t| t <= now) {
            if self.ccti > self.cfg.ccti_min {
                self.ccti -= 1;
            }
            self.timer =
                (self.ccti > self.cfg.ccti_min).then(|| t + self.cfg.ccti_timer.max(Nanos(1)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> IbCcConfig {
        IbCcConfig {
            ccti_increase: 2,
            ccti_limit: 100,
            ccti_min: 0,
            ccti_timer: Nanos(1000),
            table: IbCcConfig::default_table(),
        }
    }

    #[test]
    fn becns_raise_the_delay_and_the_timer_brings_it_back() {
        let mut c = Cca::new(cfg());
        assert_eq!(c.rate_bps(100_000_000_000), 100_000_000_000);
        c.on_becn(Nanos(0));
        c.on_becn(Nanos(10));
        assert_eq!(c.ccti(), 4);
        // Entry 4: half a packet of delay per packet: 2/3 of the line.
        assert_eq!(c.rate_bps(90_000_000_000), 60_000_000_000);
        assert_eq!(c.deadline(), Some(Nanos(1000)));
        c.on_timeout(Nanos(2500));
        assert_eq!(c.ccti(), 2);
        c.on_timeout(Nanos(10_000));
        assert_eq!((c.ccti(), c.deadline()), (0, None));
    }

    #[test]
    fn the_index_stops_at_its_limit() {
        let mut c = Cca::new(cfg());
        for i in 0..100 {
            c.on_becn(Nanos(i));
        }
        assert_eq!(c.ccti(), 100);
        // 100/8 packets of delay: 8/108 of the line.
        assert_eq!(c.rate_bps(108_000_000_000), 8_000_000_000);
    }
}
