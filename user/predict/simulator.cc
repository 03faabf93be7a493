#include "predict/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <random>

#include "predict/cpu_pool.h"

namespace jackdaw::predict {

double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint32_t kThreadBits = 20;

// One simulated request in flight.
struct Instance {
  const RequestScript* script = nullptr;
  uint32_t kind = 0;
  int32_t client = -1;
  double start = 0;
  uint32_t threads_left = 0;
  uint32_t ios_pending = 0;  // submitted, not yet served (may outlive the request)
  bool done = false;
  double cpu_scale = 1, disk_scale = 1, wait_scale = 1;
  std::vector<uint32_t> pc;
  std::vector<double> blocked_at;     // per thread: when it last blocked
  std::vector<uint8_t> woken;         // per thread: woke since its last CPU burst
  std::vector<double> cpu_left;       // per thread: its burst past the woken slice
  std::vector<uint8_t> fired, io_done;
  std::vector<int32_t> edge_waiter, io_waiter;
  double cpu_t = 0, disk_t = 0, wait_t = 0;
};

enum class EvType : uint8_t { kResume, kWoken, kDiskDone, kArrival, kClientStart };
struct Ev {
  double t;
  uint64_t seq;
  EvType type;
  uint64_t a;
  bool operator>(const Ev& o) const { return t > o.t || (t == o.t && seq > o.seq); }
};

struct DiskJob {
  uint32_t inst, io;
  double service;
};

class Simulation {
 public:
  Simulation(const std::vector<SimKind>& kinds, const SimConfig& c)
      : kinds_(kinds), c_(c), cpu_(c.cpus, c.cpu_capacity, c.background_threads), rng_(c.seed) {
    std::vector<double> w;
    for (const SimKind& k : kinds) w.push_back(k.scripts.empty() ? 0 : std::max(0.0, k.share));
    pick_kind_ = std::discrete_distribution<uint32_t>(w.begin(), w.end());
    warmup_ = c.warmup ? c.warmup : c.requests / 10;
    latencies_.resize(kinds.size());
    sums_.resize(kinds.size());
  }

  SimResult Run() {
    if (c_.clients > 0) {
      for (uint32_t i = 0; i < c_.clients; ++i) Schedule(0, EvType::kClientStart, i);
    } else {
      Schedule(NextInterarrival(), EvType::kArrival, 0);
    }
    const uint64_t target = warmup_ + c_.requests;
    while (completed_ < target) {
      const double t_cpu = cpu_.NextCompletion();
      const double t_ev = events_.empty() ? kInf : events_.top().t;
      if (t_cpu == kInf && t_ev == kInf) break;  // nothing can happen any more
      ++processed_;
      if (t_cpu <= t_ev) {
        now_ = t_cpu;
        const uint64_t job = cpu_.PopCompleted(now_);
        Instance& in = inst_[job >> kThreadBits];
        const uint32_t th = job & ((1u << kThreadBits) - 1);
        if (in.cpu_left[th] > 0) {  // its woken slice is done: the rest runs as others do
          cpu_.Add(now_, job, in.cpu_left[th]);
          in.cpu_left[th] = 0;
          DrainReady();
          continue;
        }
        in.cpu_t += now_ - in.blocked_at[th];
        in.pc[th]++;
        RunThread(job >> kThreadBits, th);
      } else {
        const Ev e = events_.top();
        events_.pop();
        now_ = e.t;
        Dispatch(e);
      }
      DrainReady();
      if (in_flight_ > c_.max_in_flight) {
        saturated_ = true;
        break;
      }
    }
    return Result();
  }

 private:
  void Schedule(double t, EvType type, uint64_t a) { events_.push({t, seq_++, type, a}); }

  double NextInterarrival() {
    return std::exponential_distribution<double>(c_.rate_per_s / 1e9)(rng_);
  }

  void Dispatch(const Ev& e) {
    switch (e.type) {
      case EvType::kResume: {
        Instance& in = inst_[e.a >> kThreadBits];
        const uint32_t th = e.a & ((1u << kThreadBits) - 1);
        in.wait_t += now_ - in.blocked_at[th];
        in.pc[th]++;
        in.woken[th] = 1;
        ready_.push_back(e.a);
        break;
      }
      case EvType::kWoken: ready_.push_back(e.a); break;
      case EvType::kDiskDone: DiskDone(); break;
      case EvType::kArrival:
        Start(-1);
        Schedule(now_ + NextInterarrival(), EvType::kArrival, 0);
        break;
      case EvType::kClientStart: Start(static_cast<int32_t>(e.a)); break;
    }
  }

  uint32_t Allocate() {
    if (!free_.empty()) {
      const uint32_t i = free_.back();
      free_.pop_back();
      return i;
    }
    inst_.emplace_back();
    return static_cast<uint32_t>(inst_.size() - 1);
  }

  void Start(int32_t client) {
    const uint32_t k = pick_kind_(rng_);
    const SimKind& kind = kinds_[k];
    const RequestScript* s =
        kind.scripts[std::uniform_int_distribution<size_t>(0, kind.scripts.size() - 1)(rng_)];
    const uint32_t id = Allocate();
    Instance& in = inst_[id];
    in.script = s;
    in.kind = k;
    in.client = client;
    in.start = now_;
    in.done = false;
    in.threads_left = static_cast<uint32_t>(s->threads.size());
    in.ios_pending = 0;
    in.cpu_scale = kind.cpu_scale / c_.cpu_speed;
    in.disk_scale = kind.disk_scale / c_.disk_speed;
    in.wait_scale = kind.wait_scale;
    in.pc.assign(s->threads.size(), 0);
    in.blocked_at.assign(s->threads.size(), now_);
    in.woken.assign(s->threads.size(), 1);
    in.cpu_left.assign(s->threads.size(), 0);
    in.fired.assign(s->edges, 0);
    in.edge_waiter.assign(s->edges, -1);
    in.io_done.assign(s->ios, 0);
    in.io_waiter.assign(s->ios, -1);
    in.cpu_t = in.disk_t = in.wait_t = 0;
    TrackFlight();
    ++in_flight_;
    if (in.threads_left == 0) {
      Finish(id);
      return;
    }
    for (uint32_t t = 0; t < s->threads.size(); ++t) ready_.push_back((uint64_t(id) << kThreadBits) | t);
  }

  void DrainReady() {
    while (!ready_.empty()) {
      const uint64_t job = ready_.front();
      ready_.pop_front();
      RunThread(static_cast<uint32_t>(job >> kThreadBits), job & ((1u << kThreadBits) - 1));
    }
  }

  // A blocked thread may run again: after the wake-up latency.
  void Wake(uint32_t id, uint32_t th) {
    inst_[id].woken[th] = 1;
    const uint64_t job = (uint64_t(id) << kThreadBits) | th;
    if (c_.wakeup_ns > 0) Schedule(now_ + c_.wakeup_ns, EvType::kWoken, job);
    else ready_.push_back(job);
  }

  // Runs thread `th` of instance `id` from its pc until it blocks or ends.
  void RunThread(uint32_t id, uint32_t th) {
    Instance& in = inst_[id];
    const std::vector<Step>& steps = in.script->threads[th].steps;
    const uint64_t job = (uint64_t(id) << kThreadBits) | th;
    while (in.pc[th] < steps.size()) {
      const Step& s = steps[in.pc[th]];
      switch (s.kind) {
        case StepKind::kCpu: {
          const double work = static_cast<double>(s.ns) * in.cpu_scale;
          if (work <= 0) break;
          in.blocked_at[th] = now_;
          if (in.woken[th] && c_.woken_slice_ns > 0) {
            const double first = std::min(work, c_.woken_slice_ns);
            in.cpu_left[th] = work - first;
            cpu_.Add(now_, job, first, /*woken=*/true);
          } else {
            cpu_.Add(now_, job, work);
          }
          in.woken[th] = 0;
          return;
        }
        case StepKind::kDelay: {
          const double d = static_cast<double>(s.ns) * in.wait_scale;
          if (d <= 0) break;
          in.blocked_at[th] = now_;
          Schedule(now_ + d + (s.arg ? 0 : c_.wakeup_ns), EvType::kResume, job);
          return;
        }
        case StepKind::kDiskSubmit: {
          in.ios_pending++;
          disk_queue_.push_back({id, s.arg, static_cast<double>(s.ns) * in.disk_scale});
          if (disk_queue_.size() == 1) StartDisk();
          break;
        }
        case StepKind::kDiskWait:
          if (!in.io_done[s.arg]) {
            in.io_waiter[s.arg] = static_cast<int32_t>(th);
            in.blocked_at[th] = now_;
            return;
          }
          break;
        case StepKind::kSignal:
          in.fired[s.arg] = 1;
          if (in.edge_waiter[s.arg] >= 0) {
            const uint32_t w = static_cast<uint32_t>(in.edge_waiter[s.arg]);
            in.edge_waiter[s.arg] = -1;
            in.pc[w]++;
            Wake(id, w);
          }
          break;
        case StepKind::kWait:
          if (!in.fired[s.arg]) {
            in.edge_waiter[s.arg] = static_cast<int32_t>(th);
            return;
          }
          break;
      }
      in.pc[th]++;
    }
    if (--in.threads_left == 0) Finish(id);
  }

  void StartDisk() {
    disk_busy_start_ = now_;
    Schedule(now_ + disk_queue_.front().service, EvType::kDiskDone, 0);
  }

  void DiskDone() {
    const DiskJob j = disk_queue_.front();
    disk_queue_.pop_front();
    disk_busy_ += now_ - disk_busy_start_;
    Instance& in = inst_[j.inst];
    in.io_done[j.io] = 1;
    in.ios_pending--;
    if (in.io_waiter[j.io] >= 0) {
      const uint32_t w = static_cast<uint32_t>(in.io_waiter[j.io]);
      in.io_waiter[j.io] = -1;
      in.disk_t += now_ - in.blocked_at[w];
      in.pc[w]++;
      Wake(j.inst, w);
    }
    if (in.done && in.ios_pending == 0) free_.push_back(j.inst);
    if (!disk_queue_.empty()) StartDisk();
  }

  void Finish(uint32_t id) {
    Instance& in = inst_[id];
    in.done = true;
    TrackFlight();
    --in_flight_;
    ++completed_;
    if (completed_ == warmup_) {
      measure_start_ = now_;
      cpu_busy_at_start_ = cpu_.BusyNs(now_);
      disk_busy_at_start_ = DiskBusy();
      in_flight_area_ = 0;
    } else if (completed_ > warmup_) {
      const double lat = now_ - in.start;
      latencies_[in.kind].push_back(lat);
      Sums& s = sums_[in.kind];
      s.cpu += in.cpu_t;
      s.disk += in.disk_t;
      s.wait += in.wait_t;
      s.cpu_work += static_cast<double>(in.script->cpu_ns) * in.cpu_scale;
    }
    if (in.client >= 0) {
      double gap = c_.client_gap_ns;
      if (c_.think_ns > 0) gap += std::exponential_distribution<double>(1.0 / c_.think_ns)(rng_);
      Schedule(now_ + gap, EvType::kClientStart, static_cast<uint64_t>(in.client));
    }
    if (in.ios_pending == 0) free_.push_back(id);
  }

  // Little's law's L: the time-average of requests in flight.
  void TrackFlight() {
    in_flight_area_ += (now_ - last_flight_t_) * static_cast<double>(in_flight_);
    last_flight_t_ = now_;
  }

  double DiskBusy() const { return disk_busy_ + (disk_queue_.empty() ? 0 : now_ - disk_busy_start_); }

  SimResult Result() {
    SimResult r;
    r.events = processed_;
    r.saturated = saturated_;
    const double window = now_ - measure_start_;
    r.measured_s = window / 1e9;
    r.completed = completed_ > warmup_ ? completed_ - warmup_ : 0;
    if (window > 0) {
      r.throughput_per_s = static_cast<double>(r.completed) / r.measured_s;
      r.cpu_utilisation = (cpu_.BusyNs(now_) - cpu_busy_at_start_) / (window * c_.cpus);
      r.disk_utilisation = (DiskBusy() - disk_busy_at_start_) / window;
      TrackFlight();
      r.mean_in_flight = in_flight_area_ / window;
    }
    double cpu_t = 0, cpu_work = 0;
    for (const Sums& s : sums_) cpu_t += s.cpu, cpu_work += s.cpu_work;
    if (cpu_work > 0) r.cpu_stretch = cpu_t / cpu_work;
    r.bottleneck = r.disk_utilisation > r.cpu_utilisation ? "disk" : "cpu";
    for (size_t k = 0; k < kinds_.size(); ++k) {
      KindStats ks;
      ks.label = kinds_[k].label;
      std::vector<double>& v = latencies_[k];
      ks.completed = v.size();
      if (!v.empty()) {
        const double n = static_cast<double>(v.size());
        double sum = 0;
        for (double x : v) sum += x;
        ks.mean_ms = sum / n / 1e6;
        ks.p50_ms = Quantile(v, 0.5) / 1e6;
        ks.p95_ms = Quantile(v, 0.95) / 1e6;
        ks.p99_ms = Quantile(v, 0.99) / 1e6;
        ks.throughput_per_s = window > 0 ? n / r.measured_s : 0;
        const Sums& s = sums_[k];
        ks.cpu_ms = s.cpu_work / n / 1e6;
        ks.cpu_queue_ms = std::max(0.0, s.cpu - s.cpu_work) / n / 1e6;
        ks.disk_ms = s.disk / n / 1e6;
        ks.wait_ms = s.wait / n / 1e6;
        const double cpu = ks.cpu_ms + ks.cpu_queue_ms;
        ks.bottleneck = cpu >= ks.disk_ms && cpu >= ks.wait_ms ? "cpu" : ks.disk_ms >= ks.wait_ms ? "disk" : "wait";
      }
      r.kinds.push_back(std::move(ks));
    }
    return r;
  }

  struct Sums {
    double cpu = 0, disk = 0, wait = 0, cpu_work = 0;
  };

  const std::vector<SimKind>& kinds_;
  const SimConfig& c_;
  CpuPool cpu_;
  std::mt19937_64 rng_;
  std::discrete_distribution<uint32_t> pick_kind_;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> events_;
  std::deque<uint64_t> ready_;
  std::deque<DiskJob> disk_queue_;
  std::vector<Instance> inst_;
  std::vector<uint32_t> free_;
  std::vector<std::vector<double>> latencies_;
  std::vector<Sums> sums_;
  double now_ = 0, measure_start_ = 0, cpu_busy_at_start_ = 0, disk_busy_at_start_ = 0;
  double disk_busy_ = 0, disk_busy_start_ = 0, in_flight_area_ = 0, last_flight_t_ = 0;
  uint64_t seq_ = 0, completed_ = 0, warmup_ = 0, in_flight_ = 0, processed_ = 0;
  bool saturated_ = false;
};

}  // namespace

SimResult Simulate(const std::vector<SimKind>& kinds, const SimConfig& config) {
  return Simulation(kinds, config).Run();
}

}  // namespace jackdaw::predict
