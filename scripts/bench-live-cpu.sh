#!/usr/bin/env bash
# CPU used by `jackdaw live` itself per 1,000 requests/s of the test server
# (issue 13's benchmark; Magpie's parser: 3.5 % of a CPU at 139 req/s).
# For each jackdaw binary given (e.g. before and after a change), in turn,
# ROUNDS times interleaved: jackdaw-testserver under
# jackdaw-load --rate RATE -c 4 --mix D:1, and `jackdaw live --schema
# tcp-threadpool --pid SERVER --json -` on it. After WARM seconds (probes
# attached, model warmed up), the live process' utime+stime
# (/proc/PID/task/*/schedstat) and its modelled request count (jackdaw ctl status) are
# read, and again SECONDS later: CPU % of one core over that window, and
# that per 1,000 requests/s modelled. Steady state only: start-up, BPF
# loading and the warm-up batch are outside the window.
# Usage: bench-live-cpu.sh BUILD_DIR RATE SECONDS ROUNDS JACKDAW [JACKDAW...]
set -euo pipefail
build=${1:?usage: bench-live-cpu.sh BUILD_DIR RATE SECONDS ROUNDS JACKDAW [JACKDAW...]}
rate=${2:-500}
secs=${3:-10}
rounds=${4:-2}
shift 4
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("$build/bin/jackdaw")
warm=6
[ "$(id -u)" -eq 0 ] || { echo "bench-live-cpu: needs root (eBPF): sudo $0" >&2; exit 2; }
work=$(mktemp -d /tmp/jdw-live-cpu.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# CPU time of every thread of the process in ns (schedstat: exact, where
# /proc/PID/stat counts 10 ms ticks, too coarse for a 1 % load).
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%d\n", s }'; }
requests() { "$1" ctl --session "$2" --json status | sed 's/.*"requests":\([0-9]*\).*/\1/'; }

echo "load $(cut -d' ' -f1-3 /proc/loadavg); rate $rate req/s, window $secs s after $warm s"
printf '%-40s %8s %10s %8s %14s\n' binary "req/s" "cpu s" "core %" "% per 1k req/s"
for round in $(seq 1 "$rounds"); do
	for bin in "${bins[@]}"; do
		"$build/bin/jackdaw-testserver" --port 0 >"$work/server.out" 2>/dev/null &
		server=$!
		pids+=("$server")
		for _ in $(seq 100); do grep -q listening "$work/server.out" && break; sleep 0.1; done
		port=$(sed -n 's/listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/server.out")
		"$bin" live --schema tcp-threadpool --pid "$server" --json - --duration $((warm + secs + 5)) \
			>/dev/null 2>"$work/live.err" &
		live=$!
		pids+=("$live")
		sleep 1
		"$build/bin/jackdaw-load" --url "http://127.0.0.1:$port" -n $((rate * (warm + secs + 4))) \
			--mix D:1 -c 4 --rate "$rate" >/dev/null 2>&1 &
		load=$!
		pids+=("$load")
		sleep "$warm"
		c0=$(cpu_ns "$live"); r0=$(requests "$bin" "$live")
		sleep "$secs"
		c1=$(cpu_ns "$live"); r1=$(requests "$bin" "$live")
		kill "$load" "$live" "$server" 2>/dev/null || true
		wait "$load" "$live" "$server" 2>/dev/null || true
		# A round whose CPU did not move (the process' schedstat not read) or
		# that modelled nothing says so instead of printing 0 % as a figure.
		awk -v b="$bin" -v c0="$c0" -v c1="$c1" -v r0="$r0" -v r1="$r1" -v s="$secs" 'BEGIN {
			cpu = (c1 - c0) / 1e9; rps = (r1 - r0) / s; core = 100 * cpu / s;
			if (cpu <= 0 || rps <= 0) { printf "%-40s %8.1f %10.2f   (round not measured: no CPU or no requests read)\n", b, rps, cpu; exit }
			printf "%-40s %8.1f %10.2f %8.2f %14.2f\n", b, rps, cpu, core, core * 1000 / rps }'
	done
done
