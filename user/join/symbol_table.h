// Event symbols (Magpie §4's alphabet: what canonical forms and clustering
// compare): "sys_enter:read", "usdt:srv:request_start", "switch_out:blocked",
// "io_start:read", "block_complete:write", "net_recv". Interned: an event
// carries a 32-bit id, the request builder looks the text up once per event.
//
// A symbol depends only on the record's kind and type and, for some types,
// one payload field (syscall nr, probe id, block op) or whether a switch
// followed a block. Lookups are hot (every joined event): a direct index per
// syscall nr, probe id and switch kind, then a direct-mapped cache, then the
// hash table; the text is made only on first sight.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "jackdaw/abi.h"
#include "join/flat_map.h"
#include "request/symbol.h"
#include "schema/schema.h"

namespace jackdaw::join {

class SymbolTable {
 public:
  // Names as the trace numbers them; both must outlive the table.
  SymbolTable(const std::vector<std::string>& syscall_names, const std::vector<std::string>& app_probes);

  // The symbol id of an event of `kind` from a record of `type` with this
  // payload (at least the type's payload size). after_block: a switch_out
  // that blocked, a switch_in after a block.
  uint32_t Of(schema::EventKind kind, uint16_t type, const uint8_t* payload, bool after_block);
  const model::Symbol& Get(uint32_t id) const { return symbols_[id]; }
  size_t size() const { return symbols_.size(); }

 private:
  uint32_t* KnownSlot(schema::EventKind kind, uint16_t type, const uint8_t* payload, bool after_block);
  uint64_t KeyOf(schema::EventKind kind, uint16_t type, const uint8_t* payload, bool after_block) const;
  uint32_t Intern(uint64_t key);
  std::string Name(uint64_t key) const;

  const std::vector<std::string>& syscall_names_;
  const std::vector<std::string>& app_probes_;
  FlatMap<uint64_t, uint32_t, U64Hash> index_;
  std::vector<model::Symbol> symbols_;
  struct CacheEntry {
    uint64_t key = 0;
    uint32_t id = 0;
    bool valid = false;
  };
  std::array<CacheEntry, 64> cache_{};
  // In front of both, for the kinds of event that make up nearly all of a
  // trace (1 + symbol id, 0 = not seen yet): syscall enters and exits by nr,
  // USDT probes by id, switches out (preempted, blocked) and in, and the
  // record types named by their type alone (packets, above all).
  std::vector<uint32_t> sys_enter_, sys_exit_, usdt_;
  std::array<uint32_t, JDW_EVENT_MAX> plain_{};
  std::array<uint32_t, 3> switch_{};
};

}  // namespace jackdaw::join
