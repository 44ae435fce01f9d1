//! The queues: QUEUE's scheduler and WRED profile per queue, as most ports bind them.

use super::config_db::{Doc, Port, queue_bindings, val_err};
use crate::config::import::{ImportError, Writer, most_common, num};

/// A `[queue.N]` per queue QUEUE binds, and one per lossless queue it does not.
pub(super) fn queues(
    doc: &Doc<'_>,
    ports: &[Port],
    lossless: &[usize],
    queue_of: [usize; 8],
    w: &mut Writer,
) -> Result<(), ImportError> {
    // Queues with a section.
    let mut written: Vec<usize> = Vec::new();
    for q in 0..8 {
        let bound = queue_bindings(doc, ports, q)?;
        let settings: Vec<_> = bound.iter().map(|b| b.setting.clone()).collect();
        let Some(common) = most_common(&settings) else {
            continue;
        };
        let key = bound
            .iter()
            .find(|b| b.setting == common)
            .map(|b| b.key.clone())
            .unwrap_or_default();
        let differ: Vec<&str> = bound
            .iter()
            .filter(|b| b.setting != common)
            .map(|b| b.port.as_str())
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
            scheduler(doc, s, &key, w)?;
        }
        if let Some(p) = &common.1 {
            wred(doc, p, q, &key, w)?;
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

/// The queue's `schedule` and `weight` from SCHEDULER entry `s` (bound by QUEUE `key`).
fn scheduler(doc: &Doc<'_>, s: &str, key: &str, w: &mut Writer) -> Result<(), ImportError> {
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
    Ok(())
}

/// Queue `q`'s `ecn` from WRED_PROFILE entry `p` (bound by QUEUE `key`), when it marks
/// green frames.
fn wred(doc: &Doc<'_>, p: &str, q: usize, key: &str, w: &mut Writer) -> Result<(), ImportError> {
    let src = format!("WRED_PROFILE|{p}");
    let ecn = doc.field("WRED_PROFILE", p, "ecn").unwrap_or("ecn_none");
    let green = doc.field("WRED_PROFILE", p, "wred_green_enable") != Some("false");
    if ecn == "ecn_none" || !ecn.contains("green") && ecn != "ecn_all" {
        w.warn(
        format!("{src}|ecn"),
        format!("ecn '{ecn}' does not mark green frames: rocelab imports no ECN profile for queue {q}"),
    );
        return Ok(());
    }
    if !green {
        w.warn(
        format!("{src}|wred_green_enable"),
        format!("wred_green_enable is false: green frames are neither marked nor dropped, and rocelab imports no ECN profile for queue {q}"),
    );
        return Ok(());
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
    Ok(())
}
