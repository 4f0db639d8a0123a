//! Loading a spec: read, parse with positions, substitute variables, validate,
//! deserialize. All problems of one run come back together as [`Diagnostics`].

use super::diagnostics::{register_source, Diagnostic, Diagnostics};
use super::model::Spec;
use super::validate::Validator;
use super::vars::{substitute, Vars};
use super::yaml::{self, Kind, Node, Pos};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Spec files larger than this are refused (a spec is a few kilobytes).
const MAX_SPEC_BYTES: u64 = 4 * 1024 * 1024;

/// A validated spec with the text it came from and where each node is.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    pub spec: Spec,
    pub path: PathBuf,
    pub text: String,
    index: PositionIndex,
}

/// YAML path (`clusters.trainer.zones[1]`) → 1-based (line, column).
#[derive(Debug, Clone, Default)]
struct PositionIndex(HashMap<String, Pos>);

impl PositionIndex {
    fn build(root: &Node) -> PositionIndex {
        let mut map = HashMap::new();
        map.insert(String::new(), root.start);
        fn walk(node: &Node, path: &str, map: &mut HashMap<String, Pos>) {
            match &node.kind {
                Kind::Scalar { .. } => {}
                Kind::Seq(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let p = format!("{path}[{i}]");
                        map.insert(p.clone(), item.start);
                        walk(item, &p, map);
                    }
                }
                Kind::Map(entries) => {
                    for e in entries {
                        let p = if path.is_empty() {
                            e.key.clone()
                        } else {
                            format!("{path}.{}", e.key)
                        };
                        // A scalar or flow value on the key's line: point at the value;
                        // a block collection or an empty value: point at the key.
                        let at = match &e.value.kind {
                            Kind::Scalar { .. } if e.value.is_null() => e.key_pos,
                            Kind::Map(_) | Kind::Seq(_) if !e.value.flow => e.key_pos,
                            _ => e.value.start,
                        };
                        map.insert(p.clone(), at);
                        walk(&e.value, &p, map);
                    }
                }
            }
        }
        walk(root, "", &mut map);
        PositionIndex(map)
    }

    fn locate(&self, yaml_path: &str) -> Option<Pos> {
        let mut p = yaml_path.trim().trim_start_matches('.').to_string();
        loop {
            if let Some(pos) = self.0.get(&p) {
                return Some(*pos);
            }
            if p.is_empty() {
                return None;
            }
            p = parent_path(&p);
        }
    }
}

/// `a.b[2]` → `a.b`, `a.b` → `a`, `a` → ``.
fn parent_path(p: &str) -> String {
    if p.ends_with(']') {
        if let Some(i) = p.rfind('[') {
            return p[..i].to_string();
        }
    }
    match p.rfind('.') {
        Some(i) => p[..i].to_string(),
        None => String::new(),
    }
}

impl LoadedSpec {
    /// Line/column (1-based) of the node at a YAML path like
    /// `clusters.trainer.gpu` or `clusters.trainer.zones[1]`; falls back to
    /// the nearest existing ancestor.
    pub fn locate(&self, yaml_path: &str) -> Option<(usize, usize)> {
        self.index.locate(yaml_path).map(|p| (p.line, p.col))
    }

    /// A diagnostic pointing at `yaml_path` in this file (used by later
    /// layers — resolve/catalog checks — to report errors in the same format).
    pub fn diagnostic(
        &self,
        yaml_path: &str,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> Diagnostic {
        let mut d = Diagnostic::new(self.file_label(), message)
            .path(yaml_path)
            .maybe_hint(hint);
        if let Some((line, col)) = self.locate(yaml_path) {
            d = d.at(line, col);
        }
        d
    }

    /// The file name used in diagnostics.
    pub fn file_label(&self) -> String {
        self.path.display().to_string()
    }
}

/// A spec file's text, or why it cannot be read.
fn read_spec(path: &Path) -> Result<String, Diagnostics> {
    let label = path.display().to_string();
    let read_err = |e: std::io::Error| {
        Diagnostics::from(
            Diagnostic::new(&label, format!("cannot read spec file: {e}")).hint(
                if e.kind() == std::io::ErrorKind::NotFound {
                    "check the path; `gpuform init FILE` writes a starter spec".to_string()
                } else {
                    "check the file's permissions".to_string()
                },
            ),
        )
    };
    let meta = std::fs::metadata(path).map_err(read_err)?;
    if meta.is_dir() {
        return Err(
            Diagnostic::new(&label, "expected a spec file, found a directory")
                .hint("pass the YAML file, e.g. `gpuform.yaml`")
                .into(),
        );
    }
    if meta.len() > MAX_SPEC_BYTES {
        return Err(Diagnostic::new(
            &label,
            format!(
                "spec file is {} bytes; the limit is {MAX_SPEC_BYTES}",
                meta.len()
            ),
        )
        .hint("a spec is a few kilobytes; is this the right file?")
        .into());
    }
    let bytes = std::fs::read(path).map_err(read_err)?;
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
            return Err(Diagnostic::new(&label, "the file is not valid UTF-8")
                .at(line, 1)
                .hint("save the spec as UTF-8 text")
                .into());
        }
    };
    Ok(text)
}

/// Reads and loads a spec file.
pub fn load(path: &Path, vars: &Vars) -> Result<LoadedSpec, Diagnostics> {
    load_salvaging(path, vars).map_err(|f| f.diagnostics)
}

/// Why a spec did not load, and what of it did: `salvaged` is the spec
/// without every part a diagnostic points at (a cluster with an unknown
/// `cloud:`, an `ingress` list with a bad port…), when the rest validates.
/// The checks that come after validation (the catalog's, in resolve) can
/// run on it, so that one run reports their problems as well, in the parts
/// that do not depend on what failed.
#[derive(Debug)]
pub struct LoadFailure {
    pub diagnostics: Diagnostics,
    pub salvaged: Option<LoadedSpec>,
}

/// [`load`], keeping what validated when it fails (see [`LoadFailure`]).
pub fn load_salvaging(path: &Path, vars: &Vars) -> Result<LoadedSpec, LoadFailure> {
    let text = read_spec(path).map_err(|diagnostics| LoadFailure {
        diagnostics,
        salvaged: None,
    })?;
    let label = path.display().to_string();
    let mut result = load_text(&label, &text, vars);
    match &mut result {
        Ok(l) => l.path = path.to_path_buf(),
        Err(f) => {
            if let Some(l) = &mut f.salvaged {
                l.path = path.to_path_buf();
            }
        }
    }
    result
}

/// Loads a spec from text; `name` labels it in diagnostics (and becomes `path`).
pub fn load_str(name: &str, text: &str, vars: &Vars) -> Result<LoadedSpec, Diagnostics> {
    load_text(name, text, vars).map_err(|f| f.diagnostics)
}

fn load_text(name: &str, text: &str, vars: &Vars) -> Result<LoadedSpec, LoadFailure> {
    register_source(name, text);
    let parsed = yaml::parse(text);
    let mut diags = Diagnostics::new();
    for issue in &parsed.issues {
        diags.push(
            Diagnostic::new(name, issue.message.clone())
                .at(issue.pos.line, issue.pos.col)
                .maybe_hint(issue.hint.clone()),
        );
    }
    let failed = |diagnostics: Diagnostics| LoadFailure {
        diagnostics,
        salvaged: None,
    };
    let Some(mut root) = parsed.root else {
        if diags.is_empty() {
            // No document at all: let the validator say what a spec needs.
            let mut v = Validator::new(name);
            v.spec(None);
            diags.extend(v.diags);
        }
        diags.sort();
        return Err(failed(diags));
    };
    let index = PositionIndex::build(&root);
    let declared = declared_variables(&root);
    substitute(&mut root, name, vars, &declared, &mut diags);
    let mut v = Validator::new(name);
    let value = v.spec(Some(&root));
    diags.extend(v.diags);
    if !diags.is_empty() {
        diags.sort();
        // A tree the parser had to repair is not worth checking further.
        let salvaged = if parsed.issues.is_empty() {
            salvage(name, &root, &diags).map(|spec| LoadedSpec {
                spec,
                path: PathBuf::from(name),
                text: text.to_string(),
                index,
            })
        } else {
            None
        };
        return Err(LoadFailure {
            diagnostics: diags,
            salvaged,
        });
    }
    let Some(value) = value else {
        return Err(failed(
            Diagnostic::new(name, "the spec is invalid").at(1, 1).into(),
        ));
    };
    let spec: Spec = serde_json::from_value(value).map_err(|e| {
        // The validator accepts only what the model accepts; reaching this is a bug.
        failed(Diagnostics::from(
            Diagnostic::new(
                name,
                format!("internal error: validated spec did not deserialize: {e}"),
            )
            .at(1, 1)
            .hint("please report this with the spec file"),
        ))
    })?;
    Ok(LoadedSpec {
        spec,
        path: PathBuf::from(name),
        text: text.to_string(),
        index,
    })
}

/// The spec `root` without what `diags` point at, when that validates:
/// each round removes the node at each diagnostic's YAML path (a whole
/// list when one of its items is at fault, so that no later path shifts),
/// then validates again, whose new diagnostics (a cluster now missing its
/// `cloud`) say what to remove next. `None` when a diagnostic has no path
/// or points at the whole spec, or nothing validates within a few rounds.
fn salvage(name: &str, root: &Node, diags: &Diagnostics) -> Option<Spec> {
    let mut tree = root.clone();
    let mut diags = diags.clone();
    for _ in 0..8 {
        let before = tree.clone();
        // Whether `path` was in this round's tree (then, not found now, it
        // went with a list or parent another diagnostic removed).
        let existed = |path: &str| prune(&mut before.clone(), "", path).removed();
        for d in &diags.0 {
            let mut path = d.yaml_path.clone()?;
            while !prune(&mut tree, "", &path).removed() && !existed(&path) {
                if path.is_empty() {
                    return None;
                }
                path = parent_path(&path);
            }
        }
        let mut v = Validator::new(name);
        let value = v.spec(Some(&tree));
        if v.diags.is_empty() {
            return serde_json::from_value(value?).ok();
        }
        diags = v.diags;
    }
    None
}

/// What [`prune`] did at one level.
enum Pruned {
    Removed,
    /// An item of this list is at fault: remove the list.
    RemoveList,
    NotFound,
}

impl Pruned {
    fn removed(&self) -> bool {
        !matches!(self, Pruned::NotFound)
    }
}

/// Removes the node at YAML path `target` under `node` (itself at `path`).
fn prune(node: &mut Node, path: &str, target: &str) -> Pruned {
    let under = |p: &str| {
        target == p
            || target
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    };
    match &mut node.kind {
        Kind::Scalar { .. } => Pruned::NotFound,
        Kind::Seq(items) => {
            let hit = (0..items.len()).any(|i| under(&format!("{path}[{i}]")));
            if hit {
                Pruned::RemoveList
            } else {
                Pruned::NotFound
            }
        }
        Kind::Map(entries) => {
            for i in 0..entries.len() {
                let p = if path.is_empty() {
                    entries[i].key.clone()
                } else {
                    format!("{path}.{}", entries[i].key)
                };
                if p == target {
                    entries.remove(i);
                    return Pruned::Removed;
                }
                if under(&p) {
                    match prune(&mut entries[i].value, &p, target) {
                        Pruned::RemoveList => {
                            entries.remove(i);
                            return Pruned::Removed;
                        }
                        other => return other,
                    }
                }
            }
            Pruned::NotFound
        }
    }
}

/// `variables.NAME.default` of the document (defaults as written; the
/// validator reports anything malformed there).
fn declared_variables(root: &Node) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    let Kind::Map(entries) = &root.kind else {
        return out;
    };
    let Some(vars) = entries.iter().find(|e| e.key == "variables") else {
        return out;
    };
    let Kind::Map(vars) = &vars.value.kind else {
        return out;
    };
    for v in vars {
        let default = match &v.value.kind {
            Kind::Map(fields) => fields
                .iter()
                .find(|f| f.key == "default")
                .and_then(|f| match &f.value.kind {
                    Kind::Scalar { text, .. } if !f.value.is_null() => Some(text.clone()),
                    _ => None,
                }),
            _ => None,
        };
        out.insert(v.key.clone(), default);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "project: demo\nclusters:\n  trainer:\n    cloud: aws\n    region: us-east-1\n    zones: [us-east-1a, us-east-1b]\n    nodes: 2\n    gpu: A10G:1\n    disk:\n      root_gb: 200\n";

    #[test]
    fn locate_and_fallback() {
        let l = load_str("t.yaml", SPEC, &Vars::new()).unwrap();
        assert_eq!(l.locate("clusters.trainer.gpu"), Some((8, 10)));
        assert_eq!(l.locate("clusters.trainer.zones[1]"), Some((6, 25)));
        assert_eq!(l.locate("clusters.trainer"), Some((3, 3)));
        assert_eq!(l.locate("clusters.trainer.disk"), Some((9, 5)));
        assert_eq!(l.locate("clusters.trainer.mig"), Some((3, 3)));
        assert_eq!(l.locate("clusters.trainer.zones[7]"), Some((6, 12)));
        assert_eq!(l.locate("nothing.here"), Some((1, 1)));
        let d = l.diagnostic(
            "clusters.trainer.gpu",
            "unknown GPU model `A10G`",
            Some("see `gpuform catalog`".into()),
        );
        assert_eq!(
            (d.line, d.column, d.file.as_str()),
            (Some(8), Some(10), "t.yaml")
        );
        assert_eq!(l.spec.clusters["trainer"].gpu.count, 1);
        assert_eq!(l.spec.clusters["trainer"].disk.root_gb, 200);
    }

    #[test]
    fn parent_paths() {
        assert_eq!(parent_path("a.b[2]"), "a.b");
        assert_eq!(parent_path("a.b"), "a");
        assert_eq!(parent_path("a"), "");
    }

    #[test]
    fn variables_make_numbers() {
        let text = "variables:\n  nodes:\n    default: 3\nproject: demo\nclusters:\n  a:\n    cloud: sandbox\n    region: r\n    nodes: ${var.nodes}\n    gpu: \"T4:${var.nodes}\"\n";
        let l = load_str("v.yaml", text, &Vars::new()).unwrap();
        assert_eq!(l.spec.clusters["a"].nodes, 3);
        assert_eq!(l.spec.clusters["a"].gpu.count, 3);
        let vars: Vars = [("nodes", "5")].into_iter().collect();
        let l = load_str("v.yaml", text, &vars).unwrap();
        assert_eq!(l.spec.clusters["a"].nodes, 5);
    }

    #[test]
    fn empty_file() {
        let e = load_str("e.yaml", "", &Vars::new()).unwrap_err();
        assert!(e.0[0].message.contains("empty"));
        let e = load_str("e.yaml", "# only a comment\n", &Vars::new()).unwrap_err();
        assert!(e.0[0].message.contains("empty"));
    }
}
