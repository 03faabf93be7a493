#include "join/call_tracker.h"

#include <algorithm>

namespace jackdaw::join {

void CallTracker::OnOpened(uint64_t conn, uint64_t ts) {
  auto [it, inserted] = conns_.try_emplace(conn);
  if (!inserted) {
    // The socket's memory serves a new connection: the old one is over.
    End(it->second, ts);
    it->second = Conn{};
  }
  it->second.serial = ++serials_;
  stats_.client_connections++;
}

uint64_t CallTracker::Reserve(uint64_t conn) {
  Conn* c = Find(conn);
  if (!c || c->has_call || c->next_index != 0) return 0;
  c->reserved = true;
  return CallKey(c->serial, 0);
}

uint64_t CallTracker::OnWriteEnter(uint64_t conn, uint64_t ts, uint32_t tid, uint32_t tgid, bool* starts,
                                   bool* reserved) {
  *starts = false;
  if (reserved) *reserved = false;
  Conn* c = Find(conn);
  if (!c) return 0;
  if (c->has_call && !c->last_in) {
    if (tid != c->cur.caller_tid && !c->cur.overlapped) {
      c->cur.overlapped = true;
      stats_.overlapped++;
    }
    return c->cur.key;
  }
  End(*c, ts);
  c->has_call = true;
  c->last_in = false;
  c->cur = FinishedCall{};
  c->cur.conn = conn;
  c->cur.index = c->next_index++;
  c->cur.key = CallKey(c->serial, c->cur.index);
  c->cur.start_ns = c->cur.end_ns = ts;
  c->cur.caller_tid = tid;
  c->cur.caller_tgid = tgid;
  stats_.calls++;
  *starts = true;
  if (reserved) *reserved = c->reserved && c->cur.index == 0;
  c->reserved = false;
  return c->cur.key;
}

void CallTracker::OnWriteExit(uint64_t conn, int64_t ret) {
  Conn* c = Find(conn);
  if (!c || !c->has_call || ret <= 0) return;
  c->cur.out_bytes += static_cast<uint64_t>(ret);
}

uint64_t CallTracker::OnRead(uint64_t conn, uint64_t ts, int64_t ret) {
  Conn* c = Find(conn);
  if (!c) return 0;
  if (!c->has_call) return ForRead(conn);  // a greeting: not an answer
  if (ret > 0) {
    if (!c->cur.in_bytes) c->cur.first_in_ns = ts;
    c->cur.in_bytes += static_cast<uint64_t>(ret);
    c->cur.end_ns = std::max(c->cur.end_ns, ts);
    c->last_in = true;
  }
  return c->cur.key;
}

uint64_t CallTracker::OnOutboundPacket(uint64_t conn, uint32_t seq, uint32_t payload) {
  Conn* c = Find(conn);
  if (!c || !c->has_call) return 0;
  if (payload && !c->last_in) {
    if (!c->cur.seq_known) {
      c->cur.seq_out_start = seq;
      c->cur.seq_known = true;
    }
    c->cur.seq_out_end = seq + payload;
  }
  return c->cur.key;
}

bool CallTracker::Snapshot(uint64_t conn, uint64_t key, FinishedCall* out) const {
  const Conn* c = Find(conn);
  if (!c || !c->has_call || c->cur.key != key) return false;
  *out = c->cur;
  return true;
}

bool CallTracker::IsCurrent(uint64_t key) const {
  for (const auto& [sk, c] : conns_)
    if (c.has_call && c.cur.key == key) return true;
  return false;
}

uint64_t CallTracker::Current(uint64_t conn) const {
  const Conn* c = Find(conn);
  return c && c->has_call ? c->cur.key : 0;
}

uint64_t CallTracker::ForRead(uint64_t conn) const {
  const Conn* c = Find(conn);
  if (!c) return 0;
  if (c->has_call) return c->cur.key;
  return c->reserved && c->next_index == 0 ? CallKey(c->serial, 0) : 0;
}

uint64_t CallTracker::Unanswered(uint64_t conn) const {
  const Conn* c = Find(conn);
  return c && c->has_call && !c->last_in ? c->cur.key : 0;
}

void CallTracker::End(Conn& c, uint64_t ts) {
  if (!c.has_call) return;
  c.has_call = false;
  (c.cur.in_bytes ? stats_.answered : stats_.unanswered)++;
  if (!c.cur.in_bytes) c.cur.end_ns = std::max(c.cur.start_ns, std::min(c.cur.end_ns, ts));
  finished_.push_back(c.cur);
}

void CallTracker::OnClose(uint64_t conn, uint64_t ts) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  End(it->second, ts);
  conns_.erase(it);
}

void CallTracker::Finish() {
  // Serial order: the same trace ends its calls in the same order.
  std::vector<Conn*> open;
  for (auto& [sk, c] : conns_) open.push_back(&c);
  std::sort(open.begin(), open.end(), [](const Conn* a, const Conn* b) { return a->serial < b->serial; });
  for (Conn* c : open) End(*c, c->cur.end_ns);
  conns_.clear();
}

}  // namespace jackdaw::join
