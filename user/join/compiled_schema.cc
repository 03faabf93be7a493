#include "join/compiled_schema.h"

#include <algorithm>

#include "request/request.h"
#include "schema/catalog.h"
#include "trace/event_table.h"

namespace jackdaw::join {

// The schema's block_reason constants are the model's BlockReason values.
static_assert(static_cast<int>(schema::BlockReasonValue::kDisk) == static_cast<int>(model::BlockReason::kDisk) &&
              static_cast<int>(schema::BlockReasonValue::kNetwork) == static_cast<int>(model::BlockReason::kNetwork) &&
              static_cast<int>(schema::BlockReasonValue::kFutex) == static_cast<int>(model::BlockReason::kFutex) &&
              static_cast<int>(schema::BlockReasonValue::kPipe) == static_cast<int>(model::BlockReason::kPipe) &&
              static_cast<int>(schema::BlockReasonValue::kOther) == static_cast<int>(model::BlockReason::kOther));

StatusOr<CompiledSchema> CompiledSchema::Compile(const schema::Schema& schema, const trace::TraceMeta& meta) {
  CompiledSchema cs;
  cs.schema_ = schema;
  cs.syscall_names_ = meta.syscall_names;
  cs.app_probes_ = meta.app_probes;
  const schema::Schema& schema_ = cs.schema_;
  for (const schema::EventDef& d : schema_.events) {
    if (d.bindings.size() > kMaxBindings)
      return ErrStatus("schema %s: event '%s' has %zu bindings; at most %zu are supported", schema_.path.c_str(),
                       d.name.c_str(), d.bindings.size(), kMaxBindings);
  }
  if (schema_.events.size() >= UINT16_MAX) return ErrStatus("schema has too many events");
  if (cs.syscall_names_.empty()) cs.syscall_names_ = schema::CompiledSyscallNames();
  for (const trace::EventDesc& e : trace::AllEvents())
    if (e.id < cs.payload_sizes_.size()) cs.payload_sizes_[e.id] = e.payload_size;
  cs.ClassifySyscalls();
  cs.sync_attr_.assign(schema_.attributes.size(), false);
  cs.def_in_sync_.assign(schema_.events.size(), 0);
  for (const schema::SyncStmt& s : schema_.syncs) {
    cs.sync_attr_[s.attr] = true;
    cs.def_in_sync_[s.source] = cs.def_in_sync_[s.dest] = 1;
  }
  cs.cascade_.assign(schema_.attributes.size(), {});
  for (const schema::CascadeStmt& c : schema_.cascades)
    for (uint16_t t : c.targets)
      if (std::find(cs.cascade_[c.trigger].begin(), cs.cascade_[c.trigger].end(), t) == cs.cascade_[c.trigger].end())
        cs.cascade_[c.trigger].push_back(t);
  cs.BuildDispatch();
  return cs;
}

void CompiledSchema::ClassifySyscalls() {
  sys_dir_.assign(syscall_names_.size(), 0);
  sys_close_.assign(syscall_names_.size(), 0);
  sys_reason_.assign(syscall_names_.size(), 0);
  for (size_t nr = 0; nr < syscall_names_.size(); nr++) {
    const std::string& n = syscall_names_[nr];
    if (n == "read" || n == "readv" || n == "recvfrom" || n == "recvmsg" || n == "recvmmsg" || n == "pread64")
      sys_dir_[nr] = kDirIn;
    if (n == "write" || n == "writev" || n == "sendto" || n == "sendmsg" || n == "sendmmsg" || n == "sendfile" ||
        n == "pwrite64")
      sys_dir_[nr] = kDirOut;
    if (n == "close") sys_close_[nr] = kConnClose;
    if (n == "shutdown") sys_close_[nr] = kConnShutdown;
    if (n == "accept" || n == "accept4") sys_close_[nr] = kConnAccept;
    if (n == "connect") sys_close_[nr] = kConnConnect;
    if (n == "futex") futex_nr_ = static_cast<int32_t>(nr);
    using model::BlockReason;
    BlockReason r = BlockReason::kOther;
    if (n == "futex" || n == "futex_waitv") r = BlockReason::kFutex;
    if (n == "fsync" || n == "fdatasync" || n == "sync_file_range" || n == "io_getevents" ||
        n == "io_uring_enter")
      r = BlockReason::kDisk;
    if (n == "epoll_wait" || n == "epoll_pwait" || n == "epoll_pwait2" || n == "poll" || n == "ppoll" ||
        n == "select" || n == "pselect6" || n == "accept" || n == "accept4" || n == "connect")
      r = BlockReason::kNetwork;
    sys_reason_[nr] = static_cast<uint8_t>(r);
  }
}

void CompiledSchema::BuildDispatch() {
  const size_t nsys = std::max<size_t>(syscall_names_.size(), JDW_MAX_SYSCALLS);
  sys_enter_.assign(nsys, {});
  sys_exit_.assign(nsys, {});
  usdt_.assign(app_probes_.size(), {});
  for (size_t i = 0; i < schema_.events.size(); i++) {
    const schema::EventDef& d = schema_.events[i];
    const auto idx = static_cast<uint16_t>(i);
    switch (d.kind) {
      case schema::EventKind::kSwitchOut:
        switch_out_.push_back(idx);
        break;
      case schema::EventKind::kSwitchIn:
        switch_in_.push_back(idx);
        break;
      case schema::EventKind::kIoStart:
        io_start_.push_back(idx);
        break;
      case schema::EventKind::kUsdt: {
        bool found = false;
        for (size_t p = 0; p < app_probes_.size(); p++) {
          if (app_probes_[p] == d.usdt_probe) {
            usdt_[p].push_back(idx);
            found = true;
          }
        }
        if (!found && !app_probes_.empty())
          warnings_.push_back("schema event '" + d.name + "': probe usdt " + d.usdt_probe +
                                    " is not in this trace");
        break;
      }
      case schema::EventKind::kRecord:
        if (d.record_type == JDW_EVENT_SYS_ENTER || d.record_type == JDW_EVENT_SYS_EXIT) {
          auto& table = d.record_type == JDW_EVENT_SYS_ENTER ? sys_enter_ : sys_exit_;
          if (d.syscalls.empty()) {
            for (auto& v : table) v.push_back(idx);
          } else {
            for (const std::string& name : d.syscalls) {
              bool found = false;
              for (size_t nr = 0; nr < syscall_names_.size(); nr++) {
                if (syscall_names_[nr] == name) {
                  table[nr].push_back(idx);
                  found = true;
                }
              }
              if (!found)
                warnings_.push_back("schema event '" + d.name + "': syscall " + name +
                                          " is not in this trace's syscall table");
            }
          }
        } else if (d.record_type < JDW_EVENT_MAX) {
          by_type_[d.record_type].push_back(idx);
        }
        break;
    }
  }
  if (app_probes_.empty()) {
    std::string names;
    for (const schema::EventDef& d : schema_.events) {
      if (d.kind != schema::EventKind::kUsdt) continue;
      names += names.empty() ? "" : ", ";
      names += d.name;
    }
    if (!names.empty())
      warnings_.push_back("the trace has no USDT probes (record with the app group and the server's probes); "
                                "schema events that need them: " + names);
  }
  // Several names may map to one nr in a table; keep each def once, in order.
  for (auto* table : {&sys_enter_, &sys_exit_}) {
    for (auto& v : *table) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
  }
}

uint8_t CompiledSchema::SysBlockReason(uint32_t nr) const {
  return nr < sys_reason_.size() ? sys_reason_[nr] : static_cast<uint8_t>(model::BlockReason::kOther);
}

}  // namespace jackdaw::join
