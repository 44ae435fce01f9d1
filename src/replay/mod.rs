//! `rocelab replay`: captures in, through the switch core in capture time, a pcapng out.

pub mod fabric;

pub use fabric::{Fabric, PeerTotals, Stuck};
