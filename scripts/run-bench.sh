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
for b in bench_join bench_cluster bench_streaming bench_likelihood; do
	if [ -x "$bin/$b" ]; then
		echo "== $b"
		"$bin/$b" --benchmark_out="$root/tests/results/$b.json" --benchmark_out_format=json
	fi
done

# One summary per run: every figure above flattened to metric -> number,
# with the commit and the load average, for scripts/bench-compare.
if [ -x "$bin/jackdaw" ]; then
	echo "== jackdaw overhead (getppid, socketpair, file; sched,syscall)"
	for w in getppid socketpair file; do
		"$bin/jackdaw" overhead --json - --workload "$w" --probes sched,syscall --runs 5 \
			>"$root/tests/results/overhead-$w.json"
	done
fi
mkdir -p "$root/tests/results/bench"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
summary="$root/tests/results/bench/$stamp-$commit.json"
inputs=()
for f in capture-bench bench_join bench_cluster bench_likelihood overhead-getppid overhead-socketpair overhead-file; do
	[ -r "$root/tests/results/$f.json" ] && inputs+=("$root/tests/results/$f.json")
done
jq -n --arg commit "$commit" --arg date "$stamp" --arg load "$(cut -d' ' -f1 /proc/loadavg)" '
	def flat: [paths(scalars) as $p | getpath($p) as $v | select(($v | type) == "number")
		| {key: ($p | map(tostring) | join(".")), value: $v}] | from_entries;
	{schema: "jackdaw-bench/1", commit: $commit, date: $date, load_average: ($load | tonumber),
	 metrics: (reduce inputs as $doc ({}; . + ($doc.f as $name | $doc.j | flat
		| with_entries(.key = $name + "." + .key))))}' \
	< <(for f in "${inputs[@]}"; do jq -c --arg n "$(basename "$f" .json)" '{f: $n, j: .}' "$f"; done) >"$summary"
echo "written: $summary (compare two runs with scripts/bench-compare A.json B.json)"
