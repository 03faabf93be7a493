#include "schema/schema.h"

#include "schema/lexer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace jackdaw::schema {
namespace {

// Far above any real schema (the shipped ones are a few KB), far below
// what would exhaust memory.
constexpr off_t kMaxSchemaBytes = 64 << 20;

std::string JoinNames(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) {
    if (!s.empty()) s += ", ";
    s += x;
  }
  return s;
}

// Recursive-descent parser over the token stream (grammar in LANGUAGE.md).
// Names are resolved as they are parsed, except references to events defined
// later in the file (seed/sync/wait), which are resolved at the end.
class Parser {
 public:
  Parser(std::string_view text, std::string_view filename) : lex_(text), file_(filename) {}

  StatusOr<Schema> Parse() {
    RETURN_IF_ERROR(Advance());
    RETURN_IF_ERROR(ParseStatements());
    RETURN_IF_ERROR(ResolveRefs());
    return std::move(schema_);
  }

 private:
  Status ParseStatements() {
    while (tok_.kind != Tok::kEnd) {
      if (tok_.kind != Tok::kIdent)
        return Expected("a statement (event, seed, sync, wait, cascade, messages, calls, setup, include, timeout)");
      if (tok_.text == "event") {
        RETURN_IF_ERROR(ParseEvent());
      } else if (tok_.text == "seed") {
        RETURN_IF_ERROR(ParseSeed());
      } else if (tok_.text == "sync") {
        RETURN_IF_ERROR(ParseSync());
      } else if (tok_.text == "wait") {
        RETURN_IF_ERROR(ParseWait());
      } else if (tok_.text == "cascade") {
        RETURN_IF_ERROR(ParseCascade());
      } else if (tok_.text == "timeout") {
        RETURN_IF_ERROR(ParseTimeout());
      } else if (tok_.text == "include") {
        RETURN_IF_ERROR(ParseInclude());
      } else if (tok_.text == "setup") {
        RETURN_IF_ERROR(ParseSetup());
      } else if (tok_.text == "messages") {
        RETURN_IF_ERROR(Advance());
        if (!messages_.text.empty()) return At(tok_, "messages: given twice (one message attribute per schema)");
        RETURN_IF_ERROR(ExpectIdent("the attribute whose values are message exchanges (messages Msg)", &messages_));
      } else if (tok_.text == "calls") {
        RETURN_IF_ERROR(Advance());
        if (!calls_.text.empty()) return At(tok_, "calls: given twice (one call attribute per schema)");
        RETURN_IF_ERROR(ExpectIdent("the attribute whose values are calls on connections a process opened (calls Call)", &calls_));
      } else {
        return Expected("a statement (event, seed, sync, wait, cascade, messages, calls, setup, include, timeout)");
      }
    }
    return Status::Ok();
  }

  struct EventRef {
    Token at;
    std::string name;
  };
  struct PendingSync {
    EventRef source, dest;
    Token attr_at;
    std::string attr;
  };
  // Attributes are resolved at the end: cascade may precede the events that
  // bind them.
  struct PendingCascade {
    std::vector<Token> attrs;  // trigger first
  };
  Token messages_;  // `messages ATTR`, resolved at the end
  Token calls_;     // `calls ATTR`: needs `messages`
  Token setup_;     // `setup N`: needs `messages`

  Status Advance() {
    Token bad;
    if (!lex_.Next(&tok_, &bad)) return At(bad, "unexpected character " + Describe(bad));
    return Status::Ok();
  }
  Status At(const Token& t, const std::string& msg) const {
    return Status::Error(std::string(file_) + ":" + std::to_string(t.line) + ":" + std::to_string(t.col) +
                         ": " + msg);
  }
  Status Expected(const std::string& what) const { return At(tok_, "expected " + what + ", found " + Describe(tok_)); }
  bool IsPunct(const char* p) const { return tok_.kind == Tok::kPunct && tok_.text == p; }
  bool IsWord(const char* w) const { return tok_.kind == Tok::kIdent && tok_.text == w; }
  Status ExpectPunct(const char* p) {
    if (!IsPunct(p)) return Expected(std::string("'") + p + "'");
    return Advance();
  }
  Status ExpectIdent(const std::string& what, Token* out) {
    if (tok_.kind != Tok::kIdent) return Expected(what);
    *out = tok_;
    return Advance();
  }
  static bool IsKeyword(std::string_view s) {
    return s == "event" || s == "seed" || s == "sync" || s == "wait" || s == "cascade" || s == "timeout" ||
           s == "messages" || s == "calls" || s == "setup" || s == "include" ||
           s == "where" ||
           s == "and" || s == "start" || s == "stop" || s == "basic" || s == "usdt";
  }

  // Attributes and events are indexed by uint16_t in the schema's
  // statements; names are looked up through hash maps so that a schema of
  // the maximum size parses in linear time.
  static constexpr size_t kMaxNames = 65535;

  int FindEventIndex(const std::string& name) const {
    auto it = event_index_.find(name);
    return it == event_index_.end() ? -1 : it->second;
  }
  int FindAttributeIndex(const std::string& name) const {
    auto it = attr_index_.find(name);
    return it == attr_index_.end() ? -1 : it->second;
  }

  StatusOr<uint16_t> InternAttribute(const Token& at, const std::string& name) {
    const int i = FindAttributeIndex(name);
    if (i >= 0) return static_cast<uint16_t>(i);
    if (schema_.attributes.size() >= kMaxNames)
      return At(at, "too many attributes: a schema may bind at most " + std::to_string(kMaxNames));
    schema_.attributes.push_back(name);
    attr_index_.emplace(name, static_cast<int>(schema_.attributes.size() - 1));
    return static_cast<uint16_t>(schema_.attributes.size() - 1);
  }

  // event NAME = SELECTOR [where COND {and COND}] { BINDING* }
  Status ParseEvent() {
    const Token event_kw = tok_;
    RETURN_IF_ERROR(Advance());
    Token name;
    RETURN_IF_ERROR(ExpectIdent("an event name", &name));
    if (IsKeyword(name.text)) return At(name, "'" + name.text + "' is a keyword, not an event name");
    if (FindEventIndex(name.text) >= 0)
      return At(name, "event '" + name.text + "' is already defined");
    if (schema_.events.size() >= kMaxNames)
      return At(name, "too many events: a schema may define at most " + std::to_string(kMaxNames));
    RETURN_IF_ERROR(ExpectPunct("="));

    EventDef def;
    def.name = name.text;
    def.line = event_kw.line;
    Token type_tok;
    RETURN_IF_ERROR(ExpectIdent("an event type (" + EventTypeList() + ")", &type_tok));
    const EventTypeSpec* type = FindEventType(type_tok.text);
    if (!type) {
      std::vector<std::string> names;
      for (const EventTypeSpec& e : EventTypes()) names.push_back(e.name);
      std::string hint;
      auto near = NearestNames(type_tok.text, names, 1);
      if (!near.empty()) hint = " (did you mean '" + near[0] + "'?)";
      return At(type_tok, "unknown event type '" + type_tok.text + "'" + hint + "; valid: " + EventTypeList());
    }
    def.type_name = type->name;
    def.kind = type->kind;
    def.record_type = type->record_type;
    if (type->kind == EventKind::kUsdt) {
      Token provider, probe;
      RETURN_IF_ERROR(ExpectIdent("a USDT provider (usdt PROVIDER:NAME)", &provider));
      RETURN_IF_ERROR(ExpectPunct(":"));
      RETURN_IF_ERROR(ExpectIdent("a USDT probe name (usdt PROVIDER:NAME)", &probe));
      def.usdt_probe = provider.text + ":" + probe.text;
    } else if (type->takes_syscalls && tok_.kind == Tok::kIdent && !IsWord("where")) {
      // sys_enter read|recvfrom|...
      for (;;) {
        Token sc;
        RETURN_IF_ERROR(ExpectIdent("a syscall name", &sc));
        if (CompiledSyscallNumber(sc.text) < 0) {
          auto near = NearestNames(sc.text, CompiledSyscallNames(), 3);
          return At(sc, "unknown syscall '" + sc.text + "' (did you mean " + JoinNames(near) +
                            "?); valid: the x86-64 syscall names of <asm/unistd_64.h>");
        }
        def.syscalls.push_back(sc.text);
        if (!IsPunct("|")) break;
        RETURN_IF_ERROR(Advance());
      }
    }

    if (IsWord("where")) {
      RETURN_IF_ERROR(Advance());
      for (;;) {
        Predicate p;
        RETURN_IF_ERROR(ParsePredicate(*type, def, &p));
        def.where.push_back(std::move(p));
        if (!IsWord("and")) break;
        RETURN_IF_ERROR(Advance());
      }
    }

    RETURN_IF_ERROR(ExpectPunct("{"));
    while (!IsPunct("}")) {
      if (tok_.kind == Tok::kEnd) return Expected("'}' closing event '" + def.name + "'");
      AttrBinding b;
      if (IsWord("basic")) {
        b.type = Binding::kBasic;
      } else if (IsWord("start")) {
        b.type = Binding::kStart;
      } else if (IsWord("stop")) {
        b.type = Binding::kStop;
      } else {
        return Expected("a binding (basic, start or stop) or '}'");
      }
      RETURN_IF_ERROR(Advance());
      Token attr;
      RETURN_IF_ERROR(ExpectIdent("an attribute name", &attr));
      if (IsKeyword(attr.text)) return At(attr, "'" + attr.text + "' is a keyword, not an attribute name");
      RETURN_IF_ERROR(ExpectPunct("="));
      Token field;
      RETURN_IF_ERROR(ExpectIdent("a field of " + def.type_name, &field));
      RETURN_IF_ERROR(ResolveField(*type, def, field, &b.value));
      ASSIGN_OR_RETURN(b.attr, InternAttribute(attr, attr.text));
      def.bindings.push_back(std::move(b));
    }
    RETURN_IF_ERROR(Advance());  // '}'
    event_index_.emplace(def.name, static_cast<int>(schema_.events.size()));
    schema_.events.push_back(std::move(def));
    return Status::Ok();
  }

  Status ResolveField(const EventTypeSpec& type, const EventDef& def, const Token& field, FieldRef* out) {
    const FieldSpec* f = type.FindField(field.text);
    if (!f) {
      std::vector<std::string> names;
      for (const FieldSpec& g : type.fields) names.push_back(g.name);
      auto near = NearestNames(field.text, names, 1);
      std::string hint = near.empty() ? "" : " (did you mean '" + near[0] + "'?)";
      return At(field, "unknown field '" + field.text + "' of " + def.type_name + hint + "; valid: " +
                           type.FieldList());
    }
    out->name = f->name;
    out->source = f->source;
    out->offset = f->offset;
    out->size = f->size;
    out->is_signed = f->is_signed;
    out->index = f->index;
    return Status::Ok();
  }

  // FIELD [& MASK] OP VALUE
  Status ParsePredicate(const EventTypeSpec& type, const EventDef& def, Predicate* p) {
    Token field;
    RETURN_IF_ERROR(ExpectIdent("a field of " + def.type_name, &field));
    RETURN_IF_ERROR(ResolveField(type, def, field, &p->field));
    const Domain domain = type.FindField(field.text)->domain;
    if (IsPunct("&")) {
      RETURN_IF_ERROR(Advance());
      int64_t mask;
      RETURN_IF_ERROR(ParseNumber(&mask));
      p->mask = static_cast<uint64_t>(mask);
    }
    static const struct {
      const char* text;
      CmpOp op;
    } kOps[] = {{"==", CmpOp::kEq}, {"!=", CmpOp::kNe}, {"<", CmpOp::kLt},
                {"<=", CmpOp::kLe}, {">", CmpOp::kGt},  {">=", CmpOp::kGe}};
    bool found = false;
    for (const auto& o : kOps) {
      if (IsPunct(o.text)) {
        p->op = o.op;
        found = true;
      }
    }
    if (!found) return Expected("a comparison (==, !=, <, <=, >, >=)");
    RETURN_IF_ERROR(Advance());
    if (tok_.kind == Tok::kIdent) {
      if (!LookupConstant(domain, tok_.text, &p->value)) {
        return At(tok_, "unknown constant '" + tok_.text + "' for field '" + field.text + "'; valid: " +
                            ConstantList(domain));
      }
      return Advance();
    }
    return ParseNumber(&p->value);
  }

  Status ParseNumber(int64_t* out) {
    bool neg = false;
    if (IsPunct("-")) {
      neg = true;
      RETURN_IF_ERROR(Advance());
    }
    if (tok_.kind != Tok::kNumber) return Expected("a number");
    errno = 0;
    const uint64_t v = std::strtoull(tok_.text.c_str(), nullptr, 0);
    if (errno == ERANGE) return At(tok_, "number " + tok_.text + " does not fit in 64 bits");
    *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return Advance();
  }

  Status ParseEventRef(EventRef* ref) {
    Token t;
    RETURN_IF_ERROR(ExpectIdent("an event name", &t));
    ref->at = t;
    ref->name = t.text;
    return Status::Ok();
  }

  // seed NAME {, NAME}
  Status ParseSeed() {
    RETURN_IF_ERROR(Advance());
    for (;;) {
      EventRef r;
      RETURN_IF_ERROR(ParseEventRef(&r));
      seeds_.push_back(r);
      if (!IsPunct(",")) break;
      RETURN_IF_ERROR(Advance());
    }
    return Status::Ok();
  }

  // sync(SOURCE, ATTRIBUTE, DEST)
  Status ParseSync() {
    RETURN_IF_ERROR(Advance());
    RETURN_IF_ERROR(ExpectPunct("("));
    PendingSync s;
    RETURN_IF_ERROR(ParseEventRef(&s.source));
    RETURN_IF_ERROR(ExpectPunct(","));
    Token attr;
    RETURN_IF_ERROR(ExpectIdent("an attribute name", &attr));
    s.attr_at = attr;
    s.attr = attr.text;
    RETURN_IF_ERROR(ExpectPunct(","));
    RETURN_IF_ERROR(ParseEventRef(&s.dest));
    RETURN_IF_ERROR(ExpectPunct(")"));
    syncs_.push_back(std::move(s));
    return Status::Ok();
  }

  // wait(NAME)
  Status ParseWait() {
    RETURN_IF_ERROR(Advance());
    RETURN_IF_ERROR(ExpectPunct("("));
    EventRef r;
    RETURN_IF_ERROR(ParseEventRef(&r));
    RETURN_IF_ERROR(ExpectPunct(")"));
    waits_.push_back(r);
    return Status::Ok();
  }

  // cascade(TRIGGER, TARGET {, TARGET})
  Status ParseCascade() {
    RETURN_IF_ERROR(Advance());
    RETURN_IF_ERROR(ExpectPunct("("));
    PendingCascade c;
    for (;;) {
      Token attr;
      RETURN_IF_ERROR(ExpectIdent("an attribute name", &attr));
      c.attrs.push_back(attr);
      if (!IsPunct(",")) break;
      RETURN_IF_ERROR(Advance());
    }
    if (c.attrs.size() < 2) return Expected("',' and the attributes whose intervals close with " + c.attrs[0].text);
    RETURN_IF_ERROR(ExpectPunct(")"));
    cascades_.push_back(std::move(c));
    return Status::Ok();
  }

  // timeout NUMBER UNIT
  // include NAME: NAME.schema's statements, as if written here. Looked up
  // beside the including file, then where schemas are looked up by name;
  // its events come first (first match wins), so the including file adds
  // statements (setup, timeout) or events for records the included file
  // does not match.
  Status ParseInclude() {
    const Token at = tok_;
    Token name;
    lex_.NextName(&name);  // the look-ahead is `include` itself: the lexer stands after it
    if (name.text.empty()) {
      RETURN_IF_ERROR(Advance());
      return Expected("a schema name (include tcp-threadpool)");
    }
    RETURN_IF_ERROR(Advance());
    if (depth_ >= kMaxIncludeDepth)
      return At(at, "include " + name.text + ": more than " + std::to_string(kMaxIncludeDepth) +
                        " levels deep (do the schemas include each other?)");
    std::vector<std::string> dirs;
    const std::filesystem::path here(file_);
    if (here.has_parent_path()) dirs.push_back(here.parent_path().string());
    for (std::string& d : DefaultSchemaDirs(""))
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(std::move(d));
    std::string path;
    std::error_code ec;
    for (const std::string& d : dirs) {
      const std::filesystem::path p = std::filesystem::path(d) / (name.text + ".schema");
      if (std::filesystem::is_regular_file(p, ec)) {
        path = p.string();
        break;
      }
    }
    if (path.empty()) return At(name, "include: no schema '" + name.text + "' (no " + name.text + ".schema in " + JoinNames(dirs) + ")");
    auto text = ReadSchemaText(path);
    if (!text.ok()) return At(name, "include: " + text.status().message());
    texts_.push_back(std::move(*text));
    files_.push_back(path);
    // Parse it in place: the lexer, file name and look-ahead are this
    // file's again afterwards.
    const Lexer lex = lex_;
    const std::string_view file = file_;
    const Token next = tok_;
    lex_ = Lexer(texts_.back());
    file_ = files_.back();
    depth_++;
    Status st = Advance();
    if (st.ok()) st = ParseStatements();
    depth_--;
    lex_ = lex;
    file_ = file;
    tok_ = next;
    return st;
  }
  static constexpr int kMaxIncludeDepth = 8;

  // setup N: the first N client-first exchanges of every connection open
  // it (a login, a handshake): the connection's, not requests.
  Status ParseSetup() {
    RETURN_IF_ERROR(Advance());
    setup_ = tok_;
    if (tok_.kind != Tok::kNumber) return Expected("a number of exchanges (setup 1)");
    errno = 0;
    const uint64_t n = std::strtoull(tok_.text.c_str(), nullptr, 0);
    if (errno == ERANGE || n > kMaxSetupExchanges)
      return At(tok_, "setup " + tok_.text + ": at most " + std::to_string(kMaxSetupExchanges) + " exchanges");
    schema_.setup_exchanges = static_cast<uint32_t>(n);
    return Advance();
  }
  static constexpr uint64_t kMaxSetupExchanges = 64;

  Status ParseTimeout() {
    RETURN_IF_ERROR(Advance());
    if (tok_.kind != Tok::kNumber) return Expected("a duration (e.g. 10s, 500ms)");
    errno = 0;
    const uint64_t n = std::strtoull(tok_.text.c_str(), nullptr, 0);
    const Token number = tok_;
    if (errno == ERANGE) return At(number, "timeout " + number.text + " does not fit in 64 bits");
    RETURN_IF_ERROR(Advance());
    static const struct {
      const char* unit;
      uint64_t ns;
    } kUnits[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}, {"min", 60000000000}};
    for (const auto& u : kUnits) {
      if (IsWord(u.unit)) {
        if (n == 0) return At(tok_, "timeout must be positive");
        // 2^64 ns is 584 years; beyond that the product would wrap.
        if (n > UINT64_MAX / u.ns)
          return At(number, "timeout " + number.text + u.unit + " is too long (at most " +
                                std::to_string(UINT64_MAX / u.ns) + u.unit + ")");
        schema_.timeout_ns = n * u.ns;
        return Advance();
      }
    }
    return Expected("a time unit (ns, us, ms, s, min)");
  }

  Status UnknownEvent(const EventRef& r) const {
    std::vector<std::string> names;
    for (const EventDef& e : schema_.events) names.push_back(e.name);
    return At(r.at, "unknown event '" + r.name + "'; defined events: " +
                        (names.empty() ? std::string("none") : JoinNames(names)));
  }

  Status ResolveRefs() {
    if (!setup_.text.empty() && messages_.text.empty())
      return At(setup_, "setup counts message exchanges: add `messages ATTR` to the schema");
    if (!messages_.text.empty()) {
      schema_.message_attr = FindAttributeIndex(messages_.text);
      if (schema_.message_attr < 0)
        return At(messages_, "unknown attribute '" + messages_.text + "' in messages; attributes bound by events: " +
                                 (schema_.attributes.empty() ? std::string("none") : JoinNames(schema_.attributes)));
    }
    if (!calls_.text.empty()) {
      if (messages_.text.empty())
        return At(calls_, "calls pair with message exchanges: add `messages ATTR` to the schema");
      schema_.call_attr = FindAttributeIndex(calls_.text);
      if (schema_.call_attr < 0)
        return At(calls_, "unknown attribute '" + calls_.text + "' in calls; attributes bound by events: " +
                              (schema_.attributes.empty() ? std::string("none") : JoinNames(schema_.attributes)));
    }
    for (const EventRef& r : seeds_) {
      const int i = FindEventIndex(r.name);
      if (i < 0) return UnknownEvent(r);
      schema_.events[i].seed = true;
    }
    for (const EventRef& r : waits_) {
      const int i = FindEventIndex(r.name);
      if (i < 0) return UnknownEvent(r);
      schema_.events[i].wait = true;
    }
    for (const PendingSync& s : syncs_) {
      const int src = FindEventIndex(s.source.name);
      if (src < 0) return UnknownEvent(s.source);
      const int dst = FindEventIndex(s.dest.name);
      if (dst < 0) return UnknownEvent(s.dest);
      const int attr = FindAttributeIndex(s.attr);
      if (attr < 0) {
        return At(s.attr_at, "unknown attribute '" + s.attr + "' in sync; attributes bound by events: " +
                                 (schema_.attributes.empty() ? std::string("none")
                                                             : JoinNames(schema_.attributes)));
      }
      schema_.syncs.push_back(
          SyncStmt{static_cast<uint16_t>(src), static_cast<uint16_t>(attr), static_cast<uint16_t>(dst)});
    }
    for (const PendingCascade& c : cascades_) {
      CascadeStmt st;
      for (size_t i = 0; i < c.attrs.size(); i++) {
        const int attr = FindAttributeIndex(c.attrs[i].text);
        if (attr < 0) {
          return At(c.attrs[i], "unknown attribute '" + c.attrs[i].text + "' in cascade; attributes bound by events: " +
                                    (schema_.attributes.empty() ? std::string("none")
                                                                : JoinNames(schema_.attributes)));
        }
        if (i == 0) {
          st.trigger = static_cast<uint16_t>(attr);
        } else if (attr == st.trigger) {
          return At(c.attrs[i], "cascade: '" + c.attrs[i].text + "' cannot close itself");
        } else {
          st.targets.push_back(static_cast<uint16_t>(attr));
        }
      }
      schema_.cascades.push_back(std::move(st));
    }
    if (schema_.events.empty()) return At(tok_, "schema defines no events");
    if (!schema_.HasSeed())
      return At(tok_, "schema has no seed: add 'seed EVENT' naming an event that occurs once in every request");
    return Status::Ok();
  }

  Lexer lex_;
  std::string_view file_;
  Token tok_;
  // Included files' text and names (deques: the lexer and tokens keep views).
  std::deque<std::string> texts_, files_;
  int depth_ = 0;
  Schema schema_;
  std::vector<EventRef> seeds_, waits_;
  std::vector<PendingSync> syncs_;
  std::vector<PendingCascade> cascades_;
  std::unordered_map<std::string, int> event_index_, attr_index_;
};

}  // namespace

const char* BindingName(Binding b) {
  switch (b) {
    case Binding::kBasic:
      return "basic";
    case Binding::kStart:
      return "start";
    case Binding::kStop:
      return "stop";
  }
  return "?";
}

int Schema::FindEvent(std::string_view n) const {
  for (size_t i = 0; i < events.size(); i++)
    if (events[i].name == n) return static_cast<int>(i);
  return -1;
}

int Schema::FindAttribute(std::string_view n) const {
  for (size_t i = 0; i < attributes.size(); i++)
    if (attributes[i] == n) return static_cast<int>(i);
  return -1;
}

bool Schema::HasSeed() const {
  for (const EventDef& e : events)
    if (e.seed) return true;
  return false;
}

StatusOr<Schema> ParseSchema(std::string_view text, std::string_view filename) {
  Parser p(text, filename);
  return p.Parse();
}

StatusOr<std::string> ReadSchemaText(const std::string& path) {
  // O_NONBLOCK and a regular-file check: a FIFO would block forever and
  // /dev/zero would grow without bound; a directory is not "no events".
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrStatus("cannot read schema %s: %s", path.c_str(), strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return ErrStatus("cannot read schema %s: not a regular file (%s); pass a .schema file", path.c_str(),
                     S_ISDIR(st.st_mode) ? "a directory" : "a pipe, socket or device");
  }
  if (st.st_size > kMaxSchemaBytes) {
    close(fd);
    return ErrStatus("cannot read schema %s: %lld bytes, more than the %lld a schema may have", path.c_str(),
                     static_cast<long long>(st.st_size), static_cast<long long>(kMaxSchemaBytes));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  text.resize(got);
  return text;
}

StatusOr<Schema> LoadSchemaFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadSchemaText(path));
  ASSIGN_OR_RETURN(Schema s, ParseSchema(text, path));
  s.path = path;
  s.name = std::filesystem::path(path).stem().string();
  return s;
}

StatusOr<Schema> LoadSchema(const std::string& name_or_path, const std::vector<std::string>& search_dirs) {
  std::error_code ec;
  // Anything that exists is read as a path, so a directory or FIFO gets
  // its own message rather than "unknown schema".
  if (name_or_path.find('/') != std::string::npos || std::filesystem::exists(name_or_path, ec))
    return LoadSchemaFile(name_or_path);
  std::vector<std::string> available;
  for (const std::string& dir : search_dirs) {
    const std::filesystem::path p = std::filesystem::path(dir) / (name_or_path + ".schema");
    if (std::filesystem::is_regular_file(p, ec)) return LoadSchemaFile(p.string());
    for (const auto& ent : std::filesystem::directory_iterator(dir, ec)) {
      if (ent.path().extension() == ".schema") {
        const std::string stem = ent.path().stem().string();
        bool seen = false;
        for (const std::string& a : available) seen |= a == stem;
        if (!seen) available.push_back(stem);
      }
    }
  }
  std::string dirs = JoinNames(search_dirs);
  return Status::Error("unknown schema '" + name_or_path + "': no " + name_or_path + ".schema in " +
                       (dirs.empty() ? std::string("(no directories)") : dirs) + "; available: " +
                       (available.empty() ? std::string("none") : JoinNames(available)) +
                       " (or pass a path to a .schema file)");
}

std::vector<std::string> DefaultSchemaDirs(const std::string& argv0) {
  std::vector<std::string> dirs;
  if (const char* env = getenv("JACKDAW_SCHEMA_PATH")) {
    std::string s(env);
    size_t start = 0;
    while (start <= s.size()) {
      const size_t colon = s.find(':', start);
      const std::string part = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!part.empty()) dirs.push_back(part);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec && !argv0.empty()) exe = std::filesystem::absolute(argv0, ec);
  if (!exe.empty()) {
    dirs.push_back((exe.parent_path() / "schemas").string());
    // Installed (make install): PREFIX/bin/jackdaw finds PREFIX/share/jackdaw/schemas.
    dirs.push_back((exe.parent_path().parent_path() / "share" / "jackdaw" / "schemas").string());
  }
#ifdef JDW_SCHEMA_SOURCE_DIR
  dirs.push_back(JDW_SCHEMA_SOURCE_DIR);
#endif
  return dirs;
}

}  // namespace jackdaw::schema
