#include "request/synthetic.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "jackdaw/abi.h"

namespace jackdaw::model::synthetic {
namespace {

uint16_t RecordTypeFor(std::string_view symbol, SyntheticKind kind) {
  if (kind != SyntheticKind::kNone) return 0;
  auto starts = [&](std::string_view p) { return symbol.substr(0, p.size()) == p; };
  if (starts("sys_enter")) return JDW_EVENT_SYS_ENTER;
  if (starts("sys_exit")) return JDW_EVENT_SYS_EXIT;
  if (starts("usdt")) return JDW_EVENT_USDT;
  if (starts("block_complete")) return JDW_EVENT_BLOCK_COMPLETE;
  if (starts("sched_switch")) return JDW_EVENT_SCHED_SWITCH;
  if (starts("sched_wakeup")) return JDW_EVENT_SCHED_WAKEUP;
  return 0;
}

}  // namespace

uint32_t RequestBuilder::Add(uint32_t tid, uint64_t ts_ns, std::string symbol, SyntheticKind kind,
                             uint64_t cpu_ns, uint64_t disk_bytes, uint64_t net_bytes) {
  RequestEvent e;
  e.ts_ns = ts_ns;
  e.tsc = ts_ns;  // synthetic: a 1 GHz TSC
  e.tid = tid;
  e.cpu = static_cast<uint16_t>(tid % 2);
  e.record_type = RecordTypeFor(symbol, kind);
  e.synthetic = kind;
  e.symbol = std::move(symbol);
  e.cpu_ns = cpu_ns;
  e.disk_bytes = disk_bytes;
  e.net_bytes = net_bytes;
  events_.push_back(std::move(e));
  return static_cast<uint32_t>(events_.size() - 1);
}

void RequestBuilder::AddBlocked(BlockReason reason, uint64_t ns) {
  totals_.blocked_ns += ns;
  switch (reason) {
    case BlockReason::kDisk:
      totals_.blocked_disk_ns += ns;
      break;
    case BlockReason::kNetwork:
      totals_.blocked_net_ns += ns;
      break;
    case BlockReason::kFutex:
      totals_.blocked_futex_ns += ns;
      break;
    case BlockReason::kPipe:
      totals_.blocked_pipe_ns += ns;
      break;
    default:
      totals_.blocked_other_ns += ns;
      break;
  }
}

Request RequestBuilder::Build() && {
  std::vector<uint32_t> order(events_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return events_[a].ts_ns < events_[b].ts_ns; });
  std::vector<uint32_t> new_index(events_.size());
  Request r;
  r.id = id_;
  r.tgid = tgid_;
  r.totals = totals_;
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = i;
    RequestEvent& e = events_[order[i]];
    if (std::find(r.threads.begin(), r.threads.end(), e.tid) == r.threads.end())
      r.threads.push_back(e.tid);
    r.totals.cpu_ns += e.cpu_ns;
    r.totals.disk_bytes += e.disk_bytes;
    if (e.disk_bytes) r.totals.disk_ios++;
    if (e.symbol.find("recv") != std::string::npos)
      r.totals.net_bytes_in += e.net_bytes;
    else
      r.totals.net_bytes_out += e.net_bytes;
    r.events.push_back(std::move(e));
  }
  for (const CausalEdge& edge : edges_)
    r.edges.push_back({new_index[edge.from], new_index[edge.to], edge.kind});
  if (!r.events.empty()) {
    r.start_ns = r.events.front().ts_ns;
    r.end_ns = r.events.back().ts_ns;
  }
  r.start_tsc = r.start_ns;
  r.end_tsc = r.end_ns;
  r.start_wall_ns = r.start_ns + 1'700'000'000'000'000'000ull;
  r.end_wall_ns = r.end_ns + 1'700'000'000'000'000'000ull;
  r.connections.push_back({"127.0.0.1:8080", "127.0.0.1:" + std::to_string(40000 + id_ % 20000)});
  return r;
}

uint64_t RequestFactory::Spin(uint64_t base_ns) {
  std::uniform_real_distribution<double> u(-jitter_.spin, jitter_.spin);
  return static_cast<uint64_t>(static_cast<double>(base_ns) * (1.0 + u(rng_)));
}

uint64_t RequestFactory::Small(uint64_t base_ns) {
  std::uniform_real_distribution<double> u(-jitter_.small, jitter_.small);
  return static_cast<uint64_t>(static_cast<double>(base_ns) * (1.0 + u(rng_)));
}

uint64_t RequestFactory::Wake() {
  std::uniform_int_distribution<uint64_t> u(jitter_.min_wake_ns,
                                            std::max(jitter_.min_wake_ns, jitter_.max_wake_ns));
  return u(rng_);
}

uint32_t RequestFactory::Run(RequestBuilder* b, uint32_t tid, uint64_t* clock, uint64_t cpu_ns,
                             std::string symbol, SyntheticKind kind, uint64_t disk_bytes,
                             uint64_t net_bytes) {
  constexpr uint64_t kPreemptAbove = 2'000'000;
  if (jitter_.preempt && cpu_ns > kPreemptAbove) {
    // Cut the chunk into pieces at random points; each cut is a preemption.
    uint64_t pieces = 1 + cpu_ns / 5'000'000;
    std::uniform_int_distribution<uint64_t> cut(1, cpu_ns - 1);
    std::vector<uint64_t> cuts;
    for (uint64_t i = 0; i < pieces; ++i) cuts.push_back(cut(rng_));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    uint64_t done = 0;
    std::uniform_int_distribution<uint64_t> runq(0, jitter_.max_runq_ns);
    for (uint64_t c : cuts) {
      *clock += c - done;
      b->Add(tid, *clock, "sched_switch", SyntheticKind::kNone, c - done);
      done = c;
      uint64_t wait = runq(rng_);
      *clock += wait;
      b->AddRunqWait(wait);
    }
    cpu_ns -= done;
  }
  *clock += cpu_ns;
  return b->Add(tid, *clock, std::move(symbol), kind, cpu_ns, disk_bytes, net_bytes);
}

Request RequestFactory::Make(char type, uint64_t id, uint64_t start_ns, uint32_t worker_tid,
                             uint32_t helper_tid) {
  RequestBuilder b(id);
  const uint32_t w = worker_tid, h = helper_tid;
  uint64_t wc = start_ns;
  b.Add(w, wc, "usdt:jackdaw:request_start");
  Run(&b, w, &wc, Small(15'000), "sys_enter:recvfrom", SyntheticKind::kNone, 0, 160);
  auto finish = [&](uint64_t send_cpu, uint64_t body_bytes) {
    Run(&b, w, &wc, send_cpu, "sys_enter:sendto", SyntheticKind::kNone, 0, 240 + body_bytes);
    Run(&b, w, &wc, Small(5'000), "usdt:jackdaw:request_end");
  };
  switch (type) {
    case 'A':
    case 'B':
      finish(Spin(type == 'A' ? 30'000'000 : 15'000'000), 0);
      break;
    case 'C':
    case 'D': {
      const uint64_t bytes = type == 'C' ? 12 * 1024 : 5 * 1024;
      Run(&b, w, &wc, Small(20'000), "sys_enter:openat");
      Run(&b, w, &wc, Small(10'000), "sys_enter:read");
      b.Add(w, wc, "io_start", SyntheticKind::kIoStart);
      std::uniform_int_distribution<uint64_t> device(100'000, 300'000);
      uint64_t blocked = device(rng_);
      wc += blocked;
      b.AddBlocked(BlockReason::kDisk, blocked);
      b.Add(w, wc, "block_complete:read", SyntheticKind::kNone, 0, bytes);
      Run(&b, w, &wc, Small(8'000), "sys_exit:read");
      finish(Small(30'000), bytes);
      break;
    }
    case 'E': {
      uint32_t sig = Run(&b, w, &wc, Small(10'000), "signal", SyntheticKind::kSignal);
      uint64_t hc = wc + Wake();
      uint32_t res = Run(&b, h, &hc, Small(3'000), "resume", SyntheticKind::kResume);
      b.Edge(sig, res);
      Run(&b, w, &wc, Spin(15'000'000), "wait", SyntheticKind::kWait);
      uint32_t hsig = Run(&b, h, &hc, Spin(15'000'000), "signal", SyntheticKind::kSignal);
      uint64_t woke = std::max(wc, hc) + Wake();
      b.AddBlocked(BlockReason::kFutex, woke - wc);
      wc = woke;
      uint32_t wres = Run(&b, w, &wc, Small(3'000), "resume", SyntheticKind::kResume);
      b.Edge(hsig, wres);
      Run(&b, h, &hc, Small(2'000), "wait", SyntheticKind::kWait);
      finish(Small(30'000), 0);
      break;
    }
    case 'F': {
      uint32_t sig = Run(&b, w, &wc, Spin(7'500'000), "signal", SyntheticKind::kSignal);
      uint64_t hc = wc + Wake();
      uint32_t res = Run(&b, h, &hc, Small(3'000), "resume", SyntheticKind::kResume);
      b.Edge(sig, res);
      Run(&b, w, &wc, Small(2'000), "wait", SyntheticKind::kWait);
      uint32_t hsig = Run(&b, h, &hc, Spin(15'000'000), "signal", SyntheticKind::kSignal);
      uint64_t woke = std::max(wc, hc) + Wake();
      b.AddBlocked(BlockReason::kFutex, woke - wc);
      wc = woke;
      uint32_t wres = Run(&b, w, &wc, Small(3'000), "resume", SyntheticKind::kResume);
      b.Edge(hsig, wres);
      Run(&b, h, &hc, Small(2'000), "wait", SyntheticKind::kWait);
      finish(Spin(7'250'000), 0);
      break;
    }
    default:
      finish(Small(30'000), 0);
      break;
  }
  return std::move(b).Build();
}

Request RequestFactory::MakeBlackBox(char type, uint64_t id, uint64_t start_ns,
                                     const BlackBoxView& view, const BlackBoxThreads& t) {
  RequestBuilder b(id);
  constexpr uint32_t kIrq = 0;  // interrupt context
  const SyntheticKind kNone = SyntheticKind::kNone;
  // `from` runs `work` ns, then wakes `to` through a futex: the waker's futex
  // call and wake-up record, the wakee's switch-in and futex return, and
  // the join's Signal/Resume pair with a wake-up edge.
  auto wake = [&](uint32_t from, uint64_t* fc, uint64_t work, uint32_t to, uint64_t* tc) {
    Run(&b, from, fc, work + Small(6'000), "sys_enter:futex");
    Run(&b, from, fc, Small(3'000), "sched_wakeup");
    const uint32_t sig = b.Add(from, *fc, "signal", SyntheticKind::kSignal);
    *tc = std::max(*tc, *fc + Wake());
    const uint32_t res = b.Add(to, *tc, "resume", SyntheticKind::kResume);
    b.Add(to, *tc, "switch_in");
    Run(&b, to, tc, Small(5'000), "sys_enter:futex");
    b.WakeEdge(sig, res);
  };
  // `tid` runs `work` ns, then sleeps in a futex.
  auto sleep = [&](uint32_t tid, uint64_t* c, uint64_t work) {
    Run(&b, tid, c, work + Small(8'000), "sys_enter:futex");
    Run(&b, tid, c, Small(5'000), "switch_out:blocked");
  };
  uint64_t ac = start_ns;
  Run(&b, t.acceptor, &ac, Small(12'000), "sys_exit:accept4");
  b.Add(kIrq, ac + 2'000, "net_recv", kNone, 1'500, 0, 146);
  uint64_t wc = ac + Wake();
  if (view.acceptor_woke_worker) wake(t.acceptor, &ac, 0, t.worker, &wc);
  Run(&b, t.acceptor, &ac, Small(5'000), "switch_out:blocked");
  Run(&b, t.worker, &wc, Small(5'000), "sys_enter:read");
  Run(&b, t.worker, &wc, Small(2'000), "sys_exit:read");
  // The worker runs `work` ns, then hands the helper its task: a wake-up if
  // the helper slept; with idle_wakee, one that another pool thread answers
  // in vain while the helper, awake, takes the task off the queue.
  uint64_t hc = 0;
  auto hand_off = [&](uint64_t work) {
    if (view.idle_wakee) {
      uint64_t ic = 0;
      wake(t.worker, &wc, work, t.idle, &ic);
      Run(&b, t.idle, &ic, Small(4'000), "sys_enter:futex");
      Run(&b, t.idle, &ic, Small(5'000), "switch_out:blocked");
    } else if (view.worker_woke_helper) {
      wake(t.worker, &wc, work, t.helper, &hc);
      return;
    } else {
      wc += work;
      b.Add(t.worker, wc, "switch_out:preempted", kNone, work);  // its CPU so far
    }
    hc = wc + 2 * Wake();
  };
  // The helper runs `work` ns; its result goes back by a wake-up if the
  // worker waits for it; then it sleeps until its next task.
  auto reply = [&](uint64_t work, bool waited) {
    if (waited) {
      wake(t.helper, &hc, work, t.worker, &wc);
      Run(&b, t.helper, &hc, Small(3'000), "sys_enter:futex");
    } else {
      Run(&b, t.helper, &hc, work + Small(3'000), "sys_enter:futex");
    }
    Run(&b, t.helper, &hc, Small(5'000), "switch_out:blocked");
  };
  switch (type) {
    case 'E': {
      hand_off(0);
      // Both spin 15 ms; which finishes first decides whether the worker
      // waits: the other one is held back on a run queue (time, not CPU).
      const uint64_t w_spin = Spin(15'000'000), h_spin = Spin(15'000'000);
      Run(&b, t.helper, &hc, h_spin, "switch_out:preempted");
      Run(&b, t.worker, &wc, w_spin, "switch_out:preempted");
      if (view.worker_waited) {
        sleep(t.worker, &wc, 0);
        if (hc < wc + 100'000) hc = wc + 100'000;
        reply(0, true);
        Run(&b, t.worker, &wc, Small(20'000), "sys_enter:sendto");
      } else {
        reply(0, false);
        if (wc < hc + 100'000) {
          b.AddRunqWait(hc + 100'000 - wc);
          wc = hc + 100'000;
        }
        Run(&b, t.worker, &wc, Small(20'000), "sys_enter:sendto");
      }
      break;
    }
    case 'F':
      hand_off(Spin(7'500'000));
      sleep(t.worker, &wc, 0);
      hc = std::max(hc, wc);
      reply(Spin(15'000'000), true);
      Run(&b, t.worker, &wc, Spin(7'250'000), "sys_enter:sendto");
      break;
    default:
      Run(&b, t.worker, &wc, Spin(15'000'000), "sys_enter:sendto");
      break;
  }
  Run(&b, t.worker, &wc, Small(15'000), "net_xmit", kNone, 0, 340);
  b.Add(kIrq, wc + 10'000, "net_recv", kNone, 1'000, 0, 52);
  Run(&b, t.worker, &wc, Small(30'000), "sys_exit:sendto");
  Run(&b, t.worker, &wc, Small(12'000), "net_xmit", kNone, 0, 66);
  Run(&b, t.worker, &wc, Small(12'000), "sys_exit:close");
  return std::move(b).Build();
}

Request RequestFactory::MakeLong(int shape, uint64_t id, uint64_t start_ns, uint32_t worker_tid,
                                 uint32_t helper_tid) {
  RequestBuilder b(id);
  const uint32_t w = worker_tid, h = helper_tid;
  const uint64_t s = static_cast<uint64_t>(shape);
  uint64_t wc = start_ns;
  b.Add(w, wc, "usdt:jackdaw:request_start");
  Run(&b, w, &wc, Small(15'000), "sys_enter:recvfrom", SyntheticKind::kNone, 0, 200 + 10 * s);
  const int reads = 9 + shape % 3;
  for (int i = 0; i < reads; ++i) {
    Run(&b, w, &wc, Small(10'000), "sys_enter:read");
    uint64_t dev = 50'000 + 10'000 * s;
    wc += dev;
    b.AddBlocked(BlockReason::kDisk, dev);
    b.Add(w, wc, "block_complete:read", SyntheticKind::kNone, 0, 4096 * (1 + s % 3));
    Run(&b, w, &wc, Spin(200'000 * (1 + s)), "sys_enter:write", SyntheticKind::kNone, 0,
        1024 * (1 + s / 2));
  }
  uint32_t sig = Run(&b, w, &wc, Small(10'000), "signal", SyntheticKind::kSignal);
  uint64_t hc = wc + Wake();
  uint32_t res = Run(&b, h, &hc, Small(3'000), "resume", SyntheticKind::kResume);
  b.Edge(sig, res);
  Run(&b, w, &wc, Small(2'000), "wait", SyntheticKind::kWait);
  uint32_t hsig = Run(&b, h, &hc, Spin(1'000'000 * (1 + s)), "signal", SyntheticKind::kSignal);
  uint64_t woke = std::max(wc, hc) + Wake();
  b.AddBlocked(BlockReason::kFutex, woke - wc);
  wc = woke;
  uint32_t wres = Run(&b, w, &wc, Small(3'000), "resume", SyntheticKind::kResume);
  b.Edge(hsig, wres);
  Run(&b, h, &hc, Small(2'000), "wait", SyntheticKind::kWait);
  Run(&b, w, &wc, Small(30'000), "sys_enter:sendto", SyntheticKind::kNone, 0, 4096);
  Run(&b, w, &wc, Small(5'000), "usdt:jackdaw:request_end");
  return std::move(b).Build();
}

std::vector<Request> RequestFactory::MakeMix(std::string_view types, size_t per_type,
                                             std::string* truth) {
  std::string letters;
  for (char t : types)
    for (size_t i = 0; i < per_type; ++i) letters.push_back(t);
  std::shuffle(letters.begin(), letters.end(), rng_);
  std::vector<Request> out;
  out.reserve(letters.size());
  std::uniform_int_distribution<uint32_t> worker(1000, 1007), helper(2000, 2003);
  std::uniform_int_distribution<uint64_t> offset(0, 500'000);
  for (size_t i = 0; i < letters.size(); ++i) {
    uint64_t start = 1'000'000'000ull + i * 1'000'000ull + offset(rng_);
    out.push_back(Make(letters[i], i + 1, start, worker(rng_), helper(rng_)));
  }
  if (truth) *truth = letters;
  return out;
}

}  // namespace jackdaw::model::synthetic
