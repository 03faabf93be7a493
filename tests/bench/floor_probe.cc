// bench_floor: holds bpf/bench_floor.bpf.c attached until SIGINT/SIGTERM,
// for scripts/capture-cost-nginx.sh's floor modes: the hooks full capture
// attaches with empty programs ("empty") or with only the process check
// ("check"), so that a workload's loss under it is the kernel's share of
// full capture's cost. Prints one line on stdout once every program is
// attached (the script waits for it), then waits (floor_holder.h).
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_floor.skel.h"
#include "floor_holder.h"

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
  jackdaw::bench::BlockStopSignals();
  jdw_bench_floor_bpf* s = jdw_bench_floor_bpf__open();
  if (!s) {
    fprintf(stderr, "bench_floor: cannot open the BPF object: %s\n", strerror(errno));
    return 1;
  }
  s->rodata->targ_check = check;
  s->rodata->targ_tgid = check ? static_cast<uint32_t>(atoi(argv[2])) : 0;
  jackdaw::bench::SkipIfNoHook(s->progs.floor_block_io_start, "block_io_start");
  if (jdw_bench_floor_bpf__load(s) != 0) {
    fprintf(stderr, "bench_floor: cannot load the probes (run as root): %s\n", strerror(errno));
    jdw_bench_floor_bpf__destroy(s);
    return 1;
  }
  const std::string ready = std::string("bench_floor: ") + argv[1] + " probes attached (%zu, %d failed)";
  const int rc = jackdaw::bench::HoldAttached(s->obj, "bench_floor", stdout, ready.c_str());
  jdw_bench_floor_bpf__destroy(s);
  return rc;
}
