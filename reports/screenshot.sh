#!/usr/bin/env bash
# Renders an HTML file (e.g. a conformance matrix.html) to a PNG with
# headless Chromium.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: reports/screenshot.sh PAGE.html OUT.png [WIDTHxHEIGHT]

Renders PAGE.html to OUT.png with headless Chromium (window 1400x2000 by
default). If no chromium is on PATH, installs Debian's `chromium` package
with apt-get first (needs root, or sudo, and network access).

The sample matrix from the unit tests:
  XDS_MATRIX_SAMPLE_DIR=/tmp/matrix-sample \
    cargo test -p xds-conformance-reports write_sample_when_asked
  reports/screenshot.sh /tmp/matrix-sample/matrix.html /tmp/matrix-sample.png
USAGE
}

if [ $# -lt 2 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  usage
  exit 2
fi
page=$1
out=$2
size=${3:-1400x2000}
if [ ! -f "$page" ]; then
  echo "screenshot.sh: no such file: $page" >&2
  exit 1
fi
case "$size" in
  *x*) ;;
  *) echo "screenshot.sh: size must be WIDTHxHEIGHT, got $size" >&2; exit 2 ;;
esac

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "screenshot.sh: chromium not found; installing it with apt-get" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y chromium
  browser=$(command -v chromium)
fi

abs_page=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
mkdir -p "$(dirname "$out")"
abs_out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$profile" --window-size="${size/x/,}" \
  --screenshot="$abs_out" "file://$abs_page" >/dev/null 2>&1 || {
  echo "screenshot.sh: chromium failed" >&2
  exit 1
}
[ -s "$abs_out" ] || { echo "screenshot.sh: no screenshot written" >&2; exit 1; }
echo "$abs_out"
