#!/usr/bin/env bash
# The whole test suite, as CI runs it: starts moto (the local EC2 API server
# the AWS provider is tested against) and runs every crate's tests, all of
# them even when one binary fails (--no-fail-fast), then prints one closing
# line with the totals over every test binary.
#
#   scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# tests/suite/bootstrap.rs checks rendered node bootstraps with the real
# `cloud-init schema` and `shellcheck` (Debian packages).
if ! command -v cloud-init >/dev/null 2>&1 || ! command -v shellcheck >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq cloud-init shellcheck >/dev/null
  else
    echo "note: install cloud-init and shellcheck (apt-get install cloud-init shellcheck) for tests/suite/bootstrap.rs" >&2
  fi
fi

# The manifests k3s servers deploy are checked against Kubernetes' schemas
# (tests/suite/bootstrap.rs) with kubernetes-validate, from a venv.
GPUFORM_TEST_KUBERNETES_VALIDATE="$(scripts/kubernetes-validate.sh)"
export GPUFORM_TEST_KUBERNETES_VALIDATE

GPUFORM_TEST_MOTO_URL="$(scripts/moto.sh "${GPUFORM_MOTO_PORT:-5555}")"
export GPUFORM_TEST_MOTO_URL
echo "moto EC2 server: $GPUFORM_TEST_MOTO_URL" >&2

# A throwaway PostgreSQL for the state backend tests (tests/suite/state_postgres.rs).
if [ -z "${GPUFORM_TEST_PG_URL:-}" ]; then
  GPUFORM_TEST_PG_URL="$(scripts/postgres.sh)"
fi
export GPUFORM_TEST_PG_URL
echo "PostgreSQL: ${GPUFORM_TEST_PG_URL%%:*}://…" >&2

# One test executable per crate runs its tests on RUST_TEST_THREADS threads
# (libtest's default is the number of cores). Most tests wait: on the child
# gpuform processes they start, on moto, on stand-ins, on crash loops. More
# threads than cores keep both cores busy while they do.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-8}"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --locked --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?

# "test result: ok. 12 passed; 0 failed; 1 ignored; ..." once per binary.
awk '/^test result:/ {
       for (i = 1; i <= NF; i++) {
         if ($(i) ~ /^passed;?$/) p += $(i-1)
         if ($(i) ~ /^failed;?$/) f += $(i-1)
         if ($(i) ~ /^ignored;?$/) s += $(i-1)
       }
     }
     END { printf "all test binaries: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
exit "$status"
