//! Variables: where their values come from, and `${var.NAME}` substitution.
//!
//! Precedence, highest first: `--var NAME=VALUE`, `--var-file FILE` (later
//! files win over earlier ones), the environment (`GPUFORM_VAR_NAME`), then the
//! spec's own `variables.NAME.default`.
//!
//! Substitution runs on the parsed tree, not on the text, so every position
//! stays true. It applies to scalar values (not keys) everywhere except inside
//! `variables:` itself. `$${` writes a literal `${`. A plain scalar that becomes
//! `4` is a number afterwards, so `nodes: ${var.nodes}` works.

use super::diagnostics::{register_source, Diagnostic, Diagnostics};
use super::yaml::{self, Kind, Node, Style};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Prefix of environment variables that set spec variables.
pub const ENV_PREFIX: &str = "GPUFORM_VAR_";

/// Variable values given from outside the spec (merged, highest precedence wins).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars(BTreeMap<String, String>, BTreeMap<String, Given>);

/// Where a value the user named on purpose came from: a `--var` or a
/// `--var-file`. Such a name must be one the spec declares or uses (a typo
/// would otherwise be ignored); the environment's `GPUFORM_VAR_*` may hold
/// values for other specs, so it is not checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Given {
    CommandLine,
    File(PathBuf),
}

impl Vars {
    /// No variables.
    pub fn new() -> Vars {
        Vars::default()
    }

    /// Merges, lowest precedence first: environment `GPUFORM_VAR_*`, each
    /// `--var-file` in order, then each `--var NAME=VALUE`. Reports every bad
    /// pair or file line at once.
    pub fn parse_cli(pairs: &[String], files: &[PathBuf]) -> Result<Vars, Diagnostics> {
        Vars::parse_with_env(
            pairs,
            files,
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// [`Vars::parse_cli`] with an explicit environment (for tests and embedding).
    pub fn parse_with_env(
        pairs: &[String],
        files: &[PathBuf],
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Vars, Diagnostics> {
        let mut vars = BTreeMap::new();
        let mut given = BTreeMap::new();
        let mut diags = Diagnostics::new();
        for (k, v) in env {
            if let Some(name) = k.strip_prefix(ENV_PREFIX) {
                if valid_name(name) {
                    vars.insert(name.to_string(), v);
                }
            }
        }
        for f in files {
            match read_var_file(f) {
                Ok(found) => {
                    for name in found.keys() {
                        given.insert(name.clone(), Given::File(f.clone()));
                    }
                    vars.extend(found);
                }
                Err(d) => diags.extend(d),
            }
        }
        for (i, pair) in pairs.iter().enumerate() {
            let label = "<command line>";
            match pair.split_once('=') {
                Some((name, value)) if valid_name(name.trim()) => {
                    vars.insert(name.trim().to_string(), value.to_string());
                    given.insert(name.trim().to_string(), Given::CommandLine);
                }
                Some((name, _)) => diags.push(
                    Diagnostic::new(
                        label,
                        format!(
                            "`--var {}`: `{}` is not a valid variable name",
                            yaml::shorten(pair),
                            yaml::shorten(name)
                        ),
                    )
                    .hint(NAME_RULE),
                ),
                None => diags.push(
                    Diagnostic::new(
                        label,
                        format!(
                            "`--var {}` (argument {}) must be NAME=VALUE",
                            yaml::shorten(pair),
                            i + 1
                        ),
                    )
                    .hint("e.g. `--var nodes=4`"),
                ),
            }
        }
        diags.into_result(Vars(vars, given))
    }

    /// Sets a value (overriding any earlier one).
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.0.insert(name.into(), value.into());
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// The names given by `--var` or `--var-file`, with where each came from.
    pub fn given(&self) -> impl Iterator<Item = (&str, &Given)> {
        self.1.iter().map(|(k, g)| (k.as_str(), g))
    }

    /// All values by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Vars {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        Vars(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            BTreeMap::new(),
        )
    }
}

const NAME_RULE: &str = "variable names are letters, digits and `_`, starting with a letter or `_`";

/// `[A-Za-z_][A-Za-z0-9_]*`: also valid in an environment variable name.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A var file: `NAME=VALUE` lines (with `#` comments), or a YAML mapping.
fn read_var_file(path: &std::path::Path) -> Result<BTreeMap<String, String>, Diagnostics> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostics::from(
            Diagnostic::new(&label, format!("cannot read var file: {e}"))
                .hint("check the path given to `--var-file`"),
        )
    })?;
    register_source(&label, &text);
    let meaningful: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let looks_kv = !meaningful.is_empty()
        && meaningful
            .iter()
            .all(|(_, l)| l.split_once('=').is_some_and(|(k, _)| valid_name(k.trim())));
    if looks_kv {
        let mut out = BTreeMap::new();
        for (_, l) in meaningful {
            if let Some((k, v)) = l.split_once('=') {
                out.insert(k.trim().to_string(), unquote(v.trim()).to_string());
            }
        }
        return Ok(out);
    }
    let parsed = yaml::parse(&text);
    let mut diags = Diagnostics::new();
    for issue in &parsed.issues {
        diags.push(
            Diagnostic::new(&label, issue.message.clone())
                .at(issue.pos.line, issue.pos.col)
                .maybe_hint(issue.hint.clone()),
        );
    }
    let mut out = BTreeMap::new();
    match parsed.root {
        None => {} // empty file, or a syntax error reported above
        Some(root) if root.is_null() => {}
        Some(root) => match root.kind {
            Kind::Map(entries) => {
                for e in entries {
                    if !valid_name(&e.key) {
                        diags.push(
                            Diagnostic::new(
                                &label,
                                format!("`{}` is not a valid variable name", yaml::shorten(&e.key)),
                            )
                            .at(e.key_pos.line, e.key_pos.col)
                            .path(e.key.clone())
                            .hint(NAME_RULE),
                        );
                        continue;
                    }
                    match &e.value.kind {
                        Kind::Scalar { text, .. } => {
                            out.insert(
                                e.key,
                                if e.value.is_null() {
                                    String::new()
                                } else {
                                    text.clone()
                                },
                            );
                        }
                        _ => diags.push(
                            Diagnostic::new(
                                &label,
                                format!(
                                    "variable `{}` must be a single value, found {}",
                                    e.key,
                                    e.value.describe()
                                ),
                            )
                            .at(e.value.start.line, e.value.start.col)
                            .path(e.key.clone())
                            .hint("write `NAME: value`"),
                        ),
                    }
                }
            }
            _ => diags.push(
                Diagnostic::new(
                    &label,
                    format!(
                        "a var file must be a mapping of NAME: value, found {}",
                        root.describe()
                    ),
                )
                .at(root.start.line, root.start.col)
                .hint("write `nodes: 4` lines (YAML) or `nodes=4` lines"),
            ),
        },
    }
    diags.into_result(out)
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// Substitutes `${var.NAME}` in every scalar value of `root` except under the
/// top-level `variables` key. `defaults` are the spec's declared defaults.
/// Also reports a `--var`/`--var-file` name the spec neither declares nor
/// uses, and a default that refers to a variable (defaults are literal, as
/// in Terraform: no order to evaluate them in, so no cycle to explain).
pub(crate) fn substitute(
    root: &mut Node,
    file: &str,
    vars: &Vars,
    declared: &BTreeMap<String, Option<String>>,
    diags: &mut Diagnostics,
) {
    let ctx = Ctx {
        file,
        vars,
        declared,
        used: std::cell::RefCell::new(std::collections::BTreeSet::new()),
    };
    if let Kind::Map(entries) = &mut root.kind {
        for e in entries.iter_mut() {
            if e.key == "variables" {
                computed_defaults(file, &e.value, diags);
                continue;
            }
            let path = e.key.clone();
            ctx.walk(&mut e.value, &path, diags);
        }
    } else {
        ctx.walk(root, "", diags);
    }
    let used = ctx.used.into_inner();
    for (name, given) in vars.given() {
        if declared.contains_key(name) || used.contains(name) {
            continue;
        }
        let known: Vec<&str> = declared
            .keys()
            .map(String::as_str)
            .chain(used.iter().map(String::as_str))
            .collect();
        let (label, how) = match given {
            Given::CommandLine => ("<command line>".to_string(), format!("`--var {name}=…`")),
            Given::File(f) => (
                f.display().to_string(),
                format!("`{name}` in the variable file"),
            ),
        };
        let mut hint = if known.is_empty() {
            format!("{file} declares and uses no variables; remove {how}")
        } else {
            format!(
                "the spec's variables are {}; remove {how} or declare it under `variables:`",
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        if let Some(s) = super::validate::suggest(name, known.iter().copied()) {
            hint = format!("did you mean `{s}`? {hint}");
        }
        diags.push(
            Diagnostic::new(
                &label,
                format!("variable `{name}` is not declared or used in {file}"),
            )
            .hint(hint),
        );
    }
}

/// Reports each `variables.NAME.default` that refers to a variable.
fn computed_defaults(file: &str, variables: &Node, diags: &mut Diagnostics) {
    let Kind::Map(vars) = &variables.kind else {
        return;
    };
    for v in vars {
        let Kind::Map(fields) = &v.value.kind else {
            continue;
        };
        for f in fields.iter().filter(|f| f.key == "default") {
            if let Kind::Scalar { text, .. } = &f.value.kind {
                if text.contains("${var.") {
                    diags.push(
                        Diagnostic::new(
                            file,
                            format!(
                                "the default of variable `{}` refers to another variable (`{}`)",
                                v.key,
                                yaml::shorten(text)
                            ),
                        )
                        .at(f.value.start.line, f.value.start.col)
                        .path(format!("variables.{}.default", v.key))
                        .hint("a default is a literal value: write the value itself, or give it with `--var`"),
                    );
                }
            }
        }
    }
}

struct Ctx<'a> {
    file: &'a str,
    vars: &'a Vars,
    declared: &'a BTreeMap<String, Option<String>>,
    /// Every name a `${var.NAME}` refers to.
    used: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl Ctx<'_> {
    fn walk(&self, node: &mut Node, path: &str, diags: &mut Diagnostics) {
        let start = node.start;
        let end = node.end;
        match &mut node.kind {
            Kind::Scalar {
                text,
                style,
                substituted,
            } => {
                if !text.contains("${") {
                    return;
                }
                // Column of the text's first character, when it maps 1:1 to the source.
                let base = match style {
                    Style::Plain if end.line == start.line => Some(start.col),
                    Style::Quoted if end.line == start.line && !text.contains('\\') => {
                        Some(start.col + 1)
                    }
                    _ => None,
                };
                match self.expand(text, path, start, base) {
                    Ok(Some(new)) => {
                        *text = new;
                        *substituted = true;
                    }
                    Ok(None) => {}
                    Err(ds) => diags.extend(ds),
                }
            }
            Kind::Seq(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.walk(item, &format!("{path}[{i}]"), diags);
                }
            }
            Kind::Map(entries) => {
                for e in entries.iter_mut() {
                    let p = if path.is_empty() {
                        e.key.clone()
                    } else {
                        format!("{path}.{}", e.key)
                    };
                    self.walk(&mut e.value, &p, diags);
                }
            }
        }
    }

    /// Expands one scalar; `Ok(None)` when nothing was substituted.
    fn expand(
        &self,
        text: &str,
        path: &str,
        start: yaml::Pos,
        base: Option<usize>,
    ) -> Result<Option<String>, Diagnostics> {
        let mut out = String::with_capacity(text.len());
        let mut diags = Diagnostics::new();
        let mut changed = false;
        let mut rest = text;
        let mut offset_chars = 0usize; // chars consumed from `text`
        let at = |off: usize| match base {
            Some(col) => (start.line, col + off),
            None => (start.line, start.col),
        };
        while let Some(i) = rest.find('$') {
            let (before, from) = rest.split_at(i);
            out.push_str(before);
            offset_chars += before.chars().count();
            if let Some(after_escape) = from.strip_prefix("$${") {
                out.push_str("${");
                changed = true;
                rest = after_escape;
                offset_chars += 3;
            } else if let Some(after) = from.strip_prefix("${var.") {
                let (line, col) = at(offset_chars);
                match after.find('}') {
                    None => {
                        diags.push(
                            Diagnostic::new(self.file, "unterminated variable reference `${var.`")
                                .at(line, col)
                                .path(path)
                                .hint("write `${var.NAME}`; to write a literal `${`, use `$${`"),
                        );
                        rest = "";
                    }
                    Some(close) => {
                        let name = &after[..close];
                        let whole = &from[..6 + close + 1];
                        if !valid_name(name) {
                            diags.push(
                                Diagnostic::new(
                                    self.file,
                                    format!(
                                        "invalid variable reference `{}`",
                                        yaml::shorten(whole)
                                    ),
                                )
                                .at(line, col)
                                .path(path)
                                .hint(NAME_RULE),
                            );
                        } else {
                            self.used.borrow_mut().insert(name.to_string());
                            match self.lookup(name) {
                                Some(v) => out.push_str(v),
                                None => diags.push(self.undefined(name, path, line, col)),
                            }
                        }
                        changed = true;
                        offset_chars += whole.chars().count();
                        rest = &from[whole.len()..];
                    }
                }
            } else {
                out.push('$');
                offset_chars += 1;
                rest = &from[1..];
            }
        }
        out.push_str(rest);
        if !diags.is_empty() {
            return Err(diags);
        }
        Ok(changed.then_some(out))
    }

    fn lookup(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .or_else(|| self.declared.get(name).and_then(|d| d.as_deref()))
    }

    fn undefined(&self, name: &str, path: &str, line: usize, col: usize) -> Diagnostic {
        let declared = self.declared.contains_key(name);
        let message = if declared {
            format!("variable `{name}` is declared without a default and was not given a value")
        } else {
            format!("undefined variable `{name}`")
        };
        let mut hint = format!(
            "give it a value with `--var {name}=...`, a `--var-file`, the environment variable `{ENV_PREFIX}{name}`, or `variables.{name}.default` in the spec"
        );
        let known = self
            .vars
            .iter()
            .map(|(k, _)| k)
            .chain(self.declared.keys().map(String::as_str));
        if let Some(s) = super::validate::suggest(name, known) {
            hint = format!("did you mean `${{var.{s}}}`? Otherwise {hint}");
        }
        Diagnostic::new(self.file, message)
            .at(line, col)
            .path(path)
            .hint(hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn node(text: &str) -> Node {
        yaml::parse(text).root.expect("parses")
    }

    fn run(
        text: &str,
        vars: &Vars,
        declared: &[(&str, Option<&str>)],
    ) -> Result<Node, Diagnostics> {
        let mut n = node(text);
        let declared = declared
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect();
        let mut d = Diagnostics::new();
        substitute(&mut n, "t.yaml", vars, &declared, &mut d);
        d.into_result(n)
    }

    fn scalar(n: &Node, key: &str) -> String {
        let Kind::Map(e) = &n.kind else { panic!() };
        let v = &e.iter().find(|e| e.key == key).expect("key").value;
        let Kind::Scalar { text, .. } = &v.kind else {
            panic!()
        };
        text.clone()
    }

    #[test]
    fn substitutes_with_precedence_and_escape() {
        let vars: Vars = [("a", "cli")].into_iter().collect();
        let n = run(
            "x: ${var.a}-${var.b}\ny: $${var.a}\nz: cost $5\n",
            &vars,
            &[("a", Some("d")), ("b", Some("def"))],
        )
        .unwrap();
        assert_eq!(scalar(&n, "x"), "cli-def");
        assert_eq!(scalar(&n, "y"), "${var.a}");
        assert_eq!(scalar(&n, "z"), "cost $5");
    }

    #[test]
    fn undefined_variable_points_at_reference() {
        let err = run(
            "a: 1\nb: x ${var.nodez}\n",
            &Vars::new(),
            &[("nodes", None)],
        )
        .unwrap_err();
        let d = &err.0[0];
        assert_eq!((d.line, d.column), (Some(2), Some(6)));
        assert_eq!(d.yaml_path.as_deref(), Some("b"));
        let hint = d.hint.as_deref().unwrap();
        assert!(
            hint.contains("--var nodez=")
                && hint.contains("GPUFORM_VAR_nodez")
                && hint.contains("variables.nodez.default")
        );
        assert!(hint.contains("did you mean `${var.nodes}`"), "{hint}");
    }

    #[test]
    fn bad_references() {
        assert!(run("a: ${var.}\n", &Vars::new(), &[]).is_err());
        assert!(run("a: ${var.x\n", &Vars::new(), &[]).is_err());
        assert!(run("a: ${HOME}\n", &Vars::new(), &[]).is_ok());
    }

    #[test]
    fn a_default_that_refers_to_a_variable_is_reported_where_it_is() {
        // `a` and `b` defaulting to each other: a cycle, reported as such a
        // default rather than as whatever type error the text would cause.
        let err = run(
            "variables:\n  a:\n    default: ${var.b}\n  b:\n    default: ${var.a}\nnodes: ${var.a}\n",
            &Vars::new(),
            &[("a", Some("${var.b}")), ("b", Some("${var.a}"))],
        )
        .unwrap_err();
        let paths: Vec<_> = err.0.iter().map(|d| d.yaml_path.clone()).collect();
        assert!(paths.contains(&Some("variables.a.default".into())), "{err}");
        assert!(paths.contains(&Some("variables.b.default".into())), "{err}");
        let d = err
            .0
            .iter()
            .find(|d| d.yaml_path.as_deref() == Some("variables.a.default"))
            .unwrap();
        assert_eq!((d.line, d.column), (Some(3), Some(14)));
        assert!(d.message.contains("refers to another variable"), "{err}");
    }

    #[test]
    fn a_given_variable_the_spec_neither_declares_nor_uses_is_an_error() {
        let mut vars = Vars::parse_with_env(&["nodez=8".into()], &[], Vec::new()).unwrap();
        let err = run("a: ${var.nodes}\n", &vars, &[("nodes", Some("2"))]).unwrap_err();
        assert_eq!(err.len(), 1, "{err}");
        let d = &err.0[0];
        assert!(
            d.message.contains("`nodez` is not declared or used"),
            "{err}"
        );
        assert!(
            d.hint
                .as_deref()
                .unwrap()
                .starts_with("did you mean `nodes`?"),
            "{err}"
        );
        // Used without being declared, or declared without being used: fine.
        assert!(run("a: ${var.nodez}\n", &vars, &[]).is_ok());
        assert!(run("a: 1\n", &vars, &[("nodez", None)]).is_ok());
        // The environment may hold other specs' values: never an error.
        vars =
            Vars::parse_with_env(&[], &[], vec![("GPUFORM_VAR_nodez".into(), "8".into())]).unwrap();
        assert!(run("a: 1\n", &vars, &[]).is_ok());
    }

    #[test]
    fn cli_precedence_env_file_pair() {
        let dir = tempfile::tempdir().unwrap();
        let kv = dir.path().join("a.vars");
        std::fs::File::create(&kv)
            .unwrap()
            .write_all(b"# c\nnodes = 3\nregion=\"us-east-1\"\n")
            .unwrap();
        let y = dir.path().join("b.yaml");
        std::fs::File::create(&y)
            .unwrap()
            .write_all(b"nodes: 5\nzone: a\n")
            .unwrap();
        let env = vec![
            ("GPUFORM_VAR_nodes".to_string(), "1".to_string()),
            ("GPUFORM_VAR_env_only".to_string(), "e".to_string()),
            ("OTHER".into(), "x".into()),
        ];
        let v =
            Vars::parse_with_env(&["zone=b".to_string()], &[kv.clone(), y.clone()], env).unwrap();
        assert_eq!(v.get("nodes"), Some("5"));
        assert_eq!(v.get("region"), Some("us-east-1"));
        assert_eq!(v.get("zone"), Some("b"));
        assert_eq!(v.get("env_only"), Some("e"));
        assert_eq!(v.get("OTHER"), None);
    }

    #[test]
    fn cli_errors_are_all_reported() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "a: [1]\n9x: 2\n").unwrap();
        let missing = dir.path().join("missing.vars");
        let err = Vars::parse_with_env(
            &["novalue".into(), "bad-name=1".into()],
            &[bad, missing],
            Vec::new(),
        )
        .unwrap_err();
        assert_eq!(err.len(), 5, "{err}");
    }
}
