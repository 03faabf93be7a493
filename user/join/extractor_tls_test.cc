// A TLS connection's handshake is its set-up whichever way the server's
// reads fall: a client sends its first request right after its last
// handshake flight (TLS 1.3; TLS 1.2 resuming), and whether the server reads
// the two apart or in one read is timing. Synthetic traces of a server
// (tgid 1000) serving one request on a TLS connection, each in both orders,
// joined with the shipped tcp-threadpool schema: the request must come out
// the same (message_tracker.h, "TLS").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jackdaw/abi.h"
#include "join/extractor_test_util.h"
#include "join/loopback_trace_test_util.h"

namespace jackdaw::join {
namespace {

using testing::Result;
using testing::RunRecords;
using testing::ShippedSchema;

constexpr uint32_t kPid = 1000, kWorker = 1001;
constexpr uint64_t kSk = 0xffff888000d10000, kEarlierSk = 0xffff888000e10000;
constexpr uint16_t kPort = 8443, kClientPort = 41000, kEarlierPort = 40999;
constexpr int64_t kEagain = -11;

uint8_t Peek(uint32_t first_type, uint32_t app_records = 0) {
  return static_cast<uint8_t>(JDW_PEEK_TLS | (first_type - 20) | app_records << JDW_PEEK_APP_SHIFT);
}
constexpr uint32_t kHandshake = 22, kCcs = 20, kAppData = 23;

class Trace : public testing::LoopbackTrace {
 public:
  Trace() {
    for (uint32_t tid : {kPid, kWorker}) s.meta().tasks[tid] = trace::TaskInfo{kPid, "server", 0};
    Switch(0, 0, 0, kWorker, kPid, 0);
  }
  // The connection the calls below are on.
  uint64_t sk = kSk;
  uint16_t client_port = kClientPort;
  // A client push of `bytes` at stream sequence `seq`.
  void Push(uint32_t seq, uint32_t bytes) {
    s.Packet(JDW_EVENT_NET_RECV, t += 10, 1, JDW_CTX_SOFTIRQ, 0, 0, client_port, kPort, bytes + 52);
    s.PacketFlags(0x18);
    s.PacketSeq(seq);
  }
  void Read(int64_t ret, uint8_t peek = 0) {
    Enter(0, kPid, kWorker, "read", 7, sk, 16709);
    Exit(0, kPid, kWorker, "read", ret);
    s.ExitPeek(peek);
  }
  void Write(int64_t bytes) {
    t += 50'000;  // the work before it (the ticket's crypto, the request's)
    Enter(0, kPid, kWorker, "write", 7, sk, uint64_t(bytes));
    Exit(0, kPid, kWorker, "write", bytes);
  }
  // Accept, the ClientHello and the server's flight.
  void Hello() {
    Info(0, kPid, kWorker, sk, kPort, client_port);
    Exit(0, kPid, kWorker, "accept4", 7, sk);
    Push(1000, 517);
    Read(517, Peek(kHandshake));
    Write(245);
    Read(kEagain);
  }
  // The response (a file), the close.
  void Respond() {
    Enter(0, kPid, kWorker, "pread64", 9, 0, 5000);
    Exit(0, kPid, kWorker, "pread64", 5000);
    Write(5050);
    Enter(0, kPid, kWorker, "close", 7, sk);
    Exit(0, kPid, kWorker, "close", 0);
  }
};

std::vector<std::string> SymbolsOf(const model::Request& r) {
  std::vector<std::string> out;
  for (const auto& e : r.events)
    if (e.tid == kWorker && e.symbol.str().rfind("switch_", 0) != 0) out.push_back(e.symbol.str());
  return out;
}

// TLS 1.3: the change_cipher_spec and Finished (80 B), then the request (88
// B); the server answers the Finished with a session ticket (287 B), then
// reads until the socket is empty. An earlier connection read the two
// apart (how many writes answer the Finished is learnt from one).
Result Tls13(bool one_read) {
  Trace tr;
  tr.sk = kEarlierSk;
  tr.client_port = kEarlierPort;
  tr.Hello();
  tr.Push(1517, 80);
  tr.Push(1597, 88);
  tr.Read(80, Peek(kCcs));
  tr.Write(287);
  tr.Read(88, Peek(kAppData, 1));
  tr.Read(kEagain);
  tr.Respond();
  tr.sk = kSk;
  tr.client_port = kClientPort;
  tr.Hello();
  tr.Push(1517, 80);
  tr.Push(1597, 88);
  if (one_read) {
    tr.Read(168, Peek(kCcs, 1));  // the Finished after the CCS is the handshake's
    tr.Write(287);
    tr.Read(kEagain);
  } else {
    tr.Read(80, Peek(kCcs));
    tr.Write(287);
    tr.Read(88, Peek(kAppData, 1));
    tr.Read(kEagain);
  }
  tr.Respond();
  return RunRecords(ShippedSchema("tcp-threadpool"), tr.s, tr.s.records());
}

TEST(TlsSetup, ATls13RequestReadWithTheFinishedIsTheSameAsOneReadApart) {
  const Result apart = Tls13(false), together = Tls13(true);
  ASSERT_EQ(apart.reqs.size(), 2u);
  ASSERT_EQ(together.reqs.size(), 2u);
  const model::Request &a = apart.reqs[1], &b = together.reqs[1];
  EXPECT_EQ(b.msg_in_bytes, 88u) << "the request's own bytes, not the Finished's";
  EXPECT_EQ(b.msg_out_bytes, 5050u) << "the ticket is the handshake's answer";
  EXPECT_EQ(a.msg_in_bytes, b.msg_in_bytes);
  EXPECT_EQ(a.msg_out_bytes, b.msg_out_bytes);
  EXPECT_FALSE(b.pipelined);
  // The read that returned the request begins it either way; the ticket's
  // write (and the CPU before it) is the connection's.
  EXPECT_EQ(SymbolsOf(a), SymbolsOf(b));
  EXPECT_EQ(SymbolsOf(b).front(), "sys_exit:read");
  EXPECT_LT(b.totals.cpu_ns, 100'000u) << "the ticket's 50 us are not the request's";
  EXPECT_EQ(a.totals.cpu_ns, b.totals.cpu_ns);
  EXPECT_EQ(a.start_ns, b.start_ns) << "the request's push";
}

// TLS 1.2 resuming: the client's change_cipher_spec and Finished end the
// handshake and the server answers nothing; the request follows.
Result Tls12Resumed(bool one_read) {
  Trace tr;
  tr.Hello();
  tr.Push(1517, 51);
  tr.Push(1568, 95);
  if (one_read) {
    tr.Read(146, Peek(kCcs, 1));
  } else {
    tr.Read(51, Peek(kCcs));
    tr.Read(kEagain);
    tr.Read(95, Peek(kAppData, 1));
  }
  tr.Read(kEagain);
  tr.Respond();
  return RunRecords(ShippedSchema("tcp-threadpool"), tr.s, tr.s.records());
}

TEST(TlsSetup, AnUnansweredTls12FinishedIsTheConnectionsWhicheverWayItIsRead) {
  const Result apart = Tls12Resumed(false), together = Tls12Resumed(true);
  ASSERT_EQ(apart.reqs.size(), 1u);
  ASSERT_EQ(together.reqs.size(), 1u);
  const model::Request &a = apart.reqs[0], &b = together.reqs[0];
  EXPECT_EQ(a.msg_in_bytes, 95u) << "the request's own bytes, not the Finished's";
  EXPECT_EQ(b.msg_in_bytes, 95u);
  EXPECT_EQ(a.msg_out_bytes, 5050u);
  EXPECT_EQ(SymbolsOf(a), SymbolsOf(b));
  EXPECT_EQ(a.start_ns, b.start_ns) << "the request's push";
}

// A client segment the server acknowledged late comes again: its bytes are
// counted once, so the read after the response is not taken for the next
// message's and the response stays the request's.
TEST(TlsSetup, ARetransmittedRequestSegmentDoesNotEndTheRequestBeforeItsResponse) {
  Trace tr;
  tr.Hello();
  tr.Push(1517, 80);
  tr.Push(1597, 88);
  tr.Push(1597, 88);  // sent again
  tr.Read(168, Peek(kCcs, 1));
  tr.Write(287);
  tr.Read(kEagain);
  tr.Respond();
  const Result r = RunRecords(ShippedSchema("tcp-threadpool"), tr.s, tr.s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  // The response and the ticket (no Finished read alone yet to say how the
  // server answers one): not the ticket alone.
  EXPECT_EQ(r.reqs[0].msg_out_bytes, 287u + 5050u);
  EXPECT_EQ(r.conns.size(), 1u);
  EXPECT_EQ(r.conns[0].greetings, 0u) << "the response is not a greeting";
}

}  // namespace
}  // namespace jackdaw::join
