// bench_floor: holds bpf/bench_floor.bpf.c attached until SIGINT/SIGTERM,
// for scripts/capture-cost-nginx.sh's floor modes: the hooks full capture
// attaches with empty programs ("empty") or with only the process check
// ("check"), so that a workload's loss under it is the kernel's share of
// full capture's cost. Prints one line once every program is attached (the
// script waits for it), then waits.
#include <bpf/libbpf.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench_floor.skel.h"

namespace {

int Usage() {
  fprintf(stderr,
          "usage: bench_floor empty|check [TGID]\n"
          "  empty  programs that return at once on every hook `jackdaw record` attaches\n"
          "  check  the same, each comparing the current tgid with TGID first\n"
          "Attaches, prints one line, and holds the probes until SIGINT or SIGTERM.\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (strcmp(argv[1], "empty") != 0 && strcmp(argv[1], "check") != 0)) return Usage();
  const bool check = strcmp(argv[1], "check") == 0;
  if (check && argc < 3) return Usage();
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, nullptr);

  jdw_bench_floor_bpf* s = jdw_bench_floor_bpf__open();
  if (!s) {
    fprintf(stderr, "bench_floor: cannot open the BPF object: %s\n", strerror(errno));
    return 1;
  }
  s->rodata->targ_check = check;
  s->rodata->targ_tgid = check ? static_cast<uint32_t>(atoi(argv[2])) : 0;
  // As jackdaw: block_io_start only where the kernel has it.
  if (libbpf_find_vmlinux_btf_id("block_io_start", BPF_TRACE_RAW_TP) < 0)
    bpf_program__set_autoload(s->progs.floor_block_io_start, false);
  if (jdw_bench_floor_bpf__load(s) != 0 || jdw_bench_floor_bpf__attach(s) != 0) {
    fprintf(stderr, "bench_floor: cannot load or attach the probes (run as root): %s\n", strerror(errno));
    jdw_bench_floor_bpf__destroy(s);
    return 1;
  }
  printf("bench_floor: %s probes attached\n", argv[1]);
  fflush(stdout);
  int sig;
  sigwait(&stop, &sig);
  jdw_bench_floor_bpf__destroy(s);
  return 0;
}
