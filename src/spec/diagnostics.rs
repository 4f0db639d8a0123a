//! User-facing errors that point into a YAML file.
//!
//! A [`Diagnostic`] names the file, the 1-based line and column, the YAML path
//! (`clusters.trainer.nodes`), what went wrong and a hint. [`Diagnostics`] is a
//! list of them: every layer that reads the spec reports all the problems it
//! finds in one run, in this one format.
//!
//! Rendering: `Display` gives plain text (stable, good for logs and tests);
//! [`Diagnostics::render`] with `graphical = true` uses miette's report with
//! colours, used when stderr is a terminal ([`Diagnostics::eprint`]).
//!
//! The source excerpt needs the file's text. Diagnostics carry only the file
//! name, so the loader registers the text of each file it reads in a small
//! process-wide cache ([`register_source`]); a file that was not registered is
//! read from disk when rendered, and no excerpt is shown if that fails.

use serde::Serialize;
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// One problem, located in a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// File name as given by the user (or a label such as `<command line>`).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column (in characters), when known.
    pub column: Option<usize>,
    /// YAML path of the offending node, e.g. `clusters.trainer.zones[1]`.
    pub yaml_path: Option<String>,
    /// What is wrong and what was expected.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A diagnostic about `file` with no position yet.
    pub fn new(file: impl Into<String>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: file.into(),
            line: None,
            column: None,
            yaml_path: None,
            message: message.into(),
            hint: None,
        }
    }

    /// Sets the 1-based line and column.
    pub fn at(mut self, line: usize, column: usize) -> Diagnostic {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    /// Sets the YAML path (an empty path means the document root and is not shown).
    pub fn path(mut self, yaml_path: impl Into<String>) -> Diagnostic {
        let p = yaml_path.into();
        self.yaml_path = if p.is_empty() { None } else { Some(p) };
        self
    }

    /// Sets the hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    /// Sets the hint when there is one.
    pub fn maybe_hint(mut self, hint: Option<String>) -> Diagnostic {
        if hint.is_some() {
            self.hint = hint;
        }
        self
    }

    /// `file:line:col` (or less when the position is unknown).
    pub fn location(&self) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{}:{}:{}", self.file, l, c),
            (Some(l), None) => format!("{}:{}", self.file, l),
            _ => self.file.clone(),
        }
    }

    /// The diagnostic as JSON (the shape used by `--json` outputs).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "severity": "error",
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "yaml_path": self.yaml_path,
            "message": self.message,
            "hint": self.hint,
        })
    }

    fn write_plain(&self, f: &mut impl fmt::Write, source: Option<&str>) -> fmt::Result {
        writeln!(f, "{}: error: {}", self.location(), self.message)?;
        if let Some(p) = &self.yaml_path {
            writeln!(f, "  at {p}")?;
        }
        if let Some(h) = &self.hint {
            writeln!(f, "  hint: {h}")?;
        }
        if let (Some(src), Some(line)) = (source, self.line) {
            if let Some(text) = nth_line(src, line) {
                let text = text.trim_end_matches('\r').replace('\t', " ");
                let col = self.column.unwrap_or(1).max(1);
                let width = caret_width(&text, col);
                let num = line.to_string();
                let pad = " ".repeat(num.len());
                writeln!(f, "  {pad} |")?;
                writeln!(f, "  {num} | {text}")?;
                writeln!(f, "  {pad} | {}{}", " ".repeat(col - 1), "^".repeat(width))?;
            }
        }
        Ok(())
    }
}

/// Line `n` (1-based) of `src`, counting CR LF, LF and a lone CR as breaks (as YAML does).
fn nth_line(src: &str, n: usize) -> Option<&str> {
    let mut rest = src;
    for _ in 1..n {
        let i = rest.find(['\n', '\r'])?;
        let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[i + skip..];
    }
    Some(rest.split(['\n', '\r']).next().unwrap_or(""))
}

/// How many characters the caret under `col` should cover: the token there.
fn caret_width(line: &str, col: usize) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let start = col - 1;
    if start >= chars.len() {
        return 1;
    }
    let quote = chars[start];
    if quote == '"' || quote == '\'' {
        let mut i = start + 1;
        while i < chars.len() {
            if chars[i] == quote && (quote == '\'' || chars[i - 1] != '\\') {
                return i - start + 1;
            }
            i += 1;
        }
        return chars.len() - start;
    }
    if chars[start] == '$' && chars.get(start + 1) == Some(&'{') {
        if let Some(close) = chars[start..].iter().position(|c| *c == '}') {
            return close + 1;
        }
    }
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == ',' || c == ']' || c == '}' || c == '#' {
            break;
        }
        if c == ':' && (i + 1 == chars.len() || chars[i + 1].is_whitespace()) {
            break;
        }
        i += 1;
    }
    (i - start).max(1)
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let src = source_for(&self.file);
        self.write_plain(f, src.as_deref())
    }
}

impl std::error::Error for Diagnostic {}

/// Several diagnostics, reported together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// No diagnostics.
    pub fn new() -> Diagnostics {
        Diagnostics(Vec::new())
    }

    /// True when there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of diagnostics.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Adds one.
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    /// Adds all of `other`.
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// Iterates in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    /// `Err(self)` when not empty, else `Ok(value)`.
    pub fn into_result<T>(self, value: T) -> Result<T, Diagnostics> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }

    /// Orders by file, then line and column (diagnostics without a position
    /// first), keeping the order of equal positions; drops exact duplicates.
    pub fn sort(&mut self) {
        self.0.sort_by(|a, b| {
            (a.file.as_str(), a.line, a.column).cmp(&(b.file.as_str(), b.line, b.column))
        });
        self.0.dedup();
    }

    /// `[{severity, file, line, column, yaml_path, message, hint}, ...]`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(self.0.iter().map(Diagnostic::to_json).collect())
    }

    /// Renders every diagnostic: plain text, or miette's graphical report
    /// (with ANSI colours) when `graphical` is true.
    pub fn render(&self, graphical: bool) -> String {
        let mut out = String::new();
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let src = source_for(&d.file);
            if graphical {
                render_graphical(&mut out, d, src);
            } else {
                // Writing into a String cannot fail.
                let _ = d.write_plain(&mut out, src.as_deref());
            }
        }
        if self.0.len() > 1 {
            out.push_str(&format!("\n{} errors\n", self.0.len()));
        }
        out
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(false))
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics(vec![d])
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

// ---------------------------------------------------------------------------
// Graphical rendering through miette.

struct MietteView<'a> {
    d: &'a Diagnostic,
    source: Option<miette::NamedSource<String>>,
    span: Option<miette::SourceSpan>,
    help: Option<String>,
}

impl fmt::Debug for MietteView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.d, f)
    }
}

impl fmt::Display for MietteView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.d.location(), self.d.message)
    }
}

impl std::error::Error for MietteView<'_> {}

impl miette::Diagnostic for MietteView<'_> {
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h.clone()) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let span = self.span?;
        let label = self
            .d
            .yaml_path
            .clone()
            .unwrap_or_else(|| "here".to_string());
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_with_span(Some(label), span),
        )))
    }
}

fn render_graphical(out: &mut String, d: &Diagnostic, src: Option<Arc<str>>) {
    let mut span = None;
    let mut source = None;
    if let (Some(text), Some(line)) = (src, d.line) {
        if let Some(offset) = byte_offset(&text, line, d.column.unwrap_or(1)) {
            let line_text = text[offset..].lines().next().unwrap_or("");
            let width_chars = caret_width(line_text, 1);
            let width: usize = line_text
                .chars()
                .take(width_chars)
                .map(char::len_utf8)
                .sum();
            span = Some(miette::SourceSpan::new(offset.into(), width));
            source = Some(miette::NamedSource::new(d.file.clone(), text.to_string()));
        }
    }
    let view = MietteView {
        d,
        source,
        span,
        help: d.hint.clone(),
    };
    let handler = miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode());
    if handler.render_report(out, &view).is_err() {
        let _ = d.write_plain(out, None);
    }
}

/// Byte offset of 1-based (`line`, `column` in chars) in `text`.
pub(crate) fn byte_offset(text: &str, line: usize, column: usize) -> Option<usize> {
    let mut offset = 0usize;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let mut col_bytes = 0usize;
            for (n, ch) in l.chars().enumerate() {
                if n + 1 >= column {
                    break;
                }
                col_bytes += ch.len_utf8();
            }
            return Some(offset + col_bytes.min(l.len()));
        }
        offset += l.len();
    }
    None
}

// ---------------------------------------------------------------------------
// Source registry.

const MAX_SOURCES: usize = 64;

type SourceRegistry = Mutex<VecDeque<(String, Arc<str>)>>;

fn registry() -> &'static SourceRegistry {
    static REG: OnceLock<SourceRegistry> = OnceLock::new();
    REG.get_or_init(|| Mutex::new(VecDeque::new()))
}

thread_local! {
    /// The texts registered by this thread: preferred over the process-wide
    /// list, so concurrent loads of different texts under one name (tests,
    /// servers) each render their own excerpt.
    static LOCAL: std::cell::RefCell<VecDeque<(String, Arc<str>)>> =
        const { std::cell::RefCell::new(VecDeque::new()) };
}

fn remember(list: &mut VecDeque<(String, Arc<str>)>, file: &str, text: &Arc<str>) {
    list.retain(|(f, _)| f != file);
    if list.len() >= MAX_SOURCES {
        list.pop_front();
    }
    list.push_back((file.to_string(), text.clone()));
}

/// Remembers the text of `file` so its diagnostics can show excerpts.
pub fn register_source(file: &str, text: &str) {
    let text: Arc<str> = Arc::from(text);
    LOCAL.with(|l| remember(&mut l.borrow_mut(), file, &text));
    let mut reg = match registry().lock() {
        Ok(r) => r,
        Err(poisoned) => poisoned.into_inner(),
    };
    remember(&mut reg, file, &text);
}

fn source_for(file: &str) -> Option<Arc<str>> {
    let local = LOCAL.with(|l| {
        l.borrow()
            .iter()
            .find(|(f, _)| f == file)
            .map(|(_, t)| t.clone())
    });
    if local.is_some() {
        return local;
    }
    {
        let reg = match registry().lock() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((_, t)) = reg.iter().find(|(f, _)| f == file) {
            return Some(t.clone());
        }
    }
    if file.starts_with('<') {
        return None;
    }
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > 4 * 1024 * 1024 {
        return None;
    }
    std::fs::read_to_string(file).ok().map(Arc::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_rendering_has_location_path_hint_and_caret() {
        register_source(
            "diag-test.yaml",
            "project: x\nclusters:\n  a:\n    nodes: four\n",
        );
        let d = Diagnostic::new("diag-test.yaml", "expected an integer")
            .at(4, 12)
            .path("clusters.a.nodes")
            .hint("write a number");
        let s = Diagnostics::from(d).to_string();
        assert!(
            s.starts_with("diag-test.yaml:4:12: error: expected an integer\n"),
            "{s}"
        );
        assert!(s.contains("  at clusters.a.nodes\n"));
        assert!(s.contains("  hint: write a number\n"));
        assert!(s.contains("  4 |     nodes: four\n"));
        assert!(s.contains("    |            ^^^^\n"), "{s}");
    }

    #[test]
    fn json_shape() {
        let d = Diagnostic::new("f", "m").at(1, 2).path("a.b");
        let j = Diagnostics::from(d).to_json();
        assert_eq!(j[0]["line"], 1);
        assert_eq!(j[0]["column"], 2);
        assert_eq!(j[0]["yaml_path"], "a.b");
        assert_eq!(j[0]["hint"], serde_json::Value::Null);
    }

    #[test]
    fn graphical_rendering_does_not_fail() {
        register_source("diag-g.yaml", "a: 1\nb: é x\n");
        let d = Diagnostic::new("diag-g.yaml", "bad")
            .at(2, 6)
            .path("b")
            .hint("h");
        let s = Diagnostics::from(d).render(true);
        assert!(s.contains("bad"), "{s}");
        assert!(s.contains('h'));
    }

    #[test]
    fn caret_width_of_tokens() {
        assert_eq!(caret_width("  nodes: four", 10), 4);
        assert_eq!(caret_width("  a: \"x y\" # c", 6), 5);
        assert_eq!(caret_width("  zones: [a, b]", 11), 1);
        assert_eq!(caret_width("", 1), 1);
        assert_eq!(caret_width("  a: ${var.x}-y", 6), 8);
        assert_eq!(caret_width("  key: v", 3), 3);
    }

    #[test]
    fn lines_with_any_break() {
        assert_eq!(nth_line("a\r\nb\rc\nd", 3), Some("c"));
        assert_eq!(nth_line("a\r\nb\rc\nd", 4), Some("d"));
        assert_eq!(nth_line("a", 2), None);
    }

    #[test]
    fn byte_offsets() {
        assert_eq!(byte_offset("ab\ncd", 2, 2), Some(4));
        assert_eq!(byte_offset("é\nx", 1, 2), Some(2));
        assert_eq!(byte_offset("a", 3, 1), None);
    }
}
