#include "join/symbol_table.h"

#include <cstddef>
#include <cstring>

#include "jackdaw/abi.h"
#include "trace/event_table.h"

namespace jackdaw::join {
namespace {

// key: kind << 56 | record type << 32 | sub-id. Kinds:
constexpr uint64_t kSymSys = 1, kSymUsdt = 2, kSymBlock = 3, kSymPlain = 4, kSymSwitch = 5;
constexpr int kKindShift = 56, kIoStartShift = 48, kTypeShift = 32;
// Sub-ids of kSymSwitch, also the index into the switch fast path.
constexpr uint32_t kSwitchPreempted = 0, kSwitchBlocked = 1, kSwitchIn = 2;
// REQ_OP_* is the low byte of a block record's op (flags above).
constexpr uint32_t kBlockOpMask = 0xff;

// The block op sits at the same offset in issue and completion records.
static_assert(offsetof(jdw_block_issue, op) == offsetof(jdw_block_complete, op));

const char* BlockOpName(uint32_t op) {
  switch (op & kBlockOpMask) {  // REQ_OP_READ, _WRITE, _FLUSH, _DISCARD
    case 0:
      return "read";
    case 1:
      return "write";
    case 2:
      return "flush";
    case 3:
      return "discard";
    default:
      return "other";
  }
}

const char* RecordName(uint16_t type) {
  const trace::EventDesc* d = trace::FindEvent(type);
  return d ? d->name : "unknown";
}

template <typename T>
T Load(const uint8_t* payload, size_t offset = 0) {
  T v;
  memcpy(&v, payload + offset, sizeof(v));
  return v;
}

}  // namespace

SymbolTable::SymbolTable(const std::vector<std::string>& syscall_names, const std::vector<std::string>& app_probes)
    : syscall_names_(syscall_names), app_probes_(app_probes) {
  const size_t nsys = std::max<size_t>(syscall_names_.size(), JDW_MAX_SYSCALLS);
  sys_enter_.assign(nsys, 0);
  sys_exit_.assign(nsys, 0);
  usdt_.assign(app_probes_.size(), 0);
}

uint32_t SymbolTable::Of(schema::EventKind kind, uint16_t type, const uint8_t* payload, bool after_block) {
  uint32_t* known = KnownSlot(kind, type, payload, after_block);
  if (known && *known) return *known - 1;
  const uint32_t id = Intern(KeyOf(kind, type, payload, after_block));
  if (known) *known = id + 1;
  return id;
}

uint32_t* SymbolTable::KnownSlot(schema::EventKind kind, uint16_t type, const uint8_t* payload, bool after_block) {
  switch (kind) {
    case schema::EventKind::kSwitchOut:
      return &switch_[after_block ? kSwitchBlocked : kSwitchPreempted];
    case schema::EventKind::kSwitchIn:
      return &switch_[kSwitchIn];
    case schema::EventKind::kUsdt: {
      const auto probe = Load<uint32_t>(payload, offsetof(jdw_usdt, probe_id));
      return probe < usdt_.size() ? &usdt_[probe] : nullptr;
    }
    case schema::EventKind::kRecord: {
      if (type != JDW_EVENT_SYS_ENTER && type != JDW_EVENT_SYS_EXIT) {
        // KeyOf's plain case: the type is the whole key.
        if (type == JDW_EVENT_BLOCK_COMPLETE || type == JDW_EVENT_BLOCK_ISSUE || type >= plain_.size()) return nullptr;
        return &plain_[type];
      }
      static_assert(offsetof(jdw_sys_enter, nr) == offsetof(jdw_sys_exit, nr));
      const auto nr = Load<uint16_t>(payload, offsetof(jdw_sys_enter, nr));
      std::vector<uint32_t>& table = type == JDW_EVENT_SYS_ENTER ? sys_enter_ : sys_exit_;
      return nr < table.size() ? &table[nr] : nullptr;
    }
    default:
      return nullptr;
  }
}

uint64_t SymbolTable::KeyOf(schema::EventKind kind, uint16_t type, const uint8_t* payload, bool after_block) const {
  switch (kind) {
    case schema::EventKind::kSwitchOut:
      return (kSymSwitch << kKindShift) | (after_block ? kSwitchBlocked : kSwitchPreempted);
    case schema::EventKind::kSwitchIn:
      return (kSymSwitch << kKindShift) | kSwitchIn;
    case schema::EventKind::kIoStart:
    case schema::EventKind::kRecord:
      if (type == JDW_EVENT_SYS_ENTER || type == JDW_EVENT_SYS_EXIT) {
        const auto nr = Load<uint16_t>(payload, offsetof(jdw_sys_enter, nr));
        return (kSymSys << kKindShift) | (uint64_t{type} << kTypeShift) | nr;
      }
      if (type == JDW_EVENT_BLOCK_COMPLETE || type == JDW_EVENT_BLOCK_ISSUE) {
        const auto op = Load<uint32_t>(payload, offsetof(jdw_block_complete, op));
        return (kSymBlock << kKindShift) | (uint64_t{kind == schema::EventKind::kIoStart} << kIoStartShift) |
               (uint64_t{type} << kTypeShift) | (op & kBlockOpMask);
      }
      return (kSymPlain << kKindShift) | (uint64_t{type} << kTypeShift);
    case schema::EventKind::kUsdt:
      return (kSymUsdt << kKindShift) | Load<uint32_t>(payload, offsetof(jdw_usdt, probe_id));
    default:
      return 0;
  }
}

uint32_t SymbolTable::Intern(uint64_t key) {
  // A direct-mapped cache in front of the table (a handful of symbols make
  // up nearly all events).
  CacheEntry& ce = cache_[(key ^ (key >> 29) ^ (key >> 47)) & (cache_.size() - 1)];
  if (ce.valid && ce.key == key) return ce.id;
  bool inserted;
  uint32_t* id = index_.FindOrInsert(key, &inserted);
  if (inserted) {
    symbols_.push_back(model::Symbol(Name(key)));
    *id = static_cast<uint32_t>(symbols_.size() - 1);
  }
  ce = CacheEntry{key, *id, true};
  return *id;
}

std::string SymbolTable::Name(uint64_t k) const {
  const uint64_t kind = k >> kKindShift;
  const auto type = static_cast<uint16_t>((k >> kTypeShift) & 0xffff);
  std::string s;
  if (kind == kSymSwitch) {
    const auto sub = static_cast<uint32_t>(k & 0xff);
    s = sub == kSwitchIn ? "switch_in" : sub == kSwitchBlocked ? "switch_out:blocked" : "switch_out:preempted";
  } else if (kind == kSymSys) {
    const auto nr = static_cast<uint32_t>(k & 0xffff);
    s = RecordName(type);
    s += ':';
    s += nr < syscall_names_.size() && !syscall_names_[nr].empty() ? syscall_names_[nr] : std::to_string(nr);
  } else if (kind == kSymBlock) {
    s = ((k >> kIoStartShift) & 1) ? "io_start" : RecordName(type);
    s += ':';
    s += BlockOpName(static_cast<uint32_t>(k & kBlockOpMask));
  } else if (kind == kSymUsdt) {
    const auto probe = static_cast<uint32_t>(k & 0xffffffff);
    s = "usdt:";
    s += probe < app_probes_.size() ? app_probes_[probe] : "probe" + std::to_string(probe);
  } else {
    s = RecordName(type);
  }
  return s;
}

}  // namespace jackdaw::join
