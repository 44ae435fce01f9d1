//! SONiC CONFIG_DB (`config_db.json`) to rocelab TOML. docs/import.md lists every table
//! and field read, and how each maps; both the plain-name references of SONiC 202111 and
//! later (`"profile": "egress_lossy_profile"`) and the older bracketed ones
//! (`"[BUFFER_PROFILE|egress_lossy_profile]"`) are read.
//!
//! rocelab has one value per PG and per queue for the whole switch, where SONiC binds
//! profiles per port: when ports differ, the importer takes the value most ports have (the
//! largest headroom, so that every port is covered) and says which ports differ.
//!
//! `config_db` reads the document into typed records (ports, buffer profiles, queue
//! bindings, maps); the other files each resolve one part of rocelab's configuration
//! from them, in the order the TOML is written.

mod buffers;
mod classify;
mod config_db;
mod ports;
mod queues;
mod watchdog;

use super::{ImportError, Imported, Writer};
use config_db::{Doc, KNOWN, NOT_NEEDED, scalars_as_strings};
use serde_json::Value;

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
    let ports = ports::ports(&doc, &mut w)?;
    ports::beyond_eight(&doc, &mut w)?;
    let (tc_pg, tc_queue) = classify::classification(&doc, &ports, &mut w)?;
    let lossless = classify::pfc(&doc, &ports, tc_pg, &mut w)?;
    buffers::buffers(&doc, &ports, &lossless, &mut w)?;
    queues::queues(&doc, &ports, &lossless, tc_queue, &mut w)?;
    watchdog::watchdog(&doc, &mut w)?;
    w.finish(&format!(
        "# Imported from SONiC CONFIG_DB {} by `rocelab config import sonic`.\n\
         # Each comment names the TABLE|key|field a value came from.",
        super::one_line(name)
    ))
}
