//! One rocelab switch per interface. Two switches on the same interfaces each forward
//! every frame, so every frame arrives twice; nothing in the packet sockets says another
//! switch has them (tcpdump opens the same kind of socket, and must not be refused). A
//! switch therefore holds an advisory lock (`flock`) per interface, on a file under
//! [`LOCK_DIR`] named by the interface's network namespace and index, for as long as it
//! runs; the kernel lets it go when the process ends, however it ends.

use std::fs::File;
use std::io::{self, Read as _, Seek as _, Write as _};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// Where the lock files are.
pub const LOCK_DIR: &str = "/run/rocelab";

/// An interface another process holds.
#[derive(Debug, thiserror::Error)]
#[error(
    "{iface} is already a port of another rocelab switch ({holder}): two switches on one interface deliver every frame twice; stop that one first"
)]
pub struct Held {
    /// The interface.
    pub iface: String,
    /// Who holds it, as its lock file says ("pid 1234"), or "its process id unknown".
    pub holder: String,
}

/// Held locks on interfaces, let go when dropped, their files removed.
#[derive(Debug, Default)]
pub struct PortLocks {
    held: Vec<HeldFile>,
}

/// One lock: its file, open and locked, and where it is.
#[derive(Debug)]
struct HeldFile {
    file: File,
    path: PathBuf,
}

impl Drop for HeldFile {
    /// Removes the file while still holding its lock (one is made per interface index, and
    /// the lab's veths take new indices every run): a process that opened it meanwhile
    /// finds it gone once it has the lock, and makes a new one (see [`lock_file`]).
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        // The lock goes when `file` closes, after this.
        let _ = &self.file;
    }
}

impl PortLocks {
    /// Locks every interface of `ifaces` (in this thread's network namespace) for this
    /// process, or says which one another process holds. An interface that does not exist
    /// is not locked (opening it fails next, with its own message), and neither is any
    /// when the lock files cannot be made (not root): the check is a safeguard.
    pub fn take(ifaces: &[String]) -> Result<PortLocks, Held> {
        let Some(netns) = netns_id() else {
            return Ok(PortLocks::default());
        };
        sweep_stale(Path::new(LOCK_DIR), netns, index_exists);
        let mut locks = PortLocks::default();
        for iface in ifaces {
            let Some(index) = if_index(iface) else {
                continue;
            };
            let path = path_in(Path::new(LOCK_DIR), netns, index);
            if let Some(file) = lock_file(&path, iface)? {
                locks.held.push(HeldFile { file, path });
            }
        }
        Ok(locks)
    }

    /// How many interfaces are locked.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

/// The lock of `path`, for `iface`, with this process's id written in it; `None` when the
/// file cannot be made or locked (no lock is taken then), [`Held`] when another holds it.
/// A file its holder removed as this one waited for it is not the lock any more: it is
/// made again.
fn lock_file(path: &Path, iface: &str) -> Result<Option<File>, Held> {
    for _ in 0..16 {
        match lock_once(path, iface)? {
            Some(file) => {
                let same = std::fs::metadata(path)
                    .ok()
                    .zip(file.metadata().ok())
                    .is_some_and(|(p, f)| p.dev() == f.dev() && p.ino() == f.ino());
                if same {
                    return Ok(Some(file));
                }
            }
            None => return Ok(None),
        }
    }
    Ok(None)
}

/// One attempt of [`lock_file`].
fn lock_once(path: &Path, iface: &str) -> Result<Option<File>, Held> {
    if let Some(dir) = path.parent()
        && std::fs::create_dir_all(dir).is_err()
    {
        return Ok(None);
    }
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
    else {
        return Ok(None);
    };
    // SAFETY: flock on a descriptor `file` owns; an open file description per open(2),
    // so two opens in one process exclude each other too.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        if io::Error::last_os_error().raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Ok(None);
        }
        let mut said = String::new();
        let _ = file.read_to_string(&mut said);
        let holder = said
            .split_whitespace()
            .next()
            .filter(|pid| pid.parse::<u32>().is_ok())
            .map_or_else(
                || "its process id unknown".to_owned(),
                |pid| format!("pid {pid}"),
            );
        return Err(Held {
            iface: iface.to_owned(),
            holder,
        });
    }
    // Who holds it, for the next one's message.
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{} {iface}", std::process::id());
    Ok(Some(file))
}

/// Removes the lock files under `dir` of namespace `netns` whose interface is gone
/// (`exists` says it is not), which a switch killed with SIGKILL could not remove: each is
/// locked first and removed while held, as a holder removes its own, and one still held is
/// left alone. A file of an interface that exists is never touched, so a switch taking
/// its lock meanwhile is not disturbed; interface indices are not reused.
fn sweep_stale(dir: &Path, netns: u64, exists: impl Fn(u32) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("switch-net{netns}-if");
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(index) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".lock"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if exists(index) {
            continue;
        }
        let Ok(file) = File::open(&path) else {
            continue;
        };
        // SAFETY: flock on a descriptor `file` owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            continue;
        }
        let same = std::fs::metadata(&path)
            .ok()
            .zip(file.metadata().ok())
            .is_some_and(|(p, f)| p.dev() == f.dev() && p.ino() == f.ino());
        if same {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Whether interface index `index` exists in the calling thread's network namespace.
fn index_exists(index: u32) -> bool {
    let mut name = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: a buffer of IF_NAMESIZE bytes, as if_indextoname requires; it returns NULL
    // for an unknown index.
    !unsafe { libc::if_indextoname(index, name.as_mut_ptr()) }.is_null()
}

/// The calling thread's network namespace, as its inode number.
fn netns_id() -> Option<u64> {
    std::fs::metadata("/proc/thread-self/ns/net")
        .ok()
        .map(|m| m.ino())
}

/// The index of interface `iface` in the calling thread's network namespace.
fn if_index(iface: &str) -> Option<u32> {
    let name = std::ffi::CString::new(iface).ok()?;
    // SAFETY: a NUL-terminated name; if_nametoindex reads it and returns 0 when unknown.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    (index != 0).then_some(index)
}

/// The lock file of interface index `index` in namespace `netns`, under `dir`.
fn path_in(dir: &Path, netns: u64, index: u32) -> PathBuf {
    dir.join(format!("switch-net{netns}-if{index}.lock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two `rocelab switch` processes on the same interfaces ran silently, and every frame
    /// was delivered twice. The second to lock an interface is refused, told who holds
    /// it; once the first lets go, it may.
    #[test]
    fn a_second_lock_on_an_interface_is_refused_until_the_first_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path(), 4026531840, 7);
        let first = lock_file(&path, "veth7").unwrap().expect("locked");
        let held = lock_file(&path, "veth7").unwrap_err();
        assert_eq!(held.holder, format!("pid {}", std::process::id()));
        assert!(
            held.to_string().contains("veth7 is already a port"),
            "{held}"
        );
        // Another interface is free.
        assert!(
            lock_file(&path_in(dir.path(), 4026531840, 8), "veth8")
                .unwrap()
                .is_some()
        );
        drop(first);
        assert!(lock_file(&path, "veth7").unwrap().is_some());
    }

    /// A lock file was left behind for every interface index ever used (the lab's veths
    /// take new ones every run): a holder removes it as it lets go.
    #[test]
    fn a_lock_let_go_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path(), 1, 2);
        let file = lock_file(&path, "veth2").unwrap().expect("locked");
        let held = HeldFile {
            file,
            path: path.clone(),
        };
        assert!(path.exists());
        drop(held);
        assert!(!path.exists());
    }

    /// A switch killed with SIGKILL left its lock files (the kernel lets the lock go, not
    /// the file): two more per run of the live tests. The next switch removes those of
    /// interfaces that are gone and nobody holds, and leaves the others.
    #[test]
    fn lock_files_of_gone_interfaces_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let netns = 4026531840;
        let stale = path_in(dir.path(), netns, 10);
        std::fs::write(&stale, "1 gone0\n").unwrap();
        let alive = path_in(dir.path(), netns, 11);
        std::fs::write(&alive, "1 veth11\n").unwrap();
        let held_path = path_in(dir.path(), netns, 12);
        let held = lock_file(&held_path, "gone12").unwrap().expect("locked");
        let other_netns = path_in(dir.path(), netns + 1, 13);
        std::fs::write(&other_netns, "1 veth13\n").unwrap();
        let mine = dir.path().join("notes.txt");
        std::fs::write(&mine, "a user's file").unwrap();
        sweep_stale(dir.path(), netns, |index| index == 11);
        assert!(!stale.exists(), "gone and unheld: removed");
        assert!(alive.exists(), "its interface exists");
        assert!(held_path.exists(), "still held");
        assert!(other_netns.exists(), "another namespace's");
        assert!(mine.exists());
        drop(held);
        assert!(index_exists(1), "lo is index 1");
        assert!(!index_exists(u32::MAX));
    }

    #[test]
    fn an_interface_that_does_not_exist_is_not_locked() {
        assert_eq!(if_index("no-such-iface0"), None);
        assert!(
            PortLocks::take(&["no-such-iface0".to_owned()])
                .unwrap()
                .is_empty()
        );
    }
}
