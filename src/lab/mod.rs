//! The lab: network namespaces and veth pairs (iproute2) for live runs, always removed,
//! and `rocelab lab`, a whole lossless fabric in them.

pub mod netns;
pub mod run;
pub mod twin;
