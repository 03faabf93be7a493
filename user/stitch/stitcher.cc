#include "stitch/stitcher.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace jackdaw::stitch {
namespace {

// A fragment: (trace, request).
using FragKey = std::pair<uint32_t, uint32_t>;

struct SegRef {
  uint32_t trace, frag, seg;
};

// tids are per machine: fragments from trace t > 0 get theirs moved apart.
constexpr uint32_t kTidStride = 1u << 26;  // above any pid_max (4M)

bool Overlaps(uint32_t a_seq, uint32_t a_len, uint32_t b_seq, uint32_t b_len) {
  // Serial-number arithmetic, so ranges across the 2^32 wrap compare right.
  return static_cast<int32_t>(b_seq - a_seq) < static_cast<int32_t>(a_len) &&
         static_cast<int32_t>(a_seq - b_seq) < static_cast<int32_t>(b_len);
}

Flow Canonical(const Flow& f) { return std::min(f, f.Reversed()); }

struct MatchedPair {
  SegRef sent, recv;
};

}  // namespace

StatusOr<StitchResult> Stitch(const std::vector<TraceFragments>& traces) {
  const uint32_t n = static_cast<uint32_t>(traces.size());
  if (n < 2) return ErrStatus("stitch needs at least two traces, one per machine (got %u)", n);
  StitchResult res;

  // 1. Received segments by flow, in sequence order.
  std::map<Flow, std::vector<SegRef>> received;
  std::map<Flow, uint32_t> longest;  // per flow: the longest received segment
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t f = 0; f < traces[t].segments.size(); ++f)
      for (uint32_t s = 0; s < traces[t].segments[f].size(); ++s) {
        const Segment& seg = traces[t].segments[f][s];
        if (seg.dir != pcap::Direction::kIn) continue;
        received[seg.flow].push_back({t, f, s});
        uint32_t& l = longest[seg.flow];
        l = std::max(l, seg.len);
      }
  auto seg_of = [&](const SegRef& r) -> const Segment& { return traces[r.trace].segments[r.frag][r.seg]; };
  for (auto& [flow, v] : received)
    std::sort(v.begin(), v.end(), [&](const SegRef& a, const SegRef& b) { return seg_of(a).seq < seg_of(b).seq; });

  // Sent segments matched against other machines' received ones.
  std::vector<MatchedPair> pairs;
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> dmin(n, std::vector<int64_t>(n, kNone));  // sent by i, received by j
  std::vector<std::vector<uint64_t>> dcount(n, std::vector<uint64_t>(n, 0));
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t f = 0; f < traces[t].segments.size(); ++f)
      for (uint32_t s = 0; s < traces[t].segments[f].size(); ++s) {
        const Segment& seg = traces[t].segments[f][s];
        if (seg.dir != pcap::Direction::kOut) continue;
        auto it = received.find(seg.flow);
        if (it == received.end()) continue;
        const std::vector<SegRef>& v = it->second;
        // Candidates start at most `longest` before seg.seq (ignoring the
        // rare wrap inside one connection, where the scan just finds less).
        const uint32_t from = seg.seq >= longest[seg.flow] ? seg.seq - longest[seg.flow] : 0;
        auto r = std::lower_bound(v.begin(), v.end(), from,
                                  [&](const SegRef& x, uint32_t q) { return seg_of(x).seq < q; });
        for (; r != v.end() &&
               static_cast<int32_t>(seg_of(*r).seq - seg.seq) < static_cast<int32_t>(std::max<uint32_t>(seg.len, 1));
             ++r) {
          if (r->trace == t) continue;  // the same machine: loopback, not a link
          const Segment& rs = seg_of(*r);
          if (!Overlaps(seg.seq, seg.len, rs.seq, rs.len)) continue;
          pairs.push_back({{t, f, s}, *r});
          const int64_t d = static_cast<int64_t>(rs.mono_ns - seg.mono_ns);
          dmin[t][r->trace] = std::min(dmin[t][r->trace], d);
          dcount[t][r->trace]++;
        }
      }
  res.matched_segments = pairs.size();

  // 3. Clock offsets against trace 0, breadth-first over linked pairs.
  res.offsets.resize(n);
  res.offsets[0].known = res.offsets[0].estimated = true;
  std::deque<uint32_t> queue{0};
  while (!queue.empty()) {
    const uint32_t i = queue.front();
    queue.pop_front();
    for (uint32_t j = 0; j < n; ++j) {
      if (res.offsets[j].known || (dcount[i][j] == 0 && dcount[j][i] == 0)) continue;
      ClockOffset& o = res.offsets[j];
      const ClockOffset& base = res.offsets[i];
      o.known = true;
      o.matched_segments = base.matched_segments + dcount[i][j] + dcount[j][i];
      if (dcount[i][j] && dcount[j][i]) {
        // j's clock minus i's.
        o.offset_ns = base.offset_ns + (dmin[i][j] - dmin[j][i]) / 2;
        o.uncertainty_ns = base.uncertainty_ns + (dmin[i][j] + dmin[j][i]) / 2;
        o.estimated = base.estimated;
        o.one_way = base.one_way;
      } else if (dcount[i][j]) {
        o.offset_ns = base.offset_ns + dmin[i][j];  // an upper bound
        o.one_way = traces[j].name + " only received from " + traces[i].name + ": offset is at most this";
      } else {
        o.offset_ns = base.offset_ns - dmin[j][i];  // a lower bound
        o.one_way = traces[j].name + " only sent to " + traces[i].name + ": offset is at least this";
      }
      queue.push_back(j);
    }
  }
  for (uint32_t t = 0; t < n; ++t) {
    bool linked = false;
    for (uint32_t u = 0; u < n; ++u) linked |= dcount[t][u] || dcount[u][t];
    if (!linked) res.unstitchable.push_back(t);
  }

  // 2. Caller/callee links. On a connection the caller is the end that
  // sent its first data (the client speaks first). Each fragment's own first
  // data segment on the connection says which flow that was; when the two
  // fragments' first segments are of the same flow they agree, whatever the
  // clocks. They disagree when a fragment lacks the connection's first
  // segment (a backend whose fragment holds its response but not the call
  // that came in before: its first segment is a send, which alone would
  // make it the caller of the web tier); then the segment that came first
  // on trace 0's clock names the flow. A flow's source is its sender.
  auto first_on_conn = [&](const SegRef& ref) {
    const std::vector<Segment>& segs = traces[ref.trace].segments[ref.frag];
    const Flow conn = Canonical(segs[ref.seg].flow);
    const Segment* first = nullptr;
    for (const Segment& s : segs)
      if (Canonical(s.flow) == conn && (!first || s.mono_ns < first->mono_ns)) first = &s;
    return first;
  };
  auto sender_is_caller = [&](const MatchedPair& p) {
    const Segment* a = first_on_conn(p.sent);
    const Segment* b = first_on_conn(p.recv);
    const Flow& sent_flow = seg_of(p.sent).flow;
    const Segment* first = a;
    if (!(a->flow == b->flow)) {
      const int64_t ta = static_cast<int64_t>(a->mono_ns) - res.offsets[p.sent.trace].offset_ns;
      const int64_t tb = static_cast<int64_t>(b->mono_ns) - res.offsets[p.recv.trace].offset_ns;
      if (tb < ta) first = b;
      res.roles_by_time++;
    }
    return first->flow == sent_flow;
  };
  std::map<FragKey, FragKey> caller_of;
  std::map<FragKey, std::vector<FragKey>> callees;
  std::set<std::pair<FragKey, FragKey>> linked;
  for (const MatchedPair& p : pairs) {
    FragKey a{p.sent.trace, p.sent.frag}, b{p.recv.trace, p.recv.frag};
    if (!sender_is_caller(p)) std::swap(a, b);  // the receiver spoke first: it is the caller
    if (!linked.insert({a, b}).second) continue;
    auto [it, fresh] = caller_of.emplace(b, a);
    if (!fresh) {
      if (it->second != a) res.fragments_with_two_callers++;
      continue;
    }
    callees[a].push_back(b);
  }

  // Which send/receive events pair up, per fragment pair, for SYNC edges.
  std::map<std::pair<FragKey, FragKey>, std::vector<std::pair<uint32_t, uint32_t>>> event_pairs;
  for (const MatchedPair& p : pairs)
    event_pairs[{{p.sent.trace, p.sent.frag}, {p.recv.trace, p.recv.frag}}].push_back(
        {seg_of(p.sent).event, seg_of(p.recv).event});

  // 4. End-to-end requests, one per root.
  res.lone_fragments.assign(n, 0);
  std::set<FragKey> used;
  for (const auto& [root, kids] : callees) {
    if (caller_of.count(root)) continue;
    EndToEnd e2e;
    std::map<FragKey, int32_t> index;
    std::vector<std::pair<FragKey, int32_t>> stack{{root, -1}};
    while (!stack.empty()) {
      auto [k, caller] = stack.back();
      stack.pop_back();
      if (index.count(k)) continue;
      index[k] = static_cast<int32_t>(e2e.fragments.size());
      e2e.fragments.push_back({k.first, k.second, caller});
      auto c = callees.find(k);
      if (c == callees.end()) continue;
      for (auto it = c->second.rbegin(); it != c->second.rend(); ++it) stack.push_back({*it, index[k]});
    }
    // Merge on trace 0's clock.
    model::Request& m = e2e.request;
    const model::Request& rr = traces[root.first].requests[root.second];
    m.id = rr.id;
    m.tgid = rr.tgid;
    m.timed_out = false;
    struct Item {
      uint64_t ts;
      uint32_t frag, ev;
    };
    std::vector<Item> items;
    std::vector<int64_t> shift(e2e.fragments.size());
    for (uint32_t fi = 0; fi < e2e.fragments.size(); ++fi) {
      const FragmentRef& fr = e2e.fragments[fi];
      used.insert({fr.trace, fr.request});
      const model::Request& q = traces[fr.trace].requests[fr.request];
      shift[fi] = -res.offsets[fr.trace].offset_ns;
      for (uint32_t i = 0; i < q.events.size(); ++i)
        items.push_back({q.events[i].ts_ns + static_cast<uint64_t>(shift[fi]), fi, i});
      const uint32_t tid_base = fr.trace * kTidStride;
      for (uint32_t tid : q.threads) m.threads.push_back(tid + tid_base);
      m.connections.insert(m.connections.end(), q.connections.begin(), q.connections.end());
      m.timed_out |= q.timed_out;
      const model::ResourceTotals& a = q.totals;
      model::ResourceTotals& t = m.totals;
      t.cpu_ns += a.cpu_ns;
      t.softirq_cpu_ns += a.softirq_cpu_ns;
      t.disk_bytes += a.disk_bytes;
      t.disk_ios += a.disk_ios;
      t.net_bytes_in += a.net_bytes_in;
      t.net_bytes_out += a.net_bytes_out;
      t.runq_wait_ns += a.runq_wait_ns;
      t.blocked_ns += a.blocked_ns;
      t.blocked_disk_ns += a.blocked_disk_ns;
      t.blocked_net_ns += a.blocked_net_ns;
      t.blocked_futex_ns += a.blocked_futex_ns;
      t.blocked_other_ns += a.blocked_other_ns;
      t.blocked_pipe_ns += a.blocked_pipe_ns;
    }
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.ts < b.ts; });
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> pos;  // (fragment, event) -> merged index
    m.events.reserve(items.size());
    for (const Item& it : items) {
      const FragmentRef& fr = e2e.fragments[it.frag];
      model::RequestEvent ev = traces[fr.trace].requests[fr.request].events[it.ev];
      ev.ts_ns = it.ts;
      ev.tid += fr.trace * kTidStride;
      pos[{it.frag, it.ev}] = static_cast<uint32_t>(m.events.size());
      m.events.push_back(ev);
    }
    for (uint32_t fi = 0; fi < e2e.fragments.size(); ++fi) {
      const FragmentRef& fr = e2e.fragments[fi];
      for (const model::CausalEdge& ed : traces[fr.trace].requests[fr.request].edges)
        m.edges.push_back({pos[{fi, ed.from}], pos[{fi, ed.to}], ed.kind});
    }
    // The network hop: each matched send to its receive, within this request.
    for (uint32_t a = 0; a < e2e.fragments.size(); ++a)
      for (uint32_t b = 0; b < e2e.fragments.size(); ++b) {
        auto ep = event_pairs.find({{e2e.fragments[a].trace, e2e.fragments[a].request},
                                    {e2e.fragments[b].trace, e2e.fragments[b].request}});
        if (ep == event_pairs.end()) continue;
        for (auto [se, re] : ep->second) m.edges.push_back({pos[{a, se}], pos[{b, re}], model::EdgeKind::kSync});
      }
    std::sort(m.edges.begin(), m.edges.end(),
              [](const model::CausalEdge& x, const model::CausalEdge& y) { return x.from < y.from; });
    m.start_ns = m.events.empty() ? rr.start_ns : std::min(rr.start_ns, m.events.front().ts_ns);
    m.end_ns = rr.end_ns;
    for (uint32_t fi = 0; fi < e2e.fragments.size(); ++fi) {
      const FragmentRef& fr = e2e.fragments[fi];
      const model::Request& q = traces[fr.trace].requests[fr.request];
      m.start_ns = std::min(m.start_ns, q.start_ns + static_cast<uint64_t>(shift[fi]));
      m.end_ns = std::max(m.end_ns, q.end_ns + static_cast<uint64_t>(shift[fi]));
    }
    const int64_t root_shift = -res.offsets[root.first].offset_ns;
    m.start_tsc = rr.start_tsc;
    m.end_tsc = rr.end_tsc;
    m.start_wall_ns = rr.start_wall_ns + (m.start_ns - (rr.start_ns + root_shift));
    m.end_wall_ns = rr.end_wall_ns + (m.end_ns - (rr.end_ns + root_shift));
    res.requests.push_back(std::move(e2e));
  }
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t f = 0; f < traces[t].requests.size(); ++f)
      if (!used.count({t, f})) res.lone_fragments[t]++;
  return res;
}

}  // namespace jackdaw::stitch
