// The call rule over a unix socket, and its faults (a backend that never
// answers or closes mid-exchange, a hundred calls, a call cycle), on a
// synthetic trace of two processes
// with the shipped tcp-threadpool schema: a front (tgid 1000) serves a TCP
// client and calls a backend (tgid 2000) on a unix socket, as nginx calls
// php-fpm. The sock_info of each unix end names its peer socket, which is
// all that pairs them: with those descriptions the backend's exchange joins
// the front's request; without them (a trace from before ABI 5) it is a
// request of its own.
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

constexpr uint32_t kFrontPid = 1000, kFront = 1001, kBackendPid = 2000, kBackend = 2001, kClientPid = 3000;
constexpr uint64_t kFrontSk = 0xffff888000a10000;   // the front's TCP connection from its client
constexpr uint64_t kCallerSk = 0xffff888000b10000;  // the front's end of the unix connection
constexpr uint64_t kServedSk = 0xffff888000c10000;  // the backend's (accepted) end
const char kPath[] = "/run/app.sock";

void Enter(Stream& s, uint64_t ts, uint16_t cpu, uint32_t tgid, uint32_t tid, const char* sc, int32_t fd,
           uint64_t obj, uint64_t arg = 0) {
  s.SockEnterOf(ts, cpu, tgid, tid, sc, fd, obj, arg);
}

void Exit(Stream& s, uint64_t ts, uint16_t cpu, uint32_t tgid, uint32_t tid, const char* sc, int64_t ret,
          uint64_t obj = 0) {
  s.SockExitOf(ts, cpu, tgid, tid, sc, ret, obj);
}

void UnixInfo(Stream& s, uint64_t ts, uint16_t cpu, uint32_t tgid, uint32_t tid, uint64_t sk, uint64_t peer,
              uint32_t peercred, uint8_t flags) {
  jdw_sock_info b{};
  b.sk = sk;
  b.family = kAfUnix;
  b.sock_type = 1;
  b.peer_sk = peer;
  b.peer_tgid = peercred;
  b.unix_flags = flags;
  b.path_len = sizeof(kPath);  // the kernel counts a path's NUL
  memcpy(b.path, kPath, sizeof(kPath) - 1);
  s.Add(JDW_EVENT_SOCK_INFO, ts, cpu, JDW_CTX_TASK, tgid, tid, b);
}

// One client request through both processes; `describe_unix`: whether the
// capture described the unix ends (ABI 5) or not (ABI 4).
void FrontCallsBackend(Stream& s, bool describe_unix) {
  s.meta().tasks[kFront] = trace::TaskInfo{kFrontPid, "front", 0};
  s.meta().tasks[kFrontPid] = trace::TaskInfo{kFrontPid, "front", 0};
  s.meta().tasks[kBackend] = trace::TaskInfo{kBackendPid, "backend", 0};
  s.meta().tasks[kBackendPid] = trace::TaskInfo{kBackendPid, "backend", 0};
  uint64_t t = 1000;
  s.Switch(t, 0, 0, kFront, 0, 0, kFrontPid);
  s.Switch(t, 1, 0, kBackend, 0, 0, kBackendPid);
  // The front accepts its client and reads the request.
  jdw_sock_info tcp{};
  tcp.sk = kFrontSk;
  tcp.family = kAfInet;
  tcp.protocol = kIpProtoTcp;
  tcp.sport = 8080;
  tcp.dport = 40000;
  tcp.saddr[0] = tcp.daddr[0] = 127;
  tcp.saddr[3] = tcp.daddr[3] = 1;
  s.Add(JDW_EVENT_SOCK_INFO, t += 10, 0, JDW_CTX_TASK, kFrontPid, kFront, tcp);
  Exit(s, t += 10, 0, kFrontPid, kFront, "accept4", 7, kFrontSk);
  Enter(s, t += 10, 0, kFrontPid, kFront, "recvfrom", 7, kFrontSk, 4096);
  Exit(s, t += 10, 0, kFrontPid, kFront, "recvfrom", 100);
  // It connects to the backend's unix socket (the sock_info comes with
  // connect's return, as the probe emits it) and writes the call.
  Enter(s, t += 10, 0, kFrontPid, kFront, "connect", 8, kCallerSk);
  if (describe_unix) UnixInfo(s, t += 5, 0, kFrontPid, kFront, kCallerSk, kServedSk, kBackendPid, JDW_UNIX_PATH_PEER);
  Exit(s, t += 5, 0, kFrontPid, kFront, "connect", 0, kCallerSk);
  Enter(s, t += 10, 0, kFrontPid, kFront, "sendto", 8, kCallerSk, 50);
  Exit(s, t += 10, 0, kFrontPid, kFront, "sendto", 50);
  Enter(s, t += 10, 0, kFrontPid, kFront, "recvfrom", 8, kCallerSk, 4096);
  s.Switch(t += 10, 0, kFront, 0, 1, kFrontPid, 0);
  // The backend accepts, reads the call, works 1 ms, answers.
  if (describe_unix) UnixInfo(s, t += 10, 1, kBackendPid, kBackend, kServedSk, kCallerSk, kFrontPid, JDW_UNIX_PATH_OWN);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "accept4", 9, kServedSk);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "read", 9, kServedSk, 4096);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "read", 50);
  Enter(s, t += 1'000'000, 1, kBackendPid, kBackend, "write", 9, kServedSk, 30);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "write", 30);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "read", 9, kServedSk, 4096);
  s.Switch(t += 10, 1, kBackend, 0, 1, kBackendPid, 0);
  // The front reads the answer, closes the call's connection, responds.
  s.Switch(t += 10, 0, 0, kFront, 0, 0, kFrontPid);
  Exit(s, t += 10, 0, kFrontPid, kFront, "recvfrom", 30);
  Enter(s, t += 10, 0, kFrontPid, kFront, "close", 8, kCallerSk);
  Exit(s, t += 10, 0, kFrontPid, kFront, "close", 0);
  Enter(s, t += 10, 0, kFrontPid, kFront, "sendto", 7, kFrontSk, 148);
  Exit(s, t += 10, 0, kFrontPid, kFront, "sendto", 148);
  Enter(s, t += 10, 0, kFrontPid, kFront, "recvfrom", 7, kFrontSk, 4096);
  Exit(s, t += 10, 0, kFrontPid, kFront, "recvfrom", 0);
  Enter(s, t += 10, 0, kFrontPid, kFront, "close", 7, kFrontSk);
  Exit(s, t += 10, 0, kFrontPid, kFront, "close", 0);
  // The backend sees the end of the connection.
  s.Switch(t += 10, 1, 0, kBackend, 0, 0, kBackendPid);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "read", 0);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "close", 9, kServedSk);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "close", 0);
}

TEST(UnixCalls, BackendsExchangeOverAUnixSocketJoinsTheCallersRequest) {
  Stream s;
  FrontCallsBackend(s, true);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u) << "the backend's exchange is the front request's, not one of its own";
  const model::Request& q = r.reqs[0];
  EXPECT_EQ(q.tgid, kFrontPid);
  ASSERT_EQ(q.calls.size(), 1u);
  const model::Call& c = q.calls[0];
  EXPECT_EQ(c.peer_tgid, kBackendPid);
  EXPECT_TRUE(c.answered);
  EXPECT_FALSE(c.overlapped);
  EXPECT_EQ(c.endpoint.local, "unix:");
  EXPECT_EQ(c.endpoint.remote, std::string("unix:") + kPath);
  EXPECT_EQ(c.endpoint.peer_tgid, kBackendPid);
  EXPECT_EQ(c.endpoint.peer_comm, "backend");
  ASSERT_EQ(q.processes.size(), 2u);
  EXPECT_EQ(q.processes[0].tgid, kFrontPid);
  EXPECT_EQ(q.processes[1].tgid, kBackendPid);
  EXPECT_EQ(q.processes[1].comm, "backend");
  EXPECT_EQ(q.processes[1].tier, 1u);
  EXPECT_GE(q.processes[1].cpu_ns, 1'000'000u) << "the backend's millisecond for the call";
  // The request's unix connections name the process at their other end.
  int unix_conns = 0;
  for (const model::Endpoint& e : q.connections) {
    if (e.local.rfind("unix:", 0) != 0) continue;
    unix_conns++;
    if (e.local == "unix:") EXPECT_EQ(e.peer_tgid, kBackendPid);
    else EXPECT_EQ(e.peer_tgid, kFrontPid) << e.local;
  }
  EXPECT_EQ(unix_conns, 2);
  EXPECT_EQ(r.stats.calls_joined, 1u);
  // The backend's connection line names the front.
  bool backend_line = false;
  for (const model::Connection& conn : r.conns)
    if (conn.endpoint.local == std::string("unix:") + kPath) {
      backend_line = true;
      EXPECT_EQ(conn.endpoint.peer_tgid, kFrontPid);
      EXPECT_EQ(conn.endpoint.peer_comm, "front");
    }
  EXPECT_TRUE(backend_line);
}

TEST(UnixCalls, WithoutTheUnixDescriptionsTheBackendIsARequestOfItsOwn) {
  Stream s;
  FrontCallsBackend(s, false);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  for (const model::Request& q : r.reqs)
    for (const model::Call& c : q.calls) EXPECT_EQ(c.peer_tgid, 0u);
  EXPECT_EQ(r.stats.calls_joined, 0u);
}

// A SO_PEERCRED-only peer (a client outside the trace): the request names
// its pid, with no name.
TEST(UnixCalls, AnUntracedClientIsNamedByItsPid) {
  Stream s;
  s.meta().tasks[kBackend] = trace::TaskInfo{kBackendPid, "backend", 0};
  uint64_t t = 1000;
  s.Switch(t, 1, 0, kBackend, 0, 0, kBackendPid);
  UnixInfo(s, t += 10, 1, kBackendPid, kBackend, kServedSk, kCallerSk, kClientPid, JDW_UNIX_PATH_OWN);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "accept4", 9, kServedSk);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "read", 9, kServedSk, 4096);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "read", 50);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "write", 9, kServedSk, 30);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "write", 30);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "read", 9, kServedSk, 4096);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "read", 0);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "close", 9, kServedSk);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "close", 0);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  ASSERT_EQ(r.reqs[0].connections.size(), 1u);
  const model::Endpoint& e = r.reqs[0].connections[0];
  EXPECT_EQ(e.local, std::string("unix:") + kPath);
  EXPECT_EQ(e.peer_tgid, kClientPid);
  EXPECT_EQ(e.peer_comm, "");
}

// Faults in calls: whatever a backend does, the front's request ends with
// what it has, once, and the join finishes.
enum class Backend { kAnswers, kNeverAnswers, kClosesMidExchange, kExitsMidExchange };

void FrontRequestBegins(Stream& s, uint64_t* t) {
  s.meta().tasks[kFront] = trace::TaskInfo{kFrontPid, "front", 0};
  s.meta().tasks[kFrontPid] = trace::TaskInfo{kFrontPid, "front", 0};
  s.meta().tasks[kBackend] = trace::TaskInfo{kBackendPid, "backend", 0};
  s.meta().tasks[kBackendPid] = trace::TaskInfo{kBackendPid, "backend", 0};
  s.Switch(*t, 0, 0, kFront, 0, 0, kFrontPid);
  s.Switch(*t, 1, 0, kBackend, 0, 0, kBackendPid);
  jdw_sock_info tcp{};
  tcp.sk = kFrontSk;
  tcp.family = kAfInet;
  tcp.protocol = kIpProtoTcp;
  tcp.sport = 8080;
  tcp.dport = 40000;
  tcp.saddr[0] = tcp.daddr[0] = 127;
  tcp.saddr[3] = tcp.daddr[3] = 1;
  s.Add(JDW_EVENT_SOCK_INFO, *t += 10, 0, JDW_CTX_TASK, kFrontPid, kFront, tcp);
  Exit(s, *t += 10, 0, kFrontPid, kFront, "accept4", 7, kFrontSk);
  Enter(s, *t += 10, 0, kFrontPid, kFront, "recvfrom", 7, kFrontSk, 4096);
  Exit(s, *t += 10, 0, kFrontPid, kFront, "recvfrom", 100);
}

void FrontResponds(Stream& s, uint64_t* t) {
  Enter(s, *t += 10, 0, kFrontPid, kFront, "sendto", 7, kFrontSk, 148);
  Exit(s, *t += 10, 0, kFrontPid, kFront, "sendto", 148);
  Enter(s, *t += 10, 0, kFrontPid, kFront, "recvfrom", 7, kFrontSk, 4096);
  Exit(s, *t += 10, 0, kFrontPid, kFront, "recvfrom", 0);
  Enter(s, *t += 10, 0, kFrontPid, kFront, "close", 7, kFrontSk);
  Exit(s, *t += 10, 0, kFrontPid, kFront, "close", 0);
}

// The front calls the backend `calls` times, a unix connection each (the
// backend's thread serves them in turn), and the backend behaves as `how`
// on each: answers after 1 ms of work, reads the call and never answers
// (the front's read times out), or closes the connection mid-exchange.
void FrontCalls(Stream& s, int calls, Backend how) {
  uint64_t t = 1000;
  FrontRequestBegins(s, &t);
  for (int i = 0; i < calls; ++i) {
    const uint64_t caller = kCallerSk + (uint64_t(i) << 8), served = kServedSk + (uint64_t(i) << 8);
    Enter(s, t += 10, 0, kFrontPid, kFront, "connect", 8, caller);
    UnixInfo(s, t += 5, 0, kFrontPid, kFront, caller, served, kBackendPid, JDW_UNIX_PATH_PEER);
    Exit(s, t += 5, 0, kFrontPid, kFront, "connect", 0, caller);
    Enter(s, t += 10, 0, kFrontPid, kFront, "sendto", 8, caller, 50);
    Exit(s, t += 10, 0, kFrontPid, kFront, "sendto", 50);
    Enter(s, t += 10, 0, kFrontPid, kFront, "recvfrom", 8, caller, 4096);
    UnixInfo(s, t += 10, 1, kBackendPid, kBackend, served, caller, kFrontPid, JDW_UNIX_PATH_OWN);
    Exit(s, t += 10, 1, kBackendPid, kBackend, "accept4", 9, served);
    Enter(s, t += 10, 1, kBackendPid, kBackend, "read", 9, served, 4096);
    Exit(s, t += 10, 1, kBackendPid, kBackend, "read", 50);
    int64_t answer = 30;
    if (how == Backend::kAnswers) {
      Enter(s, t += 1000, 1, kBackendPid, kBackend, "write", 9, served, 30);
      Exit(s, t += 10, 1, kBackendPid, kBackend, "write", 30);
      Enter(s, t += 10, 1, kBackendPid, kBackend, "close", 9, served);
      Exit(s, t += 10, 1, kBackendPid, kBackend, "close", 0);
    } else if (how == Backend::kClosesMidExchange) {
      Enter(s, t += 1000, 1, kBackendPid, kBackend, "close", 9, served);
      Exit(s, t += 10, 1, kBackendPid, kBackend, "close", 0);
      answer = 0;  // end of file
    } else if (how == Backend::kExitsMidExchange) {
      // It dies after reading the call (a crash, a worker recycled): the
      // trace sees its exit and no close; the kernel closes its end.
      t += 1000;
      jdw_task_exit gone{};
      gone.exit_code = 139;
      s.Add(JDW_EVENT_TASK_EXIT, t += 10, 1, JDW_CTX_TASK, kBackendPid, kBackend, gone);
      s.Switch(t += 10, 1, kBackend, 0, 0x10 /* EXIT_DEAD */, kBackendPid, 0);
      answer = 0;  // end of file
    } else {
      // It waits on something that never comes; the front gives up.
      Enter(s, t += 1000, 1, kBackendPid, kBackend, "futex", -1, 0, 0);
      answer = -11;  // EAGAIN: the front's receive timeout
      t += 1'000'000;
    }
    Exit(s, t += 10, 0, kFrontPid, kFront, "recvfrom", answer);
    Enter(s, t += 10, 0, kFrontPid, kFront, "close", 8, caller);
    Exit(s, t += 10, 0, kFrontPid, kFront, "close", 0);
  }
  FrontResponds(s, &t);
}

// Every event in one place: the processes' parts add up to the request.
void ExpectSegmentsSumToTotals(const model::Request& q) {
  uint64_t cpu = 0, events = 0;
  for (const model::ProcessSegment& p : q.processes) cpu += p.cpu_ns, events += p.events;
  EXPECT_EQ(cpu, q.totals.cpu_ns);
  EXPECT_EQ(events, q.events.size());
}

TEST(CallFaults, ABackendThatNeverAnswersLeavesTheCallUnansweredAndTheRequestWhole) {
  Stream s;
  FrontCalls(s, 1, Backend::kNeverAnswers);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_FALSE(q.calls[0].answered);
  EXPECT_EQ(q.calls[0].peer_tgid, kBackendPid) << "the backend read the call: its part is the request's";
  EXPECT_EQ(r.stats.calls_unanswered, 1u);
  ExpectSegmentsSumToTotals(q);
}

TEST(CallFaults, ABackendConnectionClosedMidExchangeEndsTheCall) {
  Stream s;
  FrontCalls(s, 1, Backend::kClosesMidExchange);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u) << "the backend's close is no request of its own";
  const model::Request& q = r.reqs[0];
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_FALSE(q.calls[0].answered);
  ASSERT_EQ(q.processes.size(), 2u) << "the backend's read of the call is the request's";
  // Its work up to the close went to no answer: the close is its
  // connection's (as any close is), and the time before it with it, once.
  uint64_t backend_conn_cpu = 0;
  for (const model::Connection& c : r.conns)
    if (c.endpoint.local == std::string("unix:") + kPath) backend_conn_cpu += c.cpu_ns;
  EXPECT_GE(backend_conn_cpu, 1000u);
  EXPECT_LT(q.processes[1].cpu_ns, 1000u);
  ExpectSegmentsSumToTotals(q);
}

// A process that leaves the selection mid-request: the backend exits
// after reading the call. The front's request ends with what it has (the
// backend's read, the unanswered call) when the front answers its client,
// not at the timeout; the backend's run from its read to its exit is
// counted as dropped, and charged nowhere else.
TEST(CallFaults, ABackendThatExitsMidExchangeEndsTheCallAndIsCountedOnce) {
  Stream s;
  FrontCalls(s, 1, Backend::kExitsMidExchange);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u) << "the backend's exit is no request of its own";
  const model::Request& q = r.reqs[0];
  EXPECT_FALSE(q.timed_out) << "nothing waits for the process that is gone";
  EXPECT_EQ(r.stats.requests_timed_out, 0u);
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_FALSE(q.calls[0].answered);
  EXPECT_EQ(r.stats.calls_unanswered, 1u);
  ASSERT_EQ(q.processes.size(), 2u) << "the backend's read of the call is the request's";
  EXPECT_EQ(q.processes[1].tgid, kBackendPid);
  // Its 1 ms from the read to the exit: dropped, counted, once.
  EXPECT_GE(r.stats.cpu_dropped_ns, 1000u);
  EXPECT_LT(q.processes[1].cpu_ns, 1000u);
  uint64_t backend_conn_cpu = 0;
  for (const model::Connection& c : r.conns)
    if (c.endpoint.local == std::string("unix:") + kPath) backend_conn_cpu += c.cpu_ns;
  EXPECT_LT(backend_conn_cpu, 1000u) << "not also its connection's";
  ExpectSegmentsSumToTotals(q);
}

TEST(CallFaults, ARequestFanningOutToAHundredCallsKeepsEveryOne) {
  Stream s;
  FrontCalls(s, 100, Backend::kAnswers);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  const model::Request& q = r.reqs[0];
  ASSERT_EQ(q.calls.size(), 100u);
  for (const model::Call& c : q.calls) {
    EXPECT_TRUE(c.answered);
    EXPECT_EQ(c.peer_tgid, kBackendPid);
  }
  EXPECT_EQ(r.stats.calls_joined, 100u);
  ASSERT_EQ(q.processes.size(), 2u);
  EXPECT_GE(q.processes[1].cpu_ns, 100u * 1000u);
  ExpectSegmentsSumToTotals(q);
}

// A call cycle: the backend, serving the front's call, calls the front back
// (another unix connection, which a second front thread accepts and
// answers). The front's second exchange is the same request's; it is
// joined once, and the request is the only one.
TEST(CallFaults, ACallCycleStaysOneRequest) {
  constexpr uint32_t kFront2 = 1002;
  constexpr uint64_t kBackCaller = 0xffff888000d10000, kBackServed = 0xffff888000e10000;
  Stream s;
  uint64_t t = 1000;
  FrontRequestBegins(s, &t);
  s.Switch(t, 2, 0, kFront2, 0, 0, kFrontPid);
  Enter(s, t += 10, 0, kFrontPid, kFront, "connect", 8, kCallerSk);
  UnixInfo(s, t += 5, 0, kFrontPid, kFront, kCallerSk, kServedSk, kBackendPid, JDW_UNIX_PATH_PEER);
  Exit(s, t += 5, 0, kFrontPid, kFront, "connect", 0, kCallerSk);
  Enter(s, t += 10, 0, kFrontPid, kFront, "sendto", 8, kCallerSk, 50);
  Exit(s, t += 10, 0, kFrontPid, kFront, "sendto", 50);
  Enter(s, t += 10, 0, kFrontPid, kFront, "recvfrom", 8, kCallerSk, 4096);
  UnixInfo(s, t += 10, 1, kBackendPid, kBackend, kServedSk, kCallerSk, kFrontPid, JDW_UNIX_PATH_OWN);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "accept4", 9, kServedSk);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "read", 9, kServedSk, 4096);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "read", 50);
  // The backend calls the front back.
  Enter(s, t += 10, 1, kBackendPid, kBackend, "connect", 10, kBackCaller);
  UnixInfo(s, t += 5, 1, kBackendPid, kBackend, kBackCaller, kBackServed, kFrontPid, JDW_UNIX_PATH_PEER);
  Exit(s, t += 5, 1, kBackendPid, kBackend, "connect", 0, kBackCaller);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "write", 10, kBackCaller, 20);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "write", 20);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "read", 10, kBackCaller, 4096);
  UnixInfo(s, t += 10, 2, kFrontPid, kFront2, kBackServed, kBackCaller, kBackendPid, JDW_UNIX_PATH_OWN);
  Exit(s, t += 10, 2, kFrontPid, kFront2, "accept4", 11, kBackServed);
  Enter(s, t += 10, 2, kFrontPid, kFront2, "read", 11, kBackServed, 4096);
  Exit(s, t += 10, 2, kFrontPid, kFront2, "read", 20);
  Enter(s, t += 500, 2, kFrontPid, kFront2, "write", 11, kBackServed, 10);
  Exit(s, t += 10, 2, kFrontPid, kFront2, "write", 10);
  Enter(s, t += 10, 2, kFrontPid, kFront2, "close", 11, kBackServed);
  Exit(s, t += 10, 2, kFrontPid, kFront2, "close", 0);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "read", 10);
  Enter(s, t += 10, 1, kBackendPid, kBackend, "close", 10, kBackCaller);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "close", 0);
  // The backend answers the front's call.
  Enter(s, t += 1000, 1, kBackendPid, kBackend, "write", 9, kServedSk, 30);
  Exit(s, t += 10, 1, kBackendPid, kBackend, "write", 30);
  Exit(s, t += 10, 0, kFrontPid, kFront, "recvfrom", 30);
  Enter(s, t += 10, 0, kFrontPid, kFront, "close", 8, kCallerSk);
  Exit(s, t += 10, 0, kFrontPid, kFront, "close", 0);
  FrontResponds(s, &t);
  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u) << "the call back into the front is the same request";
  const model::Request& q = r.reqs[0];
  EXPECT_EQ(q.calls.size(), 2u);
  EXPECT_EQ(r.stats.calls_joined, 2u);
  ExpectSegmentsSumToTotals(q);
}

}  // namespace
}  // namespace jackdaw::join
