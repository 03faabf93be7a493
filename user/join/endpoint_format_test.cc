#include "join/endpoint_format.h"

#include <gtest/gtest.h>

namespace jackdaw::join {
namespace {

struct Addr {
  uint8_t b[16] = {};
};
Addr V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  Addr x;
  x.b[0] = a, x.b[1] = b, x.b[2] = c, x.b[3] = d;
  return x;
}
Addr Mapped(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  Addr x;
  x.b[10] = x.b[11] = 0xff;
  x.b[12] = a, x.b[13] = b, x.b[14] = c, x.b[15] = d;
  return x;
}

TEST(EndpointFormat, FormatsIpv4Ipv6AndMappedAddresses) {
  EXPECT_EQ(FormatAddr(kAfInet, V4(10, 0, 200, 1).b, 80), "10.0.200.1:80");
  EXPECT_EQ(FormatAddr(kAfInet, V4(0, 0, 0, 0).b, 0), "0.0.0.0:0");
  EXPECT_EQ(FormatAddr(kAfInet, V4(255, 255, 255, 255).b, 65535), "255.255.255.255:65535");
  EXPECT_EQ(FormatAddr(kAfInet6, Mapped(127, 0, 0, 1).b, 8080), "127.0.0.1:8080");
  Addr v6;
  v6.b[0] = 0x20, v6.b[1] = 0x01, v6.b[2] = 0x0d, v6.b[3] = 0xb8, v6.b[15] = 1;
  EXPECT_EQ(FormatAddr(kAfInet6, v6.b, 443), "[2001:db8:0:0:0:0:0:1]:443");
}

TEST(EndpointFormat, MappedAndPlainIpv4AreOneConnection) {
  const Addr l = V4(127, 0, 0, 1), r = V4(127, 0, 0, 2);
  const Addr ml = Mapped(127, 0, 0, 1), mr = Mapped(127, 0, 0, 2);
  EXPECT_TRUE(IsV4Mapped(ml.b));
  EXPECT_FALSE(IsV4Mapped(l.b));
  EXPECT_EQ(ConnKey(kAfInet, l.b, 80, r.b, 5000), ConnKey(kAfInet6, ml.b, 80, mr.b, 5000));
  // Either end, either port differing is another connection; so is the
  // reversed pair (the key is from the local end).
  EXPECT_NE(ConnKey(kAfInet, l.b, 80, r.b, 5000), ConnKey(kAfInet, l.b, 80, r.b, 5001));
  EXPECT_NE(ConnKey(kAfInet, l.b, 80, r.b, 5000), ConnKey(kAfInet, l.b, 81, r.b, 5000));
  EXPECT_NE(ConnKey(kAfInet, l.b, 80, r.b, 5000), ConnKey(kAfInet, r.b, 80, r.b, 5000));
  EXPECT_NE(ConnKey(kAfInet, l.b, 80, r.b, 5000), ConnKey(kAfInet, r.b, 5000, l.b, 80));
}

}  // namespace
}  // namespace jackdaw::join
