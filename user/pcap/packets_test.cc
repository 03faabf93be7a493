#include "pcap/packets.h"

#include <arpa/inet.h>

#include <cstring>

#include <gtest/gtest.h>

namespace jackdaw::pcap {
namespace {

uint16_t Get16(const std::string& s, size_t at) {
  return static_cast<uint16_t>((static_cast<uint8_t>(s[at]) << 8) | static_cast<uint8_t>(s[at + 1]));
}
uint32_t Get32(const std::string& s, size_t at) { return (uint32_t{Get16(s, at)} << 16) | Get16(s, at + 2); }

jdw_net_packet Tcp4() {
  jdw_net_packet p{};
  p.family = 2;
  p.protocol = 6;
  p.sport = 45678;
  p.dport = 8080;
  p.seq = 0xdeadbeef;
  p.ack = 17;
  p.tcp_flags = 0x18;  // PSH|ACK
  p.payload_len = 1000;
  inet_pton(AF_INET, "10.1.2.3", p.saddr);
  inet_pton(AF_INET, "10.4.5.6", p.daddr);
  return p;
}

TEST(SynthesizeHeaders, Ipv4TcpCarriesTheRecordedFields) {
  uint32_t ip_len = 0;
  const std::string s = SynthesizeHeaders(Tcp4(), &ip_len);
  ASSERT_EQ(s.size(), 40u);
  EXPECT_EQ(ip_len, 1040u);
  EXPECT_EQ(static_cast<uint8_t>(s[0]), 0x45);
  EXPECT_EQ(Get16(s, 2), 1040);
  EXPECT_EQ(s[9], 6);
  EXPECT_EQ(memcmp(&s[12], Tcp4().saddr, 4), 0);
  EXPECT_EQ(memcmp(&s[16], Tcp4().daddr, 4), 0);
  // The header checksum verifies: the one's-complement sum over it is 0xffff.
  uint32_t sum = 0;
  for (size_t i = 0; i < 20; i += 2) sum += Get16(s, i);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  EXPECT_EQ(sum, 0xffffu);
  EXPECT_EQ(Get16(s, 20), 45678);
  EXPECT_EQ(Get16(s, 22), 8080);
  EXPECT_EQ(Get32(s, 24), 0xdeadbeefu);
  EXPECT_EQ(Get32(s, 28), 17u);
  EXPECT_EQ(static_cast<uint8_t>(s[32]) >> 4, 5);
  EXPECT_EQ(s[33], 0x18);
}

TEST(SynthesizeHeaders, Ipv6UdpAndOtherTransports) {
  jdw_net_packet p{};
  p.family = 10;
  p.protocol = 17;
  p.sport = 53;
  p.dport = 5353;
  p.payload_len = 100;
  inet_pton(AF_INET6, "fe80::1", p.saddr);
  uint32_t ip_len = 0;
  std::string s = SynthesizeHeaders(p, &ip_len);
  ASSERT_EQ(s.size(), 48u);
  EXPECT_EQ(ip_len, 148u);
  EXPECT_EQ(static_cast<uint8_t>(s[0]) >> 4, 6);
  EXPECT_EQ(Get16(s, 4), 108);  // IPv6 payload length: UDP header + data
  EXPECT_EQ(Get16(s, 44), 108);
  p.protocol = 1;  // ICMP: no transport header is invented
  s = SynthesizeHeaders(p, &ip_len);
  EXPECT_EQ(s.size(), 40u);
  EXPECT_EQ(ip_len, 40u);
}

TEST(FormatAddr, MatchesTheJoinsEndpointSpelling) {
  const jdw_net_packet p = Tcp4();
  EXPECT_EQ(FormatAddr(p.family, p.saddr, p.sport), "10.1.2.3:45678");
  uint8_t v6[16] = {};
  v6[15] = 1;
  EXPECT_EQ(FormatAddr(10, v6, 80), "[::1]:80");
}

}  // namespace
}  // namespace jackdaw::pcap
