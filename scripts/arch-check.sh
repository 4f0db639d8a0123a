#!/usr/bin/env bash
# The "one home" rules of ARCHITECTURE.md as checks: each rule names a
# concept, the one file allowed to hold it, and a pattern that finds a
# second home. Production code only (tests and test support may spell
# things out to check them).
#
#   scripts/arch-check.sh              check the tree; exit 1 naming each second home
#   scripts/arch-check.sh --self-test  prove every rule fails on a second home
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# concept | the one home | extended regex of a second home
RULES=(
  'raw image id vs logical name|providers/api/src/images.rs|starts_with\("(ami|img|m)-"\)|ends_with\("\.vhd"\)'
  'calendar arithmetic (days <-> civil date)|providers/catalog/src/date.rs|719_?468|146_?097'
  'instants as the clouds write them (RFC 3339)|src/clock.rs|fn (parse|format)_instant'
  'ownership tag keys|providers/api/src/resource.rs|"gpuform:(project|address|token|lineage|workspace)"'
  'printing to the terminal (a closed pipe must not panic)|src/cli/out.rs|(^|[^_[:alnum:]])e?print(ln)?!\('
  'the wall clock as time since the epoch|src/clock.rs|duration_since\((std::time::)?UNIX_EPOCH\)'
  'an error worded for the user ({message, hint})|providers/api/src/error.rs|pub hint: String'
  'waiting between polls and retries (exponential backoff)|providers/api/src/backoff.rs|\* 2\)\.min\(|\* 2u32\.saturating_pow'
  'how output looks (tables, colours: comfy-table, owo-colors)|src/views.rs|comfy_table|owo_colors|OwoColorize'
  'a money formatter ($1,234.56)|src/views.rs|fn (usd|money|amount|usd_rate|dollars)\([a-z_]+: f64\) -> String'
  'a data volume'"'"'s neutral types and their default|providers/catalog/src/volume.rs|"(ssd|hdd)"'
  'EBS volume type names (the AWS table)|providers/aws/src/volume_types.rs|"(gp2|gp3|io1|io2|st1|sc1)"|VolumeType::(Gp2|Gp3|Io1|Io2|St1|Sc1|Standard)'
  'Alibaba disk categories (the Alibaba table)|providers/alibaba/src/volume_types.rs|"cloud_(essd|efficiency|ssd|auto|essd_entry)"'
  'Tencent CBS disk types (the Tencent table)|providers/tencent/src/volume_types.rs|"CLOUD_(BASIC|PREMIUM|BSSD|SSD|HSSD|TSSD)"'
  'Huawei EVS disk types (the Huawei table)|providers/huawei/src/volume_types.rs|"(SATA|SAS|GPSSD|SSD|ESSD)2?"'
  'neutral attribute keys (attr::PRICING, attr::SIZE_GB, ...)|providers/api/src/resource.rs|"attached_to"|(get|insert|ip)\("private_ip"|attrs(\(\))?\.(get|get_mut|insert|remove|contains_key)\("(zone|instance_type|image|pricing|root_gb|rdma|user_data|spot_max_price|mig|size_gb|volume_type|storage_class|versioning|encryption|lifecycle|public_access_blocked|force_destroy|strategy)"'
  'reading a provider key (aws, sandbox:aws): a Target, read once where a file enters (its Deserialize)|src/address.rs|Target::parse\(|"sandbox:(aws|alibaba|tencent|huawei)?"'
  'what a cloud crate'"'"'s part files share (observation, listings): observe.rs and refresh.rs, never another part file|providers/api/src/driver.rs|use crate::(compute|network|storage)\b|crate::(compute|network|storage)::[a-z_]+'
  'the text of a resource address (cluster.NAME.LOCAL, bucket.NAME, ADDRESS~ID): an Address, built and taken apart by its methods|providers/api/src/address.rs|format(_compact)?!\("(cluster|bucket)\.\{[^}]*\}(\.|")|strip_prefix\("cluster\.|\{[a-z_.]*\}~\{|contains\(.~.\)'
)

# Production Rust files: not tests, not test support, not benches.
production_files() {
  find src providers -name '*.rs' \
    -not -path '*/tests/*' -not -name 'tests.rs' -not -path '*/benches/*' \
    -not -path '*/examples/*' | sort
}

# Lines of `file` outside its `#[cfg(test)]` module (by convention the last
# item of a file), so unit tests may spell the forbidden forms out.
without_tests() {
  awk '/^#\[cfg\(test\)\]/ { exit } { print FILENAME ":" FNR ": " $0 }' "$1"
}

check() {
  local failed=0 rule concept home pattern hits
  for rule in "${RULES[@]}"; do
    concept="${rule%%|*}"
    rest="${rule#*|}"
    home="${rest%%|*}"
    pattern="${rest#*|}"
    if [ ! -f "$home" ]; then
      echo "arch-check: the home of \"$concept\", $home, does not exist" >&2
      failed=1
      continue
    fi
    hits="$(production_files | grep -vxF "$home" | while read -r f; do
      without_tests "$f" | grep -E -- "$pattern" || true
    done)"
    if [ -n "$hits" ]; then
      echo "arch-check: \"$concept\" has one home, $home; a second one here:" >&2
      while IFS= read -r line; do echo "  $line" >&2; done <<<"$hits"
      echo "  hint: call what $home offers (or move this there) instead of writing it again" >&2
      failed=1
    fi
  done
  return "$failed"
}

self_test() {
  # One probe file holding every second home; each rule must flag it.
  local probe=src/arch_check_probe.rs
  trap 'rm -f "$probe"' EXIT
  cat >"$probe" <<'EOF'
fn a(s: &str) -> bool { s.starts_with("ami-") }
fn b(z: i64) -> i64 { z + 719_468 }
fn parse_instant(s: &str) -> Option<i64> { None }
const K: &str = "gpuform:lineage";
fn c() { println!("x"); }
fn d() -> u64 { std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() }
pub struct E { pub message: String, pub hint: String }
fn f(d: std::time::Duration) -> std::time::Duration { (d * 2).min(d) }
fn g() -> comfy_table::Table { comfy_table::Table::new() }
fn usd(v: f64) -> String { format!("${v:.2}") }
const DEFAULT_VOLUME: &str = "ssd";
fn h() -> aws_sdk_ec2::types::VolumeType { aws_sdk_ec2::types::VolumeType::Gp3 }
const CATEGORY: &str = "cloud_essd";
const DISK_TYPE: &str = "CLOUD_PREMIUM";
const EVS_TYPE: &str = "SAS";
fn attached(a: &serde_json::Map<String, serde_json::Value>) -> bool { a.get("attached_to").is_some() }
fn key(k: &str) -> bool { crate::address::Target::parse(k).is_some_and(|t| t.sandbox) }
fn node(cluster: &str, i: usize) -> String { format!("cluster.{cluster}.node[{i}]") }
use crate::network::observed_ingress;
EOF
  local out
  out="$(check 2>&1 || true)"
  local missed=0 rule concept
  for rule in "${RULES[@]}"; do
    concept="${rule%%|*}"
    if ! grep -qF "\"$concept\" has one home" <<<"$out"; then
      echo "arch-check self-test: the rule \"$concept\" did not flag a second home" >&2
      missed=1
    fi
  done
  rm -f "$probe"
  trap - EXIT
  [ "$missed" = 0 ] || return 1
  echo "arch-check self-test: each of ${#RULES[@]} rules fails on a second home"
}

case "${1:-}" in
  --self-test) self_test ;;
  "") check && echo "arch-check: ${#RULES[@]} one-home rules hold" ;;
  *) echo "usage: scripts/arch-check.sh [--self-test]" >&2; exit 1 ;;
esac
