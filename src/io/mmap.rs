//! The fast Linux backend: a PACKET_MMAP TPACKET_V3 receive ring (the kernel writes frames
//! into shared blocks; one `poll` hands over a whole block) and `sendmmsg` batches on a
//! socket with PACKET_QDISC_BYPASS (straight to the driver, no qdisc).

use super::{FrameRx, FrameTx, KernelStats, Pool, bind, ifindex, packet_socket, read_stats};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Ring geometry: 8 blocks of 1 MiB (a few thousand frames of 1 KB in flight).
const BLOCK_SIZE: usize = 1 << 20;
const BLOCKS: usize = 8;
/// A block is handed to us when full or after this many ms.
const BLOCK_TIMEOUT_MS: u32 = 1;
/// SO_RCVBUF and SO_SNDBUF size, bytes (forced past `rmem_max` when privileged).
const SOCKET_BUFFER: i32 = 8 << 20;

pub(super) fn open(ifname: &str, mtu: usize) -> io::Result<(Box<dyn FrameRx>, Box<dyn FrameTx>)> {
    let index = ifindex(ifname)?;
    let rx = MmapRx::open(index, mtu).map_err(|e| context(e, ifname, "receive ring"))?;
    let tx = MmapTx::open(index).map_err(|e| context(e, ifname, "send socket"))?;
    Ok((Box::new(rx), Box::new(tx)))
}

fn context(e: io::Error, ifname: &str, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{ifname}: {what}: {e}"))
}

/// The TPACKET_V3 receive ring mapped into our memory, and where reading has got to.
struct MmapRx {
    fd: OwnedFd,
    ring: NonNull<u8>,
    /// The block being read, and how far into it.
    block: usize,
    packet: u32,
    offset: usize,
    stats: KernelStats,
}

// SAFETY: the ring is owned by this value alone (mapped in `open`, unmapped in `drop`);
// moving it to another thread moves the only access to it.
unsafe impl Send for MmapRx {}

impl MmapRx {
    fn open(index: i32, mtu: usize) -> io::Result<MmapRx> {
        let fd = packet_socket()?;
        super::set_int(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            libc::tpacket_versions::TPACKET_V3 as i32,
        )?;
        super::set_buffer(&fd, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, SOCKET_BUFFER);
        // Frame slots only matter for the kernel's arithmetic in V3; frames are packed.
        let frame_size =
            (libc::TPACKET3_HDRLEN + mtu + 64).next_multiple_of(libc::TPACKET_ALIGNMENT);
        if frame_size > BLOCK_SIZE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "MTU larger than a ring block",
            ));
        }
        let req = libc::tpacket_req3 {
            tp_block_size: BLOCK_SIZE as u32,
            tp_block_nr: BLOCKS as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: ((BLOCK_SIZE / frame_size) * BLOCKS) as u32,
            tp_retire_blk_tov: BLOCK_TIMEOUT_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        // SAFETY: `req` outlives the call and its size is passed.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_RX_RING,
                (&req as *const libc::tpacket_req3).cast(),
                std::mem::size_of::<libc::tpacket_req3>() as libc::socklen_t,
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
            block: 0,
            packet: 0,
            offset: 0,
            stats: KernelStats::default(),
        };
        super::promiscuous(&rx.fd, index)?;
        bind(&rx.fd, index, true)?;
        Ok(rx)
    }

    fn block_desc(&self, block: usize) -> *mut libc::tpacket_block_desc {
        assert!(block < BLOCKS, "ring block {block} of {BLOCKS}");
        // SAFETY: block < BLOCKS, so the pointer stays inside the mapping.
        unsafe { self.ring.as_ptr().add(block * BLOCK_SIZE).cast() }
    }

    /// The status word of `block`, shared with the kernel.
    fn status(&self, block: usize) -> &AtomicU32 {
        // SAFETY: block_status is the first u32 of the (8-aligned) block header, inside the
        // mapping for as long as `self` lives; the kernel and we access it atomically.
        unsafe {
            &*std::ptr::addr_of_mut!((*self.block_desc(block)).hdr.bh1.block_status)
                .cast::<AtomicU32>()
        }
    }

    fn wait(&self, timeout: Duration) -> io::Result<bool> {
        if self.status(self.block).load(Ordering::Acquire) & libc::TP_STATUS_USER != 0 {
            return Ok(true);
        }
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        };
        // (POLLERR is reported below, so that a downed interface is an error, not a spin.)
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            };
        }
        if pfd.revents & libc::POLLERR != 0 {
            let mut err: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: SO_ERROR into an int of the size given; reading it clears it.
            unsafe {
                libc::getsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_ERROR,
                    (&mut err as *mut libc::c_int).cast(),
                    &mut len,
                );
            }
            if err != 0 {
                return Err(std::io::Error::from_raw_os_error(err));
            }
        }
        Ok(self.status(self.block).load(Ordering::Acquire) & libc::TP_STATUS_USER != 0)
    }
}

impl FrameRx for MmapRx {
    fn receive(
        &mut self,
        out: &mut Vec<Vec<u8>>,
        max: usize,
        timeout: Duration,
        pool: &Pool,
    ) -> io::Result<usize> {
        if !self.wait(timeout)? {
            return Ok(0);
        }
        let mut got = 0;
        while got < max {
            let desc = self.block_desc(self.block);
            // SAFETY: the block is ours (TP_STATUS_USER) until we hand it back.
            let (num, first) = unsafe {
                let h = &(*desc).hdr.bh1;
                (h.num_pkts, h.offset_to_first_pkt as usize)
            };
            if self.packet == 0 {
                self.offset = first;
            }
            if self.packet >= num {
                // Done with the block: give it back and move on if the next is ready.
                self.status(self.block)
                    .store(libc::TP_STATUS_KERNEL, Ordering::Release);
                self.block = (self.block + 1) % BLOCKS;
                self.packet = 0;
                if self.status(self.block).load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                    break;
                }
                continue;
            }
            // SAFETY: the block is ours (TP_STATUS_USER) until we hand it back, and it is
            // BLOCK_SIZE bytes inside the mapping.
            let block = unsafe { std::slice::from_raw_parts(desc.cast::<u8>(), BLOCK_SIZE) };
            let Some(entry) = Entry::at(block, self.offset) else {
                // A ring entry that does not fit its block: never read past it; drop the
                // rest of the block and count it.
                self.stats.drops += u64::from(num - self.packet);
                self.packet = num;
                continue;
            };
            let (frame, status, tci, tpid, next) = (
                entry.frame,
                entry.status,
                entry.vlan_tci,
                entry.vlan_tpid,
                entry.next,
            );
            // The ring's frame slot is smaller than the frame (tp_len > tp_snaplen): it
            // arrived cut short. Count it, never pass it on.
            if entry.original_len > frame.len() {
                self.stats.truncated += 1;
                self.packet += 1;
                self.offset += next;
                continue;
            }
            let mut buf = pool.get();
            if status & libc::TP_STATUS_VLAN_VALID != 0 {
                let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                    tpid
                } else {
                    0x8100
                };
                super::with_vlan(frame, tci, tpid, &mut buf);
            } else {
                buf.extend_from_slice(frame);
            }
            out.push(buf);
            got += 1;
            self.packet += 1;
            self.offset += next;
        }
        Ok(got)
    }

    fn kernel_stats(&mut self) -> KernelStats {
        let s = read_stats(&self.fd);
        self.stats.packets += s.packets;
        self.stats.drops += s.drops;
        self.stats
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

/// One frame's entry in a receive block, read with every offset checked against the
/// block: a malformed entry (header, `tp_mac` or `tp_snaplen` past the block's end) is
/// refused, never read past.
#[derive(Debug, PartialEq)]
struct Entry<'a> {
    frame: &'a [u8],
    status: u32,
    vlan_tci: u16,
    vlan_tpid: u16,
    /// Bytes from this entry to the next.
    next: usize,
    /// The frame's length on the wire (`tp_len`), which exceeds `frame` when cut.
    original_len: usize,
}

impl<'a> Entry<'a> {
    fn at(block: &'a [u8], offset: usize) -> Option<Entry<'a>> {
        let header = block.get(offset..offset.checked_add(libc::TPACKET3_HDRLEN)?)?;
        // SAFETY: `header` holds a whole tpacket3_hdr; read unaligned, so any offset works.
        let h = unsafe {
            header
                .as_ptr()
                .cast::<libc::tpacket3_hdr>()
                .read_unaligned()
        };
        let start = offset.checked_add(usize::from(h.tp_mac))?;
        let end = start.checked_add(h.tp_snaplen as usize)?;
        Some(Entry {
            frame: block.get(start..end)?,
            status: h.tp_status,
            vlan_tci: h.hv1.tp_vlan_tci as u16,
            vlan_tpid: h.hv1.tp_vlan_tpid,
            next: h.tp_next_offset as usize,
            original_len: h.tp_len as usize,
        })
    }
}

/// The send side: batches through `sendmmsg`.
struct MmapTx {
    fd: OwnedFd,
    iovecs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
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
        })
    }
}

impl FrameTx for MmapTx {
    fn transmit(&mut self, frames: &[Vec<u8>]) -> io::Result<usize> {
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
        let (mut done, mut sent, mut busy) = (0usize, 0usize, 0u32);
        while done < self.msgs.len() {
            // SAFETY: msgs[done..] are valid mmsghdrs pointing at live frames.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    self.msgs.as_mut_ptr().add(done),
                    (self.msgs.len() - done).min(1024) as u32,
                    0,
                )
            };
            if r > 0 {
                done += r as usize;
                sent += r as usize;
                busy = 0;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => {}
                // The device queue is full: wait a little, a bounded number of times per
                // batch; past that (a link without carrier drops everything) the rest of
                // the batch is lost, as on a wire.
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => {
                    busy += 1;
                    if busy > 200 {
                        break;
                    }
                    std::thread::sleep(Duration::from_micros(20));
                }
                Some(libc::ENXIO) | Some(libc::ENODEV) | Some(libc::ENETDOWN) => return Err(e),
                // This frame cannot go (too large, say): skip it, send the rest.
                _ => done += 1,
            }
        }
        self.iovecs.clear();
        self.msgs.clear();
        Ok(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block with one entry at `offset`: header fields as given, frame bytes 0xab.
    fn block_with(offset: usize, mac: u16, snaplen: u32) -> Vec<u8> {
        let mut block = vec![0u8; 4096];
        // SAFETY: an all-zero tpacket3_hdr is valid; the fields set below complete it.
        let mut h: libc::tpacket3_hdr = unsafe { std::mem::zeroed() };
        h.tp_mac = mac;
        h.tp_snaplen = snaplen;
        h.tp_len = snaplen;
        h.tp_status = libc::TP_STATUS_USER;
        h.tp_next_offset = 128;
        if offset + libc::TPACKET3_HDRLEN <= block.len() {
            // SAFETY: the header fits the block at `offset` (checked just above).
            unsafe {
                block[offset..]
                    .as_mut_ptr()
                    .cast::<libc::tpacket3_hdr>()
                    .write_unaligned(h)
            };
        }
        for b in block
            .iter_mut()
            .skip(offset + usize::from(mac))
            .take(snaplen as usize)
        {
            *b = 0xab;
        }
        block
    }

    #[test]
    fn a_good_entry_gives_its_frame() {
        let block = block_with(48, 80, 60);
        let e = Entry::at(&block, 48).expect("a well-formed entry");
        assert_eq!(e.frame, &[0xab; 60][..]);
        assert_eq!(e.next, 128);
        assert_eq!(e.status, libc::TP_STATUS_USER);
    }

    #[test]
    fn a_cut_frame_says_so() {
        let mut block = block_with(48, 80, 60);
        // tp_len (the wire length) above tp_snaplen: the frame was cut short.
        // SAFETY: `block_with` wrote a whole header at 48.
        let mut h = unsafe {
            block[48..]
                .as_ptr()
                .cast::<libc::tpacket3_hdr>()
                .read_unaligned()
        };
        h.tp_len = 9000;
        // SAFETY: the header fits the block at 48.
        unsafe {
            block[48..]
                .as_mut_ptr()
                .cast::<libc::tpacket3_hdr>()
                .write_unaligned(h)
        };
        let e = Entry::at(&block, 48).unwrap();
        assert_eq!((e.frame.len(), e.original_len), (60, 9000));
    }

    #[test]
    fn crafted_entries_never_read_past_the_block() {
        // Frame runs past the end: tp_mac inside, tp_snaplen too long.
        let block = block_with(48, 80, 4096);
        assert_eq!(Entry::at(&block, 48), None);
        // tp_mac alone points past the end.
        let block = block_with(48, u16::MAX, 10);
        assert_eq!(Entry::at(&block, 48), None);
        // The header itself straddles the end, or starts past it.
        let block = block_with(0, 80, 10);
        assert_eq!(Entry::at(&block, 4096 - 8), None);
        assert_eq!(Entry::at(&block, 1 << 40), None);
        assert_eq!(Entry::at(&block, usize::MAX), None);
        // Largest values in every field.
        let block = block_with(0, u16::MAX, u32::MAX);
        assert_eq!(Entry::at(&block, 0), None);
    }
}
