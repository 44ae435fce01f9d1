//! `rocelab tune`: a search over a switch's ECN and PFC settings and its NICs' DCQCN
//! settings, within each one's legal values on the device's own granularity, for the
//! settings that make a scenario's objective best over several seeds, under the
//! constraints that nothing more is lost, stormed or left unfinished than with the
//! starting configuration. `knobs` says what may change, `objective` what a run comes
//! to, `search` how points are chosen; the command line runs the scenario.

pub mod knobs;
pub mod objective;
pub mod search;
