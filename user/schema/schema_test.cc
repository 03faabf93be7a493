#include "schema/schema.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "jackdaw/abi.h"

namespace jackdaw::schema {
namespace {

std::string ParseError(const std::string& text) {
  auto s = ParseSchema(text, "t.schema");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : s.status().message();
}

TEST(SchemaParser, ParsesEveryConstruct) {
  auto s = ParseSchema(R"(
# comment
timeout 250ms
seed begin, other
event begin = usdt app:begin {      # USDT by provider:name
  start Req = arg0
  basic Thread = tid
}
event other = sys_enter read|recvfrom where obj_kind == socket and arg & 0xff >= 16 {
  basic Sock = sock
  stop Thread = tid
}
event out = switch_out where blocked == 1 and in_syscall == futex { stop Thread = tid }
event exit = sys_exit accept4 where ret >= -1 { start Sock = obj }
sync(begin, Req, other)
wait(out)
)",
                       "x.schema");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->timeout_ns, 250'000'000u);
  ASSERT_EQ(s->events.size(), 4u);
  EXPECT_EQ(s->attributes, (std::vector<std::string>{"Req", "Thread", "Sock"}));

  const EventDef& b = s->events[0];
  EXPECT_EQ(b.kind, EventKind::kUsdt);
  EXPECT_EQ(b.usdt_probe, "app:begin");
  EXPECT_TRUE(b.seed);
  ASSERT_EQ(b.bindings.size(), 2u);
  EXPECT_EQ(b.bindings[0].type, Binding::kStart);
  EXPECT_EQ(b.bindings[0].value.source, FieldSource::kUsdtArg);
  EXPECT_EQ(b.bindings[1].value.source, FieldSource::kHeaderTid);

  const EventDef& o = s->events[1];
  EXPECT_EQ(o.record_type, JDW_EVENT_SYS_ENTER);
  EXPECT_EQ(o.syscalls, (std::vector<std::string>{"read", "recvfrom"}));
  ASSERT_EQ(o.where.size(), 2u);
  EXPECT_EQ(o.where[0].value, JDW_OBJ_SOCKET);
  EXPECT_EQ(o.where[1].mask, 0xffu);
  EXPECT_EQ(o.where[1].op, CmpOp::kGe);
  EXPECT_EQ(o.where[1].field.offset, offsetof(jdw_sys_enter, arg));
  EXPECT_TRUE(o.seed);

  EXPECT_EQ(s->events[2].kind, EventKind::kSwitchOut);
  EXPECT_TRUE(s->events[2].wait);
  EXPECT_EQ(s->events[3].where[0].value, -1);
  EXPECT_TRUE(s->events[3].where[0].field.is_signed);
  ASSERT_EQ(s->syncs.size(), 1u);
  EXPECT_EQ(s->syncs[0].source, 0);
  EXPECT_EQ(s->syncs[0].attr, 0);
  EXPECT_EQ(s->syncs[0].dest, 1);
}

TEST(SchemaParser, SyntheticEventsRemapTid) {
  auto s = ParseSchema(R"(
event a = switch_in { start T = tid }
event b = io_start { basic T = tid }
seed a
)",
                       "x");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->events[0].bindings[0].value.source, FieldSource::kPayload);
  EXPECT_EQ(s->events[0].bindings[0].value.offset, offsetof(jdw_sched_switch, next_tid));
  EXPECT_EQ(s->events[1].bindings[0].value.offset, offsetof(jdw_block_complete, issue_tid));
}

TEST(Schema, MessagesNamesTheExchangeAttribute) {
  auto s = ParseSchema(
      "messages Msg\nseed r\n"
      "event r = sys_exit read where msg_start == 1 { start Msg = msg  basic Thread = tid }\n"
      "event p = net_recv { basic Msg = msg }\n",
      "t.schema");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->message_attr, s->FindAttribute("Msg"));
  auto plain = ParseSchema("seed a event a = usdt p:n { basic X = arg0 }", "t.schema");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->message_attr, -1);
  EXPECT_EQ(ParseError("messages Nope\nseed a\nevent a = usdt p:n { basic X = arg0 }"),
            "t.schema:1:10: unknown attribute 'Nope' in messages; attributes bound by events: X");
  EXPECT_EQ(ParseError("messages X messages X\nevent a = usdt p:n { basic X = arg0 }"),
            "t.schema:1:21: messages: given twice (one message attribute per schema)");
}

TEST(SchemaErrors, SyntaxErrorsNameFileLineColumn) {
  EXPECT_EQ(ParseError("event a = usdt p:n {\n  basic X arg0\n}\n"), "t.schema:2:11: expected '=', found 'arg0'");
  EXPECT_EQ(ParseError("event a usdt p:n {}"), "t.schema:1:9: expected '=', found 'usdt'");
  EXPECT_EQ(ParseError("event a = usdt p:n {\n  basic X = arg0\n"),
            "t.schema:3:1: expected '}' closing event 'a', found end of file");
  EXPECT_EQ(ParseError("seed\n"), "t.schema:2:1: expected an event name, found end of file");
  EXPECT_EQ(ParseError("bogus a"),
            "t.schema:1:1: expected a statement (event, seed, sync, wait, cascade, messages, calls, setup, include, timeout), "
            "found 'bogus'");
  EXPECT_EQ(ParseError("event a = usdt p:n { keep X = tid }"),
            "t.schema:1:22: expected a binding (basic, start or stop) or '}', found 'keep'");
  EXPECT_EQ(ParseError("timeout 5 parsecs"), "t.schema:1:11: expected a time unit (ns, us, ms, s, min), found 'parsecs'");
  EXPECT_EQ(ParseError("event a = sys_enter where fd ~ 3 {}"), "t.schema:1:30: unexpected character '~'");
  EXPECT_EQ(ParseError("event a = sys_enter where fd 3 {}"),
            "t.schema:1:30: expected a comparison (==, !=, <, <=, >, >=), found number 3");
}

TEST(SchemaParser, CascadeAndNewFields) {
  // cascade may come before the events that bind its attributes.
  auto s = ParseSchema(R"(
cascade(Sock, Thread, Wake)
event a = sys_exit close where obj_kind == socket { stop Sock = sock  stop Thread = tid }
event b = switch_out where blocked == 1 and block_reason != disk and conn_open == 0 { stop Thread = tid }
event c = switch_in where block_reason == futex { start Thread = tid  stop Wake = tid }
seed a
)",
                       "x");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->cascades.size(), 1u);
  EXPECT_EQ(s->attributes[s->cascades[0].trigger], "Sock");
  ASSERT_EQ(s->cascades[0].targets.size(), 2u);
  EXPECT_EQ(s->attributes[s->cascades[0].targets[0]], "Thread");
  EXPECT_EQ(s->attributes[s->cascades[0].targets[1]], "Wake");
  const Predicate& br = s->events[1].where[1];
  EXPECT_EQ(br.field.source, FieldSource::kBlockReason);
  EXPECT_EQ(br.value, static_cast<int64_t>(BlockReasonValue::kDisk));
  EXPECT_EQ(s->events[1].where[2].field.source, FieldSource::kConnOpen);
  EXPECT_EQ(s->events[2].where[0].value, static_cast<int64_t>(BlockReasonValue::kFutex));
}

// What a wake-up's wakee is (tcp-threadpool's hand-off rule): the two
// facts are sched_wakeup fields only.
TEST(SchemaParser, WakeeRoleFields) {
  auto s = ParseSchema(R"(
event h = sched_wakeup where wakee_serves_conns == 0 and wakee_hands_back == 1 { basic Thread = tid  start Wake = wakee_tid }
seed h
)",
                       "x");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->events[0].where.size(), 2u);
  EXPECT_EQ(s->events[0].where[0].field.source, FieldSource::kWakeeServesConns);
  EXPECT_EQ(s->events[0].where[1].field.source, FieldSource::kWakeeHandsBack);
  EXPECT_FALSE(ParseSchema("event a = switch_in where wakee_hands_back == 1 { basic T = tid }\nseed a\n", "t").ok());
}

TEST(SchemaErrors, CascadeErrors) {
  const char* kEv = "event a = usdt p:n { basic X = arg0  basic Y = arg1 }\nseed a\n";
  EXPECT_EQ(ParseError(std::string(kEv) + "cascade(X, Z)\n"),
            "t.schema:3:12: unknown attribute 'Z' in cascade; attributes bound by events: X, Y");
  EXPECT_EQ(ParseError(std::string(kEv) + "cascade(X, X)\n"), "t.schema:3:12: cascade: 'X' cannot close itself");
  EXPECT_EQ(ParseError(std::string(kEv) + "cascade(X)\n"),
            "t.schema:3:10: expected ',' and the attributes whose intervals close with X, found ')'");
  EXPECT_EQ(ParseError("event a = switch_out where block_reason == disc { basic X = tid }\nseed a\n"),
            "t.schema:1:44: unknown constant 'disc' for field 'block_reason'; valid: none, disk, network, futex, "
            "pipe, other");
  EXPECT_NE(ParseError("event a = sys_enter where block_reason == disk { basic X = tid }\nseed a\n")
                .find("unknown field 'block_reason' of sys_enter"),
            std::string::npos);
}

TEST(SchemaErrors, UnknownNamesListTheValidChoices) {
  std::string e = ParseError("event a = sched_swich { basic T = tid }\nseed a\n");
  EXPECT_NE(e.find("t.schema:1:11: unknown event type 'sched_swich' (did you mean 'sched_switch'?); valid: "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("sys_enter"), std::string::npos);
  EXPECT_NE(e.find("switch_in"), std::string::npos);
  EXPECT_NE(e.find("usdt PROVIDER:NAME"), std::string::npos);

  e = ParseError("event a = net_recv { basic S = sockk }\nseed a\n");
  EXPECT_NE(e.find("t.schema:1:32: unknown field 'sockk' of net_recv (did you mean 'sock'?); valid: tid, tgid, cpu, ctx,"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("payload_len"), std::string::npos);

  e = ParseError("event a = sys_enter recvform { basic S = obj }\nseed a\n");
  EXPECT_NE(e.find("t.schema:1:21: unknown syscall 'recvform' (did you mean recvfrom"), std::string::npos) << e;

  e = ParseError("event a = sys_enter where obj_kind == sockett { basic S = obj }\nseed a\n");
  EXPECT_EQ(e,
            "t.schema:1:39: unknown constant 'sockett' for field 'obj_kind'; valid: none, socket, pipe, file, "
            "futex, epoll, other_fd");

  e = ParseError("event a = usdt p:n { basic X = arg0 }\nseed b\n");
  EXPECT_EQ(e, "t.schema:2:6: unknown event 'b'; defined events: a");

  e = ParseError("event a = usdt p:n { basic X = arg0 }\nseed a\nsync(a, Y, a)\n");
  EXPECT_EQ(e, "t.schema:3:9: unknown attribute 'Y' in sync; attributes bound by events: X");

  e = ParseError("event a = usdt p:n { basic X = arg0 }\n");
  EXPECT_NE(e.find("schema has no seed"), std::string::npos) << e;

  e = ParseError("event a = usdt p:n { basic X = arg0 }\nevent a = usdt p:m { basic X = arg0 }\nseed a\n");
  EXPECT_EQ(e, "t.schema:2:7: event 'a' is already defined");

  e = ParseError("event a = switch_out { basic X = arg0 }\nseed a\n");
  EXPECT_NE(e.find("unknown field 'arg0' of switch_out"), std::string::npos) << e;
}

TEST(SchemaLoader, ShippedSchemasParse) {
  const auto dirs = DefaultSchemaDirs("");
  for (const char* name : {"testserver", "tcp-threadpool", "postgres"}) {
    auto s = LoadSchema(name, dirs);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status().message();
    EXPECT_EQ(s->name, name);
    EXPECT_TRUE(s->HasSeed());
    EXPECT_GT(s->events.size(), 5u);
  }
}

// make install puts the binary in PREFIX/bin and the schemas in
// PREFIX/share/jackdaw/schemas: --schema NAME must find them there.
TEST(SchemaLoader, InstalledBinaryLooksUnderShareJackdaw) {
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  const std::string installed = (exe.parent_path().parent_path() / "share" / "jackdaw" / "schemas").string();
  const auto dirs = DefaultSchemaDirs("");
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), installed), dirs.end()) << installed;
}

TEST(SchemaLoader, LanguageDocExampleParses) {
  // The first ``` block of LANGUAGE.md is the example the README quotes.
  std::ifstream in(std::string(JDW_SCHEMA_SOURCE_DIR) + "/LANGUAGE.md");
  ASSERT_TRUE(in.good());
  std::string line, block;
  int fences = 0;
  while (std::getline(in, line) && fences < 4) {
    if (line.rfind("```", 0) == 0) {
      fences++;
      continue;
    }
    if (fences == 3) block += line + "\n";  // the second block (the first is a shell snippet)
  }
  ASSERT_FALSE(block.empty());
  auto s = ParseSchema(block, "LANGUAGE.md");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->syncs.size(), 1u);
  EXPECT_EQ(s->timeout_ns, 10'000'000'000u);
}

// `include NAME` reads NAME.schema's statements in place (beside the
// including file first); `setup N` needs `messages`.
TEST(SchemaLoader, IncludeAndSetup) {
  const auto dirs = DefaultSchemaDirs("");
  auto base = LoadSchema("tcp-threadpool", dirs);
  auto pg = LoadSchema("postgres", dirs);
  ASSERT_TRUE(base.ok() && pg.ok()) << (pg.ok() ? base.status().message() : pg.status().message());
  EXPECT_EQ(pg->events.size(), base->events.size());
  EXPECT_EQ(pg->attributes, base->attributes);
  EXPECT_EQ(pg->message_attr, base->message_attr);
  EXPECT_EQ(pg->cascades.size(), base->cascades.size());
  EXPECT_EQ(base->setup_exchanges, 0u);
  EXPECT_EQ(pg->setup_exchanges, 1u);

  const std::string dir = ::testing::TempDir() + "/jdw_include_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/base.schema") << "event a = usdt p:n { basic X = arg0 }\nseed a\nmessages X\n";
  std::ofstream(dir + "/top.schema") << "include base\nevent b = usdt p:m { basic X = arg0 }\nsetup 3\n";
  auto top = LoadSchema(dir + "/top.schema", {});
  ASSERT_TRUE(top.ok()) << top.status().message();
  ASSERT_EQ(top->events.size(), 2u);
  EXPECT_EQ(top->events[0].name, "a");  // the included file's first
  EXPECT_EQ(top->setup_exchanges, 3u);
  // Errors name the file they are in.
  std::ofstream(dir + "/badbase.schema") << "event a = usdt p:n {\n";
  std::ofstream(dir + "/inc_bad.schema") << "include badbase\n";
  auto bad = LoadSchema(dir + "/inc_bad.schema", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("badbase.schema:2:"), std::string::npos) << bad.status().message();
  std::ofstream(dir + "/loop.schema") << "include loop\n";
  auto loop = LoadSchema(dir + "/loop.schema", {});
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.status().message().find("levels deep"), std::string::npos) << loop.status().message();
  auto missing = ParseSchema("include no_such_schema_here\n", "t.schema");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("t.schema:1:9: include: no schema 'no_such_schema_here'"),
            std::string::npos)
      << missing.status().message();
  EXPECT_NE(ParseError("event a = usdt p:n { basic X = arg0 }\nseed a\nsetup 1\n")
                .find("t.schema:3:7: setup counts message exchanges"),
            std::string::npos);
  EXPECT_NE(ParseError("setup x\n").find("expected a number of exchanges"), std::string::npos);
  EXPECT_NE(ParseError("setup 65\n").find("at most 64"), std::string::npos);
}

TEST(SchemaLoader, UnknownNameListsAvailableSchemas) {
  auto s = LoadSchema("nginx-magic", DefaultSchemaDirs(""));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("unknown schema 'nginx-magic'"), std::string::npos);
  EXPECT_NE(s.status().message().find("testserver"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("tcp-threadpool"), std::string::npos);
}

TEST(SchemaLoader, PathAndSearchDirs) {
  const std::string dir = ::testing::TempDir() + "/jdw_schema_test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir + "/mine.schema") << "event a = usdt p:n { basic X = arg0 }\nseed a\n";
  }
  auto by_name = LoadSchema("mine", {"/nonexistent", dir});
  ASSERT_TRUE(by_name.ok()) << by_name.status().message();
  EXPECT_EQ(by_name->path, dir + "/mine.schema");
  auto by_path = LoadSchema(dir + "/mine.schema", {});
  ASSERT_TRUE(by_path.ok());
  auto missing = LoadSchema(dir + "/nope.schema", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read schema"), std::string::npos);
}

}  // namespace
}  // namespace jackdaw::schema

namespace jackdaw::schema {
namespace {

TEST(SchemaLimits, TimeoutThatWouldWrapIsRefused) {
  auto s = ParseSchema("timeout 18446744073709552us\n", "t.schema");
  ASSERT_FALSE(s.ok());  // before: wrapped to 384 ns
  EXPECT_NE(s.status().message().find("t.schema:1:9: timeout 18446744073709552us is too long"), std::string::npos)
      << s.status().message();
  auto big = ParseSchema("timeout 99999999999999999999999 s\n", "t.schema");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("does not fit in 64 bits"), std::string::npos) << big.status().message();
  auto ok = ParseSchema("timeout 584 min\nevent e = sys_enter { basic A = tid }\nseed e\n", "t.schema");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->timeout_ns, 584ull * 60'000'000'000ull);
}

TEST(SchemaLimits, MoreEventsThanTheIndexHoldsFailAtTheirLine) {
  std::string text;
  for (int i = 0; i <= 65535; ++i) text += "event e" + std::to_string(i) + " = sys_enter { basic A = tid }\n";
  text += "seed e0\n";
  auto s = ParseSchema(text, "big.schema");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("big.schema:65536:7: too many events"), std::string::npos)
      << s.status().message();
}

TEST(SchemaLimits, RawBytesAndNulsAreEscapedInErrors) {
  for (const std::string& text : {std::string("event \0x", 8), std::string("seed \xc3\xa9t\xff"),
                                  std::string("\x1b[31m")}) {
    auto s = ParseSchema(text, "t.schema");
    ASSERT_FALSE(s.ok());
    const std::string& m = s.status().message();
    for (unsigned char c : m) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "raw byte " << int(c) << " in: " << m;
    EXPECT_NE(m.find("\\x"), std::string::npos) << m;
  }
}

TEST(SchemaLimits, DirectoryFifoAndDeviceAreNotSchemas) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string fifo = dir + "/jdw_schema_fifo_" + std::to_string(getpid());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& p : {dir, fifo, std::string("/dev/zero")}) {
    auto s = LoadSchema(p, {});
    ASSERT_FALSE(s.ok()) << p;
    EXPECT_NE(s.status().message().find("not a regular file"), std::string::npos) << s.status().message();
  }
  std::filesystem::remove(fifo);
}

}  // namespace
}  // namespace jackdaw::schema
