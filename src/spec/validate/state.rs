//! `state:`: where state is kept, one table of keys per backend.

use super::super::model::{SpecNames, StateSettings};
use super::super::yaml::{shorten, Node};
use super::{fields, join, list, Validator};
use serde_json::Value;

impl Validator {
    pub(super) fn state(&mut self, node: &Node, path: &str) -> Option<Value> {
        let backends = StateSettings::NAMES;
        let entries = self.expect(
            node.map(),
            node,
            path,
            "`state` as a mapping",
            "write `state: { backend: local }`",
        )?;
        let Some(backend) = entries.iter().find(|e| e.key == "backend") else {
            self.error(
                node.start,
                path,
                "`state` is missing the required key `backend`",
                format!("add `backend: ...`, one of {}", list(backends)),
            );
            return None;
        };
        let p = join(path, "backend");
        let name = self.choice(&backend.value, &p, backends, "state backend")?;
        let model = format!("StateSettings.{}", name.as_str()?);
        let table = fields::STATE.iter().find(|t| t.model == model)?;
        self.object(node, path, node.start, table)
            .map(Value::Object)
    }

    /// A state URL: a spec is committed, so it must carry no password.
    pub(super) fn state_url(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.nonempty(node, path)?;
        let url = text.as_str().unwrap_or_default();
        if crate::state::redact_url(url) != url {
            self.error(
                node.start,
                path,
                "the state URL holds a password; a spec is shared and committed, so it must not",
                "remove the password from the URL and set PGPASSWORD (or ~/.pgpass) where gpuform runs",
            );
            return None;
        }
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            self.error(
                node.start,
                path,
                format!("expected a postgres:// URL, found `{}`", shorten(url)),
                "write e.g. `url: postgres://gpuform@db.internal:5432/infra`",
            );
            return None;
        }
        Some(text)
    }

    pub(super) fn s3_state_url(&mut self, node: &Node, path: &str) -> Option<Value> {
        let text = self.nonempty(node, path)?;
        let url = text.as_str().unwrap_or_default();
        if !url.starts_with("s3://") {
            self.error(
                node.start,
                path,
                format!("expected an s3:// URL, found `{}`", shorten(url)),
                "write e.g. `url: s3://team-state/gpuform?region=us-east-1`",
            );
            return None;
        }
        if crate::state::redact_url(url) != url || url.contains('@') {
            self.error(
                node.start,
                path,
                "the state URL holds credentials; a spec is shared and committed, so it must not",
                "remove them; gpuform reads AWS credentials from the AWS chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, an instance role)",
            );
            return None;
        }
        if let Err(message) = crate::state::backend::S3Url::parse(url) {
            self.error(
                node.start,
                path,
                message,
                "write e.g. `url: s3://team-state/gpuform?region=us-east-1`",
            );
            return None;
        }
        Some(text)
    }
}
