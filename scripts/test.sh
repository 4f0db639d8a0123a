#!/usr/bin/env bash
# The whole test suite, as CI runs it: starts moto (the local EC2 API server
# the AWS provider is tested against) and runs every crate's tests.
#
#   scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GPUFORM_TEST_MOTO_URL="$(scripts/moto.sh "${GPUFORM_MOTO_PORT:-5555}")"
export GPUFORM_TEST_MOTO_URL
echo "moto EC2 server: $GPUFORM_TEST_MOTO_URL" >&2

cargo test --workspace --locked "$@"
