//! Firewall ingress rules in neutral words, read and written the same way
//! for every cloud.
//!
//! The neutral `ingress` attribute is a list of `{protocol, from_port,
//! to_port, cidr}` objects. Observed, it may also hold the
//! [`crate::resource::MEMBER_RULE_MISSING`] and
//! [`crate::resource::EGRESS_MISSING`] markers (see [`ObservedIngress`]).

use crate::Result;
use crate::{ErrorKind, ProviderError};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fmt;

/// The protocols a neutral rule can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
    Icmp,
    /// Every protocol (`-1` on AWS, `ALL` on Tencent...).
    All,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Icmp => "icmp",
            Protocol::All => "all",
        }
    }

    /// Reads a protocol as specs and the clouds write it: a name in any
    /// case, or the IANA number the clouds' APIs sometimes answer with.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s.to_ascii_lowercase().as_str() {
            "tcp" | "6" => Some(Protocol::Tcp),
            "udp" | "17" => Some(Protocol::Udp),
            "icmp" | "1" => Some(Protocol::Icmp),
            "all" | "any" | "-1" => Some(Protocol::All),
            _ => None,
        }
    }

    /// Whether rules of this protocol have ports.
    pub fn has_ports(self) -> bool {
        matches!(self, Protocol::Tcp | Protocol::Udp)
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rule: traffic of `protocol` on ports `from_port..=to_port` from `cidr`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IngressRule {
    pub protocol: Protocol,
    /// Ports as the spec gave them. Required for tcp and udp; for icmp and
    /// all they carry no meaning for the cloud but are kept, so that an
    /// unchanged rule reads back unchanged.
    pub from_port: Option<u16>,
    pub to_port: Option<u16>,
    /// Source CIDR.
    pub cidr: String,
}

impl IngressRule {
    /// Reads one rule. `protocol` defaults to tcp, `to_port` to `from_port`.
    pub fn parse(v: &Value) -> Result<IngressRule> {
        let bad = |what: String| {
            ProviderError::new(
                ErrorKind::Invalid,
                format!(
                    "firewall ingress rule {v}: {what}; expected {{protocol, from_port, to_port, cidr}}"
                ),
            )
        };
        let obj = v.as_object().ok_or_else(|| bad("not an object".into()))?;
        let protocol = match obj.get("protocol") {
            None | Some(Value::Null) => Protocol::Tcp,
            Some(Value::String(s)) => Protocol::parse(s)
                .ok_or_else(|| bad(format!("protocol `{s}` is not one of tcp, udp, icmp, all")))?,
            Some(other) => return Err(bad(format!("protocol {other} is not text"))),
        };
        let port = |k: &str| -> Result<Option<u16>> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(p) => p
                    .as_u64()
                    .and_then(|n| u16::try_from(n).ok())
                    .map(Some)
                    .ok_or_else(|| bad(format!("`{k}` {p} is not a port number"))),
            }
        };
        let from_port = port("from_port")?;
        let to_port = port("to_port")?.or(from_port);
        if protocol.has_ports() && from_port.is_none() {
            return Err(bad(format!("a {protocol} rule needs `from_port`")));
        }
        if let (Some(f), Some(t)) = (from_port, to_port) {
            if f > t {
                return Err(bad(format!("`from_port` {f} is above `to_port` {t}")));
            }
        }
        let cidr = match obj.get("cidr") {
            Some(Value::String(c)) if !c.is_empty() => c.clone(),
            _ => return Err(bad("`cidr` missing".into())),
        };
        Ok(IngressRule {
            protocol,
            from_port,
            to_port,
            cidr,
        })
    }

    /// Reads the neutral `ingress` attribute (absent or null = no rules).
    pub fn parse_list(v: Option<&Value>) -> Result<Vec<IngressRule>> {
        match v {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(rules)) => rules.iter().map(IngressRule::parse).collect(),
            Some(other) => Err(ProviderError::new(
                ErrorKind::Invalid,
                format!("firewall `ingress` must be a list of rules, got {other}"),
            )),
        }
    }

    /// As the neutral JSON (the shape `resolve` writes).
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("protocol".into(), self.protocol.as_str().into());
        if let Some(p) = self.from_port {
            m.insert("from_port".into(), p.into());
        }
        if let Some(p) = self.to_port {
            m.insert("to_port".into(), p.into());
        }
        m.insert("cidr".into(), self.cidr.clone().into());
        Value::Object(m)
    }

    /// The port range as `from-to` (`-1` each side when there are none).
    pub fn port_range(&self) -> (i32, i32) {
        let p = |p: Option<u16>| p.map(i32::from).unwrap_or(-1);
        (p(self.from_port), p(self.to_port))
    }
}

/// A firewall's rules as the cloud reports them. No `Default`: what is
/// missing must be said (see [`ObservedIngress::complete`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedIngress {
    pub rules: BTreeSet<IngressRule>,
    /// Whether the rule letting members reach each other is there.
    pub member_rule: bool,
    /// Whether all outbound traffic is allowed.
    pub egress: bool,
}

impl ObservedIngress {
    /// A group with `rules`, the members' rule and all egress: what every
    /// complete firewall of gpuform's is.
    pub fn complete(rules: BTreeSet<IngressRule>) -> ObservedIngress {
        ObservedIngress {
            rules,
            member_rule: true,
            egress: true,
        }
    }

    /// Reads an observed `ingress` attribute back (as written by
    /// [`ObservedIngress::to_value`]). Absent means "not reported": the
    /// members' rule and egress are then taken to be there.
    pub fn from_value(v: Option<&Value>) -> Result<ObservedIngress> {
        let marker = crate::resource::member_rule_missing();
        let no_egress = crate::resource::egress_missing();
        let list = match v {
            None | Some(Value::Null) => return Ok(ObservedIngress::complete(BTreeSet::new())),
            Some(Value::Array(l)) => l,
            Some(other) => {
                return Err(ProviderError::new(
                    ErrorKind::Invalid,
                    format!("observed `ingress` must be a list, got {other}"),
                ))
            }
        };
        let mut out = ObservedIngress {
            rules: BTreeSet::new(),
            member_rule: !list.contains(&marker),
            egress: !list.contains(&no_egress),
        };
        for r in list.iter().filter(|r| **r != marker && **r != no_egress) {
            out.rules.insert(IngressRule::parse(r)?);
        }
        Ok(out)
    }

    /// As the observed `ingress` attribute: the rules in a stable order,
    /// then the marker of each missing part (the members' rule, egress).
    pub fn to_value(&self) -> Value {
        let mut list: Vec<Value> = self.rules.iter().map(IngressRule::to_json).collect();
        if !self.member_rule {
            list.push(crate::resource::member_rule_missing());
        }
        if !self.egress {
            list.push(crate::resource::egress_missing());
        }
        Value::Array(list)
    }

    /// What to authorize and revoke to reach `want` (the members' rule is
    /// added by the caller when [`Self::member_rule`] is false).
    pub fn changes_to<'a>(
        &'a self,
        want: &'a [IngressRule],
    ) -> (Vec<&'a IngressRule>, Vec<&'a IngressRule>) {
        let want: BTreeSet<&IngressRule> = want.iter().collect();
        let add = want
            .iter()
            .copied()
            .filter(|r| !self.rules.contains(*r))
            .collect();
        let remove = self.rules.iter().filter(|r| !want.contains(r)).collect();
        (add, remove)
    }
}

/// `json!` of a rule list, for tests and stand-ins.
pub fn rules_json(rules: &[IngressRule]) -> Value {
    json!(rules.iter().map(IngressRule::to_json).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_read_with_defaults_and_refuse_nonsense() {
        let r = IngressRule::parse(&json!({"from_port": 22, "cidr": "0.0.0.0/0"})).unwrap();
        assert_eq!(
            (r.protocol, r.from_port, r.to_port),
            (Protocol::Tcp, Some(22), Some(22))
        );
        assert_eq!(
            r.to_json(),
            json!({"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "0.0.0.0/0"})
        );
        let icmp = IngressRule::parse(&json!({"protocol": "ICMP", "cidr": "10.0.0.0/8"})).unwrap();
        assert_eq!(icmp.port_range(), (-1, -1));
        for (bad, says) in [
            (json!({"protocol": "tcp", "cidr": "x"}), "needs `from_port`"),
            (
                json!({"protocol": "gre", "from_port": 1, "cidr": "x"}),
                "not one of tcp",
            ),
            (
                json!({"from_port": 70000, "cidr": "x"}),
                "not a port number",
            ),
            (
                json!({"from_port": 9, "to_port": 8, "cidr": "x"}),
                "above `to_port`",
            ),
            (json!({"from_port": 22}), "`cidr` missing"),
            (json!("22/tcp"), "not an object"),
        ] {
            let e = IngressRule::parse(&bad).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {e}");
        }
        assert!(IngressRule::parse_list(Some(&json!({"a": 1}))).is_err());
    }

    #[test]
    fn observed_round_trips_with_the_member_marker_and_plans_changes() {
        let ssh = IngressRule::parse(&json!({"from_port": 22, "cidr": "0.0.0.0/0"})).unwrap();
        let web = IngressRule::parse(&json!({"from_port": 443, "cidr": "0.0.0.0/0"})).unwrap();
        for (member_rule, egress) in [(false, true), (true, false), (false, false)] {
            let seen = ObservedIngress {
                rules: [ssh.clone()].into(),
                member_rule,
                egress,
            };
            let back = ObservedIngress::from_value(Some(&seen.to_value())).unwrap();
            assert_eq!(back, seen);
        }
        // Not reported: complete.
        assert_eq!(
            ObservedIngress::from_value(None).unwrap(),
            ObservedIngress::complete(Default::default())
        );
        let seen = ObservedIngress {
            rules: [ssh.clone()].into(),
            member_rule: false,
            egress: false,
        };
        let want = vec![web.clone()];
        let (add, remove) = seen.changes_to(&want);
        assert_eq!(add, vec![&web]);
        assert_eq!(remove, vec![&ssh]);
    }
}
