#include "join/early_packets.h"

#include <algorithm>

namespace jackdaw::join {

void EarlyPackets::Drop(std::vector<Ev>& held) {
  held_ -= held.size();
  stats_.early_packets_dropped += held.size();
  held.clear();
}

void EarlyPackets::Named(uint64_t conn_key, uint64_t sk) {
  if (by_conn_.empty()) return;
  auto held = by_conn_.find(conn_key);
  if (held == by_conn_.end()) return;
  std::vector<Ev>& dst = by_sock_[sk];
  Drop(dst);  // an older connection's, never used by a request
  dst = std::move(held->second);
  by_conn_.erase(held);
}

void EarlyPackets::JoinInto(Set& s, uint64_t sk) {
  auto held = by_sock_.find(sk);
  if (held == by_sock_.end()) return;
  for (const Ev& ev : held->second) {
    s.events.push_back(ev);  // earlier seq: emission restores the order
    s.first_ts = std::min(s.first_ts, ev.ts);
  }
  stats_.events_joined += held->second.size();
  stats_.early_packets_joined += held->second.size();
  held_ -= held->second.size();
  by_sock_.erase(held);
}

std::vector<Ev> EarlyPackets::TakeNamed(uint64_t sk) {
  std::vector<Ev> out;
  auto held = by_sock_.find(sk);
  if (held == by_sock_.end()) return out;
  out.swap(held->second);
  held_ -= out.size();
  by_sock_.erase(held);
  return out;
}

void EarlyPackets::ExpireBefore(uint64_t horizon) {
  if (!held_) return;
  for (auto* held_map : {&by_conn_, &by_sock_}) {
    for (auto it = held_map->begin(); it != held_map->end();) {
      if (!it->second.empty() && it->second.back().ts >= horizon) {
        ++it;
        continue;
      }
      Drop(it->second);
      it = held_map->erase(it);
    }
  }
}

void EarlyPackets::DropAll() {
  stats_.early_packets_dropped += held_;
  held_ = 0;
  by_conn_.clear();
  by_sock_.clear();
}

}  // namespace jackdaw::join
