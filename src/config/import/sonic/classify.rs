//! Classification and PFC: the maps PORT_QOS_MAP names, as one for every port, and the
//! lossless priorities.

use super::config_db::{Doc, Port, reference, val_err};
use crate::config::import::{ImportError, Writer, most_common};

/// The map a PORT_QOS_MAP field names: `global` first, else the one most ports name.
pub(super) fn qos_map<'a>(
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
pub(super) type TcPg = (String, String, Vec<Option<u8>>);

/// The classification maps, written; returns the TC_TO_PRIORITY_GROUP_MAP in use and
/// each TC's queue.
pub(super) fn classification(
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

/// `[pfc]`: the priorities PORT_QOS_MAP's `pfc_enable` gives most ports; returns them.
pub(super) fn pfc(
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
