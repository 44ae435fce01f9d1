//! `rocelab replay`: captures in, through the switch core in capture time, a pcapng out.
//!
//! Each input plays the link peer of one switch port: its frames enter no faster than the
//! port's rate, and while the switch pauses a priority toward it, the peer holds that
//! priority back (unless told to ignore pauses, as a broken NIC would). Inputs are bound to
//! ports by name (`--in PORT=FILE`), or one or more captures are split into ports by MAC
//! address or VLAN. The output has one interface per port, named after it, holding every
//! frame the switch sent there at its departure time, with a comment on each frame the
//! switch changed or created.

pub mod fabric;

pub use fabric::{Fabric, PeerTotals, Stuck};

use crate::capture::{CaptureError, CaptureReader, PcapNgWriter};
use crate::config::SwitchConfig;
use crate::output::{self, OutputError, OutputFile};
use crate::switch::Switch;
use crate::time::Nanos;
use crate::wire::MacAddr;
use crate::wire::ethernet;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// How captures are split into ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SplitBy {
    /// One port per unicast MAC address seen (as source or destination); frames enter on
    /// their source's port.
    Mac,
    /// One port per VLAN id (untagged frames on port "untagged").
    Vlan,
}

/// Where the frames come from.
#[derive(Debug, Clone)]
pub enum Inputs {
    /// Captures bound to named ports.
    Bound(Vec<(String, PathBuf)>),
    /// Captures split into ports.
    Split(SplitBy, Vec<PathBuf>),
}

/// What `rocelab replay` is asked to do.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The switch configuration (ports named by the inputs are added with the defaults).
    pub config: SwitchConfig,
    /// Captures bound to named ports, or captures to split into ports.
    pub inputs: Inputs,
    /// Time runs this many times faster than in the captures.
    pub speed: f64,
    /// Shift every input so that it starts when the earliest one does.
    pub align_start: bool,
    /// Peers ignore PFC and PAUSE.
    pub peer_ignores_pause: bool,
    /// The pcapng to write (`-`: standard output); `None` for the counters only.
    pub out: Option<PathBuf>,
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// An input capture is truncated, corrupt or not Ethernet.
    #[error("{}: {error}", path.display())]
    #[allow(missing_docs)] // the file and its error: the names say it
    Capture { path: PathBuf, error: CaptureError },
    /// An input or output file could not be opened or written.
    #[error("{}: {error}", path.display())]
    #[allow(missing_docs)] // the file and its error: the names say it
    File {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The options do not make sense.
    #[error("{0}")]
    Usage(String),
    /// The output cannot be written, or is an input.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The switch stopped making progress (a bug: please report it with the inputs).
    #[error(transparent)]
    Stuck(#[from] Stuck),
}

/// What a replay did.
#[derive(Debug, Clone, Serialize)]
pub struct ReplaySummary {
    /// Ports and the inputs feeding them.
    pub ports: Vec<String>,
    /// Frames read from the inputs.
    pub frames_in: u64,
    /// Frames the switch sent (PFC included).
    pub frames_out: u64,
    /// PFC and PAUSE frames the switch generated.
    pub pfc_frames_out: u64,
    /// Frames the switch changed (CE marks).
    pub frames_marked: u64,
    /// Virtual time from the first input frame to the last frame out, ns.
    pub duration_ns: u64,
    /// Capture time of the first input frame, ns since the Unix epoch: where the switch's
    /// virtual time starts.
    pub start_ns: u64,
    /// Frames the capture had cut short (its snaplen): replayed at their original length,
    /// zero-padded, so that their wire time and buffer use are right (their ICRC is not).
    pub frames_cut: u64,
    /// Frames skipped because they are too short to carry the split key (a source MAC,
    /// 12 bytes).
    pub frames_skipped: u64,
    /// Frames without a timestamp (pcapng Simple Packet Blocks): each entered at the time
    /// of the frame before it in its capture (those before its first timed frame at that
    /// frame's time).
    pub frames_untimed: u64,
}

/// One input frame, with the port it enters on and when (`None`: no timestamp, and none
/// read before it in its capture).
struct Arrival {
    ts: Option<Nanos>,
    port: usize,
    frame: Vec<u8>,
}

/// An input capture being read.
struct Source {
    path: PathBuf,
    reader: CaptureReader<BufReader<File>>,
    /// Fixed port (bound input) or per-frame port from the split key.
    port: Option<usize>,
    shift: i128,
    /// Frames the capture cut short (snaplen), replayed at their original length.
    cut: u64,
    /// Frames with no port to enter on (too short to carry the split key).
    skipped: u64,
    /// Frames without a timestamp (pcapng Simple Packet Blocks).
    untimed: u64,
    /// The time given to the last frame read, shift applied: a frame without a timestamp
    /// takes it.
    last_ts: Option<Nanos>,
}

/// The most ports a replay may make, by `--in PORT=FILE` or by `--split-by` (each port
/// holds queues, counters and histograms, about 280 KB, and every frame visits every port).
pub const MAX_REPLAY_PORTS: usize = 1024;

/// The largest frame a capture's original length may restore (a 64 KiB IP packet and its
/// Ethernet and VLAN headers): a corrupt length never allocates more.
const MAX_FRAME_BYTES: usize = 65_535 + 18;

/// The output capture's write buffer: a write call per thousand 1 KB frames.
const OUTPUT_BUFFER_BYTES: usize = 1 << 20;

fn open(path: &Path) -> Result<CaptureReader<BufReader<File>>, ReplayError> {
    CaptureReader::open(path).map_err(|error| ReplayError::Capture {
        path: path.to_owned(),
        error,
    })
}

/// The timestamp of the first frame of capture `path` that has one.
fn first_timestamp(path: &Path) -> Result<Option<Nanos>, ReplayError> {
    let mut reader = open(path)?;
    while let Some(p) = reader.next_packet().map_err(|error| ReplayError::Capture {
        path: path.to_owned(),
        error,
    })? {
        if p.ts.is_some() {
            return Ok(p.ts);
        }
    }
    Ok(None)
}

/// The port-name key of a frame when splitting.
fn split_key(by: SplitBy, frame: &[u8]) -> Option<String> {
    match by {
        SplitBy::Mac => {
            let src = MacAddr(frame.get(6..12)?.try_into().ok()?);
            Some(src.to_string())
        }
        SplitBy::Vlan => match ethernet::EthernetRepr::parse(frame).ok()?.0.vlan {
            Some(tag) => Some(format!("vlan{}", tag.vid)),
            None => Some("untagged".to_owned()),
        },
    }
}

/// Every port name a split gives, in order of first appearance (for MACs, destinations
/// count too, so that a frame to a host that never sends still has a port to go to). The
/// scan stops at [`MAX_REPLAY_PORTS`] + 1 names: a capture of a million MACs is refused
/// without being read to its end.
fn split_ports(by: SplitBy, paths: &[PathBuf]) -> Result<Vec<String>, ReplayError> {
    fn add(names: &mut Vec<String>, name: String) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut names: Vec<String> = Vec::new();
    for path in paths {
        let mut reader = open(path)?;
        while let Some(p) = reader.next_packet().map_err(|error| ReplayError::Capture {
            path: path.clone(),
            error,
        })? {
            if names.len() > MAX_REPLAY_PORTS {
                return Ok(names);
            }
            if let Some(key) = split_key(by, p.data) {
                add(&mut names, key);
            }
            if by == SplitBy::Mac
                && let Some(dst) = p.data.get(..6).and_then(|d| <[u8; 6]>::try_from(d).ok())
            {
                let dst = MacAddr(dst);
                if !dst.is_multicast() {
                    add(&mut names, dst.to_string());
                }
            }
        }
    }
    Ok(names)
}

/// The input ports and their captures, opened, with the split's port index if any.
type Opened = (Vec<Source>, Option<(SplitBy, BTreeMap<String, usize>)>);

/// Runs a replay; returns what it did and the switch, for its counters.
pub fn run(opts: &ReplayOptions) -> Result<(ReplaySummary, Switch), ReplayError> {
    if !(opts.speed.is_finite() && opts.speed > 0.0) {
        return Err(ReplayError::Usage(format!(
            "--speed {} is not allowed; give a positive factor (2 = twice as fast)",
            opts.speed
        )));
    }
    // Before any input is opened or any work done: the output must not be an input, and
    // must be writable. It appears only when the replay succeeded.
    let input_paths: Vec<&PathBuf> = match &opts.inputs {
        Inputs::Bound(bound) => bound.iter().map(|(_, p)| p).collect(),
        Inputs::Split(_, paths) => paths.iter().collect(),
    };
    if let Some(out) = &opts.out {
        output::refuse_inputs(out, &input_paths)?;
    }
    let mut out_file = opts.out.as_deref().map(OutputFile::create).transpose()?;
    let out_path = PathBuf::from(
        opts.out
            .as_deref()
            .map(output::display_name)
            .unwrap_or_default(),
    );
    // A reader of standard output that has gone (`--pcap - | tshark -r - -c 5`) ends the
    // capture, as a closed pipe ends the text, not the replay: its counters still count.
    let to_stdout = out_file.as_ref().is_some_and(OutputFile::is_stdout);
    let fails = |e: &std::io::Error| !(to_stdout && e.kind() == std::io::ErrorKind::BrokenPipe);
    let mut cfg = opts.config.clone();
    let (mut sources, split) = match &opts.inputs {
        Inputs::Bound(bound) => open_bound(bound, &mut cfg)?,
        Inputs::Split(by, paths) => open_split(*by, paths, &mut cfg)?,
    };
    let (heads, start) = first_arrivals(&mut sources, split.as_ref(), opts.align_start)?;

    let sink: Box<dyn Write + '_> = match out_file.as_mut() {
        Some(f) => Box::new(f.file()),
        None => Box::new(std::io::sink()),
    };
    // Large writes: an 8 KiB buffer made a write call per seven frames, and the calls,
    // not the bytes, were most of the output's system time.
    let mut writer = PcapNgWriter::new(
        BufWriter::with_capacity(OUTPUT_BUFFER_BYTES, sink),
        concat!("rocelab ", env!("CARGO_PKG_VERSION")),
    )
    .map_err(|error| ReplayError::File {
        path: out_path.clone(),
        error,
    })?;
    for p in &cfg.ports {
        writer
            .add_interface(&p.name)
            .map_err(|error| ReplayError::File {
                path: out_path.clone(),
                error,
            })?;
    }

    let mut switch = Switch::new(&cfg);
    switch.set_explain(true);
    let mut fabric = Fabric::new(switch);
    if opts.peer_ignores_pause {
        for p in 0..cfg.ports.len() {
            fabric.set_peer_honors_pause(p, false);
        }
    }
    let mut summary = ReplaySummary {
        ports: cfg.ports.iter().map(|p| p.name.clone()).collect(),
        frames_in: 0,
        frames_out: 0,
        pfc_frames_out: 0,
        frames_marked: 0,
        duration_ns: 0,
        start_ns: 0,
        frames_cut: 0,
        frames_skipped: 0,
        frames_untimed: 0,
    };
    let play = Play {
        sources: &mut sources,
        split: split.as_ref(),
        heads,
        start,
        speed: opts.speed,
    };
    let (last_out, write_error) = play.run(&mut fabric, &mut writer, &mut summary)?;
    if let Some(error) = write_error.filter(fails) {
        return Err(ReplayError::File {
            path: out_path.clone(),
            error,
        });
    }
    if let Err(error) = writer.finish().and_then(|mut w| w.flush())
        && fails(&error)
    {
        return Err(ReplayError::File {
            path: out_path.clone(),
            error,
        });
    }
    if let Some(f) = out_file {
        match f.commit() {
            Err(OutputError::Io { cause, .. }) if !fails(&cause) => {}
            other => other?,
        }
    }
    summary.duration_ns = last_out.saturating_sub(start).0;
    summary.start_ns = start.0;
    summary.frames_cut = sources.iter().map(|s| s.cut).sum();
    summary.frames_skipped = sources.iter().map(|s| s.skipped).sum();
    summary.frames_untimed = sources.iter().map(|s| s.untimed).sum();
    let fabric_switch = fabric.into_switch();
    Ok((summary, fabric_switch))
}

/// The index of the port named `name` in `cfg`, added with the defaults if it is new.
fn add_port(cfg: &mut SwitchConfig, name: &str) -> usize {
    match cfg.ports.iter().position(|p| p.name == name) {
        Some(i) => i,
        None => {
            cfg.ports.push(cfg.port_or_default(name));
            cfg.ports.len() - 1
        }
    }
}

/// A capture opened for reading, entering on `port` (`None`: by its split key).
fn source(path: &Path, port: Option<usize>) -> Result<Source, ReplayError> {
    Ok(Source {
        path: path.to_path_buf(),
        reader: open(path)?,
        port,
        shift: 0,
        cut: 0,
        skipped: 0,
        untimed: 0,
        last_ts: None,
    })
}

/// Opens `--in PORT=FILE` inputs, adding their ports to `cfg`.
fn open_bound(bound: &[(String, PathBuf)], cfg: &mut SwitchConfig) -> Result<Opened, ReplayError> {
    if bound.is_empty() {
        return Err(ReplayError::Usage(
            "no input: give --in PORT=FILE (repeatable) or --split-by mac|vlan FILE...".into(),
        ));
    }
    // Checked before any capture is opened: 15 000 ports once took 3 GB, then aborted.
    let names: BTreeSet<&str> = bound.iter().map(|(port, _)| port.as_str()).collect();
    if names.len() > MAX_REPLAY_PORTS {
        return Err(ReplayError::Usage(format!(
            "--in names {} ports; at most {MAX_REPLAY_PORTS} (each port holds queues, \
             counters and histograms, about 280 KB, and every frame visits every port): \
             merge captures into fewer ports (several --in may name the same port)",
            names.len()
        )));
    }
    if bound.len() > MAX_REPLAY_PORTS {
        return Err(ReplayError::Usage(format!(
            "--in is given {} times; at most {MAX_REPLAY_PORTS} captures (each is open \
             at once): merge captures (mergecap) before replaying",
            bound.len()
        )));
    }
    let mut sources = Vec::new();
    for (port, path) in bound {
        let index = add_port(cfg, port);
        sources.push(source(path, Some(index))?);
    }
    Ok((sources, None))
}

/// Opens `--split-by` inputs, adding to `cfg` a port for each key their frames carry.
fn open_split(
    by: SplitBy,
    paths: &[PathBuf],
    cfg: &mut SwitchConfig,
) -> Result<Opened, ReplayError> {
    if paths.is_empty() {
        return Err(ReplayError::Usage(
            "--split-by needs at least one capture".into(),
        ));
    }
    if paths.len() > MAX_REPLAY_PORTS {
        return Err(ReplayError::Usage(format!(
            "--split-by is given {} captures; at most {MAX_REPLAY_PORTS} (each is open \
             at once): merge captures (mergecap) before replaying",
            paths.len()
        )));
    }
    let names = split_ports(by, paths)?;
    if names.is_empty() {
        return Err(ReplayError::Usage(
            "the captures hold no frames to split".into(),
        ));
    }
    if names.len() > MAX_REPLAY_PORTS {
        return Err(ReplayError::Usage(format!(
            "splitting by {} gives more than {MAX_REPLAY_PORTS} ports; at most {MAX_REPLAY_PORTS} (each port \
             holds queues, counters and histograms, about 280 KB, and every frame \
             visits every port): bind the captures to ports with --in PORT=FILE",
            match by {
                SplitBy::Mac => "source MAC",
                SplitBy::Vlan => "VLAN",
            },
        )));
    }
    let mut index = BTreeMap::new();
    for name in &names {
        index.insert(name.clone(), add_port(cfg, name));
    }
    let mut sources = Vec::new();
    for path in paths {
        sources.push(source(path, None)?);
    }
    Ok((sources, Some((by, index))))
}

/// Each capture's first frame, timed, and the replay's start: the earliest of their times.
fn first_arrivals(
    sources: &mut [Source],
    split: Option<&(SplitBy, BTreeMap<String, usize>)>,
    align_start: bool,
) -> Result<(Vec<Option<Arrival>>, Nanos), ReplayError> {
    // Time: t' = start + (t + shift - start) / speed.
    let mut heads: Vec<Option<Arrival>> = Vec::new();
    for s in sources.iter_mut() {
        let mut head = next_arrival(s, split)?;
        // Frames without a timestamp before a capture's first timed one enter at its time.
        if let Some(a) = head.as_mut().filter(|a| a.ts.is_none()) {
            a.ts = first_timestamp(&s.path)?;
        }
        heads.push(head);
    }
    if heads.iter().all(Option::is_none) {
        return Err(ReplayError::Usage(
            "the input captures hold no frames".into(),
        ));
    }
    // Captures with no timestamp at all (Simple Packet Blocks only) start at 0, or with the
    // others.
    let start = heads
        .iter()
        .flatten()
        .filter_map(|a| a.ts)
        .min()
        .unwrap_or(Nanos::ZERO);
    for (s, head) in sources.iter_mut().zip(&mut heads) {
        let Some(a) = head else { continue };
        match a.ts {
            // A capture without any timestamp enters when the replay starts.
            None => a.ts = Some(start),
            Some(ts) if align_start => {
                s.shift = i128::from(start.0) - i128::from(ts.0);
                a.ts = Some(start);
            }
            Some(_) => {}
        }
        s.last_ts = a.ts;
    }
    Ok((heads, start))
}

/// The inputs being merged into the fabric, each at the head of its capture.
struct Play<'a> {
    sources: &'a mut [Source],
    split: Option<&'a (SplitBy, BTreeMap<String, usize>)>,
    heads: Vec<Option<Arrival>>,
    start: Nanos,
    speed: f64,
}

impl Play<'_> {
    /// Runs every frame through `fabric`, writing what leaves (then the first drop of each
    /// kind) to `writer`; returns the last frame's time out and the first write error, kept
    /// so that a closed pipe ends the capture, not the replay.
    fn run<W: Write>(
        mut self,
        fabric: &mut Fabric,
        writer: &mut PcapNgWriter<W>,
        summary: &mut ReplaySummary,
    ) -> Result<(Nanos, Option<std::io::Error>), ReplayError> {
        let start = self.start;
        let speed = self.speed;
        let scale = |ts: Nanos| -> Nanos {
            let rel = ts.0.saturating_sub(start.0) as f64 / speed;
            Nanos(start.0.saturating_add(rel.round() as u64))
        };
        let mut write_error = None;
        let mut last_out = start;
        let mut sink = |tx: &crate::switch::Transmit<'_>| {
            summary.frames_out += 1;
            last_out = tx.time;
            match tx.note {
                Some(crate::switch::Note::CeMarked { .. }) => summary.frames_marked += 1,
                Some(_) => summary.pfc_frames_out += 1,
                None => {}
            }
            let comment = tx.note.map(|n| n.to_string());
            if write_error.is_none()
                && let Err(e) =
                    writer.write_packet(tx.port as u32, tx.time, tx.frame, comment.as_deref())
            {
                write_error = Some(e);
            }
        };
        // Merge the inputs in time order, running the fabric up to each frame before
        // offering it, so that inputs of any size stream through.
        let mut frames_in = 0;
        loop {
            let next = self
                .heads
                .iter()
                .enumerate()
                .filter_map(|(i, h)| h.as_ref().map(|a| (a.ts.unwrap_or(start), i)))
                .min();
            let Some((_, i)) = next else { break };
            let Some(arrival) = self.heads[i].take() else {
                break;
            };
            let ready = scale(arrival.ts.unwrap_or(start));
            fabric.run_until(Nanos(ready.0.saturating_sub(1)), &mut sink)?;
            fabric.offer(arrival.port, ready, arrival.frame);
            frames_in += 1;
            self.heads[i] = next_arrival(&mut self.sources[i], self.split)?;
        }
        fabric.run_to_idle(&mut sink)?;
        summary.frames_in += frames_in;
        // The first dropped frame of each kind, on the port it came in on, marked inbound
        // and explained (after the frames out: it never left the switch).
        let dropped: Vec<(u32, Nanos, Vec<u8>, String)> = fabric
            .switch()
            .drops()
            .iter()
            .filter_map(|d| {
                let frame = d.frame.clone()?;
                let why = d.explain(fabric.switch().config(), start);
                Some((d.ingress as u32, d.at, frame, format!("DROPPED: {why}")))
            })
            .collect();
        for (port, at, frame, comment) in &dropped {
            if write_error.is_none()
                && let Err(e) = writer.write_packet_in(*port, *at, frame, Some(comment), true)
            {
                write_error = Some(e);
            }
        }
        Ok((last_out, write_error))
    }
}

fn next_arrival(
    source: &mut Source,
    split: Option<&(SplitBy, BTreeMap<String, usize>)>,
) -> Result<Option<Arrival>, ReplayError> {
    loop {
        let packet = source
            .reader
            .next_packet()
            .map_err(|error| ReplayError::Capture {
                path: source.path.clone(),
                error,
            })?;
        let Some(p) = packet else { return Ok(None) };
        let port = match (source.port, split) {
            (Some(port), _) => Some(port),
            (None, Some((by, index))) => {
                split_key(*by, p.data).and_then(|k| index.get(&k).copied())
            }
            (None, None) => None,
        };
        // Frames with no port (too short to carry a source address) are skipped, and
        // counted.
        let Some(port) = port else {
            source.skipped += 1;
            continue;
        };
        // A frame without a timestamp enters with the frame before it.
        let ts = match p.ts {
            Some(ts) => {
                let shifted = i128::from(ts.0) + source.shift;
                let ts = Nanos(shifted.clamp(0, i128::from(u64::MAX)) as u64);
                source.last_ts = Some(ts);
                Some(ts)
            }
            None => {
                source.untimed += 1;
                source.last_ts
            }
        };
        let mut frame = p.data.to_vec();
        let original = (p.orig_len as usize).min(MAX_FRAME_BYTES);
        if original > frame.len() {
            source.cut += 1;
            frame.resize(original, 0);
        }
        return Ok(Some(Arrival { ts, port, frame }));
    }
}
