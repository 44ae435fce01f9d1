//! A running-config's QoS model to rocelab's configuration: one classification for the
//! switch, the ports, the lossless classes and the buffer (the nexus-ai preset), the
//! queues and the watchdog, in the order the TOML is written.

use super::model::{Interface, KBYTE, Line, PolicyClass, RunningConfig};
use crate::config::import::{
    ImportError, Imported, Writer, most_common, num, one_line, toml_string,
};

/// rocelab's longest watchdog restoration time, ms (`watchdog.restoration_ms`).
const MAX_RESTORATION_MS: u64 = 3_600_000;

/// DSCP → (qos-group, the source that sets it), as the qos policy's classes give it.
type DscpGroups = [Option<(u32, String)>; 64];

/// The switch's classification: DSCP → qos-group, and class-default's qos-group, each
/// with its source.
struct Classification {
    dscp_tc: DscpGroups,
    default_tc: (u32, String),
}

/// Writes rocelab's configuration for `rc`, read from a file called `name`.
pub(super) fn resolve(rc: &RunningConfig, name: &str) -> Result<Imported, ImportError> {
    let mut w = Writer::default();
    for (source, message) in &rc.notes {
        w.warn(source.clone(), message.clone());
    }
    if !rc.skipped.is_empty() {
        w.warn(
            "(not QoS)",
            format!("not imported: {}", rc.skipped.join(", ")),
        );
    }
    let classification = classification(rc, &mut w)?;
    ports(rc, &mut w)?;
    if let Some(c) = &classification {
        classify(&mut w, c);
    }
    let lossless = lossless_classes(rc, &mut w)?;
    pfc_and_buffer(&mut w, &lossless);
    queuing(rc, &mut w, &lossless.0)?;
    watchdog(rc, &mut w)?;
    w.finish(&format!(
        "# Imported from NX-OS running-config {} by `rocelab config import nxos`.\n\
         # Each comment names the line a value came from.",
        one_line(name)
    ))
}

/// Classification: one qos input policy for every port, class by class, first match
/// wins; `trust` is written when there is one.
fn classification(
    rc: &RunningConfig,
    w: &mut Writer,
) -> Result<Option<Classification>, ImportError> {
    let Some((policy, via)) = input_policy(rc, w) else {
        return Ok(None);
    };
    let c = classes(rc, &policy, &via)?;
    w.root_value("trust", "\"dscp\"", &via);
    Ok(Some(c))
}

/// The qos input policy that classifies every port, and where it is applied: the one
/// under `system qos` (`system`), else the one the interfaces apply, as Cisco's AI/ML
/// blueprint does on each `interface EthernetX/Y`. rocelab has one classification for the
/// whole switch, so an interface that applies another policy (or, without a system
/// policy, none) is warned about; the policy most interfaces apply is taken.
fn input_policy(rc: &RunningConfig, w: &mut Writer) -> Option<(String, String)> {
    let applied: Vec<(&Interface, Option<&Line>)> = rc
        .interfaces
        .iter()
        .map(|i| {
            let c = i
                .commands
                .iter()
                .find(|c| c.starts(&["service-policy", "type", "qos", "input"]));
            (i, c)
        })
        .collect();
    let system = rc.service(&["qos", "input"]);
    let from_system = system.is_some();
    let (policy, via) = match system {
        Some(s) => s,
        None => {
            let names: Vec<String> = applied
                .iter()
                .filter_map(|(_, c)| c.map(Line::last))
                .collect();
            let common = most_common(&names)?;
            let first = applied
                .iter()
                .find_map(|(_, c)| c.filter(|c| c.last() == common))?;
            let n = names.iter().filter(|n| **n == common).count();
            let via = format!(
                "{} (applied on {n} of {} interfaces)",
                first.at(),
                rc.interfaces.len()
            );
            (common, via)
        }
    };
    for (i, c) in &applied {
        other_classification(w, i, *c, &policy, from_system);
    }
    Some((policy, via))
}

/// Warns when interface `i`, whose qos input policy is `applied`, is not classified by
/// `policy` on the switch (the system's when `from_system`, else most interfaces').
fn other_classification(
    w: &mut Writer,
    i: &Interface,
    applied: Option<&Line>,
    policy: &str,
    from_system: bool,
) {
    let iface = i.head.word(1);
    match applied {
        Some(c) if c.last() != policy && from_system => w.warn(
            c.at(),
            format!(
                "{iface} classifies by {}, not the system policy {policy}: rocelab classifies every port by {policy}",
                c.last()
            ),
        ),
        Some(c) if c.last() != policy => w.warn(
            c.at(),
            format!(
                "{iface} classifies by {}, other interfaces by {policy}: rocelab has one classification for every port and takes {policy}, which most interfaces apply",
                c.last()
            ),
        ),
        None if !from_system => w.warn(
            i.head.at(),
            format!(
                "{iface} applies no qos input policy, so the switch puts all its traffic in class-default (qos-group 0): rocelab has one classification for every port and classifies it by {policy}"
            ),
        ),
        _ => {}
    }
}

/// DSCP → qos-group by the classes of qos policy `policy` (applied at `via`), first match
/// wins, and class-default's qos-group with its source.
fn classes(rc: &RunningConfig, policy: &str, via: &str) -> Result<Classification, ImportError> {
    let p = rc
        .qos_policies
        .get(policy)
        .ok_or_else(|| ImportError::Value {
            at: via.to_owned(),
            message: format!("no policy-map type qos {policy}"),
        })?;
    let mut dscp_tc: DscpGroups = std::array::from_fn(|_| None);
    let mut default_tc = (0u32, "class-default absent: qos-group 0".to_owned());
    for class in &p.classes {
        let Some(set) = class
            .commands
            .iter()
            .find(|c| c.starts(&["set", "qos-group"]))
        else {
            continue;
        };
        let group = set.one_number(set.word(2), 7)?;
        if class.name == "class-default" {
            default_tc = (group, set.at());
            continue;
        }
        let map = rc.class_maps.get(&class.name).ok_or_else(|| {
            class
                .head
                .err(format!("no class-map type qos {}", class.name))
        })?;
        for &d in &map.dscps {
            if dscp_tc[d as usize].is_none() {
                dscp_tc[d as usize] = Some((group, format!("{} -> {}", class.name, set.at())));
            }
        }
    }
    Ok(Classification {
        dscp_tc,
        default_tc,
    })
}

/// `[classify]`: the DSCPs whose qos-group is not class-default's.
fn classify(w: &mut Writer, c: &Classification) {
    w.section("classify", false);
    let pairs: Vec<String> = c
        .dscp_tc
        .iter()
        .enumerate()
        .filter_map(|(d, t)| {
            t.as_ref()
                .filter(|(g, _)| *g != c.default_tc.0)
                .map(|(g, _)| format!("[{d}, {g}]"))
        })
        .collect();
    let mut sources: Vec<String> = c
        .dscp_tc
        .iter()
        .flatten()
        .map(|(_, src)| src.clone())
        .collect();
    sources.dedup();
    if sources.is_empty() {
        sources.push("no `match dscp` in the qos policy's class-maps".to_owned());
    }
    w.value(
        "dscp_to_tc",
        format!("[{}]", pairs.join(", ")),
        &sources.join("; "),
    );
    w.value("default_tc", c.default_tc.0, &c.default_tc.1);
    w.value(
        "tc_to_queue",
        "[0, 1, 2, 3, 4, 5, 6, 7]",
        "qos-group N is queue c-out-8q-qN",
    );
}

/// `[port_defaults]` and a `[[ports]]` per Ethernet interface.
fn ports(rc: &RunningConfig, w: &mut Writer) -> Result<(), ImportError> {
    for class in rc.network_policies.values().flat_map(|p| &p.classes) {
        for m in class.commands.iter().filter(|x| x.starts(&["mtu"])) {
            m.mtu()?;
        }
    }
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
    if let Some((mtu, src)) = &lossless_mtu(rc) {
        w.value("mtu", mtu, src);
    }
    let system_watchdog = rc.watchdog.on.as_ref().map(|(on, _)| *on);
    let system_queuing = rc.service(&["queuing", "output"]).map(|(policy, _)| policy);
    for i in &rc.interfaces {
        port(w, i)?;
        interface_qos_left_out(w, i, system_watchdog, system_queuing.as_deref());
    }
    Ok(())
}

/// The port MTU is the lossless class's (the one with `pause pfc-cos`): its frames are
/// what the headroom must hold. Without one, the largest any class gives.
fn lossless_mtu(rc: &RunningConfig) -> Option<(u32, String)> {
    let (n, _) = rc.service(&["network-qos"])?;
    let p = rc.network_policies.get(&n)?;
    let mtu_of = |c: &PolicyClass| {
        c.commands
            .iter()
            .find(|x| x.starts(&["mtu"]))
            .and_then(|x| x.word(1).parse::<u32>().ok().map(|m| (m, x.at())))
    };
    let paused = |c: &&PolicyClass| c.commands.iter().any(|x| x.starts(&["pause"]));
    p.classes
        .iter()
        .filter(paused)
        .find_map(mtu_of)
        .or_else(|| p.classes.iter().filter_map(mtu_of).max_by_key(|m| m.0))
}

/// One `[[ports]]`: the interface's name, speed and MTU; its PFC mode is warned about
/// unless on.
fn port(w: &mut Writer, i: &Interface) -> Result<(), ImportError> {
    let iface = i.head.word(1);
    w.section("ports", true);
    w.value("name", toml_string(iface), &i.head.at());
    if let Some(s) = i.commands.iter().find(|c| c.starts(&["speed"])) {
        match s.word(1) {
            // Negotiated: the configuration does not say; the port defaults stand.
            "auto" => w.warn(
                s.at(),
                "speed auto: the negotiated speed is not in the configuration; the port defaults' speed is used",
            ),
            word => {
                // A whole number of Mb/s: `-100000` or `2.5` is not NX-OS.
                let mbps: u64 = word.parse().map_err(|_| {
                    s.err("speed is a whole number of Mb/s, e.g. 100000, or auto")
                })?;
                w.value(
                    "speed_gbps",
                    num(mbps as f64 / 1000.0),
                    &format!("{} (Mb/s)", s.at()),
                );
            }
        }
    }
    if let Some(m) = i.commands.iter().find(|c| c.starts(&["mtu"])) {
        w.value("mtu", m.mtu()?, &m.at());
    }
    match i
        .commands
        .iter()
        .find(|c| c.starts(&["priority-flow-control", "mode"]))
    {
        Some(c) if c.word(2) == "on" => {}
        Some(c) => w.warn(
            c.at(),
            format!(
                "PFC mode {} on {iface}: rocelab runs PFC on every port as if `mode on`",
                c.word(2)
            ),
        ),
        None => w.warn(
            i.head.at(),
            format!(
                "{iface} has no `priority-flow-control mode on`: rocelab runs PFC on every port"
            ),
        ),
    }
    Ok(())
}

/// Warns about the QoS commands of interface `i` that rocelab does not take per port (it
/// took its speed, MTU, PFC mode and classification policy): a watchdog setting other
/// than the system's (rocelab watches every port or none), a queuing policy other than
/// the system's, and any other QoS command. `system_watchdog` is the system's
/// `watch-dog-interval` (`None`: not set, off), `system_queuing` its queuing policy.
fn interface_qos_left_out(
    w: &mut Writer,
    i: &Interface,
    system_watchdog: Option<bool>,
    system_queuing: Option<&str>,
) {
    let iface = i.head.word(1);
    for c in &i.commands {
        if c.starts(&["description"])
            || c.starts(&["speed"])
            || c.starts(&["mtu"])
            || c.starts(&["priority-flow-control", "mode"])
            || c.starts(&["service-policy", "type", "qos", "input"])
        {
            continue;
        }
        if c.starts(&["priority-flow-control", "watch-dog-interval"]) {
            let on = c.word(2) == "on";
            let system = system_watchdog.unwrap_or(false);
            if on != system {
                w.warn(
                    c.at(),
                    format!(
                        "the PFC watchdog is {} on {iface} and {} for the system: rocelab watches every port or none, as the system setting says",
                        if on { "on" } else { "off" },
                        if system { "on" } else { "off" },
                    ),
                );
            }
        } else if c.starts(&["service-policy", "type", "queuing", "output"]) {
            let other = c.last();
            match system_queuing {
                Some(policy) if policy == other => {}
                Some(policy) => w.warn(
                    c.at(),
                    format!(
                        "{iface} queues by {other}, not the system policy {policy}: rocelab queues every port by {policy}"
                    ),
                ),
                None => w.warn(
                    c.at(),
                    format!(
                        "{iface} queues by {other}: per-port queuing policies are not imported (no system queuing policy either: rocelab's defaults)"
                    ),
                ),
            }
        } else if c.qos_related() {
            w.warn(
                c.at(),
                format!("QoS command on {iface} not imported: rocelab has no per-port equivalent"),
            );
        }
    }
}

/// The lossless CoS values of the system's network-qos policy (its `pause pfc-cos`
/// lines), sorted, with the source of the last.
fn lossless_classes(rc: &RunningConfig, w: &mut Writer) -> Result<(Vec<u32>, String), ImportError> {
    let mut lossless: Vec<u32> = Vec::new();
    let mut pfc_source = "no network-qos policy with `pause pfc-cos`: no lossless class".to_owned();
    if let Some((n, via)) = rc.service(&["network-qos"]) {
        let p = rc
            .network_policies
            .get(&n)
            .ok_or_else(|| ImportError::Value {
                at: via.clone(),
                message: format!("no policy-map type network-qos {n}"),
            })?;
        for class in &p.classes {
            for c in &class.commands {
                if c.starts(&["pause"]) {
                    if let Some(cos) = paused_cos(rc, class, c)? {
                        lossless.extend(cos);
                        pfc_source = c.at();
                    }
                    pause_buffer(w, c);
                } else if !c.starts(&["mtu"]) {
                    w.warn(c.at(), "network-qos command not imported");
                }
            }
        }
    }
    lossless.sort_unstable();
    lossless.dedup();
    Ok((lossless, pfc_source))
}

/// The CoS values a `pause` line of network-qos class `class` pauses: `pause pfc-cos 3`,
/// or with the buffer on the same line, `pause buffer-size B pause-threshold X
/// resume-threshold Y pfc-cos 3`. They must be the class's qos-groups.
fn paused_cos(
    rc: &RunningConfig,
    class: &PolicyClass,
    c: &Line,
) -> Result<Option<Vec<u32>>, ImportError> {
    let Some(list) = c.after("pfc-cos") else {
        if c.words.iter().any(|x| x == "pfc-cos") {
            return Err(c.err("pfc-cos needs a list of CoS values, e.g. 3"));
        }
        return Ok(None);
    };
    let cos = c.numbers(list, 7)?;
    // The class's qos-groups: its class-map's, else those of the Nexus 9000 system class
    // c-8q-nqN (qos-group N).
    let cname = &class.name;
    let groups =
        rc.network_classes
            .get(cname)
            .cloned()
            .or_else(|| match cname.strip_prefix("c-8q-nq") {
                Some("-default") => Some(vec![0]),
                Some(d) => d.parse::<u32>().ok().map(|g| vec![g]),
                None => None,
            });
    if let Some(groups) = groups.filter(|g| {
        let (mut g, mut c) = (g.clone(), cos.clone());
        g.sort_unstable();
        c.sort_unstable();
        g != c
    }) {
        return Err(c.err(format!(
            "class {cname} carries qos-group {groups:?} and pauses CoS {cos:?}: rocelab pauses a traffic class by its own number, so the two must be the same (set the qos-group or pfc-cos to match)"
        )));
    }
    Ok(Some(cos))
}

/// Warns about what a `pause` line gives that rocelab does not take: its buffer size and
/// thresholds (rocelab computes headroom and uses its dynamic XOFF), or anything but
/// `pfc-cos`.
fn pause_buffer(w: &mut Writer, c: &Line) {
    if c.starts(&["pause", "buffer-size"]) {
        let (pause, resume) = (c.after("pause-threshold"), c.after("resume-threshold"));
        if let (Some(p), Some(r)) = (
            pause.and_then(|p| p.parse::<u64>().ok()),
            resume.and_then(|r| r.parse::<u64>().ok()),
        ) && r > p
        {
            w.warn(c.at(), format!("resume-threshold {r} is above pause-threshold {p}: XON above XOFF, the class would resume before it paused"));
        } else {
            w.warn(c.at(), "pause buffer-size and thresholds are not imported: rocelab computes headroom from the cable and uses its dynamic XOFF threshold");
        }
    } else if !c.starts(&["pause", "pfc-cos"]) {
        w.warn(c.at(), "network-qos command not imported");
    }
}

/// `[pfc]`, `[buffer]` and a `[pg.N]` per lossless class: NX-OS sizes buffers and pause
/// thresholds itself, so they are rocelab's nexus-ai preset.
fn pfc_and_buffer(w: &mut Writer, (lossless, pfc_source): &(Vec<u32>, String)) {
    w.section("pfc", false);
    w.value("lossless", format!("{lossless:?}"), pfc_source);
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
    for p in lossless {
        w.section(&format!("pg.{p}"), false);
        w.value(
            "xon_offset_bytes",
            2496,
            "nexus-ai preset; headroom computed from speed, cable and MTU",
        );
    }
}

/// A `[queue.N]` per class of the system's queuing policy, and one for each lossless
/// queue it does not name.
fn queuing(rc: &RunningConfig, w: &mut Writer, lossless: &[u32]) -> Result<(), ImportError> {
    let mut queues_written: Vec<u32> = Vec::new();
    if let Some((n, via)) = rc.service(&["queuing", "output"]) {
        let p = rc
            .queuing_policies
            .get(&n)
            .ok_or_else(|| ImportError::Value {
                at: via.clone(),
                message: format!("no policy-map type queuing {n}"),
            })?;
        let mut zero = false;
        for class in &p.classes {
            let q = match class.name.strip_prefix("c-out-8q-q") {
                Some("-default") => 0,
                Some(d) => class.head.one_number(d, 7)?,
                None => {
                    w.warn(
                        class.head.at(),
                        "not an 8-queue class (c-out-8q-qN): not imported",
                    );
                    continue;
                }
            };
            w.section(&format!("queue.{q}"), false);
            queues_written.push(q);
            for c in &class.commands {
                zero |= queuing_command(w, c)?;
            }
        }
        if zero {
            w.warn(via, "queues at `bandwidth remaining percent 0` are imported with weight 1: they still drain, slowly, when others are busy");
        }
    }
    // A lossless queue no queuing class names: the running-config leaves out the default
    // queuing policy (and the classes a policy does not list), so the switch schedules it
    // by its default. rocelab needs a section for a lossless queue and takes its own.
    for &q in lossless {
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
    Ok(())
}

/// One command of a queuing class; true for `bandwidth remaining percent 0`.
fn queuing_command(w: &mut Writer, c: &Line) -> Result<bool, ImportError> {
    if c.starts(&["priority", "level"]) {
        w.value("schedule", "\"strict\"", &c.at());
        if c.word(2) != "1" {
            w.warn(
                c.at(),
                "priority levels above 1: rocelab orders strict queues by queue number",
            );
        }
    } else if c.starts(&["bandwidth", "remaining", "percent"]) {
        let pct = c.u64(c.word(3))?;
        if pct > 100 {
            return Err(c.err(format!("{pct} is not a percent, 0 to 100")));
        }
        w.value("schedule", "\"dwrr\"", &c.at());
        let source = if pct == 0 {
            format!("{} (0 % as weight 1)", c.at())
        } else {
            c.at()
        };
        w.value("weight", pct.max(1), &source);
        return Ok(pct == 0);
    } else if c.starts(&["random-detect", "minimum-threshold"]) {
        random_detect(w, c)?;
    } else {
        w.warn(c.at(), "queuing command not imported");
    }
    Ok(false)
}

/// `random-detect minimum-threshold N U maximum-threshold N U drop-probability P weight W
/// ecn` as the queue's `ecn`.
fn random_detect(w: &mut Writer, c: &Line) -> Result<(), ImportError> {
    let kmin = c.bytes(c.word(2), c.word(3))?;
    let kmax = c.bytes(c.word(5), c.word(6))?;
    let prob: f64 = c
        .after("drop-probability")
        .and_then(|p| p.parse().ok())
        .filter(|p| (0.0..=100.0).contains(p))
        .ok_or_else(|| c.err("drop-probability must be a percent, 0 to 100"))?;
    if c.after("weight").is_some_and(|w| w != "0") {
        w.warn(c.at(), "a non-zero weight averages the queue depth: rocelab's RED uses the instantaneous depth (weight 0)");
    }
    if !c.words.iter().any(|x| x == "ecn") {
        w.warn(c.at(), "WRED without `ecn`: rocelab's profile marks ECT frames (and drops Not-ECT ones on lossy queues)");
    }
    w.value(
        "ecn",
        format!(
            "{{ kmin_bytes = {kmin}, kmax_bytes = {kmax}, pmax = {} }}",
            num(prob / 100.0)
        ),
        &format!("{} (kbytes = {KBYTE} B)", c.at()),
    );
    Ok(())
}

/// `[watchdog]`, when the system sets `watch-dog-interval`: detection is interval x
/// shutdown-multiplier, restoration interval x auto-restore multiplier.
fn watchdog(rc: &RunningConfig, w: &mut Writer) -> Result<(), ImportError> {
    let wd = &rc.watchdog;
    let Some((on, src)) = &wd.on else {
        return Ok(());
    };
    let on = *on;
    w.section("watchdog", false);
    w.value("enabled", on, src);
    let get = |v: &Option<(u64, String)>, d: u64| {
        v.as_ref()
            .map_or((d, format!("default {d}")), |(v, s)| (*v, s.clone()))
    };
    let (interval, isrc) = get(&wd.interval_ms, 100);
    let (shutdown, ssrc) = get(&wd.shutdown_multiplier, 1);
    let (restore, rsrc) = get(&wd.restore_multiplier, 10);
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
    if !on {
        return Ok(());
    }
    // An auto-restore multiplier of 0 gives no restoration time; rocelab always
    // restores once the pauses stop, and waits its longest for it.
    let restoration_ms = if restore == 0 {
        w.warn(
            &rsrc,
            format!("auto-restore multiplier 0 gives no restoration time: rocelab always restores once pauses stop, and waits its longest, {MAX_RESTORATION_MS} ms, instead"),
        );
        MAX_RESTORATION_MS
    } else {
        watchdog_ms(
            (interval, &isrc),
            (restore, &rsrc),
            "auto-restore multiplier",
        )?
    };
    let detection_ms = watchdog_ms((interval, &isrc), (shutdown, &ssrc), "shutdown-multiplier")?;
    w.value(
        "detection_ms",
        detection_ms,
        &format!("interval x shutdown-multiplier ({isrc}; {ssrc})"),
    );
    let restoration_source = if restore == 0 {
        format!("auto-restore multiplier 0 ({rsrc}): rocelab's longest")
    } else {
        format!("interval x auto-restore multiplier ({isrc}; {rsrc})")
    };
    w.value("restoration_ms", restoration_ms, &restoration_source);
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
    Ok(())
}

/// The watchdog interval times a multiplier, in ms; a product past what a u64 holds is
/// refused with both lines (it once overflowed: a panic, or in a release build a wrapped
/// time).
fn watchdog_ms(
    (interval, isrc): (u64, &str),
    (multiplier, msrc): (u64, &str),
    what: &str,
) -> Result<u64, ImportError> {
    interval
        .checked_mul(multiplier)
        .ok_or_else(|| ImportError::Value {
            at: format!("{isrc}; {msrc}"),
            message: format!(
                "interval {interval} ms x {what} {multiplier} is more milliseconds than rocelab can count; it takes 1 to {MAX_RESTORATION_MS} ms"
            ),
        })
}
