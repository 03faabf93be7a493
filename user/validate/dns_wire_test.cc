#include "validate/dns_wire.h"

#include <gtest/gtest.h>

namespace jackdaw::validate {
namespace {

TEST(DnsWire, AQueryIsItsHeaderThenLabelsTypeAndClass) {
  const std::string q = DnsQuery(0x1234, "a.jdw.test", kDnsTypeTxt);
  const std::string want("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
                         "\x01" "a" "\x03" "jdw" "\x04" "test" "\x00"
                         "\x00\x10\x00\x01",
                         12 + 12 + 4);
  EXPECT_EQ(q, want);
}

TEST(DnsWire, AnAnswersHeadIsRead) {
  std::string a = DnsQuery(7, "x.jdw.test", kDnsTypeA);
  a[2] = static_cast<char>(0x81);  // response, recursion desired
  a[3] = static_cast<char>(0x83);  // recursion available, NXDOMAIN
  a[7] = 2;
  auto h = ParseDnsAnswerHead(a);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->id, 7u);
  EXPECT_EQ(h->rcode, 3u);
  EXPECT_EQ(h->answers, 2u);
  EXPECT_FALSE(ParseDnsAnswerHead(DnsQuery(7, "x.jdw.test", kDnsTypeA)).ok()) << "a query is no answer";
  EXPECT_FALSE(ParseDnsAnswerHead("short").ok());
}

}  // namespace
}  // namespace jackdaw::validate
