#include "join/socket_tracker.h"

#include <gtest/gtest.h>

#include "join/compiled_schema.h"
#include "join/endpoint_format.h"

namespace jackdaw::join {
namespace {

// 127.0.0.1:lport <-> 127.0.0.1:rport
jdw_sock_info Info(uint64_t sk, uint16_t lport, uint16_t rport) {
  jdw_sock_info si{};
  si.sk = sk;
  si.family = kAfInet;
  si.protocol = kIpProtoTcp;
  si.sport = lport;
  si.dport = rport;
  si.saddr[0] = si.daddr[0] = 127;
  si.saddr[3] = si.daddr[3] = 1;
  return si;
}

jdw_net_packet Packet(uint16_t sport, uint16_t dport) {
  jdw_net_packet p{};
  p.family = kAfInet;
  p.protocol = kIpProtoTcp;
  p.sport = sport;
  p.dport = dport;
  p.saddr[0] = p.daddr[0] = 127;
  p.saddr[3] = p.daddr[3] = 1;
  return p;
}

TEST(SocketTracker, PacketsFindTheirSocketFromEitherDirection) {
  SocketTracker t;
  t.OnSockInfo(Info(0x5c, 80, 40000), 100);
  // Received: the client's port is the source; sent: the destination.
  EXPECT_EQ(t.SocketOf(SocketTracker::LocalConnKey(JDW_EVENT_NET_RECV, Packet(40000, 80))), 0x5cu);
  EXPECT_EQ(t.SocketOf(SocketTracker::LocalConnKey(JDW_EVENT_NET_XMIT, Packet(80, 40000))), 0x5cu);
  EXPECT_EQ(t.SocketOf(SocketTracker::LocalConnKey(JDW_EVENT_NET_RECV, Packet(40001, 80))), 0u);
  EXPECT_EQ(t.ConnectedSince(0x5c), 100u);
  EXPECT_EQ(t.ConnectedSince(0x77), 0u);
}

TEST(SocketTracker, ReusedSocketIsANewConnectionAndForgetsTheOld) {
  SocketTracker t;
  const uint64_t old_key = t.OnSockInfo(Info(0x5c, 80, 40000), 100);
  t.NoteDirection(0x5c, CompiledSchema::kDirOut);
  EXPECT_EQ(t.LastDirection(0x5c), CompiledSchema::kDirOut);
  // The same endpoints again: the same connection.
  t.OnSockInfo(Info(0x5c, 80, 40000), 150);
  EXPECT_EQ(t.ConnectedSince(0x5c), 100u);
  EXPECT_EQ(t.LastDirection(0x5c), CompiledSchema::kDirOut);
  // Other endpoints: the memory serves the next connection.
  const uint64_t new_key = t.OnSockInfo(Info(0x5c, 80, 40001), 200);
  EXPECT_NE(old_key, new_key);
  EXPECT_EQ(t.ConnectedSince(0x5c), 200u);
  EXPECT_EQ(t.LastDirection(0x5c), 0);
  EXPECT_EQ(t.SocketOf(old_key), 0u);  // a late packet of the old one joins nothing
  EXPECT_EQ(t.SocketOf(new_key), 0x5cu);
}

TEST(SocketTracker, SetNotesEachConnectionOnce) {
  SocketTracker t;
  t.OnSockInfo(Info(0x5c, 80, 40000), 100);
  Set s;
  t.NoteInSet(s, 0x5c, nullptr, false);
  t.NoteInSet(s, 0x5c, nullptr, false);
  t.NoteInSet(s, 0x77, nullptr, false);  // never described: no endpoints
  ASSERT_EQ(s.socks.size(), 1u);
  EXPECT_EQ(s.socks[0].conn.dport, 40000);
  // A packet of another connection of the same sk notes nothing.
  const jdw_net_packet other = Packet(40009, 80);
  t.NoteInSet(s, 0x5c, &other, false);
  EXPECT_EQ(s.socks.size(), 1u);
  // Its next connection is another endpoint pair for the same set.
  t.OnSockInfo(Info(0x5c, 80, 40001), 200);
  const jdw_net_packet next = Packet(80, 40001);
  t.NoteInSet(s, 0x5c, &next, true);
  ASSERT_EQ(s.socks.size(), 2u);
  EXPECT_EQ(s.socks[1].conn.dport, 40001);
  EXPECT_EQ(s.socks[0].conn.dport, 40000);  // the copy keeps the old endpoints
}

TEST(SocketTracker, ClosedSocketsAreForgottenAfterTheHorizonUnlessReused) {
  SocketTracker t;
  const uint64_t k1 = t.OnSockInfo(Info(0x5c, 80, 40000), 100);
  const uint64_t k2 = t.OnSockInfo(Info(0x6c, 80, 40001), 100);
  t.NoteDirection(0x5c, CompiledSchema::kDirIn);
  t.Closed(0x5c, 300);
  EXPECT_EQ(t.LastDirection(0x5c), 0);
  t.Closed(0x6c, 300);
  t.OnSockInfo(Info(0x6c, 80, 40002), 400);  // described again after its close
  t.ExpireClosed(/*now=*/350, /*keep_ns=*/100);  // not yet
  EXPECT_EQ(t.SocketOf(k1), 0x5cu);
  t.ExpireClosed(/*now=*/401, /*keep_ns=*/100);
  EXPECT_EQ(t.SocketOf(k1), 0u);
  EXPECT_EQ(t.ConnectedSince(0x5c), 0u);
  EXPECT_EQ(t.ConnectedSince(0x6c), 400u);  // kept: its current connection is newer
  EXPECT_EQ(t.SocketOf(k2), 0u);            // the old pair was replaced by the reuse
}

}  // namespace
}  // namespace jackdaw::join
