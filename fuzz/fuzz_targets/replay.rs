//! The replay pipeline on a small capture: the input becomes up to 8 frames written as
//! pcap files, which `rocelab::replay::run` plays through the switch core into a pcapng.
//! Nothing may panic, and the replay must never report `Stuck` (the replay says that is
//! a bug to report with the inputs).
//!
//! Input layout: one options byte, then records of
//! `[selector, dt (u16 LE, x16 ns), len (u16 LE)] frame bytes` (a short last record takes
//! what is left). Options: bits 0-1 how the inputs become ports (one bound port, two
//! bound ports chosen by the selector's low bit, split by MAC, split by VLAN); bit 2 the
//! peers ignore pauses; bit 3 align starts; bits 4-5 the speed factor; bits 6-7 the preset
//! (default unless 1 = nexus-ai, 2 = sonic).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rocelab::capture::PcapWriter;
use rocelab::config::SwitchConfig;
use rocelab::replay::{self, Inputs, ReplayError, ReplayOptions, SplitBy};
use rocelab::time::Nanos;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const MAX_FRAMES: usize = 8;

fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| rocelab_fuzz::scratch_dir("replay"))
}

fn presets() -> &'static [SwitchConfig] {
    static P: OnceLock<Vec<SwitchConfig>> = OnceLock::new();
    P.get_or_init(|| {
        ["default", "nexus-ai", "sonic"]
            .iter()
            .map(|n| SwitchConfig::preset(n).expect("preset"))
            .collect()
    })
}

fn write_pcap(path: &Path, frames: &[(Nanos, &[u8])]) {
    let mut w = PcapWriter::new(BufWriter::new(File::create(path).expect("create input")))
        .expect("pcap header");
    for (ts, f) in frames {
        w.write_packet(*ts, f).expect("pcap record");
    }
    w.finish().expect("flush input");
}

fuzz_target!(|data: &[u8]| {
    let Some((&opts, mut rest)) = data.split_first() else {
        return;
    };
    // Up to 8 frames, each with its selector and time.
    let mut frames: Vec<(u8, Nanos, &[u8])> = Vec::new();
    let mut ts = 1_000_000_000u64;
    while rest.len() >= 5 && frames.len() < MAX_FRAMES {
        let sel = rest[0];
        let dt = u64::from(u16::from_le_bytes([rest[1], rest[2]])) * 16;
        let len = usize::from(u16::from_le_bytes([rest[3], rest[4]]));
        rest = &rest[5..];
        let len = len.min(rest.len());
        ts += dt;
        frames.push((sel, Nanos(ts), &rest[..len]));
        rest = &rest[len..];
    }
    if frames.is_empty() {
        return;
    }

    let dir = scratch();
    let a = dir.join("a.pcap");
    let b = dir.join("b.pcap");
    let pick = |side: u8| -> Vec<(Nanos, &[u8])> {
        frames
            .iter()
            .filter(|(sel, _, _)| sel & 1 == side)
            .map(|&(_, t, f)| (t, f))
            .collect()
    };
    let inputs = match opts & 3 {
        0 => {
            let all: Vec<_> = frames.iter().map(|&(_, t, f)| (t, f)).collect();
            write_pcap(&a, &all);
            Inputs::Bound(vec![("p0".to_owned(), a)])
        }
        1 => {
            write_pcap(&a, &pick(0));
            write_pcap(&b, &pick(1));
            Inputs::Bound(vec![("p0".to_owned(), a), ("p1".to_owned(), b)])
        }
        mode => {
            write_pcap(&a, &pick(0));
            write_pcap(&b, &pick(1));
            let by = if mode == 2 {
                SplitBy::Mac
            } else {
                SplitBy::Vlan
            };
            Inputs::Split(by, vec![a, b])
        }
    };
    let config = presets()[usize::from(opts >> 6) % 3].clone();
    let replay_opts = ReplayOptions {
        config,
        inputs,
        speed: [1.0, 2.0, 0.5, 10.0][usize::from((opts >> 4) & 3)],
        align_start: opts & 8 != 0,
        peer_ignores_pause: opts & 4 != 0,
        out: Some(dir.join("out.pcapng")),
    };
    match replay::run(&replay_opts) {
        Ok((summary, _switch)) => {
            assert!(summary.frames_in <= frames.len() as u64);
        }
        Err(ReplayError::Stuck(s)) => panic!("replay stuck: {s}"),
        Err(_) => {}
    }
});
