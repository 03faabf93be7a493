#include "join/message_tracker.h"

#include <algorithm>

#include "jackdaw/abi.h"

namespace jackdaw::join {

bool MessageTracker::Resent(uint64_t conn, uint32_t payload, int64_t tcp_seq) {
  const Conn* c = Find(conn);
  if (!c || tcp_seq < 0 || payload == 0 || !c->has_seq || c->seq_gap) return false;
  const uint32_t end = static_cast<uint32_t>(tcp_seq) + payload;
  if (static_cast<int32_t>(end - c->seq_end) > 0) return false;
  ++stats_.retransmits;
  return true;
}

bool MessageTracker::OnInboundPacket(uint64_t conn, uint64_t ts, uint32_t payload, bool push, uint64_t tag,
                                     int64_t tcp_seq) {
  if (payload == 0) return false;
  Conn& c = Get(conn);
  if (tcp_seq >= 0) {
    const uint32_t seq = static_cast<uint32_t>(tcp_seq), end = seq + payload;
    if (c.has_seq && !c.seq_gap) {
      const int32_t past = static_cast<int32_t>(end - c.seq_end);
      if (past <= 0) {
        ++stats_.retransmits;
        return false;
      }
      // Bytes resent with new ones: only the new ones are this packet's.
      if (static_cast<int32_t>(seq - c.seq_end) < 0) payload = static_cast<uint32_t>(past);
      // A segment beyond the next expected byte: one before it was lost
      // and will come later, below seq_end; count everything from now on.
      if (static_cast<int32_t>(seq - c.seq_end) > 0) c.seq_gap = true;
    }
    if (!c.has_seq || static_cast<int32_t>(end - c.seq_end) > 0) c.seq_end = end;
    c.has_seq = true;
  }
  c.received += payload;
  c.unread.push_back(Packet{c.received, ts, tag, payload, push, false});
  return true;
}

MessageAssignment MessageTracker::Current(uint64_t conn) const {
  MessageAssignment a;
  const Conn* c = Find(conn);
  if (!c || !c->has_exchange || c->tls_answer_writes) return a;
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
                                         std::vector<uint64_t>* consumed, uint8_t peek,
                                         std::vector<uint64_t>* setup) {
  Conn& c = Get(conn);
  MessageAssignment a;
  c.tls_answer_writes = 0;  // the server reads again: it has the request
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
  while (!c.unread.empty() && c.unread.front().end_offset <= first) c.unread.pop_front();
  // The handshake's last flight went unanswered (a resumed TLS 1.2
  // handshake ends with the client's Finished) and the request's
  // application data follows without a write between: the handshake's
  // exchange ends here and the request begins at this read.
  if (c.tls && c.has_exchange && !c.last_out && c.cur.tls_records && c.cur.tls_app_records == 0 &&
      (peek & JDW_PEEK_TLS) && TlsAppRecords(c, peek) > 0) {
    FinishExchange(c, /*handshake=*/true);
    c.last_out = true;
  }
  // The handshake's last records and a request in one read (above): the
  // request's bytes begin after the client's first push in it (its TLS
  // library sends a flight in one write), when packets tell where.
  const bool tls_tail = c.last_out && c.tls && TlsTailWithData(c, peek);
  uint64_t own = first;  // stream offset of the exchange's own first byte
  if (tls_tail) {
    ++stats_.tls_tails;
    c.tls_answer_writes = tls_answer_writes_;
    for (const Packet& p : c.unread) {
      if (p.end_offset - p.payload >= last) break;
      if (p.push && p.end_offset > first && p.end_offset < last) {
        own = p.end_offset;
        break;
      }
    }
  }
  // Arrival of the first byte: the packet that carried it, when packets
  // were seen for it (and seen before the read returned).
  uint64_t arrival = exit_ts;
  bool from_packet = false;
  for (const Packet& p : c.unread) {
    if (p.end_offset <= own) continue;
    if (p.ts <= exit_ts) {
      arrival = p.ts;
      from_packet = true;
    }
    break;
  }
  // Packets whose first byte this read returns go with it (those of the
  // handshake's records before `own` with the connection); client pushes
  // that end strictly inside the bytes returned mean the read holds more
  // than one client write.
  bool several_pushes = false;
  for (Packet& p : c.unread) {
    if (p.end_offset - p.payload >= last) break;
    std::vector<uint64_t>* to = p.end_offset <= own ? setup : consumed;
    if (!p.reported && p.tag && to) to->push_back(p.tag);
    p.reported = true;
    if (p.push && p.end_offset < last && p.end_offset > own) several_pushes = true;
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
  c.cur.in_bytes += last - own;
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
  if (c.tls_answer_writes) {
    --c.tls_answer_writes;
    ++stats_.tls_answer_writes;
    return a;  // the handshake's answer (above): the connection's
  }
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

uint32_t MessageTracker::TlsAppRecords(const Conn& c, uint8_t peek) {
  const uint32_t first_type = 20 + (peek & JDW_PEEK_FIRST_MASK);
  uint32_t apps = (peek & JDW_PEEK_APP_MASK) >> JDW_PEEK_APP_SHIFT;
  // A Finished read apart from the change_cipher_spec before it.
  if (first_type == 23 && c.tls_last_ccs && apps > 0) --apps;
  return apps;
}

bool MessageTracker::TlsTailWithData(const Conn& c, uint8_t peek) {
  if (!(peek & JDW_PEEK_TLS)) return false;
  const uint32_t first_type = 20 + (peek & JDW_PEEK_FIRST_MASK);
  // Handshake (or change_cipher_spec) records first, application data after.
  const bool handshake_first = first_type == 20 || first_type == 22 || (first_type == 23 && c.tls_last_ccs);
  return handshake_first && TlsAppRecords(c, peek) > 0;
}

void MessageTracker::NoteTls(Conn& c, bool first_bytes, uint8_t peek) {
  if (!(peek & JDW_PEEK_TLS)) return;
  const uint32_t first_type = 20 + (peek & JDW_PEEK_FIRST_MASK);
  if (first_bytes) c.tls = first_type == 22;
  if (!c.tls) return;
  const uint32_t apps = TlsAppRecords(c, peek);
  c.tls_last_ccs = (peek & JDW_PEEK_LAST_CCS) != 0;
  c.cur.tls_records = true;
  c.cur.tls_app_records += apps;
}

void MessageTracker::FinishExchange(Conn& c, bool handshake) {
  Exchange& e = c.cur;
  const uint32_t setup = std::max<uint32_t>(setup_exchanges_, c.greeted ? 1 : 0);
  const bool tls_handshake = c.tls && e.tls_records && e.tls_app_records == 0;
  if (e.out_bytes == 0 && !handshake) {
    e.kind = Exchange::Kind::kOneWay;
    ++stats_.one_way;
  } else if (e.index < setup || tls_handshake) {
    e.kind = Exchange::Kind::kSetup;
    ++stats_.setup;
    if (tls_handshake) ++stats_.tls_handshakes;
    // The client's last flight read alone: how the server answers it (the
    // fewest writes seen: a full handshake's may carry more tickets than a
    // resumption's, and counting too many would take a response's write).
    if (tls_handshake && e.index > 0) {
      tls_answer_writes_ = tls_answer_known_ ? std::min(tls_answer_writes_, e.writes) : e.writes;
      tls_answer_known_ = true;
    }
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
