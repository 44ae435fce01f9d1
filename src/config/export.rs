//! Settings written back in the syntax they came from: a SONiC CONFIG_DB document with
//! its WRED and buffer profiles changed (and the RFC 6902 patch that makes the change, as
//! SONiC's generic config updater applies it), NX-OS `random-detect` lines, a rocelab
//! TOML file with each changed value commented, and a NIC's DCQCN settings as mlx5's
//! sysfs lines. What is exported imports back ([`super::import`]) to the same values:
//! tests check it.

use serde_json::Value;
use std::fmt::Write as _;

/// The switch settings to write: each `None` is left as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SwitchChanges {
    /// The queues whose ECN profile changes (the lossless ones).
    pub queues: Vec<usize>,
    /// ECN Kmin, bytes.
    pub kmin_bytes: Option<u64>,
    /// ECN Kmax, bytes.
    pub kmax_bytes: Option<u64>,
    /// ECN Pmax, a fraction (written in whole percents where the syntax takes those).
    pub pmax: Option<f64>,
    /// The lossless PGs' dynamic-threshold alpha (a power of two for SONiC).
    pub pg_alpha: Option<f64>,
    /// The lossless PGs' XON offset below the XOFF point, bytes (SONiC `xon_offset`).
    pub xon_offset_bytes: Option<u64>,
    /// The lossless PGs' headroom, bytes (SONiC `xoff`, with `size` keeping the reserve).
    pub headroom_bytes: Option<u64>,
}

/// Why an export could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExportError(pub String);

fn fail(message: impl Into<String>) -> ExportError {
    ExportError(message.into())
}

/// A whole percent, as SONiC's `green_drop_probability` and NX-OS's `drop-probability`
/// take it.
fn percent(pmax: f64) -> u64 {
    (pmax * 100.0).round().clamp(0.0, 100.0) as u64
}

/// The queue numbers a CONFIG_DB QUEUE key's last part names (`3`, `3-4`).
fn queue_range(part: &str) -> Vec<usize> {
    match part.split_once('-') {
        Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
            (Ok(a), Ok(b)) if a <= b => (a..=b).collect(),
            _ => Vec::new(),
        },
        None => part.parse().map(|q| vec![q]).unwrap_or_default(),
    }
}

/// A profile reference as SONiC writes it, plain or bracketed (`[WRED_PROFILE|X]`).
fn profile_name(reference: &str) -> &str {
    let r = reference.trim_start_matches('[').trim_end_matches(']');
    r.split_once('|').map_or(r, |(_, name)| name)
}

/// A JSON Pointer token (RFC 6901): `~` as `~0`, `/` as `~1`.
fn pointer_token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// SONiC: `text` (a CONFIG_DB document) with the changes, and the RFC 6902 patch that
/// makes them. ECN goes to the green thresholds and probability of every WRED_PROFILE a
/// QUEUE entry binds to a changed queue; alpha to `dynamic_th` (alpha = 2^n), the XON
/// offset to `xon_offset` and the headroom to `xoff` of every BUFFER_PROFILE with an
/// `xoff` (the lossless PG profiles). A profile's `size` holds its reserve and its
/// headroom (when its pool has no `xoff` of its own): it moves with the headroom, so the
/// reserve stays.
pub fn sonic(text: &str, changes: &SwitchChanges) -> Result<(String, String), ExportError> {
    let mut doc: Value = serde_json::from_str(text)
        .map_err(|e| fail(format!("not a CONFIG_DB JSON document: {e}")))?;
    let mut ops: Vec<Value> = Vec::new();
    let mut wred: Vec<String> = Vec::new();
    if let Some(queue) = doc.get("QUEUE").and_then(Value::as_object) {
        for (key, entry) in queue {
            let on_changed = key
                .rsplit_once('|')
                .is_some_and(|(_, q)| queue_range(q).iter().any(|q| changes.queues.contains(q)));
            if let Some(p) = entry.get("wred_profile").and_then(Value::as_str)
                && on_changed
                && !wred.contains(&profile_name(p).to_owned())
            {
                wred.push(profile_name(p).to_owned());
            }
        }
    }
    let ecn = [
        ("green_min_threshold", changes.kmin_bytes),
        ("green_max_threshold", changes.kmax_bytes),
        ("green_drop_probability", changes.pmax.map(percent)),
    ];
    if ecn.iter().any(|(_, v)| v.is_some()) && wred.is_empty() {
        return Err(fail(format!(
            "no QUEUE entry binds a WRED_PROFILE to queue {:?}: there is no ECN profile to change",
            changes.queues
        )));
    }
    for name in &wred {
        for (field, v) in ecn {
            if let Some(v) = v {
                set(
                    &mut doc,
                    &mut ops,
                    &["WRED_PROFILE", name, field],
                    v.to_string(),
                )?;
            }
        }
    }
    let alpha = match changes.pg_alpha {
        Some(alpha) => {
            let n = alpha.log2().round() as i64;
            if 2f64.powi(n as i32) != alpha || !(-7..=3).contains(&n) {
                return Err(fail(format!(
                    "alpha {alpha} is not 2^n for n = -7 to 3, which is all dynamic_th takes"
                )));
            }
            Some(n)
        }
        None => None,
    };
    if alpha.is_some() || changes.xon_offset_bytes.is_some() || changes.headroom_bytes.is_some() {
        lossless_profiles(&mut doc, &mut ops, alpha, changes)?;
    }
    let pretty = |v: &Value| {
        serde_json::to_string_pretty(v)
            .map(|s| s + "\n")
            .map_err(|e| fail(e.to_string()))
    };
    Ok((pretty(&doc)?, pretty(&Value::Array(ops))?))
}

/// The PG settings of `changes` (and `dynamic_th` = `alpha`) on every BUFFER_PROFILE with
/// an `xoff`.
fn lossless_profiles(
    doc: &mut Value,
    ops: &mut Vec<Value>,
    alpha: Option<i64>,
    changes: &SwitchChanges,
) -> Result<(), ExportError> {
    let whole = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .and_then(|s| s.parse::<u64>().ok())
    };
    // (name, its size, its xoff, its pool's xoff)
    let lossless: Vec<(String, Option<u64>, Option<u64>, u64)> = doc
        .get("BUFFER_PROFILE")
        .and_then(Value::as_object)
        .map(|t| {
            t.iter()
                .filter(|(_, p)| p.get("xoff").is_some())
                .map(|(k, p)| {
                    let pool = p.get("pool").and_then(Value::as_str).map(profile_name);
                    let pool_xoff = pool
                        .and_then(|n| doc.get("BUFFER_POOL")?.get(n)?.get("xoff"))
                        .and_then(|x| whole(Some(x)))
                        .unwrap_or(0);
                    (
                        k.clone(),
                        whole(p.get("size")),
                        whole(p.get("xoff")),
                        pool_xoff,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if lossless.is_empty() {
        return Err(fail(
            "no BUFFER_PROFILE has an xoff: there is no lossless PG profile to change",
        ));
    }
    for (name, size, xoff, pool_xoff) in &lossless {
        let at = |field| ["BUFFER_PROFILE", name.as_str(), field];
        if let Some(n) = alpha {
            set(doc, ops, &at("dynamic_th"), n.to_string())?;
        }
        if let Some(off) = changes.xon_offset_bytes {
            set(doc, ops, &at("xon_offset"), off.to_string())?;
        }
        if let Some(h) = changes.headroom_bytes {
            let (Some(size), Some(xoff)) = (size, xoff) else {
                return Err(fail(format!(
                    "BUFFER_PROFILE|{name}: size and xoff must be whole bytes to change the headroom"
                )));
            };
            // As the import reads it: the reserve is size - xoff when size holds the
            // headroom (no pool xoff), else size itself.
            if *pool_xoff == 0 && size >= xoff {
                set(doc, ops, &at("size"), (size - xoff + h).to_string())?;
            }
            set(doc, ops, &at("xoff"), h.to_string())?;
        }
    }
    Ok(())
}

/// Sets `path` (table, entry, field) of `doc` to the string `value` (CONFIG_DB's values
/// are strings), and records the patch operation.
fn set(
    doc: &mut Value,
    ops: &mut Vec<Value>,
    path: &[&str; 3],
    value: String,
) -> Result<(), ExportError> {
    let entry = doc
        .get_mut(path[0])
        .and_then(|t| t.get_mut(path[1]))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| fail(format!("{}|{} is not an object", path[0], path[1])))?;
    let old = entry.insert(path[2].to_owned(), Value::String(value.clone()));
    if old.as_ref().and_then(Value::as_str) == Some(value.as_str()) {
        return Ok(());
    }
    let pointer: String = path
        .iter()
        .map(|p| format!("/{}", pointer_token(p)))
        .collect();
    ops.push(serde_json::json!({
        "op": if old.is_some() { "replace" } else { "add" },
        "path": pointer,
        "value": value,
    }));
    Ok(())
}

/// NX-OS: `text` (a running-config) with each `random-detect` line of a changed queue's
/// class (`class type queuing c-out-8q-qN`) rewritten, and the changed lines with their
/// policy-map and class, to paste in configuration mode. Thresholds go in kbytes (1000 B)
/// when whole, else in bytes.
pub fn nxos(text: &str, changes: &SwitchChanges) -> Result<(String, String), ExportError> {
    for (given, what) in [
        (changes.pg_alpha.is_some(), "alpha"),
        (changes.xon_offset_bytes.is_some(), "XON offset"),
        (changes.headroom_bytes.is_some(), "headroom"),
    ] {
        if given {
            return Err(fail(format!(
                "NX-OS sizes its buffers itself: there is no {what} to write in a running-config; tune the ECN and NIC knobs for NX-OS"
            )));
        }
    }
    let size = |b: u64| {
        if b.is_multiple_of(1000) {
            format!("{} kbytes", b / 1000)
        } else {
            format!("{b} bytes")
        }
    };
    let (mut policy, mut class, mut queue) = (String::new(), String::new(), None::<usize>);
    let mut out = String::new();
    let mut lines = String::new();
    let mut changed = 0;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.starts_with(&["policy-map", "type", "queuing"]) {
            policy = line.trim().to_owned();
        } else if words.starts_with(&["class", "type", "queuing"]) {
            class = line.trim().to_owned();
            queue = words
                .get(3)
                .and_then(|c| c.rsplit_once("-q"))
                .and_then(|(_, n)| n.parse().ok());
        } else if !line.starts_with(' ') && !words.is_empty() {
            (policy, queue) = (String::new(), None);
        }
        let is_wred =
            words.starts_with(&["random-detect", "minimum-threshold"]) && words.len() >= 7;
        if !(is_wred && queue.is_some_and(|q| changes.queues.contains(&q)) && !policy.is_empty()) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let bytes = |n: &str, unit: &str| -> Option<u64> {
            let n: u64 = n.parse().ok()?;
            match unit {
                "bytes" => Some(n),
                "kbytes" => n.checked_mul(1000),
                "mbytes" => n.checked_mul(1_000_000),
                _ => None,
            }
        };
        let old_kmin = bytes(words[2], words[3]);
        let old_kmax = bytes(words[5], words[6]);
        let (Some(old_kmin), Some(old_kmax)) = (old_kmin, old_kmax) else {
            return Err(fail(format!(
                "'{}': thresholds not in bytes, kbytes or mbytes",
                line.trim()
            )));
        };
        let old_p = words
            .iter()
            .position(|w| *w == "drop-probability")
            .and_then(|i| words.get(i + 1))
            .and_then(|p| p.parse::<u64>().ok())
            .unwrap_or(100);
        let indent = &line[..line.len() - line.trim_start().len()];
        let new = format!(
            "{indent}random-detect minimum-threshold {} maximum-threshold {} drop-probability {} weight 0 ecn",
            size(changes.kmin_bytes.unwrap_or(old_kmin)),
            size(changes.kmax_bytes.unwrap_or(old_kmax)),
            changes.pmax.map_or(old_p, percent),
        );
        let _ = writeln!(lines, "{policy}\n  {class}\n    {}", new.trim());
        out.push_str(&new);
        out.push('\n');
        changed += 1;
    }
    if changed == 0 {
        return Err(fail(format!(
            "no `random-detect minimum-threshold` line under a queuing class of queue {:?}: there is no ECN profile to change",
            changes.queues
        )));
    }
    Ok((out, lines))
}

/// A rocelab TOML configuration (`table`, as read) with `changes` (dotted key, new value,
/// why), written out with each changed value commented `was OLD; why`.
pub fn toml(
    table: &toml::Table,
    changes: &[(String, toml::Value, String)],
) -> Result<String, ExportError> {
    let mut t = table.clone();
    let mut old = Vec::new();
    for (key, value, _) in changes {
        let was = lookup(&t, key).map_or_else(|| "unset".to_owned(), ToString::to_string);
        old.push(was);
        super::set_key(&mut t, &format!("{key}={value}")).map_err(|e| fail(e.to_string()))?;
    }
    let text = toml::to_string(&t).map_err(|e| fail(e.to_string()))?;
    let mut out = String::new();
    let mut section = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            section = trimmed
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_owned();
        }
        let key = trimmed
            .split_once(" = ")
            .map(|(k, _)| k.trim().trim_matches('"'));
        let full = key.map(|k| {
            if section.is_empty() {
                k.to_owned()
            } else {
                format!("{section}.{k}")
            }
        });
        let notes: Vec<String> = changes
            .iter()
            .zip(&old)
            .filter(|((k, _, _), _)| {
                full.as_deref()
                    .is_some_and(|f| k == f || k.starts_with(&format!("{f}.")))
            })
            .map(|((k, _, why), was)| {
                format!("{} was {was}: {why}", k.rsplit('.').next().unwrap_or(k))
            })
            .collect();
        if notes.is_empty() {
            let _ = writeln!(out, "{line}");
        } else {
            let _ = writeln!(out, "{line:<40} # {}", notes.join("; "));
        }
    }
    Ok(out)
}

/// The value at dotted `key` of `table`.
fn lookup<'a>(table: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let mut parts = key.split('.');
    let mut here = table.get(parts.next()?)?;
    for p in parts {
        here = match here {
            toml::Value::Table(t) => t.get(p)?,
            toml::Value::Array(a) => a.get(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(here)
}

/// A NIC's DCQCN settings (ConnectX name, value) as mlx5's sysfs writes, for an interface
/// the user names in `$IF`: the reaction point's under `roce_rp`, the notification
/// point's under `roce_np`, priority 3's enable switched on first.
pub fn nic_lines(settings: &[(&str, u64)]) -> String {
    let mut out = String::from(
        "# DCQCN on a ConnectX NIC (mlx5); set IF to the port's interface, run as root.\n\
         # The values take effect for new QPs.\n",
    );
    for (name, value) in settings {
        let side = if name.starts_with("rpg_") || *name == "dce_tcp_g" {
            "roce_rp"
        } else {
            "roce_np"
        };
        let _ = writeln!(out, "echo {value} > /sys/class/net/$IF/ecn/{side}/{name}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_keys_and_references_read_as_sonic_writes_them() {
        assert_eq!(queue_range("3-4"), [3, 4]);
        assert_eq!(queue_range("6"), [6]);
        assert!(queue_range("x").is_empty());
        assert_eq!(
            profile_name("[WRED_PROFILE|AZURE_LOSSLESS]"),
            "AZURE_LOSSLESS"
        );
        assert_eq!(profile_name("AZURE_LOSSLESS"), "AZURE_LOSSLESS");
        assert_eq!(pointer_token("a/b~c"), "a~1b~0c");
        assert_eq!(percent(0.07), 7);
    }

    #[test]
    fn nic_lines_put_each_setting_on_its_side() {
        let t = nic_lines(&[("rpg_ai_rate", 5), ("min_time_between_cnps", 4)]);
        assert!(
            t.contains("echo 5 > /sys/class/net/$IF/ecn/roce_rp/rpg_ai_rate\n"),
            "{t}"
        );
        assert!(
            t.contains("echo 4 > /sys/class/net/$IF/ecn/roce_np/min_time_between_cnps\n"),
            "{t}"
        );
    }
}
