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
#include <vector>

#include "join/compiled_schema.h"
#include "join/record_context.h"
#include "join/socket_tracker.h"
#include "join/thread_tracker.h"
#include "schema/schema.h"

namespace jackdaw::join {

// What reading a field needs of its schema::FieldRef (not its name): 6
// bytes, so a definition's predicates and bindings sit in a cache line or
// two.
struct FieldSpec {
  schema::FieldSource source = schema::FieldSource::kPayload;
  uint8_t size = 0;
  bool is_signed = false;
  uint8_t index = 0;
  uint16_t offset = 0;
  static FieldSpec Of(const schema::FieldRef& f) { return FieldSpec{f.source, f.size, f.is_signed, f.index, f.offset}; }
};

// A `where` predicate compiled to one unsigned range test: the value read
// (masked) holds iff ((v & mask) ^ flip) - lo <= span, or the opposite when
// `negate`. flip (the sign bit, for signed fields) maps signed order onto
// unsigned order; every comparison operator is a range of that order (!=
// the negation of ==; an operator no value satisfies, such as < 0 unsigned,
// the negation of the full range).
struct CompiledPredicate {
  FieldSpec field;
  bool negate = false;
  uint64_t mask = ~uint64_t{0};
  uint64_t flip = 0;
  uint64_t lo = 0, span = 0;
  static CompiledPredicate Of(const schema::Predicate& p);
  bool Holds(uint64_t v) const { return (((v & mask) ^ flip) - lo <= span) != negate; }
};

class FieldReader {
 public:
  FieldReader(const CompiledSchema& cs, const SocketTracker& socks, const ThreadTracker& threads);

  // The field's value; *ok = false if the record has no such field (too
  // short, unknown size). Absent derived values read as 0.
  uint64_t Read(const schema::FieldRef& f, const RecordContext& c, bool* ok) const;
  // All of the definition's `where` predicates hold (any definition, in the
  // schema or not).
  bool Matches(const schema::EventDef& def, const RecordContext& c) const;
  // The first of `defs` (indices into the schema's events, in order) whose
  // predicates hold, or -1: one call per record, the predicates compiled
  // when the reader was made.
  int FirstMatch(const std::vector<uint16_t>& defs, const RecordContext& c) const;
  // The values of the schema's definition `def`'s bindings, in order, into
  // `out`; 0 where the record has no such field (Read()'s *ok false) or the
  // value is 0: the join skips both alike.
  void ReadBindings(uint16_t def, const RecordContext& c, uint64_t* out) const;
  // The socket the event is about (0: none); computed once per record
  // (inline: asked again by the join, the message rule and the fields).
  uint64_t SockOf(const RecordContext& c) const {
    if (!c.sock_done) {
      c.sock = ComputeSock(c);
      c.sock_done = true;
    }
    return c.sock;
  }
  // model::BlockReason of a thread going to sleep now, from the object or
  // the syscall it sleeps in.
  uint8_t BlockReasonOf(const Thread* t) const;

 private:
  uint64_t ComputeSock(const RecordContext& c) const;
  // A call on an unconnected datagram socket is its peer's flow's (the
  // thread's dgram_peer names it), any other the socket's.
  static uint64_t DatagramFlow(const Thread* t, uint64_t sk) {
    return t && t->dgram_sk == sk && t->dgram_flow ? t->dgram_flow : sk;
  }
  int8_t ComputeNewSock(const RecordContext& c) const;
  // Read()'s body, inlined into Matches()' loop over a definition's
  // predicates (a call per predicate was a tenth of the join's instructions).
  [[gnu::always_inline]] inline bool Holds(const CompiledPredicate* p, const CompiledPredicate* end,
                                           const RecordContext& c) const;
  [[gnu::always_inline]] inline uint64_t ReadField(const FieldSpec& f, const RecordContext& c, bool* ok) const;
  uint64_t ReadPayload(const RecordContext& c, uint16_t offset, uint8_t size, bool is_signed, bool* ok) const;

  const CompiledSchema& cs_;
  const SocketTracker& socks_;
  const ThreadTracker& threads_;
  // The schema's definitions' predicates and bindings, compiled: those of
  // definition d are preds_[pred_at_[d] .. pred_at_[d + 1]) and
  // binds_[bind_at_[d] ..).
  std::vector<CompiledPredicate> preds_;
  std::vector<uint32_t> pred_at_;
  std::vector<FieldSpec> binds_;
  std::vector<uint32_t> bind_at_;
};

}  // namespace jackdaw::join
