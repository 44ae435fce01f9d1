//! `inspect --filter`: the common cases of a display filter, every term of a
//! comma-separated list must hold: `qp=0x12`, `opcode=RC_RDMA_WRITE_FIRST` (or Wireshark's
//! name, or the number), `ecn=ce|ect0|ect1|not-ect`, `pfc`, `roce`, `port=NAME` (the
//! pcapng interface, by name or id; a replay's output has one per switch port; one the
//! capture does not have is refused at the end, with the names it has).

use super::record::FrameRecord;
use crate::wire::bth::Opcode;

/// One term.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    Qp(u32),
    Opcode(u8),
    Ecn(u8),
    Pfc,
    Roce,
    Port(String),
}

/// A parsed `--filter`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    terms: Vec<Term>,
}

/// A filter that does not parse: which term, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--filter term '{term}': {why}")]
pub struct FilterError {
    term: String,
    why: String,
}

fn number(s: &str) -> Option<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

impl Filter {
    /// Parses `qp=…,opcode=…,ecn=…,pfc,roce,port=…`; an empty text keeps every frame.
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        let mut terms = Vec::new();
        for raw in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let bad = |why: &str| FilterError {
                term: raw.to_owned(),
                why: why.to_owned(),
            };
            let (key, value) = match raw.split_once('=') {
                Some((k, v)) => (k.trim().to_ascii_lowercase(), Some(v.trim())),
                None => (raw.to_ascii_lowercase(), None),
            };
            let term = match (key.as_str(), value) {
                ("pfc", None) => Term::Pfc,
                ("roce", None) => Term::Roce,
                ("qp", Some(v)) => Term::Qp(
                    number(v)
                        .filter(|&q| q <= 0xff_ffff)
                        .ok_or_else(|| bad("a QP number, decimal or 0x hex, below 2^24"))?,
                ),
                ("opcode", Some(v)) => {
                    let op = match number(v) {
                        Some(n) => u8::try_from(n).ok(),
                        None => (0..=255u8).find(|&o| {
                            let op = Opcode(o);
                            op.ibta_name().eq_ignore_ascii_case(v)
                                || op.wireshark_name().eq_ignore_ascii_case(v)
                                || op.name().eq_ignore_ascii_case(v)
                        }),
                    };
                    Term::Opcode(op.ok_or_else(|| {
                        bad("an opcode number, or a name such as RC_RDMA_WRITE_FIRST or CNP")
                    })?)
                }
                ("ecn", Some(v)) => Term::Ecn(match v.to_ascii_lowercase().as_str() {
                    "not-ect" | "notect" | "0" => 0,
                    "ect1" | "ect(1)" | "1" => 1,
                    "ect0" | "ect(0)" | "2" => 2,
                    "ce" | "3" => 3,
                    _ => return Err(bad("ce, ect0, ect1 or not-ect")),
                }),
                ("port", Some(v)) if !v.is_empty() => Term::Port(v.to_owned()),
                _ => {
                    return Err(bad(
                        "give qp=N, opcode=NAME, ecn=ce|ect0|ect1|not-ect, pfc, roce or port=NAME",
                    ));
                }
            };
            terms.push(term);
        }
        Ok(Filter { terms })
    }

    /// True when no term is given.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether frame `r`, captured on interface `interface_id` named `interface`, passes.
    pub fn matches(&self, r: &FrameRecord, interface_id: u32, interface: Option<&str>) -> bool {
        self.terms.iter().all(|t| match t {
            Term::Qp(q) => r.dest_qp == Some(*q),
            Term::Opcode(o) => r.bth_opcode == Some(*o),
            Term::Ecn(e) => r.ip_version.is_some() && r.ecn == Some(*e),
            Term::Pfc => r.pfc_enable.is_some(),
            Term::Roce => r.bth_opcode.is_some(),
            Term::Port(p) => port_is(p, interface_id, interface),
        })
    }

    /// True when a term names an interface (`port=`).
    pub fn names_ports(&self) -> bool {
        self.terms.iter().any(|t| matches!(t, Term::Port(_)))
    }

    /// The first `port=` term that names none of `interfaces` (id, name): a typo would
    /// otherwise look like an empty capture.
    pub fn unknown_port(&self, interfaces: &[(u32, Option<String>)]) -> Option<&str> {
        self.terms.iter().find_map(|t| match t {
            Term::Port(p)
                if !interfaces
                    .iter()
                    .any(|(id, name)| port_is(p, *id, name.as_deref())) =>
            {
                Some(p.as_str())
            }
            _ => None,
        })
    }
}

/// Whether `port=p` names interface `id` called `name`: by name, or by id.
fn port_is(p: &str, id: u32, name: Option<&str>) -> bool {
    name == Some(p) || number(p) == Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_parse_and_bad_ones_name_themselves() {
        let f = Filter::parse("qp=0x12, opcode=rc_rdma_write_first,ecn=ce,pfc,port=p1").unwrap();
        assert_eq!(f.terms.len(), 5);
        assert_eq!(f.terms[1], Term::Opcode(0x06));
        assert_eq!(
            Filter::parse("opcode=CNP").unwrap().terms,
            [Term::Opcode(0x81)]
        );
        assert_eq!(Filter::parse("").unwrap(), Filter::default());
        for bad in ["qp=zz", "ecn=red", "opcode=FOO", "bogus", "qp=16777216"] {
            let e = Filter::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn a_port_is_known_by_name_or_id() {
        let interfaces = [(0, Some("eth0".to_owned())), (1, None)];
        let f = Filter::parse("port=eth0,port=1").unwrap();
        assert_eq!(f.unknown_port(&interfaces), None);
        let f = Filter::parse("roce,port=eth9").unwrap();
        assert_eq!(f.unknown_port(&interfaces), Some("eth9"));
        assert_eq!(
            Filter::parse("port=2").unwrap().unknown_port(&interfaces),
            Some("2")
        );
        assert!(!Filter::parse("roce").unwrap().names_ports());
    }
}
