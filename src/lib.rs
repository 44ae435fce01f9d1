//! rocelab: a lossless-Ethernet lab for RoCEv2.
//!
//! A software switch (DSCP classification, shared-buffer MMU, PFC, RED-ECN) and a RoCEv2
//! endpoint (RC transport, CNP, DCQCN) as I/O-free cores, driven live on veth pairs, over
//! pcap files, or in virtual time. `docs/design.md` in the repository describes the architecture.
//!
//! Modules: [`wire`] (frame formats and the hot-path parse), [`capture`] (pcap and pcapng
//! files), [`inspect`] (the RoCE-aware capture inspector), [`config`] (switch and endpoint
//! configuration), [`switch`] and [`endpoint`] (the cores), [`replay`] (captures through
//! the switch in virtual time), [`sim`] (the discrete-event simulator), [`io`] and
//! [`runtime`] (the cores live on network interfaces), [`report`] (tables, JSON, plots),
//! [`time`] and [`rand`] (the seeded generator of every random draw).

pub mod bytes;
pub mod capture;
pub mod config;
pub mod conformance;
pub mod credit;
pub mod endpoint;
pub(crate) mod hint;
pub mod inspect;
pub mod io;
pub mod lab;
pub mod link;
pub mod output;
pub mod rand;
pub mod replay;
pub mod report;
pub mod runtime;
pub mod series;
pub mod sim;
pub mod switch;
pub mod time;
pub mod wire;
