#include "trace/event_table.h"

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace jackdaw::trace {
namespace {

template <typename T>
FieldDesc Scalar(const char* name, size_t offset) {
  return FieldDesc{name, static_cast<uint16_t>(offset), sizeof(T), 1,
                   std::is_signed_v<T> ? FieldKind::kSigned : FieldKind::kUnsigned};
}

template <typename T>
FieldDesc Array(const char* name, size_t offset, size_t n) {
  FieldKind kind = FieldKind::kArray;
  if (std::is_same_v<T, char>) kind = FieldKind::kChars;
  if (std::is_same_v<T, __u8>) kind = FieldKind::kBytes;
  return FieldDesc{name, static_cast<uint16_t>(offset), sizeof(T), static_cast<uint8_t>(n), kind};
}

#define JDW_F(type, name) Scalar<type>(#name, offsetof(S, name)),
#define JDW_A(type, name, n) Array<type>(#name, offsetof(S, name), n),
#define JDW_DESC(NAME, id, group, str, fields, st)                        \
  [] {                                                                     \
    using S = struct st;                                                   \
    return EventDesc{id, str, JDW_GROUP_##group, sizeof(S), {fields(JDW_F, JDW_A)}}; \
  }(),

const std::vector<EventDesc>& Table() {
  static const std::vector<EventDesc> table = {JDW_EVENT_TABLE(JDW_DESC)};
  return table;
}

#undef JDW_F
#undef JDW_A
#undef JDW_DESC

struct GroupEntry {
  uint32_t id;
  const char* name;
};
#define JDW_GROUP_ENTRY(name, id, str) GroupEntry{id, str},
constexpr GroupEntry kGroups[] = {JDW_GROUP_TABLE(JDW_GROUP_ENTRY)};
#undef JDW_GROUP_ENTRY

}  // namespace

const FieldDesc* EventDesc::FindField(std::string_view field) const {
  for (const auto& f : fields)
    if (field == f.name) return &f;
  return nullptr;
}

std::span<const EventDesc> AllEvents() { return Table(); }

const EventDesc* FindEvent(uint16_t id) {
  // Ids are small; a direct index keeps lookups O(1) on the hot path.
  static const std::vector<const EventDesc*> by_id = [] {
    std::vector<const EventDesc*> v(JDW_EVENT_MAX, nullptr);
    for (const auto& e : Table()) v[e.id] = &e;
    return v;
  }();
  return id < by_id.size() ? by_id[id] : nullptr;
}

const EventDesc* FindEvent(std::string_view name) {
  for (const auto& e : Table())
    if (name == e.name) return &e;
  return nullptr;
}

const char* GroupName(uint32_t group) {
  for (const auto& g : kGroups)
    if (g.id == group) return g.name;
  return "unknown";
}

bool ParseGroup(std::string_view name, uint32_t* group) {
  for (const auto& g : kGroups) {
    if (name == g.name) {
      *group = g.id;
      return true;
    }
  }
  return false;
}

std::string GroupList() {
  std::string s;
  for (const auto& g : kGroups) {
    if (!s.empty()) s += ", ";
    s += g.name;
  }
  return s;
}

uint64_t ReadScalar(const jdw_record_header& h, const FieldDesc& f) {
  if (f.count != 1) return 0;
  const uint8_t* p = Payload(h) + f.offset;
  switch (f.elem_size) {
    case 1: {
      uint8_t v;
      memcpy(&v, p, 1);
      return f.kind == FieldKind::kSigned ? static_cast<uint64_t>(static_cast<int8_t>(v)) : v;
    }
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      return f.kind == FieldKind::kSigned ? static_cast<uint64_t>(static_cast<int16_t>(v)) : v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return f.kind == FieldKind::kSigned ? static_cast<uint64_t>(static_cast<int32_t>(v)) : v;
    }
    case 8: {
      uint64_t v;
      memcpy(&v, p, 8);
      return v;
    }
  }
  return 0;
}

}  // namespace jackdaw::trace
