#!/usr/bin/env bash
# Where full capture's cost goes on nginx (1 worker, keep-alive, a 5 KB
# file) under wrk -t1 -c10. Per round, side by side: throughput untraced,
# under `jackdaw record --pid MASTER` (sched+syscall+block+net, syscalls
# combined: the default) and under the same with --no-combine; the CPU
# ticks of jackdaw's threads and of the nginx worker over each traced load;
# records stored and events per request (dump --summary). A last pass per
# mode runs with kernel.bpf_stats_enabled=1 and reports each BPF program's
# run time per request (the statistics cost two clock reads per program
# run, about 50 ns per run on the 2-vCPU VM: the floor's empty programs
# show it as their own run time; that pass's throughput is not quoted).
# The recorder's own CPU per
# request (every thread of the jackdaw process, from schedstat in ns: on a
# 2-vCPU box it is taken straight out of wrk and nginx) is printed for
# every traced run, the load-insensitive figure beside the BPF time.
# Quote ratios only from a quiet machine: the load average is printed
# before and after.
# The floor, in the same rounds (FLOOR=0 leaves it out): "empty" holds
# programs that return at once on exactly the hooks full capture attaches
# (bpf/bench_floor.bpf.c through BUILD_DIR/bin/bench_floor, tp_btf like
# jackdaw), "check" the same programs doing only the process check every
# jackdaw program starts with. What nginx loses under "empty" is the
# kernel's share (trampolines, program calls, the syscall slow path an
# attached sys_enter/sys_exit forces on every task), unavoidable with these
# hooks; what full capture costs above it is jackdaw's program bodies and
# its recorder. The last lines sum each mode up over the rounds: median
# throughput ratio and nginx worker CPU per request.
# "reject" (with the floor) is `jackdaw record` of an idle process: every
# hook runs jackdaw's programs and every run is rejected (the process
# check, and for packets the filter), which prices the reject path per
# hook. The bpf_stats pass ends with a table per jackdaw mode: per hook,
# runs and ns per run, ns per run above the empty program's, and the split
# of its time between runs that recorded (nginx's: their count is the
# trace's events of that hook) and runs rejected (wrk's and the rest of
# the machine's: the other runs, priced at reject's ns per run).
# With JACKDAW_BASE=/path/to/an/earlier/jackdaw the two jackdaw modes are
# that binary ("base") and BUILD_DIR's ("new"), both with their default
# flags, interleaved in every round: an A/B of a change instead of combined
# against --no-combine.
# Usage: [FLOOR=0] [JACKDAW_BASE=...] capture-cost-nginx.sh BUILD_DIR [REPS] [SECONDS]
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
# the process "reject" traces: it makes no syscall while the load runs
sleep 100000 &
idle=$!
pids+=("$idle")
worker=$nginx_worker
ticks=$(getconf CLK_TCK)
# ticks_of PID -> utime+stime of all its threads
ticks_of() { cat /proc/$1/task/*/stat 2>/dev/null | awk '{c=$0; sub(/.*\) /,"",c); split(c,f," "); t+=f[12]+f[13]} END {print t+0}'; }
# cpu_ns_of PID -> ns on CPU of all its live threads (schedstat: exact, not ticks)
cpu_ns_of() { cat /proc/$1/task/*/schedstat 2>/dev/null | awk '{t+=$1} END {printf "%.0f\n", t}'; }
# load -> "req/s requests wrk_cpu_ns": wrk's CPU from `times` (run in a
# subshell, wrk is its only child), in 10 ms ticks: fine over a whole run
load() {
	wrk -t1 -c10 -d"${secs}s" "http://127.0.0.1:$port/5k.html" > "$work/wrk.out"
	times > "$work/wrk.times"
	awk '/requests in/ {n=$1} /Requests\/sec/ {r=$2} END {printf "%s %s ", r, n}' "$work/wrk.out"
	tail -1 "$work/wrk.times" | awk '{c=0; for (i=1;i<=2;i++) {split($i,t,"m"); sub("s","",t[2]); c+=t[1]*60+t[2]} printf "%.0f\n", c*1e9}'
}
# progs -> "id run_time_ns run_cnt name" per loaded BPF program
progs() { bpftool prog show -j | jq -r '.[] | "\(.id) \(.run_time_ns // 0) \(.run_cnt // 0) \(.name // "?")"'; }
# traced MODE -> "req/s requests jackdaw_ticks worker_ticks jackdaw_cpu_ns worker_cpu_ns wrk_cpu_ns", and leaves the trace in $work/full.jdw
traced() {
	local f=$work/full.jdw
	rm -f "$f"
	case $1 in
	floor_empty) "$bin/bench_floor" empty >"$f" 2>"$work/err" & ;;
	floor_check) "$bin/bench_floor" check "$master" >"$f" 2>"$work/err" & ;;
	reject) "$bin/jackdaw" record -q -o "$f" --pid "$idle" >/dev/null 2>"$work/err" & ;;
	# shellcheck disable=SC2086
	*) "${jdbin[$1]}" record -q -o "$f" --pid "$master" ${flags[$1]} >/dev/null 2>"$work/err" & ;;
	esac
	local jd=$!
	# The trace file appears once the probes are loaded (they attach right
	# after): on a loaded machine that takes longer than any fixed sleep,
	# and load run before it would go untraced.
	for _ in $(seq 300); do [ -s "$f" ] && break; sleep 0.1; done
	[ -s "$f" ] || { echo "capture-cost-nginx: $1 never started: $(head -1 "$work/err")" >&2; exit 1; }
	sleep 1
	# this recording's own programs: the BPF program fds it holds (other
	# sessions on the machine load programs of the same names)
	grep -hs '^prog_id:' /proc/$jd/fdinfo/* | awk '{print $2}' | sort -u > "$work/ids"
	progs > "$work/p0"
	local c0 w0 c1 w1 rf nf wf n0 v0 n1 v1
	c0=$(ticks_of $jd); w0=$(ticks_of $worker); n0=$(cpu_ns_of $jd); v0=$(cpu_ns_of $worker)
	read -r rf nf wf < <(load)
	c1=$(ticks_of $jd); w1=$(ticks_of $worker); n1=$(cpu_ns_of $jd); v1=$(cpu_ns_of $worker)
	progs > "$work/p1"
	kill -INT $jd; wait $jd || true
	echo "$rf $nf $((c1 - c0)) $((w1 - w0)) $((n1 - n0)) $((v1 - v0)) $wf"
}
# cpu_line MODE REQUESTS JD_TICKS WORKER_TICKS JD_NS WORKER_NS WRK_NS
cpu_line() {
	awk -v m="$1" -v n="$2" -v cj="$3" -v cw="$4" -v nj="$5" -v nw="$6" -v nk="$7" -v hz="$ticks" 'BEGIN {
		printf "  %s: recorder CPU %.2f us/request, nginx worker %.2f us/request, wrk %.2f us/request (%d requests; ticks %d / %d at %d/s)\n",
			m, nj / n / 1000, nw / n / 1000, nk / n / 1000, n, cj, cw, hz }'
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
declare -A flags=([combined]="" [separate]="--no-combine" [base]="" [new]="")
declare -A jdbin=([combined]="$bin/jackdaw" [separate]="$bin/jackdaw" [base]="${JACKDAW_BASE:-}" [new]="$bin/jackdaw")
modes=(combined separate)
if [ -n "${JACKDAW_BASE:-}" ]; then
	[ -x "$JACKDAW_BASE" ] || { echo "capture-cost-nginx: JACKDAW_BASE=$JACKDAW_BASE is not an executable" >&2; exit 2; }
	modes=(base new)
fi
if [ "${FLOOR:-1}" != 0 ]; then
	[ -x "$bin/bench_floor" ] || { echo "capture-cost-nginx: $bin/bench_floor missing: build with make" >&2; exit 2; }
	modes=(floor_empty floor_check reject "${modes[@]}")
fi
declare -A ratios=() worker_us=() total_us=()
cpu=""
for r in $(seq "$reps"); do
	v0=$(cpu_ns_of "$worker")
	read -r ru nu wu < <(load)
	v1=$(cpu_ns_of "$worker")
	worker_us[untraced]+="$(echo "($v1 - $v0) / $nu / 1000" | bc -l) "
	total_us[untraced]+="$(echo "($v1 - $v0 + $wu) / $nu / 1000" | bc -l) "
	line="round $r: untraced $ru req/s"
	for m in "${modes[@]}"; do
		read -r rf nf cj cw nj nw wf < <(traced "$m")
		line+="; $m $rf req/s ($(echo "$rf / $ru" | bc -l | cut -c1-5))"
		cpu+="$(cpu_line "$m" "$nf" "$cj" "$cw" "$nj" "$nw" "$wf")\n"
		total_us[$m]+="$(echo "($nj + $nw + $wf) / $nf / 1000" | bc -l) "
		ratios[$m]+="$(echo "$rf / $ru" | bc -l) "
		worker_us[$m]+="$(echo "$nw / $nf / 1000" | bc -l) "
		if [ "$r" = "$reps" ] && [[ $m != floor_* && $m != reject ]]; then
			echo "  $m, last round, per request:"
			per_request "$nf"
		fi
	done
	echo "$line"
	printf "  untraced: nginx worker %.2f us/request, wrk %.2f us/request (%d requests)\n" "$(echo "($v1 - $v0) / $nu / 1000" | bc -l)" "$(echo "$wu / $nu / 1000" | bc -l)" "$nu"
	printf "%b" "$cpu"; cpu=""
done
# median of a list of numbers
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "summary over $reps rounds (median [min-max]); CPU/request is nginx worker + wrk + recorder, and"
echo "its ratio (untraced / mode, medians) the throughput a saturated machine would keep, load aside:"
for m in untraced "${modes[@]}"; do
	[ -n "${worker_us[$m]:-}" ] || continue
	w=$(median <<<"${worker_us[$m]}")
	wr=$(tr ' ' '\n' <<<"${worker_us[$m]}" | grep -v '^$' | sort -g | sed -n '1p;$p' | xargs printf '%.2f-%.2f')
	t=$(median <<<"${total_us[$m]}")
	if [ "$m" = untraced ]; then
		t0=$t
		printf "  %-12s nginx worker %6.2f us/request [%s], CPU %6.2f us/request\n" "$m" "$w" "$wr" "$t"
	else
		rr=$(tr ' ' '\n' <<<"${ratios[$m]}" | grep -v '^$' | sort -g | sed -n '1p;$p' | xargs printf '%.3f-%.3f')
		printf "  %-12s throughput %.3f of untraced [%s], nginx worker %6.2f us/request [%s], CPU %6.2f us/request (ratio %.3f)\n" \
			"$m" "$(median <<<"${ratios[$m]}")" "$rr" "$w" "$wr" "$t" "$(echo "$t0 / $t" | bc -l)"
	fi
done
sysctl -qw kernel.bpf_stats_enabled=1
for m in "${modes[@]}"; do
	read -r rf nf cj cw nj nw wf < <(traced "$m")
	echo "BPF run time per request, $m (bpf_stats_enabled pass, $nf requests; its throughput is not quoted):"
	bpf_split "$nf" | tee "$work/split.$m"
	cpu_line "$m" "$nf" "$cj" "$cw" "$nj" "$nw" "$wf"
	[[ $m == floor_* || $m == reject ]] || per_request "$nf" > "$work/events.$m"
done
sysctl -qw kernel.bpf_stats_enabled="$stats_was"
# hook_table MODE: the per-hook split (see the head of this script)
hook_table() {
	awk -v mode="$1" '
		function hook(n) { sub(/^floor_/, "", n); sub(/_(btf|raw)$/, "", n); return n }
		FILENAME ~ /split.floor_empty$/ && $1 != "total" {e[hook($1)] = $6; next}
		FILENAME ~ /split.reject$/ && $1 != "total" {rj[hook($1)] = $6; next}
		FILENAME ~ /events\./ && NF == 2 {ev[$1] = $2; next}
		FILENAME ~ /split\./ && $1 != "total" && $4 > 0 {h = hook($1); order[++n] = h; req[h] = $2; runs[h] = $4; per[h] = $6}
		END {
			map["sys_enter"] = "sys_enter"; map["sys_exit"] = "sys_exit"; map["net_dev_start_xmit"] = "net_xmit"
			map["netif_receive_skb"] = "net_recv"; map["sched_switch"] = "sched_switch"; map["sched_wakeup"] = "sched_wakeup"
			map["sched_wakeup_new"] = "sched_wakeup_new"; map["sched_process_fork"] = "task_fork"
			map["sched_process_exec"] = "task_exec"; map["sched_process_exit"] = "task_exit"
			map["block_rq_issue"] = "block_issue"; map["block_rq_complete"] = "block_complete"
			printf "per-hook split, %s (ns per request; empty and reject ns per run from their own passes):\n", mode
			printf "    %-20s %7s %6s %6s %6s %6s %6s %8s %8s %8s\n", "hook", "ns/req", "runs", "ns/run", "empty", "above", "reject", "recorded", "rejected", "rej ns"
			for (i = 1; i <= n; i++) {
				h = order[i]; rec = (h in map) ? ev[map[h]] + 0 : 0; if (rec > runs[h]) rec = runs[h]
				rejr = runs[h] - rec; rejns = rejr * rj[h]; if (rejns > req[h]) rejns = req[h]
				printf "    %-20s %7.0f %6.2f %6.0f %6.0f %6.0f %6.0f %8.2f %8.2f %8.0f\n", h, req[h], runs[h], per[h], e[h], per[h] - e[h], rj[h], rec, rejr, rejns
				t += req[h]; te += runs[h] * e[h]; tr += rejns
			}
			printf "    total %.0f ns/request: empty-program share %.0f, above it %.0f; runs that recorded (nginx) %.0f, rejected runs (wrk and others) %.0f\n", t, te, t - te, t - tr, tr
		}' "$work/split.floor_empty" "$work/split.reject" "$work/events.$1" "$work/split.$1"
}
if [ "${FLOOR:-1}" != 0 ]; then
	for m in "${modes[@]}"; do [[ $m == floor_* || $m == reject ]] || hook_table "$m"; done
fi
echo "load after: $(cat /proc/loadavg)"
