//! A saved plan file (`gpuform plan --out FILE`): the plan's JSON with a
//! checksum as its first field, so that `apply FILE` applies exactly the
//! plan that was shown.
//!
//! The checksum is SHA-256 over the state the plan was made against
//! (lineage and serial) and the plan's JSON exactly as written (every byte
//! after the checksum line): an edited action, a truncated file or a plan
//! moved to another state's numbers no longer matches. It is computed over
//! bytes, not over a re-serialised value, because a float read back from
//! JSON need not print the same digits.
//!
//! A plain checksum proves the file was not changed by accident or by
//! someone who does not know how it is made; it cannot stop someone who
//! recomputes it. With a state passphrase set, the file is also sealed
//! (AES-256-GCM under the passphrase's key, `state::crypto`), which nobody
//! without the passphrase can recompute; the CLI then refuses a plan file
//! that is not sealed (see `cli::commands::plan::read_plan_file`).

use super::{Plan, StateRef, PLAN_FORMAT_VERSION};
use sha2::{Digest, Sha256};

/// The first bytes of every saved plan: `{`, then the checksum field.
const HEAD: &str = "{\n  \"checksum\": \"sha256:";

/// What is wrong with a file that is a saved plan but cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SavedPlanError {
    /// Not (or no longer) readable as a plan: truncated, corrupted.
    Damaged(String),
    /// Readable, but its content is not what its checksum was made over.
    Changed,
    /// A plan without a checksum (written by hand, or by a gpuform
    /// before checksums).
    Unchecked,
    /// A plan of a newer format than this gpuform reads.
    Newer(u64),
}

impl SavedPlanError {
    /// The message for `file`, with what to do.
    pub fn message(&self, file: &str) -> String {
        let remake = "make a new plan with `gpuform plan SPEC --out FILE` and apply that";
        match self {
            SavedPlanError::Damaged(why) => format!(
                "{file} is a damaged plan file ({why}): it was truncated or corrupted after it was made\n  hint: {remake}"
            ),
            SavedPlanError::Changed => format!(
                "this plan file was changed after it was made: the checksum in {file} does not match its content (an action, an attribute or the state it was made against was edited), so it is not the plan that was shown\n  hint: {remake}"
            ),
            SavedPlanError::Unchecked => format!(
                "{file} is a plan file without a checksum, so nothing proves it is the plan that was shown (written by hand, or by an older gpuform)\n  hint: {remake}"
            ),
            SavedPlanError::Newer(v) => format!(
                "{file} is a plan of format {v}, newer than this gpuform understands; upgrade gpuform"
            ),
        }
    }
}

/// The checksum of `body` (a plan's JSON) made against `state`.
fn checksum(state: &StateRef, body: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"gpuform saved plan\n");
    h.update(
        format!(
            "state lineage {} serial {}\n",
            state.lineage.as_deref().unwrap_or("none"),
            state.serial
        )
        .as_bytes(),
    );
    h.update(body.as_bytes());
    hex::encode(h.finalize())
}

/// The file's bytes for `plan` (before any sealing).
pub fn encode(plan: &Plan) -> Vec<u8> {
    let body = serde_json::to_string_pretty(plan).expect("plans serialise");
    let rest = body
        .strip_prefix("{\n")
        .expect("a plan serialises as a JSON object");
    let sum = checksum(&plan.state, &body);
    format!("{HEAD}{sum}\",\n{rest}\n").into_bytes()
}

/// Whether parsed JSON is meant as a plan (rather than a spec written as a
/// YAML flow mapping, which is also `{…}`).
fn looks_like_plan(text: &str) -> bool {
    text.starts_with(HEAD) || (text.contains("\"format_version\"") && text.contains("\"changes\""))
}

/// Reads a saved plan from `bytes` (already opened, when sealed):
/// `Ok(None)` when they are not a plan at all (a spec), the plan when its
/// checksum holds.
pub fn decode(bytes: &[u8]) -> Result<Option<Plan>, SavedPlanError> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.trim_start(),
        Err(_) if bytes.trim_ascii_start().starts_with(HEAD.as_bytes()) => {
            return Err(SavedPlanError::Damaged("it is not valid UTF-8".into()))
        }
        Err(_) => return Ok(None),
    };
    if !text.starts_with('{') {
        return Ok(None);
    }
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) if looks_like_plan(text) => {
            return Err(SavedPlanError::Damaged(format!("not valid JSON: {e}")))
        }
        Err(_) => return Ok(None),
    };
    if value.get("changes").is_none() || value.get("format_version").is_none() {
        return if value.get("checksum").is_some() {
            Err(SavedPlanError::Damaged(
                "it has no `changes` or `format_version`".into(),
            ))
        } else {
            Ok(None)
        };
    }
    let version = value["format_version"].as_u64().unwrap_or(0);
    if version > PLAN_FORMAT_VERSION as u64 {
        return Err(SavedPlanError::Newer(version));
    }
    let Some(after_head) = text.strip_prefix(HEAD) else {
        return Err(SavedPlanError::Unchecked);
    };
    let Some((sum, rest)) = after_head.split_once("\",\n") else {
        return Err(SavedPlanError::Damaged(
            "its checksum line is malformed".into(),
        ));
    };
    let plan: Plan = serde_json::from_value(value).map_err(|e| {
        // A `Value` has no lines: the text is read again to say where (an
        // unknown provider key, say), only on the way to this error.
        let located = serde_json::from_str::<Plan>(text).err().unwrap_or(e);
        SavedPlanError::Damaged(format!("not a gpuform plan: {located}"))
    })?;
    let body = format!("{{\n{}", rest.strip_suffix('\n').unwrap_or(rest));
    if checksum(&plan.state, &body) != sum {
        return Err(SavedPlanError::Changed);
    }
    Ok(Some(plan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Action, ResourceChange};
    use gpuform_provider::ResourceKind;

    fn plan() -> Plan {
        let mut p: Plan = serde_json::from_value(serde_json::json!({
            "format_version": PLAN_FORMAT_VERSION,
            "gpuform_version": "0",
            "project": "p",
            "state": {"lineage": "L1", "serial": 4},
            "destroy": false,
            "changes": [],
            "summary": {"create": 0, "update": 0, "replace": 0, "delete": 0, "no_op": 1},
            "cost": {"hourly_usd_before": 0.1, "hourly_usd_after": 0.30000000000000004,
                     "hourly_usd_delta": 0.2, "monthly_usd_before": 73.0,
                     "monthly_usd_after": 219.0, "monthly_usd_delta": 146.0},
        }))
        .unwrap();
        p.changes.push(ResourceChange {
            address: "bucket.data".into(),
            kind: ResourceKind::Bucket,
            provider: crate::address::Target::sandbox(gpuform_provider::Cloud::Aws),
            region: "us-east-1".into(),
            action: Action::NoOp,
            reason: None,
            replace_because: vec![],
            id: Some("b-1".into()),
            old_provider: None,
            old_region: None,
            before: None,
            after: None,
            deps: Default::default(),
            old_deps: Default::default(),
            token: None,
            hourly_usd_before: None,
            hourly_usd_after: Some(1.0 / 3.0),
        });
        p
    }

    /// A saved plan as `gpuform plan --out` wrote it before provider keys
    /// were typed (a sandbox run moving a cluster between clouds: `provider`
    /// and `old_provider` of four clouds).
    const WRITTEN: &str = include_str!("../../tests/fixtures/formats/plan.json");

    #[test]
    fn a_written_plan_reads_typed_and_encodes_back_as_written() {
        let p = decode(WRITTEN.as_bytes()).unwrap().unwrap();
        assert!(p.changes.iter().any(|c| c.old_provider.is_some()));
        let again = String::from_utf8(encode(&p)).unwrap();
        assert_eq!(again.lines().count(), WRITTEN.lines().count());
        // Every line as written but the checksum and fractional numbers
        // (serde_json reads those to within a unit in the last place, so
        // their last digit may move: it always did).
        let fractional = |l: &str| {
            l.trim_end_matches(',')
                .rsplit_once(": ")
                .is_some_and(|(_, n)| n.contains('.') && n.parse::<f64>().is_ok())
        };
        for (i, (a, b)) in again.lines().zip(WRITTEN.lines()).enumerate().skip(2) {
            assert!(
                a == b || (fractional(a) && fractional(b)),
                "line {}: {a} / {b}",
                i + 1
            );
        }
        assert!(WRITTEN.lines().filter(|l| l.contains("provider")).count() > 20);
    }

    #[test]
    fn an_unknown_provider_key_is_damage_named_with_its_line() {
        let text = WRITTEN.replacen("\"sandbox:huawei\"", "\"sandbox:gcp\"", 1);
        assert_ne!(text, WRITTEN);
        let line = 1 + text[..text.find("sandbox:gcp").unwrap()]
            .matches('\n')
            .count();
        let Err(SavedPlanError::Damaged(why)) = decode(text.as_bytes()) else {
            panic!("{:?}", decode(text.as_bytes()))
        };
        assert!(why.contains("unknown provider key `sandbox:gcp`"), "{why}");
        assert!(why.contains(&format!("line {line} ")), "{why}");
    }

    #[test]
    fn round_trips_and_refuses_edits_truncation_and_missing_checksums() {
        let p = plan();
        let bytes = encode(&p);
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with(HEAD), "{text}");
        assert_eq!(decode(&bytes).unwrap(), Some(p.clone()));

        // One action edited.
        let edited = text.replace("\"no-op\"", "\"delete\"");
        assert_ne!(edited, text);
        assert_eq!(decode(edited.as_bytes()), Err(SavedPlanError::Changed));
        // The state it was made against edited (to pass the serial check).
        let moved = text.replace("\"serial\": 4", "\"serial\": 5");
        assert_ne!(moved, text);
        assert_eq!(decode(moved.as_bytes()), Err(SavedPlanError::Changed));
        // Truncated anywhere after the head: damaged, never "not a plan".
        for cut in [HEAD.len() + 3, text.len() / 2, text.len() - 3] {
            assert!(
                matches!(decode(&bytes[..cut]), Err(SavedPlanError::Damaged(_))),
                "cut at {cut}: {:?}",
                decode(&bytes[..cut])
            );
        }
        // The checksum line removed.
        let bare = serde_json::to_vec_pretty(&p).unwrap();
        assert_eq!(decode(&bare), Err(SavedPlanError::Unchecked));
        // A spec as a YAML flow mapping is not a plan.
        assert_eq!(decode(b"{project: p, clusters: {}}").unwrap(), None);
        assert_eq!(decode(b"project: p\n").unwrap(), None);
    }
}
