//! What the fuzz targets share.

use std::path::{Path, PathBuf};

/// A scratch directory of this process for the files a target writes, named
/// `rocelab-fuzz-<what>-<pid>`: in /dev/shm when there is one (rewriting a file on ext4
/// waits for the disk, which made the replay target twenty times slower), else in the
/// temporary directory. Directories that earlier, finished runs left are removed.
pub fn scratch_dir(what: &str) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let prefix = format!("rocelab-fuzz-{what}-");
    if let Ok(entries) = std::fs::read_dir(&base) {
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
                continue;
            };
            if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let dir = base.join(format!("{prefix}{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}
