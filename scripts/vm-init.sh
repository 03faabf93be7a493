#!/bin/sh
# Runs as PID 1's script inside the vm-test VM (scripts/vm-test.sh). Every
# result line starts with VMTEST; the last one is "VMTEST RESULT: PASS|FAIL".
J=/jackdaw
fails=0
say() { echo "VMTEST [$(cut -d" " -f1 /proc/uptime)s] $*"; }
say_each() { cat "$@" | while IFS= read -r l; do say "$l"; done; }
fail() { say "FAIL $*"; fails=$((fails + 1)); }
finish() {
	if [ "$fails" -eq 0 ]; then say "RESULT: PASS"; else say "RESULT: FAIL ($fails failed)"; fi
	sync
	poweroff -f
}

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ip link set lo up
echo 0 > /proc/sys/kernel/printk_ratelimit 2>/dev/null
say "kernel $(uname -r), $(nproc) CPUs"

for ko in $(cat /drivers/order); do insmod /drivers/$ko; done
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 0.2; done

# The known workload of the capture tests, minus O_DIRECT (no disk here).
WORKLOAD="$J/jackdaw-workload --getppid 2000 --tcp 4096 16384 --pipe-rounds 100"

insmod $J/jackdaw.ko || { fail "insmod jackdaw.ko: $(dmesg | tail -n 3)"; finish; }
[ -c /dev/jackdaw ] || fail "/dev/jackdaw did not appear after insmod"

# 1. Both backends on the same kernel and workload.
if $J/jackdaw record --backend bpf -q -o /tmp/bpf.jdw -- $WORKLOAD >/tmp/bpf.out 2>/tmp/bpf.err; then
	bpf_ok=1
else
	bpf_ok=0
	fail "eBPF backend cannot record in this kernel, so the backends cannot be compared: $(tail -n 2 /tmp/bpf.err)"
fi
if $J/jackdaw record --backend kmod -q -o /tmp/kmod.jdw -- $WORKLOAD >/tmp/kmod.out 2>/tmp/kmod.err; then
	say "PASS record --backend kmod"
else
	fail "record --backend kmod: $(tail -n 2 /tmp/kmod.err)"
fi
if [ $bpf_ok = 1 ] && [ -s /tmp/kmod.jdw ]; then
	$J/kmod_vm_check compare /tmp/bpf.jdw /tmp/kmod.jdw | say_each > /tmp/cmp.txt
	cat /tmp/cmp.txt
	grep -q "] PASS" /tmp/cmp.txt || fails=$((fails + 1))
fi
# 1b. The block group: direct reads of the virtio disk, both backends.
if [ -b /dev/vda ]; then
	DD="dd if=/dev/vda of=/dev/null bs=4096 count=64 iflag=direct"
	$J/jackdaw record --backend kmod --probes block -q -o /tmp/blk-kmod.jdw -- $DD 2>/tmp/blk-kmod.err >/dev/null ||
		fail "record block with kmod: $(tail -n 2 /tmp/blk-kmod.err)"
	$J/kmod_vm_check block /tmp/blk-kmod.jdw 262144 > /tmp/blk.txt 2>&1
	say_each /tmp/blk.txt
	grep -q "^PASS" /tmp/blk.txt || fails=$((fails + 1))
	if $J/jackdaw record --backend bpf --probes block -q -o /tmp/blk-bpf.jdw -- $DD 2>/tmp/blk-bpf.err >/dev/null; then
		$J/kmod_vm_check compare-block /tmp/blk-bpf.jdw /tmp/blk-kmod.jdw > /tmp/blk.txt 2>&1
		say_each /tmp/blk.txt
		grep -q "^PASS" /tmp/blk.txt || fails=$((fails + 1))
	else
		# Not the module's failure, but never silent: say exactly why.
		say "UNTESTED block group comparison: the eBPF block group does not load on $(uname -r): $(tail -n 1 /tmp/blk-bpf.err)"
		$J/jackdaw record --backend bpf --probes block -v -q -o /tmp/blk-bpf.jdw -- true 2>&1 |
			grep -iE "invalid|error|unknown|failed|R[0-9]" | tail -n 6 | say_each
	fi
else
	fail "no /dev/vda: the virtio disk did not appear, the block group cannot be compared"
fi
$J/jackdaw record --backend auto -o /tmp/auto.jdw --duration 0.2 2>/tmp/auto.err >/dev/null
if grep -q "backend: bpf (auto" /tmp/auto.err; then say "PASS auto picks eBPF and says so"
else fail "auto: $(cat /tmp/auto.err | head -n 3)"; fi

# 2. Control and safety.
for t in ioctl nocap; do
	$J/kmod_vm_check $t > /tmp/$t.txt 2>&1
	say_each /tmp/$t.txt
	grep -q "^PASS" /tmp/$t.txt || fails=$((fails + 1))
done
# Load for what follows: processes forking, piping and calling getppid.
load() { while :; do $J/jackdaw-workload --getppid 500 --pipe-rounds 50 >/dev/null 2>&1; done; }
load & LOAD=$!
$J/kmod_vm_check torn 3 > /tmp/torn.txt 2>&1
say_each /tmp/torn.txt
grep -q "^PASS" /tmp/torn.txt || fails=$((fails + 1))

# 3. Load, capture, unload N times with the load running (jdw_cycles= on
# the kernel command line, 20 by default; `make test` asks for 1, see
# tests/CMakeLists.txt).
want=$(sed -n 's/.*jdw_cycles=\([0-9]*\).*/\1/p' /proc/cmdline)
want=${want:-20}
cycles=0
rmmod jackdaw || fail "rmmod after the tests"
for i in $(seq "$want"); do
	insmod $J/jackdaw.ko || { fail "insmod #$i"; break; }
	$J/kmod_vm_check cycle 100 >/tmp/cycle.txt 2>&1 || { fail "session #$i: $(cat /tmp/cycle.txt)"; break; }
	rmmod jackdaw || { fail "rmmod #$i under load"; break; }
	cycles=$i
	[ $i = 1 ] && say "cycle 1 done"
done
kill $LOAD 2>/dev/null
wait $LOAD 2>/dev/null
[ "$cycles" = "$want" ] && say "PASS load/capture/unload $want times under load"
if dmesg | grep -E "WARNING:|BUG:|Oops|KASAN|UBSAN|general protection|Call Trace|refcount_t|list_del corruption" > /tmp/bad.txt; then
	fail "kernel log reports a problem: $(head -n 5 /tmp/bad.txt)"
else
	say "PASS dmesg has no WARN/BUG/Oops after the cycles"
fi

# 4. Benchmark: added cost per syscall event (enter + exit of getppid),
# module vs eBPF, side by side; TCG makes absolute times meaningless.
insmod $J/jackdaw.ko
N=20000
base=0; bpf=0; kmod=0
for r in 1 2; do
	a=$($J/kmod_vm_check loop $N)
	b=$($J/jackdaw record --backend bpf --probes syscall -q -o /tmp/bb.jdw -- $J/kmod_vm_check loop $N 2>/dev/null)
	k=$($J/jackdaw record --backend kmod --probes syscall -q -o /tmp/kb.jdw -- $J/kmod_vm_check loop $N 2>/dev/null)
	case "$a$b$k" in *[!0-9]*|"") say "BENCH round $r failed (untraced '$a' bpf '$b' kmod '$k')"; continue ;; esac
	base=$((base + a))
	bpf=$((bpf + b))
	kmod=$((kmod + k))
done
if [ "$bpf" -gt "$base" ] && [ "$kmod" -gt 0 ]; then
	say "BENCH added cost per syscall event, kmod/bpf = $(awk -v a=$base -v b=$bpf -v k=$kmod 'BEGIN{printf "%.2f", (k-a)/(b-a)}') (2x$N getppid; ns/call untraced $((base / 2 / N)), bpf $((bpf / 2 / N)), kmod $((kmod / 2 / N)) under TCG)"
else
	say "BENCH not measured (bpf $bpf kmod $kmod base $base)"
fi
rmmod jackdaw
finish
