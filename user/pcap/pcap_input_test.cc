// libpcap input: frames parsed into net records, a pcap file read onto a
// trace's clock, directions taken from the trace's sockets.
#include "pcap/pcap_input.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "pcap/packets.h"
#include "trace/trace_writer.h"

namespace jackdaw::pcap {
namespace {

std::string Temp(const char* stem) {
  return ::testing::TempDir() + "/jdw_pcap_input_" + std::to_string(getpid()) + "_" + stem;
}

// Ethernet + IPv4 (20) + TCP (32: timestamps option) + `payload` bytes.
std::string EthTcp(const char* src, uint16_t sport, const char* dst, uint16_t dport, uint32_t seq,
                   uint32_t payload) {
  std::string f(14 + 20 + 32 + payload, '\0');
  f[12] = 0x08;  // IPv4
  uint8_t* ip = reinterpret_cast<uint8_t*>(&f[14]);
  ip[0] = 0x45;
  const uint16_t tot = static_cast<uint16_t>(20 + 32 + payload);
  ip[2] = tot >> 8, ip[3] = tot & 0xff;
  ip[9] = 6;
  inet_pton(AF_INET, src, ip + 12);
  inet_pton(AF_INET, dst, ip + 16);
  uint8_t* tcp = ip + 20;
  tcp[0] = sport >> 8, tcp[1] = sport & 0xff, tcp[2] = dport >> 8, tcp[3] = dport & 0xff;
  tcp[4] = seq >> 24, tcp[5] = (seq >> 16) & 0xff, tcp[6] = (seq >> 8) & 0xff, tcp[7] = seq & 0xff;
  tcp[12] = 8 << 4;  // 32-byte header
  tcp[13] = 0x18;
  return f;
}

TEST(ParseFrame, EthernetIpv4TcpWithOptions) {
  const std::string f = EthTcp("10.0.0.1", 1234, "10.0.0.2", 80, 77, 500);
  auto p = ParseFrame(DLT_EN10MB, reinterpret_cast<const uint8_t*>(f.data()), 14 + 20 + 32, f.size());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->outgoing, -1);
  EXPECT_EQ(p->net.family, 2);
  EXPECT_EQ(p->net.protocol, 6);
  EXPECT_EQ(p->net.sport, 1234);
  EXPECT_EQ(p->net.dport, 80);
  EXPECT_EQ(p->net.seq, 77u);
  EXPECT_EQ(p->net.tcp_flags, 0x18);
  EXPECT_EQ(p->net.payload_len, 500u) << "payload from the IP length, though the capture was cut at the headers";
  EXPECT_EQ(p->net.len, f.size());
  const uint8_t arp[42] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x06};
  EXPECT_FALSE(ParseFrame(DLT_EN10MB, arp, sizeof(arp), sizeof(arp)).has_value());
  EXPECT_FALSE(ParseFrame(DLT_EN10MB, reinterpret_cast<const uint8_t*>(f.data()), 20, f.size()).has_value());
}

TEST(ParseFrame, CookedHeaderGivesDirectionAndIfindex) {
  const std::string eth = EthTcp("10.0.0.1", 1234, "10.0.0.2", 80, 1, 10);
  std::string sll2(20, '\0');
  sll2[0] = 0x08;          // protocol IPv4
  sll2[7] = 3;             // ifindex 3
  sll2[10] = 4;            // PACKET_OUTGOING
  sll2 += eth.substr(14);  // the IP packet
  auto p = ParseFrame(DLT_LINUX_SLL2, reinterpret_cast<const uint8_t*>(sll2.data()), sll2.size(), sll2.size());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->outgoing, 1);
  EXPECT_EQ(p->net.ifindex, 3u);
  EXPECT_EQ(p->net.payload_len, 10u);
  sll2[10] = 0;  // PACKET_HOST
  p = ParseFrame(DLT_LINUX_SLL2, reinterpret_cast<const uint8_t*>(sll2.data()), sll2.size(), sll2.size());
  EXPECT_EQ(p->outgoing, 0);
}

TEST(ReadPcapFile, OntoTheTracesClockWithDirectionsFromItsSockets) {
  // A trace whose machine has a socket 10.0.0.2:80 <- 10.0.0.1:1234, and
  // whose wall clock is 1e18 ns ahead of its monotonic clock.
  const std::string trace_path = Temp("t.jdw");
  {
    nlohmann::json header = {{"format", "jdw"},   {"abi_version", JDW_ABI_VERSION}, {"ncpus", 1},
                             {"host", "h"},       {"kernel", "k"},                  {"timebase", "mono_ns"},
                             {"clock", {{"method", "perf-mmap"}, {"tsc_per_ns", 1.0}, {"wall_minus_mono_ns", int64_t{1'000'000'000'000'000'000}}}}};
    auto w = trace::TraceWriter::Create(trace_path, header);
    ASSERT_TRUE(w.ok()) << w.status().message();
    jdw_sock_info_record s{};
    s.hdr.ts = 5;
    s.hdr.type = JDW_EVENT_SOCK_INFO;
    s.hdr.size = sizeof(s);
    s.body.family = 2;
    s.body.protocol = 6;
    s.body.sport = 80;
    s.body.dport = 1234;
    inet_pton(AF_INET, "10.0.0.2", s.body.saddr);
    inet_pton(AF_INET, "10.0.0.1", s.body.daddr);
    ASSERT_TRUE((*w)->WriteRecords(0, reinterpret_cast<const uint8_t*>(&s), sizeof(s), 1).ok());
    ASSERT_TRUE((*w)->Finish(nlohmann::json::object()).ok());
  }
  auto reader = trace::TraceReader::Open(trace_path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  ASSERT_EQ((*reader)->meta().time.clock.wall_minus_mono_ns, int64_t{1'000'000'000'000'000'000});

  // The other machine's capture: its wall clock is 2 ms ahead of ours.
  const std::string pcap_path = Temp("x.pcap");
  {
    pcap_t* dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
    pcap_dumper_t* d = pcap_dump_open(dead, pcap_path.c_str());
    ASSERT_NE(d, nullptr) << pcap_geterr(dead);
    auto dump = [&](const std::string& f, uint64_t wall_ns) {
      pcap_pkthdr h{};
      h.ts.tv_sec = static_cast<time_t>(wall_ns / 1'000'000'000);
      h.ts.tv_usec = static_cast<suseconds_t>(wall_ns % 1'000'000'000);  // ns with nano precision
      h.caplen = h.len = static_cast<uint32_t>(f.size());
      pcap_dump(reinterpret_cast<u_char*>(d), &h, reinterpret_cast<const u_char*>(f.data()));
    };
    const uint64_t base = 1'000'000'000'000'000'000ull + 2'000'000;
    dump(EthTcp("10.0.0.1", 1234, "10.0.0.2", 80, 1, 100), base + 7'000);    // to us: received
    dump(EthTcp("10.0.0.2", 80, "10.0.0.1", 1234, 9, 2000), base + 9'000);   // from us: sent
    pcap_dump_close(d);
    pcap_close(dead);
  }
  PcapFileStats st;
  auto recs = ReadPcapFile(pcap_path, **reader, 2'000'000, &st);
  ASSERT_TRUE(recs.ok()) << recs.status().message();
  ASSERT_EQ(recs->size(), 2u);
  EXPECT_EQ(st.frames, 2u);
  EXPECT_EQ((*recs)[0].hdr.type, JDW_EVENT_NET_RECV);
  EXPECT_EQ((*recs)[0].hdr.ts, 7'000u);
  EXPECT_EQ((*recs)[0].hdr.size, sizeof(jdw_net_packet_record));
  EXPECT_EQ((*recs)[0].body.payload_len, 100u);
  EXPECT_EQ((*recs)[1].hdr.type, JDW_EVENT_NET_XMIT);
  EXPECT_EQ((*recs)[1].hdr.ts, 9'000u);
  EXPECT_EQ((*recs)[1].body.seq, 9u);

  auto bad = ReadPcapFile(trace_path, **reader, 0, nullptr);  // not a capture
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--pcap-input " + trace_path), std::string::npos);
  std::filesystem::remove(trace_path);
  std::filesystem::remove(pcap_path);
}

TEST(LiveCapture, UnknownInterfaceIsOneClearError) {
  auto c = LiveCapture::Open("jdw-no-such-if0");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("--pcap-iface jdw-no-such-if0"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace jackdaw::pcap
