#!/usr/bin/env bash
# Runs every benchmark that was built, side by side, writing tests/results/.
# Usage: run-bench.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: run-bench.sh BUILD_DIR}
bin=$build/bin
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/tests/results"
if [ -x "$bin/bench_capture" ]; then
	echo "== capture overhead (bench_capture)"
	"$bin/bench_capture"
fi
for b in bench_join bench_cluster bench_streaming; do
	if [ -x "$bin/$b" ]; then
		echo "== $b"
		"$bin/$b" --benchmark_out="$root/tests/results/$b.json" --benchmark_out_format=json
	fi
done
