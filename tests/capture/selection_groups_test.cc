// A process selection holds for every probe group (issue 30, item 11): the
// net group alone follows the selected processes' TCP connections without
// the syscall group, block I/O of other processes stays out, and a
// selection that matched nothing says so.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/recording.h"
#include "support/test_support.h"
#include "trace/event_table.h"
#include "trace/trace_reader.h"

namespace jackdaw {
namespace {

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }
std::string Workload() { return testing::BinDir() + "/jackdaw-workload"; }

// Before the fix the net group learned a process's connections only from
// its syscalls: `--probes net -- CMD` recorded no packet at all.
TEST(SelectionAcrossGroups, NetAloneRecordsTheSelectedCommandsTcpPackets) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("netalone.jdw");
  auto r = testing::RunCommand({Jackdaw(), "record", "-q", "--probes", "net", "-o", path, "--", Workload(), "--tcp",
                                "200000", "100000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const uint16_t cport = report["tcp"]["client_port"], sport = report["tcp"]["server_port"];
  auto reader = trace::TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  uint64_t xmit = 0, recv = 0, others = 0;
  (*reader)->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_NET_XMIT && h.type != JDW_EVENT_NET_RECV) return;
    const auto p = trace::PayloadAs<jdw_net_packet>(h);
    const std::set<uint16_t> ports = {p.sport, p.dport};
    if (ports != std::set<uint16_t>{cport, sport}) return void(++others);
    ++(h.type == JDW_EVENT_NET_XMIT ? xmit : recv);
  });
  std::filesystem::remove(path);
  // 300 KB over loopback: well over a handful of segments each way.
  EXPECT_GE(xmit, 4u);
  EXPECT_GE(recv, 4u);
  EXPECT_EQ(others, 0u) << "packets of connections the command did not make";
  EXPECT_NE(r.err.find("UDP"), std::string::npos) << "the one limit of net alone, said: " << r.err;
}

// Before the fix the block group had no process filter: another process's
// disk I/O was recorded under any selection, and an empty selection said
// nothing.
TEST(SelectionAcrossGroups, BlockIoOfOtherProcessesIsLeftOutAndNothingMatchedIsSaid) {
  JDW_REQUIRE_ROOT();
  testing::BackgroundRecording rec({"--comm", "nosuchproc", "--duration", "30"}, "blockfilter");
  ASSERT_TRUE(rec.started()) << rec.log();
  // 1 MiB written and read back with O_DIRECT on the disk: block requests
  // issued by the workload's own thread.
  auto w = testing::RunCommand({Workload(), "--direct-io", "1048576", "--dir", "/var/tmp"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const std::string dump = rec.StopAndDump();
  EXPECT_EQ(testing::CountRecords(dump, "block_issue"), 0);
  EXPECT_EQ(testing::CountRecords(dump, "block_complete"), 0);
  EXPECT_NE(rec.log().find("nothing matched"), std::string::npos) << rec.log();
}

// The selected process's own requests are still there, issue and
// completion, whichever context the kernel completes them in.
TEST(SelectionAcrossGroups, BlockIoOfTheSelectedCommandIsKept) {
  JDW_REQUIRE_ROOT();
  testing::BackgroundRecording rec({"--probes", "block", "--comm", "jackdaw-workloa"}, "blockkept");
  ASSERT_TRUE(rec.started()) << rec.log();
  auto w = testing::RunCommand({Workload(), "--direct-io", "1048576", "--dir", "/var/tmp"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const std::string dump = rec.StopAndDump();
  EXPECT_GE(testing::CountRecords(dump, "block_issue"), 2) << "1 MiB written and read back";
  EXPECT_GE(testing::CountRecords(dump, "block_complete"), 2);
  EXPECT_EQ(rec.log().find("nothing matched"), std::string::npos) << rec.log();
}

}  // namespace
}  // namespace jackdaw
