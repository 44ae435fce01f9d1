//! When each frame left its sender on the emulated clock, carried beside a link whose
//! two ends this process drives (the lab's veths): the receiving thread then takes a frame
//! at its departure plus the emulated wire, instead of at the time the kernel handed it
//! over. The kernel's time carries the sending thread's own delay (the rest of its round,
//! its system call, a wake-up of the receiving thread: tens of µs on a VM), which on every
//! hop of a ring step added to the time a real link takes; a departure time does not.
//!
//! The frames themselves stay as they are on the wire (a capture of the veth shows what a
//! NIC would send): the sender records a fingerprint of each frame with its time, in the
//! order it queues them, and the receiver matches what it reads against that record. A
//! veth keeps the order of what it carries, so the match is the record's front, or a few
//! entries on when the kernel lost frames in between; a frame nobody recorded (the
//! namespace's own IPv6 neighbour discovery, say) matches nothing and keeps its kernel
//! time.

use crate::time::Nanos;
use std::collections::VecDeque;
use std::hash::Hasher;
use std::sync::Mutex;

/// Entries kept at most: a receiver that stopped reading does not grow the record for
/// ever (the oldest go; their frames, if they ever come, keep their kernel times).
const CAPACITY: usize = 16_384;
/// How far past the front a received frame is looked for: the frames the kernel may have
/// lost in a row before one that came (a socket's backlog of them is counted as drops).
const SEARCH: usize = 256;
/// Bytes of a frame's end the fingerprint covers: a RoCE frame's end holds its ICRC,
/// which covers its PSN and payload, and the end is what an 802.1Q tag the kernel strips
/// from the front leaves as it was.
const TAIL: usize = 64;

/// The departure times of the frames one sender queued on one link, in order.
#[derive(Debug, Default)]
pub struct Departures {
    sent: Mutex<VecDeque<(u64, Nanos)>>,
}

impl Departures {
    /// An empty record.
    pub fn new() -> Departures {
        Departures::default()
    }

    /// The sender queued `frame` at `at` on the emulated clock (before the kernel has it,
    /// so that its receiver always finds it recorded).
    pub fn record(&self, frame: &[u8], at: Nanos) {
        let mut sent = self.lock();
        if sent.len() >= CAPACITY {
            sent.pop_front();
        }
        sent.push_back((fingerprint(frame), at));
    }

    /// When `frame`, just received, left its sender; `None` for a frame it did not record.
    /// Frames recorded before it that never came (lost) are forgotten.
    pub fn take(&self, frame: &[u8]) -> Option<Nanos> {
        let print = fingerprint(frame);
        let mut sent = self.lock();
        let k = sent.iter().take(SEARCH).position(|&(p, _)| p == print)?;
        let at = sent[k].1;
        sent.drain(..=k);
        Some(at)
    }

    /// Recorded departures whose frames have not been received yet.
    pub fn pending(&self) -> usize {
        self.lock().len()
    }

    /// The earliest departure whose frame has not been received yet (the sender's core
    /// time never goes back, so that is the oldest record).
    pub fn earliest(&self) -> Option<Nanos> {
        self.lock().front().map(|&(_, at)| at)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u64, Nanos)>> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A frame's fingerprint: its last [`TAIL`] bytes, hashed.
fn fingerprint(frame: &[u8]) -> u64 {
    let tail = &frame[frame.len().saturating_sub(TAIL)..];
    let mut h = rustc_hash::FxHasher::default();
    h.write(tail);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(psn: u8) -> Vec<u8> {
        let mut f = vec![0u8; 1000];
        f[990] = psn;
        f
    }

    #[test]
    fn frames_are_matched_in_order_and_lost_ones_are_forgotten() {
        let d = Departures::new();
        for psn in 0..5 {
            d.record(&frame(psn), Nanos(100 * u64::from(psn)));
        }
        assert_eq!(d.take(&frame(0)), Some(Nanos(0)));
        // 1 and 2 were lost on the way.
        assert_eq!(d.take(&frame(3)), Some(Nanos(300)));
        assert_eq!(d.pending(), 1);
        assert_eq!(d.take(&frame(4)), Some(Nanos(400)));
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn a_frame_nobody_recorded_keeps_the_record_and_gets_no_time() {
        let d = Departures::new();
        d.record(&frame(1), Nanos(10));
        assert_eq!(d.take(&frame(9)), None);
        assert_eq!(d.take(&frame(1)), Some(Nanos(10)));
    }

    #[test]
    fn identical_frames_take_their_times_in_order() {
        // Two PFC frames of the same pause: the same bytes, two departures.
        let d = Departures::new();
        let pause = vec![0u8; 60];
        d.record(&pause, Nanos(5));
        d.record(&pause, Nanos(7));
        assert_eq!(d.take(&pause), Some(Nanos(5)));
        assert_eq!(d.take(&pause), Some(Nanos(7)));
    }

    #[test]
    fn the_front_of_a_frame_may_change_on_the_way() {
        // The kernel strips an 802.1Q tag into the frame's metadata: the end is the same.
        let d = Departures::new();
        let mut tagged = vec![1u8; 4];
        tagged.extend(frame(3));
        d.record(&tagged, Nanos(42));
        assert_eq!(d.take(&frame(3)), Some(Nanos(42)));
    }
}
