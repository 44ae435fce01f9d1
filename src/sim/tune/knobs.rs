//! The knobs `rocelab tune` turns: each a setting of the switch or of the NICs, with the
//! values the device accepts (its legal range on its own granularity: SONiC's bytes,
//! NX-OS's kbytes, whole percents, `dynamic_th`'s powers of two) and the scenario keys it
//! sets.

use crate::config::SwitchConfig;
use crate::config::endpoint::DcqcnConfig;

/// Whose syntax the settings come from and go back to: it fixes the granularity of the
/// values a knob may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// SONiC CONFIG_DB: thresholds in bytes, probabilities in whole percents, the PG's
    /// `dynamic_th` a power of two.
    Sonic,
    /// NX-OS `random-detect`: thresholds in kbytes (1000 B), whole percents; NX-OS sizes
    /// its buffers itself, so no buffer knob.
    Nxos,
    /// A rocelab TOML file.
    Toml,
}

impl Dialect {
    /// The step of an ECN threshold, bytes.
    fn threshold_step_bytes(self) -> u64 {
        match self {
            // Broadcom and Mellanox ASICs count in cells of 208 to 256 B; a whole KiB is a
            // multiple of either's granularity within a few percent, and reads back exactly.
            Dialect::Sonic => 1024,
            Dialect::Nxos | Dialect::Toml => 1000,
        }
    }
}

/// One knob: its name, what it is, the legal values in ascending order, the scenario keys
/// it sets, and its value in the starting configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Knob {
    /// Its name on the command line (`ecn.kmin`, `rpg_ai_rate`).
    pub name: String,
    /// What it is, with its unit.
    pub what: String,
    /// Every value the search may give it, ascending, on the device's granularity.
    pub values: Vec<f64>,
    /// The dotted scenario keys it sets (one per lossless queue for an ECN knob).
    pub keys: Vec<String>,
    /// Its value in the starting configuration (need not be one of `values`).
    pub start: f64,
}

impl Knob {
    /// The index of the legal value nearest `v` (by ratio: the ladders are geometric).
    pub fn nearest(&self, v: f64) -> usize {
        let distance = |x: f64| (x.max(1e-12) / v.max(1e-12)).ln().abs();
        (0..self.values.len())
            .min_by(|&a, &b| distance(self.values[a]).total_cmp(&distance(self.values[b])))
            .unwrap_or(0)
    }

    /// The value as a TOML value for its keys.
    pub fn toml_value(&self, v: f64) -> String {
        if self.name == "ecn.pmax" || self.name == "pfc.alpha" {
            format!("{v}")
        } else {
            format!("{}", v.round() as u64)
        }
    }
}

/// The knobs `--knobs` names: switch settings, then the NIC's DCQCN settings under
/// ConnectX's names.
pub const KNOB_NAMES: [&str; 10] = [
    "ecn.kmin",
    "ecn.kmax",
    "ecn.pmax",
    "pfc.alpha",
    "pfc.xon_offset",
    "pfc.headroom",
    "rpg_ai_rate",
    "rpg_hai_rate",
    "rpg_time_reset",
    "min_time_between_cnps",
];

/// What `--knobs` defaults to: ECN on the lossless queues, and the PG's alpha where the
/// switch's syntax has one.
pub fn default_knobs(dialect: Dialect) -> Vec<&'static str> {
    match dialect {
        Dialect::Nxos => vec!["ecn.kmin", "ecn.kmax", "ecn.pmax"],
        Dialect::Sonic | Dialect::Toml => vec!["ecn.kmin", "ecn.kmax", "ecn.pmax", "pfc.alpha"],
    }
}

/// A knob that cannot be tuned here, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--knobs {name}: {message}")]
pub struct KnobError {
    /// The knob as given.
    pub name: String,
    /// What is wrong, and what to do.
    pub message: String,
}

/// `from × ratio^k` up to `to`, each rounded to a multiple of `step` (at least one step),
/// without repeats, with `to` itself last.
fn ladder(from: f64, to: f64, ratio: f64, step: f64) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    let mut x = from;
    while x < to * 1.000_001 {
        let v = ((x / step).round() * step).max(step);
        if out.last().is_none_or(|&l| v > l) {
            out.push(v);
        }
        x *= ratio;
    }
    let last = (to / step).floor() * step;
    if out.last().is_none_or(|&l| last > l) {
        out.push(last);
    }
    out
}

/// The knobs named, for a switch configured as `switch` (its lossless queues' ECN
/// profiles, its buffer) and NICs configured as `dcqcn`, on `dialect`'s granularity.
pub fn knobs(
    names: &[&str],
    switch: &SwitchConfig,
    dcqcn: &DcqcnConfig,
    dialect: Dialect,
) -> Result<Vec<Knob>, KnobError> {
    let bad = |name: &str, message: String| KnobError {
        name: name.to_owned(),
        message,
    };
    // The queues the lossless classes go to, which have an ECN profile.
    let mut ecn_queues: Vec<usize> = (0..8u8)
        .filter(|&c| switch.lossless.contains(c))
        .map(|c| usize::from(switch.tc_to_queue[usize::from(c)]))
        .filter(|&q| switch.queues[q].ecn.is_some())
        .collect();
    ecn_queues.sort_unstable();
    ecn_queues.dedup();
    let first_ecn = ecn_queues.first().and_then(|&q| switch.queues[q].ecn);
    let step = dialect.threshold_step_bytes() as f64;
    // Up to the shared buffer, and never past 64 MB: a threshold over the buffer never marks.
    let top = (switch.shared_bytes as f64).clamp(16.0 * step, 64e6);
    let mut out = Vec::new();
    for &name in names {
        let ecn_keys = |field: &str| {
            ecn_queues
                .iter()
                .map(|q| format!("switch.queue.{q}.ecn.{field}"))
                .collect::<Vec<_>>()
        };
        let knob = match name {
            "ecn.kmin" | "ecn.kmax" | "ecn.pmax" => {
                let Some(red) = first_ecn else {
                    return Err(bad(
                        name,
                        "no lossless queue has an ECN profile in this configuration: add one (a WRED_PROFILE with ecn, `random-detect ... ecn`, or queue.N.ecn) or tune other knobs".into(),
                    ));
                };
                match name {
                    "ecn.kmin" => Knob {
                        name: name.into(),
                        what: format!("ECN Kmin of lossless queues {ecn_queues:?}, bytes"),
                        values: ladder(2.0 * step, top, 1.25, step),
                        keys: ecn_keys("kmin_bytes"),
                        start: red.kmin_bytes as f64,
                    },
                    "ecn.kmax" => Knob {
                        name: name.into(),
                        what: format!("ECN Kmax of lossless queues {ecn_queues:?}, bytes"),
                        values: ladder(4.0 * step, top, 1.25, step),
                        keys: ecn_keys("kmax_bytes"),
                        start: red.kmax_bytes as f64,
                    },
                    _ => Knob {
                        name: name.into(),
                        what: format!(
                            "ECN Pmax of lossless queues {ecn_queues:?}, a fraction in whole percents"
                        ),
                        values: ladder(1.0, 100.0, 1.25, 1.0)
                            .into_iter()
                            .map(|p| p / 100.0)
                            .collect(),
                        keys: ecn_keys("pmax"),
                        start: red.pmax,
                    },
                }
            }
            "pfc.alpha" => {
                if dialect == Dialect::Nxos {
                    return Err(bad(
                        name,
                        "NX-OS sizes its buffers itself: its running-config has no alpha to export"
                            .into(),
                    ));
                }
                let Some(start) = (0..8).find_map(|c| match switch.pgs[c].xoff {
                    crate::config::XoffRule::Dynamic { alpha, .. } if switch.pgs[c].lossless => {
                        Some(alpha)
                    }
                    _ => None,
                }) else {
                    return Err(bad(
                        name,
                        "no lossless PG has a dynamic threshold: alpha applies only with buffer.threshold = \"dynamic\"".into(),
                    ));
                };
                Knob {
                    name: name.into(),
                    what: "lossless PGs' dynamic-threshold alpha (SONiC dynamic_th n: alpha 2^n, n = -7 to 3)".into(),
                    values: (-7..=3).map(|n| 2f64.powi(n)).collect(),
                    keys: vec!["switch.buffer.pg_alpha".into()],
                    start,
                }
            }
            "pfc.xon_offset" | "pfc.headroom" => pg_knob(name, switch, dialect, step)?,
            "rpg_ai_rate" => Knob {
                name: name.into(),
                what: "DCQCN additive increase Rai, whole Mb/s".into(),
                values: ladder(1.0, 1000.0, 1.4, 1.0),
                keys: vec!["endpoint.dcqcn.rai_mbps".into()],
                start: dcqcn.rai_mbps,
            },
            "rpg_hai_rate" => Knob {
                name: name.into(),
                what: "DCQCN hyper increase Rhai, whole Mb/s".into(),
                values: ladder(1.0, 5000.0, 1.4, 1.0),
                keys: vec!["endpoint.dcqcn.rhai_mbps".into()],
                start: dcqcn.rhai_mbps,
            },
            "rpg_time_reset" => Knob {
                name: name.into(),
                what: "DCQCN rate-increase timer T, whole µs".into(),
                values: ladder(2.0, 1000.0, 1.4, 1.0),
                keys: vec!["endpoint.dcqcn.rate_timer_us".into()],
                start: dcqcn.rate_timer_us,
            },
            "min_time_between_cnps" => Knob {
                name: name.into(),
                what: "notification point: at most one CNP per QP per this many whole µs".into(),
                values: ladder(1.0, 500.0, 1.4, 1.0),
                keys: vec!["endpoint.dcqcn.cnp_interval_us".into()],
                start: dcqcn.cnp_interval_us,
            },
            other => {
                return Err(bad(
                    other,
                    format!("no such knob; the knobs are {}", KNOB_NAMES.join(", ")),
                ));
            }
        };
        if out.iter().any(|k: &Knob| k.name == knob.name) {
            return Err(bad(name, "given twice".into()));
        }
        out.push(knob);
    }
    if out.is_empty() {
        return Err(bad("", "give at least one knob".into()));
    }
    Ok(out)
}

/// `pfc.xon_offset` or `pfc.headroom`: the lossless PGs' XON offset below the dynamic XOFF
/// point (0, then 1 step to 1 MB), or their headroom (from the least the configured ports
/// need to 4 times the start, at least 1 MB).
fn pg_knob(
    name: &str,
    switch: &SwitchConfig,
    dialect: Dialect,
    step: f64,
) -> Result<Knob, KnobError> {
    let bad = |message: String| KnobError {
        name: name.to_owned(),
        message,
    };
    if dialect == Dialect::Nxos {
        return Err(bad(
            "NX-OS sizes its buffers itself: its running-config has no XON offset or headroom to export; tune the ECN and NIC knobs for NX-OS".into(),
        ));
    }
    let lossless: Vec<usize> = (0..8).filter(|&c| switch.pgs[c].lossless).collect();
    let Some(&first) = lossless.first() else {
        return Err(bad("no PG is lossless in this configuration".into()));
    };
    let pg = &switch.pgs[first];
    let keys = |field: &str| {
        lossless
            .iter()
            .map(|c| format!("switch.pg.{c}.{field}"))
            .collect::<Vec<_>>()
    };
    if name == "pfc.xon_offset" {
        let crate::config::XoffRule::Dynamic {
            xon_offset_bytes, ..
        } = pg.xoff
        else {
            return Err(bad(
                "the lossless PGs have static XOFF and XON points: an XON offset applies only with buffer.threshold = \"dynamic\"".into(),
            ));
        };
        let mut values = vec![0.0];
        values.extend(ladder(step, 1e6, 1.25, step));
        return Ok(Knob {
            name: name.into(),
            what: format!("lossless PGs {lossless:?}' XON offset below the XOFF point, bytes"),
            values,
            keys: keys("xon_offset_bytes"),
            start: xon_offset_bytes as f64,
        });
    }
    // Without a configured headroom the switch computes it per port from the cable: start
    // from the first port's.
    let start = pg.headroom_bytes.unwrap_or_else(|| {
        switch
            .ports
            .first()
            .map_or(0, |p| switch.headroom_bytes(first, p))
    }) as f64;
    // Never below what the IEEE 802.1Qbb arithmetic says the configured ports need (two
    // MTUs, the cable both ways at the port's rate, the peer's response): less loses
    // frames on a real switch however a simulated seed went.
    let least = switch
        .ports
        .iter()
        .map(crate::config::min_headroom_bytes)
        .max()
        .map_or(4.0 * step, |b| ((b as f64) / step).ceil() * step);
    Ok(Knob {
        name: name.into(),
        what: format!(
            "lossless PGs {lossless:?}' headroom, bytes (from {least} B, the least the configured ports need)"
        ),
        values: ladder(least, (4.0 * start).max(1e6), 1.25, step),
        keys: keys("headroom_bytes"),
        start,
    })
}

/// Makes a point legal where knobs depend on each other: Kmin at most Kmax (the smaller
/// of the two becomes Kmin).
pub fn repair(knobs: &[Knob], values: &mut [f64]) {
    let at = |n: &str| knobs.iter().position(|k| k.name == n);
    if let (Some(a), Some(b)) = (at("ecn.kmin"), at("ecn.kmax"))
        && values[a] > values[b]
    {
        values.swap(a, b);
    }
}

/// A ladder of bytes for other modules' tests.
#[cfg(test)]
pub(crate) fn tests_ladder(from: f64, to: f64, step: f64) -> Vec<f64> {
    ladder(from, to, 1.25, step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders_stay_on_the_step_and_in_range() {
        let l = ladder(2048.0, 1_000_000.0, 1.25, 1024.0);
        assert!(l.iter().all(|v| v % 1024.0 == 0.0));
        assert!(l.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(l[0], 2048.0);
        assert_eq!(
            *l.last().unwrap(),
            (1_000_000.0f64 / 1024.0).floor() * 1024.0
        );
        let pct = ladder(1.0, 100.0, 1.25, 1.0);
        assert_eq!(pct[..4], [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(*pct.last().unwrap(), 100.0);
    }

    #[test]
    fn unknown_and_doubled_knobs_are_refused_by_name() {
        let sw = crate::config::SwitchConfig::preset("default").unwrap();
        let d = DcqcnConfig::default();
        let e = knobs(&["ecn.kmn"], &sw, &d, Dialect::Toml).unwrap_err();
        assert!(e.to_string().contains("no such knob"), "{e}");
        let e = knobs(&["rpg_ai_rate", "rpg_ai_rate"], &sw, &d, Dialect::Toml).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
        let e = knobs(&["pfc.alpha"], &sw, &d, Dialect::Nxos).unwrap_err();
        assert!(e.to_string().contains("NX-OS"), "{e}");
    }
}
