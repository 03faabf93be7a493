#include "join/field_reader.h"

#include <cstring>

#include "join/socket_tracker.h"
#include "request/request.h"

namespace jackdaw::join {

uint64_t FieldReader::SockOf(const RecordContext& c) const {
  if (!c.sock_done) {
    c.sock = ComputeSock(c);
    c.sock_done = true;
  }
  return c.sock;
}

uint64_t FieldReader::ComputeSock(const RecordContext& c) const {
  const uint16_t type = c.rec->type;
  if (c.kind != schema::EventKind::kRecord) return 0;
  switch (type) {
    case JDW_EVENT_SYS_ENTER: {
      const auto* e = reinterpret_cast<const jdw_sys_enter*>(c.payload);
      return e->obj_kind == JDW_OBJ_SOCKET ? e->obj : 0;
    }
    case JDW_EVENT_SYS_EXIT: {
      const auto* e = reinterpret_cast<const jdw_sys_exit*>(c.payload);
      if (e->obj) return e->obj_kind == JDW_OBJ_SOCKET ? e->obj : 0;
      const Thread* t = c.thread;
      if (!t || t->sys_nr != e->nr || t->sys_obj_kind != JDW_OBJ_SOCKET) return 0;
      // The socket of the matching enter, unless its memory went to another
      // connection meanwhile: a close frees the socket before it returns,
      // and the next accept may take the same address first.
      if (socks_.ConnectedSince(t->sys_obj) > t->sys_ts) return 0;
      return t->sys_obj;
    }
    case JDW_EVENT_SOCK_INFO:
      return reinterpret_cast<const jdw_sock_info*>(c.payload)->sk;
    case JDW_EVENT_NET_XMIT:
    case JDW_EVENT_NET_RECV: {
      const auto* p = reinterpret_cast<const jdw_net_packet*>(c.payload);
      if (type == JDW_EVENT_NET_XMIT && p->sk) return p->sk;
      return socks_.SocketOf(SocketTracker::LocalConnKey(type, *p));
    }
    default:
      return 0;
  }
}

uint64_t FieldReader::ReadPayload(const RecordContext& c, uint16_t offset, uint8_t size, bool is_signed,
                                  bool* ok) const {
  if (size_t{offset} + size > c.payload_len) {
    *ok = false;
    return 0;
  }
  const uint8_t* p = c.payload + offset;
  switch (size) {
    case 1: {
      uint8_t v = *p;
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(v))) : v;
    }
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(v))) : v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))) : v;
    }
    case 8: {
      uint64_t v;
      memcpy(&v, p, 8);
      return v;
    }
    default:
      *ok = false;
      return 0;
  }
}

uint64_t FieldReader::Read(const schema::FieldRef& f, const RecordContext& c, bool* ok) const {
  return ReadField(f, c, ok);
}

inline uint64_t FieldReader::ReadField(const schema::FieldRef& f, const RecordContext& c, bool* ok) const {
  using schema::FieldSource;
  switch (f.source) {
    case FieldSource::kPayload:
      return ReadPayload(c, f.offset, f.size, f.is_signed, ok);
    case FieldSource::kHeaderTid:
      return c.tid;
    case FieldSource::kHeaderTgid:
      return c.tgid;
    case FieldSource::kHeaderCpu:
      return c.rec->cpu;
    case FieldSource::kHeaderCtx:
      return c.ctx >= 0 ? static_cast<uint64_t>(c.ctx) : c.rec->ctx;
    case FieldSource::kUsdtArg: {
      const auto* u = reinterpret_cast<const jdw_usdt*>(c.payload);
      if (f.index >= u->nargs || f.index >= JDW_USDT_MAX_ARGS) return 0;
      return u->args[f.index];
    }
    case FieldSource::kSock:
      return SockOf(c);
    case FieldSource::kExitObj:
    case FieldSource::kExitObjKind:
    case FieldSource::kExitFd:
    case FieldSource::kEnterArg: {
      const auto* e = reinterpret_cast<const jdw_sys_exit*>(c.payload);
      const Thread* t = c.thread;
      const bool paired = t && t->sys_nr == e->nr;
      if (f.source == FieldSource::kEnterArg) return paired ? t->sys_arg : 0;
      if (e->obj) {
        if (f.source == FieldSource::kExitObj) return e->obj;
        if (f.source == FieldSource::kExitObjKind) return e->obj_kind;
        return static_cast<uint64_t>(static_cast<int64_t>(e->fd));
      }
      if (!paired) return f.source == FieldSource::kExitFd ? static_cast<uint64_t>(int64_t{-1}) : 0;
      if (f.source == FieldSource::kExitObj) return t->sys_obj;
      if (f.source == FieldSource::kExitObjKind) return t->sys_obj_kind;
      return static_cast<uint64_t>(static_cast<int64_t>(t->sys_fd));
    }
    case FieldSource::kInSyscall:
      return static_cast<uint64_t>(static_cast<int64_t>(c.in_syscall));
    case FieldSource::kAfterBlock:
      return c.after_block ? 1 : 0;
    case FieldSource::kSockUsed:
      return c.thread && c.thread->sock_used ? 1 : 0;
    case FieldSource::kConnOpen:
      return c.thread && c.thread->conn_open ? 1 : 0;
    case FieldSource::kNewSock: {
      const uint64_t sk = SockOf(c);
      if (!sk || !c.thread) return 0;
      if (c.thread->last_sock != sk) return 1;
      // The same struct sock address may be a new connection since the
      // thread last used it (the kernel reuses a closed socket's memory).
      return socks_.ConnectedSince(sk) > c.thread->last_sock_ts ? 1 : 0;
    }
    case FieldSource::kNewMsg: {
      const auto* e = reinterpret_cast<const jdw_sys_enter*>(c.payload);
      if (e->obj_kind != JDW_OBJ_SOCKET || !e->obj || cs_.SysDirection(e->nr) != CompiledSchema::kDirIn)
        return 0;
      return socks_.LastDirection(e->obj) == CompiledSchema::kDirOut ? 1 : 0;
    }
    case FieldSource::kMsg:
      return c.msg;
    case FieldSource::kMsgStart:
      return c.msg_start ? 1 : 0;
    case FieldSource::kWakeeSyscall:
    case FieldSource::kWakeeObj:
    case FieldSource::kWakeeArg: {
      const auto* w = reinterpret_cast<const jdw_sched_wakeup*>(c.payload);
      const Thread* wt = w->wakee_tid ? threads_.Find(w->wakee_tid) : nullptr;
      if (f.source == FieldSource::kWakeeSyscall)
        return static_cast<uint64_t>(static_cast<int64_t>(wt ? wt->sys_nr : -1));
      if (!wt || wt->sys_nr < 0) return 0;
      return f.source == FieldSource::kWakeeObj ? wt->sys_obj : wt->sys_arg;
    }
    case FieldSource::kBlockReason: {
      if (!c.thread || !c.after_block) return 0;  // after_block: blocked (switch_out) / slept (switch_in)
      return c.kind == schema::EventKind::kSwitchOut ? BlockReasonOf(c.thread) : c.thread->block_reason;
    }
    case FieldSource::kBlocked: {
      const auto* sw = reinterpret_cast<const jdw_sched_switch*>(c.payload);
      return sw->prev_state != 0 ? 1 : 0;
    }
  }
  return 0;
}

namespace {

// One comparison for signed and unsigned fields alike.
template <typename T>
bool Compare(schema::CmpOp op, T a, T b) {
  switch (op) {
    case schema::CmpOp::kEq: return a == b;
    case schema::CmpOp::kNe: return a != b;
    case schema::CmpOp::kLt: return a < b;
    case schema::CmpOp::kLe: return a <= b;
    case schema::CmpOp::kGt: return a > b;
    default: return a >= b;
  }
}

}  // namespace

bool FieldReader::Matches(const schema::EventDef& def, const RecordContext& c) const {
  for (const schema::Predicate& p : def.where) {
    bool ok = true;
    uint64_t v = ReadField(p.field, c, &ok);
    if (!ok) return false;
    if (p.mask) v &= p.mask;
    const bool r = p.field.is_signed
                       ? Compare(p.op, static_cast<int64_t>(v), p.value)
                       : Compare(p.op, v, static_cast<uint64_t>(p.value));
    if (!r) return false;
  }
  return true;
}

uint8_t FieldReader::BlockReasonOf(const Thread* t) const {
  using model::BlockReason;
  if (t->sys_nr < 0) return static_cast<uint8_t>(BlockReason::kOther);
  switch (t->sys_obj_kind) {
    case JDW_OBJ_FILE:
      return static_cast<uint8_t>(BlockReason::kDisk);
    case JDW_OBJ_SOCKET:
    case JDW_OBJ_EPOLL:  // servers wait in epoll for sockets
      return static_cast<uint8_t>(BlockReason::kNetwork);
    case JDW_OBJ_PIPE:
      return static_cast<uint8_t>(BlockReason::kPipe);
    case JDW_OBJ_FUTEX:
      return static_cast<uint8_t>(BlockReason::kFutex);
    default:
      break;
  }
  const auto nr = static_cast<size_t>(t->sys_nr);
  return cs_.SysBlockReason(nr);
}

}  // namespace jackdaw::join
