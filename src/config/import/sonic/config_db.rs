//! A CONFIG_DB document as rocelab reads it: its tables, each field a string, read
//! through typed readers that name a value's TABLE|key|field when it does not read; and
//! the records the resolving steps take from it (a port, a buffer profile, a binding).
//! Each record is read where a step needs it, so that what no step uses (an unbound
//! profile, an unused scheduler) does not stop the import.

use crate::config::import::{ImportError, num};
use serde_json::{Map, Value};

/// A JSON object: the document, a table, an entry.
pub(super) type Obj = Map<String, Value>;

/// Tables read.
pub(super) const KNOWN: [&str; 16] = [
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
pub(super) const READ_TOO: [&str; 3] = [
    "DEVICE_METADATA",
    "LOSSLESS_TRAFFIC_PATTERN",
    "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
];

/// The fields read from [`READ_TOO`]'s tables: one of them that is not a scalar is refused
/// as in a table of [`KNOWN`]; the tables' other fields are not read.
pub(super) const READ_FIELDS: [(&str, &str); 4] = [
    ("DEVICE_METADATA", "buffer_model"),
    ("LOSSLESS_TRAFFIC_PATTERN", "mtu"),
    ("LOSSLESS_TRAFFIC_PATTERN", "small_packet_percentage"),
    ("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "default_dynamic_th"),
];

/// Tables read for checks only, or that rocelab needs nothing from.
pub(super) const NOT_NEEDED: [&str; 6] = [
    "DEVICE_METADATA",
    "LOSSLESS_TRAFFIC_PATTERN",
    "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
];

/// An error about the value at `source` (`TABLE|key|field`).
pub(super) fn val_err(source: impl Into<String>, message: impl Into<String>) -> ImportError {
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
pub(super) fn scalars_as_strings(root: &Obj) -> Result<Obj, ImportError> {
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
pub(super) fn json_kind(v: &Value) -> &'static str {
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
pub(super) fn reference(s: &str) -> &str {
    let s = s.trim();
    match s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        Some(inner) => inner.split_once('|').map_or(inner, |(_, name)| name),
        None => s,
    }
}

/// Index ranges as keys write them: `3`, `3-4`, `0-2`.
pub(super) fn indices(source: &str, s: &str) -> Result<Vec<usize>, ImportError> {
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

/// The document, its fields strings ([`scalars_as_strings`]), read by TABLE|key|field.
pub(super) struct Doc<'a> {
    /// The tables by name.
    pub(super) root: &'a Obj,
}

impl<'a> Doc<'a> {
    /// A table.
    pub(super) fn table(&self, name: &str) -> Option<&'a Obj> {
        self.root.get(name).and_then(Value::as_object)
    }

    /// An entry of a table.
    pub(super) fn entry(&self, table: &str, key: &str) -> Option<&'a Obj> {
        self.table(table)?.get(key).and_then(Value::as_object)
    }

    /// A field of an entry, as a string.
    pub(super) fn field(&self, table: &str, key: &str, field: &str) -> Option<&'a str> {
        self.entry(table, key)?.get(field).and_then(Value::as_str)
    }

    /// A field as a finite number.
    pub(super) fn number(
        &self,
        table: &str,
        key: &str,
        field: &str,
    ) -> Result<Option<f64>, ImportError> {
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
    pub(super) fn whole(
        &self,
        table: &str,
        key: &str,
        field: &str,
    ) -> Result<Option<u64>, ImportError> {
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
    pub(super) fn exponent(
        &self,
        table: &str,
        key: &str,
        field: &str,
    ) -> Result<Option<i32>, ImportError> {
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
    pub(super) fn map(
        &self,
        table: &str,
        name: &str,
        size: usize,
    ) -> Result<Vec<Option<u8>>, ImportError> {
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
pub(super) struct Port {
    /// Its PORT key (`Ethernet0`).
    pub(super) name: String,
    /// PORT's `speed`, Mb/s.
    pub(super) speed_mbps: f64,
    /// PORT's `mtu`, bytes, else [`DEFAULT_MTU`].
    pub(super) mtu: u64,
    /// Whether PORT gives the MTU (else SONiC's default).
    pub(super) mtu_given: bool,
    /// The CABLE_LENGTH entry that names the port, and its length in metres.
    pub(super) cable: Option<(String, f64)>,
}

impl Port {
    /// The cable length, metres: [`ASSUMED_CABLE_M`] when no CABLE_LENGTH names the port.
    pub(super) fn cable_m(&self) -> f64 {
        self.cable.as_ref().map_or(ASSUMED_CABLE_M, |c| c.1)
    }
}

/// SONiC's port MTU when PORT does not give one.
pub(super) const DEFAULT_MTU: u64 = 9100;

/// The cable assumed for a port no CABLE_LENGTH names (as the NX-OS import assumes for
/// every port, and as the presets' port defaults have).
pub(super) const ASSUMED_CABLE_M: f64 = 5.0;

/// The profile a BUFFER_PG or BUFFER_QUEUE entry binds to index `i` of `port`.
pub(super) fn bound_profile<'a>(
    doc: &Doc<'a>,
    table: &str,
    port: &str,
    i: usize,
) -> Option<(String, String)> {
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
pub(super) struct Profile {
    /// Its BUFFER_PROFILE key.
    pub(super) name: String,
    /// The BUFFER_POOL it draws from.
    pub(super) pool: Option<String>,
    /// Reserved bytes (0 when not given).
    pub(super) size: u64,
    /// The exponent n of alpha = 2^n.
    pub(super) dynamic_th: Option<i32>,
    /// A static threshold, bytes.
    pub(super) static_th: Option<u64>,
    /// XON threshold, bytes.
    pub(super) xon: Option<u64>,
    /// XOFF: the headroom, bytes.
    pub(super) xoff: Option<u64>,
    /// XON as an offset below XOFF, bytes.
    pub(super) xon_offset: Option<u64>,
}

/// BUFFER_PROFILE entry `name`, which `via` (the binding field) names.
pub(super) fn profile(doc: &Doc<'_>, name: &str, via: &str) -> Result<Profile, ImportError> {
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

/// What a QUEUE entry binds to one queue of one port.
#[derive(Debug, Clone)]
pub(super) struct QueueBinding {
    /// The port.
    pub(super) port: String,
    /// The scheduler and WRED profile it names, as a pair compared across ports.
    pub(super) setting: (Option<String>, Option<String>),
    /// The QUEUE key (`Ethernet0|3-4`).
    pub(super) key: String,
}

/// The QUEUE entries that bind queue `q` of each port, port by port. An entry that names
/// a scheduler or WRED profile its table lacks is refused: orchagent would wait for it
/// for ever.
pub(super) fn queue_bindings(
    doc: &Doc<'_>,
    ports: &[Port],
    q: usize,
) -> Result<Vec<QueueBinding>, ImportError> {
    let mut bound = Vec::new();
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
            bound.push(QueueBinding {
                port: port.name.clone(),
                setting: (field("scheduler"), field("wred_profile")),
                key: key.clone(),
            });
        }
    }
    Ok(bound)
}

/// A buffer profile BUFFER_PG binds to one PG of one port.
#[derive(Debug, Clone)]
pub(super) struct PgBinding {
    /// The port.
    pub(super) port: String,
    /// The profile, read.
    pub(super) profile: Profile,
    /// The field that binds it (`BUFFER_PG|Ethernet0|3-4|profile`).
    pub(super) via: String,
}

/// The profiles BUFFER_PG binds to PG `p`, port by port; "NULL" (the dynamic buffer
/// model's: the switch computes the profile) is left out.
pub(super) fn pg_bindings(
    doc: &Doc<'_>,
    ports: &[Port],
    p: usize,
) -> Result<Vec<PgBinding>, ImportError> {
    let mut bound = Vec::new();
    for port in ports {
        if let Some((name, via)) = bound_profile(doc, "BUFFER_PG", &port.name, p) {
            if name == "NULL" {
                continue;
            }
            bound.push(PgBinding {
                port: port.name.clone(),
                profile: profile(doc, &name, &via)?,
                via,
            });
        }
    }
    Ok(bound)
}
