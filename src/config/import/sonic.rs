//! SONiC CONFIG_DB (`config_db.json`) to rocelab TOML. docs/import.md lists every table
//! and field read, and how each maps; both the plain-name references of SONiC 202111 and
//! later (`"profile": "egress_lossy_profile"`) and the older bracketed ones
//! (`"[BUFFER_PROFILE|egress_lossy_profile]"`) are read.
//!
//! rocelab has one value per PG and per queue for the whole switch, where SONiC binds
//! profiles per port: when ports differ, the importer takes the value most ports have (the
//! largest headroom, so that every port is covered) and says which ports differ.

use super::{ImportError, Imported, Writer, most_common, num};
use serde_json::{Map, Value};

type Obj = Map<String, Value>;

/// Tables read.
const KNOWN: [&str; 16] = [
    "PORT",
    "CABLE_LENGTH",
    "BUFFER_POOL",
    "BUFFER_PROFILE",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "PORT_QOS_MAP",
    "DSCP_TO_TC_MAP",
    "DOT1P_TO_TC_MAP",
    "TC_TO_PRIORITY_GROUP_MAP",
    "TC_TO_QUEUE_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "WRED_PROFILE",
    "QUEUE",
    "SCHEDULER",
    "PFC_WD",
];

/// Tables outside [`KNOWN`] whose fields are read (the buffer model and its parameters).
const READ_TOO: [&str; 3] = [
    "DEVICE_METADATA",
    "LOSSLESS_TRAFFIC_PATTERN",
    "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
];

/// The fields read from [`READ_TOO`]'s tables: one of them that is not a scalar is refused
/// as in a table of [`KNOWN`]; the tables' other fields are not read.
const READ_FIELDS: [(&str, &str); 4] = [
    ("DEVICE_METADATA", "buffer_model"),
    ("LOSSLESS_TRAFFIC_PATTERN", "mtu"),
    ("LOSSLESS_TRAFFIC_PATTERN", "small_packet_percentage"),
    ("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "default_dynamic_th"),
];

/// Tables read for checks only, or that rocelab needs nothing from.
const NOT_NEEDED: [&str; 6] = [
    "DEVICE_METADATA",
    "LOSSLESS_TRAFFIC_PATTERN",
    "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
];

fn val_err(source: impl Into<String>, message: impl Into<String>) -> ImportError {
    ImportError::Value {
        at: source.into(),
        message: message.into(),
    }
}

/// The document with every field of the tables rocelab reads as a string, as SONiC
/// writes them: hand-written and generated CONFIG_DBs also give numbers (`"mtu": 9100`,
/// `"weight": 14`) and booleans (`"wred_green_enable": true`), which read the same. A
/// table that is not an object of entries, an entry that is not an object of fields, or
/// a field that is an object, an array or null is refused by its TABLE|key|field.
fn scalars_as_strings(root: &Obj) -> Result<Obj, ImportError> {
    let mut out = root.clone();
    for (table, entries) in out.iter_mut() {
        // The tables read for checks are converted too, and what is not a scalar in them
        // left as it was (it is not read).
        let strict = KNOWN.contains(&table.as_str());
        if !strict && !READ_TOO.contains(&table.as_str()) {
            continue;
        }
        let Value::Object(entries) = entries else {
            if !strict {
                continue;
            }
            return Err(val_err(
                table.as_str(),
                format!(
                    "{}: a CONFIG_DB table is a JSON object of entries",
                    json_kind(entries)
                ),
            ));
        };
        for (key, fields) in entries.iter_mut() {
            let Value::Object(fields) = fields else {
                if !strict {
                    continue;
                }
                return Err(val_err(
                    format!("{table}|{key}"),
                    format!(
                        "{}: a CONFIG_DB entry is a JSON object of fields",
                        json_kind(fields)
                    ),
                ));
            };
            for (field, value) in fields.iter_mut() {
                let text = match value {
                    Value::String(_) => continue,
                    // 9100.0 reads as 9100, where a whole number is wanted.
                    Value::Number(n) if n.is_f64() => n.as_f64().map_or(n.to_string(), num),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ if !strict && !READ_FIELDS.contains(&(table.as_str(), field.as_str())) => {
                        continue;
                    }
                    other => {
                        return Err(val_err(
                            format!("{table}|{key}|{field}"),
                            format!(
                                "{}: a field is a string, a number or true/false",
                                json_kind(other)
                            ),
                        ));
                    }
                };
                *value = Value::String(text);
            }
        }
    }
    Ok(out)
}

/// What a JSON value is, in words.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true/false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A reference to another table's entry: `name`, or the pre-202111 `[TABLE|name]`.
fn reference(s: &str) -> &str {
    let s = s.trim();
    match s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        Some(inner) => inner.split_once('|').map_or(inner, |(_, name)| name),
        None => s,
    }
}

/// Index ranges as keys write them: `3`, `3-4`, `0-2`.
fn indices(source: &str, s: &str) -> Result<Vec<usize>, ImportError> {
    let bad = || val_err(source, format!("'{s}' is not an index or a range like 3-4"));
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let (a, b): (usize, usize) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a > b || b > 15 {
        return Err(bad());
    }
    Ok((a..=b).collect())
}

struct Doc<'a> {
    root: &'a Obj,
}

impl<'a> Doc<'a> {
    fn table(&self, name: &str) -> Option<&'a Obj> {
        self.root.get(name).and_then(Value::as_object)
    }

    fn entry(&self, table: &str, key: &str) -> Option<&'a Obj> {
        self.table(table)?.get(key).and_then(Value::as_object)
    }

    fn field(&self, table: &str, key: &str, field: &str) -> Option<&'a str> {
        self.entry(table, key)?.get(field).and_then(Value::as_str)
    }

    fn number(&self, table: &str, key: &str, field: &str) -> Result<Option<f64>, ImportError> {
        let Some(s) = self.field(table, key, field) else {
            return Ok(None);
        };
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Some)
            .ok_or_else(|| {
                val_err(
                    format!("{table}|{key}|{field}"),
                    format!("'{s}' is not a number"),
                )
            })
    }

    /// A field SONiC takes as an unsigned integer (`uint64` in its YANG model: sizes,
    /// thresholds, the MTU, the speed in Mb/s): a negative or fractional value is refused
    /// with the value as written, never rounded or clamped.
    fn whole(&self, table: &str, key: &str, field: &str) -> Result<Option<u64>, ImportError> {
        let Some(s) = self.field(table, key, field) else {
            return Ok(None);
        };
        if let Ok(n) = s.trim().parse::<u64>() {
            return Ok(Some(n));
        }
        // Not a number at all: that error; else not a whole number in range.
        self.number(table, key, field)?;
        Err(val_err(
            format!("{table}|{key}|{field}"),
            format!("'{s}' is not a whole number 0 or more: SONiC takes an unsigned integer here"),
        ))
    }

    /// A `dynamic_th`: a signed integer exponent, alpha = 2^n (`int8` in SAI), so −1 is
    /// alpha 1/2; a fractional value (`2.9`) or one outside −128 to 127 is refused with
    /// the value as written.
    fn exponent(&self, table: &str, key: &str, field: &str) -> Result<Option<i32>, ImportError> {
        let Some(s) = self.field(table, key, field) else {
            return Ok(None);
        };
        if let Ok(n) = s.trim().parse::<i8>() {
            return Ok(Some(i32::from(n)));
        }
        // Not a number at all: that error; else not a whole number in range.
        self.number(table, key, field)?;
        Err(val_err(
            format!("{table}|{key}|{field}"),
            format!(
                "'{s}' is not a whole number -128 to 127: dynamic_th is the signed integer exponent n of alpha = 2^n"
            ),
        ))
    }

    /// A `"0".."N"` → number map, as the `*_MAP` tables hold.
    fn map(&self, table: &str, name: &str, size: usize) -> Result<Vec<Option<u8>>, ImportError> {
        let entry = self
            .entry(table, name)
            .ok_or_else(|| val_err(format!("{table}|{name}"), "no such map in the document"))?;
        let mut out = vec![None; size];
        for (k, v) in entry {
            let source = format!("{table}|{name}|{k}");
            let k: usize = k
                .parse()
                .ok()
                .filter(|&k| k < size)
                .ok_or_else(|| val_err(&source, format!("key must be 0 to {}", size - 1)))?;
            let v = v
                .as_str()
                .and_then(|v| v.trim().parse::<u8>().ok())
                .filter(|&v| v < 8)
                .ok_or_else(|| val_err(&source, "value must be 0 to 7"))?;
            out[k] = Some(v);
        }
        Ok(out)
    }
}

/// A port as CONFIG_DB describes it.
#[derive(Debug, Clone, PartialEq)]
struct Port {
    name: String,
    speed_mbps: f64,
    mtu: u64,
    /// Whether PORT gives the MTU (else SONiC's default).
    mtu_given: bool,
    /// The CABLE_LENGTH entry that names the port, and its length in metres.
    cable: Option<(String, f64)>,
}

impl Port {
    /// The cable length, metres: [`ASSUMED_CABLE_M`] when no CABLE_LENGTH names the port.
    fn cable_m(&self) -> f64 {
        self.cable.as_ref().map_or(ASSUMED_CABLE_M, |c| c.1)
    }
}

/// SONiC's port MTU when PORT does not give one.
const DEFAULT_MTU: u64 = 9100;

/// The cable assumed for a port no CABLE_LENGTH names (as the NX-OS import assumes for
/// every port, and as the presets' port defaults have).
const ASSUMED_CABLE_M: f64 = 5.0;

/// Reads a CONFIG_DB JSON document (called `name` in the header).
pub fn import(text: &str, name: &str) -> Result<Imported, ImportError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        ImportError::Syntax(format!("{name} is not a CONFIG_DB JSON document: {e}"))
    })?;
    let root = root.as_object().ok_or_else(|| {
        ImportError::Syntax(format!(
            "{name}: a CONFIG_DB document is a JSON object of tables"
        ))
    })?;
    // No table rocelab reads (an empty object, another JSON document): there is nothing
    // to import, and the defaults must not pass for the switch's configuration.
    if !root.keys().any(|t| KNOWN.contains(&t.as_str())) {
        return Err(ImportError::Syntax(format!(
            "{name}: no CONFIG_DB table rocelab reads (PORT, BUFFER_*, PORT_QOS_MAP, DSCP_TO_TC_MAP, QUEUE, SCHEDULER, WRED_PROFILE, PFC_WD, ...): give the output of `sonic-cfggen -d --print-data` or /etc/sonic/config_db.json"
        )));
    }
    let root = &scalars_as_strings(root)?;
    let doc = Doc { root };
    let mut w = Writer::default();
    for table in root.keys() {
        if !KNOWN.contains(&table.as_str()) && !NOT_NEEDED.contains(&table.as_str()) {
            w.warn(
                table.clone(),
                "table not imported: rocelab models no part of it",
            );
        }
    }
    let ports = ports(&doc, &mut w)?;
    beyond_eight(&doc, &mut w)?;
    let (tc_pg, tc_queue) = classification(&doc, &ports, &mut w)?;
    let lossless = pfc(&doc, &ports, tc_pg, &mut w)?;
    buffers(&doc, &ports, &lossless, &mut w)?;
    queues(&doc, &ports, &lossless, tc_queue, &mut w)?;
    watchdog(&doc, &mut w)?;
    w.finish(&format!(
        "# Imported from SONiC CONFIG_DB {} by `rocelab config import sonic`.\n\
         # Each comment names the TABLE|key|field a value came from.",
        super::one_line(name)
    ))
}

/// QUEUE, BUFFER_QUEUE and BUFFER_PG keys name indices 0 to 15 (some ASICs have more
/// queues, multicast ones among them); rocelab has 8 queues and 8 PGs, so what a key
/// binds to 8 and above is not imported, with one warning per table and indices, naming
/// the ports (a config binds the same indices on every port). A key whose indices do not
/// read is refused.
fn beyond_eight(doc: &Doc<'_>, w: &mut Writer) -> Result<(), ImportError> {
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

fn natural_key(name: &str) -> (String, u64) {
    let digits = name.trim_start_matches(|c: char| !c.is_ascii_digit());
    let prefix = &name[..name.len() - digits.len()];
    (prefix.to_owned(), digits.parse().unwrap_or(u64::MAX))
}

fn ports(doc: &Doc<'_>, w: &mut Writer) -> Result<Vec<Port>, ImportError> {
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
        w.value(
            "name",
            super::toml_string(&p.name),
            &format!("PORT|{}", p.name),
        );
        port_lines(w, p);
    }
    Ok(out)
}

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

/// The map a PORT_QOS_MAP field names: `global` first, else the one most ports name.
fn qos_map<'a>(
    doc: &Doc<'a>,
    ports: &[Port],
    field: &str,
    w: &mut Writer,
) -> Option<(String, String)> {
    if field == "dscp_to_tc_map"
        && let Some(m) = doc.field("PORT_QOS_MAP", "global", field)
    {
        return Some((
            reference(m).to_owned(),
            format!("PORT_QOS_MAP|global|{field}"),
        ));
    }
    let named: Vec<(String, String)> = ports
        .iter()
        .filter_map(|p| {
            doc.field("PORT_QOS_MAP", &p.name, field)
                .map(|m| (p.name.clone(), reference(m).to_owned()))
        })
        .collect();
    let maps: Vec<String> = named.iter().map(|(_, m)| m.clone()).collect();
    let common = most_common(&maps)?;
    let differ: Vec<&str> = named
        .iter()
        .filter(|(_, m)| *m != common)
        .map(|(p, _)| p.as_str())
        .collect();
    let first = named.iter().find(|(_, m)| *m == common)?.0.clone();
    if !differ.is_empty() {
        w.warn(
            format!("PORT_QOS_MAP|{}|{field}", differ[0]),
            format!(
                "ports {} use another {field} than '{common}': rocelab applies one map to every port, '{common}'",
                differ.join(", ")
            ),
        );
    }
    Some((common, format!("PORT_QOS_MAP|{first}|{field}")))
}

/// A TC_TO_PRIORITY_GROUP_MAP in use: its name, where it was named, its values.
type TcPg = (String, String, Vec<Option<u8>>);

/// The classification maps, written; returns the TC_TO_PRIORITY_GROUP_MAP in use and
/// each TC's queue.
fn classification(
    doc: &Doc<'_>,
    ports: &[Port],
    w: &mut Writer,
) -> Result<(Option<TcPg>, [usize; 8]), ImportError> {
    let dscp = qos_map(doc, ports, "dscp_to_tc_map", w);
    let dot1p = qos_map(doc, ports, "dot1p_to_tc_map", w);
    let tc_queue = qos_map(doc, ports, "tc_to_queue_map", w);
    let tc_pg = qos_map(doc, ports, "tc_to_pg_map", w);
    let trust = if dscp.is_none() && dot1p.is_some() {
        "pcp"
    } else {
        "dscp"
    };
    let source = match (trust, &dscp, &dot1p) {
        ("pcp", _, Some((_, via))) => format!("{via} (no dscp_to_tc_map)"),
        (_, Some((_, via)), _) => via.clone(),
        _ => "no dscp_to_tc_map: every DSCP to TC 0".to_owned(),
    };
    w.root_value("trust", format!("\"{trust}\""), &source);
    w.section("classify", false);
    if let Some((name, via)) = &dscp {
        let map = doc.map("DSCP_TO_TC_MAP", name, 64)?;
        let listed: Vec<u8> = map.iter().flatten().copied().collect();
        // Every DSCP listed: the commonest class is the default. Otherwise the DSCPs not
        // listed get TC 0, as SAI's default map does.
        let default = if listed.len() == 64 {
            most_common(&listed).unwrap_or(0)
        } else {
            0
        };
        let pairs: Vec<String> = map
            .iter()
            .enumerate()
            .filter_map(|(d, tc)| tc.filter(|&t| t != default).map(|t| format!("[{d}, {t}]")))
            .collect();
        w.value(
            "dscp_to_tc",
            format!("[{}]", pairs.join(", ")),
            &format!("DSCP_TO_TC_MAP|{name} (via {via})"),
        );
        w.value(
            "default_tc",
            default,
            &if listed.len() == 64 {
                format!("DSCP_TO_TC_MAP|{name}: the class of most DSCPs")
            } else {
                format!("DSCPs DSCP_TO_TC_MAP|{name} does not list: TC 0 (SAI default)")
            },
        );
    }
    if let Some((name, via)) = &dot1p {
        let map = doc.map("DOT1P_TO_TC_MAP", name, 8)?;
        let v: Vec<String> = map.iter().map(|t| t.unwrap_or(0).to_string()).collect();
        w.value(
            "pcp_to_tc",
            format!("[{}]", v.join(", ")),
            &format!("DOT1P_TO_TC_MAP|{name} (via {via}); unlisted PCPs TC 0"),
        );
    }
    let mut queue_of = [0, 1, 2, 3, 4, 5, 6, 7];
    if let Some((name, via)) = &tc_queue {
        let map = doc.map("TC_TO_QUEUE_MAP", name, 8)?;
        for (tc, q) in map.iter().enumerate() {
            queue_of[tc] = q.map_or(tc, usize::from);
        }
        let v: Vec<String> = map
            .iter()
            .enumerate()
            .map(|(tc, q)| q.unwrap_or(tc as u8).to_string())
            .collect();
        w.value(
            "tc_to_queue",
            format!("[{}]", v.join(", ")),
            &format!("TC_TO_QUEUE_MAP|{name} (via {via}); unlisted TCs to their own queue"),
        );
    }
    match tc_pg {
        Some((name, via)) => {
            let map = doc.map("TC_TO_PRIORITY_GROUP_MAP", &name, 8)?;
            Ok((Some((name, via, map)), queue_of))
        }
        None => Ok((None, queue_of)),
    }
}

fn pfc(
    doc: &Doc<'_>,
    ports: &[Port],
    tc_pg: Option<TcPg>,
    w: &mut Writer,
) -> Result<Vec<usize>, ImportError> {
    let enabled: Vec<(String, String)> = ports
        .iter()
        .filter_map(|p| {
            doc.field("PORT_QOS_MAP", &p.name, "pfc_enable")
                .map(|s| (p.name.clone(), s.to_owned()))
        })
        .collect();
    let values: Vec<String> = enabled.iter().map(|(_, v)| v.clone()).collect();
    let Some(common) = most_common(&values) else {
        w.section("pfc", false);
        w.value(
            "lossless",
            "[]",
            "no PORT_QOS_MAP|<port>|pfc_enable: no lossless priority",
        );
        return Ok(Vec::new());
    };
    let (first, _) = enabled
        .iter()
        .find(|(_, v)| *v == common)
        .expect("common is one of them");
    let source = format!("PORT_QOS_MAP|{first}|pfc_enable");
    let mut lossless = Vec::new();
    for part in common.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let p: usize = part
            .parse()
            .ok()
            .filter(|&p| p < 8)
            .ok_or_else(|| val_err(&source, format!("'{part}' is not a priority 0 to 7")))?;
        if !lossless.contains(&p) {
            lossless.push(p);
        }
    }
    lossless.sort_unstable();
    let differ: Vec<&str> = enabled
        .iter()
        .filter(|(_, v)| *v != common)
        .map(|(p, _)| p.as_str())
        .collect();
    if !differ.is_empty() {
        w.warn(
            format!("PORT_QOS_MAP|{}|pfc_enable", differ[0]),
            format!(
                "ports {} enable PFC on other priorities than \"{common}\": rocelab enables the same ones on every port",
                differ.join(", ")
            ),
        );
    }
    if let Some((name, via, map)) = tc_pg {
        for &p in &lossless {
            if let Some(pg) = map[p]
                && usize::from(pg) != p
            {
                w.warn(
                    format!("TC_TO_PRIORITY_GROUP_MAP|{name}|{p}"),
                    format!(
                        "lossless TC {p} is charged to PG {pg} ({via}); rocelab charges TC {p} to PG {p}"
                    ),
                );
            }
        }
    }
    w.section("pfc", false);
    w.value(
        "lossless",
        format!("{lossless:?}"),
        &format!("{source} = \"{common}\""),
    );
    Ok(lossless)
}

/// The profile a BUFFER_PG or BUFFER_QUEUE entry binds to index `i` of `port`.
fn bound_profile<'a>(doc: &Doc<'a>, table: &str, port: &str, i: usize) -> Option<(String, String)> {
    let t = doc.table(table)?;
    for (key, v) in t {
        let Some((ports, range)) = key.split_once('|') else {
            continue;
        };
        if !ports.split(',').any(|p| p == port) {
            continue;
        }
        let Ok(idx) = indices(key, range) else {
            continue;
        };
        if idx.contains(&i) {
            let profile = v.get("profile").and_then(Value::as_str)?;
            return Some((
                reference(profile).to_owned(),
                format!("{table}|{key}|profile"),
            ));
        }
    }
    None
}

/// A BUFFER_PROFILE, read.
#[derive(Debug, Clone, Default, PartialEq)]
struct Profile {
    name: String,
    pool: Option<String>,
    size: u64,
    dynamic_th: Option<i32>,
    static_th: Option<u64>,
    xon: Option<u64>,
    xoff: Option<u64>,
    xon_offset: Option<u64>,
}

fn profile(doc: &Doc<'_>, name: &str, via: &str) -> Result<Profile, ImportError> {
    if doc.entry("BUFFER_PROFILE", name).is_none() {
        return Err(val_err(
            via,
            format!("names profile '{name}', which BUFFER_PROFILE lacks"),
        ));
    }
    let bytes = |f: &str| doc.whole("BUFFER_PROFILE", name, f);
    Ok(Profile {
        name: name.to_owned(),
        pool: doc
            .field("BUFFER_PROFILE", name, "pool")
            .map(|p| reference(p).to_owned()),
        size: bytes("size")?.unwrap_or(0),
        dynamic_th: doc.exponent("BUFFER_PROFILE", name, "dynamic_th")?,
        static_th: bytes("static_th")?,
        xon: bytes("xon")?,
        xoff: bytes("xoff")?,
        xon_offset: bytes("xon_offset")?,
    })
}

/// SONiC's `dynamic_th` n is alpha = 2^n; rocelab takes n = −7 to 3.
fn alpha(w: &mut Writer, n: i32, source: &str) -> f64 {
    let clamped = n.clamp(-7, 3);
    if clamped != n {
        w.warn(
            source,
            format!(
                "dynamic_th {n} (alpha 2^{n}) is outside rocelab's -7 to 3: imported as {clamped}"
            ),
        );
    }
    2f64.powi(clamped)
}

fn buffers(
    doc: &Doc<'_>,
    ports: &[Port],
    lossless: &[usize],
    w: &mut Writer,
) -> Result<(), ImportError> {
    // Lossless PG profiles, per priority: the one with the largest headroom covers every
    // port. In the dynamic buffer model a lossless PG is bound to "NULL" (or not at all)
    // and the switch computes its profile from the port: `computed` collects those.
    let dynamic_model =
        doc.field("DEVICE_METADATA", "localhost", "buffer_model") == Some("dynamic");
    let mut computed: Vec<usize> = Vec::new();
    let mut pg_profiles: Vec<(usize, Profile, String)> = Vec::new();
    for &p in lossless {
        let mut bound: Vec<(String, Profile, String)> = Vec::new();
        for port in ports {
            if let Some((name, via)) = bound_profile(doc, "BUFFER_PG", &port.name, p) {
                if name == "NULL" {
                    continue;
                }
                bound.push((port.name.clone(), profile(doc, &name, &via)?, via));
            }
        }
        // Ports short of headroom, per profile: one warning each, naming them. The
        // profile with the largest headroom is the one rocelab gives every port (below),
        // bound or not, so its warning checks them all: it stands for the configuration
        // check's on the same key, which is then not given. Another profile is checked
        // against the ports it is bound to on the switch.
        let applied = bound
            .iter()
            .max_by_key(|(_, pr, _)| pr.xoff.unwrap_or(0))
            .map(|(_, pr, _)| pr);
        let mut short: Vec<(&str, u64, Vec<String>)> = Vec::new();
        let unbound = ports
            .iter()
            .filter(|q| !bound.iter().any(|(b, _, _)| *b == q.name));
        let applied_to_unbound = applied
            .map(|pr| unbound.map(move |q| (q.name.as_str(), pr)))
            .into_iter()
            .flatten();
        let checked = bound
            .iter()
            .map(|(port, pr, _)| (port.as_str(), pr))
            .chain(applied_to_unbound);
        for (port, pr) in checked {
            let Some(xoff) = pr.xoff else { continue };
            let Some(p) = ports.iter().find(|p| p.name == port) else {
                continue;
            };
            let cfg = crate::config::PortConfig {
                name: p.name.clone(),
                bits_per_sec: (p.speed_mbps * 1e6) as u64,
                cable: crate::time::Nanos(
                    (p.cable_m() * crate::config::CABLE_NS_PER_M as f64) as u64,
                ),
                mtu: p.mtu as u32,
            };
            let need = crate::config::min_headroom_bytes(&cfg);
            if xoff < need {
                let what = format!(
                    "{port} {need} B ({} Gb/s, {} m, MTU {})",
                    num(p.speed_mbps / 1000.0),
                    num(p.cable_m()),
                    p.mtu
                );
                match short.iter_mut().find(|(name, _, _)| *name == pr.name) {
                    Some((_, _, list)) => list.push(what),
                    None => short.push((&pr.name, xoff, vec![what])),
                }
            }
        }
        for (name, xoff, list) in short {
            let source = format!("BUFFER_PROFILE|{name}|xoff");
            let message = format!(
                "headroom {xoff} B is below what its ports need ({}; 2 x MTU + 2 x cable delay x rate + the PFC frame + the peer's response): frames in flight after XOFF are dropped",
                list.join(", ")
            );
            if applied.is_some_and(|a| a.name == name) {
                w.warn_instead_of(format!("pg.{p}.headroom_bytes"), source, message);
            } else {
                w.warn(source, message);
            }
        }
        let Some((_, best, via)) = bound
            .iter()
            .max_by_key(|(_, pr, _)| pr.xoff.unwrap_or(0))
            .cloned()
        else {
            if !dynamic_model {
                w.warn(
                    format!("BUFFER_PG|<port>|{p}"),
                    format!(
                        "no profile bound to lossless PG {p}: rocelab computes its headroom per port (IEEE formula)"
                    ),
                );
            }
            computed.push(p);
            continue;
        };
        let others: Vec<String> = bound
            .iter()
            .filter(|(_, pr, _)| pr.name != best.name)
            .map(|(port, pr, _)| format!("{port} ({})", pr.name))
            .collect();
        if !others.is_empty() {
            w.warn(
                via.clone(),
                format!(
                    "ports bind different profiles to PG {p}; rocelab has one per PG and takes '{}', the largest headroom, for every port (others: {})",
                    best.name,
                    others.join(", ")
                ),
            );
        }
        if let (Some(xon), Some(xoff)) = (best.xon, best.xoff)
            && xon > xoff
        {
            w.warn(
                format!("BUFFER_PROFILE|{}|xon", best.name),
                format!("XON threshold {xon} B is above XOFF {xoff} B: the PG would resume before it paused"),
            );
        }
        pg_profiles.push((p, best, via));
    }
    // The pool: the lossless profiles' (else the ingress pool).
    let pool_name = pg_profiles
        .iter()
        .find_map(|(_, pr, _)| pr.pool.clone())
        .or_else(|| {
            doc.table("BUFFER_POOL")?
                .iter()
                .find(|(_, v)| v.get("type").and_then(Value::as_str) == Some("ingress"))
                .map(|(k, _)| k.clone())
        });
    w.section("buffer", false);
    let mut static_mode = false;
    if let Some(pool) = &pool_name {
        // The dynamic buffer model sizes the pools itself and leaves the size out of
        // CONFIG_DB; the static one needs it.
        let size = match doc.whole("BUFFER_POOL", pool, "size")? {
            Some(size) => Some(size),
            None if dynamic_model => {
                w.warn(
                    format!("BUFFER_POOL|{pool}|size"),
                    format!(
                        "no size: the dynamic buffer model computes it on the switch; rocelab's default shared pool, {} B, stands in",
                        crate::config::default_shared()
                    ),
                );
                None
            }
            None => return Err(val_err(format!("BUFFER_POOL|{pool}|size"), "missing")),
        };
        let xoff = doc.whole("BUFFER_POOL", pool, "xoff")?.unwrap_or(0);
        if let Some(size) = size
            && xoff > 0
        {
            w.value(
                "shared_bytes",
                size.saturating_sub(xoff),
                &format!("BUFFER_POOL|{pool}|size {size} - xoff {xoff} (the shared headroom pool)"),
            );
            w.warn(
                format!("BUFFER_POOL|{pool}|xoff"),
                format!(
                    "a shared headroom pool of {xoff} B: rocelab gives each lossless PG its own headroom (the profile's xoff) instead"
                ),
            );
        } else if let Some(size) = size {
            w.value("shared_bytes", size, &format!("BUFFER_POOL|{pool}|size"));
        }
        static_mode = doc.field("BUFFER_POOL", pool, "mode") == Some("static");
        w.value(
            "threshold",
            if static_mode {
                "\"static\""
            } else {
                "\"dynamic\""
            },
            &format!("BUFFER_POOL|{pool}|mode"),
        );
    }
    if let Some((_, pr, _)) = pg_profiles.first()
        && let Some(n) = pr.dynamic_th
    {
        let source = format!("BUFFER_PROFILE|{}|dynamic_th", pr.name);
        let a = alpha(w, n, &source);
        w.value("pg_alpha", num(a), &format!("{source} = {n} (alpha 2^{n})"));
    }
    if dynamic_model && !computed.is_empty() {
        dynamic_headroom(doc, w, pg_profiles.is_empty())?;
    }
    // Lossy queues and PGs.
    let lossy_queue = ports.iter().find_map(|port| {
        (0..8)
            .filter(|q| !lossless.contains(q))
            .find_map(|q| bound_profile(doc, "BUFFER_QUEUE", &port.name, q))
    });
    if let Some((name, via)) = lossy_queue {
        let pr = profile(doc, &name, &via)?;
        let source = format!("BUFFER_PROFILE|{name}");
        match (pr.dynamic_th, pr.static_th) {
            (Some(n), _) if !static_mode => {
                let a = alpha(w, n, &format!("{source}|dynamic_th"));
                w.value(
                    "queue_alpha",
                    num(a),
                    &format!("{source}|dynamic_th = {n} (via {via})"),
                );
            }
            (_, Some(bytes)) => {
                w.value(
                    "queue_limit_bytes",
                    bytes,
                    &format!("{source}|static_th (via {via})"),
                );
            }
            (Some(n), None) => {
                let a = 2f64.powi(n.clamp(-7, 3));
                let total = doc
                    .whole("BUFFER_POOL", pool_name.as_deref().unwrap_or(""), "size")?
                    .unwrap_or(0);
                let bytes = (a * total as f64 / (1.0 + a)) as u64;
                w.value(
                    "queue_limit_bytes",
                    bytes,
                    &format!("{source}|dynamic_th = {n} in a static pool: alpha/(1+alpha) x pool"),
                );
                w.warn(
                    format!("{source}|dynamic_th"),
                    "a dynamic lossy-queue threshold in a static pool: rocelab has one mode, imported as its static equivalent",
                );
            }
            (None, None) => {}
        }
        w.value("queue_reserve_bytes", pr.size, &format!("{source}|size"));
    }
    let lossy_pg = ports.iter().find_map(|port| {
        (0..8)
            .filter(|p| !lossless.contains(p))
            .find_map(|p| bound_profile(doc, "BUFFER_PG", &port.name, p))
    });
    if let Some((name, via)) = lossy_pg {
        let pr = profile(doc, &name, &via)?;
        w.value(
            "pg_reserve_bytes",
            pr.size,
            &format!("BUFFER_PROFILE|{name}|size (lossy PGs, via {via})"),
        );
    }
    if dynamic_model {
        for p in &computed {
            w.section(&format!("pg.{p}"), false);
            w.value(
                "reserve_bytes",
                crate::config::headroom::sonic_mellanox::PIPELINE_BYTES,
                "the dynamic model's xon: the pipeline latency, 19 KiB (asic_table.j2)",
            );
        }
    }
    for (p, pr, via) in &pg_profiles {
        w.section(&format!("pg.{p}"), false);
        let source = format!("BUFFER_PROFILE|{}", pr.name);
        let pool_xoff = doc
            .whole("BUFFER_POOL", pr.pool.as_deref().unwrap_or(""), "xoff")?
            .unwrap_or(0);
        let xoff = pr.xoff.unwrap_or(0);
        let (reserve, how) = if pool_xoff > 0 {
            (pr.size, "size (headroom comes from the pool's xoff)")
        } else if pr.size >= xoff {
            (pr.size - xoff, "size - xoff (size holds the headroom)")
        } else {
            (pr.size, "size")
        };
        w.value(
            "reserve_bytes",
            reserve,
            &format!("{source}|{how}, via {via}"),
        );
        if pr.xoff.is_some() {
            w.value("headroom_bytes", xoff, &format!("{source}|xoff"));
        }
        if static_mode {
            let limit = pr.static_th.ok_or_else(|| {
                val_err(
                    format!("{source}|static_th"),
                    "a static pool's lossless profile needs static_th",
                )
            })?;
            let xon = match (pr.xon_offset, pr.xon) {
                (Some(off), _) => limit.saturating_sub(off),
                (None, Some(xon)) => xon,
                (None, None) => limit.saturating_sub(1),
            };
            w.value("xoff_bytes", limit, &format!("{source}|static_th"));
            w.value("xon_bytes", xon, &format!("{source}|xon_offset or xon"));
        } else if let Some(off) = pr.xon_offset {
            w.value("xon_offset_bytes", off, &format!("{source}|xon_offset"));
        }
    }
    Ok(())
}

/// The dynamic buffer model: headroom computed per port as SONiC's Mellanox plugin does,
/// and the lossless PGs' alpha from `DEFAULT_LOSSLESS_BUFFER_PARAMETER`.
fn dynamic_headroom(doc: &Doc<'_>, w: &mut Writer, set_alpha: bool) -> Result<(), ImportError> {
    use crate::config::headroom::sonic_mellanox::{LOSSLESS_MTU, SMALL_PACKET_PERCENT};
    w.value(
        "headroom_model",
        "\"sonic_mellanox\"",
        "DEVICE_METADATA|localhost|buffer_model = dynamic: xoff per port by buffer_headroom_mellanox.lua (Spectrum-1 constants)",
    );
    if let Some(t) = doc.table("LOSSLESS_TRAFFIC_PATTERN")
        && let Some(name) = t.keys().next()
    {
        let mtu = doc.number("LOSSLESS_TRAFFIC_PATTERN", name, "mtu")?;
        let spp = doc.number("LOSSLESS_TRAFFIC_PATTERN", name, "small_packet_percentage")?;
        if mtu.is_some_and(|m| m != LOSSLESS_MTU) || spp.is_some_and(|p| p != SMALL_PACKET_PERCENT)
        {
            w.warn(
                format!("LOSSLESS_TRAFFIC_PATTERN|{name}"),
                format!(
                    "rocelab's sonic_mellanox headroom assumes SONiC's default pattern (mtu {LOSSLESS_MTU}, small_packet_percentage {SMALL_PACKET_PERCENT}), not this one"
                ),
            );
        }
    }
    let th = doc
        .table("DEFAULT_LOSSLESS_BUFFER_PARAMETER")
        .and_then(|t| t.keys().next())
        .map(|name| {
            (
                name.clone(),
                doc.exponent(
                    "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
                    name,
                    "default_dynamic_th",
                ),
            )
        });
    if let Some((name, n)) = th
        && let Some(n) = n?
        && set_alpha
    {
        let source = format!("DEFAULT_LOSSLESS_BUFFER_PARAMETER|{name}|default_dynamic_th");
        let a = alpha(w, n, &source);
        w.value("pg_alpha", num(a), &format!("{source} = {n} (alpha 2^{n})"));
    }
    Ok(())
}

fn queues(
    doc: &Doc<'_>,
    ports: &[Port],
    lossless: &[usize],
    queue_of: [usize; 8],
    w: &mut Writer,
) -> Result<(), ImportError> {
    // Queues with a section.
    let mut written: Vec<usize> = Vec::new();
    for q in 0..8 {
        let mut bound: Vec<(String, Option<String>, Option<String>, String)> = Vec::new();
        for port in ports {
            let Some(t) = doc.table("QUEUE") else { break };
            for (key, v) in t {
                let Some((names, range)) = key.split_once('|') else {
                    continue;
                };
                if !names.split(',').any(|n| n == port.name) || !indices(key, range)?.contains(&q) {
                    continue;
                }
                let field = |f: &str| {
                    v.get(f)
                        .and_then(Value::as_str)
                        .map(|s| reference(s).to_owned())
                };
                // A reference to nothing: orchagent would wait for it for ever.
                for (f, table, what) in [
                    ("scheduler", "SCHEDULER", "scheduler"),
                    ("wred_profile", "WRED_PROFILE", "WRED profile"),
                ] {
                    if let Some(name) = field(f)
                        && doc.entry(table, &name).is_none()
                    {
                        return Err(val_err(
                            format!("QUEUE|{key}|{f}"),
                            format!("names {what} '{name}', which {table} lacks"),
                        ));
                    }
                }
                bound.push((
                    port.name.clone(),
                    field("scheduler"),
                    field("wred_profile"),
                    key.clone(),
                ));
            }
        }
        let settings: Vec<(Option<String>, Option<String>)> =
            bound.iter().map(|b| (b.1.clone(), b.2.clone())).collect();
        let Some(common) = most_common(&settings) else {
            continue;
        };
        let key = bound
            .iter()
            .find(|b| (b.1.clone(), b.2.clone()) == common)
            .map(|b| b.3.clone())
            .unwrap_or_default();
        let differ: Vec<&str> = bound
            .iter()
            .filter(|b| (b.1.clone(), b.2.clone()) != common)
            .map(|b| b.0.as_str())
            .collect();
        if !differ.is_empty() {
            w.warn(
                format!("QUEUE|{}|{q}", differ[0]),
                format!(
                    "ports {} schedule queue {q} differently: rocelab uses QUEUE|{key} for every port",
                    differ.join(", ")
                ),
            );
        }
        w.section(&format!("queue.{q}"), false);
        written.push(q);
        if let Some(s) = &common.0 {
            let source = format!("SCHEDULER|{s}");
            let kind = doc
                .field("SCHEDULER", s, "type")
                .unwrap_or("WRR")
                .to_ascii_uppercase();
            if !["STRICT", "DWRR", "WRR"].contains(&kind.as_str()) {
                return Err(val_err(
                    format!("{source}|type"),
                    format!("'{kind}' is not STRICT, DWRR or WRR"),
                ));
            }
            match kind.as_str() {
                "STRICT" => w.value(
                    "schedule",
                    "\"strict\"",
                    &format!("{source}|type = STRICT (QUEUE|{key})"),
                ),
                t => {
                    w.value(
                        "schedule",
                        "\"dwrr\"",
                        &format!("{source}|type = {t} (QUEUE|{key})"),
                    );
                    if let Some(weight) = doc.number("SCHEDULER", s, "weight")? {
                        let at = format!("{source}|weight");
                        if weight < 0.0 || weight.fract() != 0.0 {
                            return Err(val_err(
                                at,
                                format!("'{}' is not a whole number (1 or more)", num(weight)),
                            ));
                        }
                        if weight == 0.0 {
                            w.warn(
                                &at,
                                "weight 0: rocelab has no zero weight and imports it as 1, so the queue still drains, slowly, when others are busy",
                            );
                            w.value("weight", 1, &format!("{at} = 0, as weight 1"));
                        } else {
                            w.value("weight", weight as u64, &at);
                        }
                    }
                }
            }
        }
        if let Some(p) = &common.1 {
            let src = format!("WRED_PROFILE|{p}");
            let ecn = doc.field("WRED_PROFILE", p, "ecn").unwrap_or("ecn_none");
            let green = doc.field("WRED_PROFILE", p, "wred_green_enable") != Some("false");
            if ecn == "ecn_none" || !ecn.contains("green") && ecn != "ecn_all" {
                w.warn(
                    format!("{src}|ecn"),
                    format!("ecn '{ecn}' does not mark green frames: rocelab imports no ECN profile for queue {q}"),
                );
                continue;
            }
            if !green {
                w.warn(
                    format!("{src}|wred_green_enable"),
                    format!("wred_green_enable is false: green frames are neither marked nor dropped, and rocelab imports no ECN profile for queue {q}"),
                );
                continue;
            }
            let kmin = doc
                .whole("WRED_PROFILE", p, "green_min_threshold")?
                .unwrap_or(0);
            let kmax = doc
                .whole("WRED_PROFILE", p, "green_max_threshold")?
                .unwrap_or(0);
            let prob = doc
                .whole("WRED_PROFILE", p, "green_drop_probability")?
                .unwrap_or(100) as f64;
            if prob > 100.0 {
                return Err(val_err(
                    format!("{src}|green_drop_probability"),
                    format!("'{}' is not a percentage 0 to 100", num(prob)),
                ));
            }
            w.value(
                "ecn",
                format!("{{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = {} }}", num(prob / 100.0)),
                &format!("{src}|green_min_threshold, green_max_threshold, green_drop_probability {} % (QUEUE|{key}|wred_profile)", num(prob)),
            );
        }
    }
    // A lossless queue no QUEUE entry names: SONiC binds no scheduler or WRED profile to
    // it, and the ASIC schedules it as it does by default. rocelab needs a section for a
    // lossless queue and takes its own default.
    for &p in lossless {
        let q = queue_of[p];
        if !written.contains(&q) {
            written.push(q);
            w.section(&format!("queue.{q}"), false);
            w.value(
                "schedule",
                "\"dwrr\"",
                &format!("no QUEUE|<port>|{q}: rocelab's default, DWRR weight 1"),
            );
            w.warn(
                format!("QUEUE|<port>|{q}"),
                format!(
                    "lossless queue {q} (PFC priority {p}) has no QUEUE entry, so no scheduler or WRED profile: the switch schedules it by its default; rocelab gives it DWRR weight 1 and no ECN"
                ),
            );
        }
    }
    Ok(())
}

fn watchdog(doc: &Doc<'_>, w: &mut Writer) -> Result<(), ImportError> {
    let Some(t) = doc.table("PFC_WD") else {
        return Ok(());
    };
    let ports: Vec<&String> = t.keys().filter(|k| *k != "GLOBAL").collect();
    let Some(first) = ports.first() else {
        return Ok(());
    };
    let setting = |k: &str| {
        (
            doc.field("PFC_WD", k, "action")
                .unwrap_or("drop")
                .to_owned(),
            doc.field("PFC_WD", k, "detection_time")
                .unwrap_or("200")
                .to_owned(),
            doc.field("PFC_WD", k, "restoration_time")
                .unwrap_or("200")
                .to_owned(),
        )
    };
    let all: Vec<_> = ports.iter().map(|k| setting(k)).collect();
    // Each field as most ports have it (whole settings may all differ), from the first
    // port that has it.
    let field_of = |pick: fn(&(String, String, String)) -> &String| {
        let values: Vec<&String> = all.iter().map(pick).collect();
        let value = most_common(&values).unwrap_or(pick(&all[0])).clone();
        let at = ports[values.iter().position(|v| **v == value).unwrap_or(0)];
        (value, at)
    };
    let (action, action_at) = field_of(|s| &s.0);
    let (detection, detection_at) = field_of(|s| &s.1);
    let (restoration, restoration_at) = field_of(|s| &s.2);
    let common = (action.clone(), detection.clone(), restoration.clone());
    let at = *first;
    let differ: Vec<String> = ports
        .iter()
        .zip(&all)
        .filter(|(_, s)| **s != common)
        .map(|(p, s)| format!("{p} ({}, {} ms, {} ms)", s.0, s.1, s.2))
        .collect();
    if !differ.is_empty() {
        w.warn(
            format!("PFC_WD|{}", ports[all.iter().position(|s| *s != common).unwrap_or(0)]),
            format!(
                "ports have other watchdog settings than action {action}, detection {detection} ms, restoration {restoration} ms (what most ports have): {}; rocelab runs one setting on every port",
                differ.join(", ")
            ),
        );
    }
    let unwatched: Vec<&str> = doc
        .table("PORT")
        .map(|t| {
            t.keys()
                .filter(|p| !ports.contains(p))
                .map(String::as_str)
                .collect()
        })
        .unwrap_or_default();
    if !unwatched.is_empty() {
        w.warn(
            format!("PFC_WD|{}", unwatched[0]),
            format!(
                "ports {} have no PFC_WD entry (no watchdog on the switch): rocelab watches every port",
                unwatched.join(", ")
            ),
        );
    }
    let ms = |field: &str, s: &str, at: &str| -> Result<u64, ImportError> {
        s.trim().parse().map_err(|_| {
            val_err(
                format!("PFC_WD|{at}|{field}"),
                format!("'{s}' is not a time in ms"),
            )
        })
    };
    // Every port's values are checked, not only those taken.
    for (p, (action, detection, restoration)) in ports.iter().zip(&all) {
        ms("detection_time", detection, p)?;
        ms("restoration_time", restoration, p)?;
        if !["drop", "forward", "alert"].contains(&action.to_ascii_lowercase().as_str()) {
            return Err(val_err(
                format!("PFC_WD|{p}|action"),
                format!("'{action}' is not drop, forward or alert"),
            ));
        }
    }
    w.section("watchdog", false);
    w.value("enabled", "true", &format!("PFC_WD|{at}"));
    w.value(
        "detection_ms",
        ms("detection_time", &detection, detection_at)?,
        &format!("PFC_WD|{detection_at}|detection_time"),
    );
    w.value(
        "restoration_ms",
        ms("restoration_time", &restoration, restoration_at)?,
        &format!("PFC_WD|{restoration_at}|restoration_time"),
    );
    let poll = doc.field("PFC_WD", "GLOBAL", "POLL_INTERVAL");
    w.value(
        "poll_ms",
        poll.map_or(Ok(200), |p| ms("POLL_INTERVAL", p, "GLOBAL"))?,
        if poll.is_some() {
            "PFC_WD|GLOBAL|POLL_INTERVAL"
        } else {
            "no PFC_WD|GLOBAL|POLL_INTERVAL: SONiC's default 200 ms"
        },
    );
    let action = action.to_ascii_lowercase();
    w.value(
        "action",
        format!("\"{action}\""),
        &format!("PFC_WD|{action_at}|action"),
    );
    Ok(())
}
