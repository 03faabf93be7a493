// bench_interact_floor: attaches the EMPTY programs of
// bpf/interact_floor.bpf.c on exactly the interact group's hooks and holds
// them until SIGINT/SIGTERM. scripts/bench-interact.sh runs it as its
// "floor" configuration: what being attached costs a request (trampoline,
// bpf_trace_run*, RCU, migrate_disable per firing) before the group's
// programs do anything. With --with-sched it attaches empty sched_switch
// and sched_wakeup programs too: the hooks the group followed serving
// threads with until session 7 ("floor-sched", the old group's floor). Not
// part of jackdaw; the benchmark's tool.
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "interact_floor.skel.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

// The cgroup v2 root, where jackdaw attaches the group's sock_release hook.
int OpenCgroupRoot() {
  FILE* f = fopen("/proc/self/mounts", "re");
  if (!f) return -1;
  char dev[256], dir[4096], type[64];
  std::string root;
  while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3)
    if (strcmp(type, "cgroup2") == 0) {
      root = dir;
      break;
    }
  fclose(f);
  return root.empty() ? -1 : open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_sched = argc > 1 && strcmp(argv[1], "--with-sched") == 0;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  jdw_interact_floor_bpf* skel = jdw_interact_floor_bpf::open();
  if (!skel) {
    fprintf(stderr, "bench_interact_floor: cannot open the BPF object: rebuild with make\n");
    return 2;
  }
  // block_io_start is optional in the group (Linux 6.5+): the same here.
  if (libbpf_find_vmlinux_btf_id("block_io_start", BPF_TRACE_RAW_TP) < 0)
    bpf_program__set_autoload(skel->progs.fl_block_io_start, false);
  if (!with_sched) {
    bpf_program__set_autoload(skel->progs.fl_sched_switch, false);
    bpf_program__set_autoload(skel->progs.fl_sched_wakeup, false);
  }
  if (jdw_interact_floor_bpf::load(skel) != 0) {
    fprintf(stderr, "bench_interact_floor: the kernel refused the programs (run as root, on Linux 6.5+)\n");
    jdw_interact_floor_bpf::destroy(skel);
    return 2;
  }
  std::vector<bpf_link*> links;
  bpf_program* prog;
  int failed = 0;
  bpf_object__for_each_program(prog, skel->obj) {
    if (!bpf_program__autoload(prog)) continue;
    bpf_link* l = nullptr;
    if (strncmp(bpf_program__section_name(prog), "cgroup/", 7) == 0) {
      const int fd = OpenCgroupRoot();
      if (fd >= 0) {
        l = bpf_program__attach_cgroup(prog, fd);
        close(fd);
      }
    } else {
      l = bpf_program__attach(prog);
    }
    if (!l) {
      fprintf(stderr, "bench_interact_floor: cannot attach %s\n", bpf_program__name(prog));
      ++failed;
      continue;
    }
    links.push_back(l);
  }
  // The benchmark waits for this line before it measures.
  fprintf(stderr, "floor attached: %zu programs, %d failed\n", links.size(), failed);
  while (!g_stop) pause();
  for (bpf_link* l : links) bpf_link__destroy(l);
  jdw_interact_floor_bpf::destroy(skel);
  return failed ? 1 : 0;
}
