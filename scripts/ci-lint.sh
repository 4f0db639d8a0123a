#!/usr/bin/env bash
# Checks examples/ci/ against the CI systems' own JSON schemas (the GitHub
# Actions workflow schema and GitLab's .gitlab-ci.yml schema, as vendored by
# check-jsonschema from PyPI, pinned; installed once into .venv-lint).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VENV=.venv-lint
if [ ! -x "$VENV/bin/check-jsonschema" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "check-jsonschema==0.39.0" >&2
fi
"$VENV/bin/check-jsonschema" --builtin-schema vendor.github-workflows examples/ci/github-actions.yml
"$VENV/bin/check-jsonschema" --builtin-schema vendor.gitlab-ci examples/ci/gitlab-ci.yml
