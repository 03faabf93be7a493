#include "join/field_reader.h"

#include <gtest/gtest.h>

#include "join/endpoint_format.h"
#include "join/test_stream.h"
#include "request/request.h"

namespace jackdaw::join {
namespace {

using schema::FieldRef;
using schema::FieldSource;

class FieldReaderTest : public ::testing::Test {
 protected:
  FieldReaderTest() {
    auto sch = schema::ParseSchema("event e = sys_enter { basic T = tid }\nseed e\n", "t.schema");
    EXPECT_TRUE(sch.ok());
    auto compiled = CompiledSchema::Compile(*sch, stream_.meta());
    EXPECT_TRUE(compiled.ok());
    cs_ = std::make_unique<CompiledSchema>(std::move(*compiled));
    reader_ = std::make_unique<FieldReader>(*cs_, socks_, threads_);
  }
  static FieldRef Derived(FieldSource s) {
    FieldRef f;
    f.source = s;
    return f;
  }
  template <typename Body>
  RecordContext Context(uint16_t type, const Body& body, Thread* t, schema::EventKind kind = schema::EventKind::kRecord) {
    header_ = jdw_record_header{};
    header_.type = type;
    header_.cpu = 3;
    header_.tid = t ? t->tid : 0;
    memcpy(payload_, &body, sizeof(body));
    return RecordContext{.rec = &header_,
                         .payload = payload_,
                         .payload_len = sizeof(body),
                         .ts = 1000,
                         .kind = kind,
                         .thread = t,
                         .tid = t ? t->tid : 0,
                         .tgid = t ? t->tgid : 0,
                         .irq = false,
                         .after_block = false,
                         .in_syscall = t ? t->sys_nr : -1};
  }
  uint64_t Read(FieldSource s, const RecordContext& c) {
    bool ok = true;
    const uint64_t v = reader_->Read(Derived(s), c, &ok);
    EXPECT_TRUE(ok);
    return v;
  }

  testing::Stream stream_;
  std::unique_ptr<CompiledSchema> cs_;
  Stats stats_;
  ThreadTracker threads_{stats_};
  SocketTracker socks_;
  std::unique_ptr<FieldReader> reader_;
  jdw_record_header header_{};
  alignas(8) uint8_t payload_[256] = {};
};

TEST_F(FieldReaderTest, PayloadFieldsAreBoundsCheckedAndSignExtended) {
  jdw_sys_exit e{};
  e.ret = -11;
  RecordContext c = Context(JDW_EVENT_SYS_EXIT, e, nullptr);
  FieldRef ret;
  ret.offset = offsetof(jdw_sys_exit, ret);
  ret.size = 8;
  ret.is_signed = true;
  bool ok = true;
  EXPECT_EQ(static_cast<int64_t>(reader_->Read(ret, c, &ok)), -11);
  EXPECT_TRUE(ok);
  FieldRef nr;
  nr.offset = offsetof(jdw_sys_exit, nr);
  nr.size = 2;
  e.nr = 0xfffe;
  c = Context(JDW_EVENT_SYS_EXIT, e, nullptr);
  EXPECT_EQ(reader_->Read(nr, c, &ok), 0xfffeu);  // unsigned: no extension
  FieldRef beyond;
  beyond.offset = static_cast<uint16_t>(sizeof(jdw_sys_exit));
  beyond.size = 4;
  reader_->Read(beyond, c, &ok);
  EXPECT_FALSE(ok);
}

TEST_F(FieldReaderTest, SysExitFallsBackToItsEntersObject) {
  Thread* t = threads_.Get(42, 7, 0, true);
  t->sys_nr = static_cast<int32_t>(testing::Stream::Nr("recvfrom"));
  t->sys_obj_kind = JDW_OBJ_SOCKET;
  t->sys_obj = 0x5c;
  t->sys_fd = 4;
  t->sys_arg = 99;
  jdw_sys_exit e{};
  e.nr = static_cast<uint16_t>(t->sys_nr);
  RecordContext c = Context(JDW_EVENT_SYS_EXIT, e, t);
  EXPECT_EQ(Read(FieldSource::kExitObj, c), 0x5cu);
  EXPECT_EQ(Read(FieldSource::kExitObjKind, c), JDW_OBJ_SOCKET);
  EXPECT_EQ(Read(FieldSource::kExitFd, c), 4u);
  EXPECT_EQ(Read(FieldSource::kEnterArg, c), 99u);
  EXPECT_EQ(reader_->SockOf(c), 0x5cu);
  // A socket that got another connection after the enter is not this one.
  jdw_sock_info si{};
  si.sk = 0x5c;
  si.family = kAfInet;
  si.sport = 80;
  socks_.OnSockInfo(si, 500);
  t->sys_ts = 400;
  RecordContext late = Context(JDW_EVENT_SYS_EXIT, e, t);
  EXPECT_EQ(reader_->SockOf(late), 0u);
  // Another syscall's exit: no fallback.
  e.nr = static_cast<uint16_t>(testing::Stream::Nr("write"));
  c = Context(JDW_EVENT_SYS_EXIT, e, t);
  EXPECT_EQ(Read(FieldSource::kExitObj, c), 0u);
  EXPECT_EQ(static_cast<int64_t>(Read(FieldSource::kExitFd, c)), -1);
}

TEST_F(FieldReaderTest, NewSockAndNewMsgFromSocketHistory) {
  Thread* t = threads_.Get(42, 7, 0, true);
  jdw_sys_enter e{};
  e.nr = static_cast<uint16_t>(testing::Stream::Nr("recvfrom"));
  e.obj_kind = JDW_OBJ_SOCKET;
  e.obj = 0x5c;
  RecordContext c = Context(JDW_EVENT_SYS_ENTER, e, t);
  EXPECT_EQ(Read(FieldSource::kNewSock, c), 1u);  // the thread used no socket yet
  t->last_sock = 0x5c;
  t->last_sock_ts = 100;
  c = Context(JDW_EVENT_SYS_ENTER, e, t);
  EXPECT_EQ(Read(FieldSource::kNewSock, c), 0u);
  EXPECT_EQ(Read(FieldSource::kNewMsg, c), 0u);  // no output on it yet
  socks_.NoteDirection(0x5c, CompiledSchema::kDirOut);
  EXPECT_EQ(Read(FieldSource::kNewMsg, c), 1u);  // input after output: a new message
  jdw_sock_info si{};
  si.sk = 0x5c;
  si.family = kAfInet;
  socks_.OnSockInfo(si, 200);  // the same address is a new connection since
  c = Context(JDW_EVENT_SYS_ENTER, e, t);
  EXPECT_EQ(Read(FieldSource::kNewSock, c), 1u);
}

TEST_F(FieldReaderTest, WakeeAndBlockReason) {
  Thread* wakee = threads_.Get(50, 7, 0, false);
  wakee->sys_nr = static_cast<int32_t>(testing::Stream::Nr("futex"));
  wakee->sys_obj = 0x7000;
  wakee->sys_arg = 128;
  jdw_sched_wakeup w{};
  w.wakee_tid = 50;
  RecordContext c = Context(JDW_EVENT_SCHED_WAKEUP, w, nullptr);
  EXPECT_EQ(Read(FieldSource::kWakeeSyscall, c), static_cast<uint64_t>(wakee->sys_nr));
  EXPECT_EQ(Read(FieldSource::kWakeeObj, c), 0x7000u);
  EXPECT_EQ(Read(FieldSource::kWakeeArg, c), 128u);
  w.wakee_tid = 51;  // unknown thread
  c = Context(JDW_EVENT_SCHED_WAKEUP, w, nullptr);
  EXPECT_EQ(static_cast<int64_t>(Read(FieldSource::kWakeeSyscall, c)), -1);
  using model::BlockReason;
  EXPECT_EQ(reader_->BlockReasonOf(wakee), static_cast<uint8_t>(BlockReason::kFutex));  // by syscall
  wakee->sys_obj_kind = JDW_OBJ_SOCKET;
  EXPECT_EQ(reader_->BlockReasonOf(wakee), static_cast<uint8_t>(BlockReason::kNetwork));  // by object
  wakee->sys_nr = -1;
  EXPECT_EQ(reader_->BlockReasonOf(wakee), static_cast<uint8_t>(BlockReason::kOther));  // outside a syscall
}

TEST_F(FieldReaderTest, MatchesEveryPredicateWithSignAndMask) {
  auto sch = schema::ParseSchema(
      "event e = sys_exit where ret < 0 and obj_kind == socket { basic T = tid }\nseed e\n", "m.schema");
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  const schema::EventDef& def = sch->events[0];
  jdw_sys_exit e{};
  e.ret = -4;
  e.obj_kind = JDW_OBJ_SOCKET;
  e.obj = 1;
  EXPECT_TRUE(reader_->Matches(def, Context(JDW_EVENT_SYS_EXIT, e, nullptr)));
  e.ret = 4;
  EXPECT_FALSE(reader_->Matches(def, Context(JDW_EVENT_SYS_EXIT, e, nullptr)));
  e.ret = -4;
  e.obj_kind = JDW_OBJ_FILE;
  EXPECT_FALSE(reader_->Matches(def, Context(JDW_EVENT_SYS_EXIT, e, nullptr)));
}

// The compiled range test agrees with the plain comparison for every
// operator, signed and unsigned, masked or not, at the edges of the range.
TEST(CompiledPredicate, AgreesWithTheComparisonItCompiles) {
  const int64_t values[] = {INT64_MIN, INT64_MIN + 1, -2, -1, 0, 1, 2, 9, 127, 128, INT64_MAX - 1, INT64_MAX};
  const schema::CmpOp ops[] = {schema::CmpOp::kEq, schema::CmpOp::kNe, schema::CmpOp::kLt,
                               schema::CmpOp::kLe, schema::CmpOp::kGt, schema::CmpOp::kGe};
  for (bool is_signed : {false, true})
    for (uint64_t mask : {uint64_t{0}, uint64_t{127}})
      for (schema::CmpOp op : ops)
        for (int64_t value : values) {
          schema::Predicate p;
          p.field.is_signed = is_signed;
          p.mask = mask;
          p.op = op;
          p.value = value;
          const CompiledPredicate cp = CompiledPredicate::Of(p);
          for (int64_t x : values) {
            uint64_t v = static_cast<uint64_t>(x);
            if (mask) v &= mask;
            const auto cmp = [&](auto a, auto b) {
              switch (op) {
                case schema::CmpOp::kEq: return a == b;
                case schema::CmpOp::kNe: return a != b;
                case schema::CmpOp::kLt: return a < b;
                case schema::CmpOp::kLe: return a <= b;
                case schema::CmpOp::kGt: return a > b;
                default: return a >= b;
              }
            };
            const bool want = is_signed ? cmp(static_cast<int64_t>(v), value) : cmp(v, static_cast<uint64_t>(value));
            EXPECT_EQ(cp.Holds(static_cast<uint64_t>(x)), want)
                << "signed " << is_signed << " mask " << mask << " op " << int(op) << " value " << value << " x " << x;
          }
        }
}

}  // namespace
}  // namespace jackdaw::join
