#include "join/socket_tracker.h"

#include <cstddef>
#include <cstring>

#include "join/endpoint_format.h"

namespace jackdaw::join {
namespace {

// Compaction of the closed-socket FIFO: once this many entries are spent
// and they are more than half of it.
constexpr size_t kClosedCompactAt = 4096;

}  // namespace

uint64_t SocketTracker::LocalConnKey(uint16_t type, const jdw_net_packet& p) {
  return type == JDW_EVENT_NET_RECV ? ConnKey(p.family, p.daddr, p.dport, p.saddr, p.sport)
                                    : ConnKey(p.family, p.saddr, p.sport, p.daddr, p.dport);
}

uint64_t SocketTracker::OnSockInfo(const jdw_sock_info& si, uint64_t ts, uint32_t tgid) {
  bool inserted;
  uint32_t* idx = index_.FindOrInsert(si.sk, &inserted);
  if (inserted) {
    if (!free_.empty()) {
      *idx = free_.back();
      free_.pop_back();
    } else {
      *idx = static_cast<uint32_t>(socks_.size());
      socks_.emplace_back();
    }
  }
  SockEntry& e = socks_[*idx];
  if (inserted) {
    // A reused slot keeps counting generations: a set that noted its old
    // owner must not take the new one for the same connection.
    const uint32_t gen = e.gen + 1;
    e = SockEntry{};
    e.gen = gen;
    epoch_++;
    e.since = ts;
    e.sk = si.sk;
  } else if (Differs(e, si)) {
    // Same memory, another connection: nothing known about the old one
    // (direction of its last data, threads that used it) applies, and its
    // address pair no longer names this socket (a late packet of the old
    // connection stays unjoined rather than joining the new one's request;
    // and the map does not grow with every connection ever seen).
    if (e.family != kAfUnix) {
      const uint64_t old_key = ConnKey(e.family, e.saddr, e.sport, e.daddr, e.dport);
      const uint64_t* cur = conn_to_sock_.Find(old_key);
      if (cur && *cur == si.sk) conn_to_sock_.Erase(old_key);
    }
    e.gen++;
    epoch_++;
    e.since = ts;
    dir_.Erase(si.sk);
  }
  e.family = si.family;
  e.sport = si.sport;
  e.dport = si.dport;
  memcpy(e.saddr, si.saddr, 16);
  memcpy(e.daddr, si.daddr, 16);
  e.info_ts = ts;
  if (si.family == kAfUnix) {
    PairUnix(e, si, tgid);
    return 0;
  }
  const uint64_t key = ConnKey(si.family, si.saddr, si.sport, si.daddr, si.dport);
  conn_to_sock_.Set(key, si.sk);
  return key;
}

uint64_t SocketTracker::PeerOf(uint64_t sk) const {
  const SockEntry* e = Current(sk);
  if (!e || !e->family) return 0;
  if (e->family == kAfUnix) return e->peer_sk != sk ? e->peer_sk : 0;
  const uint64_t peer = SocketOf(ConnKey(e->family, e->daddr, e->dport, e->saddr, e->sport));
  return peer != sk ? peer : 0;
}

void SocketTracker::Closed(uint64_t sk, uint64_t ts) {
  closed_.push_back(ClosedSock{ts, sk});
  dir_.Erase(sk);
}

void SocketTracker::NoteInSet(Set& s, uint64_t sk, const jdw_net_packet* packet, bool packet_out) const {
  // Already noted, and still the same connection: no lookup (hot path: every
  // socket syscall and packet of a request). No socket has changed hands
  // since it was last found current: nothing to check at all.
  for (SetSock& ss : s.socks) {
    if (ss.sk != sk) continue;
    if (ss.checked == epoch_) return;
    const SockEntry& cur = socks_[ss.slot];
    if (cur.sk == sk && cur.gen == ss.conn.gen) {
      ss.checked = epoch_;
      // A unix peer's own description arrived since: who holds the other end.
      ss.conn.peer_tgid = cur.peer_tgid;
      return;
    }
  }
  const uint32_t* idx = index_.Find(sk);
  if (!idx) return;  // never seen its sock_info: no endpoints to report
  const SockEntry& e = socks_[*idx];
  if (packet) {
    const jdw_net_packet& p = *packet;
    if ((packet_out ? p.sport : p.dport) != e.sport || (packet_out ? p.dport : p.sport) != e.dport) return;
  }
  for (const SetSock& ss : s.socks)
    if (ss.sk == sk && ss.conn.gen == e.gen) return;
  s.socks.push_back(SetSock{sk, *idx, epoch_, e});
}

void SocketTracker::ExpireClosed(uint64_t now, uint64_t keep_ns) {
  while (closed_head_ < closed_.size() && closed_[closed_head_].ts + keep_ns < now) {
    const ClosedSock& cl = closed_[closed_head_++];
    if (const uint32_t* idx = index_.Find(cl.sk)) {
      SockEntry& e = socks_[*idx];
      if (e.info_ts <= cl.ts) {
        if (e.family != kAfUnix) {
          const uint64_t key = ConnKey(e.family, e.saddr, e.sport, e.daddr, e.dport);
          const uint64_t* cur = conn_to_sock_.Find(key);
          if (cur && *cur == cl.sk) conn_to_sock_.Erase(key);
        }
        e.sk = 0;
        free_.push_back(*idx);
        index_.Erase(cl.sk);
      }
    }
  }
  if (closed_head_ > kClosedCompactAt && closed_head_ * 2 > closed_.size()) {
    closed_.erase(closed_.begin(), closed_.begin() + static_cast<ptrdiff_t>(closed_head_));
    closed_head_ = 0;
  }
}

}  // namespace jackdaw::join
