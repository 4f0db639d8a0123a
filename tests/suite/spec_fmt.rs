//! `gpuform fmt` through the library API.

use gpuform::spec::{self, Vars};

const MESSY: &str = "# yaml-language-server: $schema=../schemas/gpuform.schema.json\r
# A messy but valid spec.\r
project:    messy   \r
\r
\r
\r
clusters:\r
    trainer:     # the big one\r
        cloud:   aws\r
        region: us-east-1\r
        zones:\r
        -   us-east-1a\r
        -     us-east-1b   # fallback\r
          # comment under the list\r
        nodes: 4\r
        gpu: A100-80GB:8\r
        user_data: |\r
            #!/bin/sh\r
              echo indented\r
        ingress:\r
        -   ports: \"22\"\r
            cidr: 203.0.113.0/24\r
budget: {max_hourly_usd: 100}\r
# trailing comment";

#[test]
fn formats_without_losing_comments_or_meaning() {
    let out = spec::format(MESSY).unwrap();
    let want = "# yaml-language-server: $schema=../schemas/gpuform.schema.json
# A messy but valid spec.
project: messy

clusters:
  trainer: # the big one
    cloud: aws
    region: us-east-1
    zones:
      - us-east-1a
      - us-east-1b   # fallback
      # comment under the list
    nodes: 4
    gpu: A100-80GB:8
    user_data: |
      #!/bin/sh
        echo indented
    ingress:
      - ports: \"22\"
        cidr: 203.0.113.0/24
budget: {max_hourly_usd: 100}
# trailing comment
";
    assert_eq!(
        out,
        want,
        "\n{}",
        spec::format_diff("messy.yaml", want, &out)
    );
    assert_eq!(spec::format(&out).unwrap(), out);
    let before = spec::load_str("a.yaml", MESSY, &Vars::new()).unwrap();
    let after = spec::load_str("b.yaml", &out, &Vars::new()).unwrap();
    assert_eq!(before.spec, after.spec);
    for line in MESSY.lines().filter(|l| l.trim_start().starts_with('#')) {
        assert!(out.contains(line.trim()), "lost comment {line:?}");
    }
}

#[test]
fn check_mode_diff() {
    let out = spec::format(MESSY).unwrap();
    let diff = spec::format_diff("messy.yaml", MESSY, &out);
    assert!(
        diff.starts_with("--- a/messy.yaml\n+++ b/messy.yaml\n"),
        "{diff}"
    );
    assert!(diff.contains("+    cloud: aws\n"), "{diff}");
    assert_eq!(spec::format_diff("x", &out, &out), "");
}

#[test]
fn refuses_unparseable_input() {
    let err = spec::format("a: [1, 2\nb: 3\n").unwrap_err();
    assert_eq!(err.0[0].line, Some(2));
    assert!(err.0[0].message.starts_with("invalid YAML"));
}
