#include "schema/catalog.h"
#include "schema/edit_distance.h"

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "jackdaw/abi.h"
#include "trace/syscall_names.h"

namespace jackdaw::schema {
namespace {

FieldSpec Header(const char* name, FieldSource src, Domain domain = Domain::kNumber) {
  FieldSpec f;
  f.name = name;
  f.source = src;
  f.domain = domain;
  return f;
}

FieldSpec Derived(const char* name, FieldSource src, Domain domain = Domain::kNumber,
                  bool is_signed = false) {
  FieldSpec f = Header(name, src, domain);
  f.is_signed = is_signed;
  return f;
}

FieldSpec Payload(const char* name, size_t offset, size_t size, bool is_signed) {
  FieldSpec f;
  f.name = name;
  f.source = FieldSource::kPayload;
  f.offset = static_cast<uint16_t>(offset);
  f.size = static_cast<uint8_t>(size);
  f.is_signed = is_signed;
  if (f.name == "obj_kind") f.domain = Domain::kObjKind;
  return f;
}

void AddCommonHeader(EventTypeSpec* e) {
  e->fields.push_back(Header("tid", FieldSource::kHeaderTid));
  e->fields.push_back(Header("tgid", FieldSource::kHeaderTgid));
  e->fields.push_back(Header("cpu", FieldSource::kHeaderCpu));
  e->fields.push_back(Header("ctx", FieldSource::kHeaderCtx, Domain::kCtx));
}

// Replaces (or appends) a field of `e` by name.
void SetField(EventTypeSpec* e, FieldSpec f) {
  for (FieldSpec& g : e->fields) {
    if (g.name == f.name) {
      g = std::move(f);
      return;
    }
  }
  e->fields.push_back(std::move(f));
}

const FieldSpec* FindIn(const EventTypeSpec& e, std::string_view name) {
  for (const FieldSpec& f : e.fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<EventTypeSpec> BuildEventTypes() {
  std::vector<EventTypeSpec> out;

  // Kernel records: header pseudo-fields, then every scalar payload field of
  // the ABI table ("reserved" padding and arrays are not join material).
#define JDW_CAT_SCALAR(type, fname)                                                        \
  if (std::string_view(#fname) != "reserved")                                              \
    e.fields.push_back(Payload(#fname, offsetof(PayloadT, fname), sizeof(type),            \
                               std::is_signed_v<type>));
#define JDW_CAT_ARRAY(type, fname, n)
#define JDW_CAT_EVENT(NAME, id, group, str, fields, st) \
  {                                                     \
    using PayloadT = struct st;                         \
    EventTypeSpec e;                                    \
    e.name = str;                                       \
    e.record_type = id;                                 \
    AddCommonHeader(&e);                                \
    fields(JDW_CAT_SCALAR, JDW_CAT_ARRAY)               \
    out.push_back(std::move(e));                        \
  }
  JDW_EVENT_TABLE(JDW_CAT_EVENT)
#undef JDW_CAT_EVENT
#undef JDW_CAT_ARRAY
#undef JDW_CAT_SCALAR

  for (EventTypeSpec& e : out) {
    // The syscall the event's thread is inside (meaningful in task context).
    e.fields.push_back(Derived("in_syscall", FieldSource::kInSyscall, Domain::kSyscall, true));
    e.fields.push_back(Derived("sock_used", FieldSource::kSockUsed));
    e.fields.push_back(Derived("conn_open", FieldSource::kConnOpen));
    switch (e.record_type) {
      case JDW_EVENT_SYS_ENTER:
        e.takes_syscalls = true;
        e.fields.push_back(Derived("sock", FieldSource::kSock));
        e.fields.push_back(Derived("new_sock", FieldSource::kNewSock));
        e.fields.push_back(Derived("new_msg", FieldSource::kNewMsg));
        e.fields.push_back(Derived("msg", FieldSource::kMsg));
        e.fields.push_back(Derived("msg_start", FieldSource::kMsgStart));
        e.fields.push_back(Derived("call", FieldSource::kCall));
        e.fields.push_back(Derived("call_start", FieldSource::kCallStart));
        break;
      case JDW_EVENT_SYS_EXIT:
        e.takes_syscalls = true;
        SetField(&e, Derived("obj", FieldSource::kExitObj));
        SetField(&e, Derived("obj_kind", FieldSource::kExitObjKind, Domain::kObjKind));
        SetField(&e, Derived("fd", FieldSource::kExitFd, Domain::kNumber, true));
        e.fields.push_back(Derived("arg", FieldSource::kEnterArg));
        e.fields.push_back(Derived("sock", FieldSource::kSock));
        e.fields.push_back(Derived("new_sock", FieldSource::kNewSock));
        e.fields.push_back(Derived("msg", FieldSource::kMsg));
        e.fields.push_back(Derived("msg_start", FieldSource::kMsgStart));
        e.fields.push_back(Derived("call", FieldSource::kCall));
        e.fields.push_back(Derived("call_start", FieldSource::kCallStart));
        e.fields.push_back(Derived("peer_call", FieldSource::kPeerCall));
        break;
      case JDW_EVENT_SCHED_WAKEUP:
      case JDW_EVENT_SCHED_WAKEUP_NEW:
        e.fields.push_back(Derived("wakee_syscall", FieldSource::kWakeeSyscall, Domain::kSyscall, true));
        e.fields.push_back(Derived("wakee_obj", FieldSource::kWakeeObj));
        e.fields.push_back(Derived("wakee_arg", FieldSource::kWakeeArg));
        e.fields.push_back(Derived("wakee_serves_conns", FieldSource::kWakeeServesConns));
        e.fields.push_back(Derived("wakee_hands_back", FieldSource::kWakeeHandsBack));
        break;
      case JDW_EVENT_SOCK_INFO:
      case JDW_EVENT_NET_XMIT:
      case JDW_EVENT_NET_RECV:
        e.fields.push_back(Derived("sock", FieldSource::kSock));
        if (e.record_type != JDW_EVENT_SOCK_INFO) {
          e.fields.push_back(Derived("msg", FieldSource::kMsg));
          e.fields.push_back(Derived("msg_start", FieldSource::kMsgStart));
          e.fields.push_back(Derived("call", FieldSource::kCall));
        }
        break;
      default:
        break;
    }
  }

  // Synthetic thread events from sched_switch: header tid/tgid become the
  // thread the event is about, so `tid` means the same thing in every event.
  const EventTypeSpec* sw = nullptr;
  const EventTypeSpec* bc = nullptr;
  for (const EventTypeSpec& e : out) {
    if (e.record_type == JDW_EVENT_SCHED_SWITCH) sw = &e;
    if (e.record_type == JDW_EVENT_BLOCK_COMPLETE) bc = &e;
  }
  EventTypeSpec so;
  so.name = "switch_out";
  so.kind = EventKind::kSwitchOut;
  so.record_type = JDW_EVENT_SCHED_SWITCH;
  so.fields = sw->fields;
  {
    FieldSpec tid = *FindIn(*sw, "prev_tid");
    tid.name = "tid";
    SetField(&so, tid);
    FieldSpec tgid = *FindIn(*sw, "prev_tgid");
    tgid.name = "tgid";
    SetField(&so, tgid);
    so.fields.push_back(Derived("blocked", FieldSource::kBlocked));
    so.fields.push_back(Derived("block_reason", FieldSource::kBlockReason, Domain::kBlockReason));
  }
  EventTypeSpec si;
  si.name = "switch_in";
  si.kind = EventKind::kSwitchIn;
  si.record_type = JDW_EVENT_SCHED_SWITCH;
  si.fields = sw->fields;
  {
    FieldSpec tid = *FindIn(*sw, "next_tid");
    tid.name = "tid";
    SetField(&si, tid);
    FieldSpec tgid = *FindIn(*sw, "next_tgid");
    tgid.name = "tgid";
    SetField(&si, tgid);
    si.fields.push_back(Derived("after_block", FieldSource::kAfterBlock));
    si.fields.push_back(Derived("block_reason", FieldSource::kBlockReason, Domain::kBlockReason));
  }
  EventTypeSpec io;
  io.name = "io_start";
  io.kind = EventKind::kIoStart;
  io.record_type = JDW_EVENT_BLOCK_COMPLETE;
  io.fields = bc->fields;
  {
    FieldSpec tid = *FindIn(*bc, "issue_tid");
    tid.name = "tid";
    SetField(&io, tid);
    FieldSpec tgid = *FindIn(*bc, "issue_tgid");
    tgid.name = "tgid";
    SetField(&io, tgid);
  }
  out.push_back(std::move(so));
  out.push_back(std::move(si));
  out.push_back(std::move(io));

  // USDT probes: named "usdt PROVIDER:NAME" in selectors.
  for (EventTypeSpec& e : out) {
    if (e.record_type != JDW_EVENT_USDT) continue;
    e.kind = EventKind::kUsdt;
    for (uint8_t i = 0; i < JDW_USDT_MAX_ARGS; i++) {
      FieldSpec a;
      a.name = "arg" + std::to_string(i);
      a.source = FieldSource::kUsdtArg;
      a.index = i;
      e.fields.push_back(a);
    }
  }
  return out;
}

struct SyscallTable {
  const std::vector<std::string>& names = trace::SyscallNames();
};

struct Constant {
  Domain domain;
  const char* name;
  int64_t value;
};
constexpr Constant kConstants[] = {
    {Domain::kObjKind, "none", JDW_OBJ_NONE},     {Domain::kObjKind, "socket", JDW_OBJ_SOCKET},
    {Domain::kObjKind, "pipe", JDW_OBJ_PIPE},     {Domain::kObjKind, "file", JDW_OBJ_FILE},
    {Domain::kObjKind, "futex", JDW_OBJ_FUTEX},   {Domain::kObjKind, "epoll", JDW_OBJ_EPOLL},
    {Domain::kObjKind, "other_fd", JDW_OBJ_OTHER_FD},
    {Domain::kCtx, "task", JDW_CTX_TASK},         {Domain::kCtx, "softirq", JDW_CTX_SOFTIRQ},
    {Domain::kCtx, "hardirq", JDW_CTX_HARDIRQ},   {Domain::kCtx, "nmi", JDW_CTX_NMI},
    {Domain::kBlockReason, "none", static_cast<int64_t>(BlockReasonValue::kNone)},
    {Domain::kBlockReason, "disk", static_cast<int64_t>(BlockReasonValue::kDisk)},
    {Domain::kBlockReason, "network", static_cast<int64_t>(BlockReasonValue::kNetwork)},
    {Domain::kBlockReason, "futex", static_cast<int64_t>(BlockReasonValue::kFutex)},
    {Domain::kBlockReason, "pipe", static_cast<int64_t>(BlockReasonValue::kPipe)},
    {Domain::kBlockReason, "other", static_cast<int64_t>(BlockReasonValue::kOther)},
};

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) prev[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); j++) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({sub, prev[j] + 1, cur[j - 1] + 1});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

const FieldSpec* EventTypeSpec::FindField(std::string_view field) const { return FindIn(*this, field); }

std::string EventTypeSpec::FieldList() const {
  std::string s;
  for (const FieldSpec& f : fields) {
    if (!s.empty()) s += ", ";
    s += f.name;
  }
  return s;
}

const std::vector<EventTypeSpec>& EventTypes() {
  static const std::vector<EventTypeSpec> kTypes = BuildEventTypes();
  return kTypes;
}

const EventTypeSpec* FindEventType(std::string_view name) {
  for (const EventTypeSpec& e : EventTypes())
    if (e.name == name) return &e;
  return nullptr;
}

std::string EventTypeList() {
  std::string s;
  for (const EventTypeSpec& e : EventTypes()) {
    if (!s.empty()) s += ", ";
    s += e.kind == EventKind::kUsdt ? "usdt PROVIDER:NAME" : e.name;
  }
  return s;
}

const std::vector<std::string>& CompiledSyscallNames() {
  static const SyscallTable kTable;
  return kTable.names;
}

int CompiledSyscallNumber(std::string_view name) {
  const auto& names = CompiledSyscallNames();
  for (size_t i = 0; i < names.size(); i++)
    if (!names[i].empty() && names[i] == name) return static_cast<int>(i);
  return -1;
}

bool LookupConstant(Domain domain, std::string_view name, int64_t* value) {
  if (domain == Domain::kSyscall) {
    const int nr = CompiledSyscallNumber(name);
    if (nr < 0) return false;
    *value = nr;
    return true;
  }
  for (const Constant& c : kConstants) {
    if (c.domain == domain && name == c.name) {
      *value = c.value;
      return true;
    }
  }
  return false;
}

std::string ConstantList(Domain domain) {
  if (domain == Domain::kSyscall) return "any x86-64 syscall name";
  std::string s;
  for (const Constant& c : kConstants) {
    if (c.domain != domain) continue;
    if (!s.empty()) s += ", ";
    s += c.name;
  }
  return s.empty() ? "none (use a number)" : s;
}

std::vector<std::string> NearestNames(std::string_view name, const std::vector<std::string>& choices,
                                      size_t n) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& c : choices) {
    if (c.empty()) continue;
    scored.emplace_back(EditDistance(name, c), c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < n; i++) out.push_back(scored[i].second);
  return out;
}

}  // namespace jackdaw::schema
