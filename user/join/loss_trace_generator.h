// Generates request traces with a known schedule, then drops records as an
// overloaded capture does, for the join's property tests. The schedule is
// the ground truth (GeneratedTrace::OnCpu): what each thread really ran,
// whatever the trace kept of it.
//
// Per request, on one of two CPUs: a worker (3 in the pool, so a worker's
// next request may be on the other CPU) is switched in, begins the request,
// receives, may wake a helper that works for the request on the other CPU,
// may be preempted by another process (one per CPU) that transmits on the
// request's connection from its own context, sends, ends, closes and
// blocks. Requests on a CPU follow each other after a gap of microseconds,
// or now and then of up to half a second.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "join/test_stream.h"
#include "trace/loss_intervals.h"

namespace jackdaw::join::testing {

struct LossyTraceOptions {
  uint32_t seed = 1;
  uint32_t requests = 60;
  // Probability that each switch, wakeup, packet and syscall exit is lost.
  double drop = 0.2;
  // Write a loss interval around every dropped record (from the previous
  // kept record of its CPU to the next), as the recorder locates losses.
  bool locate_losses = false;
};

struct GeneratedTrace {
  Stream stream;
  std::vector<const jdw_record_header*> records;  // kept, in timestamp order
  uint64_t requests = 0;
  uint64_t dropped = 0;
  std::vector<trace::LossInterval> losses;  // with locate_losses
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> runs;  // tid -> on-CPU intervals

  static bool IsServerThread(uint32_t tid) { return tid < 20 || tid > 30; }
  // The time `tid` really ran within [from, to].
  uint64_t OnCpu(uint32_t tid, uint64_t from, uint64_t to) const {
    auto it = runs.find(tid);
    if (it == runs.end()) return 0;
    uint64_t ns = 0;
    for (const auto& [a, b] : it->second) {
      const uint64_t lo = std::max(a, from), hi = std::min(b, to);
      if (hi > lo) ns += hi - lo;
    }
    return ns;
  }
};

inline GeneratedTrace GenerateLossyTrace(const LossyTraceOptions& o) {
  constexpr uint32_t kWorkers[] = {11, 12, 13};
  constexpr uint32_t kHelpers[] = {31, 32};
  constexpr uint32_t kOther[] = {21, 22};  // another process, one thread per CPU
  constexpr uint32_t kOtherTgid = 4242;
  constexpr uint64_t kUs = 1000;
  GeneratedTrace g;
  Stream& s = g.stream;
  std::mt19937_64 rng(o.seed);
  auto us = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng) * kUs; };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  uint64_t cpu_free[2] = {kUs, kUs};
  std::map<uint32_t, uint64_t> thread_free;

  for (uint32_t i = 1; i <= o.requests; i++) {
    const uint32_t w = kWorkers[i % 3];
    const uint16_t c = static_cast<uint16_t>(rng() % 2);
    const uint64_t sk = 0xffff888000000000ull + i * 0x1000;
    uint64_t t = std::max(cpu_free[c], thread_free[w]) + (chance(0.1) ? us(100'000, 500'000) : us(1, 50));
    s.Switch(t, c, 0, w, 0);
    uint64_t in = t;
    s.Usdt(t += us(1, 30), c, w, "app:begin", i);
    s.SysEnter(t += us(1, 30), c, w, "recvfrom", 5, JDW_OBJ_SOCKET, sk);
    s.SysExit(t += us(2, 8), c, w, "recvfrom", 100, JDW_OBJ_SOCKET, sk);
    if (chance(0.5)) {
      const uint32_t h = kHelpers[i % 2];
      const uint16_t hc = static_cast<uint16_t>(1 - c);
      s.Wakeup(t += us(1, 10), c, w, h);
      uint64_t ht = std::max({cpu_free[hc], thread_free[h], t}) + us(1, 20);
      s.Switch(ht, hc, 0, h, 0);
      const uint64_t hin = ht;
      s.Usdt(ht += us(5, 200), hc, h, "app:work", i);
      s.Switch(ht += us(1, 20), hc, h, 0, 1);
      g.runs[h].push_back({hin, ht});
      cpu_free[hc] = thread_free[h] = ht;
    }
    if (chance(0.5)) {
      const uint32_t x = kOther[c];
      s.Switch(t += us(10, 200), c, w, x, 0, Stream::kTgid, kOtherTgid);
      g.runs[w].push_back({in, t});
      const uint64_t xin = t;
      // Stream::Packet gives the named task kOtherTgid's id, 4242.
      s.Packet(JDW_EVENT_NET_XMIT, t += us(1, 30), c, JDW_CTX_TASK, x, sk, 8080, 5555, 100);
      s.Switch(t += us(1, 30), c, x, w, 0, kOtherTgid, Stream::kTgid);
      g.runs[x].push_back({xin, t});
      in = t;
    }
    s.SysEnter(t += us(10, 300), c, w, "sendto", 5, JDW_OBJ_SOCKET, sk);
    s.SysExit(t += us(2, 8), c, w, "sendto", 100, JDW_OBJ_SOCKET, sk);
    s.Usdt(t += us(1, 10), c, w, "app:end", i);
    s.SysEnter(t += us(1, 10), c, w, "close", 5, JDW_OBJ_SOCKET, sk);
    s.Switch(t += us(1, 10), c, w, 0, 1);
    g.runs[w].push_back({in, t});
    cpu_free[c] = std::max(cpu_free[c], t);
    thread_free[w] = t;
    g.requests++;
  }

  // Records are made CPU by CPU, request by request: sort them into the
  // order the capture's merge gives, then drop.
  std::vector<const jdw_record_header*> all = s.records();
  std::stable_sort(all.begin(), all.end(),
                   [](const jdw_record_header* a, const jdw_record_header* b) { return a->ts < b->ts; });
  std::vector<bool> lost(all.size(), false);
  for (size_t k = 0; k < all.size(); k++) {
    const uint16_t type = all[k]->type;
    const bool droppable = type == JDW_EVENT_SCHED_SWITCH || type == JDW_EVENT_SCHED_WAKEUP ||
                           type == JDW_EVENT_NET_XMIT || type == JDW_EVENT_NET_RECV || type == JDW_EVENT_SYS_EXIT;
    lost[k] = droppable && chance(o.drop);
  }
  uint64_t last_kept[2] = {0, 0};
  for (size_t k = 0; k < all.size(); k++) {
    const jdw_record_header* h = all[k];
    if (!lost[k]) {
      g.records.push_back(h);
      last_kept[h->cpu] = h->ts;
      continue;
    }
    g.dropped++;
    if (!o.locate_losses) continue;
    uint64_t next = ~0ull;
    for (size_t n = k + 1; n < all.size(); n++)
      if (!lost[n] && all[n]->cpu == h->cpu) {
        next = all[n]->ts;
        break;
      }
    const uint32_t group = h->type == JDW_EVENT_SCHED_SWITCH || h->type == JDW_EVENT_SCHED_WAKEUP ? JDW_GROUP_SCHED
                           : h->type == JDW_EVENT_SYS_EXIT                                        ? JDW_GROUP_SYSCALL
                                                                                                  : JDW_GROUP_NET;
    g.losses.push_back(trace::LossInterval{h->cpu, group, last_kept[h->cpu], next, 1});
  }
  return g;
}

}  // namespace jackdaw::join::testing
