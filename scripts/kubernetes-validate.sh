#!/usr/bin/env bash
# Installs kubernetes-validate (PyPI: Kubernetes' OpenAPI schemas for
# 1.25-1.37, offline) into .venv-k8s for tests/suite/bootstrap.rs, which
# checks every manifest a k3s server deploys against the schema of the k3s
# version it installs, and prints the path of the executable:
#
#   export GPUFORM_TEST_KUBERNETES_VALIDATE=$(scripts/kubernetes-validate.sh)
#
# Idempotent: the pinned version is installed once.
set -euo pipefail

VERSION="1.37.0"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-k8s"
PYTHON="${PYTHON:-python3}"
BIN="$VENV/bin/kubernetes-validate"

if [ ! -x "$BIN" ] \
   || [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' 2>/dev/null || true)" != "$VERSION" ]; then
  echo "kubernetes-validate.sh: installing kubernetes-validate $VERSION into $VENV" >&2
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$VERSION" >&2
fi
echo "$BIN"
