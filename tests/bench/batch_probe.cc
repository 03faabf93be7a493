// bench_batch: what batching records per ring reserve would save, priced
// alone (bpf/bench_batch.bpf.c). For REPS rounds, interleaved: the getppid
// loop of jackdaw-workload untraced, with one ring reserve + submit per
// record ("direct") and with records staged per CPU and written to the
// ring in 4 KiB batches by one bpf_ringbuf_output ("staged"). Per mode:
// the programs' own ns per run from the kernel's run-time statistics
// (turned on through bpf_enable_stats for this process's lifetime only, so
// they go off again however it ends), the loop's added ns per event over
// untraced, and records delivered and lost: every event must arrive. The
// statistics' own two clock reads are in both modes' ns per run alike, so
// their difference is the staging's saving (or cost). Median of rounds.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_batch.skel.h"
#include "capture/ring_reader.h"
#include "common/clock.h"
#include "support/test_support.h"

namespace {

constexpr uint64_t kCalls = 1'000'000;
constexpr size_t kRecordSize = 48;

struct Result {
  double ns_per_event = 0;  // wall, whole loop
  double prog_ns_per_run = 0;
  uint64_t runs = 0, records = 0, lost = 0, nested = 0;
};

std::vector<std::string> Argv() {
  return {jackdaw::testing::BinDir() + "/jackdaw-workload", "--getppid", std::to_string(kCalls)};
}

// Counts records; a batch holds size / 48 of them.
struct Counter : jackdaw::capture::RecordSink {
  uint64_t records = 0;
  void OnRecord(uint32_t, const uint8_t*, size_t size) override { records += size / kRecordSize; }
};

// mode: 0 untraced, 1 direct, 2 staged
bool RunOnce(int mode, Result* out) {
  jackdaw::testing::PausedChild child(Argv());
  jdw_bench_batch_bpf* s = nullptr;
  // jackdaw's own reader (capture/ring_reader.h): consumer_pos published
  // per sweep, not per record as libbpf's, so the producers' cost is the
  // one they pay under jackdaw.
  jackdaw::capture::RingReader rb;
  Counter counter;
  std::atomic<bool> stop{false};
  std::thread reader;
  if (mode != 0) {
    s = jdw_bench_batch_bpf__open();
    if (!s) return false;
    s->rodata->targ_tgid = static_cast<uint32_t>(child.pid());
    s->rodata->targ_stage = mode == 2;
    if (jdw_bench_batch_bpf__load(s) != 0 || jdw_bench_batch_bpf__attach(s) != 0) {
      fprintf(stderr, "bench_batch: cannot load or attach the probes (run as root): %s\n", strerror(errno));
      jdw_bench_batch_bpf__destroy(s);
      return false;
    }
    auto mapped = jackdaw::capture::RingReader::Map(bpf_map__fd(s->maps.batch_ring), 8u << 20);
    if (!mapped.ok()) {
      fprintf(stderr, "bench_batch: %s\n", mapped.status().message().c_str());
      jdw_bench_batch_bpf__destroy(s);
      return false;
    }
    rb = std::move(*mapped);
    reader = std::thread([&] {
      // the programs never wake the reader (as jackdaw's): sweep on a timer
      while (!stop) {
        rb.Consume(counter, 0);
        usleep(1000);
      }
    });
  }
  bpf_prog_info a0{}, a1{}, b0{}, b1{};
  uint32_t len = sizeof(bpf_prog_info);
  if (s) {
    bpf_obj_get_info_by_fd(bpf_program__fd(s->progs.batch_sys_enter), &a0, &len);
    bpf_obj_get_info_by_fd(bpf_program__fd(s->progs.batch_sys_exit), &b0, &len);
  }
  const uint64_t t0 = jackdaw::MonotonicNs();
  child.Go();
  int code = -1;
  child.Wait(&code);
  const uint64_t t1 = jackdaw::MonotonicNs();
  if (code != 0) {
    fprintf(stderr, "bench_batch: the workload failed (exit %d)\n", code);
    return false;
  }
  out->ns_per_event = double(t1 - t0) / double(2 * kCalls);
  if (s) {
    len = sizeof(bpf_prog_info);
    bpf_obj_get_info_by_fd(bpf_program__fd(s->progs.batch_sys_enter), &a1, &len);
    bpf_obj_get_info_by_fd(bpf_program__fd(s->progs.batch_sys_exit), &b1, &len);
    jdw_bench_batch_bpf__detach(s);
    // what a stage still holds at the end counts as delivered: it is
    // there, and a real session's stop would flush it
    const int stage_fd = bpf_map__fd(s->maps.batch_stage);
    std::vector<uint8_t> vals(size_t(libbpf_num_possible_cpus()) * ((8 + 4096 + 7) & ~size_t{7}));
    uint32_t zero = 0;
    uint64_t staged = 0;
    if (bpf_map_lookup_elem(stage_fd, &zero, vals.data()) == 0)
      for (int c = 0; c < libbpf_num_possible_cpus(); ++c) {
        uint32_t l;
        memcpy(&l, vals.data() + size_t(c) * ((8 + 4096 + 7) & ~size_t{7}), sizeof(l));
        staged += l / kRecordSize;
      }
    stop = true;
    reader.join();
    while (rb.Consume(counter, 0) > 0) {
    }
    const uint64_t runs = (a1.run_cnt - a0.run_cnt) + (b1.run_cnt - b0.run_cnt);
    const uint64_t ns = (a1.run_time_ns - a0.run_time_ns) + (b1.run_time_ns - b0.run_time_ns);
    out->runs = runs;
    out->prog_ns_per_run = runs ? double(ns) / double(runs) : 0;
    out->records = counter.records + staged;
    out->lost = s->bss->lost;
    out->nested = s->bss->nested;
    jdw_bench_batch_bpf__destroy(s);
  }
  return true;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main() {
  if (geteuid() != 0) {
    fprintf(stderr, "bench_batch: needs root (eBPF): sudo %s\n", "bench_batch");
    return 2;
  }
  const char* r = getenv("JDW_BENCH_REPS");
  const int reps = r && atoi(r) > 0 ? atoi(r) : 5;
  // The kernel's per-program run time, on while this fd is open.
  const int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (stats_fd < 0) {
    fprintf(stderr, "bench_batch: cannot enable BPF run-time statistics: %s\n", strerror(errno));
    return 1;
  }
  const char* names[] = {"untraced", "direct", "staged"};
  std::vector<double> wall[3], prog[3];
  uint64_t records[3] = {}, lost[3] = {}, runs[3] = {}, nested[3] = {};
  for (int round = 0; round < reps; ++round) {
    for (int m = 0; m < 3; ++m) {
      Result res;
      if (!RunOnce(m, &res)) return 1;
      wall[m].push_back(res.ns_per_event);
      prog[m].push_back(res.prog_ns_per_run);
      records[m] += res.records;
      lost[m] += res.lost;
      runs[m] += res.runs;
      nested[m] += res.nested;
    }
    fprintf(stderr, "bench_batch: round %d/%d: direct %.1f ns/run, staged %.1f ns/run\n", round + 1, reps,
            prog[1].back(), prog[2].back());
  }
  printf("getppid loop, %llu calls per run, median of %d rounds (ns/run: the programs' own time,\n"
         "statistics included; added: wall ns per event over untraced)\n",
         static_cast<unsigned long long>(kCalls), reps);
  printf("%-9s %10s %10s %12s %12s %8s %8s\n", "mode", "ns/run", "added", "runs", "records", "lost", "nested");
  const double base = Median(wall[0]);
  for (int m = 0; m < 3; ++m) {
    printf("%-9s %10.1f %10.1f %12llu %12llu %8llu %8llu\n", names[m], Median(prog[m]), Median(wall[m]) - base,
           static_cast<unsigned long long>(runs[m]), static_cast<unsigned long long>(records[m]),
           static_cast<unsigned long long>(lost[m]), static_cast<unsigned long long>(nested[m]));
  }
  std::vector<double> ratio;
  for (int i = 0; i < reps; ++i)
    if (prog[1][i] > 0) ratio.push_back(prog[2][i] / prog[1][i]);
  printf("staged / direct ns per run, round by round:");
  for (double x : ratio) printf(" %.3f", x);
  printf("  (median %.3f)\n", Median(ratio));
  close(stats_fd);
  return 0;
}
