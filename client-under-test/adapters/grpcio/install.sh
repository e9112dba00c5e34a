#!/usr/bin/env bash
# Installs the grpcio adapter's dependencies into a project-local venv:
#   .peers/grpcio/venv      Python 3.11 venv with the packages pinned (with
#                           sha256 hashes) in requirements.lock beside this file
#   .peers/grpcio/.installed  the marker the harness checks; written last
#
# Run from the repository root (the harness does: see adapter.json). Idempotent:
# a second run reuses the venv and pip finds everything already satisfied.
# Nothing global is touched; no sudo. Uses `python3` from PATH, or $PYTHON.
#
# The lock file's header says how it was produced and how to refresh it.
set -euo pipefail

here="client-under-test/adapters/grpcio"
if [[ ! -f "$here/requirements.lock" ]]; then
    echo "install.sh: run me from the repository root (no $here/requirements.lock here)" >&2
    exit 1
fi

peers=".peers/grpcio"
venv="$peers/venv"
marker="$peers/.installed"
mkdir -p "$peers"
rm -f "$marker"

# The lock pins cp311 wheels for linux x86_64.
. client-under-test/adapters/pip-venv.sh
pip_venv_install "$venv" "$here/requirements.lock" \
    'sys.version_info[:2] == (3, 11) and platform.system() == "Linux" and platform.machine() == "x86_64"'

# Smoke check: the three modules the adapter imports load, at the pinned version.
"$venv/bin/python" - <<'PY'
import grpc, grpc_csds
from envoy.service.status.v3 import csds_pb2_grpc  # noqa: F401  (xds-protos)
assert grpc.__version__ == "1.85.0", grpc.__version__
PY

tmp="$(mktemp "$peers/.installed.XXXXXX")"
{
    echo "grpcio adapter dependencies installed $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "lock sha256 $(sha256sum "$here/requirements.lock" | cut -d' ' -f1)"
} >"$tmp"
mv "$tmp" "$marker"
echo "install.sh: grpcio adapter ready ($venv)"
