// Sockets and their connections. The capture names a socket by its kernel
// address (sk) and reports its endpoints once, in a sock_info record when a
// connection is set up (accept, connect); packets carry only addresses
// (and, when sent, sometimes the sk). This tracker keeps sk -> current
// connection and connection key -> sk, so that a packet finds its socket
// and a request the endpoints it used.
//
// The kernel reuses a freed socket's memory for the next connection at
// once: a sock_info of a known sk with other endpoints starts a new
// generation (gen) of that sk, and every change bumps an epoch so that sets
// can tell cheaply that nothing changed hands since they last looked
// (NoteInSet's fast path). Sockets closed longer ago than the caller's
// horizon are forgotten (their late FIN/ACK packets had their chance).
//
// Unix stream sockets have no addresses: their sock_info names the peer
// socket instead, and the two ends pair by that identity (PairUnix).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "jackdaw/abi.h"
#include "join/endpoint_format.h"
#include "join/event_set.h"
#include "join/flat_map.h"

namespace jackdaw::join {

class SocketTracker {
 public:
  // A connection's key as its local socket names it (a received packet's
  // destination is the local end).
  static uint64_t LocalConnKey(uint16_t type, const jdw_net_packet& p);

  // sock_info at `ts`, recorded in process `tgid`: si.sk is now the
  // connection si describes. Returns the connection's key (0 for a unix
  // socket: no packet ever names one).
  uint64_t OnSockInfo(const jdw_sock_info& si, uint64_t ts, uint32_t tgid = 0);
  // The socket a connection key names, 0 if none.
  uint64_t SocketOf(uint64_t conn_key) const {
    const uint64_t* sk = conn_to_sock_.Find(conn_key);
    return sk ? *sk : 0;
  }
  // The socket at the far end of `sk`'s connection, when the capture
  // described it too (both ends on this host and traced: loopback); for a
  // unix socket, the peer its own description names; 0 if none.
  uint64_t PeerOf(uint64_t sk) const;
  // When `sk` got its current connection; 0 for a socket never described.
  uint64_t ConnectedSince(uint64_t sk) const {
    const uint32_t* idx = index_.Find(sk);
    return idx ? socks_[*idx].since : 0;
  }

  // The connection `sk` stands for now; nullptr for a socket never described.
  const SockEntry* Current(uint64_t sk) const {
    const uint32_t* idx = index_.Find(sk);
    return idx ? &socks_[*idx] : nullptr;
  }
  // Whether `si` describes another connection than the one its socket,
  // described before, stands for now (what OnSockInfo() would start a new
  // generation for).
  bool DescribesAnother(const jdw_sock_info& si) const {
    const SockEntry* e = Current(si.sk);
    return e && Differs(*e, si);
  }

  // Direction (CompiledSchema::kDirIn / kDirOut) of the last data syscall on
  // `sk` in its current connection; 0 if none.
  void NoteDirection(uint64_t sk, uint8_t dir) { dir_.Set(sk, dir); }
  uint8_t LastDirection(uint64_t sk) const {
    const uint8_t* d = dir_.Find(sk);
    return d ? *d : 0;
  }
  // close/shutdown of `sk` entered at `ts`.
  void Closed(uint64_t sk, uint64_t ts);

  // Notes the connection `sk` stands for now among the set's (once per
  // generation). `packet`: the event's packet, if it is one; a packet of the
  // sk's previous or next connection (a handshake that arrives before its
  // accept reports the new endpoints) notes nothing.
  void NoteInSet(Set& s, uint64_t sk, const jdw_net_packet* packet, bool packet_out) const;

  // Forgets sockets closed before `now - keep_ns` that no sock_info has
  // described since.
  void ExpireClosed(uint64_t now, uint64_t keep_ns);

 private:
  // For a unix socket, whether it owns the name or its peer does is part of
  // the connection: the kernel frees a connection's two sockets together
  // and hands both out again, often swapped (the server's accepted end
  // becomes the next client's end), so the peer alone would read as the
  // same connection.
  static bool Differs(const SockEntry& e, const jdw_sock_info& si) {
    return e.sport != si.sport || e.dport != si.dport || memcmp(e.daddr, si.daddr, 16) != 0 ||
           e.peer_sk != si.peer_sk || (si.family == kAfUnix && e.unix_flags != si.unix_flags);
  }
  struct ClosedSock {
    uint64_t ts, sk;
  };
  // The AF_UNIX half of OnSockInfo (socket_tracker_unix.cc): the ends of
  // a unix connection name each other by identity, not by address, and
  // each learns from the other's description which process holds it.
  void PairUnix(SockEntry& e, const jdw_sock_info& si, uint32_t tgid);

  FlatMap<uint64_t, uint64_t, U64Hash> conn_to_sock_;  // ConnKey -> sk
  FlatMap<uint64_t, uint32_t, U64Hash> index_;         // sk -> socks_ slot
  FlatMap<uint64_t, uint8_t, U64Hash> dir_;            // sk -> direction of its last data syscall
  std::vector<SockEntry> socks_;
  uint64_t epoch_ = 0;  // bumped whenever a socks_ slot changes connection
  std::vector<uint32_t> free_;
  std::vector<ClosedSock> closed_;  // FIFO by ts
  size_t closed_head_ = 0;
};

}  // namespace jackdaw::join
