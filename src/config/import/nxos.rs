//! The QoS part of an NX-OS running-config to rocelab TOML: `class-map type qos` /
//! `match dscp`, `policy-map type qos` / `set qos-group`, `policy-map type network-qos`
//! (`pause pfc-cos`, `mtu`), `policy-map type queuing` (`priority level`, `bandwidth
//! remaining percent`, `random-detect … ecn`), the `system qos` service-policies, the PFC
//! watchdog, and per-interface `priority-flow-control mode`, `mtu`, `speed` and
//! service-policy overrides. docs/import.md gives the mapping.
//!
//! NX-OS sizes buffers and pause thresholds itself, so the buffer comes from rocelab's
//! `nexus-ai` preset; qos-group N is traffic class N and queue N (`c-out-8q-qN`), as on
//! the Nexus 9000's 8-queue templates.

use super::{ImportError, Imported, Writer, num};
use std::collections::BTreeMap;

/// NX-OS `kbytes` and `mbytes`: 1000 and 1 000 000 bytes (as rocelab's nexus-ai preset
/// reads the AI/ML blueprint's "150 kbytes").
const KBYTE: f64 = 1000.0;

/// rocelab's longest watchdog restoration time, ms (`watchdog.restoration_ms`).
const MAX_RESTORATION_MS: u64 = 3_600_000;

/// A command and the commands indented under it.
#[derive(Debug, Clone)]
struct Block {
    line: usize,
    words: Vec<String>,
    children: Vec<Block>,
}

impl Block {
    fn text(&self) -> String {
        self.words.join(" ")
    }

    fn starts(&self, prefix: &[&str]) -> bool {
        self.words.len() >= prefix.len() && self.words.iter().zip(prefix).all(|(a, b)| a == b)
    }
}

/// Lines into blocks by indentation; `!` comments and blank lines dropped.
fn parse(text: &str) -> Vec<Block> {
    let mut roots: Vec<Block> = Vec::new();
    // The open blocks, with their indentation.
    let mut stack: Vec<(usize, Block)> = Vec::new();
    let close = |stack: &mut Vec<(usize, Block)>, roots: &mut Vec<Block>, indent: usize| {
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            let (_, b) = stack.pop().expect("not empty");
            match stack.last_mut() {
                Some((_, parent)) => parent.children.push(b),
                None => roots.push(b),
            }
        }
    };
    for (n, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('!') {
            continue;
        }
        let indent = raw.len() - raw.trim_start().len();
        close(&mut stack, &mut roots, indent);
        stack.push((
            indent,
            Block {
                line: n + 1,
                words: trimmed.split_whitespace().map(str::to_owned).collect(),
                children: Vec::new(),
            },
        ));
    }
    close(&mut stack, &mut roots, 0);
    roots
}

fn val_err(b: &Block, message: impl Into<String>) -> ImportError {
    ImportError::Value {
        at: format!("line {}: {}", b.line, b.text()),
        message: message.into(),
    }
}

fn at(b: &Block) -> String {
    format!("line {}: {}", b.line, b.text())
}

/// `24,26`, `24-31`, `3`. A range is written low to high, as NX-OS prints it in a
/// running-config: `26-24` is refused with its line (it once gave nothing, and DSCP 26
/// fell silently into the default class).
fn numbers(b: &Block, s: &str, max: u32) -> Result<Vec<u32>, ImportError> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (a, z) = part.split_once('-').unwrap_or((part, part));
        let parse = |x: &str| {
            x.parse::<u32>().ok().filter(|&v| v <= max).ok_or_else(|| {
                val_err(
                    b,
                    format!("'{part}' is not a value 0 to {max} or a range of them"),
                )
            })
        };
        let (a, z) = (parse(a)?, parse(z)?);
        if a > z {
            return Err(val_err(
                b,
                format!("'{part}' is a range from high to low: write it {z}-{a}"),
            ));
        }
        out.extend(a..=z);
    }
    Ok(out)
}

/// Exactly one value 0 to `max`.
fn one_number(b: &Block, s: &str, max: u32) -> Result<u32, ImportError> {
    match numbers(b, s, max)?.as_slice() {
        [v] => Ok(*v),
        _ => Err(val_err(b, format!("give one value 0 to {max}"))),
    }
}

/// A size as `random-detect` writes it: a number and `bytes`, `kbytes` or `mbytes`.
fn bytes(b: &Block, n: &str, unit: &str) -> Result<u64, ImportError> {
    let given = n;
    let n: f64 = n
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| val_err(b, format!("'{n}' is not a number 0 or more")))?;
    let scale = match unit {
        "bytes" => 1.0,
        "kbytes" => KBYTE,
        "mbytes" => KBYTE * KBYTE,
        other => {
            return Err(val_err(
                b,
                format!(
                    "threshold unit '{other}': rocelab takes bytes, kbytes or mbytes (not packets)"
                ),
            ));
        }
    };
    let bytes = n * scale;
    // Past 2^53 a double no longer holds every whole number (and `as` would saturate).
    if bytes.fract() != 0.0 || bytes > 2f64.powi(53) {
        return Err(val_err(
            b,
            format!("'{given} {unit}' is not a whole number of bytes rocelab can hold"),
        ));
    }
    Ok(bytes as u64)
}

/// The value after `key` in a block's words.
fn after<'a>(b: &'a Block, key: &str) -> Option<&'a str> {
    let i = b.words.iter().position(|w| w == key)?;
    b.words.get(i + 1).map(String::as_str)
}

/// Reads a running-config (called `name` in the header).
pub fn import(text: &str, name: &str) -> Result<Imported, ImportError> {
    let blocks = parse(text);
    let mut w = Writer::default();
    let mut class_maps: BTreeMap<String, (Vec<u32>, &Block)> = BTreeMap::new();
    let mut qos_policies: BTreeMap<String, &Block> = BTreeMap::new();
    let mut queuing: BTreeMap<String, &Block> = BTreeMap::new();
    let mut network: BTreeMap<String, &Block> = BTreeMap::new();
    // `class-map type network-qos C` / `match qos-group N`: the qos-groups class C carries.
    let mut network_classes: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut system: Option<&Block> = None;
    let mut interfaces: Vec<&Block> = Vec::new();
    let mut wd: BTreeMap<&str, (u64, String)> = BTreeMap::new();
    let mut wd_on: Option<(bool, String)> = None;
    let mut skipped: Vec<String> = Vec::new();
    for b in &blocks {
        let word = |i: usize| b.words.get(i).map(String::as_str).unwrap_or("");
        if b.starts(&["class-map", "type", "qos"]) {
            let name = word(4).to_owned();
            let mut dscps = Vec::new();
            for c in &b.children {
                if c.starts(&["match", "dscp"]) {
                    dscps.extend(numbers(c, word_of(c, 2), 63)?);
                } else {
                    w.warn(
                        at(c),
                        "match not imported: rocelab classifies class-maps by DSCP only",
                    );
                }
            }
            class_maps.insert(name, (dscps, b));
        } else if b.starts(&["class-map", "type", "network-qos"]) {
            let mut groups = Vec::new();
            for c in &b.children {
                if c.starts(&["match", "qos-group"]) {
                    groups.extend(numbers(c, word_of(c, 2), 7)?);
                } else {
                    w.warn(
                        at(c),
                        "match not imported: a network-qos class is known by its qos-groups",
                    );
                }
            }
            // `class-map type network-qos [match-any] NAME`.
            let name = b.words.last().cloned().unwrap_or_default();
            network_classes.insert(name, groups);
        } else if b.starts(&["policy-map", "type", "qos"]) {
            qos_policies.insert(word(3).to_owned(), b);
        } else if b.starts(&["policy-map", "type", "queuing"]) {
            queuing.insert(word(3).to_owned(), b);
        } else if b.starts(&["policy-map", "type", "network-qos"]) {
            network.insert(word(3).to_owned(), b);
        } else if b.starts(&["system", "qos"]) {
            system = Some(b);
        } else if b.starts(&["interface"]) && word(1).to_ascii_lowercase().starts_with("ethernet") {
            interfaces.push(b);
        } else if b.starts(&["priority-flow-control", "watch-dog-interval"]) {
            wd_on = Some((word(2) == "on", at(b)));
        } else if b.starts(&["priority-flow-control", "watch-dog", "interval"]) {
            wd.insert("interval", (parse_u64(b, word(3))?, at(b)));
        } else if b.starts(&["priority-flow-control", "watch-dog", "shutdown-multiplier"]) {
            wd.insert("shutdown", (parse_u64(b, word(3))?, at(b)));
        } else if b.starts(&["priority-flow-control", "auto-restore", "multiplier"]) {
            wd.insert("restore", (parse_u64(b, word(3))?, at(b)));
        } else if b.starts(&["priority-flow-control", "fixed-restore", "multiplier"]) {
            let n = parse_u64(b, word(3))?;
            if n > 0 {
                w.warn(at(b), "fixed restore (restore whatever the pause frames) is not modelled: rocelab restores after a quiet restoration time");
            }
        } else if qos_related(b) {
            w.warn(at(b), "QoS command not imported: rocelab has no equivalent");
        } else if !b.starts(&["version"]) {
            let head = if b.starts(&["interface"]) || b.starts(&["vrf"]) || b.starts(&["ip"]) {
                b.words
                    .iter()
                    .take(2)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                word(0).to_owned()
            };
            if !skipped.contains(&head) {
                skipped.push(head);
            }
        }
    }
    // Nothing of QoS at all: not an NX-OS running-config's QoS (an empty file, a SONiC
    // JSON, a rocelab TOML), which would otherwise import as the defaults, exit 0.
    if class_maps.is_empty()
        && qos_policies.is_empty()
        && queuing.is_empty()
        && network.is_empty()
        && system.is_none()
        && wd.is_empty()
        && wd_on.is_none()
    {
        return Err(ImportError::Syntax(format!(
            "{name}: no NX-OS QoS configuration in it (class-map type qos, policy-map, system qos, priority-flow-control watch-dog): give the output of `show running-config`{}",
            if skipped.is_empty() {
                String::new()
            } else {
                format!(
                    "; it holds {}",
                    skipped
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )));
    }
    if !skipped.is_empty() {
        w.warn("(not QoS)", format!("not imported: {}", skipped.join(", ")));
    }
    let service = |kind: &[&str]| -> Option<(String, String)> {
        let s = system?;
        s.children
            .iter()
            .find(|c| {
                c.starts(&["service-policy", "type"])
                    && kind.iter().all(|k| c.words.contains(&(*k).to_owned()))
            })
            .and_then(|c| c.words.last().map(|n| (n.clone(), at(c))))
    };
    // Classification: one qos input policy for every port, class by class, first match
    // wins.
    let input = input_policy(service(&["qos", "input"]), &interfaces, &mut w);
    let mut dscp_tc: DscpGroups = std::array::from_fn(|_| None);
    let mut default_tc = (0u32, "class-default absent: qos-group 0".to_owned());
    if let Some((policy, via)) = &input {
        (dscp_tc, default_tc) = classes(policy, via, &qos_policies, &class_maps)?;
        w.root_value("trust", "\"dscp\"", via);
    }
    // Ports.
    // Every network-qos `mtu` is a number of bytes (`mtu jumbo` is not NX-OS).
    for class in network.values().flat_map(|p| &p.children) {
        for m in class.children.iter().filter(|x| x.starts(&["mtu"])) {
            word_of(m, 1)
                .parse::<u32>()
                .map_err(|_| val_err(m, "mtu is a number of bytes, e.g. 9216"))?;
        }
    }
    // The port MTU is the lossless class's (the one with `pause pfc-cos`): its frames are
    // what the headroom must hold. Without one, the largest any class gives.
    let lossless_mtu = service(&["network-qos"]).and_then(|(n, _)| {
        network.get(&n).and_then(|p| {
            let mtu_of = |c: &Block| {
                c.children
                    .iter()
                    .find(|x| x.starts(&["mtu"]))
                    .and_then(|x| word_of(x, 1).parse::<u32>().ok().map(|m| (m, at(x))))
            };
            let paused = |c: &&Block| c.children.iter().any(|x| x.starts(&["pause"]));
            p.children
                .iter()
                .filter(paused)
                .find_map(mtu_of)
                .or_else(|| p.children.iter().filter_map(mtu_of).max_by_key(|m| m.0))
        })
    });
    w.section("port_defaults", false);
    w.value(
        "speed_gbps",
        100,
        "no `speed` in the configuration: 100 Gb/s assumed",
    );
    w.value(
        "cable_m",
        5,
        "NX-OS configurations hold no cable length: 5 m assumed",
    );
    if let Some((mtu, src)) = &lossless_mtu {
        w.value("mtu", mtu, src);
    }
    for i in &interfaces {
        w.section("ports", true);
        w.value("name", super::toml_string(&i.words[1]), &at(i));
        if let Some(s) = i.children.iter().find(|c| c.starts(&["speed"])) {
            match word_of(s, 1) {
                // Negotiated: the configuration does not say; the port defaults stand.
                "auto" => w.warn(
                    at(s),
                    "speed auto: the negotiated speed is not in the configuration; the port defaults' speed is used",
                ),
                word => {
                    // A whole number of Mb/s: `-100000` or `2.5` is not NX-OS.
                    let mbps: u64 = word.parse().map_err(|_| {
                        val_err(s, "speed is a whole number of Mb/s, e.g. 100000, or auto")
                    })?;
                    w.value(
                        "speed_gbps",
                        num(mbps as f64 / 1000.0),
                        &format!("{} (Mb/s)", at(s)),
                    );
                }
            }
        }
        if let Some(m) = i.children.iter().find(|c| c.starts(&["mtu"])) {
            let mtu: u32 = word_of(m, 1)
                .parse()
                .map_err(|_| val_err(m, "mtu is a number of bytes, e.g. 9216"))?;
            w.value("mtu", mtu, &at(m));
        }
        let mode = i
            .children
            .iter()
            .find(|c| c.starts(&["priority-flow-control", "mode"]))
            .map(|c| (word_of(c, 2).to_owned(), at(c)));
        match mode {
            Some((m, _)) if m == "on" => {}
            Some((m, src)) => w.warn(
                src,
                format!(
                    "PFC mode {m} on {}: rocelab runs PFC on every port as if `mode on`",
                    i.words[1]
                ),
            ),
            None => w.warn(
                at(i),
                format!(
                    "{} has no `priority-flow-control mode on`: rocelab runs PFC on every port",
                    i.words[1]
                ),
            ),
        }
        let system_queuing = service(&["queuing", "output"]).map(|(policy, _)| policy);
        interface_qos_left_out(
            &mut w,
            i,
            wd_on.as_ref().map(|(on, _)| *on),
            system_queuing.as_deref(),
        );
    }
    // Classification maps.
    if input.is_some() {
        w.section("classify", false);
        let pairs: Vec<String> = dscp_tc
            .iter()
            .enumerate()
            .filter_map(|(d, t)| {
                t.as_ref()
                    .filter(|(g, _)| *g != default_tc.0)
                    .map(|(g, _)| format!("[{d}, {g}]"))
            })
            .collect();
        let sources: Vec<String> = {
            let mut s: Vec<String> = dscp_tc
                .iter()
                .flatten()
                .map(|(_, src)| src.clone())
                .collect();
            s.dedup();
            if s.is_empty() {
                s.push("no `match dscp` in the qos policy's class-maps".to_owned());
            }
            s
        };
        w.value(
            "dscp_to_tc",
            format!("[{}]", pairs.join(", ")),
            &sources.join("; "),
        );
        w.value("default_tc", default_tc.0, &default_tc.1);
        w.value(
            "tc_to_queue",
            "[0, 1, 2, 3, 4, 5, 6, 7]",
            "qos-group N is queue c-out-8q-qN",
        );
    }
    // PFC.
    let mut lossless: Vec<u32> = Vec::new();
    let mut pfc_source = "no network-qos policy with `pause pfc-cos`: no lossless class".to_owned();
    if let Some((n, via)) = service(&["network-qos"]) {
        let p = network.get(&n).ok_or_else(|| ImportError::Value {
            at: via.clone(),
            message: format!("no policy-map type network-qos {n}"),
        })?;
        for class in &p.children {
            for c in &class.children {
                // `pause pfc-cos 3`, or with the buffer on the same line:
                // `pause buffer-size B pause-threshold X resume-threshold Y pfc-cos 3`.
                if c.starts(&["pause"]) {
                    match after(c, "pfc-cos") {
                        Some(list) => {
                            let cos = numbers(c, list, 7)?;
                            // The class's qos-groups: its class-map's, else those of the
                            // Nexus 9000 system class c-8q-nqN (qos-group N).
                            let cname = word_of(class, 3);
                            let groups =
                                network_classes.get(cname).cloned().or_else(|| {
                                    match cname.strip_prefix("c-8q-nq") {
                                        Some("-default") => Some(vec![0]),
                                        Some(d) => d.parse::<u32>().ok().map(|g| vec![g]),
                                        None => None,
                                    }
                                });
                            if let Some(groups) = groups.filter(|g| {
                                let (mut g, mut c) = (g.clone(), cos.clone());
                                g.sort_unstable();
                                c.sort_unstable();
                                g != c
                            }) {
                                return Err(val_err(
                                    c,
                                    format!(
                                        "class {cname} carries qos-group {groups:?} and pauses CoS {cos:?}: rocelab pauses a traffic class by its own number, so the two must be the same (set the qos-group or pfc-cos to match)"
                                    ),
                                ));
                            }
                            lossless.extend(cos);
                            pfc_source = at(c);
                        }
                        None if c.words.iter().any(|x| x == "pfc-cos") => {
                            return Err(val_err(c, "pfc-cos needs a list of CoS values, e.g. 3"));
                        }
                        None => {}
                    }
                    if c.starts(&["pause", "buffer-size"]) {
                        let (pause, resume) =
                            (after(c, "pause-threshold"), after(c, "resume-threshold"));
                        if let (Some(p), Some(r)) = (
                            pause.and_then(|p| p.parse::<u64>().ok()),
                            resume.and_then(|r| r.parse::<u64>().ok()),
                        ) && r > p
                        {
                            w.warn(at(c), format!("resume-threshold {r} is above pause-threshold {p}: XON above XOFF, the class would resume before it paused"));
                        } else {
                            w.warn(at(c), "pause buffer-size and thresholds are not imported: rocelab computes headroom from the cable and uses its dynamic XOFF threshold");
                        }
                    } else if !c.starts(&["pause", "pfc-cos"]) {
                        w.warn(at(c), "network-qos command not imported");
                    }
                } else if !c.starts(&["mtu"]) {
                    w.warn(at(c), "network-qos command not imported");
                }
            }
        }
    }
    lossless.sort_unstable();
    lossless.dedup();
    w.section("pfc", false);
    w.value("lossless", format!("{lossless:?}"), &pfc_source);
    w.value(
        "pause_quanta",
        65535,
        "NX-OS does not let the pause time be set",
    );
    w.section("buffer", false);
    w.value(
        "shared_bytes",
        41943040,
        "NX-OS sizes buffers itself: rocelab's nexus-ai value (40 MiB)",
    );
    w.value("threshold", "\"dynamic\"", "nexus-ai preset");
    w.value("pg_alpha", 1, "nexus-ai preset");
    w.value("queue_alpha", "0.5", "nexus-ai preset");
    for p in &lossless {
        w.section(&format!("pg.{p}"), false);
        w.value(
            "xon_offset_bytes",
            2496,
            "nexus-ai preset; headroom computed from speed, cable and MTU",
        );
    }
    // Queuing.
    let mut queues_written: Vec<u32> = Vec::new();
    if let Some((n, via)) = service(&["queuing", "output"]) {
        let p = queuing.get(&n).ok_or_else(|| ImportError::Value {
            at: via.clone(),
            message: format!("no policy-map type queuing {n}"),
        })?;
        let mut zero = false;
        for class in p
            .children
            .iter()
            .filter(|c| c.starts(&["class", "type", "queuing"]))
        {
            let cname = word_of(class, 3);
            let q = match cname.strip_prefix("c-out-8q-q") {
                Some("-default") => 0,
                Some(d) => one_number(class, d, 7)?,
                None => {
                    w.warn(
                        at(class),
                        "not an 8-queue class (c-out-8q-qN): not imported",
                    );
                    continue;
                }
            };
            w.section(&format!("queue.{q}"), false);
            queues_written.push(q);
            for c in &class.children {
                if c.starts(&["priority", "level"]) {
                    w.value("schedule", "\"strict\"", &at(c));
                    if word_of(c, 2) != "1" {
                        w.warn(
                            at(c),
                            "priority levels above 1: rocelab orders strict queues by queue number",
                        );
                    }
                } else if c.starts(&["bandwidth", "remaining", "percent"]) {
                    let pct = parse_u64(c, word_of(c, 3))?;
                    if pct > 100 {
                        return Err(val_err(c, format!("{pct} is not a percent, 0 to 100")));
                    }
                    w.value("schedule", "\"dwrr\"", &at(c));
                    w.value(
                        "weight",
                        pct.max(1),
                        &if pct == 0 {
                            zero = true;
                            format!("{} (0 % as weight 1)", at(c))
                        } else {
                            at(c)
                        },
                    );
                } else if c.starts(&["random-detect", "minimum-threshold"]) {
                    let words: Vec<&str> = c.words.iter().map(String::as_str).collect();
                    let kmin = bytes(
                        c,
                        words.get(2).copied().unwrap_or(""),
                        words.get(3).copied().unwrap_or(""),
                    )?;
                    let kmax = bytes(
                        c,
                        words.get(5).copied().unwrap_or(""),
                        words.get(6).copied().unwrap_or(""),
                    )?;
                    let prob: f64 = after(c, "drop-probability")
                        .and_then(|p| p.parse().ok())
                        .filter(|p| (0.0..=100.0).contains(p))
                        .ok_or_else(|| {
                            val_err(c, "drop-probability must be a percent, 0 to 100")
                        })?;
                    if after(c, "weight").is_some_and(|w| w != "0") {
                        w.warn(at(c), "a non-zero weight averages the queue depth: rocelab's RED uses the instantaneous depth (weight 0)");
                    }
                    if !c.words.iter().any(|x| x == "ecn") {
                        w.warn(at(c), "WRED without `ecn`: rocelab's profile marks ECT frames (and drops Not-ECT ones on lossy queues)");
                    }
                    w.value(
                        "ecn",
                        format!(
                            "{{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = {} }}",
                            num(prob / 100.0)
                        ),
                        &format!("{} (kbytes = {KBYTE} B)", at(c)),
                    );
                } else {
                    w.warn(at(c), "queuing command not imported");
                }
            }
        }
        if zero {
            w.warn(via, "queues at `bandwidth remaining percent 0` are imported with weight 1: they still drain, slowly, when others are busy");
        }
    }
    // A lossless queue no queuing class names: the running-config leaves out the default
    // queuing policy (and the classes a policy does not list), so the switch schedules it
    // by its default. rocelab needs a section for a lossless queue and takes its own.
    for &q in &lossless {
        if !queues_written.contains(&q) {
            w.section(&format!("queue.{q}"), false);
            w.value(
                "schedule",
                "\"dwrr\"",
                &format!("no class c-out-8q-q{q}: rocelab's default, DWRR weight 1"),
            );
            w.warn(
                format!("class type queuing c-out-8q-q{q}"),
                format!(
                    "lossless queue {q} has no queuing class in the configuration (the default queuing policy is not listed in a running-config): rocelab gives it DWRR weight 1 and no ECN"
                ),
            );
        }
    }
    // Watchdog.
    if let Some((on, src)) = wd_on {
        w.section("watchdog", false);
        w.value("enabled", on, &src);
        let get = |k: &str, d: u64| {
            wd.get(k)
                .map_or((d, format!("default {d}")), |(v, s)| (*v, s.clone()))
        };
        let (interval, isrc) = get("interval", 100);
        let (shutdown, ssrc) = get("shutdown", 1);
        let (restore, rsrc) = get("restore", 10);
        if on {
            // No time to detect a storm in: no sensible reading.
            for (value, src, what) in [
                (interval, &isrc, "interval"),
                (shutdown, &ssrc, "shutdown-multiplier"),
            ] {
                if value == 0 {
                    return Err(ImportError::Value {
                        at: src.clone(),
                        message: format!(
                            "watch-dog {what} 0 gives no detection time: the queue would be shut at once; give 1 or more"
                        ),
                    });
                }
            }
        }
        // An auto-restore multiplier of 0 gives no restoration time; rocelab always
        // restores once the pauses stop, and waits its longest for it.
        let restoration_ms = if restore == 0 {
            if on {
                w.warn(
                    &rsrc,
                    format!("auto-restore multiplier 0 gives no restoration time: rocelab always restores once pauses stop, and waits its longest, {MAX_RESTORATION_MS} ms, instead"),
                );
            }
            MAX_RESTORATION_MS
        } else {
            interval * restore
        };
        if on {
            w.value(
                "detection_ms",
                interval * shutdown,
                &format!("interval x shutdown-multiplier ({isrc}; {ssrc})"),
            );
            w.value(
                "restoration_ms",
                restoration_ms,
                &if restore == 0 {
                    format!("auto-restore multiplier 0 ({rsrc}): rocelab's longest")
                } else {
                    format!("interval x auto-restore multiplier ({isrc}; {rsrc})")
                },
            );
            w.value(
                "poll_ms",
                interval,
                &format!("the watchdog interval ({isrc})"),
            );
            w.value(
                "action",
                "\"drop\"",
                "NX-OS drops a stormed no-drop queue's frames",
            );
        }
    }
    w.finish(&format!(
        "# Imported from NX-OS running-config {} by `rocelab config import nxos`.\n\
         # Each comment names the line a value came from.",
        super::one_line(name)
    ))
}

/// DSCP → (qos-group, the source that sets it), as the qos policy's classes give it.
type DscpGroups = [Option<(u32, String)>; 64];

/// The qos input policy that classifies every port, and where it is applied: the one
/// under `system qos` (`system`), else the one the interfaces apply, as Cisco's AI/ML
/// blueprint does on each `interface EthernetX/Y`. rocelab has one classification for the
/// whole switch, so an interface that applies another policy (or, without a system
/// policy, none) is warned about; the policy most interfaces apply is taken.
fn input_policy(
    system: Option<(String, String)>,
    interfaces: &[&Block],
    w: &mut Writer,
) -> Option<(String, String)> {
    let applied: Vec<(&Block, Option<&Block>)> = interfaces
        .iter()
        .map(|i| {
            let c = i
                .children
                .iter()
                .find(|c| c.starts(&["service-policy", "type", "qos", "input"]));
            (*i, c)
        })
        .collect();
    let name = |c: &Block| c.words.last().cloned().unwrap_or_default();
    let from_system = system.is_some();
    let (policy, via) = match system {
        Some(s) => s,
        None => {
            let names: Vec<String> = applied.iter().filter_map(|(_, c)| c.map(name)).collect();
            let common = super::most_common(&names)?;
            let first = applied
                .iter()
                .find_map(|(_, c)| c.filter(|c| name(c) == common))?;
            let n = names.iter().filter(|n| **n == common).count();
            let via = format!(
                "{} (applied on {n} of {} interfaces)",
                at(first),
                interfaces.len()
            );
            (common, via)
        }
    };
    for (i, c) in &applied {
        let iface = &i.words[1];
        match c {
            Some(c) if name(c) != policy && from_system => w.warn(
                at(c),
                format!(
                    "{iface} classifies by {}, not the system policy {policy}: rocelab classifies every port by {policy}",
                    name(c)
                ),
            ),
            Some(c) if name(c) != policy => w.warn(
                at(c),
                format!(
                    "{iface} classifies by {}, other interfaces by {policy}: rocelab has one classification for every port and takes {policy}, which most interfaces apply",
                    name(c)
                ),
            ),
            None if !from_system => w.warn(
                at(i),
                format!(
                    "{iface} applies no qos input policy, so the switch puts all its traffic in class-default (qos-group 0): rocelab has one classification for every port and classifies it by {policy}"
                ),
            ),
            _ => {}
        }
    }
    Some((policy, via))
}

/// DSCP → qos-group by the classes of qos policy `policy` (applied at `via`), first match
/// wins, and class-default's qos-group with its source.
fn classes(
    policy: &str,
    via: &str,
    qos_policies: &BTreeMap<String, &Block>,
    class_maps: &BTreeMap<String, (Vec<u32>, &Block)>,
) -> Result<(DscpGroups, (u32, String)), ImportError> {
    let p = qos_policies.get(policy).ok_or_else(|| ImportError::Value {
        at: via.to_owned(),
        message: format!("no policy-map type qos {policy}"),
    })?;
    let mut dscp_tc: DscpGroups = std::array::from_fn(|_| None);
    let mut default_tc = (0u32, "class-default absent: qos-group 0".to_owned());
    for class in p.children.iter().filter(|c| c.starts(&["class"])) {
        let cname = class.words.last().cloned().unwrap_or_default();
        let Some(set) = class
            .children
            .iter()
            .find(|c| c.starts(&["set", "qos-group"]))
        else {
            continue;
        };
        let group = one_number(set, word_of(set, 2), 7)?;
        if cname == "class-default" {
            default_tc = (group, at(set));
            continue;
        }
        let (dscps, _) = class_maps
            .get(&cname)
            .ok_or_else(|| val_err(class, format!("no class-map type qos {cname}")))?;
        for &d in dscps {
            if dscp_tc[d as usize].is_none() {
                dscp_tc[d as usize] = Some((group, format!("{} -> {}", cname, at(set))));
            }
        }
    }
    Ok((dscp_tc, default_tc))
}

/// Warns about the QoS commands of interface `i` that rocelab does not take per port (it
/// took its speed, MTU, PFC mode and classification policy): a watchdog setting other
/// than the system's (rocelab watches every port or none), a queuing policy other than
/// the system's, and any other QoS command. `system_watchdog` is the system's
/// `watch-dog-interval` (`None`: not set, off), `system_queuing` its queuing policy.
fn interface_qos_left_out(
    w: &mut Writer,
    i: &Block,
    system_watchdog: Option<bool>,
    system_queuing: Option<&str>,
) {
    let iface = &i.words[1];
    for c in &i.children {
        if c.starts(&["description"])
            || c.starts(&["speed"])
            || c.starts(&["mtu"])
            || c.starts(&["priority-flow-control", "mode"])
            || c.starts(&["service-policy", "type", "qos", "input"])
        {
            continue;
        }
        if c.starts(&["priority-flow-control", "watch-dog-interval"]) {
            let on = word_of(c, 2) == "on";
            let system = system_watchdog.unwrap_or(false);
            if on != system {
                w.warn(
                    at(c),
                    format!(
                        "the PFC watchdog is {} on {iface} and {} for the system: rocelab watches every port or none, as the system setting says",
                        if on { "on" } else { "off" },
                        if system { "on" } else { "off" },
                    ),
                );
            }
        } else if c.starts(&["service-policy", "type", "queuing", "output"]) {
            let other = c.words.last().cloned().unwrap_or_default();
            match system_queuing {
                Some(policy) if policy == other => {}
                Some(policy) => w.warn(
                    at(c),
                    format!(
                        "{iface} queues by {other}, not the system policy {policy}: rocelab queues every port by {policy}"
                    ),
                ),
                None => w.warn(
                    at(c),
                    format!(
                        "{iface} queues by {other}: per-port queuing policies are not imported (no system queuing policy either: rocelab's defaults)"
                    ),
                ),
            }
        } else if qos_related(c) {
            w.warn(
                at(c),
                format!("QoS command on {iface} not imported: rocelab has no per-port equivalent"),
            );
        }
    }
}

fn word_of(b: &Block, i: usize) -> &str {
    b.words.get(i).map(String::as_str).unwrap_or("")
}

fn parse_u64(b: &Block, s: &str) -> Result<u64, ImportError> {
    s.parse()
        .map_err(|_| val_err(b, format!("'{s}' is not a whole number")))
}

/// Top-level commands that are about QoS, which an importer must not drop silently.
fn qos_related(b: &Block) -> bool {
    let t = b.text();
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
