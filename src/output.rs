//! Output files written whole or not at all: each is written to a temporary file beside
//! its destination and renamed into place only when the run succeeded, so a failed or
//! interrupted run leaves the previous file as it was and never a partial one that parses.
//! An output that is also one of the run's inputs is refused before anything is opened
//! for writing. Destinations that are not regular files (a pipe, `/dev/stdout`) are
//! written directly: there is nothing to replace there. `-` is standard output, written
//! directly too (`rocelab replay ... --pcap - | tshark -r -`), and so is a path that names
//! one of the process's descriptors (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`): it is
//! that descriptor, whatever it was opened on, never a file to rename something over. An
//! output reached through a symbolic link is written where the link leads; the link stays.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// True for an output path that is standard output: `-`, or a name of descriptor 1
/// (`/dev/stdout`).
pub fn is_stdout(path: &Path) -> bool {
    path == Path::new("-") || matches!(resolve(path), Resolved::Descriptor(1))
}

/// Where an output path leads once its symbolic links are followed.
#[derive(Debug, PartialEq, Eq)]
enum Resolved {
    /// One of this process's open descriptors (`/dev/stdout` leads to `/proc/self/fd/1`).
    Descriptor(RawFd),
    /// A path that is not a link (it may not exist yet).
    Path(PathBuf),
}

/// The descriptor `path` names literally: `/dev/fd/N`, `/proc/self/fd/N` or
/// `/proc/<this process>/fd/N`.
fn descriptor_named(path: &Path) -> Option<RawFd> {
    let text = path.to_str()?;
    let own = format!("/proc/{}/fd/", std::process::id());
    let n = ["/dev/fd/", "/proc/self/fd/", own.as_str()]
        .iter()
        .find_map(|prefix| text.strip_prefix(prefix))?;
    n.parse().ok()
}

/// Follows `path`'s links (as the kernel would, at most 40) to a descriptor or to a path
/// that is not a link. A loop, or a link that cannot be read, gives the path as it stands
/// (opening it then says why).
fn resolve(path: &Path) -> Resolved {
    let mut at = path.to_owned();
    for _ in 0..40 {
        if let Some(fd) = descriptor_named(&at) {
            return Resolved::Descriptor(fd);
        }
        let is_link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return Resolved::Path(at);
        }
        let Ok(target) = std::fs::read_link(&at) else {
            return Resolved::Path(at);
        };
        at = match at.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
    }
    Resolved::Path(path.to_owned())
}

/// Standard output as a file of its own (a duplicate of descriptor 1), for output written
/// as bytes rather than text.
fn stdout_file() -> io::Result<File> {
    Ok(File::from(io::stdout().as_fd().try_clone_to_owned()?))
}

/// Descriptor `fd` as a file of its own (a duplicate): writes share its offset, as the
/// process's other writes to it do.
fn descriptor_file(fd: RawFd) -> io::Result<File> {
    // SAFETY: fcntl(F_GETFD) only asks whether `fd` is open; it is borrowed below only
    // when it is, and only for the duplicate.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is open (checked above) and stays open while it is duplicated.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    Ok(File::from(fd.try_clone_to_owned()?))
}

/// What an output is called in messages: its path, or "standard output" for `-`.
pub fn display_name(path: &Path) -> String {
    if is_stdout(path) {
        "standard output".to_owned()
    } else {
        path.display().to_string()
    }
}

/// An output that cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Creating, writing or renaming failed.
    #[error("cannot write {}: {cause}", display_name(path))]
    Io {
        /// The destination.
        path: PathBuf,
        /// Why (in the message, not chained: a chain would print it twice).
        cause: io::Error,
    },
    /// The output is one of the inputs: writing it would destroy what is being read.
    #[error(
        "{} is also an input ({}): writing it would destroy the input; give another output file",
        display_name(out),
        input.display()
    )]
    IsInput {
        /// The output asked for.
        out: PathBuf,
        /// The input it is.
        input: PathBuf,
    },
    /// A file was asked for where a directory is, or the other way round.
    #[error("{}: {what}", path.display())]
    Kind {
        /// The destination.
        path: PathBuf,
        /// What is wrong.
        what: &'static str,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> OutputError + '_ {
    move |cause| OutputError::Io {
        path: path.to_owned(),
        cause: os_error(cause),
    }
}

/// `e` without the temporary file's path that tempfile adds to its errors ("... at path
/// /out/.report.json.x1Yz.partial"): a name the user never gave.
fn os_error(e: io::Error) -> io::Error {
    let text = e.to_string();
    match text.split_once(" at path ") {
        Some((cause, _)) => io::Error::new(e.kind(), cause.to_owned()),
        None => e,
    }
}

/// Refuses `out` when it is the same file (device and inode) as one of `inputs`; for `-`,
/// when standard output is redirected to one of them.
pub fn refuse_inputs<P: AsRef<Path>>(out: &Path, inputs: &[P]) -> Result<(), OutputError> {
    let o = if is_stdout(out) {
        stdout_file().and_then(|f| f.metadata())
    } else {
        std::fs::metadata(out)
    };
    let Ok(o) = o else {
        return Ok(()); // not there yet: cannot be an input
    };
    for input in inputs {
        let input = input.as_ref();
        if let Ok(i) = std::fs::metadata(input)
            && (i.dev(), i.ino()) == (o.dev(), o.ino())
        {
            return Err(OutputError::IsInput {
                out: out.to_owned(),
                input: input.to_owned(),
            });
        }
    }
    Ok(())
}

/// Whether two output paths name the same file: the same file if both exist, else the
/// same absolute path (with its folder's links resolved). Standard output (`-`,
/// `/dev/stdout`) is only standard output.
pub fn same_destination(a: &Path, b: &Path) -> bool {
    if is_stdout(a) || is_stdout(b) {
        return is_stdout(a) && is_stdout(b);
    }
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return (x.dev(), x.ino()) == (y.dev(), y.ino());
    }
    let resolved = |p: &Path| {
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        dir.canonicalize()
            .ok()
            .zip(p.file_name())
            .map(|(d, n)| d.join(n))
    };
    match (resolved(a), resolved(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

enum Target {
    /// A temporary file beside the destination, renamed into place by `commit`.
    Staged(tempfile::NamedTempFile),
    /// A pipe, a device or a descriptor, written directly.
    Direct(File),
    /// Standard output (`-`), written directly.
    Stdout(File),
}

/// A file being written; it appears at its destination only on [`commit`](Self::commit).
pub struct OutputFile {
    target: Target,
    /// The destination as given (for messages).
    dest: PathBuf,
    /// Where the staged file goes: `dest` with its links followed.
    real: PathBuf,
}

impl OutputFile {
    /// Starts writing `dest`: checks now that it can be written (its folder exists and
    /// is writable; it is not a folder), before any work is done. `-` is standard output.
    pub fn create(dest: &Path) -> Result<OutputFile, OutputError> {
        if is_stdout(dest) {
            return Ok(OutputFile {
                target: Target::Stdout(stdout_file().map_err(io_error(dest))?),
                dest: dest.to_owned(),
                real: dest.to_owned(),
            });
        }
        let real = match resolve(dest) {
            Resolved::Descriptor(fd) => {
                return Ok(OutputFile {
                    target: Target::Direct(descriptor_file(fd).map_err(io_error(dest))?),
                    dest: dest.to_owned(),
                    real: dest.to_owned(),
                });
            }
            Resolved::Path(real) => real,
        };
        let existing = std::fs::metadata(&real).ok();
        if existing.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(OutputError::Kind {
                path: dest.to_owned(),
                what: "is a folder; give a file name",
            });
        }
        if existing.is_some_and(|m| !m.is_file()) {
            let file = File::options()
                .write(true)
                .open(&real)
                .map_err(io_error(dest))?;
            return Ok(OutputFile {
                target: Target::Direct(file),
                dest: dest.to_owned(),
                real,
            });
        }
        let dir = match real.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = real
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let prefix = format!(".{name}.");
        sweep_dead_partials(dir, &prefix);
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(PARTIAL)
            .tempfile_in(dir)
            .map_err(io_error(dest))?;
        // Held while the file is written: a later run sweeps only what nobody holds.
        let _ = try_flock(tmp.as_file());
        Ok(OutputFile {
            target: Target::Staged(tmp),
            dest: dest.to_owned(),
            real,
        })
    }

    /// The file to write into.
    pub fn file(&mut self) -> &mut File {
        match &mut self.target {
            Target::Staged(t) => t.as_file_mut(),
            Target::Direct(f) | Target::Stdout(f) => f,
        }
    }

    /// True when writing to standard output (`-`): a reader that has gone (a closed pipe)
    /// is not the writer's failure there.
    pub fn is_stdout(&self) -> bool {
        matches!(self.target, Target::Stdout(_))
    }

    /// The destination.
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// Puts the finished file in place (replacing any file there, in one rename).
    pub fn commit(self) -> Result<(), OutputError> {
        match self.target {
            Target::Direct(mut f) | Target::Stdout(mut f) => {
                f.flush().map_err(io_error(&self.dest))
            }
            Target::Staged(tmp) => {
                // Temporary files are private (0600); an output reads like any other file.
                let mode = std::fs::Permissions::from_mode(0o644);
                tmp.as_file()
                    .set_permissions(mode)
                    .map_err(io_error(&self.dest))?;
                tmp.persist(&self.real)
                    .map(drop)
                    .map_err(|e| io_error(&self.dest)(e.error))
            }
        }
    }
}

/// What a staged output's name ends in.
const PARTIAL: &str = ".partial";

/// How old an unheld staged file must be before a later run removes it: more than the
/// moment between its creation and its writer's lock.
const DEAD_PARTIAL_AGE: std::time::Duration = std::time::Duration::from_secs(10);

/// Takes an exclusive `flock` on `file` without waiting; false when another holds one.
fn try_flock(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock(2) on a descriptor `file` owns; it touches no memory.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Removes the staged files `{prefix}*.partial` in `dir` that a run killed before it could
/// rename them left behind (SIGKILL runs no cleanup): those older than
/// [`DEAD_PARTIAL_AGE`] whose writer's lock is gone. A file a live run still writes is
/// locked, and left alone. Best effort: what cannot be read or removed stays.
fn sweep_dead_partials(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with(prefix) && name.ends_with(PARTIAL)) {
            continue;
        }
        let path = entry.path();
        let old = std::fs::symlink_metadata(&path)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > DEAD_PARTIAL_AGE);
        if !old {
            continue;
        }
        if let Ok(file) = File::open(&path)
            && try_flock(&file)
        {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Writes `bytes` to `dest` whole or not at all.
pub fn write_whole(dest: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let mut out = OutputFile::create(dest)?;
    out.file().write_all(bytes).map_err(io_error(dest))?;
    out.commit()
}

/// Checks before a run that folder `dir` can hold its outputs: it is a folder we may
/// write in, or it does not exist yet and its parent is one (it is made when the outputs
/// are written, so a run that fails or is interrupted leaves no empty folder behind).
/// Tried, not guessed from permission bits: a file is made and removed in the folder (or
/// a folder in the parent), which also catches read-only mounts and `/proc`.
pub fn check_folder(dir: &Path) -> Result<(), OutputError> {
    let probe = io_error(dir);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => tempfile::Builder::new()
            .prefix(".rocelab-probe.")
            .tempfile_in(dir)
            .map(drop)
            .map_err(probe),
        Ok(_) => Err(OutputError::Kind {
            path: dir.to_owned(),
            what: "is a file; give a folder for the outputs",
        }),
        Err(_) => {
            let parent = match dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            match std::fs::metadata(parent) {
                Ok(m) if m.is_dir() => tempfile::Builder::new()
                    .prefix(".rocelab-probe.")
                    .tempdir_in(parent)
                    .map(drop)
                    .map_err(probe),
                Ok(_) => Err(OutputError::Kind {
                    path: dir.to_owned(),
                    what: "its parent is a file, not a folder",
                }),
                Err(_) => Err(OutputError::Kind {
                    path: dir.to_owned(),
                    what: "its parent folder does not exist",
                }),
            }
        }
    }
}

/// Removes from folder `dir` the regular files among `names` that are there: outputs an
/// earlier run wrote into a reused folder and this run does not, so that the folder holds
/// one run's outputs. Called once this run's files are in place. Only the names given go
/// (never anything else in the folder, nor a folder or link by such a name). The names
/// removed.
pub fn remove_stale<'a>(dir: &Path, names: &[&'a str]) -> Result<Vec<&'a str>, OutputError> {
    let mut removed = Vec::new();
    for &name in names {
        let path = dir.join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            std::fs::remove_file(&path).map_err(io_error(&path))?;
            removed.push(name);
        }
    }
    Ok(removed)
}

/// Makes folder `dir` (and no parents: [`check_folder`] vouched for them).
pub fn make_folder(dir: &Path) -> Result<(), OutputError> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(io_error(dir)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_appears_until_commit_and_a_dropped_output_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.json");
        std::fs::write(&dest, "old").unwrap();
        let mut out = OutputFile::create(&dest).unwrap();
        out.file().write_all(b"new, half").unwrap();
        drop(out); // the run failed
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "old");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp left"
        );
        write_whole(&dest, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "new");
        let mode = std::fs::metadata(&dest).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_by_inode() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.pcap");
        std::fs::write(&input, "data").unwrap();
        // Another name for the same file.
        let alias = dir.path().join("sub/../in.pcap");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let e = refuse_inputs(&alias, &[&input]).unwrap_err();
        assert!(matches!(e, OutputError::IsInput { .. }), "{e}");
        let link = dir.path().join("link.pcap");
        std::fs::hard_link(&input, &link).unwrap();
        assert!(refuse_inputs(&link, &[&input]).is_err());
        assert!(refuse_inputs(&dir.path().join("new.pcap"), &[&input]).is_ok());
    }

    #[test]
    fn folders_are_checked_before_and_made_after() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("report");
        check_folder(&out).unwrap();
        assert!(!out.exists(), "checking makes nothing");
        assert!(check_folder(&dir.path().join("no/such/report")).is_err());
        std::fs::write(dir.path().join("file"), "").unwrap();
        assert!(check_folder(&dir.path().join("file")).is_err());
        assert!(
            OutputFile::create(dir.path()).is_err(),
            "a folder is not a file"
        );
        make_folder(&out).unwrap();
        make_folder(&out).unwrap();
        assert!(out.is_dir());
    }

    #[test]
    fn only_the_named_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("fct.svg"), "old").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        std::fs::create_dir(dir.path().join("summary.json")).unwrap();
        let removed =
            remove_stale(dir.path(), &["fct.svg", "summary.json", "heatmap.svg"]).unwrap();
        assert_eq!(removed, ["fct.svg"]);
        assert!(dir.path().join("notes.txt").exists());
        assert!(
            dir.path().join("summary.json").is_dir(),
            "a folder is not removed"
        );
    }

    /// QA: `--json link.json` replaced the link with a file and left its target as it was;
    /// `--json /dev/stdout > file` renamed a file over the system's `/dev/stdout`.
    #[test]
    fn a_link_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        let link = dir.path().join("link.json");
        std::fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink("target.json", &link).unwrap();
        write_whole(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        // A link to nothing yet: the file is made where it leads.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("made.json"), &dangling).unwrap();
        write_whole(&dangling, b"made").unwrap();
        assert!(std::fs::symlink_metadata(&dangling).unwrap().is_symlink());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("made.json")).unwrap(),
            "made"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".partial"))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    /// A run killed while writing (SIGKILL) left its hidden `.name.XXXX.partial` behind
    /// for good. The next write of the same name removes those that are old and that no
    /// writer holds, and leaves a fresh one and one a live writer holds.
    #[test]
    fn staged_files_a_killed_run_left_are_swept_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let aged = |name: &str| {
            let path = dir.path().join(name);
            let f = File::create(&path).unwrap();
            let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
            f.set_modified(an_hour_ago).unwrap();
            (path, f)
        };
        let (dead, dead_file) = aged(".report.json.AAAA.partial");
        drop(dead_file);
        let (held, held_file) = aged(".report.json.BBBB.partial");
        assert!(try_flock(&held_file));
        let (other, _) = aged(".other.json.CCCC.partial");
        let fresh = dir.path().join(".report.json.DDDD.partial");
        File::create(&fresh).unwrap();
        write_whole(&dir.path().join("report.json"), b"{}").unwrap();
        assert!(!dead.exists(), "the dead run's file is removed");
        assert!(held.exists(), "a live writer's file stays");
        assert!(fresh.exists(), "a file younger than the sweep's age stays");
        assert!(other.exists(), "another output's file stays");
        drop(held_file);
    }

    #[test]
    fn a_descriptor_is_written_as_it_is_open() {
        use std::io::{Read, Seek};
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"table\n").unwrap();
        let fd = file.as_raw_fd();
        // As `/dev/stdout` leads to `/proc/self/fd/1`, a link of ours to this descriptor.
        let link = dir.path().join("stdout");
        std::os::unix::fs::symlink(format!("/proc/self/fd/{fd}"), &link).unwrap();
        write_whole(&link, b"json\n").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        write_whole(Path::new(&format!("/dev/fd/{fd}")), b"more\n").unwrap();
        // After what was written before, at the descriptor's offset.
        let mut text = String::new();
        file.rewind().unwrap();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "table\njson\nmore\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // A descriptor that is not open is an error, not a file made.
        let e = write_whole(Path::new("/dev/fd/999999"), b"x").unwrap_err();
        assert!(e.to_string().contains("/dev/fd/999999"), "{e}");
        // /dev/stdout is standard output wherever `-` is.
        assert!(is_stdout(Path::new("/dev/stdout")) && is_stdout(Path::new("-")));
        assert!(same_destination(Path::new("-"), Path::new("/dev/stdout")));
        assert!(!same_destination(Path::new("-"), &link));
    }

    #[test]
    fn a_device_is_written_directly() {
        use std::os::unix::fs::FileTypeExt;
        let mut out = OutputFile::create(Path::new("/dev/null")).unwrap();
        out.file().write_all(b"x").unwrap();
        out.commit().unwrap();
        // Still the device: no temporary file was renamed over it.
        let kind = std::fs::metadata("/dev/null").unwrap().file_type();
        assert!(kind.is_char_device());
    }
}
