// The shipped schemas on synthetic traces of their servers, and sockets.
#include "join/extractor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "join/extractor_test_util.h"

namespace jackdaw::join {
namespace {

using testing::Extract;
using testing::MustParse;
using testing::Result;
using testing::RunRecords;
using testing::ShippedSchema;
using testing::Stream;
using testing::Symbols;

// --- the shipped schemas on synthetic traces of their servers ---------------

// A client's handshake and request bytes arrive (softirq) before accept()
// returns the socket that names the connection. The handshake is the
// connection's; the request begins at the packet that carried its first
// byte. A connection never accepted keeps its packets out of everything.
TEST(ShippedSchemas, PacketsBeforeAcceptSplitIntoHandshakeAndRequest) {
  constexpr uint64_t kSk = 0xffff888000bb0000;
  constexpr uint32_t kAcc = 101;
  Stream s;
  s.Packet(JDW_EVENT_NET_RECV, 500, 0, JDW_CTX_SOFTIRQ, 0, 0, 5555, 8080, 52);   // SYN
  s.Packet(JDW_EVENT_NET_RECV, 510, 0, JDW_CTX_SOFTIRQ, 0, 0, 5555, 8080, 52);   // ACK
  s.Packet(JDW_EVENT_NET_RECV, 520, 0, JDW_CTX_SOFTIRQ, 0, 0, 5555, 8080, 152);  // GET: 100 payload bytes
  s.Packet(JDW_EVENT_NET_RECV, 800, 1, JDW_CTX_SOFTIRQ, 0, 0, 6666, 8080, 60);   // never accepted
  s.Switch(1000, 0, 0, kAcc, 0);
  s.SockInfo(1090, 0, kAcc, kSk, 8080, 5555);  // as captured: just before accept returns
  s.SysExit(1100, 0, kAcc, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.SysEnter(1200, 0, kAcc, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(1300, 0, kAcc, "read", 100);
  s.SysEnter(1400, 0, kAcc, "write", 7, JDW_OBJ_SOCKET, kSk, 148);
  s.Packet(JDW_EVENT_NET_XMIT, 1450, 0, JDW_CTX_TASK, kAcc, kSk, 8080, 5555, 200);
  s.SysExit(1500, 0, kAcc, "write", 148);
  s.SysEnter(1600, 0, kAcc, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(1650, 0, kAcc, "close", 0);
  s.Switch(1700, 0, kAcc, 0, 1);

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_EQ(q.totals.net_bytes_in, 152u);
  EXPECT_EQ(q.totals.net_bytes_out, 200u);
  EXPECT_EQ(q.totals.softirq_cpu_ns, 10u);  // 510..520 of the 500..520 burst
  EXPECT_EQ(q.start_ns, 520u);
  EXPECT_EQ(q.end_ns, 1500u);  // the close is the connection's
  for (size_t i = 1; i < q.events.size(); i++) EXPECT_LE(q.events[i - 1].ts_ns, q.events[i].ts_ns) << i;
  EXPECT_TRUE(q.has_message);
  EXPECT_EQ(q.msg_in_bytes, 100u);
  EXPECT_EQ(q.msg_out_bytes, 148u);
  ASSERT_EQ(r.conns.size(), 1u);
  const model::Connection& c = r.conns[0];
  EXPECT_EQ(c.id, q.connection_id);
  EXPECT_EQ(c.requests, 1u);
  EXPECT_TRUE(c.closed);
  EXPECT_EQ(c.net_bytes_in, 104u);  // SYN + ACK
  EXPECT_EQ(c.start_ns, 500u);
  EXPECT_EQ(c.endpoint.local, "127.0.0.1:8080");
  EXPECT_EQ(r.stats.early_packets_dropped, 1u);
  EXPECT_EQ(r.stats.msg_packets_held, 1u);
}

// The capture may describe a socket again in the middle of its connection
// (a worker resolving the fd the acceptor handed it): the same addresses
// on the same socket are the same connection, and its request stays whole
// (it used to end the connection there: the request lost its seed and was
// not emitted, its response became a greeting of a new connection).
TEST(ShippedSchemas, SocketDescribedAgainMidConnectionIsTheSameConnection) {
  constexpr uint64_t kSk = 0xffff888000cc0000;
  constexpr uint32_t kAcc = 111, kWrk = 112;
  Stream s;
  s.Switch(1000, 0, 0, kAcc, 0);
  s.SockInfo(1090, 0, kAcc, kSk, 8080, 5555);
  s.SysExit(1100, 0, kAcc, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.Switch(1150, 0, kAcc, 0, 1);
  s.Switch(1200, 1, 0, kWrk, 0);
  s.SysEnter(1210, 1, kWrk, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(1300, 1, kWrk, "read", 100);
  s.SockInfo(1400, 1, kWrk, kSk, 8080, 5555);  // described again: same connection
  s.SysEnter(1500, 1, kWrk, "write", 7, JDW_OBJ_SOCKET, kSk, 148);
  s.SysExit(1600, 1, kWrk, "write", 148);
  s.SysEnter(1700, 1, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(1750, 1, kWrk, "close", 0);
  s.Switch(1800, 1, kWrk, 0, 1);

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_TRUE(r.reqs[0].has_message);
  EXPECT_EQ(r.reqs[0].msg_out_bytes, 148u);
  ASSERT_EQ(r.conns.size(), 1u);
  EXPECT_EQ(r.conns[0].requests, 1u);
  EXPECT_EQ(r.conns[0].greetings, 0u);
  EXPECT_EQ(r.conns[0].one_way, 0u);
}

// Keep-alive with packets: each request begins at the packet that carried
// its first byte (not at the read that was waiting for it, nor inside the
// request before), holds its own inbound bytes, and the end-of-file read and
// the close are the connection's, not a request.
TEST(ShippedSchemas, KeepAliveRequestsBeginAtTheirPacketAndHoldTheirBytes) {
  constexpr uint32_t kWrk = 401;
  constexpr uint64_t kSk = 0xffff888000dd0000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 0, kWrk, kSk, 11211, 7000);
  s.Switch(t, 0, 0, kWrk, 0);
  s.SysExit(t += 10, 0, kWrk, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  const uint32_t in_len[3] = {100, 4000, 60};  // payload bytes of each request
  for (int i = 0; i < 3; i++) {
    s.SysEnter(t += 10, 0, kWrk, "read", 7, JDW_OBJ_SOCKET, kSk, 65536);
    s.Switch(t += 10, 0, kWrk, 0, 1);                       // waits for the client
    const uint64_t arrive = t += 100000;                    // client think time
    s.Packet(JDW_EVENT_NET_RECV, arrive, 1, JDW_CTX_SOFTIRQ, 0, kSk, 7000, 11211, in_len[i] + 52);
    s.Wakeup(arrive + 5, 1, 0, kWrk, JDW_CTX_SOFTIRQ);
    s.Switch(t += 20, 0, 0, kWrk, 0);
    s.SysExit(t += 10, 0, kWrk, "read", in_len[i]);
    s.SysEnter(t += 500, 0, kWrk, "write", 7, JDW_OBJ_SOCKET, kSk, 1000);
    s.Packet(JDW_EVENT_NET_XMIT, t += 5, 0, JDW_CTX_TASK, kWrk, kSk, 11211, 7000, 1052);
    s.SysExit(t += 10, 0, kWrk, "write", 1000);
  }
  s.SysEnter(t += 10, 0, kWrk, "read", 7, JDW_OBJ_SOCKET, kSk, 65536);
  s.SysExit(t += 50000, 0, kWrk, "read", 0);  // end-of-file
  s.SysEnter(t += 10, 0, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 10, 0, kWrk, "close", 0);
  s.Switch(t += 10, 0, kWrk, 0, 1);

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 3u);
  for (int i = 0; i < 3; i++) {
    const model::Request& q = r.reqs[i];
    SCOPED_TRACE(i);
    EXPECT_FALSE(q.timed_out);
    EXPECT_EQ(q.totals.net_bytes_in, in_len[i] + 52u);
    EXPECT_EQ(q.totals.net_bytes_out, 1052u);
    EXPECT_EQ(q.msg_in_bytes, in_len[i]);
    EXPECT_EQ(q.exchange, uint32_t(i));
    EXPECT_EQ(q.events.front().record_type, JDW_EVENT_NET_RECV);  // begins at the arrival
    EXPECT_LT(q.latency_ns(), 1000u);  // 20 + 10 + 500 + 5 + 10 + wakeup: the think time is idle
    // The read that will wait for the next request ends this one (its entry
    // is the thread's last act for it); the wait itself is idle time.
    EXPECT_EQ(std::string(q.events.back().symbol), "sys_enter:read");
  }
  ASSERT_EQ(r.conns.size(), 1u);
  EXPECT_EQ(r.conns[0].requests, 3u);
  EXPECT_EQ(r.conns[0].eof_reads, 1u);
  EXPECT_GE(r.conns[0].idle_ns, 3 * 100000u);
  EXPECT_EQ(r.stats.msg_requests, 3u);
}

// An event loop: one thread, two connections between epoll_waits, reads
// that find nothing (EAGAIN). Each request is its connection's exchange.
TEST(ShippedSchemas, EventLoopServesConnectionsApart) {
  constexpr uint32_t kLoop = 501;
  constexpr uint64_t kA = 0xffff888000e00000, kB = 0xffff888000e10000, kEp = 0xffff888000e20000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 0, kLoop, kA, 80, 7001);
  s.SockInfo(t, 0, kLoop, kB, 80, 7002);
  s.Switch(t, 0, 0, kLoop, 0);
  for (int round = 0; round < 2; round++) {
    s.SysEnter(t += 10, 0, kLoop, "epoll_wait", 3, JDW_OBJ_EPOLL, kEp);
    s.Switch(t += 10, 0, kLoop, 0, 1);
    s.Packet(JDW_EVENT_NET_RECV, t += 1000, 1, JDW_CTX_SOFTIRQ, 0, kA, 7001, 80, 152);
    s.Packet(JDW_EVENT_NET_RECV, t += 10, 1, JDW_CTX_SOFTIRQ, 0, kB, 7002, 80, 152);
    s.Wakeup(t += 5, 1, 0, kLoop, JDW_CTX_SOFTIRQ);
    s.Switch(t += 10, 0, 0, kLoop, 0);
    s.SysExit(t += 10, 0, kLoop, "epoll_wait", 2);
    for (uint64_t sk : {kA, kB}) {
      const int fd = sk == kA ? 8 : 9;
      s.SysEnter(t += 10, 0, kLoop, "recvfrom", fd, JDW_OBJ_SOCKET, sk, 4096);
      s.SysExit(t += 10, 0, kLoop, "recvfrom", 100);
      s.SysEnter(t += 10, 0, kLoop, "recvfrom", fd, JDW_OBJ_SOCKET, sk, 4096);
      s.SysExit(t += 10, 0, kLoop, "recvfrom", -11);  // EAGAIN
      s.SysEnter(t += 300, 0, kLoop, "writev", fd, JDW_OBJ_SOCKET, sk, 5000);
      s.SysExit(t += 10, 0, kLoop, "writev", 5000);
    }
  }
  s.SysEnter(t += 10, 0, kLoop, "epoll_wait", 3, JDW_OBJ_EPOLL, kEp);
  s.Switch(t += 10, 0, kLoop, 0, 1);

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 4u);  // the last two end at the end of the trace
  for (const model::Request& q : r.reqs) {
    EXPECT_EQ(q.totals.net_bytes_in, 152u);
    EXPECT_EQ(q.msg_out_bytes, 5000u);
    ASSERT_EQ(q.connections.size(), 1u);
  }
  EXPECT_EQ(r.stats.msg_empty_reads, 4u);
  EXPECT_EQ(r.conns.size(), 2u);
}

// A pre-forked worker's run after it is done with a request (a lingering
// close: shutdown, poll for the client's FIN; then the end-of-file read,
// the close, its own bookkeeping and the next accept, up to its sleep)
// touches no request: it is the connection's life, in the ledger as
// connection time. A wake-up that finds nothing to do (another worker took
// the connection) and sleeps again touches no connection: unattributed.
TEST(ShippedSchemas, WorkersRunAfterACloseIsTheConnectionsUntilItSleeps) {
  constexpr uint32_t kWrk = 701;
  constexpr uint64_t kListen = 0xffff888000a00000, kPipe = 0xffff888000a10000;
  Stream s;
  uint64_t t = 1000;
  s.SysEnter(t, 0, kWrk, "accept4", 3, JDW_OBJ_SOCKET, kListen);
  for (int round = 0; round < 2; round++) {
    const uint64_t sk = 0xffff888000b00000 + round * 0x1000;
    s.Switch(t += 1000, 0, 0, kWrk, 0);
    s.SockInfo(t += 10, 0, kWrk, sk, 80, static_cast<uint16_t>(7000 + round));
    s.SysExit(t += 10, 0, kWrk, "accept4", 8, JDW_OBJ_SOCKET, sk);
    s.SysEnter(t += 10, 0, kWrk, "read", 8, JDW_OBJ_SOCKET, sk, 8000);
    s.SysExit(t += 10, 0, kWrk, "read", 62);
    s.SysEnter(t += 300, 0, kWrk, "writev", 8, JDW_OBJ_SOCKET, sk, 5000);
    s.SysExit(t += 10, 0, kWrk, "writev", 5000);
    s.SysEnter(t += 10, 0, kWrk, "shutdown", 8, JDW_OBJ_SOCKET, sk);
    s.SysExit(t += 10, 0, kWrk, "shutdown", 0);
    s.SysEnter(t += 10, 0, kWrk, "poll");
    s.Switch(t += 10, 0, kWrk, 0, 1);
    s.Switch(t += 500, 0, 0, kWrk, 0);
    s.SysExit(t += 10, 0, kWrk, "poll", 1);
    s.SysEnter(t += 10, 0, kWrk, "read", 8, JDW_OBJ_SOCKET, sk, 512);
    s.SysExit(t += 10, 0, kWrk, "read", 0);
    s.SysEnter(t += 10, 0, kWrk, "close", 8, JDW_OBJ_SOCKET, sk);
    s.SysExit(t += 10, 0, kWrk, "close", 0);
    s.SysEnter(t += 10, 0, kWrk, "read", 5, JDW_OBJ_PIPE, kPipe, 1);
    s.SysExit(t += 10, 0, kWrk, "read", -11);
    s.SysEnter(t += 10, 0, kWrk, "accept4", 3, JDW_OBJ_SOCKET, kListen);
    s.Switch(t += 10, 0, kWrk, 0, 1);
    if (round == 0) {  // woken for nothing: 30 ns
      s.Switch(t += 1000, 0, 0, kWrk, 0);
      s.Switch(t += 30, 0, kWrk, 0, 1);
    }
  }

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  ASSERT_EQ(r.conns.size(), 2u);
  // The pointless wake-up, and each request's first read: the run before
  // the read that begins a request returns (10 ns) is not the request's.
  EXPECT_EQ(r.stats.cpu_unattributed_ns, 30u + 2 * 10u);
  EXPECT_EQ(r.stats.cpu_beyond_span_ns, 2 * 10u);
  EXPECT_EQ(r.stats.cpu_dropped_ns, 0u);
  // Everything the worker ran is charged once: requests, connections, the
  // one pointless wake-up (the first round's switch-in to the second's
  // sleep: the window; the last sleep's tail after it).
  EXPECT_EQ(r.stats.cpu_charged_ns + r.stats.cpu_conn_ns + r.stats.cpu_unattributed_ns + r.stats.cpu_outside_ns,
            r.stats.cpu_observed_total_ns);
  uint64_t conn_cpu = 0;
  for (const model::Connection& c : r.conns) conn_cpu += c.cpu_ns;
  EXPECT_EQ(conn_cpu, r.stats.cpu_conn_ns);
  // Each connection: accept (20), the entry of the read before its message
  // is known (10), shutdown (10 + 10), its poll's entry (20), the wake-up
  // to the end-of-file read (20 + 10), close (10 + 10), the pipe read and
  // the next accept's entry (40).
  for (const model::Connection& c : r.conns) EXPECT_EQ(c.cpu_ns, 160u);
}

// A process per connection: the parent accepts, forks and closes its copy;
// the child serves two requests and closes. Nothing of the parent's is a
// request, and its close does not end the connection.
TEST(ShippedSchemas, ProcessPerConnectionParentIsTheConnections) {
  constexpr uint32_t kParent = 601, kChild = 602;
  constexpr uint64_t kSk = 0xffff888000f00000;
  Stream s;
  uint64_t t = 1000;
  s.Switch(t, 0, 0, kParent, 0);
  s.SockInfo(t += 10, 0, kParent, kSk, 5432, 7003);
  s.SysExit(t += 10, 0, kParent, "accept", 9, JDW_OBJ_SOCKET, kSk);
  s.SysEnter(t += 100, 0, kParent, "close", 9, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 10, 0, kParent, "close", 0);
  s.Switch(t += 10, 0, kParent, kChild, 1);
  for (int i = 0; i < 2; i++) {
    s.SysEnter(t += 10, 0, kChild, "recvfrom", 9, JDW_OBJ_SOCKET, kSk, 8192);
    s.SysExit(t += 10, 0, kChild, "recvfrom", 40);
    s.SysEnter(t += 200, 0, kChild, "sendto", 9, JDW_OBJ_SOCKET, kSk, 300);
    s.SysExit(t += 10, 0, kChild, "sendto", 300);
  }
  s.SysEnter(t += 10, 0, kChild, "recvfrom", 9, JDW_OBJ_SOCKET, kSk, 8192);
  s.SysExit(t += 10, 0, kChild, "recvfrom", 5);  // a goodbye ("X" message)
  s.SysEnter(t += 10, 0, kChild, "close", 9, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 10, 0, kChild, "close", 0);
  s.Switch(t += 10, 0, kChild, 0, 1);

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  for (const model::Request& q : r.reqs) {
    EXPECT_EQ(q.threads, (std::vector<uint32_t>{kChild}));
    EXPECT_EQ(q.msg_in_bytes, 40u);
  }
  ASSERT_EQ(r.conns.size(), 1u);
  EXPECT_EQ(r.conns[0].requests, 2u);
  EXPECT_EQ(r.conns[0].one_way, 1u);
  EXPECT_TRUE(r.conns[0].closed);
  EXPECT_GT(r.conns[0].cpu_ns, 0u);
}

// A corked response (sendfile with TCP_NOPUSH, as nginx sends files): the
// data leaves inside close(). Those packets are the response's bytes, so
// every request of the kind carries the same net demand; the close itself
// is the connection's.
TEST(ShippedSchemas, ResponseFlushedByTheCloseIsTheRequests) {
  constexpr uint32_t kWrk = 801;
  constexpr uint64_t kSk = 0xffff888000f20000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 0, kWrk, kSk, 80, 7005);
  s.Switch(t, 0, 0, kWrk, 0);
  s.SysExit(t += 10, 0, kWrk, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.Packet(JDW_EVENT_NET_RECV, t += 10, 1, JDW_CTX_SOFTIRQ, 0, kSk, 7005, 80, 152);
  s.SysEnter(t += 10, 0, kWrk, "recvfrom", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(t += 10, 0, kWrk, "recvfrom", 100);
  s.SysEnter(t += 10, 0, kWrk, "sendfile", 7, JDW_OBJ_SOCKET, kSk, 12288);
  s.SysExit(t += 10, 0, kWrk, "sendfile", 12288);  // queued, corked: nothing sent yet
  s.SysEnter(t += 10, 0, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.Packet(JDW_EVENT_NET_XMIT, t += 5, 0, JDW_CTX_TASK, kWrk, kSk, 80, 7005, 12288 + 52);
  s.Packet(JDW_EVENT_NET_XMIT, t += 5, 0, JDW_CTX_TASK, kWrk, kSk, 80, 7005, 52);
  s.PacketFlags(0x11);  // FIN
  s.SysExit(t += 10, 0, kWrk, "close", 0);
  s.Switch(t += 10, 0, kWrk, 0, 1);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].totals.net_bytes_out, 12288u + 52u);  // the data segment
  EXPECT_EQ(r.reqs[0].msg_out_bytes, 12288u);
  for (const auto& e : r.reqs[0].events) EXPECT_EQ(std::string(e.symbol).find("close"), std::string::npos);
  ASSERT_EQ(r.conns.size(), 1u);
  EXPECT_EQ(r.conns[0].net_bytes_out, 52u);  // the FIN
}

// The same, when close() returns before the kernel sent the response: the
// rest leaves as the peer acknowledges (softirq), and the request holds it
// all, up to the FIN.
TEST(ShippedSchemas, ResponseSentAfterCloseReturnedIsTheRequests) {
  constexpr uint32_t kWrk = 802;
  constexpr uint64_t kSk = 0xffff888000f30000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 0, kWrk, kSk, 80, 7006);
  s.Switch(t, 0, 0, kWrk, 0);
  s.SysExit(t += 10, 0, kWrk, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.Packet(JDW_EVENT_NET_RECV, t += 10, 1, JDW_CTX_SOFTIRQ, 0, kSk, 7006, 80, 152);
  s.SysEnter(t += 10, 0, kWrk, "recvfrom", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(t += 10, 0, kWrk, "recvfrom", 100);
  s.SysEnter(t += 10, 0, kWrk, "sendfile", 7, JDW_OBJ_SOCKET, kSk, 200000);
  s.Packet(JDW_EVENT_NET_XMIT, t += 5, 0, JDW_CTX_TASK, kWrk, kSk, 80, 7006, 65536 + 52);
  s.SysExit(t += 10, 0, kWrk, "sendfile", 200000);
  s.SysEnter(t += 10, 0, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 10, 0, kWrk, "close", 0);
  s.Switch(t += 10, 0, kWrk, 0, 1);
  for (uint32_t left = 200000 - 65536; left;) {
    const uint32_t n = std::min<uint32_t>(left, 65536);
    s.Packet(JDW_EVENT_NET_RECV, t += 100, 1, JDW_CTX_SOFTIRQ, 0, kSk, 7006, 80, 52);  // the peer's ACK
    s.Packet(JDW_EVENT_NET_XMIT, t += 5, 1, JDW_CTX_SOFTIRQ, 0, kSk, 80, 7006, n + 52);
    left -= n;
  }
  s.Packet(JDW_EVENT_NET_XMIT, t += 5, 1, JDW_CTX_SOFTIRQ, 0, kSk, 80, 7006, 52);
  s.PacketFlags(0x11);  // FIN
  const uint64_t fin = t;
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].msg_out_bytes, 200000u);
  EXPECT_EQ(r.reqs[0].totals.net_bytes_out, 200000u + 4 * 52u);
  EXPECT_LT(r.reqs[0].end_ns, fin);
  ASSERT_EQ(r.conns.size(), 1u);
  EXPECT_TRUE(r.conns[0].closed);
}

// Two requests a client pushed back to back and the server read in one
// call: one extracted request, flagged.
TEST(ShippedSchemas, PipelinedRequestsInOneReadAreFlagged) {
  constexpr uint32_t kWrk = 701;
  constexpr uint64_t kSk = 0xffff888000f10000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 0, kWrk, kSk, 80, 7004);
  s.Switch(t, 0, 0, kWrk, 0);
  s.Packet(JDW_EVENT_NET_RECV, t += 10, 1, JDW_CTX_SOFTIRQ, 0, kSk, 7004, 80, 152);
  s.PacketFlags(0x08);
  s.Packet(JDW_EVENT_NET_RECV, t += 10, 1, JDW_CTX_SOFTIRQ, 0, kSk, 7004, 80, 152);
  s.PacketFlags(0x08);
  s.SysEnter(t += 10, 0, kWrk, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(t += 10, 0, kWrk, "read", 200);
  s.SysEnter(t += 10, 0, kWrk, "write", 7, JDW_OBJ_SOCKET, kSk, 2000);
  s.SysExit(t += 10, 0, kWrk, "write", 2000);
  s.SysEnter(t += 10, 0, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 10, 0, kWrk, "close", 0);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_TRUE(r.reqs[0].pipelined);
  EXPECT_EQ(r.reqs[0].totals.net_bytes_in, 304u);
  EXPECT_EQ(r.stats.msg_pipelined, 1u);
}

TEST(ShippedSchemas, TestserverRpcSpinIsOneRequestAcrossThreePoolThreads) {
  constexpr uint64_t kSk = 0xffff888000aa0000;
  constexpr uint32_t kAcc = 101, kWrk = 102, kHlp = 103;
  Stream s;
  s.Switch(1000, 0, 0, kAcc, 0);
  s.SysExit(1100, 0, kAcc, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.SockInfo(1150, 0, kAcc, kSk, 8080, 5555);
  s.Usdt(1200, 0, kAcc, "jackdaw_ts:dispatch", 0, 7);
  s.Wakeup(1300, 0, kAcc, kWrk);
  s.SysEnter(1350, 0, kAcc, "poll");  // back to waiting for connections
  s.Switch(1400, 0, kAcc, 0, 1);
  s.Switch(1500, 1, 0, kWrk, 0);
  s.Usdt(1600, 1, kWrk, "jackdaw_ts:worker_pickup", 0, 7);
  s.SysEnter(1700, 1, kWrk, "recvfrom", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(1800, 1, kWrk, "recvfrom", 100);
  s.Usdt(1900, 1, kWrk, "jackdaw_ts:request_start", 55, 'F', 7);
  s.Usdt(2000, 1, kWrk, "jackdaw_ts:rpc_signal", 55);
  s.Wakeup(2050, 1, kWrk, kHlp);
  s.Usdt(2100, 1, kWrk, "jackdaw_ts:rpc_wait", 55);
  s.SysEnter(2150, 1, kWrk, "futex", -1, JDW_OBJ_FUTEX, 0x9000, 128 | 9);
  s.Switch(2200, 1, kWrk, 0, 1);
  s.Switch(2300, 0, 0, kHlp, 0);
  s.Usdt(2400, 0, kHlp, "jackdaw_ts:rpc_begin", 55);
  s.Usdt(17400, 0, kHlp, "jackdaw_ts:rpc_reply", 55);
  s.Wakeup(17450, 0, kHlp, kWrk);
  s.Switch(17500, 0, kHlp, 0, 1);
  s.Switch(17600, 1, 0, kWrk, 0);
  s.SysExit(17650, 1, kWrk, "futex", 0);
  s.Usdt(17700, 1, kWrk, "jackdaw_ts:rpc_resume", 55);
  s.SysEnter(17800, 1, kWrk, "sendto", 7, JDW_OBJ_SOCKET, kSk, 148);
  s.Packet(JDW_EVENT_NET_XMIT, 17850, 1, JDW_CTX_TASK, kWrk, kSk, 8080, 5555, 200);
  s.SysExit(17900, 1, kWrk, "sendto", 148);
  s.Usdt(18000, 1, kWrk, "jackdaw_ts:request_end", 55, 200, 148);
  s.SysEnter(18100, 1, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(18150, 1, kWrk, "close", 0);
  s.Switch(18200, 1, kWrk, 0, 1);

  auto sch = schema::LoadSchema("testserver", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_FALSE(q.timed_out);
  EXPECT_EQ(q.threads, (std::vector<uint32_t>{kAcc, kWrk, kHlp}));
  ASSERT_EQ(q.connections.size(), 1u);
  EXPECT_EQ(q.connections[0].local, "127.0.0.1:8080");
  EXPECT_EQ(q.totals.net_bytes_out, 200u);
  EXPECT_EQ(r.stats.edges_sync, 3u);    // dispatch->pickup, signal->begin, reply->resume
  // worker->helper and helper->worker. The acceptor's wakeup of the worker
  // targets the worker's switch-in, which worker_pickup's START deliberately
  // cuts off (a pool thread's wait for work is not the request's); the SYNC
  // dispatch->pickup edge carries that causality instead.
  EXPECT_EQ(r.stats.edges_wakeup, 2u);
  EXPECT_EQ(q.edges.size(), 5u);
  uint64_t helper_cpu = 0;
  for (const auto& e : q.events)
    if (e.tid == kHlp) helper_cpu += e.cpu_ns;
  EXPECT_EQ(helper_cpu, 15100u);  // 2300..17400; its last 100 ns after the reply are not the request's
  const auto syms = Symbols(q);
  EXPECT_NE(std::find(syms.begin(), syms.end(), "wait"), syms.end());
}

TEST(ShippedSchemas, TcpThreadpoolSeparatesConnectionsOnReusedWorker) {
  constexpr uint32_t kAcc = 201, kWrk = 202;
  Stream s;
  uint64_t t = 1000;
  s.Switch(t, 0, 0, kAcc, 0);
  s.Switch(t, 1, 0, kWrk, 0);
  for (uint64_t i = 0; i < 3; i++) {
    const uint64_t sk = 0xffff888000bb0000 + i * 0x1000;
    const uint16_t port = static_cast<uint16_t>(6000 + i);
    s.SysExit(t += 100, 0, kAcc, "accept4", 7, JDW_OBJ_SOCKET, sk);
    s.SockInfo(t += 10, 0, kAcc, sk, 8080, port);
    // The worker serves the connection without ever blocking in between.
    s.SysEnter(t += 100, 1, kWrk, "read", 7, JDW_OBJ_SOCKET, sk, 4096);
    s.Packet(JDW_EVENT_NET_RECV, t += 10, 1, JDW_CTX_SOFTIRQ, kWrk, 0, port, 8080, 300);
    s.SysExit(t += 100, 1, kWrk, "read", 248);
    s.SysEnter(t += 100, 1, kWrk, "write", 7, JDW_OBJ_SOCKET, sk, 148);
    s.Packet(JDW_EVENT_NET_XMIT, t += 10, 1, JDW_CTX_TASK, kWrk, sk, 8080, port, 200);
    s.SysExit(t += 100, 1, kWrk, "write", 148);
    s.SysEnter(t += 100, 1, kWrk, "close", 7, JDW_OBJ_SOCKET, sk);
    s.SysExit(t += 10, 1, kWrk, "close", 0);
  }
  s.Switch(t += 100, 0, kAcc, 0, 1);
  s.Switch(t += 100, 1, kWrk, 0, 1);
  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 3u);
  for (size_t i = 0; i < 3; i++) {
    const model::Request& q = r.reqs[i];
    EXPECT_EQ(q.totals.net_bytes_in, 300u) << i;
    EXPECT_EQ(q.totals.net_bytes_out, 200u) << i;
    ASSERT_EQ(q.connections.size(), 1u);
    EXPECT_EQ(q.connections[0].remote, "127.0.0.1:" + std::to_string(6000 + i));
    EXPECT_EQ(q.threads, (std::vector<uint32_t>{kWrk}));  // the accept is the connection's
  }
  ASSERT_EQ(r.conns.size(), 3u);
  for (const model::Connection& c : r.conns) EXPECT_EQ(c.requests, 1u);
}

TEST(ShippedSchemas, TcpThreadpoolDropsAWakeupStillInFlightWhenItsConnectionCloses) {
  // Worker 502 serves a connection and wakes helper 503 (asleep in a
  // condition variable), but closes the connection before the helper gets a
  // CPU: another thread did the work. What the helper does once it runs (the
  // next queued task) is not this request's.
  constexpr uint32_t kWrk = 502, kHlp = 503;
  constexpr uint64_t kSk = 0xffff888000dd0000;
  Stream s;
  uint64_t t = 1000;
  s.Switch(t, 1, 0, kHlp, 0);
  s.SysEnter(t += 10, 1, kHlp, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 9);  // cond wait
  s.Switch(t += 10, 1, kHlp, 0, 1);
  s.Switch(t += 10, 0, 0, kWrk, 0);
  s.SysExit(t += 100, 0, kWrk, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  s.SockInfo(t += 10, 0, kWrk, kSk, 8080, 7000);
  s.SysEnter(t += 100, 0, kWrk, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysExit(t += 100, 0, kWrk, "read", 100);
  s.SysEnter(t += 100, 0, kWrk, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 1);  // cond signal
  s.Wakeup(t += 10, 0, kWrk, kHlp);
  s.SysExit(t += 10, 0, kWrk, "futex", 1);
  s.SysEnter(t += 100, 0, kWrk, "write", 7, JDW_OBJ_SOCKET, kSk, 148);
  s.SysExit(t += 100, 0, kWrk, "write", 148);
  s.SysEnter(t += 100, 0, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 10, 0, kWrk, "close", 0);
  s.Switch(t += 100, 0, kWrk, 0, 1);
  // Only now does the helper run: 2 ms of someone else's work, then sleep.
  s.Switch(t += 1000, 1, 0, kHlp, 0);
  s.SysExit(t += 10, 1, kHlp, "futex", 0);
  s.Switch(t += 2'000'000, 1, kHlp, 0, 0);  // preempted
  s.Switch(t += 10, 1, 0, kHlp, 0);
  s.SysEnter(t += 10, 1, kHlp, "futex", -1, JDW_OBJ_FUTEX, 0xf00, 128 | 9);
  s.Switch(t += 10, 1, kHlp, 0, 1);
  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  EXPECT_FALSE(q.timed_out);
  EXPECT_EQ(q.threads, (std::vector<uint32_t>{kWrk}));
  EXPECT_LT(q.totals.cpu_ns, 1'000'000u);
}

TEST(ShippedSchemas, TcpThreadpoolSplitsKeepAliveRequests) {
  constexpr uint32_t kWrk = 302;
  constexpr uint64_t kSk = 0xffff888000cc0000;
  Stream s;
  uint64_t t = 1000;
  s.Switch(t, 1, 0, kWrk, 0);
  s.SysExit(t += 100, 1, kWrk, "accept4", 7, JDW_OBJ_SOCKET, kSk);
  for (int i = 0; i < 3; i++) {
    s.SysEnter(t += 100, 1, kWrk, "recvfrom", 7, JDW_OBJ_SOCKET, kSk, 4096);
    s.SysExit(t += 100, 1, kWrk, "recvfrom", 100);
    s.SysEnter(t += 100, 1, kWrk, "sendto", 7, JDW_OBJ_SOCKET, kSk, 148);
    s.SysExit(t += 100, 1, kWrk, "sendto", 148);
  }
  s.SysEnter(t += 100, 1, kWrk, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 100, 1, kWrk, "close", 0);
  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 3u);
  // Each begins at the return of the read that brings its message (the
  // thread's interval starts there: the switch-in and the read's wait are
  // the connection's); the entry of the read for the next message ends
  // each one (new_msg); the close is the connection's.
  for (int i = 0; i < 3; i++) {
    ASSERT_FALSE(r.reqs[i].events.empty());
    EXPECT_EQ(r.reqs[i].events.front().record_type, JDW_EVENT_SYS_EXIT) << i;
  }
  EXPECT_EQ(r.reqs[0].events.size(), 4u);
  EXPECT_EQ(r.reqs[1].events.size(), 4u);
  EXPECT_EQ(r.reqs[2].events.size(), 3u);
  for (int i = 0; i < 3; i++) EXPECT_EQ(r.reqs[i].exchange, uint32_t(i));
}


// A process per connection, two backends serving a query each, taking
// turns on a lock (a semaphore: FUTEX_WAIT_BITSET, as a condition variable)
// while they write their log: each wakes the other as it releases the lock.
// Those wakeups are contention between two requests, not handoffs: each
// request keeps its own backend's work, whoever woke it, and the backend
// that woke from the lock and passes it on goes on with its own request.
TEST(ShippedSchemas, TcpThreadpoolKeepsBackendsThatWakeEachOtherApart) {
  constexpr uint32_t kB1 = 901, kB2 = 902;
  constexpr uint64_t kA = 0xffff888000f10000, kB = 0xffff888000f20000;
  constexpr uint64_t kLock = 0x7f0000001000, kLog = 0xffff888000f30000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 0, kB1, kA, 5432, 7101);
  s.SockInfo(t, 1, kB2, kB, 5432, 7102);
  s.Switch(t, 0, 0, kB1, 0);
  s.Switch(t, 1, 0, kB2, 0);
  // Each reads its query.
  s.SysEnter(t += 10, 0, kB1, "recvfrom", 9, JDW_OBJ_SOCKET, kA, 8192);
  s.SysExit(t += 10, 0, kB1, "recvfrom", 50);
  s.SysEnter(t += 10, 1, kB2, "recvfrom", 9, JDW_OBJ_SOCKET, kB, 8192);
  s.SysExit(t += 10, 1, kB2, "recvfrom", 50);
  // B1 waits for the lock B2 holds.
  s.SysEnter(t += 100, 0, kB1, "futex", -1, JDW_OBJ_FUTEX, kLock, 128 | 9);
  s.Switch(t += 10, 0, kB1, 0, 1);
  s.SysEnter(t += 100, 1, kB2, "pwrite64", 20, JDW_OBJ_FILE, kLog, 8192);
  s.SysExit(t += 10, 1, kB2, "pwrite64", 8192);
  s.SysEnter(t += 10, 1, kB2, "futex", -1, JDW_OBJ_FUTEX, kLock, 1);  // release: wakes B1
  s.Wakeup(t += 5, 1, kB2, kB1);
  s.SysExit(t += 5, 1, kB2, "futex", 1);
  s.SysEnter(t += 10, 1, kB2, "futex", -1, JDW_OBJ_FUTEX, kLock, 128 | 9);  // wants it back
  s.Switch(t += 10, 1, kB2, 0, 1);
  // B1 runs with the lock: 1 ms writing its log, wakes B2 as it releases
  // the lock, then waits for it once more.
  s.Switch(t += 10, 0, 0, kB1, 0);
  s.SysExit(t += 10, 0, kB1, "futex", 0);
  s.SysEnter(t += 10, 0, kB1, "futex", -1, JDW_OBJ_FUTEX, kLock, 1);
  s.Wakeup(t += 5, 0, kB1, kB2);
  s.SysExit(t += 5, 0, kB1, "futex", 1);
  s.SysEnter(t += 1'000'000, 0, kB1, "pwrite64", 20, JDW_OBJ_FILE, kLog, 8192);
  s.SysExit(t += 10, 0, kB1, "pwrite64", 8192);
  s.SysEnter(t += 10, 0, kB1, "futex", -1, JDW_OBJ_FUTEX, kLock, 128 | 9);
  s.Switch(t += 10, 0, kB1, 0, 1);
  // B2 runs, releases the lock (waking B1) and answers.
  s.Switch(t += 10, 1, 0, kB2, 0);
  s.SysExit(t += 10, 1, kB2, "futex", 0);
  s.SysEnter(t += 10, 1, kB2, "futex", -1, JDW_OBJ_FUTEX, kLock, 1);
  s.Wakeup(t += 5, 1, kB2, kB1);
  s.SysExit(t += 5, 1, kB2, "futex", 1);
  s.SysEnter(t += 10, 1, kB2, "sendto", 9, JDW_OBJ_SOCKET, kB, 30);
  s.SysExit(t += 10, 1, kB2, "sendto", 30);
  s.Switch(t += 10, 0, 0, kB1, 0);
  s.SysExit(t += 10, 0, kB1, "futex", 0);
  s.SysEnter(t += 10, 0, kB1, "sendto", 9, JDW_OBJ_SOCKET, kA, 30);
  s.SysExit(t += 10, 0, kB1, "sendto", 30);
  for (const auto& [tid, sk, cpu] : {std::tuple{kB1, kA, 0}, std::tuple{kB2, kB, 1}}) {
    s.SysEnter(t += 10, uint16_t(cpu), tid, "close", 9, JDW_OBJ_SOCKET, sk);
    s.SysExit(t += 10, uint16_t(cpu), tid, "close", 0);
  }

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_EQ(r.stats.wakeups_contention, 3u);
  for (const model::Request& q : r.reqs) {
    ASSERT_EQ(q.connections.size(), 1u);
    const uint32_t own = q.connections[0].remote == "127.0.0.1:7101" ? kB1 : kB2;
    EXPECT_EQ(q.threads, (std::vector<uint32_t>{own}));
    EXPECT_FALSE(q.timed_out);
    // B1's millisecond of log writing is its own request's, and its waits
    // for the lock are its blocked time.
    if (own == kB1) {
      EXPECT_GE(q.totals.cpu_ns, 1'000'000u);
      EXPECT_GT(q.totals.blocked_ns, 0u);
    } else {
      EXPECT_LT(q.totals.cpu_ns, 1'000'000u);
    }
  }
}

// A client-first login (PostgreSQL's startup: 41 bytes in, 410 out) then
// two queries. The bytes cannot tell the login from a query: the generic
// schema makes three requests of it; the postgres schema declares one
// set-up exchange (`setup 1`), which is then the connection's.
TEST(ShippedSchemas, DeclaredSetUpExchangeIsTheConnections) {
  constexpr uint32_t kBackend = 911;
  constexpr uint64_t kSk = 0xffff888000f40000;
  Stream s;
  uint64_t t = 1000;
  s.Switch(t, 0, 0, kBackend, 0);
  s.SockInfo(t += 10, 0, kBackend, kSk, 5432, 7201);
  for (const auto& [in, out] : {std::pair{41, 410}, std::pair{30, 60}, std::pair{40, 20}}) {
    s.SysEnter(t += 10, 0, kBackend, "recvfrom", 9, JDW_OBJ_SOCKET, kSk, 8192);
    s.SysExit(t += 10, 0, kBackend, "recvfrom", in);
    s.SysEnter(t += 200, 0, kBackend, "sendto", 9, JDW_OBJ_SOCKET, kSk, out);
    s.SysExit(t += 10, 0, kBackend, "sendto", out);
  }
  s.SysEnter(t += 10, 0, kBackend, "close", 9, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 10, 0, kBackend, "close", 0);

  Result generic = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  EXPECT_EQ(generic.reqs.size(), 3u);
  auto pg = schema::LoadSchema("postgres", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(pg.ok()) << pg.status().message();
  Result r = RunRecords(*pg, s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  EXPECT_EQ(r.reqs[0].msg_in_bytes, 30u);
  EXPECT_EQ(r.reqs[1].msg_in_bytes, 40u);
  ASSERT_EQ(r.conns.size(), 1u);
  EXPECT_EQ(r.conns[0].setups, 1u);
  EXPECT_EQ(r.conns[0].requests, 2u);
  EXPECT_GT(r.conns[0].cpu_ns, 0u);  // the login's work is the connection's
  EXPECT_EQ(r.stats.msg_setup, 1u);
}

// --- sockets: the kernel reuses struct sock memory at once ------------------

TEST(Sockets, ReusedSockAddressIsAnotherConnection) {
  constexpr uint64_t kSk = 0xffff888000dd0000;
  Stream s;
  // Connection 1 on kSk; its request stays open (thread 10's interval) past
  // the accept that gives kSk to connection 2.
  s.SockInfo(1000, 0, 10, kSk, 8080, 6000);  // as captured: just before accept returns
  s.SysExit(1010, 0, 10, "accept4", 5, JDW_OBJ_SOCKET, kSk);
  s.SysEnter(1100, 0, 10, "read", 5, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysEnter(1200, 0, 10, "close", 5, JDW_OBJ_SOCKET, kSk);
  s.SockInfo(2000, 1, 11, kSk, 8080, 6001);
  s.SysExit(2010, 1, 11, "accept4", 6, JDW_OBJ_SOCKET, kSk);
  s.Usdt(2050, 1, 11, "app:done", 0);
  s.Usdt(2100, 0, 10, "app:done", 0);
  // Thread 10 reads kSk again: the same address, another connection.
  s.SysEnter(2200, 0, 10, "read", 7, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysEnter(2300, 0, 10, "close", 7, JDW_OBJ_SOCKET, kSk);
  s.Usdt(2400, 0, 10, "app:done", 0);
  Result r = Extract(R"(
event accepted = sys_exit accept4 { start Sock = obj  basic Thread = tid }
event other_conn = sys_enter read where obj_kind == socket and new_sock == 1 { start Thread = tid  basic Sock = sock }
event io = sys_enter read where obj_kind == socket { basic Thread = tid  basic Sock = sock }
event closed = sys_enter close where obj_kind == socket { stop Sock = sock }
event done = usdt app:done { stop Thread = tid }
seed accepted
)",
                     s);
  ASSERT_EQ(r.reqs.size(), 2u);
  for (const auto& q : r.reqs) EXPECT_FALSE(q.timed_out);
  // Emitted after kSk became connection 2, request 1 still reports connection 1.
  ASSERT_EQ(r.reqs[0].connections.size(), 1u);
  EXPECT_EQ(r.reqs[0].connections[0].remote, "127.0.0.1:6000");
  ASSERT_EQ(r.reqs[1].connections.size(), 1u);
  EXPECT_EQ(r.reqs[1].connections[0].remote, "127.0.0.1:6001");
  // new_sock saw the reuse: thread 10's second read started a new interval.
  EXPECT_EQ(Symbols(r.reqs[1]), (std::vector<std::string>{"sys_exit:accept4", "usdt:app:done", "sys_enter:read",
                                                          "sys_enter:close", "usdt:app:done"}));
  // and thread 10's first read, right after its accept, was not "new".
  EXPECT_EQ(Symbols(r.reqs[0]), (std::vector<std::string>{"sys_exit:accept4", "sys_enter:read",
                                                          "sys_enter:close", "usdt:app:done"}));
}

TEST(Sockets, CloseReturningAfterTheAddressWasReusedLeavesTheNewConnectionAlone) {
  // Thread 20 closes connection 1; the socket is freed inside close(), and
  // the acceptor's next accept gets the same address before close returns.
  constexpr uint64_t kSk = 0xffff888000ee0000;
  Stream s;
  s.SockInfo(1000, 0, 10, kSk, 8080, 6000);
  s.SysExit(1010, 0, 10, "accept4", 5, JDW_OBJ_SOCKET, kSk);
  s.SysEnter(1100, 1, 20, "read", 5, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysEnter(1200, 1, 20, "close", 5, JDW_OBJ_SOCKET, kSk);
  s.SockInfo(1250, 0, 10, kSk, 8080, 6001);
  s.SysExit(1260, 0, 10, "accept4", 6, JDW_OBJ_SOCKET, kSk);
  s.SysExit(1300, 1, 20, "close", 0);  // connection 1's close returns
  s.SysEnter(1400, 1, 21, "read", 6, JDW_OBJ_SOCKET, kSk, 4096);
  s.SysEnter(1500, 1, 21, "close", 6, JDW_OBJ_SOCKET, kSk);
  s.SysExit(1600, 1, 21, "close", 0);
  Result r = Extract(R"(
event accepted = sys_exit accept4 { start Sock = obj }
event io = sys_enter read where obj_kind == socket { basic Sock = sock }
event closed = sys_exit close where obj_kind == socket { stop Sock = sock }
seed accepted
)",
                     s);
  ASSERT_EQ(r.reqs.size(), 2u);
  for (const auto& q : r.reqs) EXPECT_FALSE(q.timed_out);
  // Connection 2 keeps its read: the first close did not end it.
  EXPECT_EQ(r.reqs[1].connections[0].remote, "127.0.0.1:6001");
  EXPECT_EQ(Symbols(r.reqs[1]),
            (std::vector<std::string>{"sys_exit:accept4", "sys_enter:read", "sys_exit:close"}));
}

}  // namespace
}  // namespace jackdaw::join
