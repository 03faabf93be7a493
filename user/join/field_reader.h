// The schema's fields of a record (user/schemas/LANGUAGE.md): payload fields
// at the offsets the schema compiled from trace/event_table, header fields,
// and the fields the join derives from its state rather than the record
// (the socket an event is about, whether a socket is new to the thread or
// a read starts a new message, the wakee's syscall, why a thread blocked,
// the matching sys_enter's object for a sys_exit that lacks it). Evaluates
// `where` predicates.
//
// Reads only: the trackers it consults are updated by the extractor, which
// calls Read() before it applies the record's own effect on them (a
// sys_exit still sees its enter's syscall on the thread).
#pragma once

#include <cstdint>

#include "join/compiled_schema.h"
#include "join/record_context.h"
#include "join/socket_tracker.h"
#include "join/thread_tracker.h"
#include "schema/schema.h"

namespace jackdaw::join {

class FieldReader {
 public:
  FieldReader(const CompiledSchema& cs, const SocketTracker& socks, const ThreadTracker& threads)
      : cs_(cs), socks_(socks), threads_(threads) {}

  // The field's value; *ok = false if the record has no such field (too
  // short, unknown size). Absent derived values read as 0.
  uint64_t Read(const schema::FieldRef& f, const RecordContext& c, bool* ok) const;
  // All of the definition's `where` predicates hold.
  bool Matches(const schema::EventDef& def, const RecordContext& c) const;
  // The socket the event is about (0: none); computed once per record.
  uint64_t SockOf(const RecordContext& c) const;
  // model::BlockReason of a thread going to sleep now, from the object or
  // the syscall it sleeps in.
  uint8_t BlockReasonOf(const Thread* t) const;

 private:
  uint64_t ComputeSock(const RecordContext& c) const;
  // Read()'s body, inlined into Matches()' loop over a definition's
  // predicates (a call per predicate was a tenth of the join's instructions).
  [[gnu::always_inline]] inline uint64_t ReadField(const schema::FieldRef& f, const RecordContext& c,
                                                   bool* ok) const;
  uint64_t ReadPayload(const RecordContext& c, uint16_t offset, uint8_t size, bool is_signed, bool* ok) const;

  const CompiledSchema& cs_;
  const SocketTracker& socks_;
  const ThreadTracker& threads_;
};

}  // namespace jackdaw::join
