// The decoder's expansion of combined syscall records: on synthetic
// buffers (every byte of the two events, time order around nested
// records) and through real trace files, plain and zstd, as every command
// reads them.
#include "trace/record_decoder.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "trace/event_table.h"
#include "trace/syscall_names.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace jackdaw::trace {
namespace {

jdw_record_header Hdr(uint16_t type, uint16_t size, uint64_t ts) {
  jdw_record_header h{};
  h.ts = ts;
  h.type = type;
  h.size = size;
  h.cpu = 1;
  h.ctx = JDW_CTX_TASK;
  h.tgid = 700;
  h.tid = 701;
  return h;
}

// The records the probe emits for one call without combining.
jdw_sys_enter_record Enter(uint64_t ts, uint16_t nr, int32_t fd, uint64_t obj) {
  jdw_sys_enter_record r{};
  r.hdr = Hdr(JDW_EVENT_SYS_ENTER, sizeof(r), ts);
  r.body.nr = nr;
  r.body.obj_kind = obj ? JDW_OBJ_PIPE : JDW_OBJ_NONE;
  r.body.fd = fd;
  r.body.arg = 4096;
  r.body.obj = obj;
  return r;
}
jdw_sys_exit_record Exit(uint64_t ts, uint16_t nr, int64_t ret) {
  jdw_sys_exit_record r{};
  r.hdr = Hdr(JDW_EVENT_SYS_EXIT, sizeof(r), ts);
  r.body.nr = nr;
  r.body.obj_kind = JDW_OBJ_NONE;
  r.body.fd = -1;
  r.body.ret = ret;
  return r;
}
// And what it emits with combining, built the way syscall.bpf.c builds it.
jdw_sys_call_record Combined(const jdw_sys_enter_record& e, uint64_t exit_ts, int64_t ret) {
  jdw_sys_call_record c{};
  c.hdr = e.hdr;
  c.hdr.type = JDW_WIRE_SYS_CALL;
  c.hdr.size = sizeof(c);
  c.body.enter = e.body;
  c.body.exit_ts = exit_ts;
  c.body.ret = ret;
  return c;
}
jdw_sched_switch_record Switch(uint64_t ts) {
  jdw_sched_switch_record r{};
  r.hdr = Hdr(JDW_EVENT_SCHED_SWITCH, sizeof(r), ts);
  r.body.prev_tid = 701;
  r.body.prev_tgid = 700;
  r.body.prev_state = 1;
  return r;
}

template <typename T>
void Append(std::vector<uint8_t>* b, const T& r) {
  const auto* p = reinterpret_cast<const uint8_t*>(&r);
  b->insert(b->end(), p, p + sizeof(r));
}

std::vector<std::pair<uint16_t, uint64_t>> TypesAndTimes(const std::vector<uint8_t>& b) {
  std::vector<std::pair<uint16_t, uint64_t>> out;
  for (size_t off = 0; off < b.size();) {
    jdw_record_header h;
    memcpy(&h, b.data() + off, sizeof(h));
    out.push_back({h.type, h.ts});
    off += h.size;
  }
  return out;
}

TEST(RecordDecoder, CombinedExpandsToTheTwoRecordsItReplacesByteForByte) {
  const auto e = Enter(1000, 0 /* read */, 5, 0xffff888012345678ull);
  const auto x = Exit(2500, 0, 17);
  const auto c = Combined(e, 2500, 17);
  jdw_sys_enter_record ge;
  jdw_sys_exit_record gx;
  memset(&ge, 0xaa, sizeof(ge));
  memset(&gx, 0xaa, sizeof(gx));
  ExpandSysCall(reinterpret_cast<const uint8_t*>(&c), &ge, &gx);
  EXPECT_EQ(memcmp(&ge, &e, sizeof(e)), 0);
  EXPECT_EQ(memcmp(&gx, &x, sizeof(x)), 0);

  std::vector<uint8_t> plain, wire, out;
  Append(&plain, e);
  Append(&plain, x);
  Append(&wire, c);
  ASSERT_TRUE(ExpandRecords(wire.data(), wire.size(), &out));
  EXPECT_EQ(out, plain);
}

TEST(RecordDecoder, TheExitsPeekRidesInTheEntersSpareByteAndLandsOnTheExit) {
  const auto e = Enter(1000, 0 /* read */, 5, 0xffff888012345678ull);
  auto x = Exit(2500, 0, 517);
  x.body.peek = JDW_PEEK_TLS | (22 - 20);  // a ClientHello's record header
  auto c = Combined(e, 2500, 517);
  c.body.enter.reserved = x.body.peek;
  jdw_sys_enter_record ge;
  jdw_sys_exit_record gx;
  ExpandSysCall(reinterpret_cast<const uint8_t*>(&c), &ge, &gx);
  EXPECT_EQ(memcmp(&ge, &e, sizeof(e)), 0);  // the enter's own byte is 0 again
  EXPECT_EQ(memcmp(&gx, &x, sizeof(x)), 0);
}

TEST(RecordDecoder, NegativeReturnAndUnsetFieldsSurvive) {
  auto e = Enter(10, 110 /* getppid */, -1, 0);
  const auto c = Combined(e, 11, -4 /* -EINTR */);
  jdw_sys_enter_record ge;
  jdw_sys_exit_record gx;
  ExpandSysCall(reinterpret_cast<const uint8_t*>(&c), &ge, &gx);
  EXPECT_EQ(gx.body.ret, -4);
  EXPECT_EQ(gx.body.fd, -1);
  EXPECT_EQ(gx.hdr.tid, 701u);
  EXPECT_EQ(gx.hdr.cpu, 1u);
  EXPECT_EQ(memcmp(&ge, &e, sizeof(e)), 0);
}

TEST(RecordDecoder, NothingToExpandLeavesTheBufferAlone) {
  std::vector<uint8_t> b, out = {1, 2, 3};
  Append(&b, Enter(1, 0, 3, 0));
  Append(&b, Exit(2, 0, 1));
  EXPECT_FALSE(ExpandRecords(b.data(), b.size(), &out));
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2, 3}));
}

// A flushed enter is an ordinary sys_enter placed before the record that
// flushed it; the stream around combined records keeps its time order.
TEST(RecordDecoder, FlushedEntersAndCombinedCallsComeOutInTimeOrder) {
  std::vector<uint8_t> b, out;
  Append(&b, Combined(Enter(100, 0, 3, 0), 150, 8));  // read that returned at once
  Append(&b, Enter(200, 0, 3, 0));                    // flushed by the switch below: it blocked
  Append(&b, Switch(210));
  Append(&b, Combined(Enter(300, 1, 4, 0), 320, 8));
  ASSERT_TRUE(ExpandRecords(b.data(), b.size(), &out));
  const std::vector<std::pair<uint16_t, uint64_t>> want = {
      {JDW_EVENT_SYS_ENTER, 100}, {JDW_EVENT_SYS_EXIT, 150},   {JDW_EVENT_SYS_ENTER, 200},
      {JDW_EVENT_SCHED_SWITCH, 210}, {JDW_EVENT_SYS_ENTER, 300}, {JDW_EVENT_SYS_EXIT, 320}};
  EXPECT_EQ(TypesAndTimes(out), want);
}

// An interrupt's record stamped inside the call (it found the slot busy,
// so it did not flush) is sorted between the enter and the exit.
TEST(RecordDecoder, ARecordNestedInsideTheCallIsSortedBetweenItsEvents) {
  std::vector<uint8_t> b, out;
  Append(&b, Combined(Enter(100, 0, 3, 0), 180, 8));
  Append(&b, Switch(120));
  Append(&b, Switch(200));
  ASSERT_TRUE(ExpandRecords(b.data(), b.size(), &out));
  const std::vector<std::pair<uint16_t, uint64_t>> want = {{JDW_EVENT_SYS_ENTER, 100},
                                                           {JDW_EVENT_SCHED_SWITCH, 120},
                                                           {JDW_EVENT_SYS_EXIT, 180},
                                                           {JDW_EVENT_SCHED_SWITCH, 200}};
  EXPECT_EQ(TypesAndTimes(out), want);
}

TEST(RecordDecoder, WireIdIsNoEvent) {
  EXPECT_EQ(FindEvent(static_cast<uint16_t>(JDW_WIRE_SYS_CALL)), nullptr);
  EXPECT_TRUE(IsWireRecord(JDW_WIRE_SYS_CALL));
  EXPECT_FALSE(IsWireRecord(JDW_EVENT_SYS_ENTER));
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("jdw_decoder_test_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// The same calls written combined and written as plain enter/exit pairs
// read back as the same events, through every reading path.
class CombinedTrace : public ::testing::TestWithParam<Compression> {};

TEST_P(CombinedTrace, ReadsBackAsTheEventsTheCombinedRecordsReplace) {
  std::vector<uint8_t> plain, wire;
  uint64_t plain_n = 0, wire_n = 0;
  for (int i = 0; i < 5000; ++i) {
    const uint64_t t = 1000 + uint64_t(i) * 1000;
    const auto e = Enter(t, i % 3 == 0 ? 0 : 110, i % 3 == 0 ? 3 : -1, 0);
    Append(&plain, e);
    Append(&plain, Exit(t + 300, e.body.nr, i));
    plain_n += 2;
    if (i % 7 == 0) {  // some calls flushed as separate records
      Append(&wire, e);
      Append(&wire, Exit(t + 300, e.body.nr, i));
      wire_n += 2;
    } else {
      Append(&wire, Combined(e, t + 300, i));
      wire_n += 1;
    }
  }
  const std::string path = TempPath(GetParam() == Compression::kZstd ? "zstd" : "plain");
  // One chunk of the whole buffer (the writer takes whole records).
  {
    nlohmann::json header = {{"format", "jdw"},   {"abi_version", JDW_ABI_VERSION}, {"ncpus", 2},
                             {"timebase", "mono_ns"}, {"syscall_names", SyscallNames()}};
    auto w = TraceWriter::Create(path, header, GetParam());
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_TRUE((*w)->WriteRecords(1, wire.data(), wire.size(), wire_n).ok());
    ASSERT_TRUE((*w)->Finish({{"records", plain_n}}).ok());
  }
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)->chunks().size(), 1u);
  EXPECT_EQ((*r)->chunks()[0].stored_count, wire_n);
  EXPECT_EQ((*r)->chunks()[0].record_count, plain_n);
  std::vector<uint8_t> got;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    const auto* p = reinterpret_cast<const uint8_t*>(&h);
    got.insert(got.end(), p, p + h.size);
  });
  EXPECT_EQ(got, plain);
  std::vector<uint8_t> by_cursor;
  auto cursors = (*r)->CursorsByCpu();
  ASSERT_EQ(cursors.size(), 2u);
  while (const jdw_record_header* h = cursors[1].Peek()) {
    const auto* p = reinterpret_cast<const uint8_t*>(h);
    by_cursor.insert(by_cursor.end(), p, p + h->size);
    cursors[1].Advance(h);
  }
  EXPECT_EQ(by_cursor, plain);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Compression, CombinedTrace, ::testing::Values(Compression::kNone, Compression::kZstd));

TEST(CombinedTraceHostile, ATruncatedCombinedRecordIsRefusedWithItsOffset) {
  std::vector<uint8_t> wire;
  auto c = Combined(Enter(10, 0, 3, 0), 20, 1);
  c.hdr.size = 56;  // a multiple of 8, but short of the call
  Append(&wire, c);
  wire.resize(56);
  const std::string path = TempPath("short");
  {
    nlohmann::json header = {{"format", "jdw"},   {"abi_version", JDW_ABI_VERSION}, {"ncpus", 2},
                             {"timebase", "mono_ns"}, {"syscall_names", SyscallNames()}};
    auto w = TraceWriter::Create(path, header, Compression::kNone);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->WriteRecords(0, wire.data(), wire.size(), 1).ok());
    ASSERT_TRUE((*w)->Finish({{"records", 2}}).ok());
  }
  auto r = TraceReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("size 56 invalid for type 13"), std::string::npos) << r.status().message();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace jackdaw::trace
