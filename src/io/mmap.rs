//! The fast Linux backend: a PACKET_MMAP TPACKET_V2 receive ring (the kernel writes each
//! frame, with its receive time, into a slot of memory we share; a slot is ours as soon as
//! its frame lands, so a busy port is read without a system call and an idle one wakes
//! its poll at once) and `sendmmsg` batches on a socket with PACKET_QDISC_BYPASS
//! (straight to the driver, no qdisc).

use super::{
    FrameRx, FrameTx, KernelStats, Pool, RxFrame, add_kernel_stats, bind, device_busy, ifindex,
    packet_socket, port_gone,
};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Ring geometry: 64 blocks of 128 KiB (small blocks need no large contiguous pages), cut
/// into frame slots: about 1,900 slots of a 4 KB MTU, 830 of a 9 KB one.
const BLOCK_SIZE: usize = 1 << 17;
const BLOCKS: usize = 64;
/// SO_RCVBUF and SO_SNDBUF size, bytes (forced past `rmem_max` when privileged).
const SOCKET_BUFFER: i32 = 8 << 20;

pub(super) fn open(ifname: &str, mtu: usize) -> io::Result<(Box<dyn FrameRx>, Box<dyn FrameTx>)> {
    let index = ifindex(ifname)?;
    let rx = MmapRx::open(index, ifname, mtu).map_err(|e| context(e, ifname, "receive ring"))?;
    let tx = MmapTx::open(index).map_err(|e| context(e, ifname, "send socket"))?;
    Ok((Box::new(rx), Box::new(tx)))
}

fn context(e: io::Error, ifname: &str, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{ifname}: {what}: {e}"))
}

/// The TPACKET_V2 receive ring mapped into our memory, and the next slot to read.
struct MmapRx {
    fd: OwnedFd,
    ring: NonNull<u8>,
    /// Bytes of one slot, and slots per block and in all.
    slot_size: usize,
    per_block: usize,
    slots: usize,
    next: usize,
    stats: KernelStats,
    veth: bool,
}

// SAFETY: the ring is owned by this value alone (mapped in `open`, unmapped in `drop`);
// moving it to another thread moves the only access to it.
unsafe impl Send for MmapRx {}

impl MmapRx {
    fn open(index: i32, ifname: &str, mtu: usize) -> io::Result<MmapRx> {
        let fd = packet_socket()?;
        // Slots no larger than what the interface can carry: more of them in the ring.
        let mtu = super::largest_frame(&fd, ifname, mtu);
        let veth = super::is_veth(&fd, ifname);
        super::set_int(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            libc::tpacket_versions::TPACKET_V2 as i32,
        )?;
        super::set_buffer(&fd, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, SOCKET_BUFFER);
        // The kernel puts the frame at an aligned offset past the header (and room for a
        // VLAN tag): 64 bytes of slack beyond the header covers it.
        let slot_size =
            (libc::TPACKET2_HDRLEN + 64 + mtu + 64).next_multiple_of(libc::TPACKET_ALIGNMENT);
        if slot_size > BLOCK_SIZE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "MTU larger than a ring block",
            ));
        }
        let per_block = BLOCK_SIZE / slot_size;
        let req = libc::tpacket_req {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: BLOCKS as u32,
            tp_frame_size: slot_size as u32,
            tp_frame_nr: (per_block * BLOCKS) as u32,
        };
        // SAFETY: `req` outlives the call and its size is passed.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_RX_RING,
                (&req as *const libc::tpacket_req).cast(),
                std::mem::size_of::<libc::tpacket_req>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: maps the ring the kernel just allocated for this socket.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                BLOCK_SIZE * BLOCKS,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ring = NonNull::new(ring.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        let rx = MmapRx {
            fd,
            ring,
            slot_size,
            per_block,
            slots: per_block * BLOCKS,
            next: 0,
            stats: KernelStats::default(),
            veth,
        };
        super::promiscuous(&rx.fd, index)?;
        bind(&rx.fd, index, true)?;
        Ok(rx)
    }

    /// Slot `k`'s bytes, shared with the kernel.
    fn slot(&self, k: usize) -> *mut u8 {
        assert!(k < self.slots, "ring slot {k} of {}", self.slots);
        let at = (k / self.per_block) * BLOCK_SIZE + (k % self.per_block) * self.slot_size;
        // SAFETY: k < slots, so the slot lies inside the mapping.
        unsafe { self.ring.as_ptr().add(at) }
    }

    /// The status word of slot `k`, shared with the kernel.
    fn status(&self, k: usize) -> &AtomicU32 {
        // SAFETY: tp_status is the first u32 of the slot's (16-aligned) header, inside the
        // mapping for as long as `self` lives; the kernel and we access it atomically.
        unsafe { &*self.slot(k).cast::<AtomicU32>() }
    }
}

impl FrameRx for MmapRx {
    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn receive(
        &mut self,
        out: &mut Vec<RxFrame>,
        max: usize,
        pool: &mut Pool,
    ) -> io::Result<usize> {
        let mut got = 0;
        while got < max {
            let status = self.status(self.next).load(Ordering::Acquire);
            if status & libc::TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the slot is ours (TP_STATUS_USER) until we hand it back, and it is
            // `slot_size` bytes inside the mapping.
            let slot = unsafe { std::slice::from_raw_parts(self.slot(self.next), self.slot_size) };
            match Entry::at(slot) {
                // A slot whose entry does not fit it: never read past it; count it.
                None => self.stats.drops += 1,
                // The slot is smaller than the frame (tp_len > tp_snaplen): it arrived
                // cut short. Count it, never pass it on.
                Some(e) if e.original_len > e.frame.len() => self.stats.truncated += 1,
                Some(e) => {
                    let mut buf = pool.get();
                    if status & libc::TP_STATUS_VLAN_VALID != 0 {
                        let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                            e.vlan_tpid
                        } else {
                            0x8100
                        };
                        super::with_vlan(e.frame, e.vlan_tci, tpid, &mut buf);
                    } else {
                        buf.extend_from_slice(e.frame);
                    }
                    out.push(RxFrame {
                        data: buf,
                        stamp: e.stamp,
                    });
                    got += 1;
                }
            }
            self.status(self.next)
                .store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.next = (self.next + 1) % self.slots;
        }
        Ok(got)
    }

    fn instant_link(&self) -> bool {
        self.veth
    }

    fn peek(&self) -> Option<bool> {
        Some(self.status(self.next).load(Ordering::Acquire) & libc::TP_STATUS_USER != 0)
    }

    fn kernel_stats(&mut self) -> KernelStats {
        add_kernel_stats(&self.fd, &mut self.stats)
    }
}

impl Drop for MmapRx {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `open` mapped; nothing refers to it any more.
        unsafe {
            libc::munmap(self.ring.as_ptr().cast(), BLOCK_SIZE * BLOCKS);
        }
    }
}

/// One frame's entry in a receive slot, read with every offset checked against the slot:
/// a malformed entry (`tp_mac` or `tp_snaplen` past the slot's end) is refused, never read
/// past.
#[derive(Debug, PartialEq)]
struct Entry<'a> {
    frame: &'a [u8],
    vlan_tci: u16,
    vlan_tpid: u16,
    /// The frame's length on the wire (`tp_len`), which exceeds `frame` when cut.
    original_len: usize,
    /// When the kernel received it, ns since the Unix epoch (None if it left it blank).
    stamp: Option<u64>,
}

impl<'a> Entry<'a> {
    fn at(slot: &'a [u8]) -> Option<Entry<'a>> {
        let header = slot.get(..std::mem::size_of::<libc::tpacket2_hdr>())?;
        // SAFETY: `header` holds a whole tpacket2_hdr; read unaligned, so any slot works.
        let h = unsafe {
            header
                .as_ptr()
                .cast::<libc::tpacket2_hdr>()
                .read_unaligned()
        };
        let start = usize::from(h.tp_mac);
        let end = start.checked_add(h.tp_snaplen as usize)?;
        let stamp = (h.tp_sec != 0 || h.tp_nsec != 0)
            .then(|| u64::from(h.tp_sec) * 1_000_000_000 + u64::from(h.tp_nsec));
        Some(Entry {
            frame: slot.get(start..end)?,
            vlan_tci: h.tp_vlan_tci,
            vlan_tpid: h.tp_vlan_tpid,
            original_len: h.tp_len as usize,
            stamp,
        })
    }
}

/// The send side: batches through `sendmmsg`, never blocking.
struct MmapTx {
    fd: OwnedFd,
    iovecs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    refused: u64,
}

// SAFETY: `iovecs` and `msgs` are scratch space filled and used within one `transmit`
// call; the pointers they hold are never read outside it.
unsafe impl Send for MmapTx {}

impl MmapTx {
    fn open(index: i32) -> io::Result<MmapTx> {
        let fd = packet_socket()?;
        super::set_int(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1)?;
        super::set_buffer(&fd, libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, SOCKET_BUFFER);
        // Protocol 0: a send-only socket that receives nothing.
        bind(&fd, index, false)?;
        Ok(MmapTx {
            fd,
            iovecs: Vec::new(),
            msgs: Vec::new(),
            refused: 0,
        })
    }
}

/// Most frames one `sendmmsg` call takes.
const SEND_BATCH: usize = 1024;

impl FrameTx for MmapTx {
    fn transmit(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let frames = &frames[..frames.len().min(SEND_BATCH)];
        self.iovecs.clear();
        self.msgs.clear();
        for f in frames {
            self.iovecs.push(libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
            });
        }
        for iov in &mut self.iovecs {
            // SAFETY: an all-zero msghdr is valid (no name, no control data).
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            self.msgs.push(m);
        }
        let mut done = 0usize;
        let mut interrupted = 0;
        while done < self.msgs.len() {
            // SAFETY: msgs[done..] are valid mmsghdrs pointing at live frames.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    self.msgs.as_mut_ptr().add(done),
                    (self.msgs.len() - done) as u32,
                    libc::MSG_DONTWAIT,
                )
            };
            if r > 0 {
                done += r as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) && interrupted < 3 {
                interrupted += 1;
                continue;
            }
            if port_gone(&e) {
                return Err(e);
            }
            // The device (or the veth peer's backlog) is full: the rest waits for later.
            if device_busy(&e) {
                break;
            }
            // This frame cannot go (too large, say): count it, send the rest.
            self.refused += 1;
            done += 1;
        }
        self.iovecs.clear();
        self.msgs.clear();
        Ok(done)
    }

    fn refused(&self) -> u64 {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot of 4096 bytes with one entry: header fields as given, frame bytes 0xab.
    fn slot_with(mac: u16, snaplen: u32, len: u32) -> Vec<u8> {
        let mut slot = vec![0u8; 4096];
        // SAFETY: an all-zero tpacket2_hdr is valid; the fields set below complete it.
        let mut h: libc::tpacket2_hdr = unsafe { std::mem::zeroed() };
        h.tp_mac = mac;
        h.tp_snaplen = snaplen;
        h.tp_len = len;
        h.tp_status = libc::TP_STATUS_USER;
        h.tp_sec = 2;
        h.tp_nsec = 5;
        // SAFETY: the header fits the slot.
        unsafe {
            slot.as_mut_ptr()
                .cast::<libc::tpacket2_hdr>()
                .write_unaligned(h)
        };
        for b in slot
            .iter_mut()
            .skip(usize::from(mac))
            .take(snaplen as usize)
        {
            *b = 0xab;
        }
        slot
    }

    #[test]
    fn a_good_entry_gives_its_frame_and_time() {
        let slot = slot_with(80, 60, 60);
        let e = Entry::at(&slot).expect("a well-formed entry");
        assert_eq!(e.frame, &[0xab; 60][..]);
        assert_eq!(e.stamp, Some(2_000_000_005));
        assert_eq!(e.original_len, 60);
    }

    #[test]
    fn a_cut_frame_says_so() {
        // tp_len (the wire length) above tp_snaplen: the frame was cut short.
        let slot = slot_with(80, 60, 9000);
        let e = Entry::at(&slot).unwrap();
        assert_eq!((e.frame.len(), e.original_len), (60, 9000));
    }

    #[test]
    fn crafted_entries_never_read_past_the_slot() {
        // Frame runs past the end: tp_mac inside, tp_snaplen too long.
        assert_eq!(Entry::at(&slot_with(80, 4096, 4096)), None);
        // tp_mac alone points past the end.
        assert_eq!(Entry::at(&slot_with(u16::MAX, 10, 10)), None);
        // Largest values in every field.
        assert_eq!(Entry::at(&slot_with(u16::MAX, u32::MAX, u32::MAX)), None);
        // A slot too short for a header.
        assert_eq!(Entry::at(&[0u8; 8]), None);
    }
}
