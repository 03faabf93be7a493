#include "validate/mysql_wire.h"

#include <gtest/gtest.h>

namespace jackdaw::validate {
namespace {

MyPacket Packet(const std::string& body, uint8_t seq = 1) { return MyPacket{seq, body}; }

TEST(MysqlWire, FramesAndTakesPacketsAcrossPartialReads) {
  std::string stream = MyQueryPacket("SELECT 1") + MyQuitPacket();
  EXPECT_EQ(stream.substr(0, 5), std::string("\x09\x00\x00\x00\x03", 5));
  std::string buf = stream.substr(0, 6);
  MyPacket p;
  auto r = MyTakePacket(&buf, &p);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);  // half a packet stays
  buf += stream.substr(6);
  ASSERT_TRUE(*MyTakePacket(&buf, &p));
  EXPECT_EQ(p.body, "\x03SELECT 1");
  ASSERT_TRUE(*MyTakePacket(&buf, &p));
  EXPECT_EQ(p.body, "\x01");
  EXPECT_TRUE(buf.empty());
}

TEST(MysqlWire, LoginPacketIsProtocol41WithTheUserAndNoPassword) {
  const std::string l = MyLoginPacket("jdw");
  ASSERT_EQ(l.size(), 4u + 32 + 4 + 1);
  EXPECT_EQ(uint8_t(l[3]), 1u);  // answers the greeting (sequence 0)
  EXPECT_TRUE(uint8_t(l[5]) & 0x02);  // CLIENT_PROTOCOL_41 (0x200), second byte
  EXPECT_EQ(l.substr(4 + 32, 4), std::string("jdw\0", 4));
  EXPECT_EQ(l.back(), '\0');
}

TEST(MysqlWire, GreetingAndLoginReplies) {
  EXPECT_TRUE(MyCheckGreeting(Packet("\x0a" "10.11.19-MariaDB", 0)).ok());
  EXPECT_FALSE(MyCheckGreeting(Packet("\x09" "old", 0)).ok());
  Status too_many = MyCheckGreeting(Packet(std::string("\xff\x10\x04", 3) + "Too many connections", 0));
  EXPECT_NE(too_many.message().find("Too many connections"), std::string::npos) << too_many.message();
  EXPECT_TRUE(MyCheckLoginReply(Packet(std::string("\x00\x00\x00\x02\x00\x00\x00", 7), 2)).ok());
  Status pw = MyCheckLoginReply(Packet("\xfe" "mysql_native_password", 2));
  EXPECT_NE(pw.message().find("--skip-grant-tables"), std::string::npos) << pw.message();
}

TEST(MysqlWire, OkReplyCountsAffectedRows) {
  MyReplyReader r;
  // OK: 0x00, affected rows 500 (0xfc + 2 bytes), last insert id, status, warnings.
  EXPECT_TRUE(r.Add(Packet(std::string("\x00\xfc\xf4\x01\x01\x02\x00\x00\x00", 9))));
  EXPECT_EQ(r.summary(), "affected 500");
  EXPECT_TRUE(r.error().empty());
}

TEST(MysqlWire, ResultSetCountsRowsAndTheirBytes) {
  MyReplyReader r;
  EXPECT_FALSE(r.Add(Packet("\x02")));                 // two columns
  EXPECT_FALSE(r.Add(Packet("\x03" "def...id")));      // column definitions
  EXPECT_FALSE(r.Add(Packet("\x03" "def...pad")));
  EXPECT_FALSE(r.Add(Packet(std::string("\xfe\x00\x00\x02\x00", 5))));  // EOF
  EXPECT_FALSE(r.Add(Packet("\x01" "1" "\x03" "aaa")));
  EXPECT_FALSE(r.Add(Packet("\x01" "2" "\x03" "bbb")));
  EXPECT_TRUE(r.Add(Packet(std::string("\xfe\x00\x00\x02\x00", 5))));
  EXPECT_EQ(r.summary(), "rows 2");
  EXPECT_EQ(r.row_bytes(), 12u);
}

TEST(MysqlWire, ErrorReplyNamesTheServersMessage) {
  MyReplyReader r;
  EXPECT_TRUE(r.Add(Packet(std::string("\xff\x7a\x04#42S02", 9) + "Table 'jdw.nope' doesn't exist")));
  EXPECT_EQ(r.error(), "Table 'jdw.nope' doesn't exist");
  EXPECT_TRUE(r.summary().empty());
}

}  // namespace
}  // namespace jackdaw::validate
