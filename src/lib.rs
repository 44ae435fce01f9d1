//! rocelab: a lossless-Ethernet lab for RoCEv2.
//!
//! Modules so far: [`wire`] (frame formats and the hot-path parse), [`capture`] (pcap and
//! pcapng files) and [`time`].

#![warn(missing_docs)]

pub mod capture;
pub mod time;
pub mod wire;
