//! rocelab: a lossless-Ethernet lab for RoCEv2.
//!
//! Modules so far: [`wire`] (frame formats and the hot-path parse) and [`time`].

#![warn(missing_docs)]

pub mod time;
pub mod wire;
