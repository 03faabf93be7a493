// A request across two processes must come out the same whichever of them
// the scheduler ran first where their order does not change the work: the
// clustering compares requests by their events, so an event that joins a
// request or not by timing alone splits one kind of request in two.
// Synthetic traces of a front (tgid 1000) whose worker serves a client
// request and calls a backend (tgid 2000) on a new loopback connection,
// joined with the shipped tcp-threadpool schema, each in the two orders.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "join/endpoint_format.h"
#include "join/extractor_test_util.h"
#include "join/loopback_trace_test_util.h"

namespace jackdaw::join {
namespace {

using testing::Result;
using testing::RunRecords;
using testing::ShippedSchema;
using testing::Stream;

constexpr uint32_t kFrontPid = 1000, kWorker = 1001, kBackendPid = 2000, kBackend = 2001;
constexpr uint64_t kClientSk = 0xffff888000a10000;  // the client's connection to the front
constexpr uint64_t kCallerSk = 0xffff888000b10000;  // the front's end of its backend connection
constexpr uint64_t kServedSk = 0xffff888000c10000;  // the backend's end
constexpr uint16_t kFrontPort = 8080, kBackendPort = 9000, kClientPort = 40000, kCallerPort = 50001;
constexpr uint64_t kBlocked = 1, kPreempted = 0;

class Trace : public testing::LoopbackTrace {
 public:
  Trace() {
    for (uint32_t tid : {kFrontPid, kWorker}) s.meta().tasks[tid] = trace::TaskInfo{kFrontPid, "front", 0};
    for (uint32_t tid : {kBackendPid, kBackend}) s.meta().tasks[tid] = trace::TaskInfo{kBackendPid, "backend", 0};
    Switch(0, 0, 0, kWorker, kFrontPid, 0);
    Switch(1, 0, 0, kBackend, kBackendPid, 0);
  }

  // The worker takes the client's connection and reads its request.
  void Accept() {
    Info(0, kFrontPid, kWorker, kClientSk, kFrontPort, kClientPort);
    Exit(0, kFrontPid, kWorker, "accept4", 7, kClientSk);
    Enter(0, kFrontPid, kWorker, "recvfrom", 7, kClientSk, 4096);
    Exit(0, kFrontPid, kWorker, "recvfrom", 100);
  }
  // The worker opens its backend connection; the backend accepts it.
  void Connect() {
    Enter(0, kFrontPid, kWorker, "connect", 9, kCallerSk);
    Info(0, kFrontPid, kWorker, kCallerSk, kCallerPort, kBackendPort);
    Exit(0, kFrontPid, kWorker, "connect", 0, kCallerSk);
    Info(1, kBackendPid, kBackend, kServedSk, kBackendPort, kCallerPort);
    Exit(1, kBackendPid, kBackend, "accept4", 5, kServedSk);
  }
  void Call(int64_t bytes) {
    Enter(0, kFrontPid, kWorker, "sendto", 9, kCallerSk, bytes);
    Exit(0, kFrontPid, kWorker, "sendto", bytes);
  }
  // The backend reads `bytes` of the call and answers it.
  void Serve(int64_t bytes) {
    Enter(1, kBackendPid, kBackend, "read", 5, kServedSk, 4096);
    Exit(1, kBackendPid, kBackend, "read", bytes);
    t += 100'000;  // the backend's work
    Enter(1, kBackendPid, kBackend, "write", 5, kServedSk, 500);
    Exit(1, kBackendPid, kBackend, "write", 500);
  }
  // The worker reads the answer, closes the backend connection and
  // answers its client.
  void ReadAnswerAndRespond() {
    Enter(0, kFrontPid, kWorker, "recvfrom", 9, kCallerSk, 4096);
    Exit(0, kFrontPid, kWorker, "recvfrom", 500);
    Enter(0, kFrontPid, kWorker, "close", 9, kCallerSk);
    Exit(0, kFrontPid, kWorker, "close", 0);
    Enter(0, kFrontPid, kWorker, "sendto", 7, kClientSk, 120);
    Exit(0, kFrontPid, kWorker, "sendto", 120);
    Enter(0, kFrontPid, kWorker, "close", 7, kClientSk);
    Exit(0, kFrontPid, kWorker, "close", 0);
  }

};

std::vector<std::string> SymbolsOf(const model::Request& r, uint32_t tid) {
  std::vector<std::string> out;
  for (const auto& e : r.events)
    if (e.tid == tid && e.symbol.str().rfind("switch_", 0) != 0) out.push_back(e.symbol.str());
  return out;
}

// A lingering close (php-fpm after each FastCGI response; nginx's and
// apache's lingering_close): the backend answers, shuts its sending side
// down and reads until the caller's end-of-file, draining the tail of the
// call it left unread. Whether it gets to that read before or after the
// caller has read the answer and closed is the scheduler's choice; either
// way the drain is the connection's, not the request's.
Result LingeringClose(bool backend_drains_first) {
  Trace tr;
  tr.Accept();
  tr.Connect();
  tr.Call(108);
  tr.Serve(100);  // 8 bytes of the call (a trailing empty record) stay unread
  tr.Enter(1, kBackendPid, kBackend, "shutdown", 5, kServedSk);
  tr.Exit(1, kBackendPid, kBackend, "shutdown", 0);
  if (backend_drains_first) {
    tr.Enter(1, kBackendPid, kBackend, "recvfrom", 5, kServedSk, 8);
    tr.Exit(1, kBackendPid, kBackend, "recvfrom", 8);
    tr.Enter(1, kBackendPid, kBackend, "recvfrom", 5, kServedSk, 8);
    tr.Switch(1, kBackend, kBackendPid, 0, 0, kBlocked);  // waits for the caller's end-of-file
    tr.ReadAnswerAndRespond();
    tr.Switch(1, 0, 0, kBackend, kBackendPid, 0);
    tr.Exit(1, kBackendPid, kBackend, "recvfrom", 0);
  } else {
    tr.Switch(1, kBackend, kBackendPid, 0, 0, kPreempted);
    tr.ReadAnswerAndRespond();
    tr.Switch(1, 0, 0, kBackend, kBackendPid, 0);
    tr.Enter(1, kBackendPid, kBackend, "recvfrom", 5, kServedSk, 8);
    tr.Exit(1, kBackendPid, kBackend, "recvfrom", 8);
    tr.Enter(1, kBackendPid, kBackend, "recvfrom", 5, kServedSk, 8);
    tr.Exit(1, kBackendPid, kBackend, "recvfrom", 0);
  }
  tr.Enter(1, kBackendPid, kBackend, "close", 5, kServedSk);
  tr.Exit(1, kBackendPid, kBackend, "close", 0);
  return RunRecords(ShippedSchema("tcp-threadpool"), tr.s, tr.s.records());
}

TEST(PeerTiming, ABackendsLingeringCloseIsNotTheRequestsWhicheverRunsFirst) {
  const Result first = LingeringClose(true), after = LingeringClose(false);
  ASSERT_EQ(first.reqs.size(), 1u) << "the backend's drain begins no request of its own";
  ASSERT_EQ(after.reqs.size(), 1u);
  EXPECT_EQ(first.reqs[0].tgid, kFrontPid);
  EXPECT_EQ(SymbolsOf(first.reqs[0], kBackend), SymbolsOf(after.reqs[0], kBackend));
  EXPECT_EQ(SymbolsOf(after.reqs[0], kBackend).back(), "sys_exit:write") << "the answer is the backend's last";
  EXPECT_EQ(SymbolsOf(first.reqs[0], kBackend).back(), "sys_exit:write") << "the answer is the backend's last";
  EXPECT_EQ(SymbolsOf(first.reqs[0], kWorker), SymbolsOf(after.reqs[0], kWorker));
  EXPECT_EQ(first.stats.msg_drain_reads, 1u);
  EXPECT_EQ(after.stats.msg_drain_reads, 1u);
}

// A server that speaks first (MySQL's handshake): the backend greets the
// connection as it accepts it, and the worker reads the greeting before it
// writes its call. Whether the worker slept until the greeting arrived (in
// poll, woken by the backend) or had only been preempted is timing; the
// read is the request's either way, as the connect that opened the
// connection for it is.
Result Greeting(bool worker_sleeps) {
  Trace tr;
  tr.Accept();
  tr.Connect();
  // It polls the connection for the greeting (php's mysqlnd does).
  tr.Enter(0, kFrontPid, kWorker, "poll", -1, 0);
  if (worker_sleeps) tr.Switch(0, kWorker, kFrontPid, 0, 0, kBlocked);
  else tr.Switch(0, kWorker, kFrontPid, 0, 0, kPreempted);
  tr.Enter(1, kBackendPid, kBackend, "write", 5, kServedSk, 104);
  tr.Exit(1, kBackendPid, kBackend, "write", 104);
  if (worker_sleeps) tr.Wake(1, kBackend, kBackendPid, kWorker, kFrontPid);
  tr.Switch(0, 0, 0, kWorker, kFrontPid, 0);
  tr.Exit(0, kFrontPid, kWorker, "poll", 1);
  tr.Enter(0, kFrontPid, kWorker, "recvfrom", 9, kCallerSk, 4096);
  tr.Exit(0, kFrontPid, kWorker, "recvfrom", 104);
  tr.Call(40);
  tr.Serve(40);
  tr.ReadAnswerAndRespond();
  tr.Enter(1, kBackendPid, kBackend, "read", 5, kServedSk, 4096);
  tr.Exit(1, kBackendPid, kBackend, "read", 0);
  tr.Enter(1, kBackendPid, kBackend, "close", 5, kServedSk);
  tr.Exit(1, kBackendPid, kBackend, "close", 0);
  return RunRecords(ShippedSchema("tcp-threadpool"), tr.s, tr.s.records());
}

TEST(PeerTiming, AGreetingReadOnTheRequestsOwnConnectionIsTheRequestsWhetherItsThreadSleptOrNot) {
  const Result slept = Greeting(true), ran = Greeting(false);
  ASSERT_EQ(slept.reqs.size(), 1u);
  ASSERT_EQ(ran.reqs.size(), 1u);
  const std::vector<std::string> worker = SymbolsOf(ran.reqs[0], kWorker);
  EXPECT_EQ(SymbolsOf(slept.reqs[0], kWorker), worker);
  // connect's return, then the greeting's read, then the call.
  int reads_before_call = 0;
  for (const std::string& s : worker) {
    if (s == "sys_enter:sendto") break;
    if (s == "sys_exit:recvfrom") ++reads_before_call;
  }
  EXPECT_EQ(reads_before_call, 2) << "the client's request, and the greeting";
  ASSERT_EQ(slept.reqs[0].calls.size(), 1u);
  EXPECT_EQ(slept.reqs[0].calls[0].bytes_in, 500u) << "the greeting is not the call's answer";
  EXPECT_EQ(slept.reqs[0].calls[0].bytes_out, 40u);
}

}  // namespace
}  // namespace jackdaw::join
