#include "floor_holder.h"

#include <bpf/libbpf.h>
#include <signal.h>

#include <cstring>
#include <string>
#include <vector>

#include "capture/session.h"

namespace jackdaw::bench {
namespace {

sigset_t StopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  return stop;
}

}  // namespace

void BlockStopSignals() {
  const sigset_t stop = StopSignals();
  sigprocmask(SIG_BLOCK, &stop, nullptr);
}

void SkipIfNoHook(bpf_program* prog, const char* tracepoint) {
  if (libbpf_find_vmlinux_btf_id(tracepoint, BPF_TRACE_RAW_TP) < 0) bpf_program__set_autoload(prog, false);
}

int HoldAttached(bpf_object* obj, const char* tool, FILE* ready_to, const char* ready_line) {
  std::vector<bpf_link*> links;
  int failed = 0;
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    if (!bpf_program__autoload(prog)) continue;
    bpf_link* l = strncmp(bpf_program__section_name(prog), "cgroup/", 7) == 0 ? capture::AttachToCgroupRoot(prog)
                                                                               : bpf_program__attach(prog);
    if (!l) {
      fprintf(stderr, "%s: cannot attach %s (run as root): %s\n", tool, bpf_program__name(prog), strerror(errno));
      ++failed;
      continue;
    }
    links.push_back(l);
  }
  // The benchmark scripts wait for this line before they measure.
  fprintf(ready_to, ready_line, links.size(), failed);
  fputc('\n', ready_to);
  fflush(ready_to);
  const sigset_t stop = StopSignals();
  int sig;
  sigwait(&stop, &sig);
  for (bpf_link* l : links) bpf_link__destroy(l);
  return failed ? 1 : 0;
}

}  // namespace jackdaw::bench
