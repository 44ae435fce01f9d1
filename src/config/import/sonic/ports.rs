//! The ports: PORT and CABLE_LENGTH read into [`Port`]s, written as `[port_defaults]`
//! and `[[ports]]`; and the indices rocelab has no queue or PG for.

use super::config_db::{ASSUMED_CABLE_M, DEFAULT_MTU, Doc, Port, indices, val_err};
use crate::config::import::{ImportError, Writer, most_common, num, toml_string};
use serde_json::Value;

/// QUEUE, BUFFER_QUEUE and BUFFER_PG keys name indices 0 to 15 (some ASICs have more
/// queues, multicast ones among them); rocelab has 8 queues and 8 PGs, so what a key
/// binds to 8 and above is not imported, with one warning per table and indices, naming
/// the ports (a config binds the same indices on every port). A key whose indices do not
/// read is refused.
pub(super) fn beyond_eight(doc: &Doc<'_>, w: &mut Writer) -> Result<(), ImportError> {
    for table in ["QUEUE", "BUFFER_QUEUE", "BUFFER_PG"] {
        // (first, last) index beyond 7 → the ports that bind them, in key order.
        let mut beyond: std::collections::BTreeMap<(usize, usize), Vec<&str>> = Default::default();
        for key in doc.table(table).map(|t| t.keys()).into_iter().flatten() {
            let source = format!("{table}|{key}");
            let Some((ports, range)) = key.split_once('|') else {
                return Err(val_err(
                    source,
                    "a key is <ports>|<index or range>, e.g. Ethernet0|3-4",
                ));
            };
            let past: Vec<usize> = indices(&source, range)?
                .into_iter()
                .filter(|&i| i >= 8)
                .collect();
            if let (Some(&first), Some(&last)) = (past.first(), past.last()) {
                beyond.entry((first, last)).or_default().push(ports);
            }
        }
        let what = if table == "BUFFER_PG" {
            "PGs"
        } else {
            "queues"
        };
        for ((first, last), ports) in beyond {
            let range = if first == last {
                first.to_string()
            } else {
                format!("{first} to {last}")
            };
            w.warn(
                format!("{table}|<port>|{range}"),
                format!(
                    "{what} {range} on {}: rocelab has 8 {what}, 0 to 7, and does not import these",
                    ports.join(", ")
                ),
            );
        }
    }
    Ok(())
}

/// A port name's sort key: Ethernet4 before Ethernet12.
fn natural_key(name: &str) -> (String, u64) {
    let digits = name.trim_start_matches(|c: char| !c.is_ascii_digit());
    let prefix = &name[..name.len() - digits.len()];
    (prefix.to_owned(), digits.parse().unwrap_or(u64::MAX))
}

/// PORT and CABLE_LENGTH read into [`Port`]s, in name order, written as
/// `[port_defaults]` (the commonest port) and a `[[ports]]` each.
pub(super) fn ports(doc: &Doc<'_>, w: &mut Writer) -> Result<Vec<Port>, ImportError> {
    let mut names: Vec<&String> = doc
        .table("PORT")
        .map(|t| t.keys().collect())
        .unwrap_or_default();
    names.sort_by_key(|n| natural_key(n));
    // CABLE_LENGTH has one entry (AZURE) on a switch; with more, a port takes the first
    // that names it, and one named with different lengths is warned about.
    let cable_tables: Vec<(&String, &serde_json::Map<String, Value>)> = doc
        .table("CABLE_LENGTH")
        .map(|t| {
            t.iter()
                .filter_map(|(k, v)| v.as_object().map(|o| (k, o)))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut no_cable: Vec<&str> = Vec::new();
    for name in names {
        let speed_mbps = doc
            .whole("PORT", name, "speed")?
            .map(|s| s as f64)
            .ok_or_else(|| val_err(format!("PORT|{name}|speed"), "missing"))?;
        let mtu = doc.whole("PORT", name, "mtu")?;
        let mut lengths: Vec<(&String, f64)> = Vec::new();
        for (table, ports) in &cable_tables {
            let Some(s) = ports.get(name.as_str()).and_then(Value::as_str) else {
                continue;
            };
            let m = s
                .trim()
                .strip_suffix('m')
                .and_then(|m| m.parse::<f64>().ok())
                .filter(|m| m.is_finite() && *m >= 0.0)
                .ok_or_else(|| {
                    val_err(
                        format!("CABLE_LENGTH|{table}|{name}"),
                        format!("'{s}' is not a length like 5m"),
                    )
                })?;
            lengths.push((table, m));
        }
        if lengths.iter().any(|(_, m)| *m != lengths[0].1) {
            let all: Vec<String> = lengths
                .iter()
                .map(|(t, m)| format!("{t} {}m", num(*m)))
                .collect();
            w.warn(
                format!("CABLE_LENGTH|{}|{name}", lengths[0].0),
                format!(
                    "{name} has different cable lengths ({}): rocelab takes the first",
                    all.join(", ")
                ),
            );
        }
        if lengths.is_empty() {
            no_cable.push(name);
        }
        out.push(Port {
            name: name.clone(),
            speed_mbps,
            mtu: mtu.unwrap_or(DEFAULT_MTU),
            mtu_given: mtu.is_some(),
            cable: lengths.first().map(|(t, m)| ((*t).clone(), *m)),
        });
    }
    if !no_cable.is_empty() {
        w.warn(
            "CABLE_LENGTH",
            format!(
                "no cable length for {}: {}m assumed, which the headroom computed per port counts",
                no_cable.join(", "),
                num(ASSUMED_CABLE_M)
            ),
        );
    }
    let shape = |p: &Port| (p.speed_mbps.to_bits(), p.mtu, p.cable_m().to_bits());
    let shapes: Vec<_> = out.iter().map(shape).collect();
    if let Some(common) = most_common(&shapes)
        && let Some(p) = out.iter().find(|p| shape(p) == common)
    {
        w.section("port_defaults", false);
        port_lines(w, p);
    }
    for p in &out {
        w.section("ports", true);
        w.value("name", toml_string(&p.name), &format!("PORT|{}", p.name));
        port_lines(w, p);
    }
    Ok(out)
}

/// A port's speed, MTU and cable.
fn port_lines(w: &mut Writer, p: &Port) {
    w.value(
        "speed_gbps",
        num(p.speed_mbps / 1000.0),
        &format!("PORT|{}|speed = {} (Mb/s)", p.name, num(p.speed_mbps)),
    );
    if p.mtu_given {
        w.value("mtu", p.mtu, &format!("PORT|{}|mtu", p.name));
    } else {
        w.value(
            "mtu",
            p.mtu,
            &format!("no PORT|{}|mtu: SONiC's default {DEFAULT_MTU}", p.name),
        );
    }
    match &p.cable {
        Some((table, m)) => w.value(
            "cable_m",
            num(*m),
            &format!("CABLE_LENGTH|{table}|{} = {}m", p.name, num(*m)),
        ),
        None => w.value(
            "cable_m",
            num(ASSUMED_CABLE_M),
            &format!(
                "no CABLE_LENGTH for {}: {}m assumed",
                p.name,
                num(ASSUMED_CABLE_M)
            ),
        ),
    }
}
