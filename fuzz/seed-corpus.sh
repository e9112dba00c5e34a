#!/usr/bin/env bash
# Regenerates the seed corpora and minimizes them into fuzz/corpus/: seeds
# from the scenarios and from playing them against the reference client
# (harness/examples/fuzz_seeds.rs), merged with what the corpus already
# holds (inputs found by fuzzing; add a run's new ones with EXTRA=<folder>
# holding <target>/ folders), then `cargo fuzz cmin` keeps a small set
# with the same coverage: edges, not hit counts (-use_counters=0), which
# keeps about a quarter of the files. fuzz/regressions/ is never touched.
# Needs cargo-fuzz on PATH (see docs/src/fuzzing.md).
# Usage: [EXTRA=<folder>] bash fuzz/seed-corpus.sh [target...]
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(scenario_loader response_decoding fake_server_requests adapter_line_codec bootstrap)
fi

seeds="$(mktemp -d)"
trap 'rm -rf "$seeds"' EXIT
cargo run --locked -q -p xds-conformance --example fuzz_seeds -- "$seeds"

cd fuzz
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  cp "$seeds/$target/"* "corpus/$target/"
  if [ -n "${EXTRA:-}" ] && [ -d "$EXTRA/$target" ]; then
    cp "$EXTRA/$target/"* "corpus/$target/"
  fi
  # -s none: the sanitizer the CI runs use (docs/src/fuzzing.md).
  cargo fuzz cmin -s none "$target" -- -rss_limit_mb=2048 -timeout=10 -use_counters=0
done
