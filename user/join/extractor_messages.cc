// Extractor::Impl: the message rule in the join (schemas with `messages`).
//
// MessageTracker holds the rule (SysProf's messages; LANGUAGE.md, "Messages
// and interactions"); this file only applies its verdicts to the join:
//  - a socket event of an exchange gets Ctx::msg (the exchange's key, the
//    schema's message attribute value) and msg_start, and goes on to the
//    schema's definitions;
//  - an event of the connection (accept, close, shutdown, a read returning
//    end-of-file or no data, a greeting, a packet outside any exchange)
//    does not reach the schema: its thread's pending CPU (or its interrupt
//    time) and its bytes are charged to the connection's life, reported as
//    a model::Connection when the connection is done;
//  - an inbound data packet is held until the read that returns its first
//    byte, then joined to that read's exchange (so a request begins at the
//    arrival of its first byte, and the bytes of request N+1 are never
//    charged to request N); packets never read go to the connection;
//  - when the tracker finishes an exchange its message interval is closed
//    (the set then finishes once its threads are done): a request's set
//    learns its connection and place on it, a one-way exchange's set loses
//    its seed and its resources go to the connection.
#include <algorithm>

#include "join/endpoint_format.h"
#include "join/sock_endpoint.h"
#include "join/extractor_impl.h"

namespace jackdaw::join {
namespace {

constexpr uint8_t kTcpFin = 0x01, kTcpSyn = 0x02, kTcpRst = 0x04, kTcpPsh = 0x08;

bool IsPacket(const RecordContext& c) {
  return c.kind == schema::EventKind::kRecord &&
         (c.rec->type == JDW_EVENT_NET_RECV || c.rec->type == JDW_EVENT_NET_XMIT);
}

}  // namespace

Extractor::Impl::ConnLife* Extractor::Impl::FindLife(uint64_t sk) {
  if (last_life_ && last_life_sk_ == sk) return last_life_;
  auto it = lives_.find(sk);
  if (it == lives_.end()) return nullptr;
  last_life_sk_ = sk;
  return last_life_ = &it->second;
}

Extractor::Impl::ConnLife& Extractor::Impl::Life(uint64_t sk, uint64_t ts) {
  ConnLife* found = FindLife(sk);
  if (!found) {
    found = &lives_.try_emplace(sk).first->second;
    found->c.id = next_conn_id_++;
    found->c.start_ns = found->c.end_ns = ts;
    last_life_sk_ = sk;
    last_life_ = found;
  }
  ConnLife& l = *found;
  // The endpoints are for the connection sink only (`analyze --requests`):
  // without one (`jackdaw live`) they are not formatted.
  if (conn_sink_ && l.c.endpoint.local.empty()) {
    if (const SockEntry* e = socks_.Current(sk); e && e->family) l.c.endpoint = EndpointOf(*e, &comms_);
  }
  l.c.end_ns = std::max(l.c.end_ns, ts);
  return l;
}

void Extractor::Impl::ReportConnection(uint64_t sk) {
  auto it = lives_.find(sk);
  if (it == lives_.end()) return;
  stats_.connections_reported++;
  if (conn_sink_) conn_sink_(std::move(it->second.c));
  if (last_life_ == &it->second) last_life_ = nullptr;
  lives_.erase(it);
}

void Extractor::Impl::ChargeConnection(const Ctx& c, uint64_t sk) {
  ConnLife& l = Life(sk, c.ts);
  l.c.events++;
  if (c.irq) {
    Ev ev{};
    ev.flags = kEvIrq;
    ev.tgid = c.rec->tid ? c.rec->tgid : 0;
    ev.cpu_ns = threads_.TakeIrqCpu(c.rec->cpu, c.rec->tid, c.rec->tgid, c.ts, opts_.irq_burst_gap_ns);
    l.c.softirq_cpu_ns += ev.cpu_ns;
    ChargeEvent(ev, Charge::kConnection);
  } else if (Thread* t = c.thread; t && !IsPacket(c)) {
    // (A packet sent in task context leaves the thread's run time to the
    // syscall it is sent in.)
    threads_.ChargeRun(t, c.ts);
    l.c.cpu_ns += t->cpu_pending;
    threads_.Account(t).conn_task_ns += t->cpu_pending;
    t->cpu_pending = 0;
    t->after_sample_gap = false;
    if (!l.c.tgid) l.c.tgid = c.tgid;
    l.has_syscall = true;
    t->life_sk = sk;
    t->life_conn = l.c.id;
  }
  if (IsPacket(c)) {
    const auto* p = reinterpret_cast<const jdw_net_packet*>(c.payload);
    (c.rec->type == JDW_EVENT_NET_RECV ? l.c.net_bytes_in : l.c.net_bytes_out) += p->len;
  }
}

Extractor::Impl::ConnLife* Extractor::Impl::LiveConnection(uint64_t sk, uint64_t id) {
  ConnLife* l = FindLife(sk);
  return l && l->c.id == id ? l : nullptr;
}

bool Extractor::Impl::ChargeLifeTail(Thread* t, uint64_t ts) {
  if (!t->life_sk) return false;
  ConnLife* l = LiveConnection(t->life_sk, t->life_conn);
  if (!l) return false;
  l->c.cpu_ns += t->cpu_pending;
  l->c.end_ns = std::max(l->c.end_ns, ts);
  threads_.Account(t).conn_task_ns += t->cpu_pending;
  t->cpu_pending = 0;
  return true;
}

void Extractor::Impl::DropHeld(const std::vector<uint64_t>& tags, bool unread) {
  for (uint64_t tag : tags) {
    auto it = held_.find(tag);
    if (it == held_.end()) continue;
    ConnLife& l = Life(it->second.sk, it->second.ev.ts);
    l.c.events++;
    l.c.net_bytes_in += it->second.ev.bytes;
    l.c.softirq_cpu_ns += it->second.ev.cpu_ns;
    ChargeEvent(it->second.ev, Charge::kConnection);
    if (unread) stats_.msg_packets_unread++;
    held_.erase(it);
  }
}

void Extractor::Impl::EndExchanges() {
  if (!msgs_.HasFinished()) return;
  // Two buffers take turns (the tracker's and this one), so ending an
  // exchange allocates nothing; taken out of the member for the loop.
  std::vector<Exchange> done = std::move(exchanges_);
  msgs_.TakeFinished(&done);
  for (const Exchange& e : done) {
    ConnLife& l = Life(e.conn, std::max(e.last_out_ns, e.start_ns));
    switch (e.kind) {
      case Exchange::Kind::kRequest:
        l.c.requests++;
        if (e.pipelined) l.c.pipelined++;
        break;
      case Exchange::Kind::kOneWay:
        l.c.one_way++;
        break;
      case Exchange::Kind::kServerFirst:
        l.c.greetings++;
        break;
      case Exchange::Kind::kSetup:
        l.c.setups++;
        break;
    }
    if (e.index == kConnectionOwned) continue;
    const IKey k{MessageTracker::ExchangeKey(e.serial, e.index), static_cast<uint32_t>(msg_attr_), 0};
    const uint32_t slot = join_.SetOf(k);
    if (slot == IntervalJoin::kNone) continue;  // the schema joined nothing through it
    Set& s = join_.set(slot);
    if (s.seed_msg && s.seed_msg != k.value) {
      // A peer's exchange for one of the request's calls: the request is
      // its front exchange's, whatever this one was.
      join_.CloseInterval(k);
      continue;
    }
    if (e.kind == Exchange::Kind::kRequest) {
      // The connection's life so far (its accept and set-up, the idle reads
      // before this exchange; for a connection per request its close too)
      // is this request's share of it.
      const uint64_t life_cpu = l.c.cpu_ns + l.c.softirq_cpu_ns;
      s.connection_cpu_ns += life_cpu - l.apportioned_cpu_ns;
      l.apportioned_cpu_ns = life_cpu;
      s.has_msg = true;
      s.msg_conn = l.c.id;
      s.msg_index = e.index;
      s.msg_in = e.in_bytes;
      s.msg_out = e.out_bytes;
      s.pipelined = e.pipelined;
    } else {
      // Never answered, or the connection's set-up: not a request (its
      // resources: OnDiscard()).
      s.seed = false;
      s.conn_sk = e.conn;
    }
    join_.CloseInterval(k);
  }
  done.clear();
  exchanges_ = std::move(done);
}

// A set without a seed: a one-way exchange's resources go to its
// connection. So do those of a set that used a connection's socket but
// holds no request of it: a thread's work on the connection outside its
// exchanges (between an accept and the read that returns the first
// message, an event loop's turn to the connection before its read). And
// those of a set that uses no socket, begun by a thread that had just
// worked on a connection's life and had not slept since: a worker's run
// from closing a connection (or shutting it down for a lingering close,
// or reading its end-of-file) to its next sleep. Magpie bounds a thread's
// part in a request by its valid-interval from wake-up to block; here the
// close ends the thread's part in the request, and the rest of that
// interval is the connection's, not nobody's. A thread woken that sleeps
// again without touching a connection (a wake-up another worker's accept
// made pointless, a timer) began no such set. Any other set's CPU goes to
// nobody (the ledger's unattributed time).
void Extractor::Impl::OnDiscard(Set& s) {
  uint64_t sk = s.conn_sk;
  if (!sk) {
    for (const SetSock& ss : s.socks) {
      if (FindLife(ss.sk)) {
        sk = ss.sk;
        break;
      }
    }
  }
  if (!sk && s.life_sk && LiveConnection(s.life_sk, s.life_conn)) sk = s.life_sk;
  if (!sk) {
    for (const Ev& ev : s.events) ChargeEvent(ev, Charge::kNobody);
    return;
  }
  ConnLife& l = Life(sk, s.last_ts);
  for (const Ev& ev : s.events) {
    l.c.events++;
    ((ev.flags & kEvIrq) ? l.c.softirq_cpu_ns : l.c.cpu_ns) += ev.cpu_ns;
    ChargeEvent(ev, Charge::kConnection);
  }
}

// The connection ends when close() returns, not when it is called: data the
// response left in the socket (a corked sendfile, TCP_NOPUSH) is sent
// inside close(), and those packets are the response's bytes.
void Extractor::Impl::CloseConnection(const Ctx& c, uint64_t sk) {
  // A close by a process that does not serve the connection (a parent that
  // handed it to a child it forked, before or after the child's first
  // read) closes that process' copy only: the connection goes on.
  ConnLife& l = Life(sk, c.ts);
  if (!l.data_tgid || l.data_tgid != c.tgid) return;
  // What the application wrote and the kernel has not sent yet (its
  // packets are seen: l.sent) leaves after close() returned, as the peer
  // acknowledges: still the response's bytes. The connection ends with its
  // FIN, or once everything written is out.
  if (l.sent && l.sent < l.written) {
    l.closing = true;
    return;
  }
  EndConnection(sk, c.ts);
}

void Extractor::Impl::EndConnection(uint64_t sk, uint64_t ts) {
  tags_.clear();
  msgs_.OnClose(sk, ts, &tags_);
  DropHeld(tags_);
  EndExchanges();
  ConnLife& l = Life(sk, ts);
  l.c.closed = true;
  l.closing = false;
}

void Extractor::Impl::MessageSockInfo(uint64_t sk, uint64_t ts, bool same_connection) {
  auto it = lives_.find(sk);
  if (it != lives_.end() && (it->second.c.closed || (it->second.has_syscall && !same_connection))) {
    // The socket's memory serves a new connection: the old one is over,
    // whether or not its close was seen.
    if (!it->second.c.closed) {
      tags_.clear();
      msgs_.OnClose(sk, ts, &tags_);
      DropHeld(tags_);
      EndExchanges();
    }
    ReportConnection(sk);
  }
  // Packets that arrived before the accept: the handshake is the
  // connection's; data waits for the read that returns it.
  early_.TakeNamed(sk, [&](const Ev& ev) {
    if (ev.payload && (ev.flags & kEvNetIn) && held_.size() < kMaxHeldPackets) {
      msgs_.OnInboundPacket(sk, ev.ts, ev.payload, (ev.flags & kEvPush) != 0, ev.seq);
      held_.emplace(ev.seq, HeldPacket{ev, sk});
      Life(sk, ev.ts);
      return;
    }
    ConnLife& l = Life(sk, ev.ts);
    l.c.start_ns = std::min(l.c.start_ns, ev.ts);
    l.c.events++;
    ((ev.flags & kEvNetOut) ? l.c.net_bytes_out : l.c.net_bytes_in) += ev.bytes;
    l.c.softirq_cpu_ns += ev.cpu_ns;
    ChargeEvent(ev, Charge::kConnection);
  });
}

bool Extractor::Impl::MessageSysEnter(Ctx& c, const jdw_sys_enter& e) {
  if (e.obj_kind != JDW_OBJ_SOCKET || !e.obj) return true;
  const uint64_t sk = e.obj;
  if (calls_on() && calls_.IsClient(sk)) {
    CallSysEnter(c, e, sk);
    return true;
  }
  switch (cs_.SysConnOp(e.nr)) {
    case CompiledSchema::kConnShutdown:
      msgs_.OnShutdown(sk);
      ChargeConnection(c, sk);
      return false;
    case CompiledSchema::kConnClose:  // the connection ends at its return: CloseConnection()
      ChargeConnection(c, sk);
      return false;
    default:
      break;
  }
  const uint8_t dir = cs_.SysDirection(e.nr);
  if (!dir) return true;
  // A data syscall on a socket whose last connection closed: a new one.
  if (const ConnLife* l = FindLife(sk); l && l->c.closed) ReportConnection(sk);
  if (dir == CompiledSchema::kDirIn) {
    // Draining a connection it shut down (a lingering close): the
    // connection's, whatever the read returns (message_tracker.h).
    if (msgs_.ShutDown(sk)) {
      ChargeConnection(c, sk);
      return false;
    }
    // The next message already arrived (the thread was away between its
    // response and this read): by the rule the exchange ended when that
    // message began, so this read is not its tail (it would stretch the
    // request over the next one's start). What the thread did since its
    // last event goes to the connection, like an idle read's entry.
    if (msgs_.EndBeforeNextRead(sk)) {
      EndExchanges();
      ChargeConnection(c, sk);
      return false;
    }
    return true;  // may wait: decided at its return
  }
  const MessageAssignment a = msgs_.Current(sk);
  if (!a.key) {
    ChargeConnection(c, sk);  // before any inbound message: a greeting
    return false;
  }
  c.msg = a.key;
  return true;
}

bool Extractor::Impl::MessageSysExit(Ctx& c, const jdw_sys_exit& e) {
  const Thread* t = c.thread;
  if (!t || t->sys_nr != static_cast<int32_t>(e.nr)) return true;  // unpaired: as the schema says
  const uint8_t op = cs_.SysConnOp(e.nr);
  if (op == CompiledSchema::kConnAccept) {
    if (e.ret < 0 || !e.obj) return true;
    if (const ConnLife* l = FindLife(e.obj); l && l->c.closed) ReportConnection(e.obj);
    msgs_.OnAccept(e.obj, c.ts);
    ChargeConnection(c, e.obj);
    ConnLife& l = Life(e.obj, c.ts);
    l.c.start_ns = std::min(l.c.start_ns, c.ts);
    return false;
  }
  if (t->sys_obj_kind != JDW_OBJ_SOCKET) return true;
  const uint64_t sk = reader_.SockOf(c);
  if (!sk) {
    // The kernel frees a socket inside close(), and another thread's
    // connect() or accept() can take its memory before this close returns
    // (it was preempted on the way out; a loopback connection is torn down
    // at once): the socket now names another connection. Still this call's
    // close, whose request the closing thread goes on with (call_close), not
    // the end of a connection it served (which would end the thread's part
    // in the request). The call itself ended when the new connection was
    // described (OnSockInfo).
    if (op == CompiledSchema::kConnClose && t->sys_call) c.call = t->sys_call;
    return true;
  }
  if (calls_on()) {
    if (op == CompiledSchema::kConnConnect) {
      CallConnect(c, e, sk);
      return true;
    }
    if (calls_.IsClient(sk)) {
      CallSysExit(c, e, sk, op);
      return true;
    }
  }
  if (op == CompiledSchema::kConnClose || op == CompiledSchema::kConnShutdown) {
    ChargeConnection(c, sk);
    if (op == CompiledSchema::kConnClose) {
      CausalityTracker::NoteExchange(c.thread, sk, 0);
      CloseConnection(c, sk);
    }
    return false;
  }
  const uint8_t dir = cs_.SysDirection(e.nr);
  if (!dir) return true;
  // One lookup per syscall: EndExchanges() may add connections but never
  // removes one, and an unordered_map keeps references across rehashing.
  ConnLife& life = Life(sk, c.ts);
  life.data_tgid = c.tgid;
  if (dir == CompiledSchema::kDirIn) {
    tags_.clear();
    setup_tags_.clear();
    const MessageAssignment a = msgs_.OnRead(sk, t->sys_ts, c.ts, e.ret, &tags_, e.peek, &setup_tags_);
    if (!setup_tags_.empty()) DropHeld(setup_tags_, /*unread=*/false);
    EndExchanges();
    life.c.idle_ns += a.idle_ns;
    if (!a.key) {
      if (e.ret <= 0) ++(e.ret == 0 ? life.c.eof_reads : life.c.empty_reads);
      if (e.ret == 0) CausalityTracker::NoteExchange(c.thread, sk, 0);
      ChargeConnection(c, sk);
      return false;
    }
    c.msg = a.key;
    c.msg_start = a.starts_exchange;
    if (a.starts_exchange && calls_on()) c.peer_call = PeerCall(sk, c.tgid, c.ts);
    CausalityTracker::NoteExchange(c.thread, sk, a.key);
    return true;
  }
  if (dir == CompiledSchema::kDirOut) {
    if (e.ret > 0) life.written += uint64_t(e.ret);
    const MessageAssignment a = msgs_.OnWrite(sk, c.ts, e.ret);
    if (!a.key) {
      ChargeConnection(c, sk);
      return false;
    }
    c.msg = a.key;
    CausalityTracker::NoteExchange(c.thread, sk, a.key);
  }
  return true;
}

bool Extractor::Impl::MessagePacket(Ctx& c) {
  const auto* p = reinterpret_cast<const jdw_net_packet*>(c.payload);
  // TCP, and the datagrams of an unconnected UDP socket's flows (their ids
  // are odd; Extractor::Impl::OnDgramPeer): each datagram a whole message.
  const bool datagram = p->protocol == kIpProtoUdp;
  if (p->protocol != kIpProtoTcp && !datagram) return true;
  const uint64_t sk = reader_.SockOf(c);
  if (!sk || (datagram && !(sk & 1))) return true;  // not a known connection yet: held as an early packet
  if (calls_on() && calls_.IsClient(sk)) {
    CallPacket(c, *p, sk);
    return true;
  }
  const ConnLife* life = FindLife(sk);
  // A socket no traced process set up or used (the peer's end of a
  // loopback connection, whose sent packets name its own socket): not a
  // connection of the server's.
  if (!life && !msgs_.Knows(sk) && !socks_.Current(sk)) return true;
  const bool closed = life && life->c.closed;
  const int64_t tcp_seq = datagram ? -1 : int64_t(p->seq);
  if (!closed && c.rec->type == JDW_EVENT_NET_RECV && p->payload_len > 0 &&
      held_.size() < kMaxHeldPackets && !msgs_.Resent(sk, p->payload_len, tcp_seq)) {
    Ev ev = EventOf(c);
    msgs_.OnInboundPacket(sk, c.ts, p->payload_len, datagram || (p->tcp_flags & kTcpPsh) != 0, ev.seq,
                          tcp_seq);
    held_.emplace(ev.seq, HeldPacket{ev, sk});
    Life(sk, c.ts);
    return false;
  }
  // SYN, FIN and RST without data set the connection up or tear it down.
  const bool control = !p->payload_len && (p->tcp_flags & (kTcpFin | kTcpSyn | kTcpRst));
  const bool out = c.rec->type == JDW_EVENT_NET_XMIT;
  if (!closed && !control) {
    const MessageAssignment a = p->payload_len ? msgs_.Current(sk) : msgs_.ForAck(sk);
    if (a.key) {
      c.msg = a.key;
      if (out && p->payload_len) {
        ConnLife& l = Life(sk, c.ts);
        l.sent += p->payload_len;
        // The last of a response sent after close() returned: the join
        // runs this packet first, then ends the connection (Process()
        // calls MessagePacketDone()).
        if (l.closing && l.sent >= l.written) pending_end_ = sk;
      }
      return true;
    }
  }
  ChargeConnection(c, sk);
  if (out && (p->tcp_flags & kTcpFin)) {
    if (const ConnLife* l = FindLife(sk); l && l->closing) EndConnection(sk, c.ts);
  }
  return false;
}

void Extractor::Impl::MessagePacketDone(const Ctx& c) {
  if (!pending_end_) return;
  const uint64_t sk = pending_end_;
  pending_end_ = 0;
  EndConnection(sk, c.ts);
}

void Extractor::Impl::JoinReadPackets(const Ctx& c) {
  if (tags_.empty()) return;
  const uint32_t slot = c.msg ? join_.SetOf(IKey{c.msg, static_cast<uint32_t>(msg_attr_), 0}) : IntervalJoin::kNone;
  if (slot == IntervalJoin::kNone) {
    DropHeld(tags_);  // the schema did not join the read
    tags_.clear();
    return;
  }
  Set& s = join_.set(slot);
  for (uint64_t tag : tags_) {
    auto it = held_.find(tag);
    if (it == held_.end()) continue;
    const Ev& ev = it->second.ev;
    s.events.push_back(ev);  // earlier seq: emission restores the order
    s.first_ts = std::min(s.first_ts, ev.ts);
    stats_.events_joined++;
    stats_.msg_packets_held++;
    held_.erase(it);
  }
  tags_.clear();
}

void Extractor::Impl::MessagesGc(uint64_t now) {
  // Closed connections whose late packets (FIN, ACK) had their chance.
  const uint64_t keep = kClosedSocketKeep * timeout_ns_;
  if (now <= keep) return;
  std::vector<uint64_t> done;
  for (const auto& [sk, l] : lives_)
    if ((l.c.closed || l.closing) && l.c.end_ns < now - keep) done.push_back(sk);
  for (uint64_t sk : done) {
    if (lives_[sk].closing) EndConnection(sk, now);  // its FIN was never seen
    ReportConnection(sk);
  }
}

void Extractor::Impl::MessagesFinish() {
  msgs_.Finish();
  EndExchanges();
  tags_.clear();
  for (const auto& [tag, h] : held_) tags_.push_back(tag);
  DropHeld(tags_);
  tags_.clear();
  std::vector<uint64_t> all;
  for (const auto& [sk, l] : lives_) all.push_back(sk);
  std::sort(all.begin(), all.end(), [&](uint64_t a, uint64_t b) { return lives_[a].c.id < lives_[b].c.id; });
  for (uint64_t sk : all) ReportConnection(sk);
  const MessageStats& ms = msgs_.stats();
  stats_.msg_requests = ms.requests;
  stats_.msg_one_way = ms.one_way;
  stats_.msg_greetings = ms.server_first;
  stats_.msg_setup = ms.setup;
  stats_.msg_tls_handshakes = ms.tls_handshakes;
  stats_.msg_pipelined = ms.pipelined;
  stats_.msg_eof_reads = ms.eof_reads;
  stats_.msg_empty_reads = ms.empty_reads;
  stats_.msg_drain_reads = ms.drain_reads;
  stats_.msg_idle_ns = ms.idle_ns;
}

}  // namespace jackdaw::join
