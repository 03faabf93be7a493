// The call rule over TCP with a connection per call, on a synthetic trace
// of two processes and the shipped tcp-threadpool schema: a front (tgid
// 1000) whose two worker threads each serve a client request and call a
// backend (tgid 2000) on loopback, a new connection per call. The kernel
// frees a socket inside close() and hands its memory to the next socket at
// once, so the workers' backend connections follow one another at one
// address; a close may even return after another thread's connect() took
// the address (the closing thread was preempted on its way out).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "join/endpoint_format.h"
#include "join/extractor_test_util.h"
#include "join/loopback_trace_test_util.h"

namespace jackdaw::join {
namespace {

using testing::Result;
using testing::RunRecords;
using testing::ShippedSchema;
using testing::Stream;

constexpr uint32_t kFrontPid = 1000, kWorkerA = 1001, kWorkerB = 1002, kBackendPid = 2000, kBackend = 2001;
constexpr uint64_t kClientSkA = 0xffff888000a10000, kClientSkB = 0xffff888000a20000;  // the clients' connections
constexpr uint64_t kCallerSk = 0xffff888000b10000;  // every backend connection's front end, in turn
constexpr uint64_t kServedSk = 0xffff888000c10000;  // and its backend end, in turn
constexpr uint16_t kFrontPort = 8080, kBackendPort = 9000;

class Trace : public testing::LoopbackTrace {
 public:
  Trace() {
    for (uint32_t tid : {kFrontPid, kWorkerA, kWorkerB}) s.meta().tasks[tid] = trace::TaskInfo{kFrontPid, "front", 0};
    for (uint32_t tid : {kBackendPid, kBackend}) s.meta().tasks[tid] = trace::TaskInfo{kBackendPid, "backend", 0};
  }

  // Worker `tid` takes the client connection `sk` (client port `port`) and
  // reads its request.
  void Accept(uint32_t tid, uint64_t sk, uint16_t port, int32_t fd) {
    Info(0, kFrontPid, tid, sk, kFrontPort, port);
    Exit(0, kFrontPid, tid, "accept4", fd, sk);
    Enter(0, kFrontPid, tid, "recvfrom", fd, sk, 4096);
    Exit(0, kFrontPid, tid, "recvfrom", 100);
  }
  // Worker `tid` calls the backend on a new connection from `port`, the
  // backend answers, the worker reads the answer and enters close().
  void CallUpToClose(uint32_t tid, uint16_t port) {
    Enter(0, kFrontPid, tid, "connect", 9, kCallerSk);
    Info(0, kFrontPid, tid, kCallerSk, port, kBackendPort);
    Exit(0, kFrontPid, tid, "connect", 0, kCallerSk);
    Enter(0, kFrontPid, tid, "sendto", 9, kCallerSk, 22);
    Exit(0, kFrontPid, tid, "sendto", 22);
    Info(1, kBackendPid, kBackend, kServedSk, kBackendPort, port);
    Exit(1, kBackendPid, kBackend, "accept4", 5, kServedSk);
    Enter(1, kBackendPid, kBackend, "read", 5, kServedSk, 4096);
    Exit(1, kBackendPid, kBackend, "read", 22);
    Enter(1, kBackendPid, kBackend, "sendto", 5, kServedSk, 500);
    t += 100'000;  // the backend's work
    Exit(1, kBackendPid, kBackend, "sendto", 500);
    Enter(1, kBackendPid, kBackend, "close", 5, kServedSk);
    Exit(1, kBackendPid, kBackend, "close", 0);
    Enter(0, kFrontPid, tid, "recvfrom", 9, kCallerSk, 4096);
    Exit(0, kFrontPid, tid, "recvfrom", 500);
    Enter(0, kFrontPid, tid, "close", 9, kCallerSk);
  }
  void Respond(uint32_t tid, uint64_t sk, int32_t fd) {
    Enter(0, kFrontPid, tid, "sendto", fd, sk, 120);
    Exit(0, kFrontPid, tid, "sendto", 120);
    Enter(0, kFrontPid, tid, "close", fd, sk);
    Exit(0, kFrontPid, tid, "close", 0);
  }

};

// Worker A's first call's close() returns only after worker B's connect()
// got the same socket address for B's call: that late return is still A's
// close of A's call, and A goes on with its request -- its second call
// belongs to it, and B's call to B.
TEST(TcpCalls, ACloseReturningAfterItsSocketWentToAnotherCallKeepsTheCallersRequest) {
  Trace tr;
  tr.Switch(0, 0, 0, kWorkerA, kFrontPid, 0);
  tr.Switch(1, 0, 0, kBackend, kBackendPid, 0);
  tr.Accept(kWorkerA, kClientSkA, 40000, 7);
  tr.CallUpToClose(kWorkerA, 50001);
  tr.Switch(0, kWorkerA, kFrontPid, kWorkerB, kFrontPid, 0);  // preempted inside close()
  tr.Accept(kWorkerB, kClientSkB, 40001, 8);
  tr.CallUpToClose(kWorkerB, 50002);
  tr.Exit(0, kFrontPid, kWorkerB, "close", 0);
  tr.Switch(0, kWorkerB, kFrontPid, kWorkerA, kFrontPid, 0);
  tr.Exit(0, kFrontPid, kWorkerA, "close", 0);  // A's first close returns, its socket long B's
  tr.CallUpToClose(kWorkerA, 50003);
  tr.Exit(0, kFrontPid, kWorkerA, "close", 0);
  tr.Respond(kWorkerA, kClientSkA, 7);
  tr.Switch(0, kWorkerA, kFrontPid, kWorkerB, kFrontPid, 0);
  tr.Respond(kWorkerB, kClientSkB, 8);

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), tr.s, tr.s.records());
  ASSERT_EQ(r.reqs.size(), 2u) << "the backend's exchanges are the front requests', no requests of their own";
  const model::Request* a = nullptr;
  const model::Request* b = nullptr;
  for (const model::Request& q : r.reqs) {
    EXPECT_EQ(q.tgid, kFrontPid);
    for (const model::Call& c : q.calls) (c.caller_tid == kWorkerA ? a : b) = &q;
  }
  ASSERT_TRUE(a && b && a != b);
  ASSERT_EQ(a->calls.size(), 2u) << "worker A's second call is its request's";
  ASSERT_EQ(b->calls.size(), 1u);
  for (const model::Request* q : {a, b}) {
    ASSERT_EQ(q->processes.size(), 2u);
    EXPECT_EQ(q->processes[1].tgid, kBackendPid);
    std::set<std::string> locals;
    for (const model::Call& c : q->calls) {
      locals.insert(c.endpoint.local);
      EXPECT_EQ(c.caller_tid, q == a ? kWorkerA : kWorkerB);
      EXPECT_TRUE(c.answered);
      EXPECT_EQ(c.peer_tgid, kBackendPid);
    }
    // Each call names its own connection, though the socket serves the
    // next one by the time a call is known to be over.
    const std::set<std::string> want =
        q == a ? std::set<std::string>{"127.0.0.1:50001", "127.0.0.1:50003"} : std::set<std::string>{"127.0.0.1:50002"};
    EXPECT_EQ(locals, want);
  }
  EXPECT_EQ(r.stats.calls_joined, 3u);
}

}  // namespace
}  // namespace jackdaw::join
