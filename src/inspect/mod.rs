//! `rocelab inspect`: a RoCE-aware capture inspector.
//!
//! Reads a pcap or pcapng file, decodes every frame (Ethernet, 802.1Q, IPv4/IPv6, UDP,
//! BTH and its extended headers, CNP, PFC, PAUSE), verifies every RoCE ICRC, and sums up
//! per QP and per priority. Output is a table or JSON lines.

pub mod filter;
pub mod record;
pub mod summary;
mod table;

pub use record::FrameRecord;
pub use summary::Summary;

use crate::capture::{CaptureError, CaptureReader};
use crate::time::Nanos;
use std::io::{self, Read, Write};

/// How `rocelab inspect` prints: a table for people or JSON lines for programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// A table per frame, then the summary.
    Table,
    /// One JSON object per frame per line, then `{"summary": {...}}`.
    Json,
}

/// Why inspecting stopped early.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// The capture is truncated or corrupt (what was read before has been printed).
    #[error("{error}")]
    Capture {
        /// What is wrong and where.
        error: CaptureError,
        /// Frames read (and printed) before it.
        frames_read: u64,
    },
    /// Writing the output failed.
    #[error("writing the output failed: {0}")]
    Output(#[from] io::Error),
    /// A `port=` filter term names no interface of the capture (nothing was printed).
    #[error(
        "--filter port={port}: the capture has no interface {port}; its interfaces: {}",
        interfaces.join(", ")
    )]
    UnknownPort {
        /// The term's name or id.
        port: String,
        /// The capture's interfaces: `eth0 (id 0)`, or `id 0 (no name)`.
        interfaces: Vec<String>,
    },
}

/// The `schema` of every line of `inspect --json`.
pub const SCHEMA: &str = "rocelab.inspect/1";

/// One line of `inspect --json`: the frame's record with what a reader needs to take it
/// alone: its type, the schema, the exact time as a string, and its pcapng interface.
#[derive(serde::Serialize)]
struct JsonFrame<'a> {
    schema: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    /// `ts_ns` as exact decimal seconds ("1700000000.123456789"): JSON readers that keep
    /// numbers as doubles (jq, JavaScript) round `ts_ns` above 2^53. `null` with `ts_ns`.
    ts: Option<String>,
    /// pcapng interface id (0 in a pcap).
    interface_id: u32,
    /// Its `if_name`, when the capture names it.
    interface: Option<String>,
    #[serde(flatten)]
    record: &'a FrameRecord,
}

/// Inspects the capture `input`, writing to `out`. On a truncated or corrupt capture, the
/// frames before the damage and their summary are written first, then the error returned.
pub fn run<R: Read>(
    input: R,
    out: &mut impl Write,
    format: Output,
) -> Result<Summary, InspectError> {
    run_filtered(input, out, format, &filter::Filter::default())
}

/// [`run`], printing and summing up only the frames `filter` keeps.
pub fn run_filtered<R: Read>(
    input: R,
    out: &mut impl Write,
    format: Output,
    filter: &filter::Filter,
) -> Result<Summary, InspectError> {
    let mut reader = CaptureReader::new(input).map_err(|error| InspectError::Capture {
        error,
        frames_read: 0,
    })?;
    let mut summary = Summary::default();
    let mut first_ts: Option<Nanos> = None;
    // The table's header waits for its first line: a filter refused at the end (a port
    // the capture does not have) prints nothing.
    let mut header = format == Output::Table;
    // The interfaces frames came from, for a port= term that names none.
    let mut interfaces_seen: Vec<(u32, Option<String>)> = Vec::new();
    let mut frames_read = 0;
    let failure = loop {
        let packet = match reader.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break None,
            Err(e) => break Some(e),
        };
        frames_read += 1;
        // The capture's own record number, as tshark's frame.number: frames of skipped
        // non-Ethernet interfaces keep their numbers.
        let (record, _) =
            FrameRecord::decode(packet.number, packet.ts, packet.orig_len, packet.data);
        let (ts, interface_id) = (packet.ts, packet.interface);
        if !filter.is_empty() {
            let name = reader
                .interfaces()
                .get(interface_id as usize)
                .and_then(|i| i.name.as_deref());
            if filter.names_ports()
                && !interfaces_seen
                    .iter()
                    .any(|(id, n)| *id == interface_id && n.as_deref() == name)
            {
                interfaces_seen.push((interface_id, name.map(str::to_owned)));
            }
            if !filter.matches(&record, interface_id, name) {
                continue;
            }
        }
        summary.add(&record, interface_id);
        match format {
            Output::Table => {
                // Times are relative to the first frame that has one (a Simple Packet
                // Block has none, and shows none).
                if let Some(ts) = ts {
                    first_ts.get_or_insert(ts);
                }
                if std::mem::take(&mut header) {
                    table::write_header(out)?;
                }
                table::write_frame(out, &record, first_ts)?;
            }
            Output::Json => {
                let interface = reader
                    .interfaces()
                    .get(interface_id as usize)
                    .and_then(|i| i.name.clone());
                let line = JsonFrame {
                    schema: SCHEMA,
                    kind: "frame",
                    ts: ts.map(|ts| crate::time::epoch_seconds_string(ts.0)),
                    interface_id,
                    interface,
                    record: &record,
                };
                serde_json::to_writer(&mut *out, &line).map_err(io::Error::from)?;
                writeln!(out)?;
            }
        }
    };
    summary.skipped_non_ethernet = reader.skipped_non_ethernet();
    for i in &mut summary.interfaces {
        i.name = reader
            .interfaces()
            .get(i.interface_id as usize)
            .and_then(|f| f.name.clone());
    }
    summary.finish();
    if failure.is_none() && filter.names_ports() {
        // Interfaces of the last section that no frame came from are known too; a pcap
        // has one, 0, without a name.
        for (id, i) in reader.interfaces().iter().enumerate() {
            interfaces_seen.push((id as u32, i.name.clone()));
        }
        if reader.format() == crate::capture::Format::Pcap {
            interfaces_seen.push((0, None));
        }
        if let Some(port) = filter.unknown_port(&interfaces_seen) {
            interfaces_seen.sort();
            interfaces_seen.dedup();
            return Err(InspectError::UnknownPort {
                port: port.to_owned(),
                interfaces: interfaces_seen
                    .iter()
                    .map(|(id, name)| match name {
                        Some(n) => format!("{n} (id {id})"),
                        None => format!("id {id} (no name)"),
                    })
                    .collect(),
            });
        }
    }
    if header {
        table::write_header(out)?;
    }
    match format {
        Output::Table => table::write_summary(out, &summary, failure.is_some())?,
        Output::Json => {
            serde_json::to_writer(
                &mut *out,
                &serde_json::json!({ "schema": SCHEMA, "type": "summary", "summary": &summary }),
            )
            .map_err(io::Error::from)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    match failure {
        Some(error) => Err(InspectError::Capture { error, frames_read }),
        None => Ok(summary),
    }
}
