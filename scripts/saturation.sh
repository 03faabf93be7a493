#!/bin/bash
# jackdaw at full load: Debian's nginx (2 workers) serving four kinds (5 KB,
# 12 KB and 64 KB files and a 404) to wrk at full speed, recorded and
# analysed, and watched by `live`, with the figures that say whether the
# answer is faithful: requests found against wrk's own count (scaled by the
# share sampled), loss, incomplete requests, clusters and the four kinds'
# share of them, anomalies, and requests charged more CPU than their threads
# could run in their span. live adds its pipeline delay and peak memory.
#
#   sudo scripts/saturation.sh [BUILD_DIR] [CONFIG...]
#
# CONFIG: record (8 MB rings), record-256k (256 KB rings, --sample auto),
# live, live-256k; all four by default. Environment: SECS (wrk's run,
# default 8), BUSY (busy loops beside the run, default 0), REPS (default 1),
# OUT (a file the table is also appended to).
#
# The load starts only once the probes are attached: attaching takes 1-6 s
# on a loaded 2-CPU machine, and requests wrk made before it would count as
# missed.
set -euo pipefail

build=${1:-build/user}
shift || true
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(record record-256k live live-256k)
secs=${SECS:-8}
busy=${BUSY:-0}
reps=${REPS:-1}
jackdaw=$(realpath "$build/bin/jackdaw")
port=18181

die() { echo "saturation: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (the probes): run it with sudo"
[ -x "$jackdaw" ] || die "no jackdaw at $jackdaw: build first (make)"
for tool in nginx wrk python3; do
	command -v $tool > /dev/null || die "$tool is missing: run scripts/install-deps.sh"
done

work=$(mktemp -d /tmp/jackdaw-saturation.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
	wait 2> /dev/null || true
	[ -n "${KEEP:-}" ] && echo "saturation: kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT

# The benchmarks' nginx, with two workers, plus the mix's other files.
. "$(dirname "$0")/nginx-bench-server.sh"
start_bench_nginx "$work" "$port" 2
master=$nginx_master
for size in 12 64; do head -c $((size * 1024)) /dev/zero | tr '\0' x > "$work/www/${size}k.html"; done
cat > "$work/mix.lua" << 'EOL'
local paths = {"/5k.html", "/12k.html", "/64k.html", "/missing"}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i % 4) + 1])
end
done = function(summary, latency, requests)
  io.write(string.format("requests=%d\n", summary.requests))
end
EOL
for _ in $(seq 50); do [ -s "$work/nginx/nginx.pid" ] && break; sleep 0.1; done
[ -s "$work/nginx/nginx.pid" ] || die "nginx did not start (see $work/nginx/error.log)"

for _ in $(seq "$busy"); do
	sh -c 'while :; do :; done' &
	pids+=("$!")
done

# Waits until FILE holds a line matching PATTERN (the tool's "attached"
# line), or the tool (pid) has exited.
wait_for_line() {
	local file=$1 pattern=$2 pid=$3
	until grep -q "$pattern" "$file" 2> /dev/null; do
		kill -0 "$pid" 2> /dev/null || die "jackdaw exited before attaching: $(tail -1 "$file")"
		sleep 0.05
	done
}

run_wrk() {
	wrk -t2 -c10 -d"${secs}s" -s "$work/mix.lua" "http://127.0.0.1:$port/" > "$work/wrk.log" 2>&1
	sed -n 's/^requests=//p' "$work/wrk.log"
}

record_run() {
	local name=$1 args=()
	[ "$name" = record-256k ] && args=(--buffer-size 256K --sample auto)
	"$jackdaw" record --pid "$master" "${args[@]}" -o "$work/t.jdw" > "$work/rec.log" 2>&1 &
	local rp=$!
	wait_for_line "$work/rec.log" "recording pid" $rp
	local served
	served=$(run_wrk)
	sleep 0.5
	kill -INT $rp
	wait $rp || die "record failed: $(tail -1 "$work/rec.log")"
	"$jackdaw" analyze "$work/t.jdw" --schema tcp-threadpool --json "$work/t.json" \
		--requests "$work/t.requests" > "$work/analyze.log" 2>&1 ||
		die "analyze failed: $(tail -1 "$work/analyze.log")"
	python3 - "$name" "$served" "$work/t.json" "$work/t.requests" "$work/rec.log" << 'PY'
import json, re, sys
name, served, model, requests, reclog = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
s = json.load(open(model))["summary"]
sizes = sorted((c["size"] for c in json.load(open(model))["clusters"]), reverse=True)
n = s["requests"]
impossible = 0
with open(requests) as f:
    for line in f:
        r = json.loads(line)
        if "totals" not in r:  # a connection's line
            continue
        # CPU beyond what its threads could have run within its span
        if r["totals"]["cpu_ns"] > r["latency_ns"] * max(len(r["threads"]), 1) * 1.01 + 1000:
            impossible += 1
lost = re.search(r"lost \(([0-9.]+) %\)", open(reclog).read())
share = s.get("sample_share", 1.0) or 1.0
found = n + s.get("incomplete", 0)
print(f"{name:12} wrk {served:7d}  found {found:7d} ({100.0 * (found / share / served - 1):+.2f} %; "
      f"{s.get('incomplete', 0)} incomplete, share {share:.3f})  lost {lost.group(1) if lost else '?'} %  "
      f"clusters {len(sizes)} (4 kinds {100.0 * sum(sizes[:4]) / max(n, 1):.2f} %)  "
      f"anomalies {s['anomalies']} ({100.0 * s['anomalies'] / max(n, 1):.3f} %)  impossible {impossible}")
PY
}

live_run() {
	local name=$1 args=()
	[ "$name" = live-256k ] && args=(--buffer-size 256K)
	"$jackdaw" live --schema tcp-threadpool --pid "$master" "${args[@]}" --json - > "$work/live.jsonl" 2> "$work/live.log" &
	local lp=$!
	wait_for_line "$work/live.log" "live session .*control socket" $lp
	local served
	served=$(run_wrk)
	sleep 3  # the pipeline drains
	kill -INT $lp
	wait $lp || die "live failed: $(tail -1 "$work/live.log")"
	python3 - "$name" "$served" "$work/live.jsonl" "$work/live.log" << 'PY'
import json, re, sys
name, served, stream, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
lines = [json.loads(l) for l in open(stream) if l.startswith("{")]
last = lines[-1]
delay = max((l["pipeline_delay_ms"] for l in lines if l.get("requests_per_s", 0) > 0), default=0)
sizes = sorted((c["requests"] for c in last["clusters"]), reverse=True)
n = last["requests"]
anomalous = sum(c["anomalous"] for c in last["clusters"])
impossible = sum(c["cpu_ms_per_request"] > 2 * c["latency_p99_ms"] for c in last["clusters"])
rss = re.search(r"peak rss ([0-9.]+ MB)", open(log).read())
found = n + last.get("incomplete", 0)
estimated = last.get("requests_estimated", found)
lh = last.get("likelihood", {})
print(f"{name:12} wrk {served:7d}  found {found:7d}, estimated {estimated} ({100.0 * (estimated / served - 1):+.2f} %; "
      f"{last.get('incomplete', 0)} incomplete, rate {min(l.get('sample_rate', 1.0) for l in lines):.3f} at the least)  "
      f"lost {last['lost_percent']:.2f} %  unlikely {lh.get('unlikely', 0)} of {lh.get('scored', 0)}  "
      f"clusters {len(sizes)} (4 kinds {100.0 * sum(sizes[:4]) / max(n, 1):.2f} %, {anomalous} anomalous, "
      f"{impossible} with CPU > 2x p99)  delay max {delay:.0f} ms  peak rss {rss.group(1) if rss else '?'}")
PY
}

echo "saturation: nginx 2 workers, wrk -t2 -c10 -d${secs}s, $busy busy loops, $(nproc) CPUs, $(date -u +%FT%TZ), $(git -C "$(dirname "$0")" rev-parse --short HEAD 2> /dev/null || echo '?')" |
	tee -a "${OUT:-/dev/null}"
for _ in $(seq "$reps"); do
	for c in "${configs[@]}"; do
		case $c in
		record | record-256k) record_run "$c" ;;
		live | live-256k) live_run "$c" ;;
		*) die "unknown config '$c' (record, record-256k, live, live-256k)" ;;
		esac | tee -a "${OUT:-/dev/null}"
	done
done
