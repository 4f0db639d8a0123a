//! Network values: CIDR blocks, ports and a cluster's `ingress` rules.

use super::super::yaml::{shorten, Node};
use super::{fields, Validator};
use serde_json::Value;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Checks an IPv4 or IPv6 CIDR; `Err((message, hint))`.
pub fn check_cidr(text: &str, allow_v6: bool) -> Result<(), (String, String)> {
    let example = if allow_v6 {
        "e.g. `10.0.0.0/16`, `0.0.0.0/0` or `::/0`"
    } else {
        "e.g. `10.0.0.0/16`"
    };
    let Some((addr, prefix)) = text.split_once('/') else {
        return Err((
            format!("`{}` is not a CIDR block (no `/prefix`)", shorten(text)),
            format!("write ADDRESS/PREFIX, {example}"),
        ));
    };
    let bad = || {
        (
            format!("`{}` is not a valid CIDR block", shorten(text)),
            format!("write ADDRESS/PREFIX, {example}"),
        )
    };
    let prefix: u32 =
        if !prefix.is_empty() && prefix.len() <= 3 && prefix.chars().all(|c| c.is_ascii_digit()) {
            prefix.parse().map_err(|_| bad())?
        } else {
            return Err(bad());
        };
    // An address as its bits, and its width.
    let parsed = match addr.parse::<Ipv4Addr>() {
        Ok(v4) => Some((u128::from(u32::from(v4)), 32)),
        Err(_) if allow_v6 => addr
            .parse::<Ipv6Addr>()
            .ok()
            .map(|v6| (u128::from(v6), 128)),
        Err(_) => None,
    };
    let Some((bits, width)) = parsed else {
        return Err(bad());
    };
    if prefix > width {
        return Err((
            format!("prefix /{prefix} in `{text}` is larger than {width}"),
            if width == 32 {
                format!("an IPv4 prefix is 0-32, {example}")
            } else {
                "an IPv6 prefix is 0-128".to_string()
            },
        ));
    }
    let host_bits = width - prefix;
    let host = if host_bits == 0 {
        0
    } else {
        u128::MAX >> (128 - host_bits)
    };
    if bits & host != 0 {
        let net = bits & !host;
        let net = if width == 32 {
            Ipv4Addr::from(net as u32).to_string()
        } else {
            Ipv6Addr::from(net).to_string()
        };
        return Err((
            format!("`{text}` has host bits set"),
            format!("did you mean `{net}/{prefix}`?"),
        ));
    }
    Ok(())
}

/// Checks `22` or `8000-8100` (1-65535, low ≤ high); `Err((message, hint))`.
pub fn check_ports(text: &str) -> Result<(u16, u16), (String, String)> {
    let hint = "write a port (`22`) or a range (`8000-8100`) between 1 and 65535".to_string();
    let port = |s: &str| -> Result<u16, (String, String)> {
        let s = s.trim();
        if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) {
            return Err((
                format!("`{}` is not a port or port range", shorten(text)),
                hint.clone(),
            ));
        }
        match s.parse::<u32>() {
            Ok(p) if (1..=65535).contains(&p) => Ok(p as u16),
            _ => Err((
                format!("port {} in `{}` is out of range", shorten(s), shorten(text)),
                hint.clone(),
            )),
        }
    };
    let (lo, hi) = match text.split_once('-') {
        Some((a, b)) => (port(a)?, port(b)?),
        None => {
            let p = port(text)?;
            (p, p)
        }
    };
    if lo > hi {
        return Err((
            format!("port range `{text}` is reversed"),
            format!("write `{hi}-{lo}`"),
        ));
    }
    Ok((lo, hi))
}

impl Validator {
    /// `ingress:`, a list of rules.
    pub(super) fn ingress_list(&mut self, node: &Node, path: &str) -> Option<Value> {
        let items = self.expect(
            node.seq(),
            node,
            path,
            "`ingress` as a list of rules",
            "write `- { ports: \"22\", cidr: 203.0.113.0/24 }` items",
        )?;
        self.each_item(items, path, |v, item, p| {
            v.object(item, p, item.start, &fields::INGRESS)
                .map(Value::Object)
        })
        .map(Value::Array)
    }

    /// A cluster's private network: IPv4, /8 to /28.
    pub(super) fn network_cidr(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.cidr(node, path, false)
    }

    /// An ingress rule's source: IPv4 or IPv6.
    pub(super) fn source_cidr(&mut self, node: &Node, path: &str) -> Option<Value> {
        self.cidr(node, path, true)
    }

    fn cidr(&mut self, node: &Node, path: &str, allow_v6: bool) -> Option<Value> {
        let text = self.scalar_text(node, path, "a CIDR block")?;
        if let Err((m, h)) = check_cidr(&text, allow_v6) {
            self.error(node.start, path, m, h);
            return None;
        }
        if !allow_v6 {
            // A cluster network: the clouds accept /8 to /28 for a private network.
            let prefix: u32 = text
                .rsplit('/')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            if !(8..=28).contains(&prefix) {
                self.error(
                    node.start,
                    path,
                    format!(
                        "network `{text}` has prefix /{prefix}; a cluster network needs /8 to /28"
                    ),
                    "e.g. `cidr: 10.0.0.0/16`",
                );
                return None;
            }
        }
        Some(Value::String(text))
    }

    pub(super) fn ports(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.scalar_text(node, path, "a port or port range")?;
        match check_ports(&text) {
            Ok(_) => Some(Value::String(text)),
            Err((m, h)) => {
                self.error(node.start, path, m, h);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs() {
        assert!(check_cidr("10.0.0.0/16", false).is_ok());
        assert!(check_cidr("0.0.0.0/0", true).is_ok());
        assert!(check_cidr("::/0", true).is_ok());
        assert!(check_cidr("2001:db8::/32", true).is_ok());
        assert!(check_cidr("::/0", false).is_err());
        assert!(check_cidr("10.0.0.0", false).is_err());
        assert!(check_cidr("10.0.0.0/33", false).is_err());
        assert!(check_cidr("10.0.0.256/16", false).is_err());
        assert!(check_cidr("10.0.0.0/+8", false).is_err());
        let (_, hint) = check_cidr("10.0.1.5/16", false).unwrap_err();
        assert!(hint.contains("10.0.0.0/16"), "{hint}");
    }

    #[test]
    fn ports() {
        assert_eq!(check_ports("22"), Ok((22, 22)));
        assert_eq!(check_ports("8000-8100"), Ok((8000, 8100)));
        for bad in ["0", "65536", "a", "", "10-", "-5", "100-10", "1-2-3", "+22"] {
            assert!(check_ports(bad).is_err(), "{bad}");
        }
    }
}
