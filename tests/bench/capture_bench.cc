// Capture overhead, measured side by side in one run (issue 2's benchmark).
//
// One workload — jackdaw-workload --getppid N, a tight loop of a syscall
// that does nothing, 2 raw syscall events per call — runs as a child
// process under each configuration in turn, interleaved, REPS times:
//   untraced   no probe
//   bare       bpf/bench_bare.bpf.c: raw_tp enter/exit, tgid compare,
//              32-byte record, ring never wakes the reader (it polls)
//   jackdaw    sched+syscall groups through CaptureSession + Recorder,
//              written to a .jdw file on disk
//   perf       perf record on raw_syscalls:sys_enter/sys_exit +
//              sched:sched_switch/sched_wakeup
// Added cost per event = (ns per call traced - untraced) / 2. Then the
// drain test: two producers at full speed, events/s delivered and lost.
// Prints a table and writes tests/results/capture-bench.json.
#include <bpf/libbpf.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_bare.skel.h"
#include "capture/clock_sync.h"
#include "capture/recorder.h"
#include "support/test_support.h"

using jackdaw::testing::PausedChild;
using nlohmann::json;

namespace {

constexpr uint64_t kCalls = 1'000'000;
constexpr int kReps = 3;

std::vector<std::string> WorkloadArgv(uint64_t calls) {
  return {jackdaw::testing::BinDir() + "/jackdaw-workload", "--getppid", std::to_string(calls)};
}

struct Run {
  double ns_per_call = 0;
  uint64_t events = 0, lost = 0, bytes = 0;
  double wall_s = 0;
};

double CallNs(const std::string& out) {
  auto j = json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.contains("getppid")) return -1;
  return double(j["getppid"]["elapsed_ns"].get<uint64_t>()) / double(j["getppid"]["calls"].get<uint64_t>());
}

Run Untraced(uint64_t calls) {
  PausedChild c(WorkloadArgv(calls));
  c.Go();
  int code;
  return Run{CallNs(c.Wait(&code))};
}

// The bare probe, drained by a polling thread; several producers possible.
Run Bare(uint64_t calls, int producers) {
  std::vector<std::unique_ptr<PausedChild>> kids;
  for (int i = 0; i < producers; ++i) kids.push_back(std::make_unique<PausedChild>(WorkloadArgv(calls)));
  // One object per producer tgid would double the probes; the bare probe
  // filters one tgid, so multi-producer runs use one object per child.
  std::vector<jdw_bench_bare_bpf*> objs;
  std::vector<ring_buffer*> rings;
  std::atomic<uint64_t> got{0};
  auto cb = [](void* ctx, void*, size_t) {
    ++*static_cast<std::atomic<uint64_t>*>(ctx);
    return 0;
  };
  for (auto& k : kids) {
    auto* s = jdw_bench_bare_bpf__open();
    s->rodata->targ_tgid = k->pid();
    if (jdw_bench_bare_bpf__load(s) || jdw_bench_bare_bpf__attach(s)) {
      fprintf(stderr, "bench: cannot load the bare probe\n");
      exit(1);
    }
    objs.push_back(s);
    rings.push_back(ring_buffer__new(bpf_map__fd(s->maps.bare_ring), cb, &got, nullptr));
  }
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop) {
      for (auto* r : rings) ring_buffer__consume(r);
      usleep(1000);
    }
  });
  const uint64_t t0 = jackdaw::capture::MonoNowNs();
  for (auto& k : kids) k->Go();
  Run run;
  for (auto& k : kids) {
    int code;
    run.ns_per_call += CallNs(k->Wait(&code)) / producers;
  }
  run.wall_s = double(jackdaw::capture::MonoNowNs() - t0) / 1e9;
  stop = true;
  reader.join();
  for (auto* r : rings) ring_buffer__consume(r), ring_buffer__free(r);
  for (auto* s : objs) {
    run.lost += s->bss->lost;
    jdw_bench_bare_bpf__destroy(s);
  }
  run.events = got;
  return run;
}

Run Jackdaw(uint64_t calls, int producers, const std::string& path,
            jackdaw::trace::Compression compression = jackdaw::trace::Compression::kZstd) {
  std::vector<std::unique_ptr<PausedChild>> kids;
  jackdaw::capture::RecorderOptions ro;
  ro.output = path;
  ro.compression = compression;
  ro.capture.groups = (1u << JDW_GROUP_SCHED) | (1u << JDW_GROUP_SYSCALL);
  ro.capture.filter_tgid = getenv("JDW_BENCH_NOFILTER") == nullptr;
  for (int i = 0; i < producers; ++i) {
    kids.push_back(std::make_unique<PausedChild>(WorkloadArgv(calls)));
    ro.capture.tgids.push_back(kids.back()->pid());
  }
  auto rec = jackdaw::capture::Recorder::Create(ro);
  if (!rec.ok() || !(*rec)->StartBackground().ok()) {
    fprintf(stderr, "bench: cannot start jackdaw: %s\n", rec.ok() ? "start failed" : rec.status().message().c_str());
    exit(1);
  }
  const uint64_t t0 = jackdaw::capture::MonoNowNs();
  for (auto& k : kids) k->Go();
  Run run;
  for (auto& k : kids) {
    int code;
    run.ns_per_call += CallNs(k->Wait(&code)) / producers;
  }
  run.wall_s = double(jackdaw::capture::MonoNowNs() - t0) / 1e9;
  if (!(*rec)->Stop().ok()) exit(1);
  auto st = (*rec)->stats();
  run.events = st.records;
  run.lost = st.lost;
  run.bytes = std::filesystem::file_size(path);
  std::filesystem::remove(path);
  return run;
}

Run Perf(uint64_t calls, const std::string& path) {
  std::vector<std::string> argv = {"perf", "record", "-q", "-o", path, "-e", "raw_syscalls:sys_enter",
                                   "-e", "raw_syscalls:sys_exit", "-e", "sched:sched_switch", "-e",
                                   "sched:sched_wakeup", "--"};
  for (auto& a : WorkloadArgv(calls)) argv.push_back(a);
  auto r = jackdaw::testing::RunCommand(argv);
  Run run;
  if (r.exit_code != 0) return Run{-1};
  run.ns_per_call = CallNs(r.out);
  // perf does not say how many samples it kept without a second pass;
  // bytes per event are per requested syscall event (2 per call).
  run.events = 2 * calls;
  if (std::filesystem::exists(path)) run.bytes = std::filesystem::file_size(path);
  // perf reports lost chunks on stderr: "Processed N events and lost M chunks!"
  auto p = r.err.find("lost ");
  if (p != std::string::npos) run.lost = strtoull(r.err.c_str() + p + 5, nullptr, 10);
  std::filesystem::remove(path);
  return run;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  if (geteuid() != 0) {
    fprintf(stderr, "bench_capture: needs root (sudo make bench)\n");
    return 2;
  }
  if (!jackdaw::capture::EnsureTracefs().ok()) fprintf(stderr, "bench: tracefs unavailable: perf rows will fail\n");
  libbpf_set_print([](enum libbpf_print_level, const char*, va_list) { return 0; });
  const std::string dir = "/var/tmp";
  std::map<std::string, std::vector<double>> ns;
  std::map<std::string, Run> last;
  bool perf_ok = true;
  for (int rep = 0; rep < kReps; ++rep) {
    fprintf(stderr, "bench_capture: round %d/%d\n", rep + 1, kReps);
    Run u = Untraced(kCalls);
    ns["untraced"].push_back(u.ns_per_call);
    Run b = Bare(kCalls, 1);
    ns["bare"].push_back(b.ns_per_call);
    last["bare"] = b;
    Run j = Jackdaw(kCalls, 1, dir + "/jdw_bench.jdw");
    ns["jackdaw"].push_back(j.ns_per_call);
    last["jackdaw"] = j;
    if (perf_ok) {
      Run p = Perf(kCalls, dir + "/jdw_bench.perf");
      if (p.ns_per_call < 0) perf_ok = false;
      else ns["perf"].push_back(p.ns_per_call), last["perf"] = p;
    }
  }
  const double base = Median(ns["untraced"]);
  auto added = [&](const std::string& m) { return (Median(ns[m]) - base) / 2.0; };
  json out;
  utsname u{};
  uname(&u);
  out["machine"] = {{"host", u.nodename}, {"kernel", u.release}, {"cpus", std::thread::hardware_concurrency()}};
  out["calls_per_run"] = kCalls;
  out["reps"] = kReps;
  printf("\nCapture cost per event (getppid loop, 2 syscall events per call, %llu calls, median of %d)\n",
         static_cast<unsigned long long>(kCalls), kReps);
  printf("%-10s %12s %14s %10s %10s %12s\n", "mode", "ns/call", "added ns/ev", "vs bare", "lost", "bytes/event");
  for (const char* m : {"untraced", "bare", "jackdaw", "perf"}) {
    if (!ns.count(m)) {
      printf("%-10s %12s\n", m, "n/a");
      continue;
    }
    const double a = std::string(m) == "untraced" ? 0 : added(m);
    const Run& r = last[m];
    const double bpe = r.events ? double(r.bytes) / double(r.events) : 0;
    printf("%-10s %12.1f %14.1f %10.2f %10llu %12.1f\n", m, Median(ns[m]), a,
           std::string(m) == "untraced" ? 0.0 : a / added("bare"), static_cast<unsigned long long>(r.lost), bpe);
    out["modes"][m] = {{"ns_per_call", Median(ns[m])}, {"added_ns_per_event", a}, {"lost", r.lost},
                       {"events", r.events}, {"bytes", r.bytes}, {"bytes_per_event", bpe}};
  }
  out["jackdaw_vs_bare_added_cost"] = added("jackdaw") / added("bare");

  printf("\nDrain: two producers at full speed (%llu calls each)\n", static_cast<unsigned long long>(kCalls));
  printf("%-10s %14s %12s %10s\n", "mode", "events/s", "events", "lost");
  // jackdaw writes zstd (its default) and plain chunks, so the cost of
  // compressing on the writer thread shows next to the reader's.
  for (const char* m : {"bare", "jackdaw", "jackdaw_none"}) {
    const std::string name = m;
    Run r = name == "bare"      ? Bare(kCalls, 2)
            : name == "jackdaw" ? Jackdaw(kCalls, 2, dir + "/jdw_bench2.jdw")
                                : Jackdaw(kCalls, 2, dir + "/jdw_bench2.jdw", jackdaw::trace::Compression::kNone);
    const double rate = double(r.events) / r.wall_s;
    const double bpe = r.events && name != "bare" ? double(r.bytes) / double(r.events) : 0;
    printf("%-12s %14.0f %12llu %10llu %10.1f B/event\n", m, rate, static_cast<unsigned long long>(r.events),
           static_cast<unsigned long long>(r.lost), bpe);
    out["drain"][m] = {{"events_per_s", rate}, {"events", r.events}, {"lost", r.lost}, {"wall_s", r.wall_s},
                       {"bytes_per_event", bpe}};
  }
  // Drain capacity: the reader alone. Producers fill a large ring while
  // nothing drains; then the recorder empties it to the trace file.
  {
    PausedChild kid(WorkloadArgv(kCalls));
    jackdaw::capture::RecorderOptions ro;
    ro.output = dir + "/jdw_bench3.jdw";
    ro.capture.groups = (1u << JDW_GROUP_SCHED) | (1u << JDW_GROUP_SYSCALL);
    ro.capture.filter_tgid = true;
    ro.capture.tgids = {static_cast<uint32_t>(kid.pid())};
    ro.capture.ring_bytes_per_cpu = 256u << 20;
    auto rec = jackdaw::capture::Recorder::Create(ro);
    if (!rec.ok() || !(*rec)->Start().ok()) {
      fprintf(stderr, "bench: cannot start jackdaw for the drain test\n");
      return 1;
    }
    kid.Go();
    int code;
    kid.Wait(&code);
    const uint64_t t0 = jackdaw::capture::MonoNowNs();
    if (!(*rec)->Stop().ok()) return 1;
    const double secs = double(jackdaw::capture::MonoNowNs() - t0) / 1e9;
    auto st = (*rec)->stats();
    const double rate = double(st.records) / secs;
    printf("%-10s %14.0f %12llu %10llu   (reader alone: a filled 256 MiB/CPU ring drained to disk)\n", "drain",
           rate, static_cast<unsigned long long>(st.records), static_cast<unsigned long long>(st.lost));
    out["drain"]["reader_alone"] = {{"events_per_s", rate}, {"events", st.records}, {"lost", st.lost}};
    std::filesystem::remove(ro.output);
  }
  const std::string results = std::string(JDW_SOURCE_DIR) + "/tests/results/capture-bench.json";
  std::ofstream(results) << out.dump(2) << "\n";
  printf("\nwritten: %s\n", results.c_str());
  return 0;
}
