//! A running-config's text to its QoS model: lines into blocks by indentation, then each
//! top-level block into what it is.

use super::model::{ClassMap, Interface, Line, PolicyClass, PolicyMap, RunningConfig};
use crate::config::import::ImportError;

/// A command and the commands indented under it.
#[derive(Debug, Clone)]
struct Block {
    line: Line,
    children: Vec<Block>,
}

/// Lines into blocks by indentation; `!` comments and blank lines dropped.
fn blocks(text: &str) -> Vec<Block> {
    let mut roots: Vec<Block> = Vec::new();
    // The open blocks, with their indentation.
    let mut stack: Vec<(usize, Block)> = Vec::new();
    let close = |stack: &mut Vec<(usize, Block)>, roots: &mut Vec<Block>, indent: usize| {
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            let (_, b) = stack.pop().expect("not empty");
            match stack.last_mut() {
                Some((_, parent)) => parent.children.push(b),
                None => roots.push(b),
            }
        }
    };
    for (n, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('!') {
            continue;
        }
        let indent = raw.len() - raw.trim_start().len();
        close(&mut stack, &mut roots, indent);
        let line = Line {
            line: n + 1,
            words: trimmed.split_whitespace().map(str::to_owned).collect(),
        };
        stack.push((
            indent,
            Block {
                line,
                children: Vec::new(),
            },
        ));
    }
    close(&mut stack, &mut roots, 0);
    roots
}

impl Block {
    /// The commands directly under it, without theirs.
    fn commands(&self) -> Vec<Line> {
        self.children.iter().map(|c| c.line.clone()).collect()
    }
}

/// Reads the QoS of a running-config. Errors are those of the class-maps and the
/// watchdog's numbers; the policies' values are read when they are resolved.
pub(super) fn running_config(text: &str) -> Result<RunningConfig, ImportError> {
    let mut rc = RunningConfig::default();
    for b in &blocks(text) {
        if !qos_block(&mut rc, b)? && !watchdog_line(&mut rc, &b.line)? {
            other(&mut rc, &b.line);
        }
    }
    Ok(rc)
}

/// Takes a class-map, policy-map, `system qos` or Ethernet interface; false if `b` is
/// none.
fn qos_block(rc: &mut RunningConfig, b: &Block) -> Result<bool, ImportError> {
    let l = &b.line;
    if l.starts(&["class-map", "type", "qos"]) {
        let note = "match not imported: rocelab classifies class-maps by DSCP only";
        let dscps = match_lines(rc, b, &["match", "dscp"], 63, note)?;
        rc.class_maps
            .insert(l.word(4).to_owned(), ClassMap { dscps });
    } else if l.starts(&["class-map", "type", "network-qos"]) {
        let note = "match not imported: a network-qos class is known by its qos-groups";
        let groups = match_lines(rc, b, &["match", "qos-group"], 7, note)?;
        // `class-map type network-qos [match-any] NAME`.
        rc.network_classes.insert(l.last(), groups);
    } else if l.starts(&["policy-map", "type", "qos"]) {
        // `class NAME` or `class type qos NAME`.
        let classes = policy_classes(b, &["class"], Line::last);
        rc.qos_policies
            .insert(l.word(3).to_owned(), PolicyMap { classes });
    } else if l.starts(&["policy-map", "type", "queuing"]) {
        let classes = policy_classes(b, &["class", "type", "queuing"], |c| c.word(3).to_owned());
        rc.queuing_policies
            .insert(l.word(3).to_owned(), PolicyMap { classes });
    } else if l.starts(&["policy-map", "type", "network-qos"]) {
        let classes = policy_classes(b, &[], |c| c.word(3).to_owned());
        rc.network_policies
            .insert(l.word(3).to_owned(), PolicyMap { classes });
    } else if l.starts(&["system", "qos"]) {
        rc.system = Some(b.commands());
    } else if l.starts(&["interface"]) && l.word(1).to_ascii_lowercase().starts_with("ethernet") {
        rc.interfaces.push(Interface {
            head: l.clone(),
            commands: b.commands(),
        });
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// The values of a class-map's `match` lines that start with `prefix` (0 to `max`); any
/// other match is noted as not imported, with `note`.
fn match_lines(
    rc: &mut RunningConfig,
    b: &Block,
    prefix: &[&str],
    max: u32,
    note: &str,
) -> Result<Vec<u32>, ImportError> {
    let mut values = Vec::new();
    for c in b.children.iter().map(|c| &c.line) {
        if c.starts(prefix) {
            values.extend(c.numbers(c.word(2), max)?);
        } else {
            rc.notes.push((c.at(), note.to_owned()));
        }
    }
    Ok(values)
}

/// A policy-map's classes: the blocks under it that start with `prefix`, each named by
/// `name` of its `class` line.
fn policy_classes(b: &Block, prefix: &[&str], name: impl Fn(&Line) -> String) -> Vec<PolicyClass> {
    b.children
        .iter()
        .filter(|c| c.line.starts(prefix))
        .map(|c| PolicyClass {
            head: c.line.clone(),
            name: name(&c.line),
            commands: c.commands(),
        })
        .collect()
}

/// Takes a system-wide `priority-flow-control` watchdog command; false if `l` is none.
fn watchdog_line(rc: &mut RunningConfig, l: &Line) -> Result<bool, ImportError> {
    let wd = &mut rc.watchdog;
    if l.starts(&["priority-flow-control", "watch-dog-interval"]) {
        wd.on = Some((l.word(2) == "on", l.at()));
    } else if l.starts(&["priority-flow-control", "watch-dog", "interval"]) {
        wd.interval_ms = Some((l.u64(l.word(3))?, l.at()));
    } else if l.starts(&["priority-flow-control", "watch-dog", "shutdown-multiplier"]) {
        wd.shutdown_multiplier = Some((l.u64(l.word(3))?, l.at()));
    } else if l.starts(&["priority-flow-control", "auto-restore", "multiplier"]) {
        wd.restore_multiplier = Some((l.u64(l.word(3))?, l.at()));
    } else if l.starts(&["priority-flow-control", "fixed-restore", "multiplier"]) {
        if l.u64(l.word(3))? > 0 {
            rc.notes.push((l.at(), "fixed restore (restore whatever the pause frames) is not modelled: rocelab restores after a quiet restoration time".to_owned()));
        }
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// Notes a QoS command rocelab has no equivalent for, or one that is not QoS by its head
/// (`interface mgmt0`, `hostname`), once.
fn other(rc: &mut RunningConfig, l: &Line) {
    if l.qos_related() {
        let note = "QoS command not imported: rocelab has no equivalent";
        rc.notes.push((l.at(), note.to_owned()));
        return;
    }
    if l.starts(&["version"]) {
        return;
    }
    let head = if l.starts(&["interface"]) || l.starts(&["vrf"]) || l.starts(&["ip"]) {
        l.words
            .iter()
            .take(2)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        l.word(0).to_owned()
    };
    if !rc.skipped.contains(&head) {
        rc.skipped.push(head);
    }
}
