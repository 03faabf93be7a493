// Runtimes that multiplex requests over OS threads, with the shipped
// tcp-threadpool schema on synthetic traces: an M:N runtime (Go) runs a
// connection's handler as a goroutine on whichever OS thread is free, and
// an OS thread sleeps between goroutines (nanosleep while its scheduler
// spins, a futex when it parks), however many connections it has touched.
// Waking, it runs another connection's goroutine: that is no longer the
// request it last served.
#include <gtest/gtest.h>

#include "join/extractor_test_util.h"

namespace jackdaw::join {
namespace {

using testing::Result;
using testing::RunRecords;
using testing::Stream;

constexpr uint64_t kSkA = 0xffff888000f10000, kSkB = 0xffff888000f20000;
constexpr uint32_t kM1 = 701, kM2 = 702, kClient = 801;
constexpr uint64_t kFutexWaitPrivate = 128, kFutexWakePrivate = 129;

TEST(MnRuntime, AThreadThatParksMidConnectionAndWakesForAnotherStartsAfresh) {
  Stream s;
  // M1 runs A's handler: accepts it, reads its request, parks (the handler
  // goroutine waits; the OS thread sleeps in a futex with A still open).
  s.Switch(1000, 0, 0, kM1, 0);
  s.SockInfo(1005, 0, kM1, kSkA, 8080, 5555);
  s.SysExit(1010, 0, kM1, "accept4", 7, JDW_OBJ_SOCKET, kSkA);
  s.SysEnter(1020, 0, kM1, "read", 7, JDW_OBJ_SOCKET, kSkA, 4096);
  s.Packet(JDW_EVENT_NET_RECV, 1030, 1, JDW_CTX_SOFTIRQ, kClient, kSkA, 5555, 8080, 152);
  s.SysExit(1040, 0, kM1, "read", 100);
  // Go's scheduler spins, then sleeps briefly (nanosleep, not a futex).
  s.SysEnter(1050, 0, kM1, "nanosleep", -1);
  s.Switch(1060, 0, kM1, 0, 1);
  // M2 finishes A (its goroutine moved there) and accepts B; readying B's
  // goroutine, it wakes the parked M1.
  s.Switch(1100, 1, 0, kM2, 0);
  s.SysEnter(1110, 1, kM2, "write", 7, JDW_OBJ_SOCKET, kSkA, 100);
  s.SysExit(1120, 1, kM2, "write", 100);
  s.SockInfo(1125, 1, kM2, kSkB, 8080, 5556);
  s.SysExit(1130, 1, kM2, "accept4", 8, JDW_OBJ_SOCKET, kSkB);
  s.SysEnter(1140, 1, kM2, "futex", -1, JDW_OBJ_FUTEX, 0x9000, kFutexWakePrivate);
  s.Wakeup(1145, 1, kM2, kM1);
  s.SysExit(1150, 1, kM2, "futex", 1);
  s.SysEnter(1160, 1, kM2, "futex", -1, JDW_OBJ_FUTEX, 0xa000, kFutexWaitPrivate);
  s.Switch(1170, 1, kM2, 0, 1);
  // M1 wakes and runs B's goroutine: reads B's request, answers it.
  s.Switch(1200, 0, 0, kM1, 0);
  s.SysExit(1210, 0, kM1, "nanosleep", 0);
  s.SysEnter(1220, 0, kM1, "read", 8, JDW_OBJ_SOCKET, kSkB, 4096);
  s.Packet(JDW_EVENT_NET_RECV, 1230, 1, JDW_CTX_SOFTIRQ, kClient, kSkB, 5556, 8080, 152);
  s.SysExit(1240, 0, kM1, "read", 100);
  s.SysEnter(1250, 0, kM1, "write", 8, JDW_OBJ_SOCKET, kSkB, 100);
  s.SysExit(1260, 0, kM1, "write", 100);
  s.SysEnter(1270, 0, kM1, "close", 8, JDW_OBJ_SOCKET, kSkB);
  s.SysExit(1280, 0, kM1, "close", 0);
  s.SysEnter(1290, 0, kM1, "close", 7, JDW_OBJ_SOCKET, kSkA);
  s.SysExit(1300, 0, kM1, "close", 0);
  s.Switch(1310, 0, kM1, 0, 1);

  auto sch = schema::LoadSchema("tcp-threadpool", schema::DefaultSchemaDirs(""));
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Result r = RunRecords(*sch, s, s.records());
  ASSERT_EQ(r.reqs.size(), 2u);
  for (const model::Request& q : r.reqs)
    EXPECT_EQ(q.connections.size(), 1u) << "request " << q.id << " names another client's connection";
}

}  // namespace
}  // namespace jackdaw::join
