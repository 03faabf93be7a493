#!/usr/bin/env bash
# Where full capture's cost goes on nginx (1 worker, keep-alive, a 5 KB
# file) under wrk -t1 -c10. Per round, side by side: throughput untraced,
# under `jackdaw record --pid MASTER` (sched+syscall+block+net, syscalls
# combined: the default) and under the same with --no-combine; the CPU
# ticks of jackdaw's threads and of the nginx worker over each traced load;
# records stored and events per request (dump --summary). A last pass per
# mode runs with kernel.bpf_stats_enabled=1 and reports each BPF program's
# run time per request (the statistics cost two clock reads per program
# run: that pass's throughput is not quoted). Quote ratios only from a
# quiet machine: the load average is printed before and after.
# Usage: capture-cost-nginx.sh BUILD_DIR [REPS] [SECONDS]
set -euo pipefail
build=${1:?usage: capture-cost-nginx.sh BUILD_DIR [REPS] [SECONDS]}; reps=${2:-3}; secs=${3:-5}
[ "$(id -u)" -eq 0 ] || { echo "capture-cost-nginx: needs root (eBPF): sudo $0 $*" >&2; exit 2; }
for tool in nginx wrk bpftool jq; do
	command -v $tool >/dev/null || { echo "capture-cost-nginx: $tool missing: run scripts/install-deps.sh" >&2; exit 2; }
done
bin=$build/bin
work=$(mktemp -d /tmp/jdw-ngx-cost.XXXXXX)
pids=()
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() { sysctl -qw kernel.bpf_stats_enabled="$stats_was" || true; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
port=18189
. "$(dirname "$0")/nginx-bench-server.sh"
start_bench_nginx "$work" "$port"
master=$nginx_master
worker=$nginx_worker
ticks=$(getconf CLK_TCK)
# ticks_of PID -> utime+stime of all its threads
ticks_of() { cat /proc/$1/task/*/stat 2>/dev/null | awk '{c=$0; sub(/.*\) /,"",c); split(c,f," "); t+=f[12]+f[13]} END {print t+0}'; }
load() { wrk -t1 -c10 -d"${secs}s" "http://127.0.0.1:$port/5k.html" | awk '/requests in/ {n=$1} /Requests\/sec/ {r=$2} END {print r, n}'; }
# progs -> "id run_time_ns run_cnt name" per loaded BPF program
progs() { bpftool prog show -j | jq -r '.[] | "\(.id) \(.run_time_ns // 0) \(.run_cnt // 0) \(.name // "?")"'; }
# traced MODE_FLAGS STATS -> "req/s requests jackdaw_ticks worker_ticks", and leaves the trace in $work/full.jdw
traced() {
	local f=$work/full.jdw
	rm -f "$f"
	# shellcheck disable=SC2086
	"$bin/jackdaw" record -q -o "$f" --pid "$master" $1 >/dev/null 2>"$work/err" &
	local jd=$!
	# The trace file appears once the probes are loaded (they attach right
	# after): on a loaded machine that takes longer than any fixed sleep,
	# and load run before it would go untraced.
	for _ in $(seq 300); do [ -s "$f" ] && break; sleep 0.1; done
	sleep 1
	# this recording's own programs: the BPF program fds it holds (other
	# sessions on the machine load programs of the same names)
	grep -hs '^prog_id:' /proc/$jd/fdinfo/* | awk '{print $2}' | sort -u > "$work/ids"
	progs > "$work/p0"
	local c0 w0 c1 w1 rf nf
	c0=$(ticks_of $jd); w0=$(ticks_of $worker)
	read -r rf nf < <(load)
	c1=$(ticks_of $jd); w1=$(ticks_of $worker)
	progs > "$work/p1"
	kill -INT $jd; wait $jd || true
	echo "$rf $nf $((c1 - c0)) $((w1 - w0))"
}
# BPF run time per request of this run's own programs (ids)
bpf_split() {
	awk -v n="$1" 'FNR==NR && FILENAME ~ /ids$/ {mine[$1]=1; next}
		FILENAME ~ /p0$/ {t0[$1]=$2; c0[$1]=$3; next}
		($1 in mine) && ($1 in t0) && ($3 - c0[$1]) > 0 {dt=$2-t0[$1]; dc=$3-c0[$1]; name[$4]+=dt; runs[$4]+=dc; tot+=dt}
		END {for (k in name) printf "    %-24s %8.0f ns/request %7.2f runs/request %6.0f ns/run\n", k, name[k]/n, runs[k]/n, name[k]/runs[k];
		     printf "    %-24s %8.0f ns/request\n", "total", tot/n}' "$work/ids" "$work/p0" "$work/p1" | sort -k2 -n -r
}
per_request() {
	"$bin/jackdaw" dump "$work/full.jdw" --summary > "$work/summary" 2>&1 || true
	# no "stored:" line: every event is its own record
	awk -v n="$1" '/^stored:/ {s=$2} /^events:/ {e=$2}
		/^type/ {on=1; printf "    events          %8.2f per request\n    records stored  %8.2f per request\n", e/n, (s ? s : e)/n; next}
		on && NF==2 {printf "      %-18s %8.2f\n", $1, $2/n} on && NF!=2 {on=0}' "$work/summary"
	grep -E "^lost per group" "$work/summary" | head -1 || true
}
echo "load before: $(cat /proc/loadavg)"
declare -A flags=([combined]="" [separate]="--no-combine")
cpu=""
for r in $(seq "$reps"); do
	read -r ru nu < <(load)
	line="round $r: untraced $ru req/s"
	for m in combined separate; do
		read -r rf nf cj cw < <(traced "${flags[$m]}")
		line+="; $m $rf req/s ($(echo "$rf / $ru" | bc -l | cut -c1-5))"
		cpu+="  $m: jackdaw threads $cj ticks, nginx worker $cw ticks over ${nf} requests (ticks/s $ticks)\n"
		if [ "$r" = "$reps" ]; then
			echo "  $m, last round, per request:"
			per_request "$nf"
		fi
	done
	echo "$line"
	printf "%b" "$cpu"; cpu=""
done
sysctl -qw kernel.bpf_stats_enabled=1
for m in combined separate; do
	read -r rf nf cj cw < <(traced "${flags[$m]}")
	echo "BPF run time per request, $m (bpf_stats_enabled pass, $nf requests; its throughput is not quoted):"
	bpf_split "$nf"
done
sysctl -qw kernel.bpf_stats_enabled="$stats_was"
echo "load after: $(cat /proc/loadavg)"
