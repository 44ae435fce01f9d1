//! `rocelab inspect`: a RoCE-aware capture inspector.
//!
//! Reads a pcap or pcapng file, decodes every frame (Ethernet, 802.1Q, IPv4/IPv6, UDP,
//! BTH and its extended headers, CNP, PFC, PAUSE), verifies every RoCE ICRC, and sums up
//! per QP and per priority. Output is a table or JSON lines.

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
}

/// Inspects the capture `input`, writing to `out`. On a truncated or corrupt capture, the
/// frames before the damage and their summary are written first, then the error returned.
pub fn run<R: Read>(
    input: R,
    out: &mut impl Write,
    format: Output,
) -> Result<Summary, InspectError> {
    let mut reader = CaptureReader::new(input).map_err(|error| InspectError::Capture {
        error,
        frames_read: 0,
    })?;
    let mut summary = Summary::default();
    let mut first_ts: Option<Nanos> = None;
    if format == Output::Table {
        table::write_header(out)?;
    }
    let mut index = 0;
    let failure = loop {
        let packet = match reader.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break None,
            Err(e) => break Some(e),
        };
        index += 1;
        let (record, _) = FrameRecord::decode(index, packet.ts, packet.orig_len, packet.data);
        summary.add(&record);
        match format {
            Output::Table => {
                let first = *first_ts.get_or_insert(packet.ts);
                table::write_frame(out, &record, first)?;
            }
            Output::Json => {
                serde_json::to_writer(&mut *out, &record).map_err(io::Error::from)?;
                writeln!(out)?;
            }
        }
    };
    summary.skipped_non_ethernet = reader.skipped_non_ethernet();
    summary.finish();
    match format {
        Output::Table => table::write_summary(out, &summary, failure.is_some())?,
        Output::Json => {
            serde_json::to_writer(&mut *out, &serde_json::json!({ "summary": &summary }))
                .map_err(io::Error::from)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    match failure {
        Some(error) => Err(InspectError::Capture {
            error,
            frames_read: index,
        }),
        None => Ok(summary),
    }
}
