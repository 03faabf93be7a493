// Which futex wake-ups carry a request to the woken thread, with the
// shipped black-box schema (tcp-threadpool) on synthetic traces: a pool
// fed from one shared queue, a helper handed part of a request, a worker
// handed a connection's work.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "join/extractor.h"
#include "join/extractor_test_util.h"

namespace jackdaw::join {
namespace {

using testing::Result;
using testing::RunRecords;
using testing::ShippedSchema;
using testing::Stream;

constexpr uint64_t kQueue = 0x7f0000002000;  // the shared queue's condition variable
constexpr uint64_t kCondWait = 128 | 9;      // FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG
constexpr uint64_t kWake = 128 | 1;          // FUTEX_WAKE | FUTEX_PRIVATE_FLAG

// One exchange served by `tid` on socket `sk` (client port `port`): the
// request's packet and read, `work_ns` of CPU, the reply.
void Serve(Stream& s, uint64_t& t, uint16_t cpu, uint32_t tid, uint64_t sk, uint16_t port, uint64_t work_ns) {
  s.SysEnter(t += 10, cpu, tid, "read", 9, JDW_OBJ_SOCKET, sk, 8192);
  s.Packet(JDW_EVENT_NET_RECV, t += 10, cpu, JDW_CTX_SOFTIRQ, tid, 0, port, 8080, 120);
  s.SysExit(t += 10, cpu, tid, "read", 68);
  s.SysEnter(t += work_ns, cpu, tid, "write", 9, JDW_OBJ_SOCKET, sk, 100);
  s.Packet(JDW_EVENT_NET_XMIT, t += 10, cpu, JDW_CTX_TASK, tid, sk, 8080, port, 152);
  s.SysExit(t += 10, cpu, tid, "write", 100);
}

const model::Request* ByPort(const Result& r, uint16_t port) {
  for (const model::Request& q : r.reqs)
    if (q.connections.size() == 1 && q.connections[0].remote == "127.0.0.1:" + std::to_string(port)) return &q;
  return nullptr;
}

uint64_t CpuOf(const model::Request& q, uint32_t tid) {
  uint64_t ns = 0;
  for (const auto& e : q.events)
    if (e.tid == tid) ns += e.cpu_ns;
  return ns;
}

// Two threads of a pool fed from one queue (the JDK's ThreadPoolExecutor).
// P2 served a connection and waits on the queue. P1, serving a request of
// its own, passes the queue's lock on as it takes its task: a futex wake-up
// of P2, which then runs 2 ms taking nothing for that request (the queue's
// bookkeeping, or the runtime's work) and serves another connection. The
// wake-up named the queue, not P1's request: P2's run is not P1's request's.
TEST(Wakeups, SharedQueueWakeupCarriesNoRequestToAPoolThread) {
  constexpr uint32_t kP1 = 1101, kP2 = 1102;
  constexpr uint64_t kSk0 = 0xffff888001100000, kSk1 = 0xffff888001200000, kSk2 = 0xffff888001300000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 0, kP1, kSk1, 8080, 7201);
  s.SockInfo(t, 1, kP2, kSk0, 8080, 7200);
  s.SockInfo(t, 1, kP2, kSk2, 8080, 7202);
  s.Switch(t, 0, 0, kP1, 0);
  s.Switch(t, 1, 0, kP2, 0);
  // P2 serves connection 0 to its end, then waits on the queue.
  Serve(s, t, 1, kP2, kSk0, 7200, 100'000);
  s.SysEnter(t += 10, 1, kP2, "close", 9, JDW_OBJ_SOCKET, kSk0);
  s.SysExit(t += 10, 1, kP2, "close", 0);
  s.SysEnter(t += 10, 1, kP2, "futex", -1, JDW_OBJ_FUTEX, kQueue, kCondWait);
  s.Switch(t += 10, 1, kP2, 0, 1);
  // P1 reads its request, wakes P2 through the queue, spins 1 ms, replies.
  s.SysEnter(t += 10, 0, kP1, "read", 9, JDW_OBJ_SOCKET, kSk1, 8192);
  s.Packet(JDW_EVENT_NET_RECV, t += 10, 0, JDW_CTX_SOFTIRQ, kP1, 0, 7201, 8080, 120);
  s.SysExit(t += 10, 0, kP1, "read", 68);
  s.SysEnter(t += 10, 0, kP1, "futex", -1, JDW_OBJ_FUTEX, kQueue, kWake);
  s.Wakeup(t += 5, 0, kP1, kP2);
  s.SysExit(t += 5, 0, kP1, "futex", 1);
  // P2 runs while P1 spins: 2 ms, then the next connection's request.
  s.Switch(t += 10, 1, 0, kP2, 0);
  s.SysExit(t += 10, 1, kP2, "futex", 0);
  s.SysEnter(t += 2'000'000, 1, kP2, "futex", -1, JDW_OBJ_FUTEX, kQueue + 8, kWake);
  s.SysExit(t += 10, 1, kP2, "futex", 0);
  Serve(s, t, 1, kP2, kSk2, 7202, 100'000);
  s.SysEnter(t += 10, 0, kP1, "write", 9, JDW_OBJ_SOCKET, kSk1, 100);
  s.Packet(JDW_EVENT_NET_XMIT, t += 10, 0, JDW_CTX_TASK, kP1, kSk1, 8080, 7201, 152);
  s.SysExit(t += 10, 0, kP1, "write", 100);
  for (const auto& [tid, sk, cpu] : {std::tuple{kP1, kSk1, 0}, std::tuple{kP2, kSk2, 1}}) {
    s.SysEnter(t += 10, uint16_t(cpu), tid, "close", 9, JDW_OBJ_SOCKET, sk);
    s.SysExit(t += 10, uint16_t(cpu), tid, "close", 0);
  }

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 3u);
  const model::Request* q1 = ByPort(r, 7201);
  const model::Request* q2 = ByPort(r, 7202);
  ASSERT_TRUE(q1 && q2);
  EXPECT_EQ(q1->threads, (std::vector<uint32_t>{kP1}));
  EXPECT_EQ(CpuOf(*q1, kP2), 0u);
  EXPECT_EQ(q2->threads, (std::vector<uint32_t>{kP2}));
}

// A worker hands part of a request to `helper` (asleep on the queue) and
// spins `own_ns` itself; the helper runs `helper_ns`. If the helper is
// still busy when the worker is done, the worker waits for it and the
// helper's reply wakes it; otherwise the helper just goes back to its
// queue and no reply is seen.
void HandOff(Stream& s, uint64_t& t, uint32_t worker, uint32_t helper, uint64_t sk, uint16_t port, uint64_t own_ns,
             uint64_t helper_ns) {
  constexpr uint64_t kTask = 0x7f0000003000;  // the task's own condition variable
  s.SysEnter(t += 10, 0, worker, "read", 9, JDW_OBJ_SOCKET, sk, 8192);
  s.Packet(JDW_EVENT_NET_RECV, t += 10, 0, JDW_CTX_SOFTIRQ, worker, 0, port, 8080, 120);
  s.SysExit(t += 10, 0, worker, "read", 68);
  s.SysEnter(t += 10, 0, worker, "futex", -1, JDW_OBJ_FUTEX, kQueue, kWake);
  s.Wakeup(t += 5, 0, worker, helper);
  s.SysExit(t += 5, 0, worker, "futex", 1);
  s.Switch(t += 10, 1, 0, helper, 0);
  s.SysExit(t += 10, 1, helper, "futex", 0);
  const uint64_t start = t;
  if (helper_ns < own_ns) {
    s.SysEnter(t += helper_ns, 1, helper, "futex", -1, JDW_OBJ_FUTEX, kQueue, kCondWait);
    s.Switch(t += 10, 1, helper, 0, 1);
    t = start + own_ns;
  } else {
    s.SysEnter(t += own_ns, 0, worker, "futex", -1, JDW_OBJ_FUTEX, kTask, kCondWait);
    s.Switch(t += 10, 0, worker, 0, 1);
    t = start + helper_ns;
    s.SysEnter(t, 1, helper, "futex", -1, JDW_OBJ_FUTEX, kTask, kWake);
    s.Wakeup(t += 5, 1, helper, worker);
    s.SysExit(t += 5, 1, helper, "futex", 1);
    s.SysEnter(t += 10, 1, helper, "futex", -1, JDW_OBJ_FUTEX, kQueue, kCondWait);
    s.Switch(t += 10, 1, helper, 0, 1);
    s.Switch(t += 10, 0, 0, worker, 0);
    s.SysExit(t += 10, 0, worker, "futex", 0);
  }
  s.SysEnter(t += 10, 0, worker, "write", 9, JDW_OBJ_SOCKET, sk, 100);
  s.Packet(JDW_EVENT_NET_XMIT, t += 10, 0, JDW_CTX_TASK, worker, sk, 8080, port, 152);
  s.SysExit(t += 10, 0, worker, "write", 100);
  s.SysEnter(t += 10, 0, worker, "close", 9, JDW_OBJ_SOCKET, sk);
  s.SysExit(t += 10, 0, worker, "close", 0);
}

// A helper (a thread that never serves a connection) that has handed a
// result back to a waiting worker before is handed half of the next
// request and finishes it first, so no reply is seen (Table 1's E): its
// only source of work is hand-offs, and its run is the request's.
TEST(Wakeups, HandoffToAHelperThatFinishesFirstStaysInTheRequest) {
  constexpr uint32_t kWrk = 1201, kHlp = 1202;
  constexpr uint64_t kSk1 = 0xffff888001400000, kSk2 = 0xffff888001480000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 0, kWrk, kSk1, 8080, 7301);
  s.SockInfo(t, 0, kWrk, kSk2, 8080, 7302);
  s.Switch(t, 0, 0, kWrk, 0);
  s.Switch(t, 1, 0, kHlp, 0);
  s.SysEnter(t += 10, 1, kHlp, "futex", -1, JDW_OBJ_FUTEX, kQueue, kCondWait);
  s.Switch(t += 10, 1, kHlp, 0, 1);
  HandOff(s, t, kWrk, kHlp, kSk1, 7301, 500'000, 1'000'000);  // the worker waits: a reply
  HandOff(s, t, kWrk, kHlp, kSk2, 7302, 1'500'000, 1'000'000);  // the helper is done first

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  for (uint16_t port : {7301, 7302}) {
    const model::Request* q = ByPort(r, port);
    ASSERT_TRUE(q) << port;
    EXPECT_EQ(q->threads, (std::vector<uint32_t>{kWrk, kHlp})) << port;
    EXPECT_GE(CpuOf(*q, kHlp), 1'000'000u) << port;
  }
}

// A runtime's own thread (a JIT compiler: it never serves a connection and
// never hands anything back to a request's thread) is woken by a worker
// whose request's code turned hot, and compiles for 2 ms while the worker
// goes on. The compilation is the runtime's, not the request's.
TEST(Wakeups, RuntimeThreadWokenByARequestIsNotTheRequests) {
  constexpr uint32_t kWrk = 1401, kJit = 1402;
  constexpr uint64_t kSk = 0xffff888001800000, kCompileQueue = 0x7f0000004000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 0, kWrk, kSk, 8080, 7501);
  s.Switch(t, 0, 0, kWrk, 0);
  s.Switch(t, 1, 0, kJit, 0);
  s.SysEnter(t += 10, 1, kJit, "futex", -1, JDW_OBJ_FUTEX, kCompileQueue, kCondWait);
  s.Switch(t += 10, 1, kJit, 0, 1);
  s.SysEnter(t += 10, 0, kWrk, "read", 9, JDW_OBJ_SOCKET, kSk, 8192);
  s.Packet(JDW_EVENT_NET_RECV, t += 10, 0, JDW_CTX_SOFTIRQ, kWrk, 0, 7501, 8080, 120);
  s.SysExit(t += 10, 0, kWrk, "read", 68);
  s.SysEnter(t += 100'000, 0, kWrk, "futex", -1, JDW_OBJ_FUTEX, kCompileQueue, kWake);
  s.Wakeup(t += 5, 0, kWrk, kJit);
  s.SysExit(t += 5, 0, kWrk, "futex", 1);
  s.Switch(t += 10, 1, 0, kJit, 0);
  s.SysExit(t += 10, 1, kJit, "futex", 0);
  s.SysEnter(t += 2'000'000, 1, kJit, "futex", -1, JDW_OBJ_FUTEX, kCompileQueue, kCondWait);
  s.Switch(t += 10, 1, kJit, 0, 1);
  s.SysEnter(t += 1'000'000, 0, kWrk, "write", 9, JDW_OBJ_SOCKET, kSk, 100);
  s.Packet(JDW_EVENT_NET_XMIT, t += 10, 0, JDW_CTX_TASK, kWrk, kSk, 8080, 7501, 152);
  s.SysExit(t += 10, 0, kWrk, "write", 100);
  s.SysEnter(t += 10, 0, kWrk, "close", 9, JDW_OBJ_SOCKET, kSk);
  s.SysExit(t += 10, 0, kWrk, "close", 0);

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 1u);
  EXPECT_EQ(r.reqs[0].threads, (std::vector<uint32_t>{kWrk}));
  EXPECT_EQ(CpuOf(r.reqs[0], kJit), 0u);
}

// An event loop reads a request and hands it to a pool thread (one that
// served connections before) which computes 1 ms and writes the reply on
// the request's connection: its socket call joins it to the request, with
// its run since it woke.
TEST(Wakeups, PoolThreadThatTakesUpTheConnectionJoinsWithItsRunSinceTheWakeup) {
  constexpr uint32_t kLoop = 1301, kWrk = 1302;
  constexpr uint64_t kSk0 = 0xffff888001500000, kSk1 = 0xffff888001600000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 1, kWrk, kSk0, 8080, 7400);
  s.SockInfo(t, 0, kLoop, kSk1, 8080, 7401);
  s.Switch(t, 0, 0, kLoop, 0);
  s.Switch(t, 1, 0, kWrk, 0);
  Serve(s, t, 1, kWrk, kSk0, 7400, 100'000);
  s.SysEnter(t += 10, 1, kWrk, "close", 9, JDW_OBJ_SOCKET, kSk0);
  s.SysExit(t += 10, 1, kWrk, "close", 0);
  s.SysEnter(t += 10, 1, kWrk, "futex", -1, JDW_OBJ_FUTEX, kQueue, kCondWait);
  s.Switch(t += 10, 1, kWrk, 0, 1);
  s.SysEnter(t += 10, 0, kLoop, "read", 9, JDW_OBJ_SOCKET, kSk1, 8192);
  s.Packet(JDW_EVENT_NET_RECV, t += 10, 0, JDW_CTX_SOFTIRQ, kLoop, 0, 7401, 8080, 120);
  s.SysExit(t += 10, 0, kLoop, "read", 68);
  s.SysEnter(t += 10, 0, kLoop, "futex", -1, JDW_OBJ_FUTEX, kQueue, kWake);
  s.Wakeup(t += 5, 0, kLoop, kWrk);
  s.SysExit(t += 5, 0, kLoop, "futex", 1);
  s.SysEnter(t += 10, 0, kLoop, "epoll_wait", 5, JDW_OBJ_EPOLL, 0xffff888001700000, 64);
  s.Switch(t += 10, 0, kLoop, 0, 1);
  s.Switch(t += 10, 1, 0, kWrk, 0);
  s.SysExit(t += 10, 1, kWrk, "futex", 0);
  s.SysEnter(t += 1'000'000, 1, kWrk, "write", 9, JDW_OBJ_SOCKET, kSk1, 100);
  s.Packet(JDW_EVENT_NET_XMIT, t += 10, 1, JDW_CTX_TASK, kWrk, kSk1, 8080, 7401, 152);
  s.SysExit(t += 10, 1, kWrk, "write", 100);
  s.SysEnter(t += 10, 1, kWrk, "close", 9, JDW_OBJ_SOCKET, kSk1);
  s.SysExit(t += 10, 1, kWrk, "close", 0);

  Result r = RunRecords(ShippedSchema("tcp-threadpool"), s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  const model::Request* q = ByPort(r, 7401);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->threads, (std::vector<uint32_t>{kLoop, kWrk}));
  EXPECT_GE(CpuOf(*q, kWrk), 1'000'000u);
}

// The two facts the shipped schema's hand-off rule reads, through a schema
// that makes each wake-up an event set of its own (a STOP with nothing
// open), seeded when the wakee is a helper: wakee_serves_conns (it has read or written a socket) and
// wakee_hands_back (it has woken, through a condition variable, the thread
// that had woken it, while that one waited between reading a request and
// replying). A dispatcher that wakes pool threads parked after their
// replies hands nothing back; a helper that answers its worker does.
TEST(Wakeups, WakeeFactsTellHelpersFromWorkersAndDispatchers) {
  const std::string kSchema = R"(
timeout 1s
seed helper
event helper = sched_wakeup where wakee_serves_conns == 0 and wakee_hands_back == 1 { stop T = wakee_tid }
event worker = sched_wakeup where wakee_serves_conns == 1 { stop T = wakee_tid }
event other = sched_wakeup { stop T = wakee_tid }
)";
  constexpr uint32_t kDisp = 1501, kWrk = 1502, kHlp = 1503;
  constexpr uint64_t kSk = 0xffff888001900000, kTask = 0x7f0000005000;
  Stream s;
  uint64_t t = 1000;
  s.SockInfo(t, 1, kWrk, kSk, 8080, 7601);
  s.Switch(t, 0, 0, kDisp, 0);
  s.Switch(t, 1, 0, kWrk, 0);
  s.Switch(t, 2, 0, kHlp, 0);
  // The dispatcher sleeps; the worker replies to a request, wakes the
  // dispatcher (its connection goes back to the selector) and parks on
  // the queue. The dispatcher wakes the parked worker: the thread that woke
  // it, but one that had replied, so this hands nothing back.
  s.SysEnter(t += 10, 0, kDisp, "futex", -1, JDW_OBJ_FUTEX, kQueue + 8, kCondWait);
  s.Switch(t += 10, 0, kDisp, 0, 1);
  Serve(s, t, 1, kWrk, kSk, 7601, 1000);
  s.SysEnter(t += 10, 1, kWrk, "futex", -1, JDW_OBJ_FUTEX, kQueue + 8, kWake);
  s.Wakeup(t += 5, 1, kWrk, kDisp);  // -> dispatcher: "other"
  s.SysExit(t += 5, 1, kWrk, "futex", 1);
  s.SysEnter(t += 10, 1, kWrk, "futex", -1, JDW_OBJ_FUTEX, kQueue, kCondWait);
  s.Switch(t += 10, 1, kWrk, 0, 1);
  s.Switch(t += 10, 0, 0, kDisp, 0);
  s.SysExit(t += 10, 0, kDisp, "futex", 0);
  s.SysEnter(t += 10, 0, kDisp, "futex", -1, JDW_OBJ_FUTEX, kQueue, kWake);
  s.Wakeup(t += 5, 0, kDisp, kWrk);  // -> worker (serves connections)
  s.SysExit(t += 5, 0, kDisp, "futex", 1);
  s.Switch(t += 10, 1, 0, kWrk, 0);
  s.SysExit(t += 10, 1, kWrk, "futex", 0);
  // The worker reads the next request on its connection, wakes the helper
  // (asleep on its task) and waits for it.
  s.SysEnter(t += 10, 2, kHlp, "futex", -1, JDW_OBJ_FUTEX, kTask, kCondWait);
  s.Switch(t += 10, 2, kHlp, 0, 1);
  s.SysEnter(t += 10, 1, kWrk, "read", 9, JDW_OBJ_SOCKET, kSk, 8192);
  s.SysExit(t += 10, 1, kWrk, "read", 68);
  s.SysEnter(t += 10, 1, kWrk, "futex", -1, JDW_OBJ_FUTEX, kTask, kWake);
  s.Wakeup(t += 5, 1, kWrk, kHlp);  // -> helper, before it ever handed back: "other"
  s.SysExit(t += 5, 1, kWrk, "futex", 1);
  s.SysEnter(t += 10, 1, kWrk, "futex", -1, JDW_OBJ_FUTEX, kTask + 8, kCondWait);
  s.Switch(t += 10, 1, kWrk, 0, 1);
  s.Switch(t += 10, 2, 0, kHlp, 0);
  s.SysExit(t += 10, 2, kHlp, "futex", 0);
  s.SysEnter(t += 10, 2, kHlp, "futex", -1, JDW_OBJ_FUTEX, kTask + 8, kWake);
  s.Wakeup(t += 5, 2, kHlp, kWrk);  // the reply -> worker
  s.SysExit(t += 5, 2, kHlp, "futex", 1);
  s.SysEnter(t += 10, 2, kHlp, "futex", -1, JDW_OBJ_FUTEX, kTask, kCondWait);
  s.Switch(t += 10, 2, kHlp, 0, 1);
  s.Switch(t += 10, 1, 0, kWrk, 0);
  s.SysExit(t += 10, 1, kWrk, "futex", 0);
  // Next hand-off: the helper has handed back now.
  s.SysEnter(t += 10, 1, kWrk, "futex", -1, JDW_OBJ_FUTEX, kTask, kWake);
  s.Wakeup(t += 5, 1, kWrk, kHlp);  // -> helper: "helper", the seed
  s.SysExit(t += 5, 1, kWrk, "futex", 1);
  // And the dispatcher, asleep again, woken by the worker: still "other".
  s.SysEnter(t += 10, 0, kDisp, "futex", -1, JDW_OBJ_FUTEX, kQueue + 8, kCondWait);
  s.Switch(t += 10, 0, kDisp, 0, 1);
  s.SysEnter(t += 10, 1, kWrk, "futex", -1, JDW_OBJ_FUTEX, kQueue + 8, kWake);
  s.Wakeup(t += 5, 1, kWrk, kDisp);
  s.SysExit(t += 5, 1, kWrk, "futex", 1);

  Result r = testing::Extract(kSchema, s);
  ASSERT_EQ(r.reqs.size(), 1u);  // only the last hand-off to the helper
  ASSERT_EQ(r.reqs[0].events.size(), 1u);
  EXPECT_EQ(r.reqs[0].events[0].tid, kWrk);
}

}  // namespace
}  // namespace jackdaw::join
