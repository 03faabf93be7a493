#include "join/message_tracker.h"

#include <algorithm>

#include "jackdaw/abi.h"

namespace jackdaw::join {

void MessageTracker::OnInboundPacket(uint64_t conn, uint64_t ts, uint32_t payload, bool push, uint64_t tag) {
  if (payload == 0) return;
  Conn& c = Get(conn);
  c.received += payload;
  c.unread.push_back(Packet{c.received, ts, tag, payload, push, false});
}

MessageAssignment MessageTracker::Current(uint64_t conn) const {
  MessageAssignment a;
  const Conn* c = Find(conn);
  if (!c || !c->has_exchange) return a;
  a.exchange = c->cur.index;
  a.key = ExchangeKey(c->serial, a.exchange);
  return a;
}

void MessageTracker::OnOutboundPacket(uint64_t, uint64_t, uint32_t) {
  // Outbound bytes are counted where the server writes them: the write
  // decides the message boundary, its packets only follow it.
}

MessageAssignment MessageTracker::ForAck(uint64_t conn) const {
  const Conn* found = Find(conn);
  if (!found) return MessageAssignment{};
  const Conn& c = *found;
  if (!(c.has_exchange || c.greeting) || !c.last_out || c.received <= c.consumed) return Current(conn);
  MessageAssignment a;
  a.exchange = c.next_index;
  a.key = ExchangeKey(c.serial, a.exchange);
  return a;
}

MessageAssignment MessageTracker::OnAccept(uint64_t conn, uint64_t) {
  Get(conn);
  return MessageAssignment{};
}

MessageAssignment MessageTracker::OnRead(uint64_t conn, uint64_t enter_ts, uint64_t exit_ts, int64_t ret,
                                         std::vector<uint64_t>* consumed, uint8_t peek) {
  Conn& c = Get(conn);
  MessageAssignment a;
  if (c.shut) {
    // Draining after shutdown(): the connection's, and its wait was idle.
    // Its packets stay unread and go to the connection at the close.
    a.idle_ns = exit_ts > enter_ts ? exit_ts - enter_ts : 0;
    stats_.idle_ns += a.idle_ns;
    ++(ret > 0 ? stats_.drain_reads : ret == 0 ? stats_.eof_reads : stats_.empty_reads);
    return a;
  }
  if (ret <= 0 || peek == JDW_PEEK_MSG_PEEK) {
    // End-of-file or no data: the connection's. Time blocked in it was
    // idle. A peek (MSG_PEEK) consumed nothing: the read that takes the
    // bytes begins the message, and the wait before it was idle too.
    a.idle_ns = exit_ts > enter_ts ? exit_ts - enter_ts : 0;
    stats_.idle_ns += a.idle_ns;
    ++(ret == 0 ? stats_.eof_reads : stats_.empty_reads);
    return a;
  }
  const uint64_t first = c.consumed;  // stream offset of the first byte returned
  const uint64_t last = c.consumed + uint64_t(ret);
  c.consumed = last;
  // Arrival of the first byte: the packet that carried it, when packets
  // were seen for it (and seen before the read returned).
  uint64_t arrival = exit_ts;
  bool from_packet = false;
  while (!c.unread.empty() && c.unread.front().end_offset <= first) c.unread.pop_front();
  if (!c.unread.empty() && c.unread.front().ts <= exit_ts) {
    arrival = c.unread.front().ts;
    from_packet = true;
  }
  // Packets whose first byte this read returns go with it; client pushes
  // that end strictly inside the bytes returned mean the read holds more
  // than one client write.
  bool several_pushes = false;
  for (Packet& p : c.unread) {
    if (p.end_offset - p.payload >= last) break;
    if (!p.reported && p.tag && consumed) consumed->push_back(p.tag);
    p.reported = true;
    if (p.push && p.end_offset < last) several_pushes = true;
  }
  while (!c.unread.empty() && c.unread.front().end_offset <= last) c.unread.pop_front();
  if (c.received < c.consumed) c.received = c.consumed;  // packets not captured
  if (c.last_out) {
    // A new inbound message: the previous exchange (if any) is complete.
    if (c.has_exchange) FinishExchange(c);
    c.has_exchange = true;
    c.cur = Exchange{};
    c.cur.conn = conn;
    c.cur.index = c.next_index++;
    c.cur.start_ns = arrival;
    c.cur.from_packet = from_packet;
    c.last_out = false;
    a.starts_exchange = true;
    c.cur.serial = c.serial;
    // The read waited for the message: idle until it arrived.
    if (arrival > enter_ts) {
      a.idle_ns = arrival - enter_ts;
      stats_.idle_ns += a.idle_ns;
    }
  }
  NoteTls(c, first == 0, peek);
  c.cur.in_bytes += uint64_t(ret);
  ++c.cur.reads;
  c.cur.pipelined |= several_pushes;
  a.exchange = c.cur.index;
  a.key = ExchangeKey(c.serial, a.exchange);
  return a;
}

bool MessageTracker::EndBeforeNextRead(uint64_t conn) {
  Conn* found = Find(conn);
  if (!found) return false;
  Conn& c = *found;
  if (!c.has_exchange || !c.last_out || c.cur.out_bytes == 0 || c.received <= c.consumed) return false;
  FinishExchange(c);
  return true;
}

MessageAssignment MessageTracker::OnWrite(uint64_t conn, uint64_t ts, int64_t ret) {
  Conn& c = Get(conn);
  MessageAssignment a;
  if (ret <= 0) return Current(conn);  // nothing moved: the message goes on
  if (!c.has_exchange) {
    // Before any inbound message: the server speaks first (a greeting).
    if (!c.greeting) c.greeting_ts = ts;
    c.greeting = c.greeted = true;
    c.last_out = true;
    return a;
  }
  if (c.cur.out_bytes == 0) c.cur.first_out_ns = ts;
  c.cur.last_out_ns = ts;
  c.cur.out_bytes += uint64_t(ret);
  ++c.cur.writes;
  c.last_out = true;
  a.exchange = c.cur.index;
  a.key = ExchangeKey(c.serial, a.exchange);
  return a;
}

MessageAssignment MessageTracker::OnClose(uint64_t conn, uint64_t, std::vector<uint64_t>* unread) {
  auto it = conns_.find(conn);
  if (it != conns_.end()) {
    if (unread)
      for (const Packet& p : it->second.unread)
        if (p.tag && !p.reported) unread->push_back(p.tag);
    Close(conn, it->second);
    if (last_ == &it->second) last_ = nullptr;
    conns_.erase(it);
  }
  return MessageAssignment{};
}

void MessageTracker::NoteTls(Conn& c, bool first_bytes, uint8_t peek) {
  if (!(peek & JDW_PEEK_TLS)) return;
  const uint32_t first_type = 20 + (peek & JDW_PEEK_FIRST_MASK);
  if (first_bytes) c.tls = first_type == 22;
  if (!c.tls) return;
  uint32_t apps = (peek & JDW_PEEK_APP_MASK) >> JDW_PEEK_APP_SHIFT;
  // A Finished read apart from the change_cipher_spec before it.
  if (first_type == 23 && c.tls_last_ccs && apps > 0) --apps;
  c.tls_last_ccs = (peek & JDW_PEEK_LAST_CCS) != 0;
  c.cur.tls_records = true;
  c.cur.tls_app_records += apps;
}

void MessageTracker::FinishExchange(Conn& c) {
  Exchange& e = c.cur;
  const uint32_t setup = std::max<uint32_t>(setup_exchanges_, c.greeted ? 1 : 0);
  const bool tls_handshake = c.tls && e.tls_records && e.tls_app_records == 0;
  if (e.out_bytes == 0) {
    e.kind = Exchange::Kind::kOneWay;
    ++stats_.one_way;
  } else if (e.index < setup || tls_handshake) {
    e.kind = Exchange::Kind::kSetup;
    ++stats_.setup;
    if (tls_handshake) ++stats_.tls_handshakes;
  } else {
    e.kind = Exchange::Kind::kRequest;
    ++stats_.requests;
    if (e.pipelined) ++stats_.pipelined;
  }
  finished_.push_back(e);
  c.has_exchange = false;
}

// A greeting is reported as the connection's, once, when it ends.
void MessageTracker::EmitGreeting(uint64_t conn, Conn& c) {
  if (!c.greeting) return;
  Exchange g;
  g.conn = conn;
  g.serial = c.serial;
  g.index = kConnectionOwned;
  g.kind = Exchange::Kind::kServerFirst;
  g.first_out_ns = g.last_out_ns = c.greeting_ts;
  finished_.push_back(g);
  ++stats_.server_first;
  c.greeting = false;
}

void MessageTracker::Close(uint64_t conn, Conn& c) {
  EmitGreeting(conn, c);
  if (c.has_exchange) FinishExchange(c);
  stats_.packets_unread += c.unread.size();
  ++stats_.connections_closed;
}

void MessageTracker::Finish() {
  for (auto& [id, c] : conns_) {
    EmitGreeting(id, c);
    // An exchange still open at the end of the trace: a request if it was
    // answered; an unanswered one may still be in service, not a goodbye,
    // but nothing more will be learnt about it.
    if (c.has_exchange) FinishExchange(c);
  }
}

std::vector<Exchange> MessageTracker::TakeFinished() {
  std::vector<Exchange> out;
  out.swap(finished_);
  return out;
}

}  // namespace jackdaw::join
