// --perfetto: a Chrome JSON trace (the "traceEvents" format that
// ui.perfetto.dev and chrome://tracing import). Layout in report.h.
//
// Complete events ("ph":"X") on one track must nest properly; Perfetto
// flags partial overlaps. Requests and canonical threads are therefore put
// on lanes by interval partitioning (each item takes the lowest-numbered
// lane free at its start), and per-thread spans of different requests that
// overlap on the same real thread are clipped to start where the previous
// one ended (their args keep the true times).
#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "common/safe_file.h"
#include "report/report.h"
#include "report/report_util.h"

namespace jackdaw::report {
namespace {

using nlohmann::json;

constexpr int kPidRequests = 1;
constexpr int kPidActual = 2;
constexpr int kPidCanonical = 3;
// Lane tids live far above real tids (pid_max <= 2^22) so that no importer
// confuses a lane with a thread.
constexpr uint32_t kLaneTidBase = 1u << 28;

double Us(uint64_t ns_rel) { return static_cast<double>(ns_rel) / 1000.0; }

// Interval partitioning: lane per item, lowest free lane first. Items are
// [start, end]; an item may start exactly where another ended.
std::vector<uint32_t> AssignLanes(const std::vector<std::pair<uint64_t, uint64_t>>& items,
                                  uint32_t* num_lanes) {
  std::vector<uint32_t> order(items.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return items[a].first < items[b].first; });
  std::vector<uint32_t> lane(items.size());
  using Busy = std::pair<uint64_t, uint32_t>;  // end, lane
  std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
  std::set<uint32_t> free;
  uint32_t lanes = 0;
  for (uint32_t i : order) {
    while (!busy.empty() && busy.top().first <= items[i].first) {
      free.insert(busy.top().second);
      busy.pop();
    }
    uint32_t l;
    if (!free.empty()) {
      l = *free.begin();
      free.erase(free.begin());
    } else {
      l = lanes++;
    }
    lane[i] = l;
    busy.emplace(std::max(items[i].second, items[i].first), l);
  }
  *num_lanes = lanes;
  return lane;
}

json Meta(const char* what, int pid, uint32_t tid, json args) {
  json e{{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", std::move(args)}};
  if (tid != 0) e["tid"] = tid;
  return e;
}

}  // namespace

std::string ClusterLetters(uint32_t cluster) {
  std::string s;
  uint32_t v = cluster;
  do {
    s.insert(s.begin(), static_cast<char>('a' + v % 26));
    v /= 26;
  } while (v > 0);
  return s;
}

StatusOr<json> BuildPerfettoTrace(const model::WorkloadModel& m,
                                  std::span<const model::Request> requests,
                                  const PerfettoOptions& options) {
  if (requests.size() != m.requests.size() || m.canonical.size() != m.requests.size())
    return ErrStatus("perfetto: %zu requests given for a model of %zu", requests.size(),
                     m.requests.size());
  const size_t n = requests.size();
  uint64_t t0 = UINT64_MAX;
  size_t total_events = 0;
  for (const model::Request& r : requests) {
    if (!r.events.empty()) t0 = std::min(t0, r.events.front().ts_ns);
    t0 = std::min(t0, r.start_ns);
    total_events += r.events.size();
  }
  if (n == 0) t0 = 0;
  auto rel = [&](uint64_t ns) { return ns >= t0 ? ns - t0 : 0; };
  auto name_of = [&](size_t i) {
    return m.requests[i].anomaly ? std::string("anomaly")
                                 : "cluster " + ClusterLetters(m.requests[i].cluster);
  };

  json events = json::array();
  events.push_back(Meta("process_name", kPidRequests, 0, {{"name", "requests (by cluster)"}}));
  events.push_back(Meta("process_sort_index", kPidRequests, 0, {{"sort_index", 0}}));
  events.push_back(Meta("process_name", kPidActual, 0, {{"name", "actual schedule (threads)"}}));
  events.push_back(Meta("process_sort_index", kPidActual, 0, {{"sort_index", 1}}));
  events.push_back(
      Meta("process_name", kPidCanonical, 0, {{"name", "canonical forms (unlimited CPUs)"}}));
  events.push_back(Meta("process_sort_index", kPidCanonical, 0, {{"sort_index", 2}}));

  // 1. One slice per request.
  std::vector<std::pair<uint64_t, uint64_t>> spans(n);
  for (size_t i = 0; i < n; ++i)
    spans[i] = {rel(requests[i].start_ns), rel(std::max(requests[i].end_ns, requests[i].start_ns))};
  uint32_t request_lanes = 0;
  std::vector<uint32_t> lane = AssignLanes(spans, &request_lanes);
  for (uint32_t l = 0; l < request_lanes; ++l)
    events.push_back(Meta("thread_name", kPidRequests, kLaneTidBase + l,
                          {{"name", "requests lane " + std::to_string(l)}}));
  for (size_t i = 0; i < n; ++i) {
    const model::RequestSummary& r = m.requests[i];
    events.push_back({{"ph", "X"},
                      {"cat", "request"},
                      {"name", name_of(i)},
                      {"pid", kPidRequests},
                      {"tid", kLaneTidBase + lane[i]},
                      {"ts", Us(spans[i].first)},
                      {"dur", Us(spans[i].second - spans[i].first)},
                      {"args",
                       {{"request", r.id},
                        {"cluster", m.clusters[r.cluster].label},
                        {"distance", r.distance},
                        {"latency_ms", static_cast<double>(r.latency_ns) / 1e6},
                        {"canonical_latency_ms", static_cast<double>(r.canonical_latency_ns) / 1e6},
                        {"cpu_ms", static_cast<double>(r.demand.cpu_ns) / 1e6},
                        {"disk_bytes", r.demand.disk_bytes},
                        {"net_bytes", r.demand.net_bytes}}}});
  }

  // 2. Actual schedule: per thread, the span of each request's activity.
  struct ThreadSpan {
    uint64_t start, end;
    size_t request;
  };
  std::map<uint32_t, std::vector<ThreadSpan>> by_tid;
  for (size_t i = 0; i < n; ++i) {
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> first_last;
    for (const model::RequestEvent& e : requests[i].events) {
      auto [it, inserted] = first_last.emplace(e.tid, std::make_pair(e.ts_ns, e.ts_ns));
      if (!inserted) it->second.second = e.ts_ns;
    }
    for (auto& [tid, fl] : first_last) by_tid[tid].push_back({rel(fl.first), rel(fl.second), i});
  }
  const bool instants = total_events <= options.max_instant_events;
  for (auto& [tid, list] : by_tid) {
    events.push_back(
        Meta("thread_name", kPidActual, tid, {{"name", "tid " + std::to_string(tid)}}));
    std::stable_sort(list.begin(), list.end(),
                     [](const ThreadSpan& a, const ThreadSpan& b) { return a.start < b.start; });
    uint64_t prev_end = 0;
    for (const ThreadSpan& s : list) {
      uint64_t start = std::max(s.start, prev_end);
      uint64_t end = std::max(s.end, start);
      prev_end = end;
      events.push_back({{"ph", "X"},
                        {"cat", "thread"},
                        {"name", name_of(s.request)},
                        {"pid", kPidActual},
                        {"tid", tid},
                        {"ts", Us(start)},
                        {"dur", Us(end - start)},
                        {"args",
                         {{"request", m.requests[s.request].id},
                          {"first_event_us", Us(s.start)},
                          {"last_event_us", Us(s.end)}}}});
    }
  }
  if (instants) {
    for (size_t i = 0; i < n; ++i) {
      for (const model::RequestEvent& e : requests[i].events) {
        events.push_back({{"ph", "i"},
                          {"s", "t"},
                          {"cat", "event"},
                          {"name", e.symbol},
                          {"pid", kPidActual},
                          {"tid", e.tid},
                          {"ts", Us(rel(e.ts_ns))},
                          {"args",
                           {{"request", m.requests[i].id},
                            {"cpu_ns", e.cpu_ns},
                            {"disk_bytes", e.disk_bytes},
                            {"net_bytes", e.net_bytes}}}});
      }
    }
  }

  // Causal edges (a Signal on one thread resuming another: SYNC/WAIT and
  // wakeups) as flow arrows between the actual threads' slices. A flow
  // binds to the slice enclosing its timestamp on that thread ("bp":"e"
  // makes the arrow's head bind to the enclosing slice, not the next one).
  uint64_t flow_id = 0;
  for (size_t i = 0; i < n; ++i) {
    const model::Request& r = requests[i];
    for (const model::CausalEdge& edge : r.edges) {
      if (edge.from >= r.events.size() || edge.to >= r.events.size()) continue;
      const model::RequestEvent& from = r.events[edge.from];
      const model::RequestEvent& to = r.events[edge.to];
      if (from.tid == 0 || to.tid == 0 || from.tid == to.tid) continue;
      ++flow_id;
      const json args = {{"request", m.requests[i].id}};
      events.push_back({{"ph", "s"},
                        {"cat", "edge"},
                        {"name", "signal"},
                        {"id", flow_id},
                        {"pid", kPidActual},
                        {"tid", from.tid},
                        {"ts", Us(rel(from.ts_ns))},
                        {"args", args}});
      events.push_back({{"ph", "f"},
                        {"bp", "e"},
                        {"cat", "edge"},
                        {"name", "signal"},
                        {"id", flow_id},
                        {"pid", kPidActual},
                        {"tid", to.tid},
                        {"ts", Us(rel(std::max(to.ts_ns, from.ts_ns)))},
                        {"args", args}});
    }
  }

  // Calls to traced processes (requests across processes): an arrow from
  // the caller's thread where the call began to the peer process's first
  // event in the request after it.
  for (size_t i = 0; i < n; ++i) {
    const model::Request& r = requests[i];
    for (const model::Call& call : r.calls) {
      if (!call.peer_tgid || !call.caller_tid) continue;
      const model::RequestEvent* peer = nullptr;
      for (const model::RequestEvent& e : r.events) {
        if (e.tgid == call.peer_tgid && e.tid && e.ts_ns >= call.start_ns) {
          peer = &e;
          break;
        }
      }
      if (!peer) continue;
      ++flow_id;
      const json args = {{"request", m.requests[i].id}, {"remote", call.endpoint.remote}};
      events.push_back({{"ph", "s"},
                        {"cat", "call"},
                        {"name", "call"},
                        {"id", flow_id},
                        {"pid", kPidActual},
                        {"tid", call.caller_tid},
                        {"ts", Us(rel(call.start_ns))},
                        {"args", args}});
      events.push_back({{"ph", "f"},
                        {"bp", "e"},
                        {"cat", "call"},
                        {"name", "call"},
                        {"id", flow_id},
                        {"pid", kPidActual},
                        {"tid", peer->tid},
                        {"ts", Us(rel(std::max(peer->ts_ns, call.start_ns)))},
                        {"args", args}});
    }
  }

  // 3. Canonical forms at each request's actual start, a lane per
  // canonical thread.
  struct CanonThread {
    size_t request;
    uint32_t thread;
    uint64_t start, end;  // canonical, relative to the request's canonical start
  };
  std::vector<CanonThread> threads;
  std::vector<std::pair<uint64_t, uint64_t>> placed;
  for (size_t i = 0; i < n; ++i) {
    const canonical::CanonicalRequest& c = m.canonical[i];
    std::vector<std::pair<uint64_t, uint64_t>> range(c.num_threads, {UINT64_MAX, 0});
    for (const canonical::CanonicalEvent& e : c.events) {
      range[e.thread].first = std::min(range[e.thread].first, e.ready_ns);
      range[e.thread].second = std::max(range[e.thread].second, e.done_ns);
    }
    for (uint32_t t = 0; t < c.num_threads; ++t) {
      threads.push_back({i, t, range[t].first, range[t].second});
      uint64_t base = rel(requests[i].start_ns);
      placed.emplace_back(base + range[t].first, base + range[t].second);
    }
  }
  uint32_t canon_lanes = 0;
  std::vector<uint32_t> canon_lane = AssignLanes(placed, &canon_lanes);
  for (uint32_t l = 0; l < canon_lanes; ++l)
    events.push_back(Meta("thread_name", kPidCanonical, kLaneTidBase + l,
                          {{"name", "canonical lane " + std::to_string(l)}}));
  for (size_t k = 0; k < threads.size(); ++k) {
    const CanonThread& t = threads[k];
    const uint32_t tid = kLaneTidBase + canon_lane[k];
    const uint64_t base = rel(requests[t.request].start_ns);
    events.push_back({{"ph", "X"},
                      {"cat", "canonical"},
                      {"name", name_of(t.request)},
                      {"pid", kPidCanonical},
                      {"tid", tid},
                      {"ts", Us(placed[k].first)},
                      {"dur", Us(placed[k].second - placed[k].first)},
                      {"args",
                       {{"request", m.requests[t.request].id},
                        {"canonical_thread", t.thread},
                        {"canonical_latency_ms",
                         static_cast<double>(m.canonical[t.request].latency_ns) / 1e6}}}});
    for (const canonical::CanonicalEvent& e : m.canonical[t.request].events) {
      if (e.thread != t.thread || e.done_ns == e.ready_ns) continue;
      events.push_back({{"ph", "X"},
                        {"cat", "canonical_work"},
                        {"name", e.symbol},
                        {"pid", kPidCanonical},
                        {"tid", tid},
                        {"ts", Us(base + e.ready_ns)},
                        {"dur", Us(e.done_ns - e.ready_ns)},
                        {"args",
                         {{"request", m.requests[t.request].id},
                          {"cpu_ns", e.demand.cpu_ns},
                          {"disk_bytes", e.demand.disk_bytes},
                          {"net_bytes", e.demand.net_bytes},
                          {"critical", e.critical}}}});
    }
  }

  json trace;
  trace["traceEvents"] = std::move(events);
  trace["displayTimeUnit"] = "ms";
  trace["otherData"] = {{"generator", "jackdaw analyze"},
                        {"origin_monotonic_ns", t0},
                        {"requests", n},
                        {"clusters", m.clusters.size()}};
  return trace;
}

Status WritePerfettoTrace(const model::WorkloadModel& m, std::span<const model::Request> requests,
                          const std::string& path, const PerfettoOptions& options) {
  ASSIGN_OR_RETURN(json trace, BuildPerfettoTrace(m, requests, options));
  return WriteOwnedFile(path, trace.dump() + "\n", kOutputFileMode);
}

}  // namespace jackdaw::report
