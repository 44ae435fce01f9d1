//! Two endpoints with a QP between them, and built-in scenarios run to their outputs.
#![allow(dead_code)]

use rocelab::config::endpoint::EndpointConfig;
use rocelab::endpoint::{Endpoint, Peer};
use rocelab::sim::run::{Outcome, run};
use rocelab::sim::scenario::Scenario;
use rocelab::wire::MacAddr;
use std::net::Ipv4Addr;

/// Endpoints A (198.18.0.1) and B (198.18.0.2) with `cfg`, and A's QP 0x100 to B's QP
/// 0x101 (A's index returned); nothing registered or posted.
pub(crate) fn connected(cfg: &EndpointConfig) -> (Endpoint, Endpoint, usize) {
    let (mac_a, mac_b) = (MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
    let (ip_a, ip_b) = (Ipv4Addr::new(198, 18, 0, 1), Ipv4Addr::new(198, 18, 0, 2));
    let mut a = Endpoint::new(cfg, mac_a, ip_a);
    let mut b = Endpoint::new(cfg, mac_b, ip_b);
    let peer = |mac, ip, qpn| Peer { mac, ip, qpn };
    let qa = a.create_qp(0x100, peer(mac_b, ip_b, 0x101), 0);
    b.create_qp(0x101, peer(mac_a, ip_a, 0x100), 0);
    (a, b, qa)
}

/// A built-in scenario with `keys` (`a.b=value`) changed.
pub(crate) fn built_in(name: &str, keys: &[&str]) -> Scenario {
    Scenario::load_edited(name, |t| {
        for k in keys {
            rocelab::config::set_key(t, k)?;
        }
        Ok(())
    })
    .expect("a built-in scenario with valid keys")
}

/// The report (JSON) and the time series (CSV) of `scenario`, and what the run left.
pub(crate) fn report_and_series(scenario: &Scenario) -> (String, String, Outcome) {
    let outcome = run(scenario).expect("the run ends");
    let report = serde_json::to_string_pretty(&rocelab::report::sim::json(scenario, &outcome))
        .expect("a JSON report");
    let mut series = Vec::new();
    outcome
        .series
        .write_csv(&mut series)
        .expect("CSV into memory");
    let series = String::from_utf8(series).expect("UTF-8 CSV");
    (report, series, outcome)
}
