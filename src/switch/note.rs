//! Why the switch changed or created a frame, for the comments of a replay's output.
//! Kept as numbers (no allocation on the hot path) and formatted only when printed.

use std::fmt;

/// The reason attached to a frame the switch changed or created.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Note {
    /// RED-ECN marked the frame CE.
    CeMarked {
        /// The egress queue (0-7) whose RED profile marked it.
        queue: u8,
        /// Queue depth the decision saw, bytes.
        depth_bytes: u64,
        /// The profile's Kmin.
        kmin_bytes: u64,
        /// The profile's Kmax.
        kmax_bytes: u64,
        /// The marking probability at that depth.
        probability: f64,
    },
    /// The switch paused a priority toward the ingress port.
    PfcXoff {
        /// Priority (= PG).
        priority: u8,
        /// PG use (shared + headroom) when it fired, bytes.
        pg_bytes: u64,
        /// The XOFF threshold then, bytes.
        threshold_bytes: u64,
        /// Pause time sent, quanta of 512 bit times.
        quanta: u16,
    },
    /// The switch re-sent a pause that still holds.
    PfcRefresh {
        /// Priority (= PG) still paused.
        priority: u8,
        /// PG use (shared + headroom) at the refresh, bytes.
        pg_bytes: u64,
        /// Pause time sent, quanta of 512 bit times.
        quanta: u16,
    },
    /// The switch resumed a priority.
    PfcXon {
        /// Priority (= PG) resumed.
        priority: u8,
        /// PG use (shared + headroom) when it fired, bytes.
        pg_bytes: u64,
        /// The XON threshold then, bytes.
        threshold_bytes: u64,
    },
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Note::CeMarked {
                queue,
                depth_bytes,
                kmin_bytes,
                kmax_bytes,
                probability,
            } => {
                if depth_bytes > kmax_bytes {
                    write!(
                        f,
                        "CE: queue {queue} at {depth_bytes} B > Kmax {kmax_bytes} B, p=1"
                    )
                } else {
                    write!(
                        f,
                        "CE: queue {queue} at {depth_bytes} B > Kmin {kmin_bytes} B, p={probability:.3}"
                    )
                }
            }
            Note::PfcXoff {
                priority,
                pg_bytes,
                threshold_bytes,
                quanta,
            } => write!(
                f,
                "PFC XOFF prio {priority}: PG {priority} at {pg_bytes} B >= xoff {threshold_bytes} B, {quanta} quanta"
            ),
            Note::PfcRefresh {
                priority,
                pg_bytes,
                quanta,
            } => write!(
                f,
                "PFC refresh prio {priority}: PG {priority} still at {pg_bytes} B, {quanta} quanta"
            ),
            Note::PfcXon {
                priority,
                pg_bytes,
                threshold_bytes,
            } => write!(
                f,
                "PFC XON prio {priority}: PG {priority} at {pg_bytes} B <= xon {threshold_bytes} B"
            ),
        }
    }
}
