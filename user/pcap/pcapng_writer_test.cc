// The writer's output read back by libpcap, the reader tcpdump uses.
#include "pcap/pcapng_writer.h"

#include <pcap/pcap.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace jackdaw::pcap {
namespace {

std::string TempFile(const char* stem) {
  return ::testing::TempDir() + "/" + stem + "." + std::to_string(getpid()) + ".pcapng";
}

TEST(PcapngWriter, LibpcapReadsPacketsLengthsAndNanosecondTimes) {
  const std::string path = TempFile("w");
  {
    auto w = PcapngWriter::Create(path, "test");
    ASSERT_TRUE(w.ok()) << w.status().message();
    auto a = (*w)->AddInterface(kLinkTypeRaw, 65535, "a");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, 0u);
    // 3 bytes of data: the block must be padded to 4.
    ASSERT_TRUE((*w)->WritePacket(*a, 1'700'000'000'123'456'789ull, "abc", 1500, PcapngWriter::Dir::kOutbound).ok());
    ASSERT_TRUE((*w)->WritePacket(*a, 1'700'000'001'000'000'001ull, std::string(40, 'x'), 40,
                                  PcapngWriter::Dir::kInbound).ok());
    EXPECT_FALSE((*w)->WritePacket(7, 0, "x", 1, PcapngWriter::Dir::kUnknown).ok());
    ASSERT_TRUE((*w)->Close().ok());
    EXPECT_EQ((*w)->packets_written(), 2u);
  }
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  ASSERT_NE(p, nullptr) << err;
  EXPECT_EQ(pcap_datalink(p), DLT_RAW);
  struct Seen {
    uint32_t caplen, len;
    long sec, nsec;
    std::string data;
  };
  std::vector<Seen> seen;
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1)
    seen.push_back({h->caplen, h->len, h->ts.tv_sec, h->ts.tv_usec, std::string(reinterpret_cast<const char*>(d), h->caplen)});
  pcap_close(p);
  unlink(path.c_str());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].caplen, 3u);
  EXPECT_EQ(seen[0].len, 1500u);
  EXPECT_EQ(seen[0].data, "abc");
  EXPECT_EQ(seen[0].sec, 1'700'000'000);
  EXPECT_EQ(seen[0].nsec, 123'456'789);
  EXPECT_EQ(seen[1].caplen, 40u);
  EXPECT_EQ(seen[1].len, 40u);
  EXPECT_EQ(seen[1].nsec, 1);
}

TEST(PcapngWriter, UnwritablePathIsOneClearError) {
  auto w = PcapngWriter::Create("/nonexistent-dir/x.pcapng", "test");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("cannot create /nonexistent-dir/x.pcapng: No such file or directory"), std::string::npos);
}

}  // namespace
}  // namespace jackdaw::pcap
