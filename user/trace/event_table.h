// Run-time view of the event table in include/jackdaw/abi.h: ids, names,
// groups, payload sizes and field layouts, all generated from the ABI's
// X-macros so nothing here is a hand-kept copy. Used by the trace reader
// (size validation), dump, and the schema language (event and field names).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jackdaw/abi.h"

namespace jackdaw::trace {

enum class FieldKind : uint8_t { kUnsigned, kSigned, kChars, kBytes, kArray };

struct FieldDesc {
  const char* name;
  uint16_t offset;     // within the payload
  uint8_t elem_size;   // bytes per element
  uint8_t count;       // 1 for scalars
  FieldKind kind;
};

struct EventDesc {
  uint16_t id;
  const char* name;
  uint32_t group;        // enum jdw_group
  uint16_t payload_size;
  std::vector<FieldDesc> fields;

  const FieldDesc* FindField(std::string_view field) const;
  uint16_t record_size() const { return sizeof(jdw_record_header) + payload_size; }
};

std::span<const EventDesc> AllEvents();
const EventDesc* FindEvent(uint16_t id);
const EventDesc* FindEvent(std::string_view name);

const char* GroupName(uint32_t group);
// Parses a group name; returns false for an unknown one.
bool ParseGroup(std::string_view name, uint32_t* group);
// "sched, syscall, block, net, interact, app"
std::string GroupList();

inline const uint8_t* Payload(const jdw_record_header& h) {
  return reinterpret_cast<const uint8_t*>(&h) + sizeof(jdw_record_header);
}
// A copy of the payload as its ABI struct (records are only 8-byte aligned
// in their chunk, and a copy outlives the chunk).
template <typename T>
T PayloadAs(const jdw_record_header& h) {
  T t;
  memcpy(&t, Payload(h), sizeof(t));
  return t;
}
// Scalar field value (sign-extended for signed fields); 0 for arrays.
uint64_t ReadScalar(const jdw_record_header& h, const FieldDesc& f);

}  // namespace jackdaw::trace
