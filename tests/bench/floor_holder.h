// The driver both floor tools share (bench_floor for full capture's hooks,
// bench_interact_floor for the interact group's): open their skeleton, set
// its constants, load it, attach every program left to autoload — tp_btf
// programs on their tracepoints, cgroup ones at the cgroup v2 root, as
// jackdaw attaches them —, say so in one line, and hold the probes until
// SIGINT or SIGTERM. What each tool measures is in its BPF object; this
// only keeps them attached the same way.
#pragma once

#include <cstdio>

struct bpf_object;
struct bpf_program;

namespace jackdaw::bench {

// Blocks SIGINT and SIGTERM so HoldAttached() can wait for them; call
// before loading, so a signal during the load is not lost.
void BlockStopSignals();

// Turns a program off when the kernel lacks its optional hook
// (block_io_start: Linux 6.5+), as jackdaw does.
void SkipIfNoHook(bpf_program* prog, const char* tracepoint);

// Attaches every autoloaded program of the loaded `obj`, prints
// `ready_line` (a printf format taking the number of programs attached and
// the number that failed) to `ready_to`, waits for SIGINT/SIGTERM and
// detaches. Returns 0, or 1 when a program failed to attach.
int HoldAttached(bpf_object* obj, const char* tool, FILE* ready_to, const char* ready_line);

}  // namespace jackdaw::bench
