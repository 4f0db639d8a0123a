//! The state document format.

use crate::address::{Address, Target};
use gpuform_provider::attr;
use gpuform_provider::{Attrs, ResourceKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped when the document changes incompatibly; older gpuforms refuse newer files.
/// 2: instances made before gpuform rendered node bootstraps are marked
/// ([`PRE_BOOTSTRAP`]); a format 1 document is migrated when read
/// ([`StateDoc::migrate`]).
pub const FORMAT_VERSION: u32 = 2;

/// The `bootstrap` a format 1 state's instances get when read: they were
/// made before gpuform rendered a bootstrap (or with nothing to set up),
/// so what they booted with is not known. The diff does not replace such a
/// node for the bootstrap the spec now renders (it warns, and
/// `--replace ADDRESS` applies it); a change of the user's own `user_data`
/// still replaces it.
pub const PRE_BOOTSTRAP: &str = "unknown: made before gpuform rendered node bootstraps";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateDoc {
    pub format_version: u32,
    /// Identifies this state for its whole life; saved plans and ownership
    /// tags carry it so that nothing is applied to (or adopted by) another state.
    pub lineage: String,
    /// Incremented by every write: a saved plan applies only at the serial it was made at.
    pub serial: u64,
    pub project: String,
    /// Resources gpuform made, by address.
    #[serde(default, deserialize_with = "packed_map")]
    pub resources: BTreeMap<Address, Record>,
    /// Create calls that were started but whose result was never recorded
    /// (a crash). The next refresh looks for them by ownership tags.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pending: BTreeMap<Address, PendingIntent>,
    /// Zones that ran out of capacity for a cluster, in the order they were
    /// tried. Resolve avoids them, so a cluster that failed over stays where
    /// it landed; `--retry-zones` forgets them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failovers: Vec<Failover>,
    /// Spot reclaims `gpuform reconcile` repaired, per cluster: instants
    /// (RFC 3339), the latest [`RECLAIM_LOG`]; a cluster's
    /// `spot_policy.fallback` counts them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reclaims: BTreeMap<String, Vec<String>>,
    /// The workspace this state is of (`None`: `default`), from where it is
    /// kept ([`crate::state::StateStore::workspace`]), never from the file:
    /// its creates carry it as an ownership tag and its refreshes see only
    /// its own workspace's resources.
    #[serde(skip)]
    pub workspace: Option<String>,
}

/// A map read whole, then built at once: a `BTreeMap` filled one insert at
/// a time in key order (how serde reads one) leaves every node half empty,
/// ~10 MB of a 50,000-resource state; built from all its entries it packs
/// them. The last of repeated keys wins, as with inserts.
fn packed_map<'de, D, K, V>(deserializer: D) -> Result<BTreeMap<K, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    K: Deserialize<'de> + Ord,
    V: Deserialize<'de>,
{
    struct Entries<K, V>(std::marker::PhantomData<(K, V)>);
    impl<'de, K: Deserialize<'de> + Ord, V: Deserialize<'de>> serde::de::Visitor<'de>
        for Entries<K, V>
    {
        type Value = BTreeMap<K, V>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map")
        }
        fn visit_map<M: serde::de::MapAccess<'de>>(
            self,
            mut m: M,
        ) -> Result<Self::Value, M::Error> {
            let mut entries = Vec::with_capacity(m.size_hint().unwrap_or(0));
            while let Some(entry) = m.next_entry::<K, V>()? {
                entries.push(entry);
            }
            Ok(entries.into_iter().collect())
        }
    }
    deserializer.deserialize_map(Entries(std::marker::PhantomData))
}

/// State keeps this many reclaims per cluster.
pub const RECLAIM_LOG: usize = 64;

/// One capacity failure that moved a cluster on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failover {
    pub cluster: String,
    pub cloud: gpuform_provider::Cloud,
    pub region: String,
    pub zone: String,
    /// The provider's message (code and request id included).
    pub error: String,
    /// RFC 3339.
    pub at: String,
}

/// One resource gpuform made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub kind: ResourceKind,
    /// Provider key, e.g. `aws` or `sandbox:aws`.
    pub provider: Target,
    pub region: String,
    /// The cloud's id.
    pub id: String,
    /// The attributes gpuform asked for (never secrets).
    pub attrs: Attrs,
    /// Dependencies by role -> address.
    #[serde(default, skip_serializing_if = "gpuform_provider::Deps::is_empty")]
    pub deps: gpuform_provider::Deps,
    /// The idempotency token it was created with.
    pub token: String,
    /// What the cloud chose and reported when it was last seen, for
    /// `gpuform output` and `kubeconfig`. Never desired and never compared
    /// by a plan.
    #[serde(default, skip_serializing_if = "Reported::is_empty")]
    pub reported: Reported,
    /// Attributes `gpuform import` found the cloud holding otherwise than
    /// the spec can say (a subnet's range, a security group's rules from
    /// other groups, a volume type): the cloud's value is kept, and the
    /// diff compares the recorded value with the spec's instead, so the
    /// plan never fights it, until the spec asks for something else.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
}

/// The attributes of [`ResourceKind::reported_attrs`] a record keeps: typed
/// fields, not a map, because every record of a 50k-resource state carries
/// one (a map's first entry allocates a whole B-tree node, ~0.6 KB).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reported {
    /// An instance's primary private IPv4 address in its subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_ip: Option<String>,
}

impl Reported {
    /// What `o` reports of them.
    pub fn of(o: &gpuform_provider::ObservedResource) -> Reported {
        let text = |k: &str| o.attrs.get(k).and_then(|v| v.as_str()).map(str::to_string);
        Reported {
            private_ip: text(attr::PRIVATE_IP),
        }
    }

    pub fn is_empty(&self) -> bool {
        self == &Reported::default()
    }

    /// One by its attribute name (`private_ip`); `None` when not reported
    /// or not one of them.
    pub fn get(&self, key: &str) -> Option<&str> {
        match key {
            attr::PRIVATE_IP => self.private_ip.as_deref(),
            _ => None,
        }
    }
}

/// A create that was started and not (yet) known to have finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingIntent {
    /// When the create was started (Unix milliseconds), to know whether the
    /// cloud may still be settling when it is looked for after a crash.
    #[serde(default)]
    pub started_ms: u64,
    pub kind: ResourceKind,
    pub provider: Target,
    pub region: String,
    pub token: String,
    pub attrs: Attrs,
    #[serde(default, skip_serializing_if = "gpuform_provider::Deps::is_empty")]
    pub deps: gpuform_provider::Deps,
}

impl StateDoc {
    pub fn new(project: &str) -> StateDoc {
        StateDoc {
            format_version: FORMAT_VERSION,
            lineage: uuid::Uuid::new_v4().to_string(),
            serial: 0,
            project: project.to_string(),
            resources: BTreeMap::new(),
            pending: BTreeMap::new(),
            failovers: Vec::new(),
            reclaims: BTreeMap::new(),
            workspace: None,
        }
    }

    /// Brings a document read in an older format up to [`FORMAT_VERSION`].
    /// From 1: every instance without a recorded bootstrap (no
    /// `user_data_sha256`) gets `bootstrap` = [`PRE_BOOTSTRAP`], also in
    /// pending creates (adopted with their attributes).
    pub fn migrate(&mut self) {
        if self.format_version < 2 {
            let mark = |kind: ResourceKind, attrs: &mut Attrs| {
                if kind == ResourceKind::Instance
                    && !attrs.contains_key("user_data_sha256")
                    && !attrs.contains_key("bootstrap")
                {
                    attrs.insert("bootstrap".into(), PRE_BOOTSTRAP.into());
                }
            };
            for r in self.resources.values_mut() {
                mark(r.kind, &mut r.attrs);
            }
            for p in self.pending.values_mut() {
                mark(p.kind, &mut p.attrs);
            }
        }
        self.format_version = FORMAT_VERSION;
    }

    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.pending.is_empty()
    }
}
