// Event schemas (Magpie §3.1): which events join into requests and how.
//
// A schema is a text file parsed at run time (language reference and
// examples: user/schemas/LANGUAGE.md). Parsing resolves every name it can
// without a trace: event types, fields, syscall names, attributes and event
// references, so that a schema that parses is well formed for any trace. USDT
// probe names and syscall numbers are bound to a particular trace later, by
// the join (join::Extractor), from the trace's own tables.
//
// Errors are one line: "FILE:LINE:COL: expected X, found Y" for syntax,
// "FILE:LINE:COL: unknown ... 'name'; valid: ..." for names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "schema/catalog.h"

namespace jackdaw::schema {

// Magpie's binding types.
enum class Binding : uint8_t {
  kBasic,  // join the open valid-interval of (attribute, value); open one if none
  kStart,  // close any open interval, open a new one, join it
  kStop,   // join the open interval, then close it
};
const char* BindingName(Binding b);

enum class CmpOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

// A resolved field of one event type (see catalog.h).
struct FieldRef {
  std::string name;
  FieldSource source = FieldSource::kPayload;
  uint16_t offset = 0;
  uint8_t size = 0;
  bool is_signed = false;
  uint8_t index = 0;
};

// `field [& mask] op value`; compared as signed if the field is signed.
struct Predicate {
  FieldRef field;
  uint64_t mask = 0;  // 0: no mask
  CmpOp op = CmpOp::kEq;
  int64_t value = 0;
};

struct AttrBinding {
  uint16_t attr = 0;  // index into Schema::attributes
  Binding type = Binding::kBasic;
  FieldRef value;
};

struct EventDef {
  std::string name;        // the schema's name for it (seed/sync/wait refer to it)
  std::string type_name;   // catalog event type ("sys_enter", "switch_in", "usdt")
  EventKind kind = EventKind::kRecord;
  uint16_t record_type = 0;  // jdw_event_type the matching records carry
  std::string usdt_probe;    // kUsdt: "provider:name"
  std::vector<std::string> syscalls;  // sys_enter/sys_exit: names; empty = any
  std::vector<Predicate> where;       // all must hold
  std::vector<AttrBinding> bindings;  // applied in order
  bool seed = false;
  bool wait = false;  // WAIT(event): a synthetic Wait follows each occurrence
  int line = 0;
};

// SYNC(source, attribute, destination): a Signal is inserted on the source
// event's thread and a Resume on the destination's, linked by a causal edge,
// when both share `attr`'s value (Magpie §3.5).
struct SyncStmt {
  uint16_t source = 0;  // EventDef index
  uint16_t attr = 0;
  uint16_t dest = 0;
};

// CASCADE(trigger, target...): when a set's last open valid-interval of
// `trigger` closes (STOP, or a START that replaces it), the set's open
// intervals of every `target` attribute close with it. Magpie §3.4 names this
// as the missing piece of its schemas ("the ability to transitively start or
// stop the valid-intervals on other timelines"): a black-box schema needs it
// to end a helper thread's part in a request when the request's connection
// ends, because a pool thread that takes its next task without sleeping
// leaves no event of its own between the two.
struct CascadeStmt {
  uint16_t trigger = 0;          // attribute index
  std::vector<uint16_t> targets;  // attribute indices
};

struct Schema {
  std::string name;  // file stem ("testserver")
  std::string path;
  std::vector<std::string> attributes;  // attribute id -> name, first use order
  std::vector<EventDef> events;         // first match wins, in file order
  std::vector<SyncStmt> syncs;
  std::vector<CascadeStmt> cascades;
  // MESSAGES(attr): the join applies SysProf's message rule on connections
  // (LANGUAGE.md, "Messages and interactions") and the attribute's values are
  // its exchanges (the `msg` field): an exchange's interval closes when the
  // next inbound message begins or the connection ends; connection life is
  // the connection's, not a request's. -1: no message rule.
  int message_attr = -1;
  // CALLS(attr): the attribute whose values are calls (the `call` and
  // `peer_call` fields): a message a process writes on a connection it
  // opened and the answer it reads back; the join closes a call's interval
  // when the next call begins on its connection or the connection closes.
  // -1: calls are not followed (connections a process opened are treated
  // like accepted ones).
  int call_attr = -1;
  // SETUP(n): the first n client-first exchanges of every connection are
  // its set-up, the connection's (the answer to a greeting always is).
  uint32_t setup_exchanges = 0;
  uint64_t timeout_ns = 10'000'000'000;  // GC bound for sets that never finish

  int FindEvent(std::string_view name) const;      // -1 if absent
  int FindAttribute(std::string_view name) const;  // -1 if absent
  bool HasSeed() const;
};

// Parses schema text; `filename` only labels error messages.
StatusOr<Schema> ParseSchema(std::string_view text, std::string_view filename);
StatusOr<Schema> LoadSchemaFile(const std::string& path);
// A schema file's text (bounded in size; regular files only).
StatusOr<std::string> ReadSchemaText(const std::string& path);
// `name_or_path` is a path if it names an existing file or contains '/';
// otherwise NAME.schema is looked up in `search_dirs` in order. The error for
// an unknown name lists the schemas available.
StatusOr<Schema> LoadSchema(const std::string& name_or_path, const std::vector<std::string>& search_dirs);
// Where the CLI looks for schemas by name: $JACKDAW_SCHEMA_PATH (colon
// separated), <directory of argv0>/schemas, then the source tree's
// user/schemas (for binaries run from the build tree).
std::vector<std::string> DefaultSchemaDirs(const std::string& argv0);

}  // namespace jackdaw::schema
