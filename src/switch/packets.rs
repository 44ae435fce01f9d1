//! The frames the switch holds, each in a slot that stays put while the queues pass a
//! small [`Entry`] around.
//!
//! Queues of whole packets moved each frame twice: built on the stack and copied into
//! the queue, then popped and copied out to the caller. Each copy read back, in wide
//! loads, what narrow stores had just written; the CPU cannot forward those from its
//! store buffer and waits for the stores to reach the cache. That stall, on every frame,
//! was about a sixth of the switch core's time (`perf annotate` of the `switch` bench).
//! Here a packet's fields are written once, where they stay, and a queue holds 24 bytes
//! per frame. A free slot keeps its buffer's allocation for the next frame: the slots are
//! the switch's buffer pool. They are never given back, so the switch keeps the memory
//! of the most frames it ever held at once (bounded by its buffer: the MMU admits no
//! more) until it is dropped.

use super::Note;
use crate::hint::prefetch;
use crate::time::Nanos;
use crate::wire::FrameMeta;
use crate::wire::elide::Elided;

/// A frame held by the switch. One cache line, aligned to it: the slot is read when the
/// frame leaves, long after it was written, and a slot across two lines missed twice.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(super) struct Packet {
    pub buf: Vec<u8>,
    /// The payload a short frame elides (see [`crate::wire::elide`]).
    pub elided: Elided,
    pub meta: Option<FrameMeta>,
    /// Boxed: notes exist only with `set_explain`.
    pub note: Option<Box<Note>>,
}

// One line: a field more would make a slot two.
const _: () = assert!(std::mem::size_of::<Packet>() == 64);

impl Packet {
    /// Its length on the wire.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.elided.whole_len(&self.buf)
    }
}

/// A queued frame: its slot, and what the port's deadlines need of it without looking
/// into the slot.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub arrived: Nanos,
    pub slot: u32,
    /// The frame's length: the scheduler and the queue's byte count read it here, not
    /// from the slot, whose cache line is cold by the time the frame leaves.
    pub len: u32,
    /// Its credit blocks on an InfiniBand port (0 on others).
    pub blocks: u16,
    /// The frame asks the switches for telemetry (HPCC's INT), as its BTH said on the
    /// way in: the frame's bytes are read again on the way out only then.
    pub int: bool,
    /// Its ingress port and priority group, which its buffer charge is returned to.
    pub ingress: u32,
    pub class: u8,
}

/// Buffers kept for reuse beyond those of the free slots (handed in by a driver, as
/// owned frames, in place of a slot's own); beyond this, freed ones are dropped.
const SPARE_MAX: usize = 1 << 16;

/// The slots: see the module documentation.
#[derive(Debug, Default)]
pub(super) struct Packets {
    slots: Vec<Packet>,
    free: Vec<u32>,
    /// Buffers not in any slot.
    spare: Vec<Vec<u8>>,
}

impl Packets {
    /// A free slot, its fields set and its buffer empty (with its old capacity).
    #[inline]
    pub(super) fn insert(&mut self, meta: Option<FrameMeta>) -> u32 {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Packet::default());
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 frames held")
            }
        };
        let p = &mut self.slots[slot as usize];
        p.buf.clear();
        p.elided = Elided::NONE;
        p.meta = meta;
        p.note = None;
        slot
    }

    /// A slot holding a copy of `frame`.
    #[inline]
    pub(super) fn insert_copy(&mut self, meta: Option<FrameMeta>, frame: &[u8]) -> u32 {
        let slot = self.insert(meta);
        self.slots[slot as usize].buf.extend_from_slice(frame);
        slot
    }

    /// A slot holding `buf` itself; the slot's own buffer becomes a spare.
    pub(super) fn insert_owned(&mut self, meta: Option<FrameMeta>, buf: Vec<u8>) -> u32 {
        let slot = self.insert(meta);
        let old = std::mem::replace(&mut self.slots[slot as usize].buf, buf);
        self.recycle(old);
        slot
    }

    #[inline]
    pub(super) fn get(&self, slot: u32) -> &Packet {
        &self.slots[slot as usize]
    }

    #[inline]
    pub(super) fn get_mut(&mut self, slot: u32) -> &mut Packet {
        &mut self.slots[slot as usize]
    }

    /// Starts loading `slot` into the cache, for a frame that leaves soon (a hint: any
    /// slot number is safe).
    #[inline(always)]
    pub(super) fn prefetch(&self, slot: u32) {
        prefetch(self.slots.as_ptr().wrapping_add(slot as usize).cast());
    }

    /// Frees `slot`, which keeps its buffer for the next frame.
    #[inline]
    pub(super) fn remove(&mut self, slot: u32) {
        self.slots[slot as usize].note = None;
        self.free.push(slot);
    }

    /// Frees `slot` and hands its buffer over.
    pub(super) fn take(&mut self, slot: u32) -> Vec<u8> {
        let buf = std::mem::take(&mut self.slots[slot as usize].buf);
        self.remove(slot);
        buf
    }

    /// An empty buffer: a spare, or a free slot's, or a new one.
    pub(super) fn buffer(&mut self) -> Vec<u8> {
        if let Some(buf) = self.spare.pop() {
            return buf;
        }
        match self.free.last() {
            Some(&slot) => std::mem::take(&mut self.slots[slot as usize].buf),
            None => Vec::new(),
        }
    }

    /// Keeps `buf` for reuse, if it holds an allocation and there is room.
    pub(super) fn recycle(&mut self, mut buf: Vec<u8>) {
        if buf.capacity() > 0 && self.spare.len() < SPARE_MAX {
            buf.clear();
            self.spare.push(buf);
        }
    }
}
