//! What every cloud's bucket code shares: where gpuform keeps
//! `force_destroy` on the cloud, and the refusal to delete a bucket that
//! still holds objects.
//!
//! A delete gets only the bucket's id, and a plan may delete a bucket whose
//! spec is gone, so `force_destroy` must be readable from the bucket itself:
//! the clouds keep it as the tag [`FORCE_DESTROY_TAG`], set at creation and
//! by updates, read back as the `force_destroy` attribute.

use crate::resource::{attr, Attrs, ObservedResource, ResourceKind};
use crate::{ErrorKind, ProviderError};

/// The tag that says a delete may empty the bucket first (`"true"`; absent
/// means no). In gpuform's namespace, so user tags can never set it.
pub const FORCE_DESTROY_TAG: &str = "gpuform:force-destroy";

/// The observed attribute with the number of objects a bucket holds (all
/// versions where versioning is on), where the cloud reports it.
pub const OBJECT_COUNT: &str = "object_count";

/// The observed attribute with the bytes a bucket stores (all versions),
/// where the cloud reports it: what `gpuform audit` prices a month of.
pub const SIZE_BYTES: &str = "size_bytes";

/// The observed attribute with the number of a bucket's lifecycle rules
/// that are not gpuform's, where the cloud keeps them apart (S3, by rule
/// id): never desired, never compared, said by `gpuform import`.
pub const OTHER_LIFECYCLE_RULES: &str = "other_lifecycle_rules";

/// The error a delete answers for a bucket that holds objects and may not
/// be emptied: the count and the two ways out.
pub fn not_empty(name: &str, objects: u64) -> ProviderError {
    ProviderError::new(ErrorKind::Invalid, not_empty_message(name, objects))
}

/// The error a delete answers for a bucket that holds no object but the
/// parts of unfinished multipart uploads, which keep it from being deleted
/// on OSS, COS and OBS, and may not be emptied.
pub fn unfinished_uploads(name: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::Invalid,
        refusal(
            name,
            "the parts of unfinished multipart uploads",
            "Abort them first",
        ),
    )
}

fn not_empty_message(name: &str, objects: u64) -> String {
    refusal(name, &format!("{objects} object(s)"), "Delete them first")
}

/// A refused delete: what the bucket holds, and the two ways out.
fn refusal(name: &str, holds: &str, first: &str) -> String {
    format!(
        "the bucket `{name}` is not empty: it holds {holds}. {first}, \
         or set `force_destroy: true` on the bucket and apply before destroying it"
    )
}

/// Whether the observed attributes allow a delete to empty the bucket.
pub fn force_destroy(attrs: &Attrs) -> bool {
    attrs.get(attr::FORCE_DESTROY).and_then(|v| v.as_bool()) == Some(true)
}

/// The plan-time refusal ([`crate::Provider::delete_refusal`]) of deleting
/// an observed bucket that holds objects without `force_destroy`: refused
/// before anything changes rather than half-way through an apply.
pub fn delete_refusal(observed: &ObservedResource) -> Option<String> {
    if observed.kind != ResourceKind::Bucket || force_destroy(&observed.attrs) {
        return None;
    }
    let objects = observed.attrs.get(OBJECT_COUNT)?.as_u64()?;
    if objects == 0 {
        return None;
    }
    let name = observed
        .attrs
        .get(attr::NAME)
        .and_then(|v| v.as_str())
        .unwrap_or(&observed.id);
    Some(not_empty_message(name, objects))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bucket(attrs: serde_json::Value) -> ObservedResource {
        ObservedResource {
            kind: ResourceKind::Bucket,
            id: "b-1".into(),
            region: "r".into(),
            ownership: None,
            attrs: serde_json::from_value(attrs).unwrap(),
            status: "available".into(),
        }
    }

    #[test]
    fn a_bucket_with_objects_is_refused_unless_forced() {
        let full = bucket(json!({"name": "data", "object_count": 3}));
        let why = delete_refusal(&full).unwrap();
        assert!(
            why.contains("`data`") && why.contains("3 object(s)"),
            "{why}"
        );
        let forced = bucket(json!({"name": "data", "object_count": 3, "force_destroy": true}));
        assert_eq!(delete_refusal(&forced), None);
        assert_eq!(delete_refusal(&bucket(json!({"object_count": 0}))), None);
        // A cloud that does not report a count: the delete itself decides.
        assert_eq!(delete_refusal(&bucket(json!({"name": "data"}))), None);
    }
}
