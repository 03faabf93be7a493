// Extractor::Impl: the call rule in the join (schemas with `calls`), the
// other side of the message rule (extractor_messages.cc).
//
// CallTracker decides, per event on a connection a traced process opened,
// which call it belongs to (Ctx::call, call_start); the event goes on to
// the schema's definitions, which join it to the request through the call
// attribute. Where the connection's far end is a socket of a traced process
// (loopback TCP, or a unix stream socket: its ends pair by identity,
// socket_tracker_unix.cc), the exchange that the call's bytes begin there gets
// Ctx::peer_call, so the schema joins the peer's work for that exchange to
// the caller's request: one request across processes, recursively (each
// tier's own calls are calls again). When a call ends (the next one begins
// on its connection, the connection closes, the trace ends) its interval
// closes and the set holding it learns the call (model::Call).
#include <cerrno>

#include "join/endpoint_format.h"
#include "join/sock_endpoint.h"
#include "join/extractor_impl.h"

namespace jackdaw::join {

void Extractor::Impl::CallSockInfo(const jdw_sock_info& si, uint64_t ts, bool described_before,
                                   bool same_connection) {
  const bool client = calls_.IsClient(si.sk);
  // The first description of a socket connect() returned on (a
  // non-blocking connect's addresses are known only once it is used), or
  // the same connection described again: still the caller's.
  if (client && (same_connection || !described_before)) return;
  // A connection first seen mid-stream (a pooled one opened before the
  // trace began) is the caller's when its ports say so; connect() says so
  // for every connection opened while tracing (CallSysExit).
  // A unix socket with no name of its own connected to a named one: the
  // name is the server's, so this end called connect().
  const bool opened = si.family == kAfUnix ? (si.unix_flags & JDW_UNIX_PATH_PEER) != 0
                                           : CallTracker::OpenedLocally(si.sport, si.dport);
  if (opened && !msgs_.Knows(si.sk)) {
    calls_.OnOpened(si.sk, ts);
  } else if (client) {
    calls_.OnClose(si.sk, ts);  // the memory serves another connection, not ours
  }
  EndCalls();
}

void Extractor::Impl::CallSysEnter(Ctx& c, const jdw_sys_enter& e, uint64_t sk) {
  const uint8_t dir = cs_.SysDirection(e.nr);
  if (dir == CompiledSchema::kDirOut) {
    bool starts = false, reserved = false;
    c.call = calls_.OnWriteEnter(sk, c.ts, c.tid, c.tgid, &starts, &reserved);
    c.call_start = !starts ? 0 : reserved ? Ctx::kCallResumes : Ctx::kCallBegins;
    if (starts) EndCalls();  // the connection's previous call is over
    return;
  }
  c.call = dir == CompiledSchema::kDirIn ? calls_.ForRead(sk) : calls_.Current(sk);
}

void Extractor::Impl::CallSysExit(Ctx& c, const jdw_sys_exit& e, uint64_t sk, uint8_t op) {
  if (op == CompiledSchema::kConnClose) {
    c.call = calls_.Current(sk);
    pending_call_close_ = sk;  // after the schema saw the close (CallsAfterEvent)
    return;
  }
  const uint8_t dir = cs_.SysDirection(e.nr);
  if (dir == CompiledSchema::kDirIn) {
    c.call = calls_.OnRead(sk, c.ts, e.ret);
    return;
  }
  if (dir == CompiledSchema::kDirOut) calls_.OnWriteExit(sk, e.ret);
  c.call = calls_.Current(sk);
}

bool Extractor::Impl::CallConnect(Ctx& c, const jdw_sys_exit& e, uint64_t sk) {
  // Non-blocking connects return EINPROGRESS and finish later: the
  // connection is this process's either way.
  if (e.ret != 0 && e.ret != -EINPROGRESS) return false;
  if (msgs_.Knows(sk)) return false;
  // The sock_info connect() emitted just before its return opened it
  // already (its ports or its unix peer's name said so): one connection.
  if (!calls_.IsClient(sk) || calls_.Current(sk)) {
    calls_.OnOpened(sk, c.ts);
    EndCalls();
  }
  // Its first call is the request's that the connecting thread serves
  // (call_tracker.h). A thread serving none (a pool filled at start-up)
  // reserves nothing: the first write decides, as on a reused connection.
  if (c.thread && CausalityTracker::Serving(*c.thread, msgs_)) {
    c.call = calls_.Reserve(sk);
    if (c.call) c.call_start = Ctx::kCallBegins;
  }
  return true;
}

void Extractor::Impl::CallPacket(Ctx& c, const jdw_net_packet& p, uint64_t sk) {
  c.call = c.rec->type == JDW_EVENT_NET_XMIT ? calls_.OnOutboundPacket(sk, p.seq, p.payload_len)
                                             : calls_.Current(sk);
}

uint64_t Extractor::Impl::PeerCall(uint64_t sk, uint32_t tgid, uint64_t ts) {
  const uint64_t peer = socks_.PeerOf(sk);
  if (!peer || !calls_.IsClient(peer)) return 0;
  const uint64_t key = calls_.Unanswered(peer);
  if (!key) return 0;
  call_peer_[key] = tgid;
  // The serving process's CPU is compared with what its requests got from
  // its first part in one on (ProcessAccount's window).
  if (tgid) threads_.Account(tgid).OpenWindow(ts);
  stats_.calls_joined++;
  return key;
}

void Extractor::Impl::CallsAfterEvent(uint64_t ts) {
  if (!pending_call_close_) return;
  calls_.OnClose(pending_call_close_, ts);
  pending_call_close_ = 0;
  EndCalls();
}

void Extractor::Impl::AttachCall(Set& s, const FinishedCall& f) {
  model::Call& call = s.calls.emplace_back();
  call.start_ns = f.start_ns;
  call.end_ns = f.end_ns;
  call.caller_tid = f.caller_tid;
  call.caller_tgid = f.caller_tgid;
  if (auto it = call_peer_.find(f.key); it != call_peer_.end()) {
    call.peer_tgid = it->second;
    call_peer_.erase(it);
  }
  call.bytes_out = f.out_bytes;
  call.bytes_in = f.in_bytes;
  call.answered = f.in_bytes > 0;
  call.overlapped = f.overlapped;
  call.index = f.index;
  if (f.seq_known) {
    call.seq_out_start = f.seq_out_start;
    call.seq_out_end = f.seq_out_end;
  }
  if (const SockEntry* e = socks_.Current(f.conn); e && e->family) call.endpoint = EndpointOf(*e, &comms_);
  std::erase_if(s.open_calls, [&](const Set::CallRef& r) { return r.key == f.key; });
}

void Extractor::Impl::TakeOpenCalls(Set& s) {
  // A request that finished before its last call did (its front exchange
  // ended while a pooled connection waited for the next call): the call as
  // it stands. Whatever the connection does next is another call's.
  while (!s.open_calls.empty()) {
    const Set::CallRef ref = s.open_calls.back();
    s.open_calls.pop_back();
    FinishedCall f;
    if (calls_.Snapshot(ref.conn, ref.key, &f)) {
      AttachCall(s, f);
    } else if (auto it = ended_calls_.find(ref.key); it != ended_calls_.end()) {
      AttachCall(s, it->second);
      ended_calls_.erase(it);
    }
  }
}

void Extractor::Impl::CallsGc(uint64_t horizon) {
  std::erase_if(ended_calls_, [&](const auto& kv) { return kv.second.end_ns < horizon; });
  std::erase_if(call_peer_, [&](const auto& kv) { return !calls_.IsCurrent(kv.first) && !ended_calls_.count(kv.first); });
}

void Extractor::Impl::EndCalls() {
  if (!calls_.HasFinished()) return;
  std::vector<FinishedCall> done = std::move(calls_done_);
  calls_.TakeFinished(&done);
  for (const FinishedCall& f : done) {
    const IKey k{f.key, static_cast<uint32_t>(cs_.schema().call_attr), 0};
    const uint32_t slot = join_.SetOf(k);
    if (slot == IntervalJoin::kNone) {
      // Its interval closed already (its request's exchanges ended, and
      // cascaded) while the request waits for other parts: it takes the call
      // when emitted. Or the schema joined nothing through it: the GC drops it.
      ended_calls_.emplace(f.key, f);
      continue;
    }
    AttachCall(join_.set(slot), f);
    join_.CloseInterval(k);
  }
  done.clear();
  calls_done_ = std::move(done);
}

void Extractor::Impl::CallsFinish() {
  calls_.Finish();
  EndCalls();
  const CallStats& cs = calls_.stats();
  stats_.calls_begun = cs.calls;
  stats_.calls_unanswered = cs.unanswered;
  stats_.calls_overlapped = cs.overlapped;
}

}  // namespace jackdaw::join
