//! `rocelab sim`: switch and endpoint cores joined by links in deterministic virtual time.

pub mod allreduce;
pub mod balance;
pub mod compare;
pub mod engine;
pub mod fabric;
pub mod faults;
pub mod fct;
mod queue;
pub mod recorder;
pub mod run;
pub mod scenario;
pub mod summary;
pub mod sweep;
pub mod topology;
pub mod tune;
pub mod workloads;

pub use engine::{Engine, Host, LinkEnd, MAX_THREADS, Node, Stalled, Step};
