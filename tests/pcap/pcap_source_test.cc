// libpcap as a packet source: packets captured beside the probes (record
// --pcap-iface) and captured elsewhere (analyze --pcap-input) join requests
// through their connections, like the net probes' packets.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pcap/two_host.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

using testing::RunCommand;

struct NetTotals {
  size_t requests = 0;
  size_t with_packets = 0;  // requests with bytes both ways
  uint64_t bytes_out = 0;
};

NetTotals Analyze(const std::string& trace, const std::vector<std::string>& extra) {
  const std::string reqs = trace + ".requests.jsonl";
  std::vector<std::string> argv = {testing::BinDir() + "/jackdaw", "analyze", trace, "--schema", "testserver", "-q",
                                   "--requests", reqs};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  NetTotals t;
  std::ifstream in(reqs);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    t.requests++;
    const uint64_t in_b = j["totals"].value("net_bytes_in", uint64_t{0});
    const uint64_t out_b = j["totals"].value("net_bytes_out", uint64_t{0});
    t.bytes_out += out_b;
    if (in_b > 0 && out_b > 0) t.with_packets++;
  }
  std::filesystem::remove(reqs);
  return t;
}

TEST(PcapSource, RecordPcapPacketsJoinRequestsThroughTheirConnections) {
  JDW_REQUIRE_ROOT();
  const std::string trace = testing::TempPath("pcaprec.jdw");
  {
    // No net probes: every packet in the trace comes from libpcap.
    testing::RecordedServer s(trace, {testing::BinDir() + "/jackdaw-testserver", "--port", "0"},
                              {"--probes", "sched,syscall", "--pcap-iface", "lo"});
    ASSERT_TRUE(s.ok());
    auto load = RunCommand({testing::BinDir() + "/jackdaw-load", "--url",
                            "http://127.0.0.1:" + std::to_string(s.port()), "-n", "10", "--mix", "D"});
    ASSERT_EQ(load.exit_code, 0) << load.err;
    ASSERT_EQ(s.Stop(), 0);
  }
  const NetTotals t = Analyze(trace, {});
  EXPECT_GE(t.requests, 10u);
  EXPECT_GE(t.with_packets, 10u) << "each request's request and response packets join it";
  EXPECT_GE(t.bytes_out, 10u * 5120) << "the 5 KB bodies are charged to the requests";
  std::filesystem::remove(trace);
}

TEST(PcapSource, AnalyzeMergesACaptureTakenElsewhere) {
  JDW_REQUIRE_ROOT();
  if (access("/usr/bin/dumpcap", X_OK) != 0) {
    if (testing::InCi()) FAIL() << "dumpcap (wireshark-common) missing: scripts/install-deps.sh installs tshark";
    GTEST_SKIP() << "dumpcap missing";
  }
  const std::string trace = testing::TempPath("nonet.jdw");
  const std::string cap = testing::TempPath("lo.pcapng");
  {
    testing::RecordedServer s(trace, {testing::BinDir() + "/jackdaw-testserver", "--port", "0"},
                              {"--probes", "sched,syscall"});
    ASSERT_TRUE(s.ok());
    // A capture by another tool (Wireshark's dumpcap), of this server's port only.
    pid_t dumpcap = fork();
    if (dumpcap == 0) {
      execl("/usr/bin/dumpcap", "dumpcap", "-q", "-i", "lo", "-f", ("tcp port " + std::to_string(s.port())).c_str(),
            "-w", cap.c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 100 && !(std::filesystem::exists(cap) && std::filesystem::file_size(cap) > 0); ++i)
      usleep(100'000);
    usleep(500'000);  // the filter is attached once the file has its header
    auto load = RunCommand({testing::BinDir() + "/jackdaw-load", "--url",
                            "http://127.0.0.1:" + std::to_string(s.port()), "-n", "10", "--mix", "D"});
    usleep(300'000);
    kill(dumpcap, SIGINT);
    int st = 0;
    waitpid(dumpcap, &st, 0);
    ASSERT_EQ(load.exit_code, 0) << load.err;
    ASSERT_EQ(s.Stop(), 0);
  }
  const NetTotals without = Analyze(trace, {});
  EXPECT_EQ(without.bytes_out, 0u) << "the trace itself has no packets";
  const NetTotals with = Analyze(trace, {"--pcap-input", cap});
  EXPECT_EQ(with.requests, without.requests);
  EXPECT_GE(with.with_packets, 10u);
  EXPECT_GE(with.bytes_out, 10u * 5120);
  auto bad = RunCommand({testing::BinDir() + "/jackdaw", "analyze", trace, "--schema", "testserver", "-q",
                         "--pcap-input", trace});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--pcap-input " + trace), std::string::npos) << bad.err;
  std::filesystem::remove(trace);
  std::filesystem::remove(cap);
}

}  // namespace
}  // namespace jackdaw
