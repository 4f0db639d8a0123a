#!/usr/bin/env bash
# Performance check for CI: builds the sandbox-only gpuform in release mode
# and runs benches/scale.rs in --check mode, which fails (exit 1) when
#   - apply of 10k resources peaks above 100 MB of RSS,
#   - plan or apply time grows more than 15x from 1k to 10k resources
#     (linear growth gives at most 10), or
#   - the latency scenario (0.5 s per call, default parallelism) takes more
#     than 1.5x the critical path computed from the plan's own DAG depth.
# Bounds are ratios and memory, each time the best of 3 runs: noise-proof on
# any machine. Absolute figures: `cargo bench --bench scale`.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --no-default-features --bench scale -- --check
