// Capture overhead, measured side by side in one run (issues 2 and 12).
//
// Three workloads run as a child process, jackdaw-workload with:
//   getppid     a tight loop of a syscall that does nothing and takes no
//               fd: 2 raw syscall events per call
//   socketpair  64-byte write + read on a unix socket pair: 2 fd-taking
//               calls, 4 events per round
//   file        4 KiB pwrite + pread on a page-cached file: 2 fd-taking
//               calls, 4 events per round
// Each workload runs under each configuration in turn, interleaved
// (workload by workload inside a round, configuration by configuration
// inside a workload), REPS rounds:
//   untraced   no probe
//   bare       bpf/bench_bare.bpf.c: tp_btf enter/exit, tgid compare, a
//              48-byte record (the size of jackdaw's) into one ring that
//              never wakes the reader (it polls)
//   jackdaw    sched+syscall groups through CaptureSession + Recorder,
//              written to a .jdw file on disk; a syscall whose enter and
//              exit meet on one CPU is one combined record (the default)
//   jackdaw_sep the same with combining off: an enter and an exit record
//              per call, as the bare probe writes
//   perf       perf record on raw_syscalls:sys_enter/sys_exit +
//              sched:sched_switch/sched_wakeup (getppid only)
// Added cost per event = (ns per call or round traced - untraced) / events
// per call or round. The jackdaw/bare ratio is also taken round by round
// (each traced run against its own round's untraced and bare runs) and
// reported as the median of those ratios with their min and max: on a
// loaded machine one round's untraced time can move more than the effect,
// and the spread says so. Then the drain test: two producers at full speed,
// events/s delivered and lost. Prints a table and writes
// tests/results/capture-bench.json.
#include <bpf/bpf.h>
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
#include "common/clock.h"
#include "support/test_support.h"

using jackdaw::testing::PausedChild;
using nlohmann::json;

namespace {

constexpr uint64_t kCalls = 1'000'000;
int Reps() {
  const char* r = getenv("JDW_BENCH_REPS");
  return r && atoi(r) > 0 ? atoi(r) : 5;
}

// A loop in jackdaw-workload: its option, the key of its JSON report and
// how many raw syscall events one unit (a call or a round) makes.
struct Workload {
  const char* name;
  const char* option;
  const char* key;
  uint64_t units;
  int events_per_unit;
};

const Workload kGetppid{"getppid", "--getppid", "getppid", kCalls, 2};
const Workload kWorkloads[] = {
    kGetppid,
    {"socketpair", "--socketpair-rounds", "socketpair", 250'000, 4},
    {"file", "--file-rounds", "file", 250'000, 4},
};

std::vector<std::string> WorkloadArgv(const Workload& w, uint64_t units) {
  return {jackdaw::testing::BinDir() + "/jackdaw-workload", w.option, std::to_string(units)};
}
std::vector<std::string> WorkloadArgv(uint64_t calls) { return WorkloadArgv(kGetppid, calls); }

// Run time of every loaded BPF program by name (JDW_BENCH_BPF_STATS=1 turns
// the kernel's statistics on for the run, as kernel.bpf_stats_enabled does). A delta over a
// run divided by the programs' run count is the program's own ns per event,
// without the hook's dispatch.
struct ProgTime {
  std::string name;
  uint64_t ns = 0, cnt = 0;
};
// id -> program, for every loaded program.
std::map<uint32_t, ProgTime> ProgTimes() {
  std::map<uint32_t, ProgTime> out;
  uint32_t id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) out[id] = {info.name, info.run_time_ns, info.run_cnt};
    close(fd);
  }
  return out;
}
bool BpfStats() { return getenv("JDW_BENCH_BPF_STATS") != nullptr; }
// Ids of the BPF programs this process holds open (its fds' fdinfo names
// them): the run's own, as other sessions on the machine load programs of
// the same names.
std::map<uint32_t, ProgTime> OwnPrograms() {
  std::map<uint32_t, ProgTime> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fdinfo")) {
    std::ifstream f(e.path());
    std::string key;
    uint64_t v;
    while (f >> key) {
      if (key == "prog_id:" && f >> v) out[static_cast<uint32_t>(v)] = {};
    }
  }
  return out;
}
// This run's programs (`own`, taken while they are loaded) that ran
// between `a` and `b`: name -> (ns per run, runs).
std::map<std::string, std::pair<double, uint64_t>> ProgDelta(const std::map<uint32_t, ProgTime>& own,
                                                              const std::map<uint32_t, ProgTime>& a,
                                                              const std::map<uint32_t, ProgTime>& b) {
  std::map<std::string, std::pair<double, uint64_t>> out;
  for (auto& [id, t] : b) {
    if (!own.count(id)) continue;
    auto it = a.find(id);
    const uint64_t cnt = t.cnt - (it == a.end() ? 0 : it->second.cnt);
    const uint64_t ns = t.ns - (it == a.end() ? 0 : it->second.ns);
    if (cnt) out[t.name] = {double(ns) / double(cnt), cnt};
  }
  return out;
}

struct Run {
  double ns_per_call = 0;  // per unit of the workload
  uint64_t events = 0, lost = 0, bytes = 0;
  uint64_t combined = 0;  // jackdaw: combined syscall records among the events' records
  double wall_s = 0;
  std::map<std::string, std::pair<double, uint64_t>> prog_ns;  // JDW_BENCH_BPF_STATS
};

// ns per unit from the workload's report; -1 when it failed.
double UnitNs(const Workload& w, const std::string& out) {
  auto j = json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.contains(w.key)) return -1;
  const auto& r = j[w.key];
  const uint64_t n = r.contains("calls") ? r["calls"].get<uint64_t>() : r["rounds"].get<uint64_t>();
  return double(r["elapsed_ns"].get<uint64_t>()) / double(n);
}
double CallNs(const std::string& out) { return UnitNs(kGetppid, out); }

Run Untraced(const Workload& w) {
  PausedChild c(WorkloadArgv(w, w.units));
  c.Go();
  int code;
  Run run;
  run.ns_per_call = UnitNs(w, c.Wait(&code));
  return run;
}

// The bare probe, drained by a polling thread; several producers possible.
Run Bare(const Workload& w, uint64_t units, int producers) {
  std::vector<std::unique_ptr<PausedChild>> kids;
  for (int i = 0; i < producers; ++i) kids.push_back(std::make_unique<PausedChild>(WorkloadArgv(w, units)));
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
  const auto own = BpfStats() ? OwnPrograms() : std::map<uint32_t, ProgTime>{};
  const auto p0 = BpfStats() ? ProgTimes() : std::map<uint32_t, ProgTime>{};
  const uint64_t t0 = jackdaw::MonotonicNs();
  for (auto& k : kids) k->Go();
  Run run;
  for (auto& k : kids) {
    int code;
    run.ns_per_call += UnitNs(w, k->Wait(&code)) / producers;
  }
  run.wall_s = double(jackdaw::MonotonicNs() - t0) / 1e9;
  if (BpfStats()) run.prog_ns = ProgDelta(own, p0, ProgTimes());
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

Run Jackdaw(const Workload& w, uint64_t units, int producers, const std::string& path,
            jackdaw::trace::Compression compression = jackdaw::trace::Compression::kZstd, bool combine = true) {
  std::vector<std::unique_ptr<PausedChild>> kids;
  jackdaw::capture::RecorderOptions ro;
  ro.output = path;
  ro.compression = compression;
  ro.capture.groups = (1u << JDW_GROUP_SCHED) | (1u << JDW_GROUP_SYSCALL);
  ro.capture.filter_tgid = getenv("JDW_BENCH_NOFILTER") == nullptr;
  ro.capture.combine_syscalls = combine;
  for (int i = 0; i < producers; ++i) {
    kids.push_back(std::make_unique<PausedChild>(WorkloadArgv(w, units)));
    ro.capture.tgids.push_back(kids.back()->pid());
  }
  auto rec = jackdaw::capture::Recorder::Create(ro);
  if (!rec.ok() || !(*rec)->StartBackground().ok()) {
    fprintf(stderr, "bench: cannot start jackdaw: %s\n", rec.ok() ? "start failed" : rec.status().message().c_str());
    exit(1);
  }
  const auto own = BpfStats() ? OwnPrograms() : std::map<uint32_t, ProgTime>{};
  const auto p0 = BpfStats() ? ProgTimes() : std::map<uint32_t, ProgTime>{};
  const uint64_t t0 = jackdaw::MonotonicNs();
  for (auto& k : kids) k->Go();
  Run run;
  for (auto& k : kids) {
    int code;
    run.ns_per_call += UnitNs(w, k->Wait(&code)) / producers;
  }
  run.wall_s = double(jackdaw::MonotonicNs() - t0) / 1e9;
  if (BpfStats()) run.prog_ns = ProgDelta(own, p0, ProgTimes());
  if (!(*rec)->Stop().ok()) exit(1);
  auto st = (*rec)->stats();
  run.events = st.records;
  run.combined = st.wire_records;
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
  if (r.exit_code != 0) {
    run.ns_per_call = -1;
    return run;
  }
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
  const int reps = Reps();
  if (BpfStats()) {
    // Costs two clock reads per program run: figures of such a run are for
    // the per-program split, not for the ratios.
    // (held until exit: the kernel turns the statistics off when the fd closes)
    if (bpf_enable_stats(BPF_STATS_RUN_TIME) < 0) fprintf(stderr, "bench_capture: cannot enable BPF run-time statistics\n");
    fprintf(stderr, "bench_capture: BPF run-time statistics on (per-program split; the ratios are inflated)\n");
  }
  // ns[workload][mode]: ns per unit, one entry per round.
  std::map<std::string, std::map<std::string, std::vector<double>>> ns;
  std::map<std::string, std::map<std::string, Run>> last;
  bool perf_ok = true;
  for (int rep = 0; rep < reps; ++rep) {
    fprintf(stderr, "bench_capture: round %d/%d\n", rep + 1, reps);
    for (const Workload& w : kWorkloads) {
      auto& n = ns[w.name];
      n["untraced"].push_back(Untraced(w).ns_per_call);
      Run b = Bare(w, w.units, 1);
      n["bare"].push_back(b.ns_per_call);
      last[w.name]["bare"] = b;
      // Alternate which jackdaw mode runs first, so neither always follows
      // the bare run.
      Run j, js;
      if (rep % 2 == 0) {
        j = Jackdaw(w, w.units, 1, dir + "/jdw_bench.jdw");
        js = Jackdaw(w, w.units, 1, dir + "/jdw_bench.jdw", jackdaw::trace::Compression::kZstd, false);
      } else {
        js = Jackdaw(w, w.units, 1, dir + "/jdw_bench.jdw", jackdaw::trace::Compression::kZstd, false);
        j = Jackdaw(w, w.units, 1, dir + "/jdw_bench.jdw");
      }
      if (BpfStats()) {
        for (auto* r : {&b, &j, &js})
          for (auto& [name, v] : r->prog_ns)
            fprintf(stderr, "  %-10s %-11s %-20s %8.1f ns/run %10llu runs\n", w.name,
                    r == &b ? "bare" : r == &j ? "jackdaw" : "jackdaw_sep", name.c_str(), v.first,
                    static_cast<unsigned long long>(v.second));
      }
      n["jackdaw"].push_back(j.ns_per_call);
      last[w.name]["jackdaw"] = j;
      n["jackdaw_sep"].push_back(js.ns_per_call);
      last[w.name]["jackdaw_sep"] = js;
      if (perf_ok && &w == &kWorkloads[0]) {
        Run p = Perf(w.units, dir + "/jdw_bench.perf");
        if (p.ns_per_call < 0) perf_ok = false;
        else n["perf"].push_back(p.ns_per_call), last[w.name]["perf"] = p;
      }
    }
  }
  json out;
  utsname u{};
  uname(&u);
  out["machine"] = {{"host", u.nodename}, {"kernel", u.release}, {"cpus", std::thread::hardware_concurrency()}};
  out["calls_per_run"] = kCalls;
  out["reps"] = reps;
  for (const Workload& w : kWorkloads) {
    auto& n = ns[w.name];
    const double base = Median(n["untraced"]);
    auto added = [&](const std::string& m) { return (Median(n[m]) - base) / w.events_per_unit; };
    printf("\nCapture cost per event (%s loop, %d syscall events per %s, %llu per run, median of %d rounds)\n",
           w.name, w.events_per_unit, w.events_per_unit == 2 ? "call" : "round",
           static_cast<unsigned long long>(w.units), reps);
    printf("%-11s %12s %14s %10s %10s %12s %14s\n", "mode", "ns/unit", "added ns/ev", "vs bare", "lost",
           "bytes/event", "records/event");
    json& o = out["workloads"][w.name];
    for (const char* m : {"untraced", "bare", "jackdaw", "jackdaw_sep", "perf"}) {
      if (!n.count(m)) continue;
      const double a = std::string(m) == "untraced" ? 0 : added(m);
      const Run& r = last[w.name][m];
      const double bpe = r.events ? double(r.bytes) / double(r.events) : 0;
      // Records the rings carried per event: a combined record is two.
      const double rpe = r.events ? double(r.events - r.combined) / double(r.events) : 0;
      printf("%-11s %12.1f %14.1f %10.2f %10llu %12.1f %14.2f\n", m, Median(n[m]), a,
             std::string(m) == "untraced" ? 0.0 : a / added("bare"), static_cast<unsigned long long>(r.lost), bpe,
             rpe);
      o["modes"][m] = {{"ns_per_unit", Median(n[m])}, {"added_ns_per_event", a}, {"lost", r.lost},
                       {"events", r.events}, {"bytes", r.bytes}, {"bytes_per_event", bpe},
                       {"combined_records", r.combined}, {"rounds", n[m]}};
    }
    o["events_per_unit"] = w.events_per_unit;
    o["units_per_run"] = w.units;
    o["jackdaw_vs_bare_added_cost"] = added("jackdaw") / added("bare");
    o["jackdaw_sep_vs_bare_added_cost"] = added("jackdaw_sep") / added("bare");
    // The same ratio round by round, each against that round's untraced
    // and bare runs: the target holds only if it holds in every round.
    // Every round is kept; the per-run figure is their median, with the
    // min and max beside it.
    for (const char* m : {"jackdaw", "jackdaw_sep"}) {
      std::vector<double> ratios;
      std::string per_round;
      for (int r = 0; r < reps; ++r) {
        const double ub = n["untraced"][r];
        const double ratio = (n[m][r] - ub) / (n["bare"][r] - ub);
        ratios.push_back(ratio);
        char buf[32];
        snprintf(buf, sizeof(buf), "%s%.2f", r ? " " : "", ratio);
        per_round += buf;
      }
      const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
      const std::string key = std::string(m) + "_vs_bare";
      o[key + "_by_round"] = ratios;
      o[key + "_median_of_rounds"] = Median(ratios);
      o[key + "_min_max_of_rounds"] = {*lo, *hi};
      printf("%s vs bare, round by round: %s  (median %.2f, min %.2f, max %.2f)\n", m, per_round.c_str(),
             Median(ratios), *lo, *hi);
    }
  }
  // Kept for scripts/bench-compare: the getppid figures at the top level.
  out["modes"] = out["workloads"]["getppid"]["modes"];
  out["jackdaw_vs_bare_added_cost"] = out["workloads"]["getppid"]["jackdaw_vs_bare_added_cost"];

  printf("\nDrain: two producers at full speed (%llu calls each)\n", static_cast<unsigned long long>(kCalls));
  printf("%-10s %14s %12s %10s\n", "mode", "events/s", "events", "lost");
  // jackdaw writes zstd (its default) and plain chunks, so the cost of
  // compressing on the writer thread shows next to the reader's.
  for (const char* m : {"bare", "jackdaw", "jackdaw_none", "jackdaw_sep"}) {
    const std::string name = m;
    Run r = name == "bare"           ? Bare(kGetppid, kCalls, 2)
            : name == "jackdaw"      ? Jackdaw(kGetppid, kCalls, 2, dir + "/jdw_bench2.jdw")
            : name == "jackdaw_none" ? Jackdaw(kGetppid, kCalls, 2, dir + "/jdw_bench2.jdw",
                                               jackdaw::trace::Compression::kNone)
                                     : Jackdaw(kGetppid, kCalls, 2, dir + "/jdw_bench2.jdw",
                                               jackdaw::trace::Compression::kZstd, false);
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
    const uint64_t t0 = jackdaw::MonotonicNs();
    if (!(*rec)->Stop().ok()) return 1;
    const double secs = double(jackdaw::MonotonicNs() - t0) / 1e9;
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
