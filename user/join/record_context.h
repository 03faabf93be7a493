// One record as the join evaluates it against the schema: the record, its
// time in ns, the kind of event it stands for (a sched_switch is a
// switch_out of one thread and a switch_in of another; a block completion
// also yields a synthetic io_start), the thread it is about, and what the
// join knows better than the header (a remote wakeup attributed to its
// waker runs in the waker's task context).
#pragma once

#include <cstddef>
#include <cstdint>

#include "jackdaw/abi.h"
#include "join/thread_tracker.h"
#include "schema/schema.h"

namespace jackdaw::join {

struct RecordContext {
  const jdw_record_header* rec;
  const uint8_t* payload;
  size_t payload_len;
  uint64_t ts;  // mono ns
  schema::EventKind kind;
  Thread* thread;  // the thread the event is about (nullptr in irq context / tid 0)
  uint32_t tid, tgid;
  bool irq;
  bool after_block;
  int32_t in_syscall;
  // FieldReader::SockOf() result, computed at most once per record.
  mutable bool sock_done = false;
  mutable uint64_t sock = 0;
  // Derived fields several definitions may test (new_sock; a switch-out's
  // block_reason), computed at most once per record: -1 until then.
  mutable int8_t new_sock = -1;
  mutable int8_t block_reason = -1;
  // `ctx` as the schema sees it, where the join knows better than the
  // header (a remote wakeup attributed to its waker): -1 = the header's.
  int16_t ctx = -1;
  // The message rule's verdict (schemas with `messages`): the exchange key,
  // 0 for the connection's events; whether this event begins the exchange.
  uint64_t msg = 0;
  bool msg_start = false;
  // The call rule's verdict on a connection the process opened
  // (call_tracker.h): the call's key, whether this event begins it
  // (kCallBegins: a write, or the connect that reserves the first call;
  // kCallResumes: the first write of a call reserved at its connect); and
  // on an exchange's start, the traced caller's call that sent its bytes.
  static constexpr uint8_t kCallBegins = 1, kCallResumes = 2;
  uint64_t call = 0;
  uint8_t call_start = 0;
  uint64_t peer_call = 0;
  // The connection's event (its resources went to the connection): its
  // bindings still start and stop intervals, but it joins no set.
  bool conn_owned = false;
  // A wakeup's wakee, where the join has looked it up already (the wakee_*
  // fields read it instead of looking it up again): wakee_known.
  bool wakee_known = false;
  const Thread* wakee = nullptr;
};

}  // namespace jackdaw::join
