// Small tid-keyed maps for the handful of threads one request has.
// Canonicalize runs once per request in `jackdaw live`, so these avoid the
// allocation per thread per request a hash map would cost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jackdaw::canonical {

// tid -> an event index, for the handful of threads of one request: a flat
// vector searched linearly from the last hit (consecutive events are mostly
// on one thread). Canonicalize runs once per request in `jackdaw live`; a
// hash map here cost an allocation per thread per request.
class TidIndex {
 public:
  void KeepFirst(uint32_t tid, uint32_t i) {
    if (!Find(tid)) v_.emplace_back(tid, i);
  }
  void Set(uint32_t tid, uint32_t i) {
    if (uint32_t* p = Find(tid)) *p = i;
    else v_.emplace_back(tid, i);
  }
  const uint32_t* Get(uint32_t tid) const {
    if (hint_ < v_.size() && v_[hint_].first == tid) return &v_[hint_].second;
    for (size_t k = 0; k < v_.size(); ++k)
      if (v_[k].first == tid) return hint_ = k, &v_[k].second;
    return nullptr;
  }

 private:
  uint32_t* Find(uint32_t tid) { return const_cast<uint32_t*>(Get(tid)); }
  std::vector<std::pair<uint32_t, uint32_t>> v_;
  mutable size_t hint_ = 0;
};

// tid -> value for the threads of one request: a linear scan of a vector
// beats hashing (and allocates once) at the few threads requests have; past
// kScan entries (a runaway set) a hash index keeps lookups O(1).
template <typename V>
class SmallTidMap {
 public:
  const V* Find(uint32_t tid) const {
    const size_t i = IndexOf(tid);
    return i < entries_.size() ? &entries_[i].second : nullptr;
  }
  V Set(uint32_t tid, V value) {
    const size_t i = IndexOf(tid);
    if (i < entries_.size()) return entries_[i].second = value;
    entries_.emplace_back(tid, value);
    if (entries_.size() > kScan) {
      if (index_.empty())
        for (size_t k = 0; k < entries_.size(); ++k) index_.emplace(entries_[k].first, k);
      else
        index_.emplace(tid, entries_.size() - 1);
    }
    return value;
  }
  size_t size() const { return entries_.size(); }
  void Clear() {
    entries_.clear();
    index_.clear();
  }

 private:
  static constexpr size_t kScan = 32;
  size_t IndexOf(uint32_t tid) const {
    if (entries_.size() > kScan) {
      auto it = index_.find(tid);
      return it == index_.end() ? SIZE_MAX : it->second;
    }
    for (size_t k = 0; k < entries_.size(); ++k)
      if (entries_[k].first == tid) return k;
    return SIZE_MAX;
  }
  std::vector<std::pair<uint32_t, V>> entries_;
  std::unordered_map<uint32_t, size_t> index_;
};

}  // namespace jackdaw::canonical
