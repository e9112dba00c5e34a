#!/usr/bin/env bash
# The longer run of docs/src/fuzzing.md: each target, one at a time, for
# RUNS executions (default 10,000,000) from its committed corpus, with the
# CI's limits; prints a Markdown table row per target. New inputs and logs
# go to OUT (default: a fresh temporary folder), never to fuzz/corpus/.
# Needs cargo-fuzz on PATH (.ci/fuzz installs it).
#
#   bash fuzz/long-run.sh                     # every target
#   RUNS=1000000 bash fuzz/long-run.sh bootstrap
set -euo pipefail
cd "$(dirname "$0")"

runs="${RUNS:-10000000}"
out="${OUT:-$(mktemp -d)}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi

cargo fuzz build -s none >/dev/null 2>&1 || cargo fuzz build -s none
echo "logs and new inputs: $out" >&2
echo "| target | executions | wall time | exec/s | cov | ft | corpus (inputs/size) | crashes |"
echo "|---|---|---|---|---|---|---|---|"
for target in "${targets[@]}"; do
  mkdir -p "$out/$target"
  log="$out/$target.log"
  start=$(date +%s)
  status=0
  seeds=("corpus/$target")
  [ -d "regressions/$target" ] && seeds+=("regressions/$target")
  cargo fuzz run -s none "$target" "$out/$target" "${seeds[@]}" -- \
    -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 || status=$?
  wall=$(( $(date +%s) - start ))
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  final=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$final")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$final")
  corpus=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[KMG]*b\).*/\1/p' <<<"$final")
  crashes=$(grep -c 'Test unit written to' "$log" || true)
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then
    crashes="failed (exit $status, see $log)"
  fi
  echo "| $target | ${executed:-?} | ${wall} s | $(( ${executed:-0} / (wall > 0 ? wall : 1) )) | ${cov:-?} | ${ft:-?} | ${corpus:-?} | $crashes |"
done
