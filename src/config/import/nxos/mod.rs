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
//!
//! Two steps: `parse` reads the text into what it says (`model`), `resolve` turns that
//! into rocelab's configuration.

mod model;
mod parse;
mod resolve;

use super::{ImportError, Imported};

/// Reads a running-config (called `name` in the header).
pub fn import(text: &str, name: &str) -> Result<Imported, ImportError> {
    let rc = parse::running_config(text)?;
    // Nothing of QoS at all: not an NX-OS running-config's QoS (an empty file, a SONiC
    // JSON, a rocelab TOML), which would otherwise import as the defaults, exit 0.
    if !rc.has_qos() {
        let holds = if rc.skipped.is_empty() {
            String::new()
        } else {
            let first: Vec<&str> = rc.skipped.iter().take(5).map(String::as_str).collect();
            format!("; it holds {}", first.join(", "))
        };
        return Err(ImportError::Syntax(format!(
            "{name}: no NX-OS QoS configuration in it (class-map type qos, policy-map, system qos, priority-flow-control watch-dog): give the output of `show running-config`{holds}"
        )));
    }
    resolve::resolve(&rc, name)
}
