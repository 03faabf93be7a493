// Open-addressing hash map for the join's hot path (interval table, thread
// table, socket table).
//
// Linear probing over a power-of-two table of (key, value) slots plus a byte
// of occupancy per slot; deletion shifts the following run back instead of
// leaving tombstones, so lookups never degrade after churn (every finished
// request erases its intervals). Load factor <= 1/2. Keys and values must be
// trivially copyable; Hash is a functor returning a well-mixed u64.
// Not a general container: no iterators beyond ForEach, no exceptions.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace jackdaw::join {

inline uint64_t Mix64(uint64_t x) {
  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

struct U64Hash {
  uint64_t operator()(uint64_t k) const { return Mix64(k); }
};

template <typename K, typename V, typename Hash>
class FlatMap {
  static_assert(std::is_trivially_copyable_v<K> && std::is_trivially_copyable_v<V>);

  // Key, value and occupancy side by side: a probe touches one cache line.
  struct Slot {
    K key;
    V val;
    bool used;
  };

 public:
  FlatMap() { Rehash(16); }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }
  // Changes whenever an index from FindIndex() may have become stale
  // (insertion, erasure, rehash); value updates leave it alone.
  uint64_t version() const { return version_; }

  V* Find(const K& k) {
    size_t i = Hash()(k) & mask_;
    for (;;) {
      Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == k) return &s.val;
      i = (i + 1) & mask_;
    }
  }
  const V* Find(const K& k) const { return const_cast<FlatMap*>(this)->Find(k); }

  // Inserts a default value if absent; *inserted tells which.
  V* FindOrInsert(const K& k, bool* inserted) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.size() * 2);
    size_t i = Hash()(k) & mask_;
    for (;;) {
      Slot& s = slots_[i];
      if (!s.used) {
        s.used = true;
        s.key = k;
        s.val = V{};
        size_++;
        version_++;
        *inserted = true;
        return &s.val;
      }
      if (s.key == k) {
        *inserted = false;
        return &s.val;
      }
      i = (i + 1) & mask_;
    }
  }

  // Slot-index access, for read-modify-erase without probing twice. An index
  // is valid until the next insertion or erasure.
  static constexpr size_t kNpos = ~size_t{0};
  size_t FindIndex(const K& k) const {
    size_t i = Hash()(k) & mask_;
    for (;;) {
      const Slot& s = slots_[i];
      if (!s.used) return kNpos;
      if (s.key == k) return i;
      i = (i + 1) & mask_;
    }
  }
  V& ValueAt(size_t i) { return slots_[i].val; }
  void EraseAt(size_t i) { EraseSlot(i); }

  void Set(const K& k, const V& v) {
    bool ins;
    *FindOrInsert(k, &ins) = v;
  }

  bool Erase(const K& k) {
    size_t i = Hash()(k) & mask_;
    for (;;) {
      Slot& s = slots_[i];
      if (!s.used) return false;
      if (s.key == k) {
        EraseSlot(i);
        return true;
      }
      i = (i + 1) & mask_;
    }
  }

  // fn(const K&, V&) -> bool erase
  template <typename Fn>
  void EraseIf(Fn fn) {
    // Backward-shift deletion may move an entry into an already visited slot
    // (only from a later slot in the same probe run); collecting first keeps
    // the visit simple and correct.
    std::vector<K> doomed;
    for (Slot& s : slots_)
      if (s.used && fn(s.key, s.val)) doomed.push_back(s.key);
    for (const K& k : doomed) Erase(k);
    MaybeShrink();
  }

  template <typename Fn>
  void ForEach(Fn fn) {
    for (Slot& s : slots_)
      if (s.used) fn(s.key, s.val);
  }

  void Clear() {
    size_ = 0;
    slots_.clear();
    Rehash(16);
  }

  // Gives memory back after a burst (the table never shrinks on Erase alone).
  void MaybeShrink() {
    if (slots_.size() > 1024 && size_ * 8 < slots_.size()) Rehash(slots_.size() / 4);
  }

 private:
  void EraseSlot(size_t i) {
    slots_[i].used = false;
    size_--;
    version_++;
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask_;
      if (!slots_[j].used) return;
      const size_t home = Hash()(slots_[j].key) & mask_;
      // Move j back to i unless its home lies cyclically in (i, j].
      const bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (between) continue;
      slots_[i] = slots_[j];
      slots_[j].used = false;
      i = j;
    }
  }

  void Rehash(size_t cap) {
    if (cap < 16) cap = 16;
    while (size_ * 2 > cap) cap *= 2;
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(cap, Slot{K{}, V{}, false});
    mask_ = cap - 1;
    size_ = 0;
    version_++;
    for (const Slot& s : old) {
      if (!s.used) continue;
      size_t j = Hash()(s.key) & mask_;
      while (slots_[j].used) j = (j + 1) & mask_;
      slots_[j] = s;
      size_++;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  uint64_t version_ = 0;
};

}  // namespace jackdaw::join
