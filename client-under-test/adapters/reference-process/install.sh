#!/usr/bin/env bash
# Builds the reference client's adapter binary (release mode; the profile
# XDS_REFERENCE_PROCESS_PROFILE names instead, e.g. `dev` for CI's
# conformance run, which needs no optimised build: bench-peers always
# rebuilds it as release) and copies it into the project-local peers folder:
#   .peers/reference-process/xds-reference-adapter   the binary adapter.json runs
#   .peers/reference-process/.installed              the marker the harness checks; written last
#
# Run from the repository root (the harness does: see adapter.json). Idempotent:
# a second run is a no-op build and a copy. Nothing global is touched.
#
# Where cargo puts the binary depends on CARGO_TARGET_DIR (or build.target-dir
# in a cargo config), so the path is taken from cargo's own build messages.
# The harness runs this only when the marker is missing: after changing the
# reference client, delete .peers/reference-process/.installed (or run this).
set -euo pipefail

here="client-under-test/adapters/reference-process"
if [[ ! -f "$here/adapter.json" ]]; then
    echo "install.sh: run me from the repository root (no $here/adapter.json here)" >&2
    exit 1
fi

peers=".peers/reference-process"
marker="$peers/.installed"
mkdir -p "$peers"
rm -f "$marker"

# stdout: one JSON message per line; the binary's is the artifact with an
# `executable` ending in /xds-reference-adapter. Diagnostics go to stderr.
profile="${XDS_REFERENCE_PROCESS_PROFILE:-release}"
built="$(cargo build --profile "$profile" --locked -p xds-client-under-test --bin xds-reference-adapter \
    --message-format=json-render-diagnostics |
    sed -n 's/.*"executable":"\([^"]*\/xds-reference-adapter\)".*/\1/p' | tail -n 1)"
if [[ -z "$built" || ! -x "$built" ]]; then
    echo "install.sh: cargo built nothing executable named xds-reference-adapter (got: '${built}')" >&2
    exit 1
fi

tmp="$(mktemp "$peers/.xds-reference-adapter.XXXXXX")"
cp "$built" "$tmp"
chmod 755 "$tmp"
mv "$tmp" "$peers/xds-reference-adapter"

tmp="$(mktemp "$peers/.installed.XXXXXX")"
{
    echo "reference-process adapter built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $built"
    echo "binary sha256 $(sha256sum "$peers/xds-reference-adapter" | cut -d' ' -f1)"
} >"$tmp"
mv "$tmp" "$marker"
echo "install.sh: reference-process adapter ready ($peers/xds-reference-adapter)"
