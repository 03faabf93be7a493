// kmod_vm_check: the checks `make vm-test` runs inside the VM, where
// jackdaw.ko can be loaded (scripts/vm-test.sh drives it). Each mode prints
// "PASS <what>" or "FAIL <what>: <why>" and exits non-zero on failure.
//
//   compare BPF.jdw KMOD.jdw  both backends recorded the known workload:
//                             the same deterministic events, counts, bytes
//   compare-block BPF KMOD    the same for direct reads of a disk
//   block KMOD.jdw BYTES      one trace of the disk reads: BYTES read, issue times
//   ioctl                     bad ioctl arguments: EINVAL, state unchanged
//   nocap                     opening /dev/jackdaw without CAP_SYS_ADMIN fails
//   torn SECONDS              a 4 KiB ring wrapping under load: every record
//                             read is whole (type, size, cpu, time order)
//   cycle MS                  one session with every group on for MS ms
//   loop N                    N getppid() calls in 100 batches; prints the
//                             fastest batch's ns per call
//   close-race SECONDS        threads close a socket fd while others read,
//                             write and connect it (run it traced by kmod)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture/kmod_ring.h"
#include "jackdaw/kmod.h"
#include "trace/trace_reader.h"

namespace {

using jackdaw::trace::TraceReader;

constexpr int kNrFutex = SYS_futex;

int Fail(const std::string& what, const std::string& why) {
  printf("FAIL %s: %s\n", what.c_str(), why.c_str());
  fflush(stdout);
  return 1;
}

int Pass(const std::string& what) {
  printf("PASS %s\n", what.c_str());
  fflush(stdout);
  return 0;
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

template <typename T>
const T& Body(const jdw_record_header& h) {
  return *reinterpret_cast<const T*>(&h + 1);
}

// What the known workload does deterministically, whatever the scheduler
// does: its syscalls by number and object kind (futex excepted: a thread
// only calls it when a lock or join was contended), its task lifecycle, its
// sockets and the TCP payload it moved. Each key: {records, record bytes}.
// Events whose counts depend on scheduling (context switches, wakeups)
// land in *varying instead: each backend must have some, not the same number.
std::map<std::string, std::pair<uint64_t, uint64_t>> Profile(const TraceReader& r, std::string* err,
                                                             std::map<std::string, uint64_t>* varying = nullptr) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> p;
  auto add = [&](const std::string& k, uint64_t bytes) {
    p[k].first++;
    p[k].second += bytes;
  };
  r.ForEachRecord([&](const jdw_record_header& h) {
    switch (h.type) {
      case JDW_EVENT_SYS_ENTER: {
        const auto& b = Body<jdw_sys_enter>(h);
        if (b.nr == kNrFutex) break;  // waits and wakes only when contended
        add("sys_enter nr=" + std::to_string(b.nr) + " kind=" + std::to_string(b.obj_kind), h.size);
        break;
      }
      case JDW_EVENT_SYS_EXIT: {
        const auto& b = Body<jdw_sys_exit>(h);
        if (b.nr == kNrFutex) break;
        add("sys_exit nr=" + std::to_string(b.nr) + " kind=" + std::to_string(b.obj_kind), h.size);
        break;
      }
      case JDW_EVENT_TASK_FORK: add("task_fork", h.size); break;
      case JDW_EVENT_TASK_EXEC: add("task_exec", h.size); break;
      case JDW_EVENT_TASK_EXIT: add("task_exit", h.size); break;
      case JDW_EVENT_SOCK_INFO: add("sock_info", h.size); break;
      case JDW_EVENT_BLOCK_ISSUE: {
        add("block_issue", h.size);
        p["block bytes issued"].second += Body<jdw_block_issue>(h).bytes;
        break;
      }
      case JDW_EVENT_BLOCK_COMPLETE: {
        const auto& b = Body<jdw_block_complete>(h);
        add("block_complete", h.size);
        p["block bytes completed"].second += b.bytes;
        if (b.issue_ts == 0 || b.issue_ts > h.ts) *err = "a block completion without its issue time";
        break;
      }
      case JDW_EVENT_NET_XMIT:
      case JDW_EVENT_NET_RECV: {
        // Packet counts vary with TCP's acks and coalescing; the payload
        // each way does not.
        const auto& b = Body<jdw_net_packet>(h);
        const bool sent = h.type == JDW_EVENT_NET_XMIT;
        if (b.protocol == 6) p[sent ? "tcp payload bytes sent" : "tcp payload bytes received"].second += b.payload_len;
        if (varying) (*varying)[sent ? "net_xmit" : "net_recv"]++;
        break;
      }
      case JDW_EVENT_SCHED_SWITCH:
      case JDW_EVENT_SCHED_WAKEUP:
      case JDW_EVENT_SCHED_WAKEUP_NEW:
        if (varying) (*varying)[h.type == JDW_EVENT_SCHED_SWITCH ? "sched_switch" : "sched_wakeup"]++;
        break;
      default:
        *err = "unexpected record type " + std::to_string(h.type);
    }
  });
  return p;
}

int Compare(const char* bpf_path, const char* kmod_path, const char* must_have,
            const std::vector<const char*>& varying_needed) {
  auto a = TraceReader::Open(bpf_path);
  if (!a.ok()) return Fail("compare", a.status().message());
  auto b = TraceReader::Open(kmod_path);
  if (!b.ok()) return Fail("compare", b.status().message());
  const auto& ma = (*a)->meta();
  const auto& mb = (*b)->meta();
  if (ma.backend != "bpf" || mb.backend != "kmod")
    return Fail("compare", "backends are " + ma.backend + " and " + mb.backend + ", not bpf and kmod");
  const auto hb = nlohmann::json::parse(mb.header_json);
  if (hb.value("timebase", "") != "tsc" || hb.value("clock_source", "").find("TSC") == std::string::npos)
    return Fail("compare", "the kmod trace's header does not note the TSC clock source");
  if (ma.losses.total() || mb.losses.total())
    return Fail("compare", "records lost (bpf " + std::to_string(ma.losses.total()) + ", kmod " +
                               std::to_string(mb.losses.total()) + ")");
  std::string err;
  std::map<std::string, uint64_t> va, vb;
  auto pa = Profile(**a, &err, &va);
  auto pb = Profile(**b, &err, &vb);
  if (!err.empty()) return Fail("compare", err);
  std::string missing;
  for (const char* k : varying_needed) {
    printf("  %-32s bpf %llu kmod %llu (scheduling-dependent: both must have some)\n", k,
           (unsigned long long)va[k], (unsigned long long)vb[k]);
    if (!va[k] || !vb[k]) missing += std::string(missing.empty() ? "" : ", ") + k;
  }
  bool same = pa == pb;
  uint64_t ta = 0, tb = 0;
  for (auto& [k, v] : pa) ta += v.second;
  for (auto& [k, v] : pb) tb += v.second;
  for (auto& [k, v] : pa) {
    auto it = pb.find(k);
    if (it == pb.end() || it->second != v)
      printf("  differs: %-32s bpf %llu/%lluB kmod %llu/%lluB\n", k.c_str(), (unsigned long long)v.first,
             (unsigned long long)v.second, it == pb.end() ? 0ull : (unsigned long long)it->second.first,
             it == pb.end() ? 0ull : (unsigned long long)it->second.second);
  }
  for (auto& [k, v] : pb)
    if (!pa.count(k))
      printf("  differs: %-32s bpf absent kmod %llu/%lluB\n", k.c_str(), (unsigned long long)v.first,
             (unsigned long long)v.second);
  printf("  %zu event kinds, record bytes bpf %llu kmod %llu; all records bpf %llu kmod %llu\n", pa.size(),
         (unsigned long long)ta, (unsigned long long)tb, (unsigned long long)ma.records_written,
         (unsigned long long)mb.records_written);
  if (!pa.count(must_have) || pa[must_have].second == 0)
    return Fail("compare", std::string("the bpf trace lacks the workload's ") + must_have);
  if (!missing.empty()) return Fail("compare", "a backend recorded none of: " + missing);
  return same ? Pass(std::string("compare: both backends captured the same events, counts and bytes (") +
                     must_have + ")")
              : Fail("compare", "the backends disagree (see above)");
}

// One backend's trace of the disk reads alone: every read issued and
// completed, with its issue time.
int BlockAlone(const char* path, uint64_t min_bytes) {
  auto t = TraceReader::Open(path);
  if (!t.ok()) return Fail("block", t.status().message());
  std::string err;
  auto p = Profile(**t, &err);
  if (!err.empty()) return Fail("block", err);
  const uint64_t issued = p["block bytes issued"].second, done = p["block bytes completed"].second;
  printf("  %s: %llu issues, %llu completions, %llu bytes completed\n", (*t)->meta().backend.c_str(),
         (unsigned long long)p["block_issue"].first, (unsigned long long)p["block_complete"].first,
         (unsigned long long)done);
  if (done < min_bytes || issued < min_bytes)
    return Fail("block", "fewer bytes than the reads asked for (" + std::to_string(min_bytes) + ")");
  return Pass("block: the module records every direct read with its issue time");
}

int OpenDev() { return open(JDW_KMOD_DEVICE, O_RDONLY | O_CLOEXEC); }

int Setup(int fd, uint32_t ring, jdw_kmod_setup* out) {
  jdw_kmod_setup su{JDW_ABI_VERSION, ring, 0, 0};
  int rc = ioctl(fd, JDW_IOC_SETUP, &su);
  if (out) *out = su;
  return rc;
}

int Ioctl() {
  int fd = OpenDev();
  if (fd < 0) return Fail("ioctl", std::string("open: ") + strerror(errno));
  int bad = 0;
  auto expect_einval = [&](const char* what, int rc) {
    if (rc == 0 || errno != EINVAL) {
      printf("  %s: returned %d errno %s, expected EINVAL\n", what, rc, strerror(errno));
      ++bad;
    }
  };
  uint32_t g = JDW_GROUP_SCHED;
  expect_einval("enable before setup", ioctl(fd, JDW_IOC_ENABLE, &g));
  jdw_kmod_setup su{JDW_ABI_VERSION + 1, 1 << 16, 0, 0};
  expect_einval("setup with another ABI", ioctl(fd, JDW_IOC_SETUP, &su));
  su = {JDW_ABI_VERSION, 12345, 0, 0};
  expect_einval("setup with a ring not a power of two", ioctl(fd, JDW_IOC_SETUP, &su));
  su = {JDW_ABI_VERSION, 1024, 0, 0};
  expect_einval("setup with a ring below 4K", ioctl(fd, JDW_IOC_SETUP, &su));
  if (Setup(fd, 1 << 16, &su) != 0) return Fail("ioctl", std::string("setup: ") + strerror(errno));
  expect_einval("second setup", Setup(fd, 1 << 16, nullptr));
  for (uint32_t bad_group : {uint32_t(JDW_GROUP_APP), uint32_t(JDW_GROUP_INTERACT), 99u, 0xffffffffu})
    expect_einval("enable of an unknown group", ioctl(fd, JDW_IOC_ENABLE, &bad_group));
  uint32_t zero = 0;
  expect_einval("tgid 0", ioctl(fd, JDW_IOC_ADD_TGID, &zero));
  jdw_kmod_filter fl{};
  fl.filter_flags = 0x80;
  expect_einval("unknown filter flag", ioctl(fd, JDW_IOC_SET_FILTER, &fl));
  fl = {};
  fl.reserved = 1;
  expect_einval("filter reserved not 0", ioctl(fd, JDW_IOC_SET_FILTER, &fl));
  jdw_kmod_consume c{su.ncpus, 0, 0};
  expect_einval("consume on a cpu out of range", ioctl(fd, JDW_IOC_CONSUME, &c));
  c = {0, 0, 4};
  expect_einval("consume unaligned", ioctl(fd, JDW_IOC_CONSUME, &c));
  c = {0, 0, 1ull << 40};
  expect_einval("consume past head", ioctl(fd, JDW_IOC_CONSUME, &c));
  // Nothing changed: no group on, no record written by a probe, tails 0.
  uint32_t groups = 1;
  if (ioctl(fd, JDW_IOC_GROUPS, &groups) != 0 || groups != 0) {
    printf("  groups enabled after bad ioctls: %#x\n", groups);
    ++bad;
  }
  const size_t bytes = size_t(su.ncpus) * (su.meta_bytes + (1 << 16));
  void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Fail("ioctl", std::string("mmap: ") + strerror(errno));
  usleep(100000);
  for (uint32_t cpu = 0; cpu < su.ncpus; ++cpu) {
    const auto* m = reinterpret_cast<const jdw_kmod_meta*>(static_cast<uint8_t*>(p) + size_t(cpu) * (su.meta_bytes + (1 << 16)));
    if (m->head != 0 || m->tail != 0) {
      printf("  cpu %u ring moved (head %llu tail %llu) with no group enabled\n", cpu,
             (unsigned long long)m->head, (unsigned long long)m->tail);
      ++bad;
    }
  }
  if (mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) != MAP_FAILED) {
    printf("  the rings could be mapped writable\n");
    ++bad;
  }
  munmap(p, bytes);
  close(fd);
  return bad ? Fail("ioctl", std::to_string(bad) + " bad argument(s) accepted or changed state")
             : Pass("ioctl: bad arguments return EINVAL and change nothing");
}

int NoCap() {
  pid_t pid = fork();
  if (pid == 0) {
    // Dropping to an unprivileged uid clears the effective capabilities.
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(3);
    int fd = OpenDev();
    _exit(fd >= 0 ? 1 : (errno == EPERM || errno == EACCES) ? 0 : 2);
  }
  // Even with the file mode open to all, only CAP_SYS_ADMIN may open it.
  chmod(JDW_KMOD_DEVICE, 0666);
  int st = 0;
  waitpid(pid, &st, 0);
  chmod(JDW_KMOD_DEVICE, 0600);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return Fail("nocap", "an unprivileged process could open " JDW_KMOD_DEVICE " (or setuid failed)");
  return Pass("nocap: opening without CAP_SYS_ADMIN fails with EPERM");
}

size_t ExpectedSize(uint16_t type) {
  switch (type) {
#define JDW_SIZE_CASE(name, id, group, str, fields, st) \
  case id:                                             \
    return sizeof(st##_record);
    JDW_EVENT_TABLE(JDW_SIZE_CASE)
#undef JDW_SIZE_CASE
  }
  return 0;
}

int Session(double seconds, uint32_t ring, bool validate, const char* what) {
  int fd = OpenDev();
  if (fd < 0) return Fail(what, std::string("open: ") + strerror(errno));
  jdw_kmod_setup su;
  if (Setup(fd, ring, &su) != 0) return Fail(what, std::string("setup: ") + strerror(errno));
  const size_t stride = su.meta_bytes + ring;
  auto* area = static_cast<uint8_t*>(mmap(nullptr, stride * su.ncpus, PROT_READ, MAP_SHARED, fd, 0));
  if (area == MAP_FAILED) return Fail(what, std::string("mmap: ") + strerror(errno));
  for (uint32_t g : {JDW_GROUP_SCHED, JDW_GROUP_SYSCALL, JDW_GROUP_BLOCK, JDW_GROUP_NET})
    if (ioctl(fd, JDW_IOC_ENABLE, &g) != 0) return Fail(what, std::string("enable: ") + strerror(errno));
  std::vector<uint64_t> tails(su.ncpus, 0), last_ts(su.ncpus, 0);
  uint64_t records = 0, wraps = 0, lost = 0;
  std::string bad;
  const uint64_t end = NowNs() + uint64_t(seconds * 1e9);
  while (NowNs() < end && bad.empty()) {
    for (uint32_t cpu = 0; cpu < su.ncpus && bad.empty(); ++cpu) {
      const auto* m = reinterpret_cast<const jdw_kmod_meta*>(area + cpu * stride);
      const uint64_t head = __atomic_load_n(&m->head, __ATOMIC_ACQUIRE);
      auto w = jackdaw::capture::WalkRing(
          area + cpu * stride + su.meta_bytes, ring, tails[cpu], head, [&](const uint8_t* p, size_t size) {
            jdw_record_header h;
            memcpy(&h, p, sizeof(h));
            if (!validate || !bad.empty()) return;
            if (ExpectedSize(h.type) != size) bad = "record of type " + std::to_string(h.type) + " has size " + std::to_string(size);
            else if (h.cpu != cpu) bad = "record of cpu " + std::to_string(h.cpu) + " in ring " + std::to_string(cpu);
            else if (h.ts < last_ts[cpu]) bad = "time went backwards within one ring";
            last_ts[cpu] = h.ts;
          });
      if (!w.ok()) {
        bad = w.status().message();
        break;
      }
      records += w->records;
      wraps += w->tail / ring - tails[cpu] / ring;
      jdw_kmod_consume c{cpu, 0, w->tail};
      if (ioctl(fd, JDW_IOC_CONSUME, &c) != 0) bad = std::string("consume: ") + strerror(errno);
      tails[cpu] = w->tail;
    }
    usleep(1000);
  }
  for (uint32_t cpu = 0; cpu < su.ncpus; ++cpu)
    for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g)
      lost += reinterpret_cast<const jdw_kmod_meta*>(area + cpu * stride)->lost[g];
  munmap(area, stride * su.ncpus);
  close(fd);
  printf("  %llu records, %llu ring wraps, %llu lost (counted)\n", (unsigned long long)records,
         (unsigned long long)wraps, (unsigned long long)lost);
  if (!bad.empty()) return Fail(what, bad);
  if (validate && wraps == 0) return Fail(what, "the ring never wrapped: no load reached it");
  return Pass(what);
}

// Threads of one process race close() of a socket fd against calls that
// the module resolves to the fd's socket (read, write, connect's exit):
// the module reads the file, its socket and the sock while another thread
// closes the fd, so it must hold the file (issue 30, item 7). Run under
// `record --backend kmod --probes syscall`; the kernel log says whether a
// freed socket was touched (vm-init.sh checks dmesg afterwards).
int CloseRace(double seconds) {
  constexpr int kFd = 100;  // the number every thread works on
  signal(SIGPIPE, SIG_IGN);  // writes to connections the acceptor closed
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(listener, 4096) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return Fail("close-race", std::string("cannot listen on loopback: ") + strerror(errno));
  const uint64_t end = NowNs() + uint64_t(seconds * 1e9);
  std::atomic<uint64_t> rounds{0};
  auto until_end = [&](auto&& body) {
    return std::thread([&, body] {
      while (NowNs() < end) body();
    });
  };
  std::vector<std::thread> threads;
  threads.push_back(until_end([&] {  // a new connected socket at kFd
    const int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (s < 0) return;
    dup2(s, kFd);
    close(s);
    connect(kFd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    rounds.fetch_add(1, std::memory_order_relaxed);
  }));
  threads.push_back(until_end([&] { close(kFd); }));
  threads.push_back(until_end([&] {
    char c;
    (void)!read(kFd, &c, 1);
    (void)!write(kFd, "x", 1);
  }));
  threads.push_back(until_end([&] {
    const int c = accept(listener, nullptr, nullptr);
    if (c >= 0) close(c);
  }));
  for (auto& t : threads) t.join();
  close(listener);
  return Pass("close-race: " + std::to_string(rounds.load()) + " sockets closed under reads in " +
              std::to_string(seconds) + " s");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "compare" && argc == 4)
    return Compare(argv[2], argv[3], "tcp payload bytes sent", {"sched_switch", "sched_wakeup", "net_xmit", "net_recv"});
  if (mode == "compare-block" && argc == 4) return Compare(argv[2], argv[3], "block bytes completed", {});
  if (mode == "block" && argc == 4) return BlockAlone(argv[2], strtoull(argv[3], nullptr, 10));
  if (mode == "ioctl") return Ioctl();
  if (mode == "nocap") return NoCap();
  if (mode == "torn" && argc == 3)
    return Session(atof(argv[2]), JDW_KMOD_MIN_RING, true, "torn: a wrapping ring never yields a torn record");
  if (mode == "close-race" && argc == 3) return CloseRace(atof(argv[2]));
  if (mode == "cycle" && argc == 3) return Session(atof(argv[2]) / 1000.0, 1 << 16, false, "cycle");
  if (mode == "loop" && argc == 3) {
    // Pinned to the last CPU, the fastest of 100 short batches: the cost
    // of the probes, not of the recorder draining on the other vCPU (with
    // one TCG thread it runs in this loop's time) or of the shared host.
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(sysconf(_SC_NPROCESSORS_ONLN) - 1, &set);
    sched_setaffinity(0, sizeof(set), &set);
    constexpr int kBatches = 100;
    const long n = std::max(long(kBatches), atol(argv[2])) / kBatches;
    double best = 0;
    for (int b = 0; b < kBatches; ++b) {
      const uint64_t t0 = NowNs();
      for (long i = 0; i < n; ++i) syscall(SYS_getppid);
      const double per_call = double(NowNs() - t0) / double(n);
      if (b == 0 || per_call < best) best = per_call;
    }
    printf("%.1f\n", best);
    return 0;
  }
  fprintf(stderr, "usage: kmod_vm_check compare BPF.jdw KMOD.jdw | ioctl | nocap | torn SECONDS | cycle MS | loop N | close-race SECONDS\n");
  return 2;
}
