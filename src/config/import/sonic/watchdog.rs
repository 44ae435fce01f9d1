//! The PFC watchdog: PFC_WD, one setting for every port.

use super::config_db::{Doc, val_err};
use crate::config::import::{ImportError, Writer, most_common};

/// `[watchdog]` from PFC_WD, as most ports have it; every port's values are checked.
pub(super) fn watchdog(doc: &Doc<'_>, w: &mut Writer) -> Result<(), ImportError> {
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
    let field_of = |pick: fn(&Setting) -> &String| {
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
    unwatched(doc, &ports, w);
    // Every port's values are checked, not only those taken.
    for (p, setting) in ports.iter().zip(&all) {
        check(p, setting)?;
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

/// PFC_WD's (action, detection_time, restoration_time) of one port.
type Setting = (String, String, String);

/// Warns about the ports PFC_WD has no entry for (`watched` are those it has).
fn unwatched(doc: &Doc<'_>, watched: &[&String], w: &mut Writer) {
    let unwatched: Vec<&str> = doc
        .table("PORT")
        .map(|t| {
            t.keys()
                .filter(|p| !watched.contains(p))
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
}

/// Port `p`'s watchdog setting reads: its times are ms, its action one rocelab has.
fn check(p: &str, (action, detection, restoration): &Setting) -> Result<(), ImportError> {
    ms("detection_time", detection, p)?;
    ms("restoration_time", restoration, p)?;
    if !["drop", "forward", "alert"].contains(&action.to_ascii_lowercase().as_str()) {
        return Err(val_err(
            format!("PFC_WD|{p}|action"),
            format!("'{action}' is not drop, forward or alert"),
        ));
    }
    Ok(())
}

/// PFC_WD entry `at`'s `field`, `s`, as whole ms.
fn ms(field: &str, s: &str, at: &str) -> Result<u64, ImportError> {
    s.trim().parse().map_err(|_| {
        val_err(
            format!("PFC_WD|{at}|{field}"),
            format!("'{s}' is not a time in ms"),
        )
    })
}
