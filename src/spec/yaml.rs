//! YAML with positions: a small document tree built from saphyr-parser's
//! spanned events. Every node knows where it starts and ends, so later steps
//! (variables, validation, `locate`, `fmt`) can point into the file.
//!
//! Beyond parsing, this step reports what YAML parsers usually accept
//! silently: duplicate keys in a mapping, non-string keys, custom tags. It
//! expands aliases (with a budget against "billion laughs") and limits nesting
//! depth so nothing downstream can overflow the stack.

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use std::collections::HashMap;

/// Nesting limit (mappings and sequences); a spec needs fewer than ten.
const MAX_DEPTH: usize = 64;
/// Node limit including alias expansion.
const MAX_NODES: usize = 200_000;

/// A 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct Pos {
    pub line: usize,
    pub col: usize,
}

impl Pos {
    fn from_marker(m: saphyr_parser::Marker) -> Pos {
        Pos {
            line: m.line(),
            col: m.col() + 1,
        }
    }
}

/// How a scalar was written, which decides how it may be typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Plain: may be a number, a boolean or null.
    Plain,
    /// Quoted (or tagged `!!str`): always a string.
    Quoted,
    /// `|` or `>` block: always a string.
    Block,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Scalar {
        text: String,
        style: Style,
        /// `${var.…}` was substituted into it (then quoted numbers may still be numbers).
        substituted: bool,
    },
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub key: String,
    pub key_pos: Pos,
    pub value: Node,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub kind: Kind,
    pub start: Pos,
    pub end: Pos,
    /// A flow collection (`[..]`, `{..}`) rather than a block one.
    pub flow: bool,
}

/// A problem found while parsing: position, message, hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issue {
    pub pos: Pos,
    pub message: String,
    pub hint: Option<String>,
}

/// The outcome of parsing one file: the document (if the syntax was valid)
/// and the problems found.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub root: Option<Node>,
    pub issues: Vec<Issue>,
    /// Where each block mapping key starts (for `fmt`): (line, col) → end col.
    pub block_keys: HashMap<(usize, usize), usize>,
    /// Multi-line scalars and flow collections: (start, end, is_block_scalar).
    pub spans: Vec<(Pos, Pos, bool)>,
}

impl Node {
    pub fn is_null(&self) -> bool {
        matches!(&self.kind, Kind::Scalar { text, style: Style::Plain, .. }
            if text.is_empty() || text == "~" || text == "null" || text == "Null" || text == "NULL")
    }

    /// A short description for "found …" messages.
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Map(_) => "a mapping".to_string(),
            Kind::Seq(_) => "a list".to_string(),
            Kind::Scalar { .. } if self.is_null() => "nothing (null)".to_string(),
            Kind::Scalar { text, style, .. } => {
                let shown = shorten(text);
                if *style == Style::Plain {
                    if text.parse::<i64>().is_ok() {
                        return format!("the number {shown}");
                    }
                    if text.parse::<f64>().is_ok() && text.chars().any(|c| c.is_ascii_digit()) {
                        return format!("the number {shown}");
                    }
                    if matches!(
                        text.as_str(),
                        "true" | "false" | "True" | "False" | "TRUE" | "FALSE"
                    ) {
                        return format!("the boolean {shown}");
                    }
                }
                format!("the string \"{shown}\"")
            }
        }
    }

    fn count(&self) -> usize {
        match &self.kind {
            Kind::Scalar { .. } => 1,
            Kind::Seq(items) => 1 + items.iter().map(Node::count).sum::<usize>(),
            Kind::Map(entries) => 1 + entries.iter().map(|e| 1 + e.value.count()).sum::<usize>(),
        }
    }

    /// A scalar's text; `None` for a list or a mapping.
    pub fn text(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// A mapping's entries; `None` for a scalar or a list.
    pub fn map(&self) -> Option<&[Entry]> {
        match &self.kind {
            Kind::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// A list's items; `None` for a scalar or a mapping.
    pub fn seq(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// A mapping's entries; none for a scalar or a list.
    pub fn entries(&self) -> &[Entry] {
        self.map().unwrap_or_default()
    }

    /// A list's items; none for a scalar or a mapping.
    pub fn items(&self) -> &[Node] {
        self.seq().unwrap_or_default()
    }

    /// The entry of a mapping with this key.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.entries().iter().find(|e| e.key == key)
    }

    /// Same content, ignoring positions (used by `fmt` to prove it kept the meaning).
    pub fn same_content(&self, other: &Node) -> bool {
        match (&self.kind, &other.kind) {
            (
                Kind::Scalar {
                    text: a, style: sa, ..
                },
                Kind::Scalar {
                    text: b, style: sb, ..
                },
            ) => a == b && (sa == sb || (*sa != Style::Plain && *sb != Style::Plain)),
            (Kind::Seq(a), Kind::Seq(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_content(y))
            }
            (Kind::Map(a), Kind::Map(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(x, y)| x.key == y.key && x.value.same_content(&y.value))
            }
            _ => false,
        }
    }
}

/// At most 40 characters of a value for messages (values may be long or secret-ish).
pub(crate) fn shorten(text: &str) -> String {
    let one_line = text.replace('\n', "\\n");
    if one_line.chars().count() > 40 {
        let cut: String = one_line.chars().take(37).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}

enum Frame {
    Seq {
        start: Pos,
        flow: bool,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        start: Pos,
        flow: bool,
        anchor: usize,
        entries: Vec<Entry>,
        key: Option<(String, Pos)>,
        bad_key: bool,
    },
}

struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    root: Option<Node>,
    docs: usize,
    issues: Vec<Issue>,
    nodes: usize,
    block_keys: HashMap<(usize, usize), usize>,
    spans: Vec<(Pos, Pos, bool)>,
    chars: Vec<char>,
}

impl Builder {
    /// Attaches a finished node to its parent (or makes it the document).
    fn finish(&mut self, node: Node, anchor: usize, key_end: Option<Pos>) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                key,
                bad_key,
                flow,
                ..
            }) => match key.take() {
                None if *bad_key => {
                    // The value of a key we rejected: drop the pair.
                    *bad_key = false;
                }
                None => match &node.kind {
                    Kind::Scalar { text, .. } => {
                        if !*flow {
                            if let Some(end) = key_end {
                                if end.line == node.start.line {
                                    self.block_keys
                                        .insert((node.start.line, node.start.col), end.col);
                                }
                            }
                        }
                        if let Some(first) = entries.iter().find(|e| &e.key == text) {
                            self.issues.push(Issue {
                                pos: node.start,
                                message: format!(
                                    "duplicate key `{}` (first defined at line {})",
                                    shorten(text),
                                    first.key_pos.line
                                ),
                                hint: Some("a key may appear once in a mapping; remove or merge one of them".into()),
                            });
                            *bad_key = true;
                        } else {
                            *key = Some((text.clone(), node.start));
                        }
                    }
                    _ => {
                        self.issues.push(Issue {
                            pos: node.start,
                            message: format!(
                                "a mapping key must be a string, found {}",
                                node.describe()
                            ),
                            hint: Some("write keys as plain words, e.g. `trainer:`".into()),
                        });
                        *bad_key = true;
                    }
                },
                Some((k, key_pos)) => entries.push(Entry {
                    key: k,
                    key_pos,
                    value: node,
                }),
            },
        }
    }

    fn on_event(&mut self, ev: Event<'_>, span: Span) -> Result<(), Issue> {
        let start = Pos::from_marker(span.start);
        let end = Pos::from_marker(span.end);
        match ev {
            Event::DocumentStart(_) => {
                self.docs += 1;
                if self.docs > 1 {
                    return Err(Issue {
                        pos: start,
                        message: "a spec file holds one YAML document, found a second one".into(),
                        hint: Some("remove the `---` separator, or split the file".into()),
                    });
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let mut st = match style {
                    ScalarStyle::Plain => Style::Plain,
                    ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => Style::Quoted,
                    _ => Style::Block,
                };
                if let Some(tag) = tag {
                    if tag.is_yaml_core_schema() && tag.suffix == "str" {
                        st = Style::Quoted;
                    } else if !(tag.is_yaml_core_schema()
                        && matches!(tag.suffix.as_str(), "int" | "float" | "bool" | "null"))
                    {
                        self.issues.push(Issue {
                            pos: start,
                            message: format!("unsupported YAML tag `{}{}`", tag.handle, tag.suffix),
                            hint: Some("remove the tag; gpuform specs use plain values".into()),
                        });
                    }
                }
                if end.line > start.line || st == Style::Block {
                    self.spans.push((start, end, st == Style::Block));
                }
                self.count(1)?;
                let node = Node {
                    kind: Kind::Scalar {
                        text: text.into_owned(),
                        style: st,
                        substituted: false,
                    },
                    start,
                    end,
                    flow: false,
                };
                self.finish(node, anchor, Some(end));
            }
            Event::Alias(id) => match self.anchors.get(&id) {
                Some(n) => {
                    let mut n = n.clone();
                    self.count(n.count())?;
                    n.start = start;
                    n.end = end;
                    self.finish(n, 0, None);
                }
                None => {
                    return Err(Issue {
                        pos: start,
                        message: "alias to an unknown anchor".into(),
                        hint: Some("define the anchor (`&name`) before using it (`*name`)".into()),
                    })
                }
            },
            Event::SequenceStart(anchor, tag) => self.open(span, anchor, tag.is_some(), true)?,
            Event::MappingStart(anchor, tag) => self.open(span, anchor, tag.is_some(), false)?,
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(frame) = self.stack.pop() {
                    let (node, anchor) = match frame {
                        Frame::Seq {
                            start: s,
                            flow,
                            anchor,
                            items,
                        } => (
                            Node {
                                kind: Kind::Seq(items),
                                start: s,
                                end,
                                flow,
                            },
                            anchor,
                        ),
                        Frame::Map {
                            start: s,
                            flow,
                            anchor,
                            entries,
                            ..
                        } => (
                            Node {
                                kind: Kind::Map(entries),
                                start: s,
                                end,
                                flow,
                            },
                            anchor,
                        ),
                    };
                    if node.flow && end.line > node.start.line {
                        self.spans.push((node.start, end, false));
                    }
                    self.finish(node, anchor, None);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn open(&mut self, span: Span, anchor: usize, tagged: bool, seq: bool) -> Result<(), Issue> {
        let start = Pos::from_marker(span.start);
        if tagged {
            self.issues.push(Issue {
                pos: start,
                message: "unsupported YAML tag on a collection".into(),
                hint: Some("remove the tag".into()),
            });
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(Issue {
                pos: start,
                message: format!("nesting deeper than {MAX_DEPTH} levels"),
                hint: Some("a spec needs only a few levels of nesting".into()),
            });
        }
        self.count(1)?;
        let flow = span.end.index() > span.start.index()
            && matches!(self.chars.get(span.end.index() - 1), Some('[') | Some('{'));
        self.stack.push(if seq {
            Frame::Seq {
                start,
                flow,
                anchor,
                items: Vec::new(),
            }
        } else {
            Frame::Map {
                start,
                flow,
                anchor,
                entries: Vec::new(),
                key: None,
                bad_key: false,
            }
        });
        Ok(())
    }

    fn count(&mut self, n: usize) -> Result<(), Issue> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_NODES {
            return Err(Issue {
                pos: Pos { line: 1, col: 1 },
                message: format!(
                    "document too large (more than {MAX_NODES} nodes, counting aliases)"
                ),
                hint: Some("a spec file is small; check for recursive aliases".into()),
            });
        }
        Ok(())
    }
}

/// Parses `text` into a tree with positions.
pub(crate) fn parse(text: &str) -> Parsed {
    let mut b = Builder {
        stack: Vec::new(),
        anchors: HashMap::new(),
        root: None,
        docs: 0,
        issues: Vec::new(),
        nodes: 0,
        block_keys: HashMap::new(),
        spans: Vec::new(),
        chars: text.chars().collect(),
    };
    let mut fatal = false;
    for item in Parser::new_from_str(text) {
        match item {
            Ok((ev, span)) => {
                if let Err(issue) = b.on_event(ev, span) {
                    b.issues.push(issue);
                    fatal = true;
                    break;
                }
            }
            Err(e) => {
                let m = e.marker();
                b.issues.push(Issue {
                    pos: Pos {
                        line: m.line().max(1),
                        col: m.col() + 1,
                    },
                    message: format!("invalid YAML: {}", e.info()),
                    hint: Some(syntax_hint(e.info())),
                });
                fatal = true;
                break;
            }
        }
    }
    let root = if fatal { None } else { b.root };
    Parsed {
        root,
        issues: b.issues,
        block_keys: b.block_keys,
        spans: b.spans,
    }
}

fn syntax_hint(info: &str) -> String {
    if info.contains("tab") {
        "indent with spaces; YAML does not allow tabs for indentation".into()
    } else if info.contains("':'") || info.contains("mapping values") {
        "check the indentation of this line, that every `[` or `{` above it is closed, and quote values that contain `: `".into()
    } else if info.contains("flow") || info.contains(']') || info.contains('}') {
        "check that every `[` and `{` is closed on this or a following line".into()
    } else if info.contains("quote") || info.contains("quoted") {
        "close the quoted string".into()
    } else {
        "check the indentation and quoting around this position".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(text: &str) -> Node {
        let p = parse(text);
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        p.root.expect("root")
    }

    #[test]
    fn positions_are_one_based() {
        let n = root("a:\n  b: [1, 2]\n");
        let Kind::Map(e) = &n.kind else { panic!() };
        assert_eq!(e[0].key_pos, Pos { line: 1, col: 1 });
        let Kind::Map(inner) = &e[0].value.kind else {
            panic!()
        };
        assert_eq!(inner[0].key_pos, Pos { line: 2, col: 3 });
        assert_eq!(inner[0].value.start, Pos { line: 2, col: 6 });
        assert!(inner[0].value.flow);
    }

    #[test]
    fn duplicate_keys_are_reported() {
        let p = parse("a: 1\nb: 2\na: 3\n");
        assert_eq!(p.issues.len(), 1);
        assert_eq!(p.issues[0].pos, Pos { line: 3, col: 1 });
        assert!(p.issues[0].message.contains("duplicate key `a`"));
        assert!(p.issues[0].message.contains("line 1"));
        let Kind::Map(e) = &p.root.expect("root").kind else {
            panic!()
        };
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn syntax_error_has_position() {
        let p = parse("a: [1, 2\nb: 1\n");
        assert!(p.root.is_none());
        assert_eq!(p.issues[0].pos.line, 2);
        assert!(p.issues[0].message.starts_with("invalid YAML"));
    }

    #[test]
    fn aliases_expand_and_are_bounded() {
        let n = root("a: &x [1, 2]\nb: *x\n");
        let Kind::Map(e) = &n.kind else { panic!() };
        assert!(e[1].value.same_content(&e[0].value));
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..8 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let p = parse(&bomb);
        assert!(p.root.is_none());
        assert!(p.issues[0].message.contains("too large"));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let p = parse(&text);
        assert!(p.root.is_none());
    }

    #[test]
    fn second_document_is_refused() {
        let p = parse("a: 1\n---\nb: 2\n");
        assert!(p.root.is_none());
        assert!(p.issues[0].message.contains("one YAML document"));
    }

    #[test]
    fn tags() {
        let n = root("a: !!str 4\n");
        let Kind::Map(e) = &n.kind else { panic!() };
        assert!(matches!(
            e[0].value.kind,
            Kind::Scalar {
                style: Style::Quoted,
                ..
            }
        ));
        let p = parse("a: !custom 4\n");
        assert_eq!(p.issues.len(), 1);
    }
}
