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
python="${PYTHON:-python3}"

# The lock pins cp311 wheels for linux x86_64: refuse anything else early,
# with a clear message, instead of a hash mismatch deep inside pip.
if ! "$python" -c 'import sys, platform; sys.exit(0 if sys.version_info[:2] == (3, 11) and platform.system() == "Linux" and platform.machine() == "x86_64" else 1)'; then
    echo "install.sh: needs CPython 3.11 on Linux x86_64 (requirements.lock pins cp311 manylinux wheels); got: $("$python" -c 'import sys, platform; print(sys.version.split()[0], platform.system(), platform.machine())')" >&2
    exit 1
fi

mkdir -p "$peers"
rm -f "$marker"

# Reuse a venv that still runs (the interpreter it points at may be gone).
if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
    echo "install.sh: reusing $venv"
else
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi

# --require-hashes: every package, dependencies included, must be in the lock
# with its hash (a dependency missing from the lock fails the install);
# --only-binary: never build from source.
"$venv/bin/python" -m pip install \
    --disable-pip-version-check --no-input --quiet \
    --require-hashes --only-binary=:all: \
    -r "$here/requirements.lock"
"$venv/bin/python" -m pip check --disable-pip-version-check

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
