#!/usr/bin/env bash
# Every JSON file a run writes validates against its schema in docs/schemas, and so does a result
# of a kernel that failed to compile (with its compiler log).
set -euo pipefail
opbench="$1"
source_dir="$2"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$opbench" run --workloads 8p,12p --impl reference,baseline,expert --size test --max-time 0.3 --out "$out/run" > "$out/run.log" 2>&1 || true
"$opbench" eval 8p "$source_dir/tests/kernels/gemm_compile_error.cpp" --size test --json "$out/compile_error.json" > /dev/null 2>&1 || true
test -s "$out/run/results.json"
test -s "$out/compile_error.json"
python3 "$source_dir/scripts/check-json-schemas" "$out"
