// Request extraction on real traces (Magpie §3 and §6): the test server is
// recorded with eBPF while jackdaw-load sends all six request types of
// Table 1, then the trace is joined with both shipped schemas — testserver
// (USDT probes) and tcp-threadpool (kernel events only) — and every request
// is checked against the load driver's ground truth, matched by client port.
//
// One mixed run with 5 clients and one with 1 client are recorded once for
// the whole suite (about 10 s together); every test reads them.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "join/extractor.h"
#include "schema/schema.h"
#include "support/test_support.h"
#include "trace/trace_reader.h"
#include "validate/experiment.h"

namespace jackdaw {
namespace {

constexpr char kMix[] = "A:1,B:1,C:1,D:1,E:1,F:1";
constexpr const char* kSchemas[] = {"testserver", "tcp-threadpool"};

constexpr double kMs = 1e6;

// One line of the load driver's ground truth.
struct Truth {
  std::string type;
  uint16_t client_port = 0;
  uint64_t send_ns = 0, recv_ns = 0;  // CLOCK_MONOTONIC, as the trace
  uint64_t server_cpu_ns = 0;         // the server's own thread-CPU measurement
};

std::vector<Truth> ReadTruth(const std::string& path) {
  std::vector<Truth> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    out.push_back(Truth{j.at("type").get<std::string>(), j.at("local_port").get<uint16_t>(),
                        j.at("send_mono_ns").get<uint64_t>(), j.at("recv_mono_ns").get<uint64_t>(),
                        j.value("server_cpu_ns", uint64_t{0})});
  }
  return out;
}

// One recorded run, joined with one schema, each request paired with the
// ground-truth entry of its connection: same client port, and overlapping in
// time (a run of a few hundred connections reuses client ports, so the port
// alone is ambiguous).
struct Joined {
  std::vector<model::Request> requests;
  join::Stats stats;
  std::vector<Truth> truth;
  std::vector<const Truth*> truth_of;  // per request; nullptr if none or several
  std::vector<int> hits;               // per truth entry: requests that matched it
  uint64_t merged = 0, unmatched = 0;

  std::vector<const model::Request*> OfType(const std::string& type) const {
    std::vector<const model::Request*> out;
    for (size_t i = 0; i < requests.size(); i++)
      if (truth_of[i] && truth_of[i]->type == type) out.push_back(&requests[i]);
    return out;
  }
};

uint16_t PortOf(const std::string& endpoint) {
  const size_t c = endpoint.rfind(':');
  return c == std::string::npos ? 0 : static_cast<uint16_t>(std::stoul(endpoint.substr(c + 1)));
}

// CPU per thread of one request (task context).
std::map<uint32_t, uint64_t> CpuByThread(const model::Request& r) {
  std::map<uint32_t, uint64_t> out;
  for (const auto& e : r.events)
    if (e.tid && e.synthetic == model::SyntheticKind::kNone) out[e.tid] += e.cpu_ns;
  return out;
}

// Threads holding at least `min_ns` of the request's CPU.
std::vector<uint64_t> BusyThreads(const model::Request& r, uint64_t min_ns) {
  std::vector<uint64_t> out;
  for (const auto& [tid, ns] : CpuByThread(r))
    if (ns >= min_ns) out.push_back(ns);
  return out;
}

bool HasEdge(const model::Request& r, uint32_t from_tid, uint32_t to_tid) {
  for (const auto& e : r.edges)
    if (r.events[e.from].tid == from_tid && r.events[e.to].tid == to_tid) return true;
  return false;
}

std::string Describe(const model::Request& r) {
  std::string s = "request " + std::to_string(r.id) + " cpu " + std::to_string(r.totals.cpu_ns / 1e6) + " ms, threads";
  for (const auto& [tid, ns] : CpuByThread(r)) s += " " + std::to_string(tid) + ":" + std::to_string(ns / 1e6);
  return s;
}

// The steal column of /proc/stat's "cpu" line, summed over the machine, in ns.
uint64_t MachineStealNs() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t field[8] = {};
  stat >> cpu;
  for (uint64_t& f : field) stat >> f;
  if (cpu != "cpu") return 0;
  return field[7] * (1000000000ull / uint64_t(sysconf(_SC_CLK_TCK)));
}

class RealTraceExtraction : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // JDW_JOIN_TRACES=DIR: analyse DIR/mixed_c{5,1}.jdw and their ground
    // truth (kept by an earlier run) instead of recording; no root needed.
    if (const char* dir = getenv("JDW_JOIN_TRACES")) {
      for (int clients : {5, 1}) {
        auto* run = new validate::RecordedRun;
        run->trace = std::string(dir) + "/mixed_c" + std::to_string(clients) + ".jdw";
        run->truth = std::string(dir) + "/mixed_c" + std::to_string(clients) + ".truth.jsonl";
        runs_[clients] = run;
      }
      return;
    }
    if (!testing::IsRoot()) return;
    opts_.bin_dir = testing::BinDir();
    opts_.work_dir = testing::TempPath("join-extraction");
    std::filesystem::create_directories(opts_.work_dir);
    for (int clients : {5, 1}) {
      // 5 clients: 120 requests, about 20 of each type; 1 client: 48.
      validate::Workload w{"x", "mixed", kMix, clients, clients == 5 ? 120 : 48};
      const uint64_t steal_before = MachineStealNs();
      auto r = validate::RecordWorkload(opts_, w);
      ASSERT_TRUE(r.ok()) << r.status().message();
      runs_[clients] = new validate::RecordedRun(*r);
      steal_ns_[clients] = MachineStealNs() - steal_before;
    }
  }
  static void TearDownTestSuite() {
    for (auto& [clients, run] : runs_) delete run;
    runs_.clear();
    for (auto& [key, j] : joined_) delete j;
    joined_.clear();
    // JDW_KEEP_TRACES=1 keeps the traces and ground truth for a look.
    if (opts_.work_dir.empty()) return;
    if (getenv("JDW_KEEP_TRACES")) {
      fprintf(stderr, "traces kept in %s\n", opts_.work_dir.c_str());
    } else {
      std::filesystem::remove_all(opts_.work_dir);
    }
  }
  void SetUp() override {
    if (!getenv("JDW_JOIN_TRACES")) JDW_REQUIRE_ROOT();
    ASSERT_EQ(runs_.size(), 2u);
  }

  static std::vector<std::string> SchemaDirs() { return schema::DefaultSchemaDirs(testing::BinDir() + "/jackdaw"); }

  // Joined once per (run, schema), then shared.
  static const Joined& Join(int clients, const std::string& schema_name) {
    Joined*& j = joined_[{clients, schema_name}];
    if (j) return *j;
    j = new Joined;
    const validate::RecordedRun& run = *runs_.at(clients);
    j->truth = ReadTruth(run.truth);
    auto reader = trace::TraceReader::Open(run.trace);
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    auto sch = schema::LoadSchema(schema_name, SchemaDirs());
    EXPECT_TRUE(sch.ok()) << sch.status().message();
    if (!reader.ok() || !sch.ok()) return *j;
    auto ex = join::ExtractRequests(**reader, *sch, join::Options{});
    EXPECT_TRUE(ex.ok()) << ex.status().message();
    if (!ex.ok()) return *j;
    j->requests = std::move(ex->requests);
    j->stats = ex->stats;
    std::unordered_multimap<uint16_t, size_t> by_port;
    for (size_t i = 0; i < j->truth.size(); i++) by_port.emplace(j->truth[i].client_port, i);
    j->hits.assign(j->truth.size(), 0);
    for (const auto& r : j->requests) {
      std::set<size_t> hits;
      for (const auto& c : r.connections) {
        auto [lo, hi] = by_port.equal_range(PortOf(c.remote));
        for (auto it = lo; it != hi; ++it) {
          const Truth& t = j->truth[it->second];
          if (r.start_ns <= t.recv_ns && t.send_ns <= r.end_ns) hits.insert(it->second);
        }
      }
      for (size_t h : hits) j->hits[h]++;
      if (hits.empty()) j->unmatched++;
      if (hits.size() > 1) j->merged++;
      j->truth_of.push_back(hits.size() == 1 ? &j->truth[*hits.begin()] : nullptr);
    }
    return *j;
  }

  // The checks, grouped into three tests below: ctest runs each test in a
  // process of its own, and each process records the runs again.
  static void EveryRequestExtractedExactlyOnceWithBothSchemas();
  static void CpuIsAccountedToRequests();
  static void SpinRequestsGetTheirCpu();
  static void ParspinRunsTwoThreadsFifteenMsEach();
  static void RpcspinShowsTheHandoverEdges();
  static void StaticFilesCarryTheirDiskReads();

  static inline validate::RunOptions opts_;
  static inline std::map<int, validate::RecordedRun*> runs_;
  // Time the hypervisor stole from the machine's vCPUs while each run was
  // recorded (0 for kept traces): on-CPU time for sched_switch, not thread
  // CPU time for the server's own measurement.
  static inline std::map<int, uint64_t> steal_ns_;
  static uint64_t StealNs(int clients) { return steal_ns_.count(clients) ? steal_ns_.at(clients) : 0; }
  static inline std::map<std::pair<int, std::string>, Joined*> joined_;
};

// Per-request CPU against the server's own thread-CPU measurement. Most
// requests are within 10%; others miss it for reasons outside the join:
//  - short: a switch-in lost by the capture leaves the run time before the
//    thread's next record unaccounted (up to the whole spin when nothing
//    preempts it); each one (Stats::sched_running_inferred,
//    sched_chain_breaks) can cost one request;
//  - long: on a VM the time the hypervisor steals from a vCPU is on-CPU time
//    for sched_switch but not thread CPU time for the server (a 7 ms slice
//    measured as 3 ms). A burst of steal lengthens every request running
//    through it, so the bound is on the time, not only the count: at most
//    one in ten (or two), or more when their excess over the server's
//    figure together fits in the time stolen from the machine while the run
//    was recorded; and never one by more than 35% or than that stolen time
//    (15 ms of one 30 ms spin was seen under a loaded host).
class CpuCheck {
 public:
  CpuCheck(std::string what, const join::Stats& st, uint64_t run_steal_ns)
      : what_(std::move(what)),
        losses_(st.sched_running_inferred + st.sched_chain_breaks),
        run_steal_ms_(double(run_steal_ns) / 1e6) {}
  ~CpuCheck() {
    EXPECT_LE(uint64_t(short_), losses_) << what_ << ": " << short_ << " of " << n_
                                          << " short of the server's figure by more than 10%, with " << losses_
                                          << " switch-ins missing from the capture";
    if (long_ > std::max(2, n_ / 10)) {
      EXPECT_LE(long_excess_ms_, run_steal_ms_)
          << what_ << ": " << long_ << " of " << n_ << " over the server's figure by more than 10%, by "
          << long_excess_ms_ << " ms together, more than the " << run_steal_ms_
          << " ms stolen from the machine during the run";
    }
  }
  void Add(double got_ms, double want_ms, const std::string& detail) {
    n_++;
    if (std::abs(got_ms - want_ms) <= want_ms / 10) return;
    if (got_ms < want_ms) {
      short_++;
      return;
    }
    long_++;
    long_excess_ms_ += got_ms - want_ms;
    EXPECT_LE(got_ms, std::max(want_ms * 1.35, want_ms + run_steal_ms_))
        << what_ << ": " << detail << " (" << run_steal_ms_ << " ms stolen from the machine during the run)";
  }
  // For one thread's share, which the server does not measure apart: its
  // nominal spin, which steal time can only lengthen.
  void AddAtLeast(double got_ms, double nominal_ms) {
    n_++;
    if (got_ms < nominal_ms * 0.9) short_++;
  }

 private:
  std::string what_;
  uint64_t losses_;
  double run_steal_ms_;
  int n_ = 0, short_ = 0, long_ = 0;
  double long_excess_ms_ = 0;
};

// Goal of issue 4: every request extracted, none merged or split, with both
// schemas, serialised and concurrent.
void RealTraceExtraction::EveryRequestExtractedExactlyOnceWithBothSchemas() {
  for (int clients : {5, 1}) {
    for (const char* schema : kSchemas) {
      SCOPED_TRACE(std::string(schema) + ", " + std::to_string(clients) + " clients");
      const Joined& j = Join(clients, schema);
      const std::string summary = join::FormatSummary(j.stats);
      EXPECT_EQ(j.truth.size(), clients == 5 ? 120u : 48u);
      EXPECT_EQ(j.requests.size(), j.truth.size()) << summary;
      EXPECT_EQ(j.merged, 0u) << summary;
      EXPECT_EQ(j.unmatched, 0u) << summary;
      for (size_t i = 0; i < j.truth.size(); i++) {
        EXPECT_EQ(j.hits[i], 1) << j.truth[i].type << " request from client port " << j.truth[i].client_port
                                << (j.hits[i] ? " split" : " missing") << "; " << summary;
      }
      // The recording stops when the last client has its response, which
      // may be before the server closed that connection: at most one
      // request per client is cut by the end of the trace.
      EXPECT_LE(j.stats.requests_timed_out, uint64_t(clients));
      // With the server's own request ids nothing ever points two ways.
      if (std::string(schema) == "testserver") {
        EXPECT_EQ(j.stats.seed_conflicts, 0u);
      }
    }
  }
}

// Accounted CPU (Magpie Table 2's "Accntd CPU %"): CPU charged to requests
// over the server's on-CPU time while it served them; and the charged CPU of
// the spinning types against the server's own thread-CPU measurement.
void RealTraceExtraction::CpuIsAccountedToRequests() {
  for (int clients : {5, 1}) {
    for (const char* schema : kSchemas) {
      SCOPED_TRACE(std::string(schema) + ", " + std::to_string(clients) + " clients");
      const Joined& j = Join(clients, schema);
      const join::Stats& st = j.stats;
      ASSERT_GT(st.cpu_observed_ns, 0u);
      // Requests only: validate::AnalyzeRun's accounted CPU adds connection
      // life (tcp-threadpool's accepts and closes, 0.3-0.5% here), so this
      // bound is the stricter one. A run the capture's lost switch-out left
      // "on CPU" used to inflate cpu_observed_ns with time nobody ran
      // (ThreadTracker::TakesCpu now ends it at its last record).
      const double accounted = double(st.cpu_charged_ns + st.softirq_charged_ns) / double(st.cpu_observed_ns);
      EXPECT_GE(accounted, 0.97) << join::FormatSummary(st);
      uint64_t charged = 0, server = 0;
      for (size_t i = 0; i < j.requests.size(); i++) {
        if (!j.truth_of[i] || !j.truth_of[i]->server_cpu_ns) continue;
        charged += j.requests[i].totals.cpu_ns;
        server += j.truth_of[i]->server_cpu_ns;
      }
      ASSERT_GT(server, 0u);
      // Steal time can only lengthen what the trace sees, so it widens the
      // upper side alone, by no more than was stolen machine-wide.
      const uint64_t steal = steal_ns_.count(clients) ? steal_ns_.at(clients) : 0;
      EXPECT_GE(double(charged), double(server) * 0.95);
      EXPECT_LE(double(charged), double(server) * 1.05 + double(steal))
          << "charged " << charged << " ns, server " << server << " ns, stolen " << steal << " ns";
    }
  }
}

// A longspin (30 ms) and B shortspin (15 ms), one thread each: every request
// gets its spin, with both schemas. Per request the reference is the
// server's own thread-CPU measurement: on a VM the same spin loop costs
// more CPU when the hypervisor steals the vCPU (a B spin was seen taking
// 27 ms), so the nominal figure holds for the median only.
void RealTraceExtraction::SpinRequestsGetTheirCpu() {
  for (int clients : {5, 1}) {
    for (const char* schema : kSchemas) {
      SCOPED_TRACE(std::string(schema) + ", " + std::to_string(clients) + " clients");
      const Joined& j = Join(clients, schema);
      for (const auto& [type, ms] : {std::pair<std::string, double>{"A", 30}, {"B", 15}}) {
        const auto reqs = j.OfType(type);
        ASSERT_GE(reqs.size(), clients == 5 ? 10u : 4u) << type;
        CpuCheck check(type, j.stats, StealNs(clients));
        std::vector<double> cpu;
        for (size_t i = 0; i < j.requests.size(); i++) {
          const model::Request& q = j.requests[i];
          if (!j.truth_of[i] || j.truth_of[i]->type != type) continue;
          check.Add(q.totals.cpu_ns / kMs, j.truth_of[i]->server_cpu_ns / kMs, Describe(q));
          EXPECT_EQ(BusyThreads(q, 1'000'000).size(), 1u) << type << ": " << Describe(q);
          cpu.push_back(q.totals.cpu_ns / kMs);
        }
        std::nth_element(cpu.begin(), cpu.begin() + cpu.size() / 2, cpu.end());
        EXPECT_NEAR(cpu[cpu.size() / 2], ms, ms / 10) << type << " median";
      }
    }
  }
}

// E parspin: the worker and a helper each spin 15 ms, concurrently. With the
// server's own events every request shows both halves on two threads.
// Without them (black box) a helper that takes queued work without sleeping
// leaves no kernel event naming the request (LANGUAGE.md, known limits), so
// only the total over all E requests is checked there.
void RealTraceExtraction::ParspinRunsTwoThreadsFifteenMsEach() {
  for (int clients : {5, 1}) {
    SCOPED_TRACE(std::to_string(clients) + " clients");
    const Joined& j = Join(clients, "testserver");
    EXPECT_GE(j.OfType("E").size(), clients == 5 ? 10u : 4u);
    {
      CpuCheck total("E", j.stats, StealNs(clients)), half("E, one thread", j.stats, StealNs(clients));
      for (size_t i = 0; i < j.requests.size(); i++) {
        const model::Request& q = j.requests[i];
        if (!j.truth_of[i] || j.truth_of[i]->type != "E") continue;
        const double server_ms = j.truth_of[i]->server_cpu_ns / kMs;
        total.Add(q.totals.cpu_ns / kMs, server_ms, Describe(q));
        // Two threads, each with its 15 ms spin.
        const auto busy = BusyThreads(q, 5'000'000);
        ASSERT_EQ(busy.size(), 2u) << Describe(q);
        for (uint64_t ns : busy) half.AddAtLeast(ns / kMs, 15);
      }
    }

    const Joined& bb = Join(clients, "tcp-threadpool");
    uint64_t charged = 0, server = 0;
    for (size_t i = 0; i < bb.requests.size(); i++) {
      if (!bb.truth_of[i] || bb.truth_of[i]->type != "E") continue;
      charged += bb.requests[i].totals.cpu_ns;
      server += bb.truth_of[i]->server_cpu_ns;
    }
    ASSERT_GT(server, 0u);
    EXPECT_NEAR(double(charged) / double(server), 1.0, 0.1) << "black box, E in total";
  }
}

// F rpcspin: the worker spins 7.5 ms, hands over to a helper and waits; the
// helper spins 15 ms and hands back; the worker spins 7.25 ms more. The
// request must show both handovers as causal edges between the two threads
// (Signal on one, Resume on the other), and each thread's share.
void RealTraceExtraction::RpcspinShowsTheHandoverEdges() {
  for (int clients : {5, 1}) {
    SCOPED_TRACE(std::to_string(clients) + " clients");
    const Joined& j = Join(clients, "testserver");
    const auto reqs = j.OfType("F");
    EXPECT_GE(reqs.size(), clients == 5 ? 10u : 4u);
    CpuCheck helper_check("F helper", j.stats, StealNs(clients)), worker_check("F worker", j.stats, StealNs(clients)),
        total_check("F", j.stats, StealNs(clients));
    for (size_t i = 0; i < j.requests.size(); i++) {
      if (!j.truth_of[i] || j.truth_of[i]->type != "F") continue;
      const model::Request* q = &j.requests[i];
      const double server_ms = j.truth_of[i]->server_cpu_ns / kMs;
      // The worker is the thread that writes the response; the helper the
      // other one that spins.
      uint32_t worker = 0;
      for (const auto& e : q->events)
        if (e.symbol == "sys_enter:sendto" || e.symbol == "sys_enter:write") worker = e.tid;
      ASSERT_NE(worker, 0u) << Describe(*q);
      uint32_t helper = 0;
      for (const auto& [tid, ns] : CpuByThread(*q))
        if (tid != worker && ns > 5'000'000) helper = tid;
      ASSERT_NE(helper, 0u) << Describe(*q);
      // 15 ms on the helper, 7.5 + 7.25 ms on the worker; together what the
      // server measured.
      const auto cpu = CpuByThread(*q);
      helper_check.AddAtLeast(cpu.at(helper) / kMs, 15);
      worker_check.AddAtLeast(cpu.at(worker) / kMs, 14.75);
      total_check.Add(q->totals.cpu_ns / kMs, server_ms, Describe(*q));
      EXPECT_TRUE(HasEdge(*q, worker, helper)) << "worker -> helper handover missing: " << Describe(*q);
      EXPECT_TRUE(HasEdge(*q, helper, worker)) << "helper -> worker handover missing: " << Describe(*q);
      for (const auto& e : q->edges) {
        EXPECT_EQ(q->events[e.from].synthetic, model::SyntheticKind::kSignal);
        EXPECT_EQ(q->events[e.to].synthetic, model::SyntheticKind::kResume);
        EXPECT_LE(q->events[e.from].ts_ns, q->events[e.to].ts_ns);
      }
    }
  }
}

// C small (12 KB) and D tiny (5 KB) are read from disk with O_DIRECT on every
// request: the block I/O is charged to the request that issued it (also
// when the device queue was busy and the request was issued to the device
// after its thread went to sleep). Two things leave a request without its
// I/O: a completion the capture lost (Stats::block_completions_missing, or
// block_completions_unseen_at_end when the trace ends within a second of the
// issue), and
// the block layer merging two requests' reads of adjacent blocks into one
// device request, which completes once, for the thread that issued it (that
// request then carries both reads' bytes).
void RealTraceExtraction::StaticFilesCarryTheirDiskReads() {
  for (int clients : {5, 1}) {
    for (const char* schema : kSchemas) {
      SCOPED_TRACE(std::string(schema) + ", " + std::to_string(clients) + " clients");
      const Joined& j = Join(clients, schema);
      uint64_t without_io = 0, merged_io = 0;
      for (const auto& [type, bytes] : {std::pair<std::string, uint64_t>{"C", 12 * 1024}, {"D", 5 * 1024}}) {
        const auto reqs = j.OfType(type);
        EXPECT_GE(reqs.size(), clients == 5 ? 10u : 4u) << type;
        for (const model::Request* q : reqs) {
          EXPECT_GE(q->totals.net_bytes_out, bytes) << type << ": the file goes back to the client";
          EXPECT_LT(q->totals.cpu_ns / kMs, 5) << type << ": no spin in a static file: " << Describe(*q);
          // Its read. (A write may come too: an O_DIRECT read first writes
          // back the file's dirty pages, and the kernel names the reader
          // as the submitter of what its unplug sends to the device.)
          uint64_t reads = 0, read_bytes = 0;
          for (const auto& e : q->events) {
            if (e.symbol != "block_complete:read") continue;
            reads++;
            read_bytes += e.disk_bytes;
          }
          EXPECT_GE(q->totals.disk_bytes, read_bytes);
          if (reads == 0) {
            without_io++;
            continue;
          }
          EXPECT_EQ(reads, 1u) << type << ": " << Describe(*q);
          EXPECT_GE(read_bytes, bytes) << type << ": " << Describe(*q);
          if (read_bytes > bytes + 4096) merged_io++;  // more than its own blocks
        }
      }
      EXPECT_LE(without_io,
                j.stats.block_completions_missing + j.stats.block_completions_unseen_at_end + merged_io);
    }
  }
}

// Issue 4's extraction goal and Table 2's accounted CPU.
TEST_F(RealTraceExtraction, EveryRequestExtractedOnceWithItsCpuAccounted) {
  EveryRequestExtractedExactlyOnceWithBothSchemas();
  CpuIsAccountedToRequests();
}

// A and B (one thread), E (two threads at once), F (a handover and back).
TEST_F(RealTraceExtraction, CpuSpinsGetTheirThreadsAndHandovers) {
  SpinRequestsGetTheirCpu();
  ParspinRunsTwoThreadsFifteenMsEach();
  RpcspinShowsTheHandoverEdges();
}

TEST_F(RealTraceExtraction, StaticFilesGetTheirDiskReads) { StaticFilesCarryTheirDiskReads(); }

}  // namespace
}  // namespace jackdaw
