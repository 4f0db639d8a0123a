//! Fault injection: what the sandbox does wrong on purpose, parsed from
//! `GPUFORM_SANDBOX_FAULTS` (or built in code by tests).

use crate::SandboxError;
use std::time::Duration;

/// The environment variable [`Faults::from_env`] reads.
pub const FAULTS_ENV: &str = "GPUFORM_SANDBOX_FAULTS";

const ACCEPTED: &str = "latency=<duration: 50ms, 1s, 250us, 0>, throttle=<probability 0..1>, \
fail=<probability 0..1>, capacity=<instance type or *>@<zone or *> (repeatable), \
crash_after=<call number >= 1>, seed=<unsigned integer>, quota_gpus=<unsigned integer>, \
quota=<group>:<limit>[@<region>] (repeatable; groups: aws P, G, F, X, Inf, Trn, DL, Standard in vCPUs; \
alibaba vcpu; tencent instances; huawei cores), quota_read=denied, rate=<calls per second > 0>, boot=<duration>, disk=<duration>, profile=aws, \
reclaim=<probability per call 0..1>, reclaim_at=<call number >= 1> (repeatable)";

/// How many API calls after its notice a spot instance is reclaimed (time in
/// the sandbox is its call count). The clouds warn first: EC2 "two minutes
/// before" (EC2 User Guide, Spot Instance interruption notices,
/// docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html);
/// Alibaba locks a preemptible instance with `LockReason: Recycling` before
/// it releases it (ECS, "Query the interruption events of a preemptible
/// instance", alibabacloud.com/help/doc-detail/169971.htm); Tencent gives
/// the time in the instance's metadata, `spot/termination-time`
/// (tencentcloud.com/document/product/213/32487). Neither of the last two
/// pages states the length of the warning.
pub const RECLAIM_NOTICE_CALLS: u64 = 5;

/// Named latency profiles: how long a cloud takes, after its create call,
/// to make an instance running (`boot`) and a new disk usable (`disk`).
/// Only AWS has sourced figures so far; a profile is never made up.
///
/// - `aws`, boot 16 s: EC2 pending → running measured at 16.4–16.6 s across
///   t3/m6i/m7i/c7i/r7i families (brevdev/ec2-coldboot-research, 2025; the
///   API call itself 19% and pending → running 69% of a 25.8 s launch);
///   Colin Percival's ec2-boot-bench measured 4.9 s on c5.xlarge in 2021
///   (daemonology.net, 2021-08-12). Disk 5 s: an empty EBS volume is
///   `creating` for a few seconds before `available` (gpuform's AWS
///   provider polls it every second for up to a minute).
const PROFILES: [(&str, Duration, Duration); 1] =
    [("aws", Duration::from_secs(16), Duration::from_secs(5))];

/// Faults the sandbox injects. `Default` injects none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Faults {
    /// Slept (tokio) before every API call.
    pub latency: Duration,
    /// Probability that a call fails with `Throttled` (before any effect).
    pub throttle_rate: f64,
    /// Probability that a call fails with `Transient` (before any effect).
    pub fail_rate: f64,
    /// (instance type or `*`, zone or `*`) pairs with no capacity: creating a
    /// matching instance fails with `Capacity`.
    pub capacity: Vec<(String, String)>,
    /// The N-th API call of this process takes full effect, then the process
    /// aborts before the call returns.
    pub crash_after: Option<u64>,
    /// Seed of the RNG that decides throttling and failures.
    pub seed: u64,
    /// GPUs allowed per region (per mirrored cloud); `None`: unlimited.
    pub quota_gpus: Option<u32>,
    /// Per-family quotas of the mirrored cloud (`quota=P:0`, `quota=P:384@us-west-2`):
    /// (group, region or every region, limit in the group's unit); see the
    /// `quota` module for the groups.
    pub quota: Vec<(String, Option<String>, u64)>,
    /// Reading a quota is refused as unauthorized (`quota_read=denied`);
    /// creates are still checked against it.
    pub quota_unreadable: bool,
    /// API rate limit: advertised to the engine and enforced (calls beyond it
    /// are throttled). `None`: effectively unlimited.
    pub rate_per_second: Option<f64>,
    /// How long an instance takes from its create call to running: every
    /// provider waits for that before its create returns (`profile=`).
    pub boot: Duration,
    /// How long a new disk takes to become usable (`available`).
    pub disk: Duration,
    /// Probability, at each API call, that a running spot instance gets its
    /// interruption notice; it is reclaimed [`RECLAIM_NOTICE_CALLS`] calls
    /// later (its data volume detached, the instance gone), as a cloud
    /// reclaiming spot capacity does.
    pub reclaim_rate: f64,
    /// Calls at which a spot instance gets its notice, whatever the rate.
    pub reclaim_at: Vec<u64>,
}

impl Faults {
    /// Reads [`FAULTS_ENV`]; unset or blank means no faults.
    pub fn from_env() -> Result<Faults, SandboxError> {
        match std::env::var(FAULTS_ENV) {
            Ok(s) => Faults::parse(&s).map_err(|e| match e {
                SandboxError::Faults { item, message } => SandboxError::Faults {
                    item,
                    message: format!("{message} (in {FAULTS_ENV})"),
                },
                other => other,
            }),
            Err(std::env::VarError::NotPresent) => Ok(Faults::default()),
            Err(std::env::VarError::NotUnicode(_)) => Err(SandboxError::Faults {
                item: FAULTS_ENV.to_string(),
                message: "the variable is not valid UTF-8".to_string(),
            }),
        }
    }

    /// Parses `key=value` items separated by commas, e.g.
    /// `latency=50ms,throttle=0.1,capacity=p4d.24xlarge@us-east-1a,seed=7`.
    pub fn parse(s: &str) -> Result<Faults, SandboxError> {
        let mut f = Faults::default();
        let mut seen: Vec<&str> = Vec::new();
        // A profile's figures, unless `boot=` or `disk=` says otherwise.
        let (mut boot, mut disk, mut profile) = (None, None, None);
        for raw in s.split(',') {
            let item = raw.trim();
            if item.is_empty() {
                continue;
            }
            let err = |message: String| SandboxError::Faults {
                item: item.to_string(),
                message,
            };
            let Some((key, value)) = item.split_once('=') else {
                return Err(err(format!(
                    "expected key=value; accepted items: {ACCEPTED}"
                )));
            };
            let (key, value) = (key.trim(), value.trim());
            if !matches!(key, "capacity" | "quota" | "reclaim_at") {
                if seen.contains(&key) {
                    return Err(err(format!("`{key}` is given more than once")));
                }
                seen.push(key);
            }
            match key {
                "latency" => f.latency = parse_duration(value).map_err(err)?,
                "boot" => boot = Some(parse_duration(value).map_err(err)?),
                "disk" => disk = Some(parse_duration(value).map_err(err)?),
                "profile" => {
                    let found = PROFILES.iter().find(|(name, _, _)| *name == value);
                    profile = Some(found.ok_or_else(|| {
                        let names: Vec<&str> = PROFILES.iter().map(|p| p.0).collect();
                        err(format!(
                            "unknown profile `{value}`; profiles: {}",
                            names.join(", ")
                        ))
                    })?);
                }
                "throttle" => f.throttle_rate = parse_probability(value).map_err(err)?,
                "fail" => f.fail_rate = parse_probability(value).map_err(err)?,
                "reclaim" => f.reclaim_rate = parse_probability(value).map_err(err)?,
                "reclaim_at" => {
                    let n: u64 = value.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                        err("expected reclaim_at=<call number >= 1>, e.g. reclaim_at=12".into())
                    })?;
                    f.reclaim_at.push(n);
                }
                "capacity" => {
                    let (ty, zone) = value.split_once('@').unwrap_or((value, "*"));
                    let (ty, zone) = (ty.trim(), zone.trim());
                    if ty.is_empty() || zone.is_empty() {
                        return Err(err(
                            "expected capacity=<instance type or *>@<zone or *>, e.g. \
                             capacity=p4d.24xlarge@us-east-1a or capacity=*@us-east-1b"
                                .to_string(),
                        ));
                    }
                    f.capacity.push((ty.to_string(), zone.to_string()));
                }
                "crash_after" => {
                    let n: u64 = value.parse().map_err(|_| {
                        err("expected crash_after=<call number >= 1>, e.g. crash_after=17".into())
                    })?;
                    if n == 0 {
                        return Err(err(
                            "calls are counted from 1: crash_after must be at least 1".into(),
                        ));
                    }
                    f.crash_after = Some(n);
                }
                "seed" => {
                    f.seed = value.parse().map_err(|_| {
                        err("expected seed=<unsigned 64-bit integer>, e.g. seed=7".into())
                    })?
                }
                "quota_gpus" => {
                    f.quota_gpus = Some(value.parse().map_err(|_| {
                        err("expected quota_gpus=<unsigned integer>, e.g. quota_gpus=64".into())
                    })?)
                }
                "quota" => {
                    let bad = || {
                        err(
                            "expected quota=<group>:<limit>[@<region>], e.g. quota=P:0 or \
                             quota=P:384@us-west-2 (groups: aws P, G, F, X, Inf, Trn, DL, \
                             Standard; alibaba vcpu; tencent instances; huawei cores)"
                                .into(),
                        )
                    };
                    let (group, rest) = value.split_once(':').ok_or_else(bad)?;
                    let (limit, region) = match rest.split_once('@') {
                        Some((l, r)) => (l.trim(), Some(r.trim().to_string())),
                        None => (rest.trim(), None),
                    };
                    let limit: u64 = limit.parse().map_err(|_| bad())?;
                    if group.trim().is_empty() || region.as_deref() == Some("") {
                        return Err(bad());
                    }
                    f.quota.push((group.trim().to_string(), region, limit));
                }
                "quota_read" => {
                    if value != "denied" {
                        return Err(err(format!("expected quota_read=denied, got `{value}`")));
                    }
                    f.quota_unreadable = true;
                }
                "rate" => {
                    let r: f64 = value.parse().map_err(|_| {
                        err("expected rate=<calls per second>, e.g. rate=200".into())
                    })?;
                    if !(r.is_finite() && r > 0.0) {
                        return Err(err(
                            "rate must be a positive number of calls per second".into()
                        ));
                    }
                    f.rate_per_second = Some(r);
                }
                other => {
                    return Err(err(format!(
                        "unknown fault `{other}`; accepted items: {ACCEPTED}"
                    )))
                }
            }
        }
        f.boot = boot.or(profile.map(|p| p.1)).unwrap_or_default();
        f.disk = disk.or(profile.map(|p| p.2)).unwrap_or_default();
        Ok(f)
    }

    /// The limit of quota `group` in `region`: the region's own, else the
    /// one for every region; `None` when no `quota=` names the group.
    pub fn quota_for(&self, group: &str, region: &str) -> Option<u64> {
        let of = |want_region: Option<&str>| {
            self.quota
                .iter()
                .rev()
                .find(|(g, r, _)| g.eq_ignore_ascii_case(group) && r.as_deref() == want_region)
                .map(|q| q.2)
        };
        of(Some(region)).or_else(|| of(None))
    }

    /// Whether creating `instance_type` in `zone` hits a capacity fault.
    pub fn no_capacity(&self, instance_type: &str, zone: &str) -> bool {
        self.capacity
            .iter()
            .any(|(t, z)| (t == "*" || t == instance_type) && (z == "*" || z == zone))
    }
}

fn parse_probability(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "expected a probability between 0 and 1 (e.g. 0.1), got `{v}`"
        )),
    }
}

fn parse_duration(v: &str) -> Result<Duration, String> {
    let bad = || format!("expected a duration like 50ms, 1s, 1.5s, 250us or 0, got `{v}`");
    if v == "0" {
        return Ok(Duration::ZERO);
    }
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit.trim() {
        "s" => n,
        "ms" => n / 1e3,
        "us" | "µs" => n / 1e6,
        "ns" => n / 1e9,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let f = Faults::parse(
            "latency=50ms,throttle=0.1,fail=0.05,capacity=p4d.24xlarge@us-east-1a,\
             capacity=*@us-east-1b,crash_after=17,seed=7,quota_gpus=64,rate=200",
        )
        .expect("parses");
        assert_eq!(f.latency, Duration::from_millis(50));
        assert_eq!(f.throttle_rate, 0.1);
        assert_eq!(f.fail_rate, 0.05);
        assert_eq!(
            f.capacity,
            vec![
                ("p4d.24xlarge".to_string(), "us-east-1a".to_string()),
                ("*".to_string(), "us-east-1b".to_string())
            ]
        );
        assert_eq!(f.crash_after, Some(17));
        assert_eq!(f.seed, 7);
        assert_eq!(f.quota_gpus, Some(64));
        assert_eq!(f.rate_per_second, Some(200.0));
        assert!(f.no_capacity("p4d.24xlarge", "us-east-1a"));
        assert!(!f.no_capacity("p4d.24xlarge", "us-east-1c"));
        assert!(f.no_capacity("g5.xlarge", "us-east-1b"));
    }

    #[test]
    fn empty_means_no_faults() {
        assert_eq!(Faults::parse("").expect("parses"), Faults::default());
        assert_eq!(Faults::parse(" , ").expect("parses"), Faults::default());
    }

    #[test]
    fn durations() {
        for (s, d) in [
            ("0", Duration::ZERO),
            ("1s", Duration::from_secs(1)),
            ("1.5s", Duration::from_millis(1500)),
            ("250us", Duration::from_micros(250)),
            ("7ns", Duration::from_nanos(7)),
        ] {
            assert_eq!(parse_duration(s), Ok(d), "{s}");
        }
    }

    #[test]
    fn a_profile_sets_boot_and_disk_unless_they_are_given() {
        let f = Faults::parse("profile=aws").expect("parses");
        assert_eq!(
            (f.boot, f.disk),
            (Duration::from_secs(16), Duration::from_secs(5))
        );
        let f = Faults::parse("boot=2s,profile=aws").expect("parses");
        assert_eq!(
            (f.boot, f.disk),
            (Duration::from_secs(2), Duration::from_secs(5))
        );
        let f = Faults::parse("disk=1s").expect("parses");
        assert_eq!((f.boot, f.disk), (Duration::ZERO, Duration::from_secs(1)));
    }

    #[test]
    fn a_region_quota_overrides_the_every_region_one() {
        let f = Faults::parse("quota=P:0,quota=p:384@us-west-2,quota=G:64,quota_read=denied")
            .expect("parses");
        assert_eq!(f.quota_for("P", "us-east-1"), Some(0));
        assert_eq!(f.quota_for("P", "us-west-2"), Some(384));
        assert_eq!(f.quota_for("G", "us-west-2"), Some(64));
        assert_eq!(f.quota_for("Standard", "us-west-2"), None);
        assert!(f.quota_unreadable);
        for bad in [
            "quota=P",
            "quota=P:lots",
            "quota=:4",
            "quota=P:4@",
            "quota_read=yes",
        ] {
            assert!(Faults::parse(bad).is_err(), "{bad} must be refused");
        }
    }

    #[test]
    fn reclaims_at_a_rate_and_at_given_calls() {
        let f = Faults::parse("reclaim=0.3,reclaim_at=4,reclaim_at=9").expect("parses");
        assert_eq!(f.reclaim_rate, 0.3);
        assert_eq!(f.reclaim_at, vec![4, 9]);
    }

    #[test]
    fn capacity_without_zone_means_every_zone() {
        let f = Faults::parse("capacity=p5.48xlarge").expect("parses");
        assert!(f.no_capacity("p5.48xlarge", "us-west-2b"));
    }

    /// Each bad spec and what its error must say.
    const BAD: [(&str, &[&str]); 17] = [
        ("reclaim=2", &["reclaim=2", "between 0 and 1"]),
        ("reclaim_at=0", &["reclaim_at=0", "call number >= 1"]),
        ("profile=gcp", &["profile=gcp", "unknown profile", "aws"]),
        ("boot=soon", &["boot=soon", "50ms"]),
        (
            "latency=50ms,bogus=1",
            &["bogus=1", "unknown fault", "throttle="],
        ),
        ("latency=fast", &["latency=fast", "50ms"]),
        ("latency=5m", &["latency=5m"]),
        ("throttle=1.5", &["throttle=1.5", "between 0 and 1"]),
        ("fail=-0.1", &["fail=-0.1"]),
        ("crash_after=0", &["crash_after=0", "at least 1"]),
        ("crash_after=x", &["crash_after=x"]),
        ("seed=-1", &["seed=-1"]),
        ("quota_gpus=lots", &["quota_gpus=lots"]),
        ("rate=0", &["rate=0", "positive"]),
        ("capacity=@us-east-1a", &["capacity=@us-east-1a", "@<zone"]),
        ("seed", &["key=value"]),
        ("seed=1,seed=2", &["more than once"]),
    ];

    #[test]
    fn errors_name_the_item_and_the_accepted_forms() {
        for (spec, says) in BAD {
            let e = match Faults::parse(spec) {
                Err(e) => e.to_string(),
                Ok(f) => panic!("`{spec}` parsed as {f:?}"),
            };
            for part in says {
                assert!(e.contains(part), "`{spec}`: {e} does not say {part}");
            }
        }
    }
}
