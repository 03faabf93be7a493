#!/usr/bin/env bash
# Where the interact group's time goes, by sampling instead of BPF run-time
# statistics (which add two clock reads to every run): nginx (the bench
# shape of nginx-bench-server.sh) under wrk on loopback while each given
# jackdaw's `interactions` follows it, `perf record -a -e cpu-clock` (no PMU
# needed) for SECONDS, then the share of nginx's and wrk's samples in the
# group's programs (bpf_prog_*_ia_*), in every BPF program, and in the
# helpers and attach path they run through (clock reads, hash and storage
# lookups, ring, bpf_trace_run*, RCU). Several binaries interleave (a, b,
# a, b, ...); "untraced" as a binary name samples without a tracer. Other
# BPF programs on the machine (another session's) show under "every BPF
# program" and in the helpers, not under the group's own.
# Usage: interact-perf-share.sh REPS SECONDS JACKDAW|untraced [...]
set -euo pipefail
reps=${1:?usage: interact-perf-share.sh REPS SECONDS JACKDAW|untraced [...]}
secs=${2:?usage: interact-perf-share.sh REPS SECONDS JACKDAW|untraced [...]}
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "interact-perf-share: needs root (eBPF, perf -a): sudo $0 $*" >&2; exit 2; }
for tool in nginx wrk perf; do
	command -v $tool >/dev/null || { echo "interact-perf-share: $tool missing: run scripts/install-deps.sh" >&2; exit 2; }
done
work=$(mktemp -d /tmp/jdw-ia-perf.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
port=18093
. "$root/scripts/nginx-bench-server.sh"
start_bench_nginx "$work" "$port"

share() {
	perf report -i "$1" --comm nginx,wrk --sort sym --stdio --percentage relative 2>/dev/null | awk '
	/%/ { p = $1; sub("%", "", p); s = $3
		if (s ~ /^bpf_prog_.*_ia_/) ia += p
		if (s ~ /^bpf_prog_/) prog += p
		else if (s ~ /bpf_trace_run|__bpf_prog_enter|__bpf_prog_exit|bpf_ktime|ktime_get_mono_fast|pvclock|read_tsc|htab|lookup_nulls|bpf_sk_storage|bpf_task_storage|bpf_local_storage|ringbuf|bpf_skc_to|bpf_get_current|migrate_disable|migrate_enable|__rcu_read/) help += p }
	END { printf "  interact programs %.2f%%, every BPF program %.2f%%, helpers and attach path %.2f%% of nginx+wrk samples\n", ia, prog, help }'
}

for r in $(seq "$reps"); do
	for jd in "$@"; do
		tracer=""
		if [ "$jd" != untraced ]; then
			"$jd" interactions --by interaction -o "$work/ia.jdw" --pid "$nginx_master" > /dev/null 2> "$work/err" &
			tracer=$!
			for _ in $(seq 300); do grep -q "following interactions" "$work/err" && break; sleep 0.1; done
			sleep 0.5
		fi
		wrk -t1 -c10 -d"$((secs + 2))s" "http://127.0.0.1:$port/5k.html" > "$work/wrk.out" &
		w=$!
		sleep 1
		perf record -q -a -e cpu-clock -F 4999 -o "$work/perf.data" -- sleep "$secs" 2>/dev/null
		wait "$w"
		if [ -n "$tracer" ]; then kill -INT "$tracer"; wait "$tracer" || true; fi
		rm -f "$work/ia.jdw"
		echo "round $r $jd: $(awk '/Requests\/sec/ {print $2}' "$work/wrk.out") req/s, load $(cut -d' ' -f1 /proc/loadavg)"
		share "$work/perf.data"
	done
done
