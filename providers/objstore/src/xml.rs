//! The XML bodies of the dialect: a small tree read from and written with
//! `quick-xml` events. Element names are compared without namespace
//! prefixes (OBS and COS answers carry an `xmlns`); text is unescaped on
//! reading and escaped on writing by `quick-xml`.

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::{Reader, Writer};

/// One element: its local name, its text (for a leaf) and its children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub text: String,
    pub children: Vec<Node>,
}

impl Node {
    pub fn new(name: impl Into<String>) -> Node {
        Node {
            name: name.into(),
            ..Node::default()
        }
    }

    /// A leaf element with text.
    pub fn leaf(name: impl Into<String>, text: impl Into<String>) -> Node {
        Node {
            name: name.into(),
            text: text.into(),
            children: Vec::new(),
        }
    }

    pub fn with(mut self, child: Node) -> Node {
        self.children.push(child);
        self
    }

    pub fn push(&mut self, child: Node) {
        self.children.push(child);
    }

    /// The first direct child named `name`.
    pub fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }

    /// Every direct child named `name`.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The trimmed text of the first direct child named `name`.
    pub fn text_of(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.trim())
    }

    /// The first element named `name` anywhere below (depth first), or
    /// this one.
    pub fn find(&self, name: &str) -> Option<&Node> {
        if self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(name))
    }

    /// Whether any element below (or this one) has text equal to or
    /// containing `needle`.
    pub fn any_text(&self, pred: &dyn Fn(&str) -> bool) -> bool {
        pred(self.text.trim()) || self.children.iter().any(|c| c.any_text(pred))
    }

    /// Reads a document; its root element is returned.
    pub fn parse(bytes: &[u8]) -> Result<Node, String> {
        let mut reader = Reader::from_reader(bytes);
        reader.config_mut().trim_text(true);
        let mut stack: Vec<Node> = Vec::new();
        let mut root: Option<Node> = None;
        loop {
            let event = reader
                .read_event()
                .map_err(|e| format!("not XML at byte {}: {e}", reader.buffer_position()))?;
            match event {
                Event::Start(s) => stack.push(Node::new(local(&s)?)),
                Event::Empty(s) => {
                    let n = Node::new(local(&s)?);
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(n),
                        None => root = root.or(Some(n)),
                    }
                }
                Event::Text(t) => {
                    let text = t.unescape().map_err(|e| format!("bad XML text: {e}"))?;
                    if let Some(top) = stack.last_mut() {
                        top.text.push_str(&text);
                    }
                }
                Event::CData(c) => {
                    let text = String::from_utf8(c.into_inner().into_owned())
                        .map_err(|_| "CDATA is not UTF-8".to_string())?;
                    if let Some(top) = stack.last_mut() {
                        top.text.push_str(&text);
                    }
                }
                Event::End(_) => {
                    let done = stack.pop().ok_or("an end tag without a start")?;
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(done),
                        None => root = root.or(Some(done)),
                    }
                }
                Event::Eof => break,
                _ => {}
            }
        }
        if !stack.is_empty() {
            return Err("the document ends inside an element".into());
        }
        root.ok_or_else(|| "no root element".to_string())
    }

    /// The document: an XML declaration, then this element.
    pub fn to_xml(&self) -> Vec<u8> {
        let mut w = Writer::new(Vec::new());
        // Writing into a Vec cannot fail.
        let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
        self.write(&mut w);
        w.into_inner()
    }

    fn write(&self, w: &mut Writer<Vec<u8>>) {
        let _ = w.write_event(Event::Start(BytesStart::new(self.name.as_str())));
        if !self.text.is_empty() {
            let _ = w.write_event(Event::Text(BytesText::new(&self.text)));
        }
        for c in &self.children {
            c.write(w);
        }
        let _ = w.write_event(Event::End(BytesEnd::new(self.name.as_str())));
    }
}

fn local(s: &BytesStart<'_>) -> Result<String, String> {
    String::from_utf8(s.local_name().as_ref().to_vec())
        .map_err(|_| "an element name is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_escapes_and_drops_namespaces() {
        let doc = Node::new("Tagging").with(
            Node::new("TagSet").with(
                Node::new("Tag")
                    .with(Node::leaf("Key", "a<b"))
                    .with(Node::leaf("Value", "x & y")),
            ),
        );
        let bytes = doc.to_xml();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.contains("a&lt;b") && text.contains("x &amp; y"),
            "{text}"
        );
        assert_eq!(Node::parse(&bytes).unwrap(), doc);
        let ns = br#"<?xml version="1.0"?><o:Error xmlns:o="urn:x"><o:Code>NoSuchBucket</o:Code><Empty/></o:Error>"#;
        let n = Node::parse(ns).unwrap();
        assert_eq!(n.name, "Error");
        assert_eq!(n.text_of("Code"), Some("NoSuchBucket"));
        assert!(n.child("Empty").is_some());
        assert!(Node::parse(b"<a><b></a>").is_err());
        assert!(Node::parse(b"not xml").is_err());
    }
}
