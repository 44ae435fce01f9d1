//! Importing a switch's own QoS configuration into rocelab's TOML: SONiC's CONFIG_DB
//! (`sonic`) and the QoS part of an NX-OS running-config (`nxos`). Each importer writes
//! TOML with a comment on every value naming where it came from, and warns, once each,
//! about what a user most often gets wrong, naming the source path that shows it. The
//! result is validated as any configuration file is.

pub mod nxos;
pub mod sonic;

use super::{ConfigError, SwitchConfig};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One warning of an import: where in the source, and what.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ImportWarning {
    /// The source path that shows it (`BUFFER_PROFILE|pg_lossless_100000_5m_profile|xoff`,
    /// or `line 12: random-detect …`).
    pub source: String,
    /// What is wrong, in words.
    pub message: String,
}

/// A finished import.
#[derive(Debug, Clone)]
pub struct Imported {
    /// rocelab TOML, commented.
    pub toml: String,
    /// The configuration it resolves to.
    pub config: SwitchConfig,
    /// Warnings, each once, in the order found.
    pub warnings: Vec<ImportWarning>,
}

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The document does not parse as its format.
    #[error("{0}")]
    Syntax(String),
    /// A value cannot be used: where, and why.
    #[error("{at}: {message}")]
    Value {
        /// The source path.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// The TOML written does not validate (a value outside rocelab's limits).
    #[error("the imported configuration is not valid: {0}")]
    Invalid(ConfigError),
}

/// Builds the TOML text section by section, remembering for each key the source path it
/// came from (so that a configuration warning can name the source).
#[derive(Debug, Default)]
pub(crate) struct Writer {
    /// Keys before the first section.
    root: String,
    text: String,
    /// The open section as rocelab's errors name it: `buffer`, `queue.3`, `ports[1]`.
    section: String,
    /// Items written so far of each array of tables (`[[ports]]`).
    items: BTreeMap<String, usize>,
    /// rocelab key → source path.
    origin: BTreeMap<String, String>,
    warnings: Vec<ImportWarning>,
    /// (rocelab key, source) of configuration warnings the importer gave in its own
    /// words, naming the vendor's values: [`Writer::finish`] does not repeat them.
    covered: Vec<(String, String)>,
}

impl Writer {
    /// Starts `[name]` (or `[[name]]` when `array`).
    pub(crate) fn section(&mut self, name: &str, array: bool) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        if array {
            let _ = writeln!(self.text, "[[{name}]]");
        } else {
            let _ = writeln!(self.text, "[{name}]");
        }
        self.section = if array {
            let n = self.items.entry(name.to_owned()).or_insert(0);
            *n += 1;
            format!("{name}[{}]", *n - 1)
        } else {
            name.to_owned()
        };
    }

    /// `key = value  # source`; `value` is TOML already.
    pub(crate) fn value(&mut self, key: &str, value: impl std::fmt::Display, source: &str) {
        let line = format!("{key} = {value}");
        let _ = writeln!(self.text, "{line:<27} # {}", one_line(source));
        let full = if self.section.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.section)
        };
        self.origin.entry(full).or_insert_with(|| source.to_owned());
    }

    /// `key = value  # source` before every section.
    pub(crate) fn root_value(&mut self, key: &str, value: impl std::fmt::Display, source: &str) {
        let line = format!("{key} = {value}");
        let _ = writeln!(self.root, "{line:<27} # {}", one_line(source));
        self.origin
            .entry(key.to_owned())
            .or_insert_with(|| source.to_owned());
    }

    /// The source of rocelab key `key`: the key itself, or the nearest written key above
    /// or below it (an inline table's key, `queue.3.ecn`, for `queue.3.ecn.kmin_bytes`):
    /// in key order those above come first.
    fn source_of(&self, key: &str) -> Option<String> {
        let related = |k: &str| {
            k == key || key.starts_with(&format!("{k}.")) || k.starts_with(&format!("{key}."))
        };
        // Else the item the key is in, by its name (`ports[1].speed_gbps` when that port
        // gives no speed: the port's own line).
        let item = || {
            let (item, _) = key.split_once("].")?;
            self.origin.get(&format!("{item}].name")).cloned()
        };
        self.origin
            .iter()
            .find(|(k, _)| related(k))
            .map(|(_, s)| s.clone())
            .or_else(item)
    }

    /// A warning, unless the same one was given already.
    pub(crate) fn warn(&mut self, source: impl Into<String>, message: impl Into<String>) {
        let w = ImportWarning {
            source: source.into(),
            message: message.into(),
        };
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    /// A warning that says, in the vendor's terms, what the configuration warning on
    /// rocelab key `key` would say when that key comes from `source`: that one is not
    /// given as well.
    pub(crate) fn warn_instead_of(
        &mut self,
        key: impl Into<String>,
        source: impl Into<String>,
        message: impl Into<String>,
    ) {
        let source = source.into();
        self.covered.push((key.into(), source.clone()));
        self.warn(source, message);
    }

    /// Validates the text (`header` is comment lines, with text from the input passed
    /// through [`one_line`]) and adds the configuration's own warnings
    /// ([`SwitchConfig::lint`])
    /// with the source of the key that shows each, except those the importer gave already
    /// ([`Writer::warn_instead_of`]).
    pub(crate) fn finish(mut self, header: &str) -> Result<Imported, ImportError> {
        let toml = format!("{header}\n\n{}\n{}", self.root, self.text);
        // The TOML is rocelab's own, which the user has not seen: an error names the
        // source in the input and the rocelab key (`ports[1].mtu`), never a line of it.
        let table: toml::Table = toml::from_str(&toml).map_err(|e| {
            ImportError::Syntax(format!(
                "rocelab wrote TOML it cannot read back (a bug; please report it): {}",
                e.message()
            ))
        })?;
        let config = SwitchConfig::from_table(table).map_err(|e| {
            // A value outside rocelab's limits is named by its source, as the docs promise.
            let key = match self.source_of(&e.key) {
                Some(source) => format!("{source} ({})", e.key),
                None => e.key,
            };
            ImportError::Invalid(ConfigError {
                key,
                message: e.message,
            })
        })?;
        for w in config.lint() {
            let source = self
                .source_of(&w.key)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| w.key.clone());
            if !self.covered.contains(&(w.key.clone(), source.clone())) {
                self.warn(source, w.message);
            }
        }
        Ok(Imported {
            toml,
            config,
            warnings: self.warnings,
        })
    }
}

/// Text from the input (a port name, a file name, a source path) made safe for one line:
/// a TOML comment, or a warning line on standard error (one line each, as documented).
/// TOML allows no control character but tab in a comment, and a newline would end the
/// comment and let the rest of the text be read as keys (a file named `x\nseed = 42` once
/// set the seed). Each control character is written as its Rust escape (`\n`, `\u{1b}`).
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A string as a one-line TOML basic string, quoted and escaped (a port name may hold a
/// quote, a backslash or a newline; the toml crate would write the newline as a
/// multi-line string, whose lines read like keys).
pub(crate) fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A number as TOML writes it: integers without a fraction.
pub(crate) fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// The most common of `items` (the first of equals), with how many there were.
pub(crate) fn most_common<T: Clone + PartialEq>(items: &[T]) -> Option<T> {
    let mut best: Option<(&T, usize)> = None;
    for a in items {
        let n = items.iter().filter(|b| *b == a).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((a, n));
        }
    }
    best.map(|(a, _)| a.clone())
}
