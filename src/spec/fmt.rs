//! `gpuform fmt`: canonical layout of a spec, keeping every comment.
//!
//! The text is never re-serialised (that would drop comments and reorder
//! things). Instead each line is re-indented using the structure the parser
//! found: every block-mapping key and list item sits 2 spaces deeper than its
//! parent, lists are indented under their key, there is one space after `key:`
//! and after `- `, trailing whitespace goes, runs of blank lines collapse to
//! one, and the file ends with exactly one newline. Lines inside block scalars
//! (`|`, `>`), multi-line strings and flow collections move with their owner
//! and keep their relative indentation. Comments take the indentation of the
//! level they belong to.
//!
//! As a safety net the result is parsed again and compared with the input:
//! if the meaning changed, formatting is refused instead of writing it.

use super::diagnostics::{Diagnostic, Diagnostics};
use super::yaml::{self, Pos};

const INDENT: usize = 2;

/// Canonical formatting; refuses (with diagnostics) text that does not parse.
pub fn format(text: &str) -> Result<String, Diagnostics> {
    format_named("<input>", text)
}

/// [`format`] with a file name for the diagnostics.
pub fn format_named(name: &str, text: &str) -> Result<String, Diagnostics> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // YAML reads CR LF and a lone CR as line breaks; so do we, as LF.
    let normalized;
    let text = if text.contains('\r') {
        normalized = text.replace("\r\n", "\n").replace('\r', "\n");
        normalized.as_str()
    } else {
        text
    };
    let parsed = yaml::parse(text);
    if parsed.root.is_none() && !parsed.issues.is_empty() {
        let mut d = Diagnostics::new();
        for i in &parsed.issues {
            d.push(
                Diagnostic::new(name, i.message.clone())
                    .at(i.pos.line, i.pos.col)
                    .maybe_hint(i.hint.clone()),
            );
        }
        return Err(d);
    }
    let out = Formatter::new(text, &parsed).run();
    let again = yaml::parse(&out);
    let same = match (&parsed.root, &again.root) {
        (Some(a), Some(b)) => a.same_content(b),
        (None, None) => again.issues.is_empty(),
        _ => false,
    };
    if !same {
        return Err(Diagnostic::new(name, "fmt cannot re-indent this file without changing its meaning; the file was left unchanged")
            .at(1, 1)
            .hint("this is a limitation of `gpuform fmt` (unusual YAML layout); please report it with the file")
            .into());
    }
    Ok(out)
}

/// A unified diff from `old` to `new` for `gpuform fmt --check`; empty when equal.
pub fn format_diff(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    orig: usize,
    new: usize,
    dash: bool,
}

#[derive(Clone, Copy)]
struct Inside {
    owner: usize,
    block: bool,
}

struct PendingComment {
    line: usize,
    orig: usize,
    frame_match: Option<usize>,
    /// New column of the deepest open element at or left of the comment.
    enclosing: Option<usize>,
}

struct Formatter<'a> {
    lines: Vec<Vec<char>>,
    parsed: &'a yaml::Parsed,
    inside: Vec<Option<Inside>>,
    delta: Vec<isize>,
    /// New column of the innermost element of each line.
    inner_new: Vec<usize>,
    block_deltas: std::collections::HashMap<usize, isize>,
    out: Vec<Option<String>>,
    stack: Vec<Frame>,
    pending: Vec<PendingComment>,
}

fn indent_of(line: &[char]) -> usize {
    line.iter().take_while(|c| **c == ' ').count()
}

fn is_blank(line: &[char]) -> bool {
    line.iter().all(|c| c.is_whitespace())
}

fn rtrim(s: &[char]) -> String {
    let mut end = s.len();
    while end > 0 && s[end - 1].is_whitespace() {
        end -= 1;
    }
    s[..end].iter().collect()
}

impl<'a> Formatter<'a> {
    fn new(text: &str, parsed: &'a yaml::Parsed) -> Formatter<'a> {
        let lines: Vec<Vec<char>> = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).chars().collect())
            .collect();
        let n = lines.len();
        let mut f = Formatter {
            lines,
            parsed,
            inside: vec![None; n],
            delta: vec![0; n],
            inner_new: vec![0; n],
            block_deltas: std::collections::HashMap::new(),
            out: vec![None; n],
            stack: Vec::new(),
            pending: Vec::new(),
        };
        f.mark_inside();
        f
    }

    /// Marks lines that continue a multi-line scalar or flow collection.
    fn mark_inside(&mut self) {
        for &(start, end, block) in &self.parsed.spans {
            let (s, e) = (start.line.saturating_sub(1), end.line.saturating_sub(1));
            if s >= self.lines.len() {
                continue;
            }
            let owner = if block { self.block_header(start) } else { s };
            let e = e.min(self.lines.len() - 1);
            let last = if self.ends_within(e, end) {
                e
            } else {
                e.saturating_sub(1)
            };
            let mut l = owner + 1;
            while l <= last {
                let replace = match self.inside[l] {
                    None => true,
                    Some(prev) => owner < prev.owner,
                };
                if replace {
                    self.inside[l] = Some(Inside { owner, block });
                }
                l += 1;
            }
        }
    }

    /// True when `end` lies past the first non-space character of line `l`.
    fn ends_within(&self, l: usize, end: Pos) -> bool {
        let line = &self.lines[l];
        !is_blank(line) && end.col.saturating_sub(1) > indent_of(line)
    }

    /// The line holding a block scalar's `|`/`>` header.
    fn block_header(&self, start: Pos) -> usize {
        let s = start.line.saturating_sub(1).min(self.lines.len() - 1);
        // When the scalar starts on its header line (empty content), that is it.
        let before: String = self.lines[s]
            .iter()
            .take(start.col.saturating_sub(1))
            .collect();
        if before.contains('|') || before.contains('>') {
            return s;
        }
        let mut l = s;
        while l > 0 {
            l -= 1;
            if !is_blank(&self.lines[l]) {
                return l;
            }
        }
        0
    }

    fn run(mut self) -> String {
        for l in 0..self.lines.len() {
            self.line(l);
        }
        self.flush_pending(None);
        let mut result: Vec<String> = Vec::new();
        let mut blank_run = 0;
        for (l, out) in self.out.iter().enumerate() {
            let Some(s) = out else { continue };
            let keep_blank = self.inside[l].is_some();
            if s.is_empty() && !keep_blank {
                blank_run += 1;
                if blank_run > 1 || result.is_empty() {
                    continue;
                }
            } else {
                blank_run = 0;
            }
            result.push(s.clone());
        }
        while result.last().is_some_and(|s| s.is_empty()) {
            result.pop();
        }
        if result.is_empty() {
            return String::new();
        }
        let mut s = result.join("\n");
        s.push('\n');
        s
    }

    fn line(&mut self, l: usize) {
        let chars = self.lines[l].clone();
        if let Some(inside) = self.inside[l] {
            self.line_inside(l, &chars, inside);
            return;
        }
        if is_blank(&chars) {
            self.out[l] = Some(String::new());
            return;
        }
        let ind = indent_of(&chars);
        if chars[ind] == '#' {
            self.comment_line(l, ind);
            return;
        }
        if ind == 0 && (starts_with(&chars, "---") || starts_with(&chars, "...") || chars[0] == '%')
        {
            self.flush_pending(None);
            self.stack.clear();
            self.out[l] = Some(rtrim(&chars));
            return;
        }
        let mut out = String::new();
        let mut pos = ind;
        let mut first = true;
        let mut last_delta: isize = 0;
        let mut last_orig = ind;
        loop {
            let is_dash = chars.get(pos) == Some(&'-')
                && chars.get(pos + 1).is_none_or(|c| *c == ' ' || *c == '\t');
            let key_end = self.parsed.block_keys.get(&(l + 1, pos + 1)).copied();
            let new_col = if first {
                let kind = if is_dash {
                    Some(true)
                } else if key_end.is_some() {
                    Some(false)
                } else {
                    None
                };
                let col = match kind {
                    Some(dash) => self.place(pos, dash),
                    None => self
                        .stack
                        .iter()
                        .rev()
                        .find(|f| f.orig < pos)
                        .map_or(0, |f| f.new + INDENT),
                };
                self.flush_pending(Some((pos, col)));
                out.push_str(&" ".repeat(col));
                col
            } else {
                let col = out.chars().count();
                if is_dash || key_end.is_some() {
                    self.stack.push(Frame {
                        orig: pos,
                        new: col,
                        dash: is_dash,
                    });
                }
                col
            };
            if first || is_dash || key_end.is_some() {
                last_delta = new_col as isize - pos as isize;
                last_orig = pos;
            }
            first = false;
            if is_dash {
                out.push('-');
                pos += 1;
                while chars.get(pos).is_some_and(|c| *c == ' ' || *c == '\t') {
                    pos += 1;
                }
                if pos >= chars.len() {
                    break;
                }
                out.push(' ');
                if chars[pos] == '#' {
                    out.push_str(&rtrim(&chars[pos..]));
                    break;
                }
                continue;
            }
            if let Some(end) = key_end {
                let end = end.saturating_sub(1).clamp(pos, chars.len());
                out.extend(chars[pos..end].iter());
                let mut p = end;
                while chars.get(p).is_some_and(|c| *c == ' ' || *c == '\t') {
                    p += 1;
                }
                if chars.get(p) != Some(&':') {
                    out.push_str(&rtrim(&chars[end..]));
                    break;
                }
                out.push(':');
                p += 1;
                while chars.get(p).is_some_and(|c| *c == ' ' || *c == '\t') {
                    p += 1;
                }
                if p < chars.len() {
                    out.push(' ');
                    out.push_str(&rtrim(&chars[p..]));
                }
                break;
            }
            out.push_str(&rtrim(&chars[pos..]));
            break;
        }
        self.delta[l] = last_delta;
        self.inner_new[l] = (last_orig as isize + last_delta).max(0) as usize;
        self.out[l] = Some(out);
    }

    /// A line inside a multi-line scalar or flow collection: it moves with
    /// the line that opened it.
    fn line_inside(&mut self, l: usize, chars: &[char], inside: Inside) {
        let d = if inside.block {
            self.block_delta(inside.owner)
        } else {
            self.delta[inside.owner]
        };
        if is_blank(chars) {
            self.out[l] = Some(String::new());
            return;
        }
        let ind = if inside.block {
            indent_of(chars)
        } else {
            chars
                .iter()
                .take_while(|c| **c == ' ' || **c == '\t')
                .count()
        };
        let new = (ind as isize + d).max(0) as usize;
        let rest: String = if inside.block {
            chars[ind..].iter().collect()
        } else {
            rtrim(&chars[ind..])
        };
        self.out[l] = Some(format!("{}{}", " ".repeat(new), rest));
    }

    /// A comment line at column `ind`: placed later, with the line it precedes.
    fn comment_line(&mut self, l: usize, ind: usize) {
        let frame_match = self
            .stack
            .iter()
            .rev()
            .find(|f| f.orig == ind)
            .map(|f| f.new);
        let enclosing = self
            .stack
            .iter()
            .rev()
            .find(|f| f.orig <= ind)
            .map(|f| f.new);
        self.pending.push(PendingComment {
            line: l,
            orig: ind,
            frame_match,
            enclosing,
        });
    }

    /// How far the content of the block scalar whose header is on line
    /// `owner` moves: to 2 columns deeper than its key or `-`, unless the
    /// header has an explicit indentation indicator (then it moves with it).
    fn block_delta(&mut self, owner: usize) -> isize {
        if let Some(d) = self.block_deltas.get(&owner) {
            return *d;
        }
        let header: String = self.lines[owner].iter().collect();
        let explicit = header
            .rfind(['|', '>'])
            .map(|i| {
                header[i + 1..]
                    .chars()
                    .take_while(|c| !c.is_whitespace())
                    .any(|c| c.is_ascii_digit())
            })
            .unwrap_or(true);
        let first = (owner + 1..self.lines.len())
            .take_while(|l| self.inside[*l].is_some_and(|i| i.owner == owner))
            .find(|l| !is_blank(&self.lines[*l]));
        let d = match first {
            Some(l) if !explicit => {
                (self.inner_new[owner] + INDENT) as isize - indent_of(&self.lines[l]) as isize
            }
            _ => self.delta[owner],
        };
        self.block_deltas.insert(owner, d);
        d
    }

    /// New column for the first element of a line (a list item when `dash`,
    /// else a mapping key) at original column `orig`, updating the stack.
    fn place(&mut self, orig: usize, dash: bool) -> usize {
        loop {
            let Some(top) = self.stack.last().copied() else {
                self.stack.push(Frame { orig, new: 0, dash });
                return 0;
            };
            if top.orig > orig {
                self.stack.pop();
                continue;
            }
            if top.orig == orig {
                if top.dash == dash {
                    return top.new;
                }
                if !top.dash && dash {
                    // A list written at the same indentation as its key.
                    let new = top.new + INDENT;
                    self.stack.push(Frame { orig, new, dash });
                    return new;
                }
                self.stack.pop();
                continue;
            }
            let new = top.new + INDENT;
            self.stack.push(Frame { orig, new, dash });
            return new;
        }
    }

    /// Places comments seen since the last content line. `next` is the
    /// (original, new) column of the line that follows them, if any.
    fn flush_pending(&mut self, next: Option<(usize, usize)>) {
        for c in std::mem::take(&mut self.pending) {
            let col = match next {
                Some((orig, new)) if orig == c.orig => new,
                _ => match (c.frame_match, next) {
                    (Some(n), _) => n,
                    // Deeper than what follows: it ends the block above it.
                    (None, Some((orig, _))) if c.orig > orig => c.enclosing.unwrap_or(0),
                    (None, Some((_, new))) => new,
                    (None, None) => c.enclosing.unwrap_or(0),
                },
            };
            let chars = &self.lines[c.line];
            self.out[c.line] = Some(format!("{}{}", " ".repeat(col), rtrim(&chars[c.orig..])));
        }
    }
}

fn starts_with(chars: &[char], s: &str) -> bool {
    let n = s.chars().count();
    chars.len() >= n
        && chars.iter().zip(s.chars()).all(|(a, b)| *a == b)
        && chars.get(n).is_none_or(|c| c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(s: &str) -> String {
        let out = format(s).unwrap_or_else(|e| panic!("{e}\n---\n{s}"));
        assert_eq!(format(&out).unwrap(), out, "not idempotent for:\n{s}");
        out
    }

    #[test]
    fn reindents_and_keeps_comments() {
        let src = "# head\nproject:   demo   # trailing\nclusters:\n    trainer:\n        # about cloud\n        cloud:  aws\n        zones:\n        -   us-east-1a\n        - us-east-1b\n\n\n\n        nodes: 2\n";
        let want = "# head\nproject: demo   # trailing\nclusters:\n  trainer:\n    # about cloud\n    cloud: aws\n    zones:\n      - us-east-1a\n      - us-east-1b\n\n    nodes: 2\n";
        assert_eq!(fmt(src), want);
    }

    #[test]
    fn block_scalars_keep_content() {
        let src = "a:\n    user_data: |\n        #!/bin/sh\n          echo hi  \n\n        done\n    b: 1\n";
        let want = "a:\n  user_data: |\n    #!/bin/sh\n      echo hi  \n\n    done\n  b: 1\n";
        assert_eq!(fmt(src), want);
    }

    #[test]
    fn lists_of_maps_and_flows() {
        let src = "ingress:\n-   protocol: tcp\n    ports: \"22\"\n    cidr: [a,\n       b]\n-  {ports: 80, cidr: x}\nz: 'multi\n     line'\n";
        let out = fmt(src);
        assert!(
            out.starts_with("ingress:\n  - protocol: tcp\n    ports: \"22\"\n    cidr: [a,\n"),
            "{out}"
        );
        assert!(out.contains("  - {ports: 80, cidr: x}\n"), "{out}");
    }

    #[test]
    fn final_newline_tabs_and_blank_lines() {
        assert_eq!(fmt("\n\na:    1"), "a: 1\n");
        assert_eq!(fmt(""), "");
        assert_eq!(fmt("# only\n\n\n"), "# only\n");
        assert_eq!(fmt("a: 1\r\nb: 2\r\n"), "a: 1\nb: 2\n");
    }

    #[test]
    fn nested_lists() {
        let src = "a:\n- - x\n  - y\n- k: v\n  j:\n  - 1\n";
        let want = "a:\n  - - x\n    - y\n  - k: v\n    j:\n      - 1\n";
        assert_eq!(fmt(src), want);
    }

    #[test]
    fn refuses_invalid_yaml() {
        let e = format("a: [1\nb: 2\n").unwrap_err();
        assert_eq!(e.0[0].line, Some(2));
    }

    #[test]
    fn diff() {
        assert_eq!(format_diff("x.yaml", "a\n", "a\n"), "");
        let d = format_diff("x.yaml", "a:  1\n", "a: 1\n");
        assert!(
            d.contains("--- a/x.yaml") && d.contains("-a:  1") && d.contains("+a: 1"),
            "{d}"
        );
    }
}
