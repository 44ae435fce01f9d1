//! What a running-config's QoS says, as it says it: class-maps, policy-maps, the `system
//! qos` service-policies, Ethernet interfaces and the PFC watchdog, each command with its
//! line. Resolving it to rocelab's configuration is `resolve`'s job.
//!
//! A policy's commands stay as their words here and are read when a service-policy
//! applies the policy: a policy nothing applies is never read, so a value in it that
//! rocelab could not take does not stop the import.

use crate::config::import::ImportError;
use std::collections::BTreeMap;

/// NX-OS `kbytes` and `mbytes`: 1000 and 1 000 000 bytes (as rocelab's nexus-ai preset
/// reads the AI/ML blueprint's "150 kbytes").
pub(super) const KBYTE: f64 = 1000.0;

/// One command: its words and the line they are on.
#[derive(Debug, Clone)]
pub(super) struct Line {
    /// 1-based line number in the running-config.
    pub line: usize,
    /// The command's words, split on whitespace.
    pub words: Vec<String>,
}

/// A `class-map type qos`: the DSCPs its `match dscp` lines give.
#[derive(Debug, Clone)]
pub(super) struct ClassMap {
    /// DSCPs, in the order matched.
    pub dscps: Vec<u32>,
}

/// One `class` of a policy-map and the commands under it.
#[derive(Debug, Clone)]
pub(super) struct PolicyClass {
    /// The `class …` line.
    pub head: Line,
    /// The class-map it names.
    pub name: String,
    /// The commands under it.
    pub commands: Vec<Line>,
}

/// A `policy-map type qos|queuing|network-qos` and its classes.
#[derive(Debug, Clone, Default)]
pub(super) struct PolicyMap {
    /// Its classes, in order.
    pub classes: Vec<PolicyClass>,
}

/// An `interface EthernetX/Y` and the commands under it.
#[derive(Debug, Clone)]
pub(super) struct Interface {
    /// The `interface …` line.
    pub head: Line,
    /// The commands under it.
    pub commands: Vec<Line>,
}

/// The system-wide PFC watchdog settings; each value with the line that gives it.
#[derive(Debug, Clone, Default)]
pub(super) struct Watchdog {
    /// `priority-flow-control watch-dog-interval on|off`.
    pub on: Option<(bool, String)>,
    /// `priority-flow-control watch-dog interval N` (ms).
    pub interval_ms: Option<(u64, String)>,
    /// `priority-flow-control watch-dog shutdown-multiplier N`.
    pub shutdown_multiplier: Option<(u64, String)>,
    /// `priority-flow-control auto-restore multiplier N`.
    pub restore_multiplier: Option<(u64, String)>,
}

impl Watchdog {
    /// No watchdog command at all.
    pub(super) fn is_empty(&self) -> bool {
        self.on.is_none()
            && self.interval_ms.is_none()
            && self.shutdown_multiplier.is_none()
            && self.restore_multiplier.is_none()
    }
}

/// A running-config's QoS, parsed.
#[derive(Debug, Clone, Default)]
pub(super) struct RunningConfig {
    /// `class-map type qos` by name.
    pub class_maps: BTreeMap<String, ClassMap>,
    /// `class-map type network-qos` by name: the qos-groups each carries.
    pub network_classes: BTreeMap<String, Vec<u32>>,
    /// `policy-map type qos` by name.
    pub qos_policies: BTreeMap<String, PolicyMap>,
    /// `policy-map type queuing` by name.
    pub queuing_policies: BTreeMap<String, PolicyMap>,
    /// `policy-map type network-qos` by name.
    pub network_policies: BTreeMap<String, PolicyMap>,
    /// The commands under `system qos` (the last such block).
    pub system: Option<Vec<Line>>,
    /// Ethernet interfaces, in order.
    pub interfaces: Vec<Interface>,
    /// The PFC watchdog.
    pub watchdog: Watchdog,
    /// Warnings found while parsing (source, message), in order.
    pub notes: Vec<(String, String)>,
    /// What the file holds besides QoS (`interface mgmt0`, `hostname`), each once.
    pub skipped: Vec<String>,
}

impl RunningConfig {
    /// Whether it holds any QoS at all (an empty file, a SONiC JSON or a rocelab TOML
    /// holds none).
    pub(super) fn has_qos(&self) -> bool {
        !(self.class_maps.is_empty()
            && self.qos_policies.is_empty()
            && self.queuing_policies.is_empty()
            && self.network_policies.is_empty()
            && self.system.is_none()
            && self.watchdog.is_empty())
    }

    /// The policy `system qos` applies whose `service-policy type …` line holds every
    /// word of `kind`, with that line.
    pub(super) fn service(&self, kind: &[&str]) -> Option<(String, String)> {
        self.system
            .as_ref()?
            .iter()
            .find(|c| {
                c.starts(&["service-policy", "type"])
                    && kind.iter().all(|k| c.words.contains(&(*k).to_owned()))
            })
            .and_then(|c| c.words.last().map(|n| (n.clone(), c.at())))
    }
}

impl Line {
    /// The words, joined by one space.
    pub(super) fn text(&self) -> String {
        self.words.join(" ")
    }

    /// Whether the command begins with these words.
    pub(super) fn starts(&self, prefix: &[&str]) -> bool {
        self.words.len() >= prefix.len() && self.words.iter().zip(prefix).all(|(a, b)| a == b)
    }

    /// Word `i`, or "" past the end.
    pub(super) fn word(&self, i: usize) -> &str {
        self.words.get(i).map(String::as_str).unwrap_or("")
    }

    /// The last word, or "".
    pub(super) fn last(&self) -> String {
        self.words.last().cloned().unwrap_or_default()
    }

    /// The word after `key`.
    pub(super) fn after(&self, key: &str) -> Option<&str> {
        let i = self.words.iter().position(|w| w == key)?;
        self.words.get(i + 1).map(String::as_str)
    }

    /// `line N: the command`, as errors and warnings name a source.
    pub(super) fn at(&self) -> String {
        format!("line {}: {}", self.line, self.text())
    }

    /// An error about this command.
    pub(super) fn err(&self, message: impl Into<String>) -> ImportError {
        ImportError::Value {
            at: self.at(),
            message: message.into(),
        }
    }

    /// `24,26`, `24-31`, `3`. A range is written low to high, as NX-OS prints it in a
    /// running-config: `26-24` is refused with its line (it once gave nothing, and DSCP 26
    /// fell silently into the default class).
    pub(super) fn numbers(&self, s: &str, max: u32) -> Result<Vec<u32>, ImportError> {
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.is_empty()) {
            let (a, z) = part.split_once('-').unwrap_or((part, part));
            let parse = |x: &str| {
                x.parse::<u32>().ok().filter(|&v| v <= max).ok_or_else(|| {
                    self.err(format!(
                        "'{part}' is not a value 0 to {max} or a range of them"
                    ))
                })
            };
            let (a, z) = (parse(a)?, parse(z)?);
            if a > z {
                return Err(self.err(format!(
                    "'{part}' is a range from high to low: write it {z}-{a}"
                )));
            }
            out.extend(a..=z);
        }
        Ok(out)
    }

    /// Exactly one value 0 to `max`.
    pub(super) fn one_number(&self, s: &str, max: u32) -> Result<u32, ImportError> {
        match self.numbers(s, max)?.as_slice() {
            [v] => Ok(*v),
            _ => Err(self.err(format!("give one value 0 to {max}"))),
        }
    }

    /// A whole number.
    pub(super) fn u64(&self, s: &str) -> Result<u64, ImportError> {
        s.parse()
            .map_err(|_| self.err(format!("'{s}' is not a whole number")))
    }

    /// An `mtu` command's value: a number of bytes (`mtu jumbo` is not NX-OS).
    pub(super) fn mtu(&self) -> Result<u32, ImportError> {
        self.word(1)
            .parse()
            .map_err(|_| self.err("mtu is a number of bytes, e.g. 9216"))
    }

    /// A size as `random-detect` writes it: a number and `bytes`, `kbytes` or `mbytes`.
    pub(super) fn bytes(&self, n: &str, unit: &str) -> Result<u64, ImportError> {
        let given = n;
        let n: f64 = n
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| self.err(format!("'{n}' is not a number 0 or more")))?;
        let scale = match unit {
            "bytes" => 1.0,
            "kbytes" => KBYTE,
            "mbytes" => KBYTE * KBYTE,
            other => {
                return Err(self.err(format!(
                    "threshold unit '{other}': rocelab takes bytes, kbytes or mbytes (not packets)"
                )));
            }
        };
        let bytes = n * scale;
        // Past 2^53 a double no longer holds every whole number (and `as` would saturate).
        if bytes.fract() != 0.0 || bytes > 2f64.powi(53) {
            return Err(self.err(format!(
                "'{given} {unit}' is not a whole number of bytes rocelab can hold"
            )));
        }
        Ok(bytes as u64)
    }

    /// Whether the command is about QoS, which an importer must not drop silently.
    pub(super) fn qos_related(&self) -> bool {
        let t = self.text();
        [
            "qos",
            "priority-flow-control",
            "pfc",
            "queuing",
            "random-detect",
            "wred",
            "ecn",
            "buffer",
        ]
        .iter()
        .any(|k| t.contains(k))
    }
}
