//! Comment-preserving edits of one block-style mapping of a spec (a
//! cluster): replace a key's value, remove a key, insert one, as text edits
//! at the positions [`LoadedSpec::locate`] gives, so that comments and
//! layout survive. `gpuform migrate` re-targets a cluster with it;
//! `gpuform import` adds clusters and buckets ([`add_clusters`],
//! [`add_buckets`]).

use super::LoadedSpec;
use gpuform_provider::UserError;

fn err(message: impl Into<String>, hint: impl Into<String>) -> UserError {
    UserError::new(message, hint)
}

/// Edits of one cluster's lines; applied bottom-up so earlier positions stay valid.
pub struct BlockEditor<'a> {
    loaded: &'a LoadedSpec,
    base: String,
    lines: Vec<String>,
    newline: &'static str,
    trailing_newline: bool,
    /// 0-based line index → replacement lines (empty = removed).
    edits: Vec<(usize, usize, Vec<String>)>,
}

impl<'a> BlockEditor<'a> {
    pub fn new(loaded: &'a LoadedSpec, base: &str) -> Result<BlockEditor<'a>, UserError> {
        let text = &loaded.text;
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let lines: Vec<String> = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
            .collect();
        let trailing_newline = text.ends_with('\n');
        let mut lines = lines;
        if trailing_newline {
            lines.pop();
        }
        let ed = BlockEditor {
            loaded,
            base: base.to_string(),
            lines,
            newline,
            trailing_newline,
            edits: Vec::new(),
        };
        // A flow-style cluster (`name: {cloud: aws, ...}`) is not edited.
        if let Some((line, col)) = loaded.locate(base) {
            if ed.char_at(line, col) == Some('{') {
                return Err(err(
                    format!(
                        "{}:{line}:{col}: {} `{}` is written in flow style ({{...}})",
                        loaded.file_label(),
                        if base.starts_with("buckets.") {
                            "bucket"
                        } else {
                            "cluster"
                        },
                        base.trim_start_matches("clusters.")
                            .trim_start_matches("buckets.")
                    ),
                    "write it as a block mapping (one key per line) and run migrate again",
                ));
            }
        }
        Ok(ed)
    }

    fn char_at(&self, line: usize, col: usize) -> Option<char> {
        self.lines
            .get(line.checked_sub(1)?)?
            .chars()
            .nth(col.checked_sub(1)?)
    }

    /// Whether the cluster has `key` (not a fallback to the cluster itself).
    pub fn has(&self, key: &str) -> bool {
        let p = format!("{}.{key}", self.base);
        self.loaded.locate(&p).is_some() && self.loaded.locate(&p) != self.loaded.locate(&self.base)
    }

    /// 0-based index of the line holding `key:` for the cluster's `key`.
    fn key_line(&self, key: &str) -> Result<usize, UserError> {
        let path = format!("{}.{key}", self.base);
        let (line, col) = self
            .loaded
            .locate(&path)
            .filter(|_| self.has(key))
            .ok_or_else(|| {
                err(
                    format!("internal error: no `{path}` in the spec"),
                    "please report this",
                )
            })?;
        let idx = line - 1;
        // The value may sit below its key (`key:\n  value`): look up a few lines.
        for i in (idx.saturating_sub(3)..=idx).rev() {
            let l = &self.lines[i];
            let indent = l.len() - l.trim_start().len();
            let t = l.trim_start();
            let is_key = t.starts_with(&format!("{key}:"))
                || t.starts_with(&format!("\"{key}\":"))
                || t.starts_with(&format!("'{key}':"));
            if is_key && (i == idx || indent < col - 1) {
                return Ok(i);
            }
        }
        Err(err(
            format!(
                "{}:{line}:{col}: cannot find `{key}:` at the start of a line for `{path}`",
                self.loaded.file_label()
            ),
            "write the cluster in block style (one `key: value` per line) and run migrate again",
        ))
    }

    /// The text of the value of `key` as written (scalar or one-line flow collection).
    pub fn value_text(&self, key: &str) -> Option<String> {
        if !self.has(key) {
            return None;
        }
        let (line, col) = self.loaded.locate(&format!("{}.{key}", self.base))?;
        let l = self.lines.get(line - 1)?;
        let start = byte_of_char(l, col - 1)?;
        let end = start + value_extent(&l[start..]);
        Some(l[start..end].to_string())
    }

    /// Replaces `key`'s value with `new` (a plain scalar or flow list),
    /// keeping anything after it on the line (a comment).
    pub fn replace_value(&mut self, key: &str, new: &str) -> Result<(), UserError> {
        let kl = self.key_line(key)?;
        let (vl, col) = self
            .loaded
            .locate(&format!("{}.{key}", self.base))
            .expect("has key");
        let key_line = self.lines[kl].clone();
        let indent = &key_line[..key_line.len() - key_line.trim_start().len()];
        let key_text = key_line
            .trim_start()
            .split(':')
            .next()
            .unwrap_or(key)
            .to_string();
        // Where the old value ends: a block collection or multi-line value
        // spans the following, more indented lines.
        let (first, last) = self.extent(kl);
        let comment = if vl - 1 == kl && last == kl {
            let start = byte_of_char(&key_line, col - 1).unwrap_or(key_line.len());
            let rest = &key_line[start..];
            let end = value_extent(rest);
            rest[end..].to_string()
        } else {
            // Keep a comment on the key line, if any.
            key_line
                .find(" #")
                .map(|i| key_line[i..].to_string())
                .unwrap_or_default()
        };
        let line = format!("{indent}{key_text}: {new}{comment}");
        self.edits.push((first, last, vec![line]));
        Ok(())
    }

    /// Removes `key` and its value lines.
    pub fn remove(&mut self, key: &str) -> Result<(), UserError> {
        let kl = self.key_line(key)?;
        let (first, last) = self.extent(kl);
        self.edits.push((first, last, Vec::new()));
        Ok(())
    }

    /// Inserts `key: value` after the first of `after` that the cluster has.
    pub fn insert_after(
        &mut self,
        after: &[&str],
        key: &str,
        value: &str,
    ) -> Result<(), UserError> {
        let anchor = after.iter().find(|k| self.has(k)).ok_or_else(|| {
            err(
                format!("internal error: no anchor for `{key}`"),
                "please report this",
            )
        })?;
        let kl = self.key_line(anchor)?;
        let (_, last) = self.extent(kl);
        let l = &self.lines[kl];
        let indent = &l[..l.len() - l.trim_start().len()];
        // An insertion is an edit of zero lines before `last + 1`.
        self.edits
            .push((last + 1, last, vec![format!("{indent}{key}: {value}")]));
        Ok(())
    }

    /// Lines `key_line..=last` a key's value spans: the key line and the
    /// following lines more indented than it (or `- ` items at its indent).
    fn extent(&self, key_line: usize) -> (usize, usize) {
        let indent_of = |l: &str| l.len() - l.trim_start().len();
        let key_indent = indent_of(&self.lines[key_line]);
        let mut last = key_line;
        let mut i = key_line + 1;
        while i < self.lines.len() {
            let l = &self.lines[i];
            let t = l.trim_start();
            if t.is_empty() {
                break;
            }
            let ind = indent_of(l);
            if ind > key_indent || (ind == key_indent && (t.starts_with("- ") || t == "-")) {
                if !t.starts_with('#') {
                    last = i;
                }
                i += 1;
                continue;
            }
            break;
        }
        (key_line, last)
    }

    pub fn finish(mut self) -> String {
        // Bottom-up, so line numbers of earlier edits stay valid.
        // Insertions at one place: the later one is applied first, so they
        // end up in the order they were asked for.
        let mut edits: Vec<_> = std::mem::take(&mut self.edits)
            .into_iter()
            .enumerate()
            .collect();
        edits.sort_by(|(ia, a), (ib, b)| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(ib.cmp(ia)));
        for (_, (first, last, replacement)) in edits {
            if last + 1 == first {
                // Insertion before `first`.
                for (k, l) in replacement.into_iter().enumerate() {
                    self.lines.insert(first + k, l);
                }
            } else {
                self.lines.splice(first..=last, replacement);
            }
        }
        let mut out = self.lines.join(self.newline);
        if self.trailing_newline {
            out.push_str(self.newline);
        }
        out
    }
}

/// Adds clusters under the top-level `clusters:` of a spec's text (made
/// when there is none), after the clusters already there: every other
/// byte stays as it was, comments included. Each block is one cluster's
/// lines as written at column 0 (`name:`, then its keys indented); they are
/// moved to the indentation the spec's clusters use. `gpuform import`
/// writes what it adopts with it.
pub fn add_clusters(text: &str, blocks: &[Vec<String>]) -> Result<String, UserError> {
    add_entries(text, "clusters", "cluster", blocks)
}

/// Adds buckets under the top-level `buckets:` as [`add_clusters`] adds
/// clusters: `gpuform import --bucket` writes what it adopts with it.
pub fn add_buckets(text: &str, blocks: &[Vec<String>]) -> Result<String, UserError> {
    add_entries(text, "buckets", "bucket", blocks)
}

/// Adds `blocks` as entries of the top-level mapping `section`, each one
/// `what` (for the error of a flow-style section).
fn add_entries(
    text: &str,
    section: &str,
    what: &str,
    blocks: &[Vec<String>],
) -> Result<String, UserError> {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut lines: Vec<String> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect();
    // `split` leaves one empty piece after a final newline.
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let top = lines.iter().position(|l| {
        l.starts_with(&format!("{section}:"))
            || l.starts_with(&format!("\"{section}\":"))
            || l.starts_with(&format!("'{section}':"))
    });
    let (at, indent, separate) = match top {
        None => {
            lines.push(format!("{section}:"));
            (lines.len(), 2, false)
        }
        Some(i) => {
            let value = lines[i].split_once(':').map_or("", |(_, v)| v);
            let value = value.split(" #").next().unwrap_or("").trim();
            match value {
                "" => {}
                "{}" => lines[i] = format!("{section}:"),
                _ => {
                    return Err(err(
                        format!(
                            "line {}: `{section}:` is written in flow style ({{...}})",
                            i + 1
                        ),
                        format!(
                            "write it as a block mapping (one {what} per key) and run import again"
                        ),
                    ))
                }
            }
            // The clusters end at the next line at column 0 that is not a comment.
            let mut last = i;
            let mut indent = None;
            for (j, l) in lines.iter().enumerate().skip(i + 1) {
                let t = l.trim_start();
                if t.is_empty() {
                    continue;
                }
                if indent_of(l) == 0 && !t.starts_with('#') {
                    break;
                }
                if indent_of(l) > 0 {
                    last = j;
                    if !t.starts_with('#') && indent.is_none() {
                        indent = Some(indent_of(l));
                    }
                }
            }
            (last + 1, indent.unwrap_or(2), last > i)
        }
    };
    let pad = " ".repeat(indent);
    let mut added: Vec<String> = Vec::new();
    for (k, block) in blocks.iter().enumerate() {
        if separate || k > 0 {
            added.push(String::new());
        }
        added.extend(block.iter().map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{pad}{l}")
            }
        }));
    }
    lines.splice(at..at, added);
    let mut out = lines.join(newline);
    out.push_str(newline);
    Ok(out)
}

fn byte_of_char(s: &str, chars: usize) -> Option<usize> {
    if chars == s.chars().count() {
        return Some(s.len());
    }
    s.char_indices().nth(chars).map(|(i, _)| i)
}

/// Bytes of the YAML value at the start of `s`: a quoted scalar, a one-line
/// flow collection, or a plain scalar up to a ` #` comment (trailing spaces
/// not included).
fn value_extent(s: &str) -> usize {
    let b = s.as_bytes();
    match b.first() {
        Some(b'"') => {
            let mut i = 1;
            while i < b.len() {
                match b[i] {
                    b'\\' => i += 2,
                    b'"' => return i + 1,
                    _ => i += 1,
                }
            }
            s.len()
        }
        Some(b'\'') => {
            let mut i = 1;
            while i < b.len() {
                if b[i] == b'\'' {
                    if b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return i + 1;
                }
                i += 1;
            }
            s.len()
        }
        Some(b'[') | Some(b'{') => {
            let mut depth = 0i32;
            let mut quote: Option<u8> = None;
            for (i, &c) in b.iter().enumerate() {
                match quote {
                    Some(q) if c == q => quote = None,
                    Some(_) => {}
                    None => match c {
                        b'"' | b'\'' => quote = Some(c),
                        b'[' | b'{' => depth += 1,
                        b']' | b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    },
                }
            }
            s.len()
        }
        _ => {
            let end = s.find(" #").or_else(|| s.find("\t#")).unwrap_or(s.len());
            s[..end].trim_end().len()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_are_added_after_the_others_keeping_every_other_byte() {
        let block = vec![vec!["new:".to_string(), "  nodes: 1".to_string()]];
        let text = "# top\nproject: p\nclusters:\n    a:   # keep\n        nodes: 2\n\n# about budget\nbudget:\n  max_hourly_usd: 3\n";
        let out = add_clusters(text, &block).unwrap();
        assert_eq!(
            out,
            "# top\nproject: p\nclusters:\n    a:   # keep\n        nodes: 2\n\n    new:\n      nodes: 1\n\n# about budget\nbudget:\n  max_hourly_usd: 3\n"
        );
        // No `clusters:` yet, no final newline, `{}`.
        assert_eq!(
            add_clusters("project: p", &block).unwrap(),
            "project: p\nclusters:\n  new:\n    nodes: 1\n"
        );
        assert_eq!(
            add_clusters("project: p\nclusters: {}\n", &block).unwrap(),
            "project: p\nclusters:\n  new:\n    nodes: 1\n"
        );
        assert!(add_clusters("clusters: {a: {nodes: 1}}\n", &block).is_err());
    }

    #[test]
    fn buckets_go_under_buckets_never_under_clusters() {
        let block = vec![vec!["data:".to_string(), "  cloud: aws".to_string()]];
        let text =
            "project: p\nclusters:\n  a:\n    nodes: 1\nbuckets:\n  old: # keep\n    cloud: aws\n";
        assert_eq!(
            add_buckets(text, &block).unwrap(),
            "project: p\nclusters:\n  a:\n    nodes: 1\nbuckets:\n  old: # keep\n    cloud: aws\n\n  data:\n    cloud: aws\n"
        );
        assert_eq!(
            add_buckets("project: p\nclusters:\n  a:\n    nodes: 1\n", &block).unwrap(),
            "project: p\nclusters:\n  a:\n    nodes: 1\nbuckets:\n  data:\n    cloud: aws\n"
        );
        let flow = add_buckets("buckets: {a: {cloud: aws}}\n", &block).unwrap_err();
        assert!(flow.message.contains("`buckets:`"), "{}", flow.message);
    }

    #[test]
    fn extents() {
        assert_eq!(value_extent("aws # c"), 3);
        assert_eq!(value_extent("\"a # b\" # c"), 7);
        assert_eq!(value_extent("'it''s' x"), 7);
        assert_eq!(value_extent("[a, b] # z"), 6);
        assert_eq!(value_extent("${var.region}"), 13);
        assert_eq!(value_extent("a#b"), 3);
    }
}
