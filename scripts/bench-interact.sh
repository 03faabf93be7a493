#!/usr/bin/env bash
# The interact group's cost, side by side in one run (issue 11's benchmark):
# two servers under their load generators on loopback, each measured
#   untraced       no probe
#   interactions   jackdaw interactions --by interaction -o FILE --pid SERVER
#                  (in-kernel summaries: one record per interaction reaches
#                  user space)
#   classes        jackdaw interactions --by class --json - --pid SERVER (per
#                  class and 1 s window: one row per class reaches user space)
#   full           jackdaw record --pid SERVER (sched+syscall+block+net events)
# interleaved (untraced, interactions, classes, full, untraced, ...) for REPS
# rounds, so drifting machine load touches every configuration alike.
# Reports per configuration the median and min-max throughput, the median's
# ratio to untraced, the server's own CPU time per request (every thread,
# from /proc/PID/task/*/schedstat, so the probes' work in its context
# counts) and its ratio, and what reached user space per request: records
# and bytes, each configuration measured by itself (full capture: records
# stored, and the record bytes its recorder received, scraped from its
# metrics endpoint after the load; interactions and classes: the exit line
# of `jackdaw interactions`, which counts the ring's records and bytes, the
# class rows and bytes copied out of the class table -- every possible
# CPU's values -- and the idle sweep's bytes); then what one request costs
# in full capture, per event type. Throughput follows the
# CPU share the server gets, so on a loaded machine it swings more than the
# probes cost; CPU time per request is what the probes add to each request
# and barely depends on that share: untraced / traced CPU per request is the
# throughput a CPU-bound server keeps. The load average is printed per round.
#   nginx (1 worker, keep-alive, a 5 KB file) under wrk -t1 -c10
#   jackdaw-testserver (keep-alive) under jackdaw-load -c 4, mix C:1,D:1
# With JACKDAW_BASE=/path/to/an/earlier/jackdaw, a fifth configuration
# "ia-base" runs that binary's interactions in the same rounds: a change's
# effect side by side with what it changes.
# The floor (CONFIGS="untraced floor-sched floor interactions ..."): EMPTY
# programs on the group's hooks (BUILD_DIR/bin/bench_interact_floor,
# bpf/interact_floor.bpf.c), what being attached costs before the programs
# do anything: "floor" on the hooks the group attaches now, "floor-sched"
# with the sched_switch and sched_wakeup hooks it attached until session 7.
# CONFIGS and SERVERS (nginx testserver) choose what runs, in that order;
# the records table needs "full" among them.
# Usage: [CONFIGS=...] [SERVERS=...] bench-interact.sh BUILD_DIR [REPS] [SECONDS]
set -euo pipefail
build=${1:?usage: bench-interact.sh BUILD_DIR [REPS] [SECONDS]}
reps=${2:-3}
secs=${3:-5}
bin=$build/bin
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/tests/results/interact-bench.txt
work=$(mktemp -d /tmp/jdw-ia-bench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

for tool in nginx wrk; do
	command -v $tool >/dev/null || { echo "bench-interact: $tool missing: run scripts/install-deps.sh" >&2; exit 2; }
done
load0=$(cut -d' ' -f1-3 /proc/loadavg)
[ "$(id -u)" -eq 0 ] || { echo "bench-interact: needs root (eBPF): sudo $0 $*" >&2; exit 2; }

# ---- nginx
port=18089
. "$root/scripts/nginx-bench-server.sh"
start_bench_nginx "$work" "$port"

# ---- jackdaw-testserver
"$bin/jackdaw-testserver" --port 0 --keepalive --workers 4 > "$work/ts.out" &
ts=$!
pids+=($ts)
for _ in $(seq 50); do grep -q listening "$work/ts.out" && break; sleep 0.1; done
ts_port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/ts.out")

# run_load NAME -> prints "requests/s requests"
run_load() {
	case $1 in
	nginx) wrk -t1 -c10 -d"${secs}s" "http://127.0.0.1:$port/5k.html" |
		awk '/requests in/ {n=$1} /Requests\/sec/ {r=$2} END {print r, n}' ;;
	testserver) "$bin/jackdaw-load" --url "http://127.0.0.1:$ts_port" -n $((secs * 15000)) -c 4 --keepalive \
		--mix C:1,D:1 | sed -n 's/.*requests: \([0-9]*\) .*throughput: \([0-9.]*\) req\/s.*/\2 \1/p' ;;
	esac
}

# cpu_ns PID -> on-CPU nanoseconds of every thread of the process so far
cpu_ns() {
	local t=0 ns f
	for f in /proc/"$1"/task/*/schedstat; do
		read -r ns _ < "$f" 2>/dev/null && t=$((t + ns))
	done
	echo $t
}

# scrape_raw_bytes ERRFILE -> record bytes a `jackdaw record --metrics` has
# received so far (0 when its endpoint cannot be read)
scrape_raw_bytes() {
	local addr host port
	addr=$(sed -n 's|.*Prometheus metrics at http://\([^/]*\)/metrics.*|\1|p' "$1" | head -1)
	[ -n "$addr" ] || { echo 0; return; }
	host=${addr%:*}; port=${addr##*:}
	{
		exec 3<>"/dev/tcp/$host/$port" && printf 'GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n' "$addr" >&3 &&
			awk '/^jackdaw_record_bytes_total\{stage="raw"\}/ {printf "%.0f\n", $2}' <&3
		exec 3<&-
	} 2>/dev/null || true
}

# to_user ERRFILE -> "records bytes" from the exit line of jackdaw
# interactions (ring records + class rows; their bytes + the sweep's), or
# nothing from a binary that does not print it
to_user() {
	sed -n 's/.*to user space: \([0-9]*\) records (\([0-9]*\) bytes) through the rings, \([0-9]*\) class rows (\([0-9]*\) bytes) and \([0-9]*\) bytes of idle sweep.*/\1 \2 \3 \4 \5/p' "$1" |
		awk '{print $1 + $3, $2 + $4 + $5}'
}

# measure SERVER CONFIG -> "rate requests records bytes cpu_ns_per_request"
measure() {
	local server=$1 config=$2 target tracer="" rate n records=0 bytes=0 f="" spid c0 c1
	if [ "$server" = nginx ]; then target="--pid $nginx_master"; spid=$nginx_worker; else target="--pid $ts"; spid=$ts; fi
	case $config in
	untraced) ;;
	floor | floor-sched)
		local arg=""
		[ "$config" = floor-sched ] && arg=--with-sched
		"$bin/bench_interact_floor" $arg 2> "$work/tracer.err" &
		tracer=$!
		for _ in $(seq 300); do grep -q "floor attached" "$work/tracer.err" && break; sleep 0.1; done ;;
	interactions | ia-base)
		f=$work/ia.jdw
		local jd=$bin/jackdaw
		[ "$config" = ia-base ] && jd=$JACKDAW_BASE
		"$jd" interactions --by interaction -o "$f" $target > /dev/null 2> "$work/tracer.err" &
		tracer=$! ;;
	classes)
		f=$work/classes.json
		"$bin/jackdaw" interactions --by class --json - --class-window 1 $target > "$f" 2> "$work/tracer.err" &
		tracer=$! ;;
	full)
		f=$work/full.jdw
		"$bin/jackdaw" record -q -o "$f" --metrics 127.0.0.1:0 $target > /dev/null 2> "$work/tracer.err" &
		tracer=$! ;;
	esac
	# The interactions commands install their SIGINT handler once they say
	# "following interactions" (a signal before that is lost).
	if [ "$config" = interactions ] || [ "$config" = ia-base ] || [ "$config" = classes ]; then
		for _ in $(seq 300); do grep -q "following interactions" "$work/tracer.err" && break; sleep 0.1; done
	fi
	[ -n "$tracer" ] && sleep 1.5
	c0=$(cpu_ns "$spid")
	read -r rate n < <(run_load "$server")
	c1=$(cpu_ns "$spid")
	if [ -n "$tracer" ] && [ "${config#floor}" != "$config" ]; then
		kill -INT "$tracer" 2>/dev/null || true
		wait "$tracer" || echo "bench-interact: $(tail -1 "$work/tracer.err")" >&2
	elif [ -n "$tracer" ]; then
		[ "$config" = full ] && bytes=$(scrape_raw_bytes "$work/tracer.err")
		if ! kill -INT "$tracer" 2>/dev/null; then
			echo "bench-interact: the $config tracer of $server ended early: $(tail -1 "$work/tracer.err")" >&2
		fi
		wait "$tracer" || true
		case $config in
		classes) read -r records bytes < <(to_user "$work/tracer.err"; echo 0 0) ;;
		*)
			"$bin/jackdaw" dump "$f" --summary > "$work/$server.$config.summary" 2>/dev/null || true
			# Records as they crossed the rings: a combined syscall
			# record is one ("stored:"), though it stands for two events.
			records=$(awk '/^stored:/ {print $2; exit} /^events:/ {e=$2} END {if (e != "") print e}' \
				"$work/$server.$config.summary" | head -1)
			[ "$config" = full ] || read -r _ bytes < <(to_user "$work/tracer.err"; echo 0 0) ;;
		esac
		rm -f "$f"
	fi
	echo "$rate $n ${records:-0} ${bytes:-0} $(( (c1 - c0) / (n > 0 ? n : 1) ))"
}

# stats "v1 v2 ..." -> "median min max"
stats() {
	tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {
		m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; print m, v[1], v[NR]}'
}

declare -A rates cpus sum_rec sum_bytes sum_req last_req
read -r -a servers <<< "${SERVERS:-nginx testserver}"
read -r -a configs <<< "${CONFIGS:-untraced interactions classes full}"
[ -n "${JACKDAW_BASE:-}" ] && [ -z "${CONFIGS:-}" ] && configs=(untraced ia-base interactions classes full)
for c in "${configs[@]}"; do
	case $c in
	floor*) [ -x "$bin/bench_interact_floor" ] ||
		{ echo "bench-interact: $bin/bench_interact_floor missing: build with make" >&2; exit 2; } ;;
	ia-base) [ -x "${JACKDAW_BASE:-}" ] || { echo "bench-interact: ia-base needs JACKDAW_BASE=/path/to/jackdaw" >&2; exit 2; } ;;
	esac
done
for r in $(seq "$reps"); do
	for s in "${servers[@]}"; do
		for c in "${configs[@]}"; do
			read -r rate n rec byt cpu < <(measure "$s" "$c")
			echo "round $r $s $c: $rate req/s, $n requests, server CPU $cpu ns/request, $rec records and $byt bytes to user space (load $(cut -d' ' -f1 /proc/loadavg))"
			rates[$s.$c]="${rates[$s.$c]:-} $rate"
			cpus[$s.$c]="${cpus[$s.$c]:-} $cpu"
			sum_req[$s.$c]=$(( ${sum_req[$s.$c]:-0} + n ))
			last_req[$s.$c]=$n
			sum_rec[$s.$c]=$(( ${sum_rec[$s.$c]:-0} + rec ))
			sum_bytes[$s.$c]=$(( ${sum_bytes[$s.$c]:-0} + byt ))
		done
	done
done

{
	echo "interact benchmark: $(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, load average before/after: $load0 / $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "reps=$reps interleaved, ${secs}s each; nginx 1 worker keep-alive 5 KB under wrk -t1 -c10; testserver keep-alive under jackdaw-load -c 4 C:1,D:1"
	echo "req/s: median (min-max) over the rounds; vs untraced: median / untraced median;"
	echo "cpu/req: the server's CPU ns per request, median over the rounds; kept: untraced cpu/req / this"
	printf "%-11s %-13s %10s %21s %11s %8s %6s\n" server config "req/s" "(min-max)" "vs untraced" "cpu/req" "kept"
	for s in "${servers[@]}"; do
		read -r base _ _ < <(stats "${rates[$s.untraced]}")
		read -r cbase _ _ < <(stats "${cpus[$s.untraced]}")
		for c in "${configs[@]}"; do
			read -r med lo hi < <(stats "${rates[$s.$c]}")
			read -r cmed _ _ < <(stats "${cpus[$s.$c]}")
			printf "%-11s %-13s %10.1f %10.1f-%-10.1f %11.3f %8d %6.3f\n" "$s" "$c" "$med" "$lo" "$hi" \
				"$(echo "$med / $base" | bc -l)" "$cmed" "$(echo "$cbase / $cmed" | bc -l)"
		done
	done
	[[ " ${configs[*]} " == *" full "* ]] || exit 0
	echo
	echo "what reaches user space, all rounds: records (interactions: records through the ring; classes: class"
	echo "rows; full: records stored, a combined syscall one) and bytes (full: record bytes the recorder received;"
	echo "interactions and classes: ring records, class rows with every possible CPU's values as the kernel copies"
	echo "them, and the idle sweep's map reads), per request served, and full capture's per request over this one's"
	printf "%-11s %-13s %12s %12s %10s %12s %10s %10s\n" server config records requests "rec/req" "bytes/req" \
		"full/this" "(bytes)"
	for s in "${servers[@]}"; do
		full_rec=$(echo "${sum_rec[$s.full]} / ${sum_req[$s.full]}" | bc -l)
		full_byt=$(echo "${sum_bytes[$s.full]} / ${sum_req[$s.full]}" | bc -l)
		for c in "${configs[@]}"; do
			[ "$c" = untraced ] && continue
			rec=${sum_rec[$s.$c]}
			per=$(echo "$rec / ${sum_req[$s.$c]}" | bc -l)
			bper=$(echo "${sum_bytes[$s.$c]} / ${sum_req[$s.$c]}" | bc -l)
			fewer="-"; fewer_b="-"
			[ "$rec" -gt 0 ] && fewer=$(printf '%.1fx' "$(echo "$full_rec / $per" | bc -l)")
			[ "${sum_bytes[$s.$c]}" -gt 0 ] && fewer_b=$(printf '%.1fx' "$(echo "$full_byt / $bper" | bc -l)")
			printf "%-11s %-13s %12d %12d %10.4f %12.2f %10s %10s\n" "$s" "$c" "$rec" "${sum_req[$s.$c]}" "$per" "$bper" \
				"$fewer" "$fewer_b"
		done
	done
	echo
	echo "full capture, last round: records per request by event type"
	for s in "${servers[@]}"; do
		n=${last_req[$s.full]}
		awk -v s="$s" -v n="$n" '/^type/ {on=1; next} on && NF==2 {printf "  %-11s %-18s %8.2f\n", s, $1, $2/n} on && NF!=2 {on=0}' \
			"$work/$s.full.summary"
	done
} | tee "$out"
