// Datagrams on one unconnected UDP socket, as a DNS server serves them: the
// capture names each datagram's far end (dgram_peer), and the join keys the
// message rule by (socket, peer), so two clients' exchanges interleaved on
// the one socket are two requests, each naming its client, with each
// flow's packets joined to its exchange.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "join/endpoint_format.h"
#include "join/extractor_test_util.h"

namespace jackdaw::join {
namespace {

using testing::Result;
using testing::RunRecords;
using testing::ShippedSchema;
using testing::Stream;

constexpr uint32_t kPid = 1000, kTid = 1001;
constexpr uint64_t kSk = 0xffff888000d10000;  // the server's one UDP socket
constexpr uint16_t kServerPort = 53;

void Enter(Stream& s, uint64_t ts, const char* sc, uint64_t arg = 0) {
  jdw_sys_enter b{};
  b.nr = static_cast<uint16_t>(Stream::Nr(sc));
  b.obj_kind = JDW_OBJ_SOCKET;
  b.fd = 5;
  b.arg = arg;
  b.obj = kSk;
  s.Add(JDW_EVENT_SYS_ENTER, ts, 0, JDW_CTX_TASK, kPid, kTid, b);
}

void Exit(Stream& s, uint64_t ts, const char* sc, int64_t ret) {
  jdw_sys_exit b{};
  b.nr = static_cast<uint16_t>(Stream::Nr(sc));
  b.ret = ret;
  b.fd = -1;
  s.Add(JDW_EVENT_SYS_EXIT, ts, 0, JDW_CTX_TASK, kPid, kTid, b);
}

void Peer(Stream& s, uint64_t ts, uint16_t client_port) {
  jdw_dgram_peer b{};
  b.sk = kSk;
  b.family = kAfInet;
  b.protocol = kIpProtoUdp;
  b.sport = kServerPort;
  b.dport = client_port;
  b.saddr[0] = b.daddr[0] = 127;
  b.saddr[3] = b.daddr[3] = 1;
  s.Add(JDW_EVENT_DGRAM_PEER, ts, 0, JDW_CTX_TASK, kPid, kTid, b);
}

void Packet(Stream& s, uint64_t ts, bool out, uint16_t client_port, uint32_t payload) {
  jdw_net_packet p{};
  p.family = kAfInet;
  p.protocol = kIpProtoUdp;
  p.len = payload + 28;
  p.payload_len = payload;
  p.sk = out ? kSk : 0;
  p.sport = out ? kServerPort : client_port;
  p.dport = out ? client_port : kServerPort;
  p.saddr[0] = p.daddr[0] = 127;
  p.saddr[3] = p.daddr[3] = 1;
  s.Add(out ? JDW_EVENT_NET_XMIT : JDW_EVENT_NET_RECV, ts, 0, out ? JDW_CTX_TASK : JDW_CTX_SOFTIRQ, out ? kPid : 0,
        out ? kTid : 0, p);
}

// Two clients' queries read back to back, then both answered: on one
// socket without peers the message rule sees one read-read-write-write
// exchange; with them, one exchange per client.
void TwoClientsInterleaved(Stream& s, bool name_peers) {
  s.meta().tasks[kTid] = trace::TaskInfo{kPid, "dns", 0};
  uint64_t t = 1000;
  s.Switch(t, 0, 0, kTid, 0, 0, kPid);
  const uint16_t clients[] = {40001, 40002};
  for (uint16_t c : clients) {
    Enter(s, t += 10, "recvfrom", 512);
    if (name_peers) Packet(s, t += 5, false, c, 30);
    if (name_peers) Peer(s, t += 5, c);
    Exit(s, t += 10, "recvfrom", 30);
  }
  for (uint16_t c : clients) {
    if (name_peers) Peer(s, t += 10, c);
    Enter(s, t += 5, "sendto", c == 40001 ? 60 : 400);
    if (name_peers) Packet(s, t += 5, true, c, c == 40001 ? 60 : 400);
    Exit(s, t += 10, "sendto", c == 40001 ? 60 : 400);
  }
  Enter(s, t += 10, "recvfrom", 512);
  s.Switch(t += 10, 0, kTid, 0, 1, kPid, 0);
}

TEST(DatagramFlows, EachPeerOfOneSocketIsAFlowOfItsOwn) {
  Stream s;
  TwoClientsInterleaved(s, true);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_EQ(r.stats.datagram_flows, 2u);
  std::string remotes;
  for (const model::Request& q : r.reqs) {
    ASSERT_EQ(q.connections.size(), 1u);
    EXPECT_EQ(q.connections[0].local, "127.0.0.1:53");
    remotes += q.connections[0].remote + " ";
    EXPECT_EQ(q.msg_in_bytes, 30u);
    // Each flow's answer packet (UDP and IP headers included) joined its exchange.
    EXPECT_EQ(q.totals.net_bytes_out, q.connections[0].remote == "127.0.0.1:40001" ? 88u : 428u);
  }
  EXPECT_NE(remotes.find("127.0.0.1:40001"), std::string::npos) << remotes;
  EXPECT_NE(remotes.find("127.0.0.1:40002"), std::string::npos) << remotes;
}

TEST(DatagramFlows, WithoutPeersTheSocketIsOneConnection) {
  Stream s;
  TwoClientsInterleaved(s, false);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u) << "two reads then two writes on one socket: one exchange";
  EXPECT_EQ(r.stats.datagram_flows, 0u);
}

}  // namespace
}  // namespace jackdaw::join
