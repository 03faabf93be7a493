#include "join/compiled_schema.h"

#include <gtest/gtest.h>

#include "join/test_stream.h"
#include "request/request.h"

namespace jackdaw::join {
namespace {

using testing::Stream;

constexpr char kSchema[] = R"(
event rd = sys_enter read { basic Tid = tid }
event any_enter = sys_enter { basic Tid = tid }
event rd_exit = sys_exit read|recvfrom { basic Tid = tid }
event out = switch_out where blocked == 1 { stop Tid = tid }
event in = switch_in { start Tid = tid }
event io = io_start { basic Tid = tid }
event begin = usdt app:begin { basic Tid = tid  basic Req = arg0 }
event end = usdt app:end { stop Req = arg0 }
event wake = sched_wakeup { basic Tid = tid }
event gone = usdt app:gone { basic Tid = tid }
sync(begin, Req, end)
cascade(Req, Tid)
seed begin
)";

StatusOr<CompiledSchema> Compile(Stream& s, const char* text = kSchema) {
  auto sch = schema::ParseSchema(text, "test.schema");
  EXPECT_TRUE(sch.ok()) << sch.status().message();
  return CompiledSchema::Compile(*sch, s.meta());
}

uint16_t Def(const CompiledSchema& cs, const char* name) {
  for (size_t i = 0; i < cs.schema().events.size(); i++)
    if (cs.schema().events[i].name == name) return static_cast<uint16_t>(i);
  ADD_FAILURE() << name;
  return 0;
}

TEST(CompiledSchema, DispatchesByRecordTypeSyscallAndProbeInSchemaOrder) {
  Stream s;
  const uint32_t begin = s.Probe("app:begin"), end = s.Probe("app:end"), other = s.Probe("app:other");
  auto cs = Compile(s);
  ASSERT_TRUE(cs.ok()) << cs.status().message();
  const auto rd = Def(*cs, "rd"), any = Def(*cs, "any_enter"), rd_exit = Def(*cs, "rd_exit");
  // read: the specific definition first, then the catch-all.
  EXPECT_EQ(*cs->ForSysEnter(Stream::Nr("read")), (std::vector<uint16_t>{rd, any}));
  EXPECT_EQ(*cs->ForSysEnter(Stream::Nr("write")), (std::vector<uint16_t>{any}));
  EXPECT_EQ(*cs->ForSysExit(Stream::Nr("recvfrom")), (std::vector<uint16_t>{rd_exit}));
  EXPECT_TRUE(cs->ForSysExit(Stream::Nr("write"))->empty());
  EXPECT_EQ(cs->ForSysEnter(1u << 20), nullptr);
  EXPECT_EQ(*cs->ForUsdt(begin), (std::vector<uint16_t>{Def(*cs, "begin")}));
  EXPECT_EQ(*cs->ForUsdt(end), (std::vector<uint16_t>{Def(*cs, "end")}));
  EXPECT_TRUE(cs->ForUsdt(other)->empty());
  EXPECT_EQ(cs->ForUsdt(other + 1), nullptr);
  EXPECT_EQ(cs->ForSwitchOut(), (std::vector<uint16_t>{Def(*cs, "out")}));
  EXPECT_EQ(cs->ForSwitchIn(), (std::vector<uint16_t>{Def(*cs, "in")}));
  EXPECT_EQ(cs->ForIoStart(), (std::vector<uint16_t>{Def(*cs, "io")}));
  EXPECT_EQ(cs->ForType(JDW_EVENT_SCHED_WAKEUP), (std::vector<uint16_t>{Def(*cs, "wake")}));
  EXPECT_TRUE(cs->ForType(JDW_EVENT_NET_RECV).empty());
}

TEST(CompiledSchema, SyncAndCascadeTables) {
  Stream s;
  s.Probe("app:begin");
  auto cs = Compile(s);
  ASSERT_TRUE(cs.ok());
  const auto& attrs = cs->schema().attributes;
  const auto attr = [&](const char* n) {
    return static_cast<uint32_t>(std::find(attrs.begin(), attrs.end(), n) - attrs.begin());
  };
  EXPECT_TRUE(cs->IsSyncAttr(attr("Req")));
  EXPECT_FALSE(cs->IsSyncAttr(attr("Tid")));
  EXPECT_TRUE(cs->InSync(Def(*cs, "begin")));
  EXPECT_TRUE(cs->InSync(Def(*cs, "end")));
  EXPECT_FALSE(cs->InSync(Def(*cs, "rd")));
  EXPECT_EQ(cs->CascadeTargets(attr("Req")), (std::vector<uint16_t>{static_cast<uint16_t>(attr("Tid"))}));
  EXPECT_TRUE(cs->CascadeTargets(attr("Tid")).empty());
}

TEST(CompiledSchema, SyscallsByNumber) {
  Stream s;
  auto cs = Compile(s);
  ASSERT_TRUE(cs.ok());
  EXPECT_EQ(cs->SysDirection(Stream::Nr("recvfrom")), CompiledSchema::kDirIn);
  EXPECT_EQ(cs->SysDirection(Stream::Nr("sendmsg")), CompiledSchema::kDirOut);
  EXPECT_EQ(cs->SysDirection(Stream::Nr("close")), 0);
  EXPECT_EQ(cs->SysDirection(1u << 20), 0);
  EXPECT_TRUE(cs->SysCloses(Stream::Nr("close")));
  EXPECT_TRUE(cs->SysCloses(Stream::Nr("shutdown")));
  EXPECT_FALSE(cs->SysCloses(Stream::Nr("read")));
  EXPECT_EQ(cs->futex_nr(), Stream::Nr("futex"));
  using model::BlockReason;
  EXPECT_EQ(cs->SysBlockReason(Stream::Nr("futex")), static_cast<uint8_t>(BlockReason::kFutex));
  EXPECT_EQ(cs->SysBlockReason(Stream::Nr("fsync")), static_cast<uint8_t>(BlockReason::kDisk));
  EXPECT_EQ(cs->SysBlockReason(Stream::Nr("epoll_wait")), static_cast<uint8_t>(BlockReason::kNetwork));
  EXPECT_EQ(cs->SysBlockReason(Stream::Nr("nanosleep")), static_cast<uint8_t>(BlockReason::kOther));
  EXPECT_EQ(cs->SysBlockReason(1u << 20), static_cast<uint8_t>(BlockReason::kOther));
  EXPECT_EQ(cs->PayloadSize(JDW_EVENT_SYS_ENTER), sizeof(jdw_sys_enter));
  EXPECT_EQ(cs->PayloadSize(JDW_EVENT_MAX), 0u);
}

TEST(CompiledSchema, WarnsAboutWhatTheTraceLacks) {
  Stream s;
  s.Probe("app:begin");  // app:end and app:gone are not in the trace
  s.meta().syscall_names = {"read", "write"};  // no recvfrom
  auto cs = Compile(s);
  ASSERT_TRUE(cs.ok());
  std::string all;
  for (const std::string& w : cs->warnings()) all += w + "\n";
  EXPECT_NE(all.find("probe usdt app:end is not in this trace"), std::string::npos) << all;
  EXPECT_NE(all.find("probe usdt app:gone is not in this trace"), std::string::npos) << all;
  EXPECT_NE(all.find("syscall recvfrom is not in this trace's syscall table"), std::string::npos) << all;
  EXPECT_EQ(cs->futex_nr(), -1);
}

TEST(CompiledSchema, RejectsMoreBindingsThanTheJoinKeeps) {
  Stream s;
  std::string text = "event e = sys_enter {";
  for (size_t i = 0; i <= CompiledSchema::kMaxBindings; i++) text += " basic A" + std::to_string(i) + " = tid";
  text += " }\nseed e\n";
  auto cs = Compile(s, text.c_str());
  ASSERT_FALSE(cs.ok());
  EXPECT_NE(cs.status().message().find("bindings"), std::string::npos);
}

}  // namespace
}  // namespace jackdaw::join
