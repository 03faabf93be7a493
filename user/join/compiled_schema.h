// A schema bound to one trace: its event definitions indexed the way records
// arrive (by record type, by syscall number for sys_enter/sys_exit, by the
// trace's USDT probe ids, and the three kernel-derived kinds), the SYNC and
// cascade statements as per-attribute tables, and what the join needs to
// know about syscalls by number (data direction, close, block reason).
//
// Built once per extraction; immutable afterwards, so every lookup on the
// hot path is an index into a vector. Definitions are kept in schema order
// within each list (first match wins) and each at most once.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "jackdaw/abi.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"  // TraceMeta

namespace jackdaw::join {

class CompiledSchema {
 public:
  // Bindings one event definition may have (the join keeps them on its stack).
  static constexpr size_t kMaxBindings = 16;
  // SysDirection(): which way a syscall moves data on a socket.
  static constexpr uint8_t kDirIn = 1, kDirOut = 2;

  // Fails only for schemas the join cannot run (too many bindings or events).
  // Mismatches with the trace (a syscall or probe it lacks) are warnings().
  static StatusOr<CompiledSchema> Compile(const schema::Schema& schema, const trace::TraceMeta& meta);

  const schema::Schema& schema() const { return schema_; }
  const schema::EventDef& def(uint16_t idx) const { return schema_.events[idx]; }

  // Candidate definitions, in schema order.
  const std::vector<uint16_t>& ForType(uint16_t type) const { return by_type_[type]; }  // type < JDW_EVENT_MAX
  const std::vector<uint16_t>* ForSysEnter(uint32_t nr) const {
    return nr < sys_enter_.size() ? &sys_enter_[nr] : nullptr;
  }
  const std::vector<uint16_t>* ForSysExit(uint32_t nr) const {
    return nr < sys_exit_.size() ? &sys_exit_[nr] : nullptr;
  }
  // nullptr: the probe id is not in the trace's probe table.
  const std::vector<uint16_t>* ForUsdt(uint32_t probe) const {
    return probe < usdt_.size() ? &usdt_[probe] : nullptr;
  }
  const std::vector<uint16_t>& ForSwitchOut() const { return switch_out_; }
  const std::vector<uint16_t>& ForSwitchIn() const { return switch_in_; }
  const std::vector<uint16_t>& ForIoStart() const { return io_start_; }

  // Attributes some SYNC statement pairs events by.
  bool IsSyncAttr(uint32_t attr) const { return sync_attr_[attr]; }
  // Definitions that are the source or destination of a SYNC.
  bool InSync(uint16_t def) const { return def_in_sync_[def]; }
  // Attributes whose intervals close with the last one of `attr` in a set
  // (schema `cascade`); empty for attributes that trigger nothing.
  const std::vector<uint16_t>& CascadeTargets(uint32_t attr) const { return cascade_[attr]; }
  const std::vector<std::vector<uint16_t>>& cascade_table() const { return cascade_; }

  // By syscall number; 0 / false for numbers beyond the table.
  uint8_t SysDirection(uint32_t nr) const { return nr < sys_dir_.size() ? sys_dir_[nr] : 0; }
  bool SysCloses(uint32_t nr) const {
    return nr < sys_close_.size() && (sys_close_[nr] == kConnClose || sys_close_[nr] == kConnShutdown);
  }
  // Connection life syscalls, for the message rule: kConnClose (close),
  // kConnShutdown (shutdown: the socket stays open), kConnAccept, and for
  // the call rule kConnConnect; else 0.
  static constexpr uint8_t kConnClose = 1, kConnShutdown = 2, kConnAccept = 3, kConnConnect = 4;
  uint8_t SysConnOp(uint32_t nr) const { return nr < sys_close_.size() ? sys_close_[nr] : 0; }
  // model::BlockReason of sleeping in the syscall (its object aside).
  uint8_t SysBlockReason(uint32_t nr) const;
  int32_t futex_nr() const { return futex_nr_; }  // -1: not in this trace's table

  const std::vector<std::string>& syscall_names() const { return syscall_names_; }
  const std::vector<std::string>& app_probes() const { return app_probes_; }
  // Payload size of a record type (trace/event_table); 0 for an unknown type.
  uint16_t PayloadSize(uint16_t type) const { return type < payload_sizes_.size() ? payload_sizes_[type] : 0; }

  // Schema / trace mismatches worth telling the user about.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  CompiledSchema() = default;
  void ClassifySyscalls();
  void BuildDispatch();

  schema::Schema schema_;
  std::vector<std::string> syscall_names_;
  std::vector<std::string> app_probes_;
  std::array<uint16_t, JDW_EVENT_MAX> payload_sizes_{};
  std::array<std::vector<uint16_t>, JDW_EVENT_MAX> by_type_;
  std::vector<std::vector<uint16_t>> sys_enter_, sys_exit_, usdt_;
  std::vector<uint16_t> switch_out_, switch_in_, io_start_;
  std::vector<bool> sync_attr_;
  std::vector<uint8_t> def_in_sync_;
  std::vector<std::vector<uint16_t>> cascade_;
  std::vector<uint8_t> sys_dir_;
  std::vector<uint8_t> sys_close_;
  std::vector<uint8_t> sys_reason_;
  int32_t futex_nr_ = -1;
  std::vector<std::string> warnings_;
};

}  // namespace jackdaw::join
