//! The lab: network namespaces and veth pairs (iproute2) for live runs, always removed.

pub mod netns;
