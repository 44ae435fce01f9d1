//! `rocelab inspect`: a capture, decoded.

use anyhow::Result;
use rocelab::inspect::{self, InspectError, Output};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read};
use std::path::PathBuf;

/// Decode a pcap or pcapng capture: RoCE headers, ICRC check, CNPs, PFC and PAUSE, with a
/// per-QP and per-priority summary.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The capture file (pcap or pcapng, Ethernet); `-` reads standard input
    /// (`tcpdump -w - | rocelab inspect -`).
    file: PathBuf,
    /// Print one JSON object per frame per line, then one summary object.
    #[arg(long)]
    json: bool,
    /// Keep only some frames, in the listing and the summary: comma-separated terms that
    /// must all hold: qp=N (0x hex too), opcode=NAME (RC_RDMA_WRITE_FIRST, CNP, or a
    /// number), ecn=ce|ect0|ect1|not-ect, pfc, roce, port=NAME (pcapng interface, by name
    /// or id; one the capture does not have is refused, with those it has).
    #[arg(long, value_name = "TERMS")]
    filter: Option<String>,
}

/// Runs `rocelab inspect`.
pub(crate) fn run(args: Args) -> Result<()> {
    let path = args.file;
    let input: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        if path.is_dir() {
            anyhow::bail!(
                "{} is a directory; give a pcap or pcapng file",
                path.display()
            );
        }
        Box::new(
            File::open(&path)
                .map_err(|e| anyhow::anyhow!("cannot open capture {}: {e}", path.display()))?,
        )
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let format = if args.json {
        Output::Json
    } else {
        Output::Table
    };
    let filter = rocelab::inspect::filter::Filter::parse(args.filter.as_deref().unwrap_or(""))?;
    match inspect::run_filtered(
        BufReader::with_capacity(1 << 16, input),
        &mut out,
        format,
        &filter,
    ) {
        Ok(_) => Ok(()),
        // A closed pipe (`rocelab inspect f | head`) is not an error.
        Err(InspectError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(InspectError::Capture { error, frames_read }) => {
            let printed = if frames_read > 0 {
                format!("; the {frames_read} frame(s) before that offset were printed above")
            } else {
                String::new()
            };
            Err(anyhow::anyhow!("{}: {error}{printed}", path.display()))
        }
        Err(e) => Err(e.into()),
    }
}
