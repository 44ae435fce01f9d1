//! MAC learning: source addresses are learned per ingress port; unknown, broadcast and
//! multicast destinations are flooded; entries age out.

use crate::time::Nanos;
use crate::wire::MacAddr;
use rustc_hash::FxHashMap;

/// Where a frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// To one known port.
    Port(usize),
    /// To every port but the ingress port.
    Flood,
    /// The destination sits behind the ingress port: filter (do not send back).
    Filter,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    port: usize,
    last_seen: Nanos,
}

/// The MAC table (forwarding database): each learned source address, its port and when
/// it was last seen.
#[derive(Debug, Clone)]
pub struct Fdb {
    entries: FxHashMap<MacAddr, Entry>,
    age: Nanos,
    /// The last (source, port) learned and when its entry was refreshed: a flow's frames
    /// repeat it, and refreshing an entry more often than age/64 changes nothing.
    last_learned: Option<(MacAddr, usize, Nanos)>,
}

impl Fdb {
    /// An empty table whose entries age out after `age` without traffic.
    pub fn new(age: Nanos) -> Fdb {
        Fdb {
            entries: FxHashMap::default(),
            age,
            last_learned: None,
        }
    }

    /// Learns `src` on `port` (unicast sources only).
    #[inline]
    pub fn learn(&mut self, now: Nanos, port: usize, src: MacAddr) {
        let fresh = self.last_learned.is_some_and(|(mac, p, at)| {
            mac == src && p == port && now.saturating_sub(at).0 < self.age.0 / 64
        });
        if !fresh && !src.is_multicast() {
            self.last_learned = Some((src, port, now));
            match self.entries.get_mut(&src) {
                Some(e) => {
                    e.port = port;
                    e.last_seen = now;
                }
                None => {
                    self.entries.insert(
                        src,
                        Entry {
                            port,
                            last_seen: now,
                        },
                    );
                }
            }
        }
    }

    /// Where a frame for `dst` that came in on `port` goes. An entry found aged out is
    /// forgotten.
    #[inline]
    pub fn lookup(&mut self, now: Nanos, port: usize, dst: MacAddr) -> Lookup {
        if dst.is_multicast() {
            return Lookup::Flood;
        }
        match self.entries.get(&dst) {
            Some(e) if now.saturating_sub(e.last_seen) <= self.age => {
                if e.port == port {
                    Lookup::Filter
                } else {
                    Lookup::Port(e.port)
                }
            }
            Some(_) => {
                // Aged out: forget it and flood, as a switch does.
                self.entries.remove(&dst);
                Lookup::Flood
            }
            None => Lookup::Flood,
        }
    }

    /// Entries currently in the table (aged ones included until looked up).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xa]);
    const B: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xb]);

    /// A frame from `src` on `port` to `dst`, as the switch takes it: learned, then looked
    /// up.
    fn take(fdb: &mut Fdb, now: Nanos, port: usize, src: MacAddr, dst: MacAddr) -> Lookup {
        fdb.learn(now, port, src);
        fdb.lookup(now, port, dst)
    }

    #[test]
    fn learns_floods_filters_and_ages() {
        let mut fdb = Fdb::new(Nanos::from_secs(300));
        assert_eq!(take(&mut fdb, Nanos(0), 0, A, B), Lookup::Flood);
        assert_eq!(take(&mut fdb, Nanos(1), 1, B, A), Lookup::Port(0));
        assert_eq!(take(&mut fdb, Nanos(2), 0, A, B), Lookup::Port(1));
        assert_eq!(
            take(&mut fdb, Nanos(3), 0, A, MacAddr::BROADCAST),
            Lookup::Flood
        );
        // B moves behind port 0: traffic from port 0 to B is filtered.
        assert_eq!(take(&mut fdb, Nanos(4), 0, B, A), Lookup::Filter);
        // 300 s later without B: aged out, flooded.
        let later = Nanos(4) + Nanos::from_secs(300) + Nanos(1);
        assert_eq!(take(&mut fdb, later, 1, A, B), Lookup::Flood);
    }
}
