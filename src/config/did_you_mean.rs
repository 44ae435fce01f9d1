//! "Did you mean": for a key a configuration does not know, the key the user most likely
//! meant: a key of the same table spelt nearly alike (`shared_byte` → `shared_bytes`), else
//! a key of that name in another table (`link_gbps` → `topology.link_gbps`). The same for
//! a TOML file and for `--set`, since both reach serde's "unknown field" error.

use super::ConfigError;

/// What [`with_hint`] adds to a message, before the keys.
const MARK: &str = "; did you mean ";

/// `e` with a hint when it is serde's "unknown field `x`, expected one of `a`, `b`": `known`
/// lists the dotted keys of the document's schema ([`leaf_keys`]). A hint given before (by
/// a part of the document read on its own) is replaced.
pub fn with_hint(mut e: ConfigError, known: &[String]) -> ConfigError {
    if let Some(i) = e.message.find(MARK) {
        e.message.truncate(i);
    }
    if let Some(h) = hint(&e, known) {
        e.message = format!("{}{MARK}{h}?", e.message);
    }
    e
}

/// The keys to suggest for `e`, quoted, or `None`.
fn hint(e: &ConfigError, known: &[String]) -> Option<String> {
    let rest = e.message.strip_prefix("unknown field `")?;
    let (name, expected) = rest.split_once('`')?;
    // serde lists the table's names between backquotes: "expected one of `a`, `b`".
    let expected: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    // The dotted path, as the key gives it (a file's: "line L, column C (path)").
    let path = match e.key.rsplit_once(" (") {
        Some((_, p)) => p.strip_suffix(')').unwrap_or(p),
        None => e.key.as_str(),
    };
    let table = path
        .strip_suffix(name)
        .map(|t| t.trim_end_matches('.'))
        .unwrap_or("");
    let within = |candidate: &str| {
        let d = distance(name, candidate);
        (d <= (name.chars().count() / 3).max(1)).then_some(d)
    };
    let near = expected
        .iter()
        .filter_map(|c| within(c).map(|d| (d, *c)))
        .min_by_key(|(d, _)| *d);
    if let Some((_, c)) = near {
        return Some(if table.is_empty() {
            format!("`{c}`")
        } else {
            format!("`{table}.{c}`")
        });
    }
    // The same name, or one spelt nearly alike, in another table.
    let last = |k: &str| k.rsplit('.').next().unwrap_or(k).to_owned();
    let mut elsewhere: Vec<&String> = known.iter().filter(|k| last(k) == name).collect();
    if elsewhere.is_empty() {
        elsewhere = known
            .iter()
            .filter(|k| within(&last(k)).is_some())
            .collect();
    }
    elsewhere.dedup();
    if elsewhere.is_empty() {
        return None;
    }
    let list: Vec<String> = elsewhere.iter().take(3).map(|k| format!("`{k}`")).collect();
    Some(list.join(" or "))
}

/// Levenshtein distance, in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// Every leaf key of the TOML `texts`, dotted (`buffer.shared_bytes`; an array of tables
/// by its name, `ports.name`), each once, each under `prefix` (`switch.`).
pub fn leaf_keys(texts: &[&str], prefix: &str) -> Vec<String> {
    fn walk(table: &toml::Table, at: &str, out: &mut Vec<String>) {
        for (k, v) in table {
            let key = format!("{at}{k}");
            match v {
                toml::Value::Table(t) => walk(t, &format!("{key}."), out),
                toml::Value::Array(items) if items.iter().all(toml::Value::is_table) => {
                    for t in items.iter().filter_map(toml::Value::as_table) {
                        walk(t, &format!("{key}."), out);
                    }
                }
                _ => {
                    if !out.contains(&key) {
                        out.push(key);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for text in texts {
        if let Ok(t) = toml::from_str::<toml::Table>(text) {
            walk(&t, prefix, &mut out);
        }
    }
    out
}

/// The switch configuration's keys, from the presets.
pub fn switch_keys() -> Vec<String> {
    let texts: Vec<&str> = super::PRESETS.iter().map(|(_, t)| *t).collect();
    leaf_keys(&texts, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown(key: &str, message: &str, known: &[String]) -> String {
        with_hint(
            ConfigError {
                key: key.into(),
                message: message.into(),
            },
            known,
        )
        .message
    }

    #[test]
    fn near_names_in_the_table_then_the_same_name_elsewhere() {
        assert_eq!(distance("wieght", "weight"), 2);
        assert_eq!(distance("", "abc"), 3);
        let known = vec!["topology.link_gbps".to_owned(), "seed".to_owned()];
        let m = unknown(
            "buffer.shared_byte",
            "unknown field `shared_byte`, expected one of `shared_bytes`, `threshold`",
            &known,
        );
        assert!(m.ends_with("; did you mean `buffer.shared_bytes`?"), "{m}");
        let m = unknown(
            "line 3, column 1 (link_gbps)",
            "unknown field `link_gbps`, expected one of `seed`, `topology`",
            &known,
        );
        assert!(m.ends_with("; did you mean `topology.link_gbps`?"), "{m}");
        let m = unknown(
            "zzz",
            "unknown field `zzz`, expected one of `seed`, `topology`",
            &known,
        );
        assert!(!m.contains("did you mean"), "{m}");
        // A hint given before is replaced, not repeated.
        let again = with_hint(
            ConfigError {
                key: "switch.buffer.shared_byte".into(),
                message: format!(
                    "unknown field `shared_byte`, expected `shared_bytes`{MARK}`buffer.shared_bytes`?"
                ),
            },
            &[],
        );
        assert_eq!(
            again.message,
            "unknown field `shared_byte`, expected `shared_bytes`; did you mean `switch.buffer.shared_bytes`?"
        );
    }
}
