//! Bucket names, checked per cloud before any call: most clouds keep one
//! global namespace of bucket names, so a bad one is best refused by
//! `gpuform validate` with the rule and an example, not by the cloud at
//! apply time.
//!
//! The rules, from each cloud's naming page:
//!
//! * **AWS S3** ("General purpose bucket naming rules"): 3–63 characters;
//!   lower-case letters, digits, `.` and `-`; a letter or digit first and
//!   last; no `..`; not an IPv4 address; not starting with `xn--`,
//!   `sthree-` or `amzn-s3-demo-`; not ending with `-s3alias`, `--ol-s3`,
//!   `.mrap`, `--x-s3` or `--table-s3`. gpuform addresses buckets by
//!   virtual host over HTTPS, where a `.` breaks the certificate; the rule
//!   still allows it, so this check does too.
//! * **Alibaba OSS** ("Bucket naming conventions"): 3–63 characters;
//!   lower-case letters, digits and `-` only; a letter or digit first and
//!   last.
//! * **Tencent COS** ("Bucket overview", naming): `<name>-<APPID>`, the
//!   APPID being the account's numeric id that COS appends; `<name>` is
//!   1–50 characters of lower-case letters, digits and `-`, neither
//!   starting nor ending with `-`.
//! * **Huawei OBS** ("Creating a Bucket"): 3–63 characters; lower-case
//!   letters, digits, `-` and `.`; a letter or digit first and last; no
//!   `..`, `.-` or `-.`; not an IP address.

use crate::Cloud;
use std::fmt;

/// Why a bucket name is refused: what is wrong, the cloud's rule in one
/// sentence, and a name that would pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketNameError {
    pub cloud: Cloud,
    pub name: String,
    /// What is wrong with this name.
    pub problem: String,
    /// The cloud's naming rule.
    pub rule: &'static str,
    /// A valid name, derived from this one where possible.
    pub example: String,
}

impl fmt::Display for BucketNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bucket name `{}` is not valid on {}: {}. Rule: {} Example of a valid name: `{}`",
            self.name,
            service(self.cloud),
            self.problem,
            self.rule,
            self.example
        )
    }
}

impl std::error::Error for BucketNameError {}

/// The object-storage service's name, for messages.
fn service(cloud: Cloud) -> &'static str {
    match cloud {
        Cloud::Aws => "AWS S3",
        Cloud::Alibaba => "Alibaba OSS",
        Cloud::Tencent => "Tencent COS",
        Cloud::Huawei => "Huawei OBS",
    }
}

/// The one-sentence rule of each cloud (see the module doc for sources).
pub fn rule(cloud: Cloud) -> &'static str {
    match cloud {
        Cloud::Aws => {
            "3 to 63 characters of lower-case letters, digits, `.` and `-`, starting and ending \
             with a letter or digit, without `..`, not an IP address, not starting with `xn--`, \
             `sthree-` or `amzn-s3-demo-` and not ending with `-s3alias`, `--ol-s3`, `.mrap`, \
             `--x-s3` or `--table-s3`."
        }
        Cloud::Alibaba => {
            "3 to 63 characters of lower-case letters, digits and `-`, starting and ending with \
             a letter or digit."
        }
        Cloud::Tencent => {
            "`<name>-<APPID>`: the name is 1 to 50 lower-case letters, digits and `-`, not \
             starting or ending with `-`, and the APPID is the account's numeric id."
        }
        Cloud::Huawei => {
            "3 to 63 characters of lower-case letters, digits, `-` and `.`, starting and ending \
             with a letter or digit, without `..`, `.-` or `-.`, not an IP address."
        }
    }
}

/// Checks `name` as `cloud` would. For Tencent the name is the full one
/// COS uses, `<name>-<APPID>` (append the APPID first if the spec leaves it
/// out).
pub fn check(cloud: Cloud, name: &str) -> Result<(), BucketNameError> {
    let problem = match cloud {
        Cloud::Aws => s3_problem(name),
        Cloud::Alibaba => oss_problem(name),
        Cloud::Tencent => cos_problem(name),
        Cloud::Huawei => obs_problem(name),
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(BucketNameError {
            cloud,
            name: name.to_string(),
            problem,
            rule: rule(cloud),
            example: example(cloud, name),
        }),
    }
}

fn length_problem(name: &str, min: usize, max: usize) -> Option<String> {
    let n = name.chars().count();
    if n < min {
        Some(format!("it has {n} characters, fewer than {min}"))
    } else if n > max {
        Some(format!("it has {n} characters, more than {max}"))
    } else {
        None
    }
}

/// The first character outside `allowed`, described.
fn alphabet_problem(name: &str, allowed: impl Fn(char) -> bool) -> Option<String> {
    name.chars().find(|c| !allowed(*c)).map(|c| {
        if c.is_ascii_uppercase() {
            format!("it contains the upper-case letter `{c}`")
        } else {
            format!("it contains `{c}`")
        }
    })
}

fn ends_problem(name: &str) -> Option<String> {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !alnum(name.chars().next()) {
        Some("it does not start with a letter or digit".to_string())
    } else if !alnum(name.chars().last()) {
        Some("it does not end with a letter or digit".to_string())
    } else {
        None
    }
}

fn is_ipv4_like(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
}

fn lower_digit_dash(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
}

fn lower_digit_dash_dot(c: char) -> bool {
    lower_digit_dash(c) || c == '.'
}

fn s3_problem(name: &str) -> Option<String> {
    length_problem(name, 3, 63)
        .or_else(|| alphabet_problem(name, lower_digit_dash_dot))
        .or_else(|| ends_problem(name))
        .or_else(|| name.contains("..").then(|| "it contains `..`".to_string()))
        .or_else(|| is_ipv4_like(name).then(|| "it has the form of an IP address".to_string()))
        .or_else(|| {
            ["xn--", "sthree-", "amzn-s3-demo-"]
                .iter()
                .find(|p| name.starts_with(*p))
                .map(|p| format!("it starts with the reserved prefix `{p}`"))
        })
        .or_else(|| {
            ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]
                .iter()
                .find(|s| name.ends_with(*s))
                .map(|s| format!("it ends with the reserved suffix `{s}`"))
        })
}

fn oss_problem(name: &str) -> Option<String> {
    length_problem(name, 3, 63)
        .or_else(|| alphabet_problem(name, lower_digit_dash))
        .or_else(|| ends_problem(name))
}

fn cos_problem(name: &str) -> Option<String> {
    let Some((base, appid)) = name.rsplit_once('-') else {
        return Some("it does not end with `-<APPID>`".to_string());
    };
    if appid.is_empty() || !appid.bytes().all(|b| b.is_ascii_digit()) {
        return Some(format!(
            "it does not end with `-<APPID>` (the account's numeric id; `{appid}` is not one)"
        ));
    }
    if base.is_empty() {
        return Some("the name before `-<APPID>` is empty".to_string());
    }
    length_problem(base, 1, 50)
        .map(|p| format!("the name before `-{appid}`: {p}"))
        .or_else(|| alphabet_problem(base, lower_digit_dash))
        .or_else(|| {
            (base.starts_with('-') || base.ends_with('-'))
                .then(|| format!("the name before `-{appid}` starts or ends with `-`"))
        })
}

fn obs_problem(name: &str) -> Option<String> {
    length_problem(name, 3, 63)
        .or_else(|| alphabet_problem(name, lower_digit_dash_dot))
        .or_else(|| ends_problem(name))
        .or_else(|| {
            ["..", ".-", "-."]
                .iter()
                .find(|s| name.contains(*s))
                .map(|s| format!("it contains `{s}`"))
        })
        .or_else(|| is_ipv4_like(name).then(|| "it has the form of an IP address".to_string()))
}

/// A valid name close to `name`: lower-cased, other characters turned into
/// `-`, runs of `-` collapsed, trimmed, padded or cut to length; a fixed
/// name when nothing usable is left.
fn example(cloud: Cloud, name: &str) -> String {
    let (base_name, appid) = match cloud {
        Cloud::Tencent => match name.rsplit_once('-') {
            Some((b, a)) if !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) => (b, a),
            _ => (name, "1250000000"),
        },
        _ => (name, ""),
    };
    let mut base = String::new();
    for c in base_name.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if !(c == '-' && base.ends_with('-')) {
            base.push(c);
        }
    }
    let max = if cloud == Cloud::Tencent { 50 } else { 63 };
    let mut base: String = base.trim_matches('-').chars().take(max).collect();
    while base.ends_with('-') {
        base.pop();
    }
    for reserved in ["xn-", "sthree-", "amzn-s3-demo-"] {
        if let Some(rest) = base.strip_prefix(reserved) {
            base = rest.trim_start_matches('-').to_string();
        }
    }
    for reserved in ["-s3alias", "-ol-s3", "-x-s3", "-table-s3", "-mrap"] {
        if let Some(rest) = base.strip_suffix(reserved) {
            base = rest.to_string();
        }
    }
    if base.len() < 3 || base.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        base = format!("gpuform-{base}").trim_end_matches('-').to_string();
    }
    let example = if cloud == Cloud::Tencent {
        format!("{base}-{appid}")
    } else {
        base
    };
    if check_silently(cloud, &example) {
        example
    } else {
        // Not reached for any name the tests try; a safe answer regardless.
        match cloud {
            Cloud::Tencent => "gpuform-data-1250000000".to_string(),
            _ => "gpuform-data".to_string(),
        }
    }
}

fn check_silently(cloud: Cloud, name: &str) -> bool {
    match cloud {
        Cloud::Aws => s3_problem(name).is_none(),
        Cloud::Alibaba => oss_problem(name).is_none(),
        Cloud::Tencent => cos_problem(name).is_none(),
        Cloud::Huawei => obs_problem(name).is_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Cloud::*;

    /// (cloud, name, Ok or the start of the problem).
    const CASES: &[(Cloud, &str, Option<&str>)] = &[
        // AWS S3
        (Aws, "gpuform-datasets", None),
        (Aws, "my.bucket.v2", None),
        (Aws, "abc", None),
        (Aws, "ab", Some("it has 2 characters, fewer than 3")),
        (
            Aws,
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            Some("it has 64 characters, more than 63"),
        ),
        (
            Aws,
            "Datasets",
            Some("it contains the upper-case letter `D`"),
        ),
        (Aws, "data_sets", Some("it contains `_`")),
        (
            Aws,
            "-datasets",
            Some("it does not start with a letter or digit"),
        ),
        (
            Aws,
            "datasets.",
            Some("it does not end with a letter or digit"),
        ),
        (Aws, "data..sets", Some("it contains `..`")),
        (Aws, "192.168.5.4", Some("it has the form of an IP address")),
        (
            Aws,
            "xn--datasets",
            Some("it starts with the reserved prefix `xn--`"),
        ),
        (
            Aws,
            "sthree-data",
            Some("it starts with the reserved prefix `sthree-`"),
        ),
        (
            Aws,
            "data-s3alias",
            Some("it ends with the reserved suffix `-s3alias`"),
        ),
        (
            Aws,
            "data--x-s3",
            Some("it ends with the reserved suffix `--x-s3`"),
        ),
        // Alibaba OSS
        (Alibaba, "examplebucket1", None),
        (Alibaba, "test-bucket-2021", None),
        (
            Alibaba,
            "Examplebucket1",
            Some("it contains the upper-case letter `E`"),
        ),
        (Alibaba, "test_bucket_2021", Some("it contains `_`")),
        (
            Alibaba,
            "aliyun-oss-bucket-",
            Some("it does not end with a letter or digit"),
        ),
        (Alibaba, "my.bucket", Some("it contains `.`")),
        (Alibaba, "训练数据", Some("it contains `训`")),
        (Alibaba, "ab", Some("it has 2 characters")),
        // Tencent COS
        (Tencent, "examplebucket-1250000000", None),
        (Tencent, "1-newproject-1250000000", None),
        (Tencent, "a-1250000000", None),
        (
            Tencent,
            "examplebucket",
            Some("it does not end with `-<APPID>`"),
        ),
        (
            Tencent,
            "example-bucket",
            Some("it does not end with `-<APPID>`"),
        ),
        (
            Tencent,
            "-1250000000",
            Some("the name before `-<APPID>` is empty"),
        ),
        (
            Tencent,
            "Example-1250000000",
            Some("it contains the upper-case letter `E`"),
        ),
        (Tencent, "example.b-1250000000", Some("it contains `.`")),
        (
            Tencent,
            "example--1250000000",
            Some("the name before `-1250000000` starts or ends"),
        ),
        (Tencent, "exa_mple", Some("it does not end with `-<APPID>`")),
        // Huawei OBS
        (Huawei, "gpuform-datasets-01", None),
        (Huawei, "my.bucket", None),
        (Huawei, "my..bucket", Some("it contains `..`")),
        (Huawei, "my-.bucket", Some("it contains `-.`")),
        (Huawei, "my.-bucket", Some("it contains `.-`")),
        (
            Huawei,
            ".bucket",
            Some("it does not start with a letter or digit"),
        ),
        (Huawei, "10.0.0.1", Some("it has the form of an IP address")),
        (
            Huawei,
            "My-Bucket",
            Some("it contains the upper-case letter `M`"),
        ),
    ];

    #[test]
    fn the_table() {
        for (cloud, name, want) in CASES {
            let got = check(*cloud, name);
            match (want, &got) {
                (None, Ok(())) => {}
                (Some(start), Err(e)) => assert!(
                    e.problem.starts_with(start),
                    "{cloud:?} {name}: {:?} does not start with {start:?}",
                    e.problem
                ),
                _ => panic!("{cloud:?} {name}: got {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn cos_names_too_long_before_the_appid() {
        let name = format!("{}-1250000000", "a".repeat(51));
        let e = check(Tencent, &name).unwrap_err();
        assert_eq!(
            e.problem,
            "the name before `-1250000000`: it has 51 characters, more than 50"
        );
        assert!(check(Tencent, &format!("{}-1250000000", "a".repeat(50))).is_ok());
    }

    #[test]
    fn the_message_names_what_the_rule_and_an_example() {
        let e = check(Alibaba, "Team_Datasets").unwrap_err();
        assert_eq!(
            e.to_string(),
            "bucket name `Team_Datasets` is not valid on Alibaba OSS: it contains the upper-case \
             letter `T`. Rule: 3 to 63 characters of lower-case letters, digits and `-`, starting \
             and ending with a letter or digit. Example of a valid name: `team-datasets`"
        );
        let e = check(Tencent, "Team_Datasets").unwrap_err();
        assert_eq!(e.example, "team-datasets-1250000000");
        let e = check(Tencent, "Team_Datasets-1300000001").unwrap_err();
        assert_eq!(e.example, "team-datasets-1300000001");
    }

    #[test]
    fn every_example_is_valid() {
        for (cloud, name, _) in CASES {
            if let Err(e) = check(*cloud, name) {
                assert!(
                    check(*cloud, &e.example).is_ok(),
                    "{cloud:?} {name}: example {} is refused",
                    e.example
                );
            }
        }
        for odd in [
            "",
            "-",
            "..",
            "训练",
            "192.168.1.1",
            "xn--a",
            "x",
            "a-s3alias",
            "A--B",
        ] {
            for cloud in Cloud::ALL {
                if let Err(e) = check(cloud, odd) {
                    assert!(
                        check(cloud, &e.example).is_ok(),
                        "{cloud:?} {odd:?}: example {} is refused",
                        e.example
                    );
                }
            }
        }
    }
}
