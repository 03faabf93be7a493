// bench_interact_floor: attaches the EMPTY programs of
// bpf/interact_floor.bpf.c on exactly the interact group's hooks and holds
// them until SIGINT/SIGTERM. scripts/bench-interact.sh runs it as its
// "floor" configuration: what being attached costs a request (trampoline,
// bpf_trace_run*, RCU, migrate_disable per firing) before the group's
// programs do anything. With --with-sched it attaches empty sched_switch
// and sched_wakeup programs too: the hooks the group followed serving
// threads with until session 7 ("floor-sched", the old group's floor). Not
// part of jackdaw; the benchmark's tool.
//
// --cost [BLOCKS]: instead, what one firing of an empty program costs, from
// the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID, which other load on
// the machine barely moves): blocks of send+recv of one byte over a
// connected loopback UDP pair -- three firings each (sock_send_length,
// sk_data_ready, sock_recv_length) -- alternately with the socket programs
// detached and attached, so drift touches both alike; the median block of
// each, their difference per firing, and the median of the differences of
// adjacent pairs (robust to drift slower than a pair).
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "floor_holder.h"
#include "interact_floor.skel.h"

namespace {

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// A connected loopback UDP pair: [0] sends to [1] and back.
bool UdpPair(int fds[2]) {
  sockaddr_in a[2]{};
  for (int i = 0; i < 2; ++i) {
    fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    a[i].sin_family = AF_INET;
    a[i].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a[i]);
    if (fds[i] < 0 || bind(fds[i], reinterpret_cast<sockaddr*>(&a[i]), sizeof(a[i])) != 0 ||
        getsockname(fds[i], reinterpret_cast<sockaddr*>(&a[i]), &len) != 0)
      return false;
  }
  return connect(fds[0], reinterpret_cast<sockaddr*>(&a[1]), sizeof(a[1])) == 0 &&
         connect(fds[1], reinterpret_cast<sockaddr*>(&a[0]), sizeof(a[0])) == 0;
}

// CPU ns of one send+recv, median over blocks, detached and attached.
int MeasureCost(jdw_interact_floor_bpf* skel, int blocks) {
  bpf_program* const socket_progs[] = {skel->progs.fl_sock_send_length, skel->progs.fl_sk_data_ready,
                                       skel->progs.fl_sock_recv_length};
  int fds[2];
  if (!UdpPair(fds)) {
    fprintf(stderr, "bench_interact_floor: cannot open a loopback UDP pair\n");
    return 2;
  }
  constexpr int kIters = 20000;
  std::vector<double> off, on;
  char b = 'x';
  for (int blk = 0; blk < 2 * blocks; ++blk) {
    const bool attached = blk % 2 == 1;
    std::vector<bpf_link*> links;
    if (attached)
      for (bpf_program* p : socket_progs) {
        bpf_link* l = bpf_program__attach(p);
        if (!l) {
          fprintf(stderr, "bench_interact_floor: cannot attach %s\n", bpf_program__name(p));
          return 2;
        }
        links.push_back(l);
      }
    const uint64_t t0 = ThreadCpuNs();
    for (int i = 0; i < kIters; ++i) {
      if (send(fds[0], &b, 1, 0) != 1 || recv(fds[1], &b, 1, 0) != 1) {
        fprintf(stderr, "bench_interact_floor: loopback UDP send/recv failed\n");
        return 2;
      }
    }
    const double per = double(ThreadCpuNs() - t0) / kIters;
    (attached ? on : off).push_back(per);
    for (bpf_link* l : links) bpf_link__destroy(l);
  }
  std::vector<double> pair_diff;
  for (size_t i = 0; i < on.size(); ++i) pair_diff.push_back(on[i] - off[i]);
  std::sort(off.begin(), off.end());
  std::sort(on.begin(), on.end());
  std::sort(pair_diff.begin(), pair_diff.end());
  const double m_off = off[off.size() / 2], m_on = on[on.size() / 2];
  printf("send+recv of 1 byte over loopback UDP, thread CPU ns, median of %d blocks of %d: detached %.1f, "
         "attached %.1f (3 empty programs per iteration): %.1f ns per firing; median of pairs %.1f ns per "
         "firing\n",
         blocks, kIters, m_off, m_on, (m_on - m_off) / 3, pair_diff[pair_diff.size() / 2] / 3);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--cost") == 0) {
    jdw_interact_floor_bpf* skel = jdw_interact_floor_bpf::open_and_load();
    if (!skel) {
      fprintf(stderr, "bench_interact_floor: the kernel refused the programs (run as root, on Linux 6.5+)\n");
      return 2;
    }
    const int rc = MeasureCost(skel, argc > 2 ? std::max(1, atoi(argv[2])) : 15);
    jdw_interact_floor_bpf::destroy(skel);
    return rc;
  }
  const bool with_sched = argc > 1 && strcmp(argv[1], "--with-sched") == 0;
  jackdaw::bench::BlockStopSignals();
  jdw_interact_floor_bpf* skel = jdw_interact_floor_bpf::open();
  if (!skel) {
    fprintf(stderr, "bench_interact_floor: cannot open the BPF object: rebuild with make\n");
    return 2;
  }
  // block_io_start is optional in the group (Linux 6.5+): the same here.
  jackdaw::bench::SkipIfNoHook(skel->progs.fl_block_io_start, "block_io_start");
  if (!with_sched) {
    bpf_program__set_autoload(skel->progs.fl_sched_switch, false);
    bpf_program__set_autoload(skel->progs.fl_sched_wakeup, false);
  }
  if (jdw_interact_floor_bpf::load(skel) != 0) {
    fprintf(stderr, "bench_interact_floor: the kernel refused the programs (run as root, on Linux 6.5+)\n");
    jdw_interact_floor_bpf::destroy(skel);
    return 2;
  }
  const int rc =
      jackdaw::bench::HoldAttached(skel->obj, "bench_interact_floor", stderr, "floor attached: %zu programs, %d failed");
  jdw_interact_floor_bpf::destroy(skel);
  return rc;
}
