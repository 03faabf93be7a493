#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "trace/event_table.h"
#include "trace/loss_intervals_json.h"
#include "trace/syscall_names.h"
#include "trace/trace_format.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace jackdaw::trace {
namespace {

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("jdw_trace_test_") + std::to_string(getpid()) + "_" + name))
      .string();
}

nlohmann::json TestHeader() {
  return {{"format", "jdw"}, {"abi_version", JDW_ABI_VERSION}, {"ncpus", 2},
          {"host", "h"},     {"kernel", "k"},                  {"timebase", "mono_ns"},
          {"syscall_names", SyscallNames()},
          {"clock", {{"method", "tsc-fit"}, {"tsc_per_ns", 2.5}, {"ref_mono_ns", 1000}, {"ref_tsc", 5000}}}};
}

std::vector<uint8_t> MakeSyscalls(uint32_t cpu, uint64_t t0, int n) {
  std::vector<uint8_t> buf;
  for (int i = 0; i < n; ++i) {
    jdw_sys_enter_record r{};
    r.hdr.ts = t0 + i * 10;
    r.hdr.type = JDW_EVENT_SYS_ENTER;
    r.hdr.size = sizeof(r);
    r.hdr.cpu = cpu;
    r.hdr.tgid = 42;
    r.hdr.tid = 43;
    r.body.nr = 110;  // getppid
    r.body.fd = -1;
    const auto* p = reinterpret_cast<const uint8_t*>(&r);
    buf.insert(buf.end(), p, p + sizeof(r));
  }
  return buf;
}

std::string WriteSample(const char* name) {
  const std::string path = TempPath(name);
  auto w = TraceWriter::Create(path, TestHeader());
  EXPECT_TRUE(w.ok()) << w.status().message();
  auto c0 = MakeSyscalls(0, 100, 50);
  auto c1 = MakeSyscalls(1, 105, 30);
  EXPECT_TRUE((*w)->WriteRecords(0, c0.data(), c0.size(), 50).ok());
  EXPECT_TRUE((*w)->WriteMeta({{"tasks", {{"43", {{"tgid", 42}, {"comm", "worker"}}}}}}).ok());
  EXPECT_TRUE((*w)->WriteRecords(1, c1.data(), c1.size(), 30).ok());
  nlohmann::json lost = nlohmann::json::array({{0, 3, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0}});
  EXPECT_TRUE((*w)->Finish({{"records", 80}, {"lost", lost}}).ok());
  return path;
}

TEST(TraceFile, RoundTripKeepsRecordsMetadataAndLosses) {
  const std::string path = WriteSample("roundtrip");
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TraceMeta& m = (*r)->meta();
  EXPECT_TRUE(m.complete);
  EXPECT_EQ(m.ncpus, 2u);
  EXPECT_EQ(m.records_written, 80u);
  EXPECT_EQ(m.losses.lost[0][JDW_GROUP_SYSCALL], 3u);
  EXPECT_EQ(m.losses.total(), 3u);
  EXPECT_EQ(m.tasks.at(43).comm, "worker");
  EXPECT_EQ(m.syscall_names.at(110), "getppid");
  EXPECT_DOUBLE_EQ(m.time.clock.tsc_per_ns, 2.5);
  EXPECT_EQ(m.time.ToTsc(1000 + 400), 5000u + 1000u);
  ASSERT_EQ((*r)->chunks().size(), 2u);
  uint64_t n = 0, last_ts_cpu0 = 0;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    ++n;
    EXPECT_EQ(h.type, JDW_EVENT_SYS_ENTER);
    if (h.cpu == 0) {
      EXPECT_GE(h.ts, last_ts_cpu0);
      last_ts_cpu0 = h.ts;
    }
  });
  EXPECT_EQ(n, 80u);
  std::filesystem::remove(path);
}

// Loss intervals ride in metadata chunks and the footer, each written once:
// the reader appends them. A trace written before them (WriteSample) reads
// as before, with none, and says it did not locate its losses.
TEST(TraceFile, LossIntervalsAddUpAcrossChunksAndOldTracesHaveNone) {
  const std::string old_path = WriteSample("no_intervals");
  auto old = TraceReader::Open(old_path);
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE((*old)->meta().loss_intervals.empty());
  EXPECT_FALSE((*old)->meta().losses_located);
  EXPECT_EQ((*old)->meta().losses.total(), 3u);
  std::filesystem::remove(old_path);

  const std::string path = TempPath("intervals");
  nlohmann::json header = TestHeader();
  header["loss_intervals_version"] = kLossIntervalsVersion;
  auto w = TraceWriter::Create(path, header);
  ASSERT_TRUE(w.ok()) << w.status().message();
  auto c0 = MakeSyscalls(0, 100, 5);
  EXPECT_TRUE((*w)->WriteRecords(0, c0.data(), c0.size(), 5).ok());
  EXPECT_TRUE((*w)->WriteMeta({{"loss_intervals", LossIntervalsJson({{0, JDW_GROUP_SCHED, 100, 140, 7}})}}).ok());
  EXPECT_TRUE((*w)->Finish({{"records", 5}, {"loss_intervals", LossIntervalsJson({{1, JDW_GROUP_NET, 150, 160, 2}})}})
                  .ok());
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TraceMeta& m = (*r)->meta();
  EXPECT_TRUE(m.losses_located);
  ASSERT_EQ(m.loss_intervals.size(), 2u);
  EXPECT_EQ(m.loss_intervals[0].group, uint32_t{JDW_GROUP_SCHED});
  EXPECT_EQ(m.loss_intervals[0].to_ns, 140u);
  EXPECT_EQ(m.loss_intervals[0].lost, 7u);
  EXPECT_EQ(m.loss_intervals[1].cpu, 1u);
  std::filesystem::remove(path);
}

TEST(TraceFile, TruncationIsReportedWithOffsetAndSalvageable) {
  const std::string path = WriteSample("trunc");
  const auto full = std::filesystem::file_size(path);
  for (uint64_t cut : {uint64_t{0}, uint64_t{10}, uint64_t{40}, full / 2, full - 3}) {
    std::filesystem::copy_file(path, path + ".cut", std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(path + ".cut", cut);
    auto r = TraceReader::Open(path + ".cut");
    ASSERT_FALSE(r.ok()) << "cut at " << cut;
    EXPECT_NE(r.status().message().find("byte offset"), std::string::npos) << r.status().message();
  }
  // Salvage: the first records chunk survives a cut in the middle.
  std::filesystem::copy_file(path, path + ".cut", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(path + ".cut", full - 3);
  auto r = TraceReader::Open(path + ".cut", {.allow_truncated = true});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE((*r)->damage().ok());
  EXPECT_FALSE((*r)->meta().complete);
  EXPECT_EQ((*r)->chunks().size(), 2u);  // only the footer was cut
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".cut");
}

TEST(TraceFile, CorruptionIsDetectedByChecksum) {
  const std::string path = WriteSample("corrupt");
  auto r0 = TraceReader::Open(path);
  ASSERT_TRUE(r0.ok());
  const uint64_t victim = (*r0)->chunks()[0].file_offset + 30;  // inside the first record payload
  r0 = Status::Error("closed");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(victim);
    char c = 0x5a;
    f.write(&c, 1);
  }
  auto r = TraceReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("checksum mismatch"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("byte offset"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(TraceFile, NotATraceIsRejected) {
  const std::string path = TempPath("garbage");
  std::ofstream(path) << "this is not a trace file at all, just some text....";
  auto r = TraceReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a jackdaw trace"), std::string::npos);
  std::filesystem::remove(path);
  auto missing = TraceReader::Open(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
}

TEST(EventTable, GeneratedFromAbi) {
  const EventDesc* sw = FindEvent("sched_switch");
  ASSERT_NE(sw, nullptr);
  EXPECT_EQ(sw->id, JDW_EVENT_SCHED_SWITCH);
  EXPECT_EQ(sw->payload_size, sizeof(jdw_sched_switch));
  const FieldDesc* next = sw->FindField("next_tid");
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->offset, offsetof(jdw_sched_switch, next_tid));
  jdw_sys_exit_record r{};
  r.hdr.type = JDW_EVENT_SYS_EXIT;
  r.body.ret = -11;
  const FieldDesc* ret = FindEvent(JDW_EVENT_SYS_EXIT)->FindField("ret");
  EXPECT_EQ(static_cast<int64_t>(ReadScalar(r.hdr, *ret)), -11);
  EXPECT_EQ(FindEvent("net_recv")->payload_size, FindEvent("net_xmit")->payload_size);
  uint32_t g;
  EXPECT_TRUE(ParseGroup("block", &g));
  EXPECT_EQ(g, static_cast<uint32_t>(JDW_GROUP_BLOCK));
  EXPECT_FALSE(ParseGroup("disk", &g));
  EXPECT_EQ(SyscallNumber("getppid"), 110);
}

}  // namespace
}  // namespace jackdaw::trace
