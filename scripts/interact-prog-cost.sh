#!/usr/bin/env bash
# What the interact group's BPF programs cost per request, program by
# program: nginx (the bench shape of nginx-bench-server.sh) under wrk on
# loopback while `jackdaw interactions` follows it, with the kernel's BPF
# run-time statistics on (kernel.bpf_stats_enabled). Per program: runs per
# request and the mean run time, and their product, the program's BPF
# nanoseconds per request. With several jackdaw binaries the runs
# interleave (a, b, a, b, ...) so machine load touches each alike; the
# statistics add two clock reads per program run, so the absolute figures
# are an upper bound and the comparison is what counts.
# CLOSE=1: a new connection per request (wrk sends Connection: close), for
# what a connection's open and close cost, which keep-alive hides.
# Usage: interact-prog-cost.sh REPS SECONDS JACKDAW [JACKDAW...]
set -euo pipefail
reps=${1:?usage: interact-prog-cost.sh REPS SECONDS JACKDAW [JACKDAW...]}
secs=${2:?usage: interact-prog-cost.sh REPS SECONDS JACKDAW [JACKDAW...]}
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "interact-prog-cost: needs root (eBPF): sudo $0 $*" >&2; exit 2; }
for tool in nginx wrk bpftool jq; do
	command -v $tool >/dev/null || { echo "interact-prog-cost: $tool missing: run scripts/install-deps.sh" >&2; exit 2; }
done
work=$(mktemp -d /tmp/jdw-ia-cost.XXXXXX)
pids=()
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
port=18091
. "$root/scripts/nginx-bench-server.sh"
start_bench_nginx "$work" "$port"
sysctl -qw kernel.bpf_stats_enabled=1

for r in $(seq "$reps"); do
	i=0
	for jd in "$@"; do
		i=$((i + 1))
		bpftool prog show --json | jq -c '[.[].id]' > "$work/old_ids"
		"$jd" interactions --by interaction -o "$work/ia.jdw" --pid "$nginx_master" > /dev/null 2> "$work/err" &
		tracer=$!
		# Its SIGINT handler is in place once it says so.
		for _ in $(seq 300); do grep -q "following interactions" "$work/err" && break; sleep 0.1; done
		sleep 0.5
		# Only this tracer's programs (those loaded since it started):
		# another session's (a test, another engineer's run) may be loaded too.
		progs() {
			bpftool prog show --json | jq -c --slurpfile old "$work/old_ids" '[.[] | select((.name | startswith("ia_")) and
				((.id as $i | $old[0] | index($i)) == null)) | {id, name, run_cnt: (.run_cnt // 0), run_time_ns: (.run_time_ns // 0)}]'
		}
		progs > "$work/before"
		if [ "${CLOSE:-0}" = 1 ]; then
			n=$(wrk -t1 -c10 -d"${secs}s" -H "Connection: close" "http://127.0.0.1:$port/5k.html" | awk '/requests in/ {print $1}')
		else
			n=$(wrk -t1 -c10 -d"${secs}s" "http://127.0.0.1:$port/5k.html" | awk '/requests in/ {print $1}')
		fi
		progs > "$work/after"
		kill -INT "$tracer"
		wait "$tracer" || true
		rm -f "$work/ia.jdw"
		echo "round $r binary $i ($jd): $n requests"
		jq -r --argjson n "$n" --slurpfile b "$work/before" '
			($b[0] | map({key: (.id | tostring), value: .}) | from_entries) as $before
			| .[] | . as $p | ($before[($p.id | tostring)] // {run_cnt: 0, run_time_ns: 0}) as $q
			| ($p.run_cnt - $q.run_cnt) as $c | ($p.run_time_ns - $q.run_time_ns) as $t
			| select($c > 0)
			| "  \($p.name | .[0:22] | . + (" " * (22 - length)))  runs/req \(($c / $n * 100 | round) / 100)  ns/run \(($t / $c) | round)  ns/req \(($t / $n) | round)"' "$work/after"
		jq -r --argjson n "$n" --slurpfile b "$work/before" '
			($b[0] | map({key: (.id | tostring), value: .}) | from_entries) as $before
			| [.[] | . as $p | ($before[($p.id | tostring)] // {run_time_ns: 0}) as $q | ($p.run_time_ns - $q.run_time_ns)] | add
			| "  total BPF ns/request \((. / $n) | round)"' "$work/after"
	done
done
