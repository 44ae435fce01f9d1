//! Where a scenario comes from: a built-in one or a file, edited by the command line,
//! with the switch configuration it names (a preset, or a file beside it, with keys laid
//! over it) and its `[[variant]]`s laid over it.

use super::schema::{MAX_SEED, ScenarioFile};
use super::{Scenario, err};
use crate::config::{ConfigError, SwitchConfig, did_you_mean, location, merge_toml, preset_text};
use serde::Deserialize;
use std::path::Path;

/// The built-in scenarios: (name, TOML text).
pub const SCENARIOS: [(&str, &str); 23] = [
    ("incast", include_str!("../scenarios/incast.toml")),
    ("incast-8", include_str!("../scenarios/incast-8.toml")),
    ("incast-64", include_str!("../scenarios/incast-64.toml")),
    ("pfc-incast", include_str!("../scenarios/pfc-incast.toml")),
    ("ecn-vs-pfc", include_str!("../scenarios/ecn-vs-pfc.toml")),
    (
        "slow-receiver",
        include_str!("../scenarios/slow-receiver.toml"),
    ),
    ("victim-flow", include_str!("../scenarios/victim-flow.toml")),
    ("pfc-storm", include_str!("../scenarios/pfc-storm.toml")),
    ("deadlock", include_str!("../scenarios/deadlock.toml")),
    ("staggered", include_str!("../scenarios/staggered.toml")),
    ("ring", include_str!("../scenarios/ring.toml")),
    ("ring-incast", include_str!("../scenarios/ring-incast.toml")),
    ("leaf-spine", include_str!("../scenarios/leaf-spine.toml")),
    ("elephants", include_str!("../scenarios/elephants.toml")),
    (
        "ring-across-leaves",
        include_str!("../scenarios/ring-across-leaves.toml"),
    ),
    ("slow-uplink", include_str!("../scenarios/slow-uplink.toml")),
    ("all-to-all", include_str!("../scenarios/all-to-all.toml")),
    ("permutation", include_str!("../scenarios/permutation.toml")),
    (
        "incast-16-cc",
        include_str!("../scenarios/incast-16-cc.toml"),
    ),
    ("web-search", include_str!("../scenarios/web-search.toml")),
    ("hpcc-paper", include_str!("../scenarios/hpcc-paper.toml")),
    (
        "hpcc-paper-incast",
        include_str!("../scenarios/hpcc-paper-incast.toml"),
    ),
    (
        "lab-congestion",
        include_str!("../scenarios/lab-congestion.toml"),
    ),
];

/// The built-in scenarios meant for `rocelab compare`: the ones that run unchanged on
/// RoCEv2 and on InfiniBand (no NIC faults, which are PFC's; no PFC watchdog).
pub const COMPARABLE: [&str; 10] = [
    "incast",
    "incast-8",
    "incast-64",
    "pfc-incast",
    "victim-flow",
    "staggered",
    "ring",
    "ring-incast",
    "leaf-spine",
    "web-search",
];

/// The keys a scenario takes, for "did you mean": the built-in scenarios', the switch's
/// under `switch.` and the endpoint's under `endpoint.`.
fn scenario_keys() -> Vec<String> {
    use did_you_mean::{leaf_keys, switch_keys};
    let texts: Vec<&str> = SCENARIOS.iter().map(|(_, t)| *t).collect();
    let mut keys = leaf_keys(&texts, "");
    keys.extend(switch_keys().into_iter().map(|k| format!("switch.{k}")));
    keys.extend(leaf_keys(&[crate::config::ENDPOINT_DEFAULTS], "endpoint."));
    keys
}

/// The TOML text of a built-in scenario.
pub fn scenario_text(name: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// A scenario table's own `seed`, or 1 where it gives none (or none that fits).
pub fn table_seed(table: &toml::Table) -> u64 {
    table
        .get("seed")
        .and_then(toml::Value::as_integer)
        .and_then(|s| u64::try_from(s).ok())
        .unwrap_or(1)
}

/// Sets a scenario table's `seed` (the command line's `--seed`), as `--set seed=N` does:
/// every draw of the scenario, its workloads' flows included, follows it.
pub fn set_seed(table: &mut toml::Table, seed: u64) -> Result<(), ConfigError> {
    let n = i64::try_from(seed).map_err(|_| {
        err(
            "seed",
            format!("{seed} is not allowed; give a whole number from 0 to {MAX_SEED}"),
        )
    })?;
    table.insert("seed".into(), toml::Value::Integer(n));
    Ok(())
}

/// Writes a scenario's `switch.pfc = true|false` as `switch.pfc.enabled`, so that keys of
/// the switch configuration's `[pfc]` table (`--set switch.pfc.pause_quanta=1000`) can go
/// in beside it, and a variant's `[pfc]` keys merge with the scenario's switch rather
/// than replace it.
pub fn pfc_flag_as_table(table: &mut toml::Table) {
    if let Some(toml::Value::Table(switch)) = table.get_mut("switch") {
        pfc_flag_in_switch(switch);
    }
}

fn pfc_flag_in_switch(switch: &mut toml::Table) {
    if let Some(toml::Value::Boolean(on)) = switch.get("pfc") {
        let on = *on;
        let mut pfc = toml::Table::new();
        pfc.insert("enabled".into(), on.into());
        switch.insert("pfc".into(), toml::Value::Table(pfc));
    }
}

/// A scenario that cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Neither a built-in scenario nor a readable file.
    #[error(
        "{name}: {cause}; give a scenario file or a built-in scenario ({})",
        names()
    )]
    NotFound {
        /// What was asked for.
        name: String,
        /// Why the file could not be read (said in the message, so not a source too).
        cause: std::io::Error,
    },
    /// A scenario file too large or not text.
    #[error(transparent)]
    Read(crate::config::ReadError),
    /// A scenario that does not parse or validate.
    #[error("{origin}: {error}")]
    Invalid {
        /// The built-in name or the file's path.
        origin: String,
        /// What is wrong, with the key.
        error: ConfigError,
    },
}

impl Scenario {
    /// A built-in scenario by name, or a scenario file.
    pub fn load(name_or_path: &str) -> Result<Scenario, ScenarioError> {
        Scenario::load_edited(name_or_path, |_| Ok(()))
    }

    /// [`load`](Self::load), with the scenario's TOML table changed by `edit` first (the
    /// command line's `--set`, `--preset` and `--config`).
    pub fn load_edited(
        name_or_path: &str,
        edit: impl FnOnce(&mut toml::Table) -> Result<(), ConfigError>,
    ) -> Result<Scenario, ScenarioError> {
        let invalid = |origin: &str| {
            let origin = origin.to_owned();
            move |error| ScenarioError::Invalid { origin, error }
        };
        let (name, text, dir, origin) = match scenario_text(name_or_path) {
            Some(text) => (
                name_or_path.to_owned(),
                text.to_owned(),
                None,
                name_or_path.to_owned(),
            ),
            None => {
                let path = Path::new(name_or_path);
                let text = crate::config::read_text(path).map_err(|e| match e {
                    crate::config::ReadError::Io { cause, .. } => ScenarioError::NotFound {
                        name: name_or_path.to_owned(),
                        cause,
                    },
                    other => ScenarioError::Read(other),
                })?;
                let name = path.file_stem().map_or_else(
                    || name_or_path.to_owned(),
                    |s| s.to_string_lossy().into_owned(),
                );
                (name, text, path.parent(), path.display().to_string())
            }
        };
        let mut table: toml::Table = toml::from_str(&text).map_err(|e| ScenarioError::Invalid {
            origin: origin.clone(),
            error: err(
                e.span()
                    .map_or_else(|| "scenario".to_owned(), |s| location(&text, s.start)),
                e.message().trim_end().to_owned(),
            ),
        })?;
        pfc_flag_as_table(&mut table);
        let before = table.clone();
        edit(&mut table).map_err(invalid(&origin))?;
        // Edited text is written anew: its lines are nobody's, so errors name their key.
        let edited = table != before;
        let text = if !edited {
            text
        } else {
            toml::to_string(&table).map_err(|e| ScenarioError::Invalid {
                origin: origin.clone(),
                error: err("scenario", e.to_string()),
            })?
        };
        Scenario::parse(&name, &text, dir, !edited).map_err(invalid(&origin))
    }

    /// Parses and validates a scenario's TOML text; a switch `file` is looked up relative
    /// to `dir`.
    pub fn from_toml(name: &str, text: &str, dir: Option<&Path>) -> Result<Scenario, ConfigError> {
        Scenario::parse(name, text, dir, true)
    }

    /// [`from_toml`](Self::from_toml), an error placed by its line in `text` when
    /// `by_line` (a file the user has), by its key otherwise.
    fn parse(
        name: &str,
        text: &str,
        dir: Option<&Path>,
        by_line: bool,
    ) -> Result<Scenario, ConfigError> {
        let de = toml::de::Deserializer::parse(text).map_err(|e| {
            let key = e
                .span()
                .map(|s| location(text, s.start))
                .unwrap_or_else(|| "scenario".to_owned());
            err(key, e.message().trim_end().to_owned())
        })?;
        let file: ScenarioFile = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let line = inner
                .span()
                .filter(|_| by_line)
                .map(|s| location(text, s.start));
            let key = match line {
                Some(line) if path != "." => format!("{line} ({path})"),
                Some(line) => line,
                None if path != "." => path,
                None => "scenario".to_owned(),
            };
            did_you_mean::with_hint(
                err(key, inner.message().trim_end().to_owned()),
                &scenario_keys(),
            )
        })?;
        let variant_tables = file.variants.clone();
        let mut scenario = file.resolve(name, dir)?;
        scenario.digest = digest(text);
        if variant_tables.is_empty() {
            return Ok(scenario);
        }
        // The whole file as a table, each variant's keys laid over it.
        let mut base: toml::Table =
            toml::from_str(text).map_err(|e| err("scenario", e.message().to_owned()))?;
        base.remove("variant");
        for (i, mut v) in variant_tables.into_iter().enumerate() {
            let key = format!("variant[{i}]");
            let variant_name = match v.remove("name") {
                Some(toml::Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
                _ => return Err(err(format!("{key}.name"), "give each variant a name")),
            };
            if scenario
                .variants
                .iter()
                .any(|s| s.variant.as_deref() == Some(&*variant_name))
            {
                return Err(err(
                    format!("{key}.name"),
                    format!("'{variant_name}' names two variants"),
                ));
            }
            let table = lay_variant(&base, &key, v)?;
            let prefix = |e: ConfigError| ConfigError {
                key: format!("{key} ({variant_name}): {}", e.key),
                message: e.message,
            };
            let file = ScenarioFile::deserialize(toml::Value::Table(table))
                .map_err(|e| prefix(err("scenario", e.message().trim_end().to_owned())))?;
            let mut resolved = file.resolve(name, dir).map_err(prefix)?;
            resolved.variant = Some(variant_name);
            resolved.digest.clone_from(&scenario.digest);
            scenario.variants.push(resolved);
        }
        Ok(scenario)
    }
}

/// `base`, the scenario's table, with the keys of variant `v` (named by `key`) laid over
/// it: its description, fabric and `[ib]`, its `[switch]` and `[endpoint]` keys merged
/// into the scenario's, and its faults in place of the scenario's.
fn lay_variant(base: &toml::Table, key: &str, v: toml::Table) -> Result<toml::Table, ConfigError> {
    let mut table = base.clone();
    for (k, value) in v {
        match (k.as_str(), value) {
            ("description", value @ toml::Value::String(_)) => {
                table.insert(k, value);
            }
            ("switch" | "endpoint", toml::Value::Table(mut over)) => {
                let mut merged = match table.remove(&k) {
                    Some(toml::Value::Table(t)) => t,
                    _ => toml::Table::new(),
                };
                if k == "switch" {
                    pfc_flag_in_switch(&mut merged);
                    pfc_flag_in_switch(&mut over);
                }
                if k == "switch" {
                    crate::config::merge_switch_toml(&mut merged, over);
                } else {
                    merge_toml(&mut merged, over);
                }
                table.insert(k, toml::Value::Table(merged));
            }
            // A variant's faults replace the scenario's.
            ("fault", value @ toml::Value::Array(_)) => {
                table.insert(k, value);
            }
            ("fabric", value @ toml::Value::String(_)) | ("ib", value @ toml::Value::Table(_)) => {
                table.insert(k, value);
            }
            (k, _) => {
                return Err(err(
                    format!("{key}.{k}"),
                    "a variant takes name, description, fabric, and tables switch, \
                     endpoint, ib and fault laid over the scenario's",
                ));
            }
        }
    }
    Ok(table)
}

/// A scenario text's digest, as `sim`'s report.json carries it (`scenario_digest`):
/// FNV-1a of its bytes, 64 bits, in hex. It tells one scenario from another (a sweep's
/// runs apart), not an attacker's forgery from the real thing.
pub fn digest(text: &str) -> String {
    // FNV-1a's 64-bit offset basis and prime.
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("fnv1a64:{hash:016x}")
}

/// The built-in scenario names, comma-separated.
pub fn names() -> String {
    SCENARIOS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The switch section: `preset` (default "default") or `file`, `pfc = false` and
/// `ecn = false` switches, and any switch-configuration keys laid over the base. `pfc`
/// is the switch or a table: the configuration's `[pfc]` keys (`pfc.pause_quanta`), with
/// `pfc.enabled` for the switch.
pub(super) fn resolve_switch(
    mut table: toml::Table,
    dir: Option<&Path>,
) -> Result<(SwitchConfig, String), ConfigError> {
    let flag = |value: Option<toml::Value>, key: &str| match value {
        None => Ok(true),
        Some(toml::Value::Boolean(b)) => Ok(b),
        Some(_) => Err(err(format!("switch.{key}"), "give true or false")),
    };
    let pfc = match table.remove("pfc") {
        Some(toml::Value::Table(mut keys)) => {
            let on = flag(keys.remove("enabled"), "pfc.enabled")?;
            if !keys.is_empty() {
                table.insert("pfc".into(), toml::Value::Table(keys));
            }
            on
        }
        Some(toml::Value::Boolean(b)) => b,
        Some(_) => {
            return Err(err(
                "switch.pfc",
                "give true or false, or the switch configuration's [pfc] keys \
                 (pfc.pause_quanta = 1000, or --set switch.pfc.pause_quanta=1000)",
            ));
        }
        None => true,
    };
    let ecn = flag(table.remove("ecn"), "ecn")?;
    let text_of = |key: &str, v: toml::Value| match v {
        toml::Value::String(s) => Ok(s),
        _ => Err(err(format!("switch.{key}"), "give a string")),
    };
    let preset = table
        .remove("preset")
        .map(|v| text_of("preset", v))
        .transpose()?;
    let file = table
        .remove("file")
        .map(|v| text_of("file", v))
        .transpose()?;
    let mut source = match (&preset, &file) {
        (_, Some(f)) => format!("file {f}"),
        (Some(p), None) => format!("preset {p}"),
        (None, None) => "preset default".to_owned(),
    };
    if !pfc {
        source.push_str("; PFC off");
    }
    if !ecn {
        source.push_str("; ECN off");
    }
    let mut changed = Vec::new();
    dotted_keys(&table, "", &mut changed);
    if !changed.is_empty() {
        source.push_str(&format!("; changed {}", changed.join(", ")));
    }
    let base_text = match (preset, file) {
        (Some(_), Some(_)) => return Err(err("switch", "give preset or file, not both")),
        (None, Some(f)) => {
            let path = dir.map_or_else(|| Path::new(&f).to_path_buf(), |d| d.join(&f));
            crate::config::read_text(&path).map_err(|e| err("switch.file", e.to_string()))?
        }
        (preset, None) => {
            let p = preset.unwrap_or_else(|| "default".to_owned());
            preset_text(&p)
                .ok_or_else(|| {
                    err(
                        "switch.preset",
                        format!(
                            "no preset named '{p}'; the presets are {}",
                            crate::config::PRESETS.map(|(n, _)| n).join(", ")
                        ),
                    )
                })?
                .to_owned()
        }
    };
    for key in ["ports"] {
        if table.contains_key(key) {
            return Err(err(
                format!("switch.{key}"),
                "the topology makes one port per link; set topology.link_gbps and delay_ns",
            ));
        }
    }
    if let Some(toml::Value::Table(d)) = table.get("port_defaults")
        && let Some(k) = ["speed_gbps", "cable_m", "cable_ns"]
            .into_iter()
            .find(|k| d.contains_key(*k))
    {
        return Err(err(
            format!("switch.port_defaults.{k}"),
            "the topology gives every link's rate and delay (topology.link_gbps, delay_ns)",
        ));
    }
    let mut base: toml::Table = toml::from_str(&base_text).map_err(|e| {
        err(
            "switch.file",
            format!("not a switch configuration: {}", e.message()),
        )
    })?;
    crate::config::merge_switch_toml(&mut base, table);
    let mut cfg = SwitchConfig::from_table(base).map_err(|e| {
        let e = ConfigError {
            key: format!("switch.{}", e.key),
            message: e.message,
        };
        did_you_mean::with_hint(e, &scenario_keys())
    })?;
    if !pfc {
        cfg.disable_pfc();
    }
    if !ecn {
        cfg.disable_ecn();
    }
    Ok((cfg, source))
}

/// Every leaf of `table` as `dotted.path = value`, in order.
fn dotted_keys(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in table {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => dotted_keys(t, &path, out),
            v => out.push(format!("{path} = {v}")),
        }
    }
}
