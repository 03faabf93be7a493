// The trace decoder's expansion of wire-only records (include/jackdaw/abi.h,
// "wire-only records") into the events they stand for.
//
// A JDW_WIRE_SYS_CALL record is one syscall whose enter the probe held back
// until its exit: it expands to exactly the sys_enter and the sys_exit
// records the probe would have emitted without combining, byte for byte,
// so every stage after the decoder (reorder, join, commands) sees the
// events it saw before. Both the trace reader (per chunk) and the live
// capture path (per record) expand through here.
//
// Order: a buffer of one CPU's records in time order (header ts) stays in
// time order after expansion except where a record nested in the
// combined record's syscall (an interrupt that found the probe's slot busy)
// is stamped between the enter and the exit; ExpandRecords re-sorts those,
// stably, so a chunk's records leave the decoder in time order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "jackdaw/abi.h"

namespace jackdaw::trace {

// Bytes one expanded wire record occupies (both events).
inline constexpr size_t kSysCallExpandedBytes = 2 * sizeof(jdw_sys_enter_record);

inline bool IsWireRecord(uint16_t type) { return type == JDW_WIRE_SYS_CALL; }

// The smallest record of `type` a trace of `abi_version` may hold:
// sock_info grew in ABI 5, and an older trace's shorter one is widened
// (WidenedSize) as it is read.
inline size_t MinRecordSize(uint16_t type, size_t current_size, uint32_t abi_version) {
  if (type == JDW_EVENT_SOCK_INFO && abi_version < 5) return sizeof(jdw_record_header) + JDW_SOCK_INFO_V4_SIZE;
  return current_size;
}

// Bytes a record (not a wire record) takes once decoded: a short sock_info
// (ABI 2-4) grows to today's layout, the new fields 0.
inline size_t WidenedSize(const jdw_record_header& h) {
  return h.type == JDW_EVENT_SOCK_INFO && h.size < sizeof(jdw_sock_info_record) ? sizeof(jdw_sock_info_record)
                                                                                : h.size;
}

// Writes the two events of a JDW_WIRE_SYS_CALL record (`rec`, at least
// sizeof(jdw_sys_call_record) bytes) to *enter and *exit.
void ExpandSysCall(const uint8_t* rec, jdw_sys_enter_record* enter, jdw_sys_exit_record* exit);

// Expands every wire record of `len` bytes of well-formed records (sizes
// checked by the caller) into *out, in time order, and widens short
// sock_info records (WidenedSize). Returns false, leaving *out alone, when
// there is nothing to expand or widen (use the input as is).
bool ExpandRecords(const uint8_t* data, size_t len, std::vector<uint8_t>* out);

}  // namespace jackdaw::trace
