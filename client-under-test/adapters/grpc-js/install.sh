#!/usr/bin/env bash
# Installs the grpc-js adapter's dependencies into .peers/grpc-js/ (project
# local, nothing global), exactly as pinned by package-lock.json.
# Run from the repository root. Idempotent: re-running reinstalls the same tree.
set -euo pipefail

here="client-under-test/adapters/grpc-js"
dest=".peers/grpc-js"

if [[ ! -f "$here/package-lock.json" ]]; then
  echo "install.sh: run from the repository root ($here/package-lock.json not found)" >&2
  exit 1
fi
command -v node >/dev/null || { echo "install.sh: node not found (Node >= 18 needed)" >&2; exit 1; }
command -v npm >/dev/null || { echo "install.sh: npm not found" >&2; exit 1; }

mkdir -p "$dest"
rm -f "$dest/.installed"
cp "$here/package.json" "$here/package-lock.json" "$dest/"

# npm ci: installs exactly the lock (fails if package.json and the lock
# disagree), removes any previous node_modules first. No install scripts are
# needed by this tree (protobufjs's postinstall only checks its CLI extras).
npm ci --prefix "$dest" --ignore-scripts --no-audit --no-fund --loglevel=error

# Sanity: the pinned versions are the ones installed.
node -e '
  const want = {"@grpc/grpc-js": "1.14.7", "@grpc/grpc-js-xds": "1.14.1"};
  const path = require("path");
  for (const [name, version] of Object.entries(want)) {
    const got = require(path.resolve(process.argv[1], "node_modules", name, "package.json")).version;
    if (got !== version) { console.error(`install.sh: ${name} is ${got}, want ${version}`); process.exit(1); }
  }
' "$dest"

date -u +%Y-%m-%dT%H:%M:%SZ > "$dest/.installed"
echo "grpc-js adapter installed in $dest"
