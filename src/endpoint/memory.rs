//! Registered memory, held as a NIC holds it: every page mapped when the region is
//! registered, and kept out of child processes.
//!
//! A live endpoint writes received data straight into its regions, so a page fault in the
//! middle of a run is a stall of the link. Two things would cause one: the first touch of
//! a fresh page, and the first write after a `fork` (the kernel write-protects every
//! private page of a process that forks, for copy-on-write). The lab forks an `ip` for
//! every step of building and removing its namespaces while its regions (hundreds of MB)
//! exist; each fork copied their page tables, each child unmapped them again at `exec`,
//! and the hosts then took a fault per page. Large regions are therefore their own
//! mappings, populated at once and marked `MADV_DONTFORK`, as rdma-core marks registered
//! memory (`ibv_fork_init`): a child never sees them. Small ones stay on the heap, where
//! that costs nothing worth a mapping of its own.

use memmap2::{Advice, MmapMut, MmapOptions};
use std::ops::{Deref, DerefMut};

/// Regions from this size on get a mapping of their own.
const MAPPED_FROM: usize = 1 << 20;

/// The zeroed bytes of one registered region (see the module documentation).
pub(crate) enum RegionBytes {
    Heap(Box<[u8]>),
    Mapped(MmapMut),
}

impl RegionBytes {
    /// `len` zeroed bytes, every page of them mapped.
    pub(super) fn zeroed(len: usize) -> RegionBytes {
        if len >= MAPPED_FROM
            && let Ok(map) = MmapOptions::new().len(len).populate().map_anon()
        {
            // Without the advice the region still works; a fork only costs more.
            let _ = map.advise(Advice::DontFork);
            return RegionBytes::Mapped(map);
        }
        let mut data = vec![0u8; len].into_boxed_slice();
        for page in data.chunks_mut(4096) {
            // SAFETY: a write of the value the byte holds, through a valid reference; it
            // is volatile only so that it is not optimised away.
            unsafe { std::ptr::write_volatile(&mut page[0], 0) };
        }
        RegionBytes::Heap(data)
    }
}

impl Deref for RegionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            RegionBytes::Heap(b) => b,
            RegionBytes::Mapped(m) => m,
        }
    }
}

impl DerefMut for RegionBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            RegionBytes::Heap(b) => b,
            RegionBytes::Mapped(m) => m,
        }
    }
}

impl Clone for RegionBytes {
    fn clone(&self) -> RegionBytes {
        let mut copy = RegionBytes::zeroed(self.len());
        copy.copy_from_slice(self);
        copy
    }
}

impl std::fmt::Debug for RegionBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            RegionBytes::Heap(_) => "heap",
            RegionBytes::Mapped(_) => "mapped",
        };
        write!(f, "RegionBytes({} B, {kind})", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` line of the mapping of this process that holds `addr`.
    fn vm_flags_at(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            if let Some((from, to)) = range
                && let (Ok(from), Ok(to)) = (
                    usize::from_str_radix(from, 16),
                    usize::from_str_radix(to, 16),
                )
            {
                inside = (from..to).contains(&addr);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.trim().to_owned());
            }
        }
        None
    }

    #[test]
    fn a_large_region_is_a_mapping_a_child_process_does_not_get() {
        let mut region = RegionBytes::zeroed(3 << 20);
        assert!(matches!(region, RegionBytes::Mapped(_)), "{region:?}");
        assert_eq!(region.len(), 3 << 20);
        assert!(region.iter().all(|&b| b == 0));
        region[5] = 7;
        let flags = vm_flags_at(region.as_ptr() as usize).expect("the mapping in smaps");
        // "dc": do not copy this area on fork.
        assert!(flags.split(' ').any(|f| f == "dc"), "VmFlags: {flags}");
        let copy = region.clone();
        assert!(matches!(copy, RegionBytes::Mapped(_)));
        assert_eq!(copy[5], 7);
        assert_eq!(&copy[..], &region[..]);
    }

    #[test]
    fn a_small_region_stays_on_the_heap() {
        let region = RegionBytes::zeroed(64 << 10);
        assert!(matches!(region, RegionBytes::Heap(_)), "{region:?}");
        assert_eq!(region.len(), 64 << 10);
        assert!(region.iter().all(|&b| b == 0));
        assert_eq!(RegionBytes::zeroed(0).len(), 0);
    }
}
