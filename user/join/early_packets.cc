#include "join/early_packets.h"

#include <algorithm>

namespace jackdaw::join {

uint32_t EarlyPackets::NewSlot() {
  if (free_slots_.empty()) {
    pool_.emplace_back();
    return static_cast<uint32_t>(pool_.size() - 1);
  }
  const uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void EarlyPackets::FreeSlot(uint32_t slot) {
  std::vector<Ev>& v = pool_[slot];
  if (v.capacity() > kMaxKeptCapacity) std::vector<Ev>().swap(v);
  else v.clear();
  free_slots_.push_back(slot);
}

void EarlyPackets::Drop(std::vector<Ev>& held) {
  held_ -= held.size();
  stats_.early_packets_dropped += held.size();
  held.clear();
}

void EarlyPackets::Named(uint64_t conn_key, uint64_t sk) {
  if (by_conn_.size() == 0) return;
  const size_t at = by_conn_.FindIndex(conn_key);
  if (at == by_conn_.kNpos) return;
  const uint32_t slot = by_conn_.ValueAt(at);
  by_conn_.EraseAt(at);
  bool fresh;
  uint32_t* dst = by_sock_.FindOrInsert(sk, &fresh);
  if (!fresh) {
    Drop(pool_[*dst]);  // an older connection's, never used by a request
    FreeSlot(*dst);
  }
  *dst = slot;
}

void EarlyPackets::JoinInto(Set& s, uint64_t sk) {
  const size_t at = by_sock_.FindIndex(sk);
  if (at == by_sock_.kNpos) return;
  const uint32_t slot = by_sock_.ValueAt(at);
  by_sock_.EraseAt(at);
  const std::vector<Ev>& held = pool_[slot];
  for (const Ev& ev : held) {
    s.events.push_back(ev);  // earlier seq: emission restores the order
    s.first_ts = std::min(s.first_ts, ev.ts);
  }
  stats_.events_joined += held.size();
  stats_.early_packets_joined += held.size();
  held_ -= held.size();
  FreeSlot(slot);
}

void EarlyPackets::ExpireBefore(uint64_t horizon) {
  if (!held_) return;
  for (auto* held_map : {&by_conn_, &by_sock_}) {
    held_map->EraseIf([&](uint64_t, uint32_t& slot) {
      std::vector<Ev>& held = pool_[slot];
      if (!held.empty() && held.back().ts >= horizon) return false;
      Drop(held);
      FreeSlot(slot);
      return true;
    });
  }
}

void EarlyPackets::DropAll() {
  stats_.early_packets_dropped += held_;
  held_ = 0;
  by_conn_.Clear();
  by_sock_.Clear();
  pool_.clear();
  free_slots_.clear();
}

}  // namespace jackdaw::join
