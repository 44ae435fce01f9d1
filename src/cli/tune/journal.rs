//! DIR/journal.jsonl: every finished run of a tune (a point's values and a seed, and its
//! figures or why it failed), one JSON line each, appended and flushed as the run ends, so
//! that an interrupted tune loses only the runs in flight. `--resume` reads it back and
//! the search replays those runs instead of making them again: the search is a function
//! of its runs, so it goes on exactly where it stopped. The first line says what the runs
//! were made with (scenario, starting configuration, objective, knobs, seeds); a journal
//! made with anything else is refused, as its runs would not be this tune's.

use anyhow::{Context, Result};
use rocelab::sim::tune::objective::RunFigures;
use rustc_hash::FxHashMap;
use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

/// The journal's file name in the output folder.
pub(crate) const FILE: &str = "journal.jsonl";

/// The schema of its first line.
const SCHEMA: &str = "rocelab.tune-journal/1";

/// A run's key: its values' bits and its seed (values are ladder values, read back
/// exactly: serde_json's float_roundtrip).
type Key = (Vec<u64>, u64);

fn key(values: &[f64], seed: u64) -> Key {
    (values.iter().map(|v| v.to_bits()).collect(), seed)
}

/// The open journal: the runs it holds, and the file new runs are appended to.
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
    done: FxHashMap<Key, Result<RunFigures, String>>,
}

/// One line after the first.
#[derive(serde::Serialize, serde::Deserialize)]
struct Line {
    values: Vec<f64>,
    seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    figures: Option<RunFigures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Journal {
    /// A new journal in `dir` for runs made with `made_with` (what a resume must match),
    /// in place of one without runs (the caller refuses one with runs: they may be an
    /// interrupted search's).
    pub(crate) fn create(dir: &Path, made_with: &serde_json::Value) -> Result<Journal> {
        let path = dir.join(FILE);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .with_context(|| path.display().to_string())?;
        let head = serde_json::json!({ "schema": SCHEMA, "made_with": made_with });
        writeln!(file, "{head}")
            .and_then(|()| file.sync_data())
            .with_context(|| path.display().to_string())?;
        Ok(Journal {
            path,
            file,
            done: FxHashMap::default(),
        })
    }

    /// The journal in `dir`, read back, its runs to replay; refused when it was made
    /// with anything but `made_with`. A last line cut short (the process killed while
    /// writing it) is dropped.
    pub(crate) fn resume(dir: &Path, made_with: &serde_json::Value) -> Result<Journal> {
        let path = dir.join(FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|e| {
                anyhow::anyhow!(
                    "--resume: {}: {e}; --resume goes on from the journal an earlier tune into the same --out wrote",
                    path.display()
                )
            })?;
        let mut text = String::new();
        file.read_to_string(&mut text)
            .with_context(|| path.display().to_string())?;
        let whole = text.rfind('\n').map_or(0, |i| i + 1);
        if whole < text.len() {
            file.set_len(whole as u64)
                .and_then(|()| file.seek(std::io::SeekFrom::End(0)).map(drop))
                .with_context(|| path.display().to_string())?;
            text.truncate(whole);
        }
        let mut lines = text.lines();
        let head: serde_json::Value = lines
            .next()
            .and_then(|l| serde_json::from_str(l).ok())
            .filter(|h: &serde_json::Value| h["schema"] == SCHEMA)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: not a rocelab tune journal (its first line is not {SCHEMA})",
                    path.display()
                )
            })?;
        if let Some(what) = differs(&head["made_with"], made_with) {
            anyhow::bail!(
                "--resume: {} was made with {what}: resume with the arguments it was made with, or give another --out",
                path.display()
            );
        }
        let mut done = FxHashMap::default();
        for (n, l) in lines.enumerate() {
            let line: Line = serde_json::from_str(l)
                .with_context(|| format!("{} line {}", path.display(), n + 2))?;
            let result = match (line.figures, line.error) {
                (Some(f), None) => Ok(f),
                (None, Some(e)) => Err(e),
                _ => anyhow::bail!(
                    "{} line {}: a run has figures or an error, one of the two",
                    path.display(),
                    n + 2
                ),
            };
            done.insert(key(&line.values, line.seed), result);
        }
        Ok(Journal { path, file, done })
    }

    /// The run at `values` and `seed`, if the journal has it.
    pub(crate) fn get(&self, values: &[f64], seed: u64) -> Option<Result<RunFigures, String>> {
        self.done.get(&key(values, seed)).cloned()
    }

    /// Runs it holds.
    pub(crate) fn len(&self) -> usize {
        self.done.len()
    }

    /// Appends a finished run and flushes it to the disk.
    pub(crate) fn add(
        &mut self,
        values: &[f64],
        seed: u64,
        result: &Result<RunFigures, String>,
    ) -> Result<()> {
        let line = Line {
            values: values.to_vec(),
            seed,
            figures: result.as_ref().ok().copied(),
            error: result.as_ref().err().cloned(),
        };
        let text = serde_json::to_string(&line)? + "\n";
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data())
            .with_context(|| self.path.display().to_string())?;
        self.done.insert(key(values, seed), result.clone());
        Ok(())
    }
}

/// What differs between the journal's `old` made-with and this tune's `new`, in words.
fn differs(old: &serde_json::Value, new: &serde_json::Value) -> Option<String> {
    let words = [
        (
            "scenario",
            "another scenario (or other --set or --drain-ms)",
        ),
        ("start", "another starting configuration (--from)"),
        ("objective", "another --objective"),
        ("knobs", "other knobs"),
        ("seeds", "other seeds (--seed, --seeds)"),
        ("check_seeds", "other check seeds (--check-seeds)"),
    ];
    // The named fields first, in the order a user would check them, then any other.
    let mut fields: Vec<&str> = words.iter().map(|(k, _)| *k).collect();
    for m in [new.as_object()?, old.as_object()?] {
        fields.extend(
            m.keys()
                .map(String::as_str)
                .filter(|k| !words.iter().any(|(w, _)| w == k)),
        );
    }
    fields.into_iter().find(|f| old[*f] != new[*f]).map(|f| {
        let what = words
            .iter()
            .find(|(k, _)| *k == f)
            .map_or_else(|| format!("another {f}"), |(_, w)| (*w).to_owned());
        match f {
            "knobs" | "seeds" | "check_seeds" | "objective" => {
                format!("{what}: {} there, {} here", brief(&old[f]), brief(&new[f]))
            }
            _ => what,
        }
    })
}

/// A short form of a made-with field: knob names, or the value itself.
fn brief(v: &serde_json::Value) -> String {
    match v.as_array() {
        Some(a) if a.iter().all(|k| k.get("name").is_some()) && !a.is_empty() => a
            .iter()
            .filter_map(|k| k["name"].as_str())
            .collect::<Vec<_>>()
            .join(","),
        _ => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(objective: f64) -> RunFigures {
        RunFigures {
            objective: Some(objective),
            unfinished_flows: 1,
            lossless_drops: 0,
            storms: 0,
            pfc_sent: 2,
            ce_marked: 3,
        }
    }

    fn made_with(seeds: &[u64]) -> serde_json::Value {
        serde_json::json!({
            "scenario": "s", "start": "t", "objective": "fct-p99",
            "knobs": [{"name": "ecn.kmin", "keys": [], "values": [1.0]}],
            "seeds": seeds, "check_seeds": [9],
        })
    }

    /// Runs come back exactly (0.1 + 0.2 is not 0.3: the bits must survive), a line cut
    /// short by a kill is dropped and written over, and another made-with is refused.
    #[test]
    fn a_journal_reads_back_its_runs_and_drops_a_line_cut_short() {
        let dir = tempfile::tempdir().unwrap();
        let values = [0.1 + 0.2, 4096.0];
        {
            let mut j = Journal::create(dir.path(), &made_with(&[1, 2])).unwrap();
            j.add(&values, 1, &Ok(figures(2.5))).unwrap();
            j.add(&values, 2, &Err("stalled".into())).unwrap();
        }
        let path = dir.path().join(FILE);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"values\":[0.3,4096.0],\"se").unwrap();
        drop(f);
        let mut j = Journal::resume(dir.path(), &made_with(&[1, 2])).unwrap();
        assert_eq!(j.len(), 2);
        assert_eq!(j.get(&values, 1), Some(Ok(figures(2.5))));
        assert_eq!(j.get(&values, 2), Some(Err("stalled".into())));
        assert_eq!(j.get(&[0.3, 4096.0], 1), None);
        j.add(&values, 3, &Ok(figures(1.0))).unwrap();
        drop(j);
        let j = Journal::resume(dir.path(), &made_with(&[1, 2])).unwrap();
        assert_eq!(j.len(), 3);
        let e = Journal::resume(dir.path(), &made_with(&[1, 2, 3]))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("other seeds (--seed, --seeds): [1,2] there, [1,2,3] here"),
            "{e}"
        );
    }
}
