// N CPUs under processor sharing: k runnable threads each progress at
// min(1, N/k) of a CPU, the fluid limit of a fair round-robin scheduler
// with a short quantum (what CFS approximates).
//
// Other work on the machine (what the recording's run-queue waits show
// besides the requests' own) is modelled one of two ways (calibrate.h):
//  * `capacity`: the requests' threads get at most this many CPUs between
//    them (other work in another cgroup, which CFS shares the CPUs with
//    group by group);
//  * `background`: that many always-runnable threads share the CPUs with
//    the requests' threads, thread by thread (other work in the same group).
//
// Implemented with virtual time: V advances at the per-thread rate, a burst
// of w entered at V0 finishes when V reaches V0 + w, so every arrival and
// completion costs O(log k) however many threads share the CPUs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <limits>
#include <queue>
#include <vector>

namespace jackdaw::predict {

class CpuPool {
 public:
  // capacity 0: all `cpus`.
  explicit CpuPool(uint32_t cpus, double capacity = 0, double background = 0)
      : capacity_(capacity > 0 ? std::min<double>(capacity, cpus) : cpus), background_(background) {}

  // A burst of `work_ns` (CPU time at speed 1) becomes runnable at `now`.
  // A `woken` burst (a thread's first CPU after a wake-up, up to the
  // scheduler's slice: the caller splits it) runs before the others, as
  // the kernel places a woken thread ahead of those that kept running;
  // woken bursts share the CPUs fairly among themselves.
  void Add(double now, uint64_t job, double work_ns, bool woken = false);
  // When the next burst finishes (infinity when none runs).
  double NextCompletion() const;
  // Removes the burst finishing at `now` (== NextCompletion()) and returns
  // its job.
  uint64_t PopCompleted(double now);

  size_t runnable() const { return cls_[0].heap.size() + cls_[1].heap.size(); }
  // CPU-time delivered to bursts so far (not to the background), up to
  // `now`.
  double BusyNs(double now) const;

 private:
  struct Burst {
    double finish_v;
    uint64_t seq;  // ties finish in arrival order: deterministic
    uint64_t job;
    bool operator>(const Burst& o) const { return finish_v > o.finish_v || (finish_v == o.finish_v && seq > o.seq); }
  };
  // One class of bursts sharing what the CPUs give it, with its own
  // virtual time.
  struct Class {
    double v = 0;
    std::priority_queue<Burst, std::vector<Burst>, std::greater<Burst>> heap;
  };
  // Per-burst rate of class 1 (woken) and class 0 (the rest).
  void Rates(double* woken, double* rest) const;
  void Advance(double now);
  double NextIn(int c, double rate) const;

  double capacity_;
  double background_;
  double now_ = 0, busy_ = 0;
  uint64_t seq_ = 0;
  Class cls_[2];  // [0] running on, [1] woken
};

}  // namespace jackdaw::predict
