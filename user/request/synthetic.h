// Synthetic requests as the temporal join would emit them, for tests,
// benchmarks and `jackdaw demo`.
//
// RequestFactory builds the six request types of Magpie Table 1 (the
// testserver's URLs, user/testserver/request_types.h) by simulating their
// threads: each thread has a clock, CPU chunks advance it, causal edges
// (Signal->Resume) delay the destination until the source reached it.
// Jitter is uniform and seeded, so a factory with the same seed and calls
// produces the same requests:
//   * spin chunks vary by +-Jitter::spin (relative), small syscall costs by
//     +-Jitter::small;
//   * with Jitter::preempt, chunks longer than 2 ms are cut by sched_switch
//     events (the CPU split between the pieces) and delayed by a run-queue
//     wait of up to Jitter::max_runq_ns each, which the totals record;
//   * wake-up latency (Signal to Resume) is uniform in
//     [min_wake_ns, max_wake_ns], so the interleaving of the two threads'
//     events varies between requests.
// Symbols follow the join's naming ("sys_enter:read", "usdt:...", "signal").
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "request/request.h"

namespace jackdaw::model::synthetic {

// Builds one Request from events added in any order: Build() sorts them by
// timestamp (stable), remaps edges, lists threads by first appearance and
// fills start/end and the resource totals.
class RequestBuilder {
 public:
  explicit RequestBuilder(uint64_t id) : id_(id) {}

  // Returns a handle for Edge().
  uint32_t Add(uint32_t tid, uint64_t ts_ns, std::string symbol,
               SyntheticKind kind = SyntheticKind::kNone, uint64_t cpu_ns = 0,
               uint64_t disk_bytes = 0, uint64_t net_bytes = 0);
  void Edge(uint32_t from, uint32_t to, EdgeKind kind = EdgeKind::kSync) {
    edges_.push_back({from, to, kind});
  }
  // An edge the join derived from a kernel wake-up (black-box schemas).
  void WakeEdge(uint32_t from, uint32_t to) { Edge(from, to, EdgeKind::kWakeup); }
  void AddRunqWait(uint64_t ns) { totals_.runq_wait_ns += ns; }
  void AddBlocked(BlockReason reason, uint64_t ns);
  void SetTgid(uint32_t tgid) { tgid_ = tgid; }

  Request Build() &&;

 private:
  uint64_t id_;
  uint32_t tgid_ = 4242;
  std::vector<RequestEvent> events_;
  std::vector<CausalEdge> edges_;
  ResourceTotals totals_;
};

struct Jitter {
  double spin = 0.05;
  double small = 0.3;
  bool preempt = false;
  uint64_t max_runq_ns = 0;
  uint64_t min_wake_ns = 20'000;
  uint64_t max_wake_ns = 60'000;
};

// What the kernel alone shows of one request of a thread-pool server (an
// acceptor hands the connection to a pool worker, which may hand part of
// the work to a helper): a black-box schema sees a hand-off or a join only
// as a wake-up, so which of them appear depends on which threads had to
// sleep.
struct BlackBoxView {
  bool acceptor_woke_worker = true;  // the worker was asleep when the connection came
  bool worker_woke_helper = true;    // the helper was asleep when handed its task
  bool worker_waited = true;         // the worker had to wait for the helper's result
  // The worker's wake-up went to another pool thread, which found the task
  // already taken (by the helper, awake) and went back to sleep.
  bool idle_wakee = false;
};

struct BlackBoxThreads {
  uint32_t acceptor = 101, worker = 102, helper = 103, idle = 104;
};

// Number of distinct long (~40 event) shapes MakeLong() knows.
inline constexpr int kNumLongShapes = 8;

class RequestFactory {
 public:
  explicit RequestFactory(uint64_t seed, Jitter jitter = {}) : rng_(seed), jitter_(jitter) {}

  // type: 'A'..'F' (Magpie Table 1). helper_tid is used by E and F only.
  Request Make(char type, uint64_t id, uint64_t start_ns, uint32_t worker_tid, uint32_t helper_tid);

  // A request of about 40 events: reads from disk, writes to the network,
  // an RPC to a helper thread; `shape` in [0, kNumLongShapes) sets counts
  // and sizes.
  Request MakeLong(int shape, uint64_t id, uint64_t start_ns, uint32_t worker_tid,
                   uint32_t helper_tid);

  // A request of type 'B' (15 ms on the worker), 'E' (the worker hands a
  // helper 15 ms and spins 15 ms itself, then waits for it) or 'F' (7.5 ms,
  // a helper's 15 ms while the worker waits, 7.25 ms) as kernel events and
  // wake-up edges only (EdgeKind::kWakeup), the way the black-box schema
  // extracts it: syscalls, scheduler records, packets. `view` says which
  // threads had to sleep; for F the worker always waits.
  Request MakeBlackBox(char type, uint64_t id, uint64_t start_ns, const BlackBoxView& view,
                       const BlackBoxThreads& tids = {});

  // per_type requests of each letter in `types`, shuffled, started 1 ms
  // apart, on a pool of worker/helper tids. truth[i] is the letter of
  // result[i]; ids are 1..n.
  std::vector<Request> MakeMix(std::string_view types, size_t per_type, std::string* truth);

  Jitter& jitter() { return jitter_; }

 private:
  uint64_t Spin(uint64_t base_ns);
  uint64_t Small(uint64_t base_ns);
  uint64_t Wake();
  // Runs `cpu_ns` of CPU on `tid` from *clock, ending with `symbol`;
  // inserts preemptions when enabled. Returns the handle of the final event.
  uint32_t Run(RequestBuilder* b, uint32_t tid, uint64_t* clock, uint64_t cpu_ns,
               std::string symbol, SyntheticKind kind = SyntheticKind::kNone,
               uint64_t disk_bytes = 0, uint64_t net_bytes = 0);

  std::mt19937_64 rng_;
  Jitter jitter_;
};

}  // namespace jackdaw::model::synthetic
