// jackdaw export --pcap, read back by tshark (Wireshark's reader), on a real
// recording of the test server on loopback.
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "pcap/packets.h"
#include "pcap/two_host.h"
#include "support/test_support.h"
#include "trace/trace_reader.h"

namespace jackdaw {
namespace {

using testing::RunCommand;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string f;
  while (std::getline(in, f, sep)) out.push_back(f);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

TEST(PcapExport, TsharkReadsEveryPacketWithItsLengthsAndSequenceNumbers) {
  JDW_REQUIRE_ROOT();
  if (access("/usr/bin/tshark", X_OK) != 0) {
    if (testing::InCi()) FAIL() << "tshark missing: scripts/install-deps.sh installs it";
    GTEST_SKIP() << "tshark missing (run scripts/install-deps.sh)";
  }
  const std::string trace = testing::TempPath("export.jdw");
  const std::string out = testing::TempPath("export.pcapng");
  int port = 0;
  {
    testing::RecordedServer server(trace, {testing::BinDir() + "/jackdaw-testserver", "--port", "0"});
    ASSERT_TRUE(server.ok()) << "the test server did not start under jackdaw record";
    port = server.port();
    auto load = RunCommand({testing::BinDir() + "/jackdaw-load", "--url", "http://127.0.0.1:" + std::to_string(port),
                            "-n", "10", "--mix", "C:1,D:1"});
    ASSERT_EQ(load.exit_code, 0) << load.err;
    ASSERT_EQ(server.Stop(), 0);
  }
  auto ex = RunCommand({testing::BinDir() + "/jackdaw", "export", trace, "--pcap", out});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;

  auto reader = trace::TraceReader::Open(trace);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const std::vector<pcap::Packet> packets = pcap::ReadPackets(**reader);
  ASSERT_GT(packets.size(), 20u);

  auto ts = RunCommand({"/usr/bin/tshark", "-r", out, "-n", "-T", "fields", "-E", "separator=,", "-e", "frame.len",
                        "-e", "frame.cap_len", "-e", "tcp.srcport", "-e", "tcp.len", "-e", "tcp.seq_raw"});
  ASSERT_EQ(ts.exit_code, 0) << ts.err;
  const std::vector<std::string> lines = Split(ts.out.substr(0, ts.out.size() - 1), '\n');
  ASSERT_EQ(lines.size(), packets.size()) << "tshark must see one frame per packet record";
  uint64_t served = 0;
  for (size_t i = 0; i < packets.size(); ++i) {
    const jdw_net_packet& p = packets[i].net;
    uint32_t ip_len = 0;
    const std::string hdr = pcap::SynthesizeHeaders(p, &ip_len);
    const std::vector<std::string> f = Split(lines[i], ',');
    ASSERT_EQ(f.size(), 5u) << lines[i];
    EXPECT_EQ(f[0], std::to_string(ip_len)) << "frame " << i + 1;
    EXPECT_EQ(f[1], std::to_string(hdr.size())) << "frame " << i + 1;
    if (p.protocol != 6) continue;
    EXPECT_EQ(f[2], std::to_string(p.sport)) << "frame " << i + 1;
    EXPECT_EQ(f[3], std::to_string(p.payload_len)) << "frame " << i + 1;
    EXPECT_EQ(f[4], std::to_string(p.seq)) << "frame " << i + 1;
    if (p.sport == port) served += p.payload_len;
  }
  // Five 12 KB and five 5 KB bodies left the server. The recording follows
  // the server process only, so the net group keeps the packets of its
  // sockets: each body is seen once, leaving the server. Its arrival at the
  // untraced client's socket on loopback is the client's packet and is left
  // out (a recording without a process filter would show both).
  const uint64_t bodies = 5 * 12288 + 5 * 5120;
  EXPECT_GE(served, bodies);
  EXPECT_LT(served, 2 * bodies) << "the client's copies of the server's packets were recorded too";
  std::filesystem::remove(trace);
  std::filesystem::remove(out);
}

TEST(PcapExport, TraceWithoutPacketsIsOneClearError) {
  JDW_REQUIRE_ROOT();
  const std::string trace = testing::TempPath("nonet.jdw");
  auto rec = RunCommand({testing::BinDir() + "/jackdaw", "record", "-q", "--probes", "sched", "-o", trace, "--",
                         testing::BinDir() + "/jackdaw-workload", "--getppid", "10"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  auto ex = RunCommand({testing::BinDir() + "/jackdaw", "export", trace, "--pcap", trace + ".pcapng"});
  EXPECT_EQ(ex.exit_code, 1);
  EXPECT_NE(ex.err.find("holds no packet records"), std::string::npos) << ex.err;
  std::filesystem::remove(trace);
  std::filesystem::remove(trace + ".pcapng");
}

}  // namespace
}  // namespace jackdaw
