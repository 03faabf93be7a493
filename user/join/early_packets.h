// Interrupt-context TCP packets of a connection the join does not know yet:
// a client's SYN, handshake ACK and first request bytes usually arrive
// before accept() returns the socket. They are held by connection key, moved
// to the socket when accept's sock_info names the connection, and joined,
// with their original sequence numbers (so in time order), to the first
// request that uses the socket.
//
// Bounded: kPerConn per connection and kHeldMax in all (unrelated traffic of
// connections never accepted must not grow the join's memory); held packets
// older than the join's timeout are dropped. Every packet dropped is counted
// (Stats::early_packets_dropped), every one joined too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "join/event_set.h"
#include "join/flat_map.h"
#include "join/stats.h"

namespace jackdaw::join {

class EarlyPackets {
 public:
  static constexpr size_t kPerConn = 16;
  static constexpr size_t kHeldMax = 1 << 16;

  explicit EarlyPackets(Stats& stats) : stats_(stats) {}

  // Holds the packet `make_event()` builds (called only if it is kept: it
  // numbers the event) for connection `conn_key`, seen at `ts`. A held
  // attempt at the same address pair older than `timeout_ns` is stale.
  template <typename MakeEvent>
  void Hold(uint64_t conn_key, uint64_t ts, uint64_t timeout_ns, MakeEvent&& make_event) {
    if (held_ >= kHeldMax) {
      stats_.early_packets_dropped++;
      return;
    }
    bool fresh;
    uint32_t* slot = by_conn_.FindOrInsert(conn_key, &fresh);
    if (fresh) *slot = NewSlot();
    std::vector<Ev>& held = pool_[*slot];
    if (!held.empty() && held.front().ts + timeout_ns < ts) Drop(held);
    if (held.size() >= kPerConn) {
      stats_.early_packets_dropped++;
      return;
    }
    held.push_back(make_event());
    held_++;
  }

  // accept's sock_info: connection `conn_key` is socket `sk` now.
  void Named(uint64_t conn_key, uint64_t sk);
  // A request's first use of `sk`: appends the packets held for it to `s`.
  void JoinInto(Set& s, uint64_t sk);
  // Takes the packets named for `sk` (the message rule hands them to the
  // connection's messages instead of its first request): calls fn(const Ev&)
  // for each, in the order they were held.
  template <typename Fn>
  void TakeNamed(uint64_t sk, Fn&& fn) {
    const size_t at = by_sock_.FindIndex(sk);
    if (at == by_sock_.kNpos) return;
    const uint32_t slot = by_sock_.ValueAt(at);
    by_sock_.EraseAt(at);
    std::vector<Ev>& held = pool_[slot];
    held_ -= held.size();
    for (const Ev& ev : held) fn(ev);
    FreeSlot(slot);
  }
  // Any packets named and waiting for a request (the hot path's check).
  bool AnyNamed() const { return by_sock_.size() != 0; }

  // Drops held packets whose last one is older than `horizon`.
  void ExpireBefore(uint64_t horizon);
  // End of trace: what is held was never used by a request.
  void DropAll();
  size_t held() const { return held_; }

 private:
  // A pooled packet list is cleared, not freed, when its connection is
  // done with it: a busy server accepts hundreds of connections a second,
  // and each held its handshake in a vector of its own (an allocation, and
  // a node of a std::unordered_map, per connection).
  static constexpr size_t kMaxKeptCapacity = kPerConn;
  uint32_t NewSlot();
  void FreeSlot(uint32_t slot);
  void Drop(std::vector<Ev>& held);

  Stats& stats_;
  FlatMap<uint64_t, uint32_t, U64Hash> by_conn_;  // ConnKey -> pool slot of its packets
  FlatMap<uint64_t, uint32_t, U64Hash> by_sock_;  // sk -> pool slot: named, not joined yet
  std::vector<std::vector<Ev>> pool_;
  std::vector<uint32_t> free_slots_;
  size_t held_ = 0;
};

}  // namespace jackdaw::join
