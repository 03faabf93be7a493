// The v3 framing against byte strings written out by hand from the
// protocol's message formats.
#include "validate/pg_wire.h"

#include <gtest/gtest.h>

namespace jackdaw::validate {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s += char(c);
  return s;
}

TEST(PgWire, StartupMessageIsLengthVersionAndPairs) {
  const std::string m = PgStartupMessage("u", "d");
  const std::string want = Bytes({0, 0, 0, 27, 0, 3, 0, 0}) + std::string("user\0u\0database\0d\0\0", 19);
  EXPECT_EQ(m, want);
}

TEST(PgWire, QueryAndTerminate) {
  EXPECT_EQ(PgQueryMessage("SELECT 1"), Bytes({'Q', 0, 0, 0, 13}) + std::string("SELECT 1\0", 9));
  EXPECT_EQ(PgTerminateMessage(), Bytes({'X', 0, 0, 0, 4}));
}

TEST(PgWire, TakesWholeMessagesOnlyAndKeepsTheRest) {
  const std::string two = Bytes({'C', 0, 0, 0, 13}) + std::string("SELECT 1\0", 9) + Bytes({'Z', 0, 0, 0, 5, 'I'});
  std::string buf = two.substr(0, 7);
  PgMessage m;
  auto r = PgTakeMessage(&buf, &m);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(buf.size(), 7u);
  buf = two;
  r = PgTakeMessage(&buf, &m);
  ASSERT_TRUE(r.ok() && *r);
  EXPECT_EQ(m.type, 'C');
  EXPECT_EQ(m.body, std::string("SELECT 1\0", 9));
  r = PgTakeMessage(&buf, &m);
  ASSERT_TRUE(r.ok() && *r);
  EXPECT_EQ(m.type, 'Z');
  EXPECT_EQ(m.body, "I");
  EXPECT_TRUE(buf.empty());
}

TEST(PgWire, ABadLengthIsAnError) {
  PgMessage m;
  std::string buf = Bytes({'E', 0, 0, 0, 2, 0});
  EXPECT_FALSE(PgTakeMessage(&buf, &m).ok());
  buf = Bytes({'E', 0x7f, 0, 0, 0, 0});
  EXPECT_FALSE(PgTakeMessage(&buf, &m).ok());
}

TEST(PgWire, AccumulatesRowsTagsAndErrorsUntilReady) {
  PgResult r;
  EXPECT_FALSE(PgAccumulate({'T', "desc"}, &r));
  EXPECT_FALSE(PgAccumulate({'D', "12345"}, &r));
  EXPECT_FALSE(PgAccumulate({'D', "123"}, &r));
  EXPECT_FALSE(PgAccumulate({'C', std::string("SELECT 2\0", 9)}, &r));
  EXPECT_FALSE(PgAccumulate({'E', std::string("SERROR\0C42P01\0Mno such table\0\0", 30)}, &r));
  EXPECT_TRUE(PgAccumulate({'Z', "I"}, &r));
  EXPECT_EQ(r.rows, 2u);
  EXPECT_EQ(r.row_bytes, 8u);
  EXPECT_EQ(r.tags, std::vector<std::string>{"SELECT 2"});
  EXPECT_EQ(r.error, "no such table");
}

TEST(PgWire, StartupNeedsAuthenticationOkAndReady) {
  const PgMessage ok{'R', Bytes({0, 0, 0, 0})};
  const PgMessage ready{'Z', "I"};
  EXPECT_TRUE(PgCheckStartup({ok, {'S', std::string("a\0b\0", 4)}, ready}).ok());
  EXPECT_FALSE(PgCheckStartup({ok}).ok());
  Status md5 = PgCheckStartup({{'R', Bytes({0, 0, 0, 5, 1, 2, 3, 4})}, ready});
  EXPECT_FALSE(md5.ok());
  EXPECT_NE(md5.message().find("request 5"), std::string::npos) << md5.message();
  Status refused = PgCheckStartup({{'E', std::string("SFATAL\0Mrole \"x\" does not exist\0\0", 33)}});
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("does not exist"), std::string::npos) << refused.message();
}

}  // namespace
}  // namespace jackdaw::validate
