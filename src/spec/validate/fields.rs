//! The shape the validator walks: for each object of the model, the keys it
//! may have, which are required and how each value is checked.
//!
//! The tables mirror the structs of `model.rs` by hand (each key needs its
//! check), so `tables_match_the_schema` holds them to the JSON Schema derived
//! from the model, both ways and for every object the schema has: a field or
//! a struct added on one side only fails it. The values of enums are the
//! model's own ([`SpecNames::NAMES`]), never listed here.

use super::super::model::{
    lifetime_end, CloudName, Fabric, Ingress, InterconnectReq, KubernetesMode, SpecNames,
    StateSettings, Strategy,
};
use super::super::window;
use super::super::yaml::Node;
use super::kubernetes::{is_ca_hash, is_endpoint, is_env_name, is_k8s_version, is_taint};
use super::Validator;
use gpuform_catalog::storage::STORAGE_CLASSES;
use serde_json::Value;

/// How a field's value is checked.
pub(super) enum Conv {
    /// By a function of the validator.
    With(fn(&mut Validator, &Node, &str) -> Option<Value>),
    /// One of an enum's names; the second part names it in errors
    /// (`unknown pricing model ...`).
    OneOf(&'static [&'static str], &'static str),
    /// A scalar whose text passes the test; the second part says what is
    /// expected (`a duration like ...`).
    Shaped(fn(&str) -> bool, &'static str),
    /// A mapping of its own table, nothing more.
    Nested(&'static Table),
}

pub(super) struct Field {
    pub name: &'static str,
    pub required: bool,
    pub conv: Conv,
}

const fn req(name: &'static str, conv: Conv) -> Field {
    Field {
        name,
        required: true,
        conv,
    }
}

const fn opt(name: &'static str, conv: Conv) -> Field {
    Field {
        name,
        required: false,
        conv,
    }
}

/// The keys of one object of the model.
pub(super) struct Table {
    /// The model type it mirrors, as the schema's definitions name it; a
    /// variant of an enum as `Enum.tag` (`StateSettings.s3`), or `Enum.key`
    /// for an untagged one of one key (`ReservationRef.tags`).
    pub model: &'static str,
    /// How errors speak of it: `a cluster`, `` `disk` ``.
    pub what: &'static str,
    pub fields: &'static [Field],
    /// Keys of other objects often written here, and where they belong.
    pub elsewhere: &'static [(&'static str, &'static str)],
}

const fn table(model: &'static str, what: &'static str, fields: &'static [Field]) -> Table {
    Table {
        model,
        what,
        fields,
        elsewhere: &[],
    }
}

use Conv::{Nested, OneOf, Shaped, With};

pub(super) const SPEC: Table = table(
    "Spec",
    "the spec",
    &[
        req("project", With(Validator::project)),
        opt("clusters", With(Validator::clusters)),
        opt("buckets", With(Validator::buckets)),
        opt("budget", Nested(&BUDGET)),
        opt("state", With(Validator::state)),
        opt("variables", With(Validator::variables)),
        opt("endpoints", With(Validator::endpoints)),
    ],
);

pub(super) const CLUSTER: Table = Table {
    model: "Cluster",
    what: "a cluster",
    fields: &[
        req("cloud", OneOf(CloudName::NAMES, "cloud")),
        opt("region", With(Validator::nonempty)),
        opt("candidates", With(Validator::candidates)),
        opt("strategy", OneOf(Strategy::NAMES, "strategy")),
        opt("zones", With(Validator::zones)),
        req("nodes", With(Validator::count)),
        req("gpu", With(Validator::gpu)),
        opt("pricing", With(Validator::pricing)),
        opt("capacity", With(Validator::capacity)),
        opt("spot_max_price", With(Validator::positive)),
        opt(
            "interconnect",
            OneOf(InterconnectReq::NAMES, "interconnect"),
        ),
        opt("fabric", OneOf(Fabric::NAMES, "fabric")),
        opt("disk", With(Validator::disk)),
        opt("image", With(Validator::nonempty)),
        opt("mig", With(Validator::mig)),
        opt("driver", With(Validator::driver)),
        opt("local_nvme", With(Validator::local_nvme)),
        opt("kubernetes", With(Validator::kubernetes)),
        opt("instance_type", With(Validator::nonempty)),
        opt("user_data", With(Validator::string)),
        opt("ingress", With(Validator::ingress_list)),
        opt("cidr", With(Validator::network_cidr)),
        opt("reads", With(Validator::reads)),
        opt("tags", With(Validator::tags)),
        opt("spot_policy", Nested(&SPOT_POLICY)),
        opt(
            "expires_at",
            Shaped(
                |t| lifetime_end(t).is_some(),
                "an instant like `2026-12-24T18:00:00Z` or a date like `2026-12-24`",
            ),
        ),
        opt("maintenance_window", Nested(&MAINTENANCE_WINDOW)),
    ],
    elsewhere: &[
        ("root_gb", "disk"),
        ("data_gb", "disk"),
        ("ports", "ingress"),
        ("protocol", "ingress"),
        ("max_hourly_usd", "budget"),
        ("max_monthly_usd", "budget"),
    ],
};

const MAINTENANCE_WINDOW: Table = table(
    "MaintenanceWindow",
    "`maintenance_window`",
    &[
        opt("days", With(Validator::weekdays)),
        req(
            "start",
            Shaped(
                |t| window::parse_clock(t).is_some(),
                "a time of day `HH:MM` on the 24-hour clock, like `02:00` or `22:30`",
            ),
        ),
        req(
            "duration",
            Shaped(
                |t| window::parse_duration(t).is_some(),
                "a duration from `1m` to `7d`, like `30m` or `4h`",
            ),
        ),
        opt(
            "timezone",
            Shaped(
                |t| window::parse_offset(t).is_some(),
                "`UTC` or a fixed offset like `+02:00` or `UTC-05:00` (zone names such as `Europe/Berlin` are not read: their offset moves with daylight saving)",
            ),
        ),
    ],
);

pub(super) const RESERVATION: Table = table(
    "ReservationRef.tags",
    "a reservation",
    &[req("tags", With(Validator::tags))],
);

pub(super) const BLOCK: Table = table(
    "BlockRequest",
    "a Capacity Block",
    &[
        req("start", With(Validator::nonempty)),
        req("hours", With(Validator::count)),
        opt("count", With(Validator::count)),
    ],
);

pub(super) const KUBERNETES: Table = table(
    "Kubernetes",
    "`kubernetes`",
    &[
        req("mode", OneOf(KubernetesMode::NAMES, "Kubernetes mode")),
        req(
            "token_env",
            Shaped(is_env_name, "an environment variable name like `K3S_TOKEN`"),
        ),
        opt(
            "endpoint",
            Shaped(is_endpoint, "`HOST:PORT`, e.g. `10.0.0.10:6443`"),
        ),
        opt(
            "ca_cert_hash",
            Shaped(
                is_ca_hash,
                "`sha256:` and 64 hex digits (from `kubeadm token create --print-join-command`)",
            ),
        ),
        opt(
            "version",
            Shaped(is_k8s_version, "a release like `v1.30.6+k3s1`"),
        ),
        opt(
            "taint",
            Shaped(
                is_taint,
                "`KEY=VALUE:EFFECT`, e.g. `nvidia.com/gpu=present:NoSchedule`",
            ),
        ),
        opt("dcgm_exporter", With(Validator::boolean)),
        opt("addons", With(Validator::kube_addons)),
    ],
);

pub(super) const BUCKET: Table = table(
    "Bucket",
    "a bucket",
    &[
        req("cloud", With(Validator::bucket_cloud)),
        req("region", With(Validator::nonempty)),
        opt("name", With(Validator::nonempty)),
        opt("storage_class", OneOf(&STORAGE_CLASSES, "storage class")),
        opt("versioning", With(Validator::boolean)),
        opt("encryption", With(Validator::boolean)),
        opt("lifecycle", Nested(&LIFECYCLE)),
        opt("size_gb", With(Validator::size_gb)),
        opt("force_destroy", With(Validator::boolean)),
        opt("tags", With(Validator::tags)),
    ],
);

const LIFECYCLE: Table = table(
    "Lifecycle",
    "`lifecycle`",
    &[
        opt("archive_after_days", With(Validator::count)),
        opt("expire_noncurrent_after_days", With(Validator::count)),
    ],
);

const SPOT_POLICY: Table = table(
    "SpotPolicy",
    "`spot_policy`",
    &[
        opt("on_demand_base", With(Validator::count)),
        opt("fallback", Nested(&SPOT_FALLBACK)),
    ],
);

const SPOT_FALLBACK: Table = table(
    "SpotFallback",
    "`fallback`",
    &[
        req("after", With(Validator::count)),
        req("within", With(Validator::duration)),
        req("hold", With(Validator::duration)),
    ],
);

pub(super) const DISK: Table = table(
    "Disk",
    "`disk`",
    &[
        opt("root_gb", With(Validator::count)),
        opt("data_gb", With(Validator::count)),
        opt("data_type", With(Validator::volume_type)),
    ],
);

const BUDGET: Table = table(
    "Budget",
    "`budget`",
    &[
        opt("max_hourly_usd", With(Validator::positive)),
        opt("max_monthly_usd", With(Validator::positive)),
        opt("allow_unpriced", With(Validator::boolean)),
    ],
);

const BACKEND: Field = req("backend", OneOf(StateSettings::NAMES, "state backend"));

/// `state:`, one table per backend (the tag `backend` chooses).
pub(super) const STATE: [Table; 3] = [
    table(
        "StateSettings.local",
        "`state`",
        &[BACKEND, opt("path", With(Validator::nonempty))],
    ),
    table(
        "StateSettings.postgres",
        "`state`",
        &[
            BACKEND,
            req("url", With(Validator::state_url)),
            opt("schema", With(Validator::nonempty)),
            opt("workspace", With(Validator::nonempty)),
            opt("lease_seconds", With(Validator::count)),
        ],
    ),
    table(
        "StateSettings.s3",
        "`state`",
        &[
            BACKEND,
            req("url", With(Validator::s3_state_url)),
            opt("workspace", With(Validator::nonempty)),
            opt("lease_seconds", With(Validator::count)),
        ],
    ),
];

pub(super) const VARIABLE: Table = table(
    "Variable",
    "a variable",
    &[
        opt("default", With(Validator::string)),
        opt("description", With(Validator::string)),
    ],
);

pub(super) const INGRESS: Table = table(
    "Ingress",
    "an ingress rule",
    &[
        opt("protocol", OneOf(&Ingress::PROTOCOLS, "protocol")),
        req("ports", With(Validator::ports)),
        req("cidr", With(Validator::source_cidr)),
    ],
);

/// Every table, for the test that holds them to the schema.
#[cfg(test)]
const TABLES: &[&Table] = &[
    &SPEC,
    &CLUSTER,
    &MAINTENANCE_WINDOW,
    &RESERVATION,
    &BLOCK,
    &KUBERNETES,
    &BUCKET,
    &LIFECYCLE,
    &SPOT_POLICY,
    &SPOT_FALLBACK,
    &DISK,
    &BUDGET,
    &STATE[0],
    &STATE[1],
    &STATE[2],
    &VARIABLE,
    &INGRESS,
];

/// An example after `add `KEY: ...`` for a missing required key.
pub(super) fn example_for(key: &str) -> String {
    let example = match key {
        "cloud" => return format!(" (one of {})", super::bucket_clouds().join(", ")),
        "project" => " (e.g. `project: llm-research`)",
        "region" => " (e.g. `region: us-east-1`)",
        "nodes" => " (e.g. `nodes: 2`)",
        "gpu" => " (e.g. `gpu: A100-80GB:8` or `gpu: T4`)",
        "ports" => " (e.g. `ports: \"22\"` or `ports: 8000-8100`)",
        "cidr" => " (e.g. `cidr: 0.0.0.0/0`)",
        "duration" => " (e.g. `duration: 4h`)",
        _ => "",
    };
    example.to_string()
}

#[cfg(test)]
mod tests {
    use super::super::super::model::{CapacitySource, KubeAddon};
    use super::super::super::schema::schema_json;
    use super::super::super::window::Weekday;
    use super::super::capacity;
    use super::*;
    use gpuform_catalog::volume::VolumeType;
    use gpuform_catalog::PricingModel;
    use std::collections::BTreeMap;

    /// Keys and required keys, sorted.
    type Keys = (Vec<String>, Vec<String>);

    fn strings(v: &Value) -> Vec<String> {
        let mut out: Vec<String> = match v {
            Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            Value::Object(m) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        out.sort();
        out
    }

    /// A one-value string enum's value (`{"enum": ["s3"]}`).
    fn single(v: &Value) -> Option<String> {
        match v["enum"].as_array().map(Vec::as_slice) {
            Some([one]) => one.as_str().map(str::to_string),
            _ => None,
        }
    }

    /// The name a variant of an enum carries in the spec: its string, its
    /// tag's value, or its one key when it is a one-key mapping (externally
    /// tagged, `{block: …}`); `None` when it has none (untagged data).
    fn variant_names(v: &Value) -> Option<Vec<String>> {
        if let Some(values) = v["enum"].as_array() {
            return Some(strings(&Value::Array(values.clone())));
        }
        let props = v["properties"].as_object()?;
        let tag = props.iter().find_map(|(_, p)| single(p));
        if let Some(tag) = tag {
            return Some(vec![tag]);
        }
        let one_key = props.len() == 1
            && v["additionalProperties"] == Value::Bool(false)
            && strings(&v["required"]) == strings(&v["properties"]);
        one_key.then(|| strings(&v["properties"]))
    }

    fn branches(def: &Value) -> Vec<&Value> {
        ["oneOf", "anyOf"]
            .iter()
            .filter_map(|k| def[*k].as_array())
            .flatten()
            .collect()
    }

    /// Every object of the schema with its keys: the root as `Spec`, each
    /// definition, each variant of an enum that is an object (named as
    /// [`Table::model`] says).
    fn schema_objects(schema: &Value) -> BTreeMap<String, Keys> {
        let keys = |v: &Value| (strings(&v["properties"]), strings(&v["required"]));
        let mut out = BTreeMap::from([("Spec".to_string(), keys(schema))]);
        for (name, def) in schema["definitions"].as_object().into_iter().flatten() {
            if def["properties"].is_object() {
                out.insert(name.clone(), keys(def));
            }
            for b in branches(def)
                .into_iter()
                .filter(|b| b["properties"].is_object())
            {
                let tag = b["properties"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .find_map(|(_, p)| single(p));
                let label = tag.unwrap_or_else(|| strings(&b["properties"]).join(","));
                out.insert(format!("{name}.{label}"), keys(b));
            }
        }
        out
    }

    /// Every table has exactly the keys (and required keys) of the model
    /// object it mirrors, and every object of the schema has a table: a key
    /// or a struct added to the model without the validator, or to the
    /// validator without the model, fails here.
    #[test]
    fn tables_match_the_schema() {
        let sorted = |names: Vec<&str>| {
            let mut k: Vec<String> = names.into_iter().map(str::to_string).collect();
            k.sort();
            k
        };
        let mut tables: BTreeMap<String, Keys> = TABLES
            .iter()
            .map(|t| {
                let all = t.fields.iter().map(|f| f.name).collect();
                let required = t.fields.iter().filter(|f| f.required).map(|f| f.name);
                (
                    t.model.to_string(),
                    (sorted(all), sorted(required.collect())),
                )
            })
            .collect();
        // The capacity sources written as a one-key mapping, walked by hand.
        for key in capacity::MAPPED_SOURCES {
            let k = vec![key.to_string()];
            tables.insert(format!("CapacitySource.{key}"), (k.clone(), k));
        }
        let schema = schema_objects(&schema_json());
        let names = |m: &BTreeMap<String, Keys>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            names(&tables),
            names(&schema),
            "objects with a table vs the schema's"
        );
        for (model, keys) in &schema {
            assert_eq!(&tables[model], keys, "keys of `{model}`: table vs schema");
        }
        // A key said to belong elsewhere is a key there.
        for (key, parent) in CLUSTER.elsewhere {
            let home = TABLES
                .iter()
                .find(|t| t.model.eq_ignore_ascii_case(parent))
                .unwrap_or_else(|| panic!("no table `{parent}`"));
            assert!(
                home.fields.iter().any(|f| f.name == *key),
                "{key} in {parent}"
            );
        }
    }

    /// Every enum of the schema is one whose names the validator takes
    /// from the model type, and the names agree.
    #[test]
    fn enums_match_the_schema() {
        let pricing = PricingModel::ALL.map(PricingModel::as_str);
        let volume_types = VolumeType::names();
        let ours: BTreeMap<&str, &[&str]> = BTreeMap::from([
            ("CloudName", CloudName::NAMES),
            ("Strategy", Strategy::NAMES),
            ("InterconnectReq", InterconnectReq::NAMES),
            ("Fabric", Fabric::NAMES),
            ("KubernetesMode", KubernetesMode::NAMES),
            ("KubeAddon", KubeAddon::NAMES),
            ("Weekday", Weekday::NAMES),
            ("CapacitySource", CapacitySource::NAMES),
            ("StateSettings", StateSettings::NAMES),
            // The catalog's enums, through their schema stand-ins.
            ("PricingModelSchema", &pricing),
            ("StorageClassSchema", &STORAGE_CLASSES),
            ("VolumeTypeSchema", &volume_types),
        ]);
        let schema = schema_json();
        let mut enums: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, def) in schema["definitions"].as_object().into_iter().flatten() {
            let b = branches(def);
            let names: Option<Vec<Vec<String>>> = if def["enum"].is_array() {
                variant_names(def).map(|n| vec![n])
            } else if b.is_empty() {
                None
            } else {
                b.into_iter().map(variant_names).collect()
            };
            if let Some(names) = names {
                let mut all: Vec<String> = names.concat();
                all.sort();
                enums.insert(name.clone(), all);
            }
        }
        let keys: Vec<&str> = ours.keys().copied().collect();
        assert_eq!(
            enums.keys().map(String::as_str).collect::<Vec<_>>(),
            keys,
            "enums of the schema vs the enums the validator knows"
        );
        for (name, names) in &enums {
            let mut want: Vec<String> = ours[name.as_str()].iter().map(|s| s.to_string()).collect();
            want.sort();
            assert_eq!(names, &want, "names of `{name}`");
        }
        assert_eq!(
            KubeAddon::NAMES,
            [crate::bootstrap::manifests::KUBEFLOW_TRAINING_OPERATOR]
        );
        let mut sources = capacity::MAPPED_SOURCES.to_vec();
        sources.extend(CapacitySource::MARKETS);
        assert_eq!(sources, CapacitySource::NAMES);
    }
}
