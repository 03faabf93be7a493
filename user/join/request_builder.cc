#include "join/request_builder.h"

#include <algorithm>

#include "join/endpoint_format.h"
#include "join/sock_endpoint.h"

namespace jackdaw::join {

model::Request RequestBuilder::Build(Set& s, bool timed_out, uint64_t id, const ProcessWindow* process,
                                     Charged* charged) {
  *charged = Charged{};
  // Unions append whole sets, so only merged sets need sorting.
  auto by_seq = [](const Ev& a, const Ev& b) { return a.seq < b.seq; };
  if (!std::is_sorted(s.events.begin(), s.events.end(), by_seq)) std::sort(s.events.begin(), s.events.end(), by_seq);
  auto find_seq = [&](uint64_t seq) -> const Ev* {
    auto it = std::lower_bound(s.events.begin(), s.events.end(), seq,
                               [](const Ev& e, uint64_t q) { return e.seq < q; });
    return it != s.events.end() && it->seq == seq ? &*it : nullptr;
  };

  // The synthetic items (Wait, and each causal edge's Signal and Resume),
  // to be merged into the real events. Real events are already in (ts, seq)
  // order (seq follows processing order, which is timestamp order), so they
  // are read straight from the set, not copied into items.
  std::vector<Item>& synth = scratch_items_;
  synth.clear();
  for (uint32_t i = 0; i < s.events.size(); i++) {
    const Ev& e = s.events[i];
    if (e.flags & kEvWait) synth.push_back(Item{e.ts, e.seq, kSubWait, e.tid, e.cpu});
  }
  // Deduplicate candidate edges between the same two events.
  std::sort(s.edges.begin(), s.edges.end(), [](const EdgeCand& a, const EdgeCand& b) {
    return a.from_seq != b.from_seq ? a.from_seq < b.from_seq : a.to_seq < b.to_seq;
  });
  std::vector<std::pair<uint32_t, uint32_t>>& edge_items = scratch_edge_items_;  // (signal, resume) in synth
  edge_items.clear();
  std::vector<model::EdgeKind>& edge_kinds = scratch_edge_kinds_;  // parallel to edge_items
  edge_kinds.clear();
  for (size_t i = 0; i < s.edges.size(); i++) {
    const EdgeCand& e = s.edges[i];
    if (i && e.from_seq == s.edges[i - 1].from_seq && e.to_seq == s.edges[i - 1].to_seq) continue;
    const Ev* from = find_seq(e.from_seq);
    const Ev* to = find_seq(e.to_seq);
    if (!from || !to || from == to) continue;
    const uint64_t sig_ts = std::max(from->ts, e.sig_ts);
    if (sig_ts > to->ts) continue;  // would point backwards in time: not a cause
    synth.push_back(Item{sig_ts, e.from_seq, kSubSignal, e.from_tid, e.from_cpu});
    synth.push_back(Item{to->ts, e.to_seq, kSubResume, to->tid, to->cpu});
    edge_items.emplace_back(static_cast<uint32_t>(synth.size() - 2), static_cast<uint32_t>(synth.size() - 1));
    edge_kinds.push_back(e.is_sync ? model::EdgeKind::kSync : model::EdgeKind::kWakeup);
    (e.is_sync ? charged->sync_edges : charged->wakeup_edges)++;
  }
  // (ts, seq, sub): a Resume sits before its event, a Signal and a Wait
  // after it (Sub's order).
  auto item_less = [](uint64_t xts, uint64_t xseq, uint8_t xsub, uint64_t yts, uint64_t yseq, uint8_t ysub) {
    if (xts != yts) return xts < yts;
    if (xseq != yseq) return xseq < yseq;
    return xsub < ysub;
  };
  std::vector<uint32_t>& synth_order = scratch_order_;
  synth_order.resize(synth.size());
  for (uint32_t i = 0; i < synth.size(); i++) synth_order[i] = i;
  std::sort(synth_order.begin(), synth_order.end(), [&](uint32_t a, uint32_t b) {
    const Item& x = synth[a];
    const Item& y = synth[b];
    return item_less(x.ts, x.seq, x.sub, y.ts, y.seq, y.sub);
  });
  std::vector<uint32_t>& synth_pos = scratch_pos_;  // synth index -> position in the request
  synth_pos.resize(synth.size());

  model::Request r;
  r.id = id;
  r.timed_out = timed_out;
  r.tgid = s.seed_tgid;
  const size_t nreal = s.events.size();
  r.events.resize(nreal + synth.size());
  r.threads.reserve(4);
  // Merge order: does the next synthetic item go before the next real
  // event? (They never tie: their `sub` differs.)
  auto synth_first = [&](size_t next_synth, size_t next_real) {
    if (next_synth == synth.size()) return false;
    if (next_real == nreal) return true;
    const Item& x = synth[synth_order[next_synth]];
    const Ev& e = s.events[next_real];
    return item_less(x.ts, x.seq, x.sub, e.ts, e.seq, kSubReal);
  };
  // The request starts with its first item in that order.
  const uint64_t start = synth_first(0, 0) ? synth[synth_order[0]].ts : nreal ? s.events[0].ts : s.first_ts;
  uint64_t end = start;

  // One pass over the events: each is written out, and its resources,
  // off-CPU period (clipped to the request's start) and charged CPU are
  // added up.
  model::ResourceTotals& t = r.totals;
  // Blocked time split by reason goes to the totals; the sum to `sum` (the
  // event's process segment, or the totals).
  auto add_blocked = [&](uint8_t reason, uint64_t ns, uint64_t* sum) {
    if (!ns) return;
    *sum += ns;
    switch (static_cast<model::BlockReason>(reason)) {
      case model::BlockReason::kDisk: t.blocked_disk_ns += ns; break;
      case model::BlockReason::kNetwork: t.blocked_net_ns += ns; break;
      case model::BlockReason::kFutex: t.blocked_futex_ns += ns; break;
      case model::BlockReason::kPipe: t.blocked_pipe_ns += ns; break;
      default: t.blocked_other_ns += ns; break;
    }
  };
  // Each process's part: an event's resources go to its thread's process;
  // interrupt work (tid 0) to the process of the task event before it.
  std::vector<model::ProcessSegment>& segs = r.processes;
  model::ProcessSegment* seg = nullptr;
  auto segment_of = [&](uint32_t tgid, uint64_t ts) -> model::ProcessSegment* {
    for (model::ProcessSegment& p : segs)
      if (p.tgid == tgid) return &p;
    model::ProcessSegment& p = segs.emplace_back();
    p.tgid = tgid;
    p.first_ns = p.last_ns = ts;
    if (comms_) {
      if (auto it = comms_->find(tgid); it != comms_->end()) p.comm = it->second;
    }
    return &p;
  };
  size_t next_real = 0, next_synth = 0;
  for (size_t at = 0; at < r.events.size(); at++) {
    model::RequestEvent& out = r.events[at];
    if (synth_first(next_synth, next_real)) {
      const Item& x = synth[synth_order[next_synth]];
      synth_pos[synth_order[next_synth++]] = static_cast<uint32_t>(at);
      end = std::max(end, x.ts);
      out.ts_ns = x.ts;
      out.tsc = clock_.MonoToTsc(x.ts);
      out.tid = x.tid;
      out.cpu = x.cpu;
      switch (x.sub) {
        case kSubResume:
          out.synthetic = model::SyntheticKind::kResume;
          out.symbol = resume_symbol_;
          break;
        case kSubSignal:
          out.synthetic = model::SyntheticKind::kSignal;
          out.symbol = signal_symbol_;
          break;
        default:
          out.synthetic = model::SyntheticKind::kWait;
          out.symbol = wait_symbol_;
          break;
      }
      continue;
    }
    const Ev& e = s.events[next_real++];
    end = std::max(end, e.ts);
    // Resources go to the segment of the event's process; the totals are
    // the segments' sums (below), so each event adds once.
    if (!seg || (e.tid && seg->tgid != e.tgid)) seg = segment_of(e.tid ? e.tgid : s.seed_tgid, e.ts);
    out.ts_ns = e.ts;
    out.tsc = clock_.MonoToTsc(e.ts);
    out.tid = e.tid;
    out.tgid = e.tid ? e.tgid : 0;
    out.cpu = e.cpu;
    out.record_type = e.record_type;
    out.synthetic = static_cast<model::SyntheticKind>(e.synth);
    out.symbol = symbols_.Get(e.symbol);
    out.cpu_ns = e.cpu_ns;
    if (e.flags & (kEvNetIn | kEvNetOut)) out.net_bytes = e.bytes;
    if (e.flags & kEvDisk) out.disk_bytes = e.bytes;
    if (e.flags & kEvIrq) {
      seg->softirq_cpu_ns += e.cpu_ns;
      charged->softirq_ns += e.cpu_ns;
    } else {
      seg->cpu_ns += e.cpu_ns;
      if (process && e.tid && e.tgid == r.tgid) {
        // Compared against the observed CPU of request tgids (the seed's), so
        // helper processes joined in (kworkers) do not skew the ratio.
        charged->process_cpu_ns += e.cpu_ns;
        if (e.ts <= process->from_ts) charged->pre_window_ns += e.cpu_ns;  // its CPU ran before e.ts
      }
    }
    if (e.flags & kEvNetIn) seg->net_bytes_in += e.bytes;
    if (e.flags & kEvNetOut) seg->net_bytes_out += e.bytes;
    if (e.flags & kEvDisk) {
      seg->disk_bytes += e.bytes;
      seg->disk_ios++;
    }
    if (e.tid && std::find(r.threads.begin(), r.threads.end(), e.tid) == r.threads.end()) {
      r.threads.push_back(e.tid);
      seg->threads++;
    }
    if (e.off) {
      const OffCpu& o = s.offs[e.off - 1];
      if (o.early_from && o.early_from >= start) {
        seg->runq_wait_ns += o.early_runq;
        for (uint8_t rsn = 0; rsn < kBlockReasons; rsn++) add_blocked(rsn, o.early_blocked[rsn], &seg->blocked_ns);
      }
      const uint64_t bfrom = std::max(o.off_from, start);
      if (o.wake > bfrom) add_blocked(o.reason, o.wake - bfrom, &seg->blocked_ns);
      const uint64_t rfrom = std::max(o.wake, start);
      if (o.run > rfrom) seg->runq_wait_ns += o.run - rfrom;
    }
    seg->last_ns = std::max(seg->last_ns, e.ts);
    seg->events++;
  }
  for (const model::ProcessSegment& p : segs) {
    t.cpu_ns += p.cpu_ns;
    t.softirq_cpu_ns += p.softirq_cpu_ns;
    t.disk_bytes += p.disk_bytes;
    t.disk_ios += p.disk_ios;
    t.net_bytes_in += p.net_bytes_in;
    t.net_bytes_out += p.net_bytes_out;
    t.runq_wait_ns += p.runq_wait_ns;
    t.blocked_ns += p.blocked_ns;
  }
  // The request's front process first (tier 0), then the others in order
  // of their first event; a process is one call further than its caller.
  if (segs.size() > 1) {
    std::stable_sort(segs.begin(), segs.end(), [&](const model::ProcessSegment& a, const model::ProcessSegment& b) {
      if ((a.tgid == s.seed_tgid) != (b.tgid == s.seed_tgid)) return a.tgid == s.seed_tgid;
      return a.first_ns < b.first_ns;
    });
    for (model::ProcessSegment& p : segs) p.tier = p.tgid == s.seed_tgid ? 0 : UINT32_MAX;
    for (size_t round = 0; round < segs.size(); round++) {
      for (const model::Call& c : s.calls) {
        if (!c.peer_tgid) continue;
        uint32_t caller_tier = UINT32_MAX;
        for (const model::ProcessSegment& p : segs)
          if (p.tgid == c.caller_tgid) caller_tier = p.tier;
        if (caller_tier == UINT32_MAX) continue;
        for (model::ProcessSegment& p : segs)
          if (p.tgid == c.peer_tgid) p.tier = std::min(p.tier, caller_tier + 1);
      }
    }
    for (model::ProcessSegment& p : segs)
      if (p.tier == UINT32_MAX) p.tier = 1;  // joined by other evidence (a pipe, a wake-up)
  }
  std::sort(s.calls.begin(), s.calls.end(),
            [](const model::Call& a, const model::Call& b) { return a.start_ns < b.start_ns; });
  r.calls = std::move(s.calls);
  r.connection_cpu_ns = s.connection_cpu_ns;
  // Periods settled while the set was open (join/off_cpu.h): they lie after
  // the set's earliest event, so no clipping to this start changes them.
  t.runq_wait_ns += s.settled.runq;
  for (uint8_t rsn = 0; rsn < kBlockReasons; rsn++) add_blocked(rsn, s.settled.blocked[rsn], &t.blocked_ns);
  r.start_ns = start;
  r.end_ns = end;
  r.start_tsc = clock_.MonoToTsc(start);
  r.end_tsc = clock_.MonoToTsc(end);
  r.start_wall_ns = clock_.MonoToWall(start);
  r.end_wall_ns = clock_.MonoToWall(end);
  r.edges.reserve(edge_items.size());
  for (size_t i = 0; i < edge_items.size(); i++)
    r.edges.push_back(model::CausalEdge{synth_pos[edge_items[i].first], synth_pos[edge_items[i].second], edge_kinds[i]});
  std::sort(r.edges.begin(), r.edges.end(),
            [](const model::CausalEdge& a, const model::CausalEdge& b) { return a.from < b.from; });

  // Connections of the sockets it used.
  r.connections.reserve(s.socks.size());
  for (const SetSock& ss : s.socks) {
    const SockEntry& e = ss.conn;
    r.connections.push_back(EndpointOf(e, comms_));
  }
  r.has_message = s.has_msg;
  r.connection_id = s.msg_conn;
  r.exchange = s.msg_index;
  r.msg_in_bytes = s.msg_in;
  r.msg_out_bytes = s.msg_out;
  r.pipelined = s.pipelined;
  return r;
}

}  // namespace jackdaw::join
