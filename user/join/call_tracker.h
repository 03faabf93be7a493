// Calls: the messages a traced process sends on connections it opened, and
// the answers it reads back — the other half of SysProf's message rule.
//
// On a connection a process accepted, an exchange begins with an inbound
// message (MessageTracker). On one it opened (connect(), or a pooled
// connection whose local port is ephemeral and whose peer's is not), the
// roles are reversed: the process is the client, and an exchange — a call —
// begins with the first bytes it writes after the connection's last inbound
// bytes (or its first bytes ever) and holds the answer it reads, until it
// writes the next message or the connection closes. A call belongs to the
// request whose thread wrote it; the join learns that through the call's
// key, a join attribute shared by the caller's write, the caller's reads of
// the answer, the packets both ways and — when the peer process is traced
// too — the peer's exchange that the call's bytes began (Magpie: a message
// is an attribute shared over an interval; here the interval is one call).
//
// Pooled and persistent connections carry the calls of many requests in
// turn: each call is a new interval, so each goes to the request of the
// thread that began it, in time order on the connection.
//
// A connection's first call is decided at connect(), not at its first
// write: an event-loop proxy connects in the handler of the request that
// needs the backend, and writes the request only when the socket turns
// writable, by which time the loop has read other clients' requests and
// its thread's latest exchange is another's. Reserve() keys the first call
// at the connect, so the join binds it to the request the connecting thread
// serves; the first write then continues that call (it resumes the
// reserved call's request on the writing thread) instead of beginning one.
//
// A server that speaks first (MySQL's handshake, SMTP's, FTP's and POP3's
// banners) greets every connection as it accepts it, and the client reads
// the greeting before it writes anything. On a connection a request's
// thread opened, that read is the request's, as the connect was: ForRead()
// gives it the reserved first call. Otherwise it joins the request only
// when the reader happened not to sleep for the greeting (its thread's
// interval was still open) and is nobody's when it did: the same request
// came out with or without it, by timing. Its bytes are not the call's
// answer (the call has not been written).
//
// Invariants: calls of a connection are numbered from 0 in the order they
// began; a call is final (TakeFinished) once the next one begins on its
// connection, the connection closes, or at Finish(); state is kept only for
// open client connections.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace jackdaw::join {

struct CallStats {
  uint64_t calls = 0;            // calls begun
  uint64_t answered = 0;         // calls whose answer was read
  uint64_t unanswered = 0;       // ended (next call, close, end of trace) with no answer read
  uint64_t overlapped = 0;       // another thread wrote while a call was unanswered
  uint64_t client_connections = 0;
};

struct FinishedCall {
  uint64_t conn = 0;             // the caller's socket
  uint64_t key = 0;              // its join value
  uint32_t index = 0;
  uint64_t start_ns = 0, first_in_ns = 0, end_ns = 0;
  uint64_t out_bytes = 0, in_bytes = 0;
  uint32_t caller_tid = 0, caller_tgid = 0;
  uint32_t seq_out_start = 0, seq_out_end = 0;
  bool seq_known = false;
  bool overlapped = false;
};

class CallTracker {
 public:
  // Kernels hand out ephemeral ports from net.ipv4.ip_local_port_range,
  // 32768-60999 by default; well-known and registered service ports lie
  // below. A connection first seen mid-stream (opened before the trace)
  // whose local port is ephemeral and whose peer's is not was opened by
  // this side.
  static constexpr uint16_t kEphemeralLow = 32768;
  static bool OpenedLocally(uint16_t local_port, uint16_t remote_port) {
    return local_port >= kEphemeralLow && remote_port < kEphemeralLow;
  }

  // A value naming call `index` of client connection `serial`: the join's
  // call attribute value, never 0, disjoint from MessageTracker's keys
  // (top bit set).
  static uint64_t CallKey(uint64_t serial, uint32_t index) {
    return (uint64_t{1} << 63) | (serial << 24) | (index & 0xffffff);
  }

  // The traced process opened `conn` (connect() returned, or OpenedLocally
  // said so): from now on its data is calls.
  void OnOpened(uint64_t conn, uint64_t ts);
  bool IsClient(uint64_t conn) const { return Find(conn) != nullptr; }
  // connect() returned on a connection opened and not yet used: the key its
  // first call will have, reserved for the connecting thread's request; 0
  // when it is no client connection or has carried bytes already.
  uint64_t Reserve(uint64_t conn);

  // A write entered: returns the call it belongs to, beginning a new one
  // when the connection's last bytes were inbound (or none moved yet).
  // `starts` is set when it began one; `reserved` (when given) too when
  // that call is the one Reserve() keyed at the connect. Another thread
  // writing while the call is unanswered (pipelining, multiplexing: two
  // requests' messages on one connection at once) flags the call overlapped.
  uint64_t OnWriteEnter(uint64_t conn, uint64_t ts, uint32_t tid, uint32_t tgid, bool* starts,
                        bool* reserved = nullptr);
  void OnWriteExit(uint64_t conn, int64_t ret);
  // A read returned `ret` (> 0: bytes of the answer; before the first
  // call, of the server's greeting, which go with the reserved call).
  uint64_t OnRead(uint64_t conn, uint64_t ts, int64_t ret);
  // The call a read entered on `conn` belongs to: the current one; before
  // the first call began, the one reserved at the connect (0 if none).
  uint64_t ForRead(uint64_t conn) const;
  // An outbound data packet of the connection (sequence number of its
  // first byte, payload length): the call's sequence range.
  uint64_t OnOutboundPacket(uint64_t conn, uint32_t seq, uint32_t payload);
  // Call `key` of `conn` as it stands, if it is still the connection's
  // current one (not finished): into `out`.
  bool Snapshot(uint64_t conn, uint64_t key, FinishedCall* out) const;
  // Whether `key` is some open connection's current call.
  bool IsCurrent(uint64_t key) const;
  // The current call, 0 if none.
  uint64_t Current(uint64_t conn) const;
  // The current call if it is still waiting for its answer (its bytes went
  // out, none came back): what a peer's read of those bytes serves.
  uint64_t Unanswered(uint64_t conn) const;
  void OnClose(uint64_t conn, uint64_t ts);
  void Finish();

  bool HasFinished() const { return !finished_.empty(); }
  void TakeFinished(std::vector<FinishedCall>* out) {
    out->clear();
    out->swap(finished_);
  }
  const CallStats& stats() const { return stats_; }

 private:
  struct Conn {
    uint64_t serial = 0;
    uint32_t next_index = 0;
    bool has_call = false;
    bool last_in = true;  // the last bytes moved were inbound (or none yet)
    bool reserved = false;  // the first call's key was given at the connect
    FinishedCall cur;
  };
  Conn* Find(uint64_t conn) const {
    // Every socket event of a server asks: most servers open no connection.
    if (conns_.empty()) return nullptr;
    auto it = conns_.find(conn);
    return it == conns_.end() ? nullptr : const_cast<Conn*>(&it->second);
  }
  void End(Conn& c, uint64_t ts);

  std::unordered_map<uint64_t, Conn> conns_;
  std::vector<FinishedCall> finished_;
  CallStats stats_;
  uint64_t serials_ = 0;
};

}  // namespace jackdaw::join
