//! The peers file of `rocelab endpoint`: every rank's MAC, IP and first QP number
//! (`[[peer]]` entries, ranks 0 to N-1 each once, unicast addresses each once), and the
//! QPs a rank creates from it to its ring neighbours and for bulk flows.

use super::PeersError;
use crate::endpoint::{Endpoint, Peer};
use crate::wire::MacAddr;
use serde::Deserialize;
use std::net::Ipv4Addr;

/// One rank of the peers file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSpec {
    /// 0 to N-1, each rank once; the ring runs in rank order.
    pub rank: usize,
    /// Its MAC address, written like `02:00:c6:12:00:01`.
    pub mac: MacAddr,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// Its first QP number: the ring QP to the next rank is `qpn`, from the previous
    /// `qpn + 1`, and bulk flows use `qpn + 2` (sender) and `qpn + 3 + sender rank`
    /// (receiver).
    pub qpn: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeersFile {
    peer: Vec<PeerEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerEntry {
    rank: usize,
    mac: String,
    ip: Ipv4Addr,
    qpn: u32,
}

/// Parses a peers file: `[[peer]]` entries with `rank`, `mac`, `ip`, `qpn`, ranks 0..N
/// each once.
pub fn parse_peers(text: &str) -> Result<Vec<PeerSpec>, PeersError> {
    let file: PeersFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or_else(String::new, |s| {
            format!("{}: ", crate::config::location(text, s.start))
        });
        PeersError::Syntax(format!("{at}{}", e.message().trim_end()))
    })?;
    let mut peers = Vec::new();
    for (i, e) in file.peer.iter().enumerate() {
        let mac = e.mac.parse::<MacAddr>().map_err(|_| PeersError::Mac {
            index: i,
            value: e.mac.clone(),
        })?;
        let not_unicast = |field, value: String, why| PeersError::NotUnicast {
            index: i,
            field,
            value,
            why,
        };
        if let Some(why) = mac_kind(mac) {
            return Err(not_unicast("mac", mac.to_string(), why));
        }
        if let Some(why) = ip_kind(e.ip) {
            return Err(not_unicast("ip", e.ip.to_string(), why));
        }
        if !(2..0x00ff_0000).contains(&e.qpn) {
            return Err(PeersError::Qpn {
                index: i,
                value: e.qpn,
            });
        }
        peers.push(PeerSpec {
            rank: e.rank,
            mac,
            ip: e.ip,
            qpn: e.qpn,
        });
    }
    peers.sort_by_key(|p| p.rank);
    for (i, p) in peers.iter().enumerate() {
        if p.rank != i {
            return Err(PeersError::Ranks {
                last: peers.len() - 1,
                missing: i,
            });
        }
    }
    if peers.len() < 2 {
        return Err(PeersError::TooFew);
    }
    if peers.len() > 4096 {
        return Err(PeersError::TooMany(peers.len()));
    }
    let mut macs = std::collections::HashMap::new();
    let mut ips = std::collections::HashMap::new();
    for p in &peers {
        let shared = if let Some(&first) = macs.get(&p.mac) {
            Some(("mac", p.mac.to_string(), first))
        } else if let Some(&first) = ips.get(&p.ip) {
            Some(("ip", p.ip.to_string(), first))
        } else {
            None
        };
        if let Some((field, value, first)) = shared {
            return Err(PeersError::Shared {
                field,
                value,
                first,
                second: p.rank,
            });
        }
        macs.insert(p.mac, p.rank);
        ips.insert(p.ip, p.rank);
    }
    Ok(peers)
}

/// Why `mac` cannot be a station's address, if it cannot.
fn mac_kind(mac: MacAddr) -> Option<&'static str> {
    if mac.is_broadcast() {
        Some("the broadcast address")
    } else if mac.is_multicast() {
        Some("a multicast address")
    } else if mac == MacAddr::default() {
        Some("the zero address")
    } else {
        None
    }
}

/// Why `ip` cannot be a host's address on a link, if it cannot.
fn ip_kind(ip: Ipv4Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        Some("the unspecified address")
    } else if ip.is_broadcast() {
        Some("the broadcast address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else {
        None
    }
}

fn peer(p: &PeerSpec, qpn: u32) -> Peer {
    Peer {
        mac: p.mac,
        ip: p.ip,
        qpn,
    }
}

/// The ring QPs of `rank`: (to the next rank, from the previous one).
pub fn ring_qps(ep: &mut Endpoint, peers: &[PeerSpec], rank: usize) -> (usize, usize) {
    let n = peers.len();
    let (me, next, prev) = (
        &peers[rank],
        &peers[(rank + 1) % n],
        &peers[(rank + n - 1) % n],
    );
    let to_next = ep.create_qp(me.qpn, peer(next, next.qpn + 1), 0);
    let from_prev = ep.create_qp(me.qpn + 1, peer(prev, prev.qpn), 0);
    (to_next, from_prev)
}

/// The QP for a bulk flow from `rank` to `to`.
pub fn flow_send_qp(ep: &mut Endpoint, peers: &[PeerSpec], rank: usize, to: usize) -> usize {
    let dst = &peers[to];
    ep.create_qp(peers[rank].qpn + 2, peer(dst, dst.qpn + 3 + rank as u32), 0)
}

/// The QPs that receive bulk flows from every other rank.
pub fn flow_receive_qps(ep: &mut Endpoint, peers: &[PeerSpec], rank: usize) {
    for (s, p) in peers.iter().enumerate() {
        if s != rank {
            ep.create_qp(peers[rank].qpn + 3 + s as u32, peer(p, p.qpn + 2), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(peers: &[(&str, &str)]) -> String {
        peers
            .iter()
            .enumerate()
            .map(|(rank, (mac, ip))| {
                format!("[[peer]]\nrank = {rank}\nmac = \"{mac}\"\nip = \"{ip}\"\nqpn = 256\n")
            })
            .collect()
    }

    #[test]
    fn a_peers_file_of_hosts_unicast_addresses_is_taken() {
        let text = file(&[
            ("02:00:c6:12:00:01", "198.18.0.1"),
            ("0200.c612.0002", "198.18.0.2"),
        ]);
        let peers = parse_peers(&text).unwrap();
        assert_eq!(peers[1].mac.to_string(), "02:00:c6:12:00:02");
    }

    #[test]
    fn addresses_no_host_can_have_are_refused_with_the_entry_and_the_reason() {
        let ok = ("02:00:c6:12:00:01", "198.18.0.1");
        for (bad, want) in [
            (
                ("ff:ff:ff:ff:ff:ff", "198.18.0.2"),
                "peer[1].mac: ff:ff:ff:ff:ff:ff is the broadcast address",
            ),
            (("01:00:5e:00:00:01", "198.18.0.2"), "a multicast address"),
            (("00:00:00:00:00:00", "198.18.0.2"), "the zero address"),
            (
                ("02:00:c6:12:00:02", "0.0.0.0"),
                "peer[1].ip: 0.0.0.0 is the unspecified address",
            ),
            (
                ("02:00:c6:12:00:02", "255.255.255.255"),
                "the broadcast address",
            ),
            (("02:00:c6:12:00:02", "239.1.1.1"), "a multicast address"),
            (("02:00:c6:12:00:02", "127.0.0.2"), "a loopback address"),
        ] {
            let err = parse_peers(&file(&[ok, bad])).unwrap_err().to_string();
            assert!(err.contains(want), "{bad:?}: {err}");
        }
    }

    #[test]
    fn two_ranks_with_one_address_are_refused() {
        let err = parse_peers(&file(&[
            ("02:00:c6:12:00:01", "198.18.0.1"),
            ("02:00:c6:12:00:02", "198.18.0.2"),
            ("02:00:c6:12:00:01", "198.18.0.3"),
        ]))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "ranks 0 and 2 both have mac 02:00:c6:12:00:01; each rank needs its own"
        );
        let err = parse_peers(&file(&[
            ("02:00:c6:12:00:01", "198.18.0.1"),
            ("02:00:c6:12:00:02", "198.18.0.1"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("both have ip 198.18.0.1"), "{err}");
    }
}
