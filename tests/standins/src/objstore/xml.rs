//! The stand-in's own XML: a strict little reader of the request bodies the
//! references document (elements, text, the five predefined entities, an
//! optional declaration) and a writer of answers. Written apart from the
//! client's `quick-xml` code on purpose: the oracle shares nothing with
//! the code under test.

/// An element: name without namespace prefix, text, children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct El {
    pub name: String,
    pub text: String,
    pub kids: Vec<El>,
}

impl El {
    pub fn kid(&self, name: &str) -> Option<&El> {
        self.kids.iter().find(|k| k.name == name)
    }

    pub fn kids<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a El> + 'a {
        self.kids.iter().filter(move |k| k.name == name)
    }

    pub fn text_of(&self, name: &str) -> Option<&str> {
        self.kid(name).map(|k| k.text.as_str())
    }
}

/// Parses a whole document; `Err` says why (answered as `MalformedXML`).
pub fn parse(body: &[u8]) -> Result<El, String> {
    let s = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_string())?;
    let mut p = Parser { s, i: 0 };
    p.skip_ws();
    if p.rest().starts_with("<?xml") {
        let end = p.rest().find("?>").ok_or("unterminated declaration")?;
        p.i += end + 2;
    }
    p.skip_ws();
    let root = p.element()?;
    p.skip_ws();
    if p.i != s.len() {
        return Err("content after the root element".into());
    }
    Ok(root)
}

struct Parser<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.i..]
    }

    fn skip_ws(&mut self) {
        while self.rest().starts_with([' ', '\n', '\r', '\t']) {
            self.i += 1;
        }
    }

    fn element(&mut self) -> Result<El, String> {
        if !self.rest().starts_with('<') {
            return Err(format!("expected an element at byte {}", self.i));
        }
        let close = self.rest().find('>').ok_or("unterminated tag")?;
        let tag = &self.rest()[1..close];
        self.i += close + 1;
        let empty = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let qname = tag
            .split_whitespace()
            .next()
            .ok_or("a tag without a name")?;
        let name = qname.rsplit(':').next().unwrap_or(qname).to_string();
        if name.is_empty() || name.starts_with(['/', '!', '?']) {
            return Err(format!("bad tag `<{tag}>`"));
        }
        let mut el = El {
            name,
            ..El::default()
        };
        if empty {
            return Ok(el);
        }
        loop {
            let next = self.rest().find('<').ok_or("unterminated element")?;
            el.text.push_str(&unescape(&self.rest()[..next])?);
            self.i += next;
            if self.rest().starts_with("</") {
                let end = self.rest().find('>').ok_or("unterminated end tag")?;
                let closing = self.rest()[2..end].trim();
                if closing != qname {
                    return Err(format!("`</{closing}>` closes `<{qname}>`"));
                }
                self.i += end + 1;
                if !el.kids.is_empty() {
                    el.text = el.text.trim().to_string();
                }
                return Ok(el);
            }
            el.kids.push(self.element()?);
        }
    }
}

fn unescape(t: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').ok_or("an unterminated entity")?;
        out.push(match &rest[i + 1..i + end] {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            other => return Err(format!("unknown entity `&{other};`")),
        });
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Escapes text for an answer.
pub fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `<name>text</name>`, escaped.
pub fn leaf(name: &str, text: &str) -> String {
    format!("<{name}>{}</{name}>", esc(text))
}

/// A document: the declaration, then `<root>inner</root>`.
pub fn doc(root: &str, inner: &str) -> String {
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{root}>{inner}</{root}>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_references_show() {
        let e = parse(
            b"<?xml version=\"1.0\"?>\n<Tagging><TagSet><Tag><Key>a&amp;b</Key><Value/></Tag></TagSet></Tagging>",
        )
        .unwrap();
        let tag = e.kid("TagSet").unwrap().kid("Tag").unwrap();
        assert_eq!(tag.text_of("Key"), Some("a&b"));
        assert_eq!(tag.text_of("Value"), Some(""));
        assert!(parse(b"<a><b></a>").is_err());
        assert!(parse(b"<a>&bogus;</a>").is_err());
        assert!(parse(b"<a></a><b/>").is_err());
        assert_eq!(leaf("K", "x<y"), "<K>x&lt;y</K>");
    }
}
