#include "join/field_reader.h"

#include <cstring>

#include "join/endpoint_format.h"
#include "join/socket_tracker.h"
#include "request/request.h"

namespace jackdaw::join {

CompiledPredicate CompiledPredicate::Of(const schema::Predicate& p) {
  constexpr uint64_t kMax = ~uint64_t{0};
  CompiledPredicate c;
  c.field = FieldSpec::Of(p.field);
  if (p.mask) c.mask = p.mask;
  c.flip = p.field.is_signed ? uint64_t{1} << 63 : 0;
  const uint64_t v = static_cast<uint64_t>(p.value) ^ c.flip;
  const auto never = [&] {
    c.lo = 0;
    c.span = kMax;
    c.negate = true;
  };
  switch (p.op) {
    case schema::CmpOp::kEq:
      c.lo = v;
      break;
    case schema::CmpOp::kNe:
      c.lo = v;
      c.negate = true;
      break;
    case schema::CmpOp::kLt:
      if (v == 0) {
        never();
      } else {
        c.span = v - 1;
      }
      break;
    case schema::CmpOp::kLe:
      c.span = v;
      break;
    case schema::CmpOp::kGt:
      if (v == kMax) {
        never();
      } else {
        c.lo = v + 1;
        c.span = kMax - c.lo;
      }
      break;
    default:  // kGe
      c.lo = v;
      c.span = kMax - v;
      break;
  }
  return c;
}

FieldReader::FieldReader(const CompiledSchema& cs, const SocketTracker& socks, const ThreadTracker& threads)
    : cs_(cs), socks_(socks), threads_(threads) {
  for (const schema::EventDef& def : cs_.schema().events) {
    pred_at_.push_back(static_cast<uint32_t>(preds_.size()));
    for (const schema::Predicate& p : def.where) preds_.push_back(CompiledPredicate::Of(p));
    bind_at_.push_back(static_cast<uint32_t>(binds_.size()));
    for (const schema::AttrBinding& b : def.bindings) binds_.push_back(FieldSpec::Of(b.value));
  }
  pred_at_.push_back(static_cast<uint32_t>(preds_.size()));
  bind_at_.push_back(static_cast<uint32_t>(binds_.size()));
}

uint64_t FieldReader::ComputeSock(const RecordContext& c) const {
  const uint16_t type = c.rec->type;
  if (c.kind != schema::EventKind::kRecord) return 0;
  switch (type) {
    case JDW_EVENT_SYS_ENTER: {
      const auto* e = reinterpret_cast<const jdw_sys_enter*>(c.payload);
      return e->obj_kind == JDW_OBJ_SOCKET ? DatagramFlow(c.thread, e->obj) : 0;
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
      return DatagramFlow(t, t->sys_obj);
    }
    case JDW_EVENT_SOCK_INFO:
      return reinterpret_cast<const jdw_sock_info*>(c.payload)->sk;
    case JDW_EVENT_NET_XMIT:
    case JDW_EVENT_NET_RECV: {
      const auto* p = reinterpret_cast<const jdw_net_packet*>(c.payload);
      // A datagram sent from an unconnected socket goes with its peer's
      // flow, which its addresses name like a connection's.
      if (type == JDW_EVENT_NET_XMIT && p->sk && p->protocol != kIpProtoUdp) return p->sk;
      if (const uint64_t sk = socks_.SocketOf(SocketTracker::LocalConnKey(type, *p))) return sk;
      return type == JDW_EVENT_NET_XMIT ? p->sk : 0;
    }
    default:
      return 0;
  }
}

int8_t FieldReader::ComputeNewSock(const RecordContext& c) const {
  const uint64_t sk = SockOf(c);
  if (!sk || !c.thread) return 0;
  if (c.thread->last_sock != sk) return 1;
  // The same struct sock address may be a new connection since the
  // thread last used it (the kernel reuses a closed socket's memory).
  return socks_.ConnectedSince(sk) > c.thread->last_sock_ts ? 1 : 0;
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
  return ReadField(FieldSpec::Of(f), c, ok);
}

inline uint64_t FieldReader::ReadField(const FieldSpec& f, const RecordContext& c, bool* ok) const {
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
    case FieldSource::kNewSock:
      if (c.new_sock < 0) c.new_sock = ComputeNewSock(c);
      return static_cast<uint64_t>(c.new_sock);
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
    case FieldSource::kCall:
      return c.call;
    case FieldSource::kCallStart:
      return c.call_start;
    case FieldSource::kPeerCall:
      return c.peer_call;
    case FieldSource::kWakeeSyscall:
    case FieldSource::kWakeeObj:
    case FieldSource::kWakeeArg: {
      const auto* w = reinterpret_cast<const jdw_sched_wakeup*>(c.payload);
      const Thread* wt = c.wakee_known ? c.wakee : w->wakee_tid ? threads_.Find(w->wakee_tid) : nullptr;
      if (f.source == FieldSource::kWakeeSyscall)
        return static_cast<uint64_t>(static_cast<int64_t>(wt ? wt->sys_nr : -1));
      if (!wt || wt->sys_nr < 0) return 0;
      return f.source == FieldSource::kWakeeObj ? wt->sys_obj : wt->sys_arg;
    }
    case FieldSource::kWakeeServesConns:
    case FieldSource::kWakeeHandsBack: {
      const auto* w = reinterpret_cast<const jdw_sched_wakeup*>(c.payload);
      const Thread* wt = c.wakee_known ? c.wakee : w->wakee_tid ? threads_.Find(w->wakee_tid) : nullptr;
      if (!wt) return 0;
      return (f.source == FieldSource::kWakeeServesConns ? wt->serves_conns : wt->hands_back) ? 1 : 0;
    }
    case FieldSource::kBlockReason: {
      if (!c.thread || !c.after_block) return 0;  // after_block: blocked (switch_out) / slept (switch_in)
      if (c.kind != schema::EventKind::kSwitchOut) return c.thread->block_reason;
      if (c.block_reason < 0) c.block_reason = static_cast<int8_t>(BlockReasonOf(c.thread));
      return static_cast<uint64_t>(c.block_reason);
    }
    case FieldSource::kBlocked: {
      const auto* sw = reinterpret_cast<const jdw_sched_switch*>(c.payload);
      return sw->prev_state != 0 ? 1 : 0;
    }
  }
  return 0;
}

bool FieldReader::Matches(const schema::EventDef& def, const RecordContext& c) const {
  for (const schema::Predicate& p : def.where) {
    const CompiledPredicate cp = CompiledPredicate::Of(p);
    if (!Holds(&cp, &cp + 1, c)) return false;
  }
  return true;
}

int FieldReader::FirstMatch(const std::vector<uint16_t>& defs, const RecordContext& c) const {
  for (uint16_t d : defs)
    if (Holds(preds_.data() + pred_at_[d], preds_.data() + pred_at_[d + 1], c)) return d;
  return -1;
}

void FieldReader::ReadBindings(uint16_t def, const RecordContext& c, uint64_t* out) const {
  const FieldSpec* end = binds_.data() + bind_at_[def + 1];
  for (const FieldSpec* b = binds_.data() + bind_at_[def]; b != end; ++b) {
    bool ok = true;
    const uint64_t v = ReadField(*b, c, &ok);
    *out++ = ok ? v : 0;
  }
}

inline bool FieldReader::Holds(const CompiledPredicate* p, const CompiledPredicate* end,
                               const RecordContext& c) const {
  for (; p != end; ++p) {
    bool ok = true;
    const uint64_t v = ReadField(p->field, c, &ok);
    if (!ok || !p->Holds(v)) return false;
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
