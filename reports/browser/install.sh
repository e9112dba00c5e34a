#!/usr/bin/env bash
# Installs the browser check's dependency (playwright-core, no dependencies
# of its own) into .peers/matrix-browser/ (project local, nothing global),
# exactly as pinned by package-lock.json (its integrity hash is the lock).
# Run from the repository root; reports/tests/matrix_browser.rs runs it when
# the installed lock differs from this one. Chromium itself is Debian's
# package (/usr/bin/chromium): the test installs it with apt-get.
set -euo pipefail

here="reports/browser"
dest=".peers/matrix-browser"

if [[ ! -f "$here/package-lock.json" ]]; then
  echo "install.sh: run from the repository root ($here/package-lock.json not found)" >&2
  exit 1
fi
command -v node >/dev/null || { echo "install.sh: node not found (Node >= 20 needed)" >&2; exit 1; }
command -v npm >/dev/null || { echo "install.sh: npm not found" >&2; exit 1; }

mkdir -p "$dest"
# The marker is a copy of the lock installed, written last: an install
# that broke half way, or an older lock, is redone.
rm -f "$dest/.installed"
cp "$here/package.json" "$here/package-lock.json" "$dest/"

# npm ci: exactly the lock (fails if package.json and the lock disagree),
# after removing any previous node_modules. playwright-core has no install
# scripts, and must not download browsers.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
  npm ci --prefix "$dest" --ignore-scripts --no-audit --no-fund --loglevel=error

node -e '
  const path = require("path");
  const got = require(path.resolve(process.argv[1], "node_modules/playwright-core/package.json")).version;
  if (got !== "1.65.1") { console.error(`install.sh: playwright-core is ${got}, want 1.65.1`); process.exit(1); }
' "$dest"

cp "$here/package-lock.json" "$dest/.installed"
echo "matrix browser check installed in $dest"
