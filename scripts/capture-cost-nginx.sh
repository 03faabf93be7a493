#!/usr/bin/env bash
# Where full capture's cost goes on nginx (1 worker, keep-alive, a 5 KB
# file) under wrk -t1 -c10: per round, throughput untraced then under
# `jackdaw record --pid MASTER` (sched+syscall+block+net), the CPU ticks of
# each jackdaw thread (reader, writer) and of the nginx worker over the
# traced load, and, for the last round, records per request by type. The
# BPF programs' own run time per event comes from bench_capture
# (JDW_BENCH_BPF_STATS=1). Quote ratios only from a quiet machine: the load
# average is printed before and after.
# Usage: capture-cost-nginx.sh BUILD_DIR [REPS] [SECONDS]
set -euo pipefail
build=${1:?usage: capture-cost-nginx.sh BUILD_DIR [REPS] [SECONDS]}; reps=${2:-3}; secs=${3:-5}
[ "$(id -u)" -eq 0 ] || { echo "capture-cost-nginx: needs root (eBPF): sudo $0 $*" >&2; exit 2; }
for tool in nginx wrk; do
	command -v $tool >/dev/null || { echo "capture-cost-nginx: $tool missing: run scripts/install-deps.sh" >&2; exit 2; }
done
bin=$build/bin
work=$(mktemp -d /tmp/jdw-ngx-cost.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
port=18189
. "$(dirname "$0")/nginx-bench-server.sh"
start_bench_nginx "$work" "$port"
master=$nginx_master
worker=$nginx_worker
ticks=$(getconf CLK_TCK)
# cpu_of PID -> "tid=ticks ..." (utime+stime of each thread)
cpu_of() { for t in /proc/$1/task/*; do awk -v t="${t##*/}" '{c=$0; sub(/.*\) /,"",c); split(c,f," "); printf "%s=%d ", t, f[12]+f[13]}' "$t/stat" 2>/dev/null; done; }
load() { wrk -t1 -c10 -d"${secs}s" "http://127.0.0.1:$port/5k.html" | awk '/requests in/ {n=$1} /Requests\/sec/ {r=$2} END {print r, n}'; }
echo "load before: $(cat /proc/loadavg)"
for r in $(seq "$reps"); do
	read -r ru nu < <(load)
	f=$work/full.jdw
	"$bin/jackdaw" record -q -o "$f" --pid "$master" >/dev/null 2>"$work/err" &
	jd=$!
	sleep 1.5
	c0=$(cpu_of $jd); w0=$(cpu_of $worker)
	read -r rf nf < <(load)
	c1=$(cpu_of $jd); w1=$(cpu_of $worker)
	kill -INT $jd; wait $jd || true
	echo "round $r: untraced $ru req/s; full $rf req/s ($(echo "$rf / $ru" | bc -l | cut -c1-5)); requests $nf"
	echo "  jackdaw threads ticks before: $c0"
	echo "  jackdaw threads ticks after:  $c1"
	echo "  nginx worker ticks: $w0 -> $w1  (ticks/s $ticks)"
	if [ "$r" = "$reps" ]; then
		"$bin/jackdaw" dump "$f" --summary > "$work/summary" 2>&1 || true
		echo "  records per request by type:"
		awk -v n="$nf" '/^type/ {on=1; next} on && NF==2 {printf "    %-18s %8.2f\n", $1, $2/n} on && NF!=2 {on=0}' "$work/summary"
		grep -E "^events:|lost" "$work/summary" | head -3
	fi
	rm -f "$f"
done
echo "load after: $(cat /proc/loadavg)"
