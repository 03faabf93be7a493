// Join throughput and memory on a large synthetic trace of a thread-pool
// server (the test server's shape: an acceptor, 64 reused workers, 16 reused
// helpers; 64 requests in flight, interleaved event by event; half the
// requests hand work to a helper and wait, as rpcspin does), joined with the
// shipped testserver.schema.
//
// A block of ~1M records is generated once, starting and ending quiescent,
// then replayed with shifted timestamps (two copies alternate, so records
// still inside the reorder window are never rewritten) until the requested
// number of records has been pushed. Thread ids, sockets and request ids
// repeat across replays: that is thread/connection reuse, not a shortcut.
//
//   bench_join --benchmark_counters_tabular=true
//
// Counters: events_per_s (records pushed per second of wall time, one
// core), requests, rss_growth_MB (max VmRSS during the run minus VmRSS at
// its start; the two blocks are allocated before), peak_live_sets.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "join/extractor.h"
#include "join/test_stream.h"

namespace jackdaw::join {
namespace {

using testing::Stream;

constexpr uint32_t kAcceptor = 100, kWorker0 = 200, kHelper0 = 300;
constexpr int kWorkers = 64, kHelpers = 16, kInFlight = 64, kCpus = 4;

uint64_t RssBytes() {
  FILE* f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, rss = 0;
  if (fscanf(f, "%lu %lu", &size, &rss) != 2) rss = 0;
  fclose(f);
  return rss * 4096;
}

// One request's records, in order; emitted one at a time, interleaved with
// other requests'.
struct Script {
  struct Step {
    enum Kind : uint8_t { kSwitchIn, kSwitchOutBlocked, kPreempt, kResumeRun, kUsdt, kSysEnter, kSysExit,
                          kWakeup, kNetIn, kNetOut } kind;
    uint32_t tid;
    uint32_t other;  // wakee / usdt probe index / socket fd...
    const char* name;
    uint64_t a0, a1;
  };
  std::vector<Step> steps;
  size_t next = 0;
  uint32_t worker = 0, helper = 0;
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {
    for (int i = 0; i < kWorkers; i++) free_workers_.push_back(kWorker0 + i);
    for (int i = 0; i < kHelpers; i++) free_helpers_.push_back(kHelper0 + i);
  }

  // Generates at least `n` records, then drains in-flight requests.
  void Generate(Stream& s, size_t n) {
    while (s.records().size() < n || !live_.empty()) {
      const bool admit = s.records().size() < n;
      while (admit && live_.size() < kInFlight && !free_workers_.empty() && !free_helpers_.empty()) Admit(s);
      if (live_.empty()) break;
      const size_t i = rng_() % live_.size();
      Script& sc = live_[i];
      Emit(s, sc.steps[sc.next++]);
      if (sc.next == sc.steps.size()) {
        free_workers_.push_back(sc.worker);
        free_helpers_.push_back(sc.helper);
        live_[i] = std::move(live_.back());
        live_.pop_back();
      }
    }
  }
  uint64_t now() const { return now_; }

 private:
  uint64_t Tick() { return now_ += 1000 + rng_() % 8000; }  // ~200k records/s of trace time

  void Admit(Stream& s) {
    const uint32_t w = free_workers_.back();
    free_workers_.pop_back();
    const uint32_t h = free_helpers_.back();
    free_helpers_.pop_back();
    const uint64_t conn = next_conn_++;
    const uint64_t sk = 0xffff888000000000ULL + (conn % 4096) * 0x800;
    const uint64_t req = 1 + next_req_++;
    const int fd = 8 + static_cast<int>(conn % 64);
    const uint16_t port = static_cast<uint16_t>(20000 + conn % 40000);
    // The acceptor's part runs back to back on CPU 0.
    s.Switch(Tick(), 0, 0, kAcceptor, 0);
    s.SysExit(Tick(), 0, kAcceptor, "accept4", fd, JDW_OBJ_SOCKET, sk);
    s.SockInfo(Tick(), 0, kAcceptor, sk, 8080, port);
    s.Usdt(Tick(), 0, kAcceptor, "jackdaw_ts:dispatch", 0, static_cast<uint64_t>(fd));
    s.Wakeup(Tick(), 0, kAcceptor, w);
    s.Switch(Tick(), 0, kAcceptor, 0, 1);

    Script sc;
    sc.worker = w;
    sc.helper = h;
    using St = Script::Step;
    auto add = [&](St::Kind k, uint32_t tid, uint32_t other = 0, const char* name = nullptr, uint64_t a0 = 0,
                   uint64_t a1 = 0) { sc.steps.push_back(St{k, tid, other, name, a0, a1}); };
    const auto ufd = static_cast<uint64_t>(fd);
    add(St::kSwitchIn, w);
    add(St::kUsdt, w, 0, "jackdaw_ts:worker_pickup", 0, ufd);
    add(St::kSysEnter, w, fd, "recvfrom", sk, 4096);
    add(St::kNetIn, w, port, nullptr, sk, 300);
    add(St::kSysExit, w, 0, "recvfrom", 248);
    add(St::kUsdt, w, 0, "jackdaw_ts:request_start", req, 'F');
    add(St::kPreempt, w);
    add(St::kResumeRun, w);
    if (req % 2) {
      add(St::kUsdt, w, 0, "jackdaw_ts:rpc_signal", req);
      add(St::kSysEnter, w, -1, "futex", 0x1000, 129);
      add(St::kWakeup, w, h);
      add(St::kSysExit, w, 0, "futex", 1);
      add(St::kUsdt, w, 0, "jackdaw_ts:rpc_wait", req);
      add(St::kSysEnter, w, -1, "futex", 0x2000 + w, 137);
      add(St::kSwitchOutBlocked, w);
      add(St::kSwitchIn, h);
      add(St::kSysExit, h, 0, "futex", 0);
      add(St::kUsdt, h, 0, "jackdaw_ts:rpc_begin", req);
      add(St::kPreempt, h);
      add(St::kResumeRun, h);
      add(St::kUsdt, h, 0, "jackdaw_ts:rpc_reply", req);
      add(St::kSysEnter, h, -1, "futex", 0x2000 + w, 129);
      add(St::kWakeup, h, w);
      add(St::kSysExit, h, 0, "futex", 1);
      add(St::kSysEnter, h, -1, "futex", 0x1000, 137);
      add(St::kSwitchOutBlocked, h);
      add(St::kSwitchIn, w);
      add(St::kSysExit, w, 0, "futex", 0);
      add(St::kUsdt, w, 0, "jackdaw_ts:rpc_resume", req);
    }
    add(St::kPreempt, w);
    add(St::kResumeRun, w);
    add(St::kSysEnter, w, fd, "sendto", sk, 148);
    add(St::kNetOut, w, port, nullptr, sk, 200);
    add(St::kSysExit, w, 0, "sendto", 148);
    add(St::kUsdt, w, 0, "jackdaw_ts:request_end", req, 200);
    add(St::kSysEnter, w, fd, "close", sk, 0);
    add(St::kSysExit, w, 0, "close", 0);
    add(St::kSysEnter, w, -1, "futex", 0x3000, 137);
    add(St::kSwitchOutBlocked, w);
    live_.push_back(std::move(sc));
    // Helpers that are not used (even requests) are simply returned.
  }

  void Emit(Stream& s, const Script::Step& st) {
    using St = Script::Step;
    const auto cpu = static_cast<uint16_t>(1 + st.tid % (kCpus - 1));
    const uint64_t t = Tick();
    switch (st.kind) {
      case St::kSwitchIn:
        s.Switch(t, cpu, 0, st.tid, 0);
        break;
      case St::kSwitchOutBlocked:
        s.Switch(t, cpu, st.tid, 0, 1);
        break;
      case St::kPreempt:
        s.Switch(t, cpu, st.tid, 0, 0);
        break;
      case St::kResumeRun:
        s.Switch(t, cpu, 0, st.tid, 0);
        break;
      case St::kUsdt:
        s.Usdt(t, cpu, st.tid, st.name, st.a0, st.a1);
        break;
      case St::kSysEnter: {
        const bool sock = strcmp(st.name, "futex") != 0;
        s.SysEnter(t, cpu, st.tid, st.name, static_cast<int32_t>(st.other), sock ? JDW_OBJ_SOCKET : JDW_OBJ_FUTEX,
                   st.a0, st.a1);
        break;
      }
      case St::kSysExit:
        s.SysExit(t, cpu, st.tid, st.name, static_cast<int64_t>(st.a0));
        break;
      case St::kWakeup:
        s.Wakeup(t, cpu, st.tid, st.other);
        break;
      case St::kNetIn:
        s.Packet(JDW_EVENT_NET_RECV, t, cpu, JDW_CTX_SOFTIRQ, st.tid, 0, static_cast<uint16_t>(st.other), 8080,
                 static_cast<uint32_t>(st.a1));
        break;
      case St::kNetOut:
        s.Packet(JDW_EVENT_NET_XMIT, t, cpu, JDW_CTX_TASK, st.tid, st.a0, 8080, static_cast<uint16_t>(st.other),
                 static_cast<uint32_t>(st.a1));
        break;
    }
  }

  std::mt19937_64 rng_;
  uint64_t now_ = 1'000'000'000;
  uint64_t next_conn_ = 0, next_req_ = 0;
  std::vector<uint32_t> free_workers_, free_helpers_;
  std::vector<Script> live_;
};

struct Block {
  Stream stream;
  uint64_t span = 0;  // trace time covered
};

// Two identical blocks (see the file comment).
Block* Blocks() {
  static Block* blocks = [] {
    auto* b = new Block[2];
    for (int i = 0; i < 2; i++) {
      Generator g(1234);
      g.Generate(b[i].stream, 1'000'000);
      b[i].span = g.now() - 1'000'000'000 + 10'000'000;
    }
    return b;
  }();
  return blocks;
}

void ShiftBlock(Block& b, uint64_t delta) {
  for (const jdw_record_header* r : b.stream.records()) const_cast<jdw_record_header*>(r)->ts += delta;
}

void BM_Join(benchmark::State& state) {
  const auto total = static_cast<size_t>(state.range(0));
  Block* blocks = Blocks();
  auto sch = schema::LoadSchema("testserver", schema::DefaultSchemaDirs(""));
  if (!sch.ok()) {
    state.SkipWithError(sch.status().message().c_str());
    return;
  }
  uint64_t requests = 0, peak_sets = 0, peak_intervals = 0, late = 0, rss_growth = 0, events_joined = 0;
  double unaccounted = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const uint64_t rss0 = RssBytes();
    uint64_t rss_max = rss0;
    state.ResumeTiming();
    requests = 0;
    auto ex = Extractor::Create(*sch, blocks[0].stream.meta(), Options{}, [&](model::Request&& r) {
      requests++;
      benchmark::DoNotOptimize(r.events.data());
    });
    size_t pushed = 0;
    int which = 0;
    uint64_t shift[2] = {0, 0};
    uint64_t base = 0;  // trace time the next block starts at, relative to its generation
    while (pushed < total) {
      Block& b = blocks[which];
      if (shift[which] != base) {
        state.PauseTiming();
        ShiftBlock(b, base - shift[which]);
        shift[which] = base;
        state.ResumeTiming();
      }
      for (const jdw_record_header* r : b.stream.records()) {
        (*ex)->Push(r);
        if (++pushed % 1'000'000 == 0) {
          state.PauseTiming();
          rss_max = std::max(rss_max, RssBytes());
          state.ResumeTiming();
        }
        if (pushed == total) break;
      }
      base += b.span;
      which ^= 1;
    }
    (*ex)->Finish();
    state.PauseTiming();
    rss_max = std::max(rss_max, RssBytes());
    rss_growth = rss_max - rss0;
    const Stats& st = (*ex)->stats();
    peak_sets = st.peak_live_sets;
    peak_intervals = st.peak_live_intervals;
    late = st.late_records;
    events_joined = st.events_joined;
    unaccounted = st.cpu_observed_ns ? 100.0 * st.cpu_unattributed_ns / st.cpu_observed_ns : 0;
    ex->reset();
    // Put the blocks back where they started for the next iteration.
    for (int i = 0; i < 2; i++) {
      ShiftBlock(blocks[i], 0 - shift[i]);
    }
    state.ResumeTiming();
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(total), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["requests"] = static_cast<double>(requests);
  state.counters["events_joined"] = static_cast<double>(events_joined);
  state.counters["rss_growth_MB"] = static_cast<double>(rss_growth) / 1e6;
  state.counters["peak_live_sets"] = static_cast<double>(peak_sets);
  state.counters["peak_intervals"] = static_cast<double>(peak_intervals);
  state.counters["late"] = static_cast<double>(late);
  state.counters["unaccounted_cpu_pct"] = unaccounted;
}
BENCHMARK(BM_Join)->Arg(1'000'000)->Arg(10'000'000)->Arg(50'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace jackdaw::join

BENCHMARK_MAIN();
