// Combined syscall records on the real kernel (bpf/jackdaw.bpf.h, "the
// pending syscall enter"): a syscall that blocks still reads back as
// enter, switch, exit in that order; one that migrates has its enter on
// the old CPU and its exit on the new one; a parked enter is never lost,
// with or without the sched group's switch to flush it; and combining on
// or off yields the same events for the same calls.
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "capture/recorder.h"
#include "capture/session.h"
#include "support/test_support.h"
#include "trace/event_table.h"
#include "trace/trace_reader.h"

namespace jackdaw {
namespace {

constexpr uint16_t kNrRead = 0;
constexpr uint16_t kNrGetppid = 110;
constexpr uint64_t kMark = 777;  // the read's byte count: names it in the trace

struct Ev {
  uint64_t ts;
  uint16_t type;
  uint32_t cpu;
  jdw_record_header hdr;
  std::vector<uint8_t> rec;
};

// Every event of `tid` (as header task, or as a switch's prev/next), in
// time order, and the trace's stored/expanded record counts.
struct Read {
  std::vector<Ev> evs;
  uint64_t stored = 0, events = 0, lost = 0;
};
Read ReadTid(const std::string& path, uint32_t tid) {
  Read out;
  auto r = trace::TraceReader::Open(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return out;
  for (const auto& c : (*r)->chunks()) out.stored += c.stored_count, out.events += c.record_count;
  out.lost = (*r)->meta().losses.total();
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    bool mine = h.tid == tid;
    if (h.type == JDW_EVENT_SCHED_SWITCH) {
      auto s = trace::PayloadAs<jdw_sched_switch>(h);
      mine = s.prev_tid == tid || s.next_tid == tid;
    }
    if (!mine) return;
    const auto* p = reinterpret_cast<const uint8_t*>(&h);
    out.evs.push_back({h.ts, h.type, h.cpu, h, std::vector<uint8_t>(p, p + h.size)});
  });
  std::stable_sort(out.evs.begin(), out.evs.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
  return out;
}

// The payload of an event as its ABI struct.
template <typename T>
T Body(const Ev& e) {
  return trace::PayloadAs<T>(*reinterpret_cast<const jdw_record_header*>(e.rec.data()));
}

bool PinTo(pid_t tid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(tid, sizeof(set), &set) == 0;
}

// Records this process (filtered on its pid) while `body` runs.
void RecordSelf(const std::string& path, uint32_t groups, bool combine, const std::function<void()>& body) {
  capture::RecorderOptions ro;
  ro.output = path;
  ro.capture.groups = groups;
  ro.capture.filter_tgid = true;
  ro.capture.tgids = {static_cast<uint32_t>(getpid())};
  ro.capture.combine_syscalls = combine;
  auto rec = capture::Recorder::Create(ro);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  ASSERT_TRUE((*rec)->StartBackground().ok());
  body();
  Status st = (*rec)->Stop();
  ASSERT_TRUE(st.ok()) << st.message();
}

// A thread that reads kMark bytes from an empty pipe (so it blocks), pinned
// to CPU 0; while it sleeps, it is moved to `wake_cpu` and the pipe written.
// Returns the reader's tid.
pid_t BlockingRead(int wake_cpu) {
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  std::atomic<pid_t> tid{0};
  std::thread reader([&] {
    EXPECT_TRUE(PinTo(0, 0));
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    char buf[kMark];
    EXPECT_EQ(read(p[0], buf, kMark), 1);
  });
  while (!tid) usleep(1000);
  usleep(100'000);  // asleep in read() by now
  EXPECT_TRUE(PinTo(tid, wake_cpu));
  EXPECT_EQ(write(p[1], "x", 1), 1);
  reader.join();
  close(p[0]);
  close(p[1]);
  return tid;
}

// The marked read's enter, the switch that put its thread to sleep, and
// its exit, as they read back.
struct Blocked {
  const Ev* enter = nullptr;
  const Ev* sleep = nullptr;
  const Ev* exit = nullptr;
};
Blocked FindBlockedRead(const Read& r, uint32_t tid) {
  Blocked b;
  for (const Ev& e : r.evs) {
    if (!b.enter) {
      if (e.type == JDW_EVENT_SYS_ENTER && e.hdr.tid == tid && Body<jdw_sys_enter>(e).nr == kNrRead &&
          Body<jdw_sys_enter>(e).arg == kMark)
        b.enter = &e;
    } else if (!b.sleep) {
      if (e.type == JDW_EVENT_SCHED_SWITCH && Body<jdw_sched_switch>(e).prev_tid == tid &&
          Body<jdw_sched_switch>(e).prev_state != 0)
        b.sleep = &e;
    } else if (e.type == JDW_EVENT_SYS_EXIT && e.hdr.tid == tid && Body<jdw_sys_exit>(e).nr == kNrRead) {
      b.exit = &e;
      break;
    }
  }
  return b;
}

constexpr uint32_t kSchedSyscall = (1u << JDW_GROUP_SCHED) | (1u << JDW_GROUP_SYSCALL);

// Records this process (groups, combining on) while one of its threads
// blocks in the marked read until a thread on wake_cpu writes; returns what
// the trace holds of that thread, *tid set, and expects nothing lost.
Read RecordBlockedRead(const std::string& path, uint32_t groups, int wake_cpu, pid_t* tid) {
  RecordSelf(path, groups, true, [&] { *tid = BlockingRead(wake_cpu); });
  Read r = ReadTid(path, *tid);
  EXPECT_EQ(r.lost, 0u);
  return r;
}

TEST(CombinedSyscalls, ABlockingReadIsEnterSwitchExitInOrder) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("combine_block.jdw");
  pid_t tid = 0;
  const Read r = RecordBlockedRead(path, kSchedSyscall, 0, &tid);
  const Blocked b = FindBlockedRead(r, tid);
  ASSERT_NE(b.enter, nullptr);
  ASSERT_NE(b.sleep, nullptr) << "no switch after the read's enter";
  ASSERT_NE(b.exit, nullptr) << "no exit after the switch";
  // Same CPU: the switch flushed the parked enter into the ring before
  // its own record, so the CPU's stream has them in this order too.
  EXPECT_EQ(b.enter->cpu, 0u);
  EXPECT_EQ(b.sleep->cpu, 0u);
  EXPECT_LT(b.enter->ts, b.sleep->ts);
  EXPECT_LT(b.sleep->ts, b.exit->ts);
  EXPECT_EQ(Body<jdw_sys_exit>(*b.exit).ret, 1);
  // Something was combined (the session's own calls at least), and every
  // combined record read back as two events.
  EXPECT_LT(r.stored, r.events);
  std::filesystem::remove(path);
}

TEST(CombinedSyscalls, ASyscallThatMigratesHasItsEnterOnTheOldCpuAndItsExitOnTheNew) {
  JDW_REQUIRE_ROOT();
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two CPUs";
  const std::string path = testing::TempPath("combine_migrate.jdw");
  pid_t tid = 0;
  const Read r = RecordBlockedRead(path, kSchedSyscall, 1, &tid);
  const Blocked b = FindBlockedRead(r, tid);
  ASSERT_NE(b.enter, nullptr);
  ASSERT_NE(b.sleep, nullptr);
  ASSERT_NE(b.exit, nullptr);
  EXPECT_EQ(b.enter->cpu, 0u);
  EXPECT_EQ(b.exit->cpu, 1u);
  EXPECT_LT(b.enter->ts, b.exit->ts);
  std::filesystem::remove(path);
}

// Without the sched group no switch flushes the enter of a call that
// blocks: the reader's periodic flush (or the stop's) must.
TEST(CombinedSyscalls, WithoutTheSchedGroupABlockedCallsEnterStillArrivesBeforeItsExit) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("combine_nosched.jdw");
  pid_t tid = 0;
  const Read r = RecordBlockedRead(path, 1u << JDW_GROUP_SYSCALL, 1, &tid);
  const Ev *enter = nullptr, *exit = nullptr;
  for (const Ev& e : r.evs) {
    if (e.type == JDW_EVENT_SYS_ENTER && Body<jdw_sys_enter>(e).arg == kMark &&
        Body<jdw_sys_enter>(e).nr == kNrRead)
      enter = &e;
    if (enter && !exit && e.type == JDW_EVENT_SYS_EXIT && Body<jdw_sys_exit>(e).nr == kNrRead)
      exit = &e;
  }
  ASSERT_NE(enter, nullptr) << "the parked enter of the blocked read was lost";
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(enter->cpu, 0u);
  EXPECT_EQ(exit->cpu, 1u);
  std::filesystem::remove(path);
}

// An enter parked on a CPU where nothing else records (the sched group off,
// its thread asleep in the call) reaches the reader while the call still
// blocks: the reader's periodic check finds the same enter in that CPU's
// slot twice and runs the flush there (CaptureSession::FlushStalePending).
TEST(CombinedSyscalls, AnEnterParkedOnAnIdleCpuReachesTheReaderWhileItsCallBlocks) {
  JDW_REQUIRE_ROOT();
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two CPUs";
  capture::CaptureOptions co;
  co.groups = 1u << JDW_GROUP_SYSCALL;
  co.filter_tgid = true;
  co.tgids = {static_cast<uint32_t>(getpid())};
  co.combine_syscalls = true;
  auto session = capture::CaptureSession::Create(co);
  ASSERT_TRUE(session.ok()) << session.status().message();
  ASSERT_TRUE((*session)->EnableAll().ok());
  struct Sink : capture::RecordSink {
    std::atomic<pid_t> tid{0};
    bool seen = false;
    void OnRecord(uint32_t, const uint8_t* data, size_t size) override {
      jdw_record_header h;
      if (size < sizeof(jdw_sys_enter_record)) return;
      memcpy(&h, data, sizeof(h));
      if (h.type != JDW_EVENT_SYS_ENTER || h.tid != static_cast<uint32_t>(tid)) return;
      jdw_sys_enter e;
      memcpy(&e, data + sizeof(h), sizeof(e));
      seen = seen || (e.nr == kNrRead && e.arg == kMark);
    }
  } sink;
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  cpu_set_t was;
  ASSERT_EQ(sched_getaffinity(0, sizeof(was), &was), 0);
  ASSERT_TRUE(PinTo(0, 1));  // the reader of the rings stays off CPU 0
  std::thread blocked([&] {
    EXPECT_TRUE(PinTo(0, 0));
    sink.tid = static_cast<pid_t>(syscall(SYS_gettid));
    char buf[kMark];
    EXPECT_EQ(read(p[0], buf, kMark), 1);
  });
  // Polls for up to 2 s while the read blocks: the enter must arrive.
  for (int i = 0; i < 200 && !sink.seen; ++i) ASSERT_TRUE((*session)->Poll(sink, 10).ok());
  const bool seen_while_blocked = sink.seen;
  EXPECT_EQ(write(p[1], "x", 1), 1);
  blocked.join();
  close(p[0]);
  close(p[1]);
  sched_setaffinity(0, sizeof(was), &was);
  EXPECT_TRUE(seen_while_blocked) << "the parked enter of the blocked read never reached the reader";
}

// Calls that can be combined (getppid in a loop) produce the same events
// with combining on and off: the same count of enters and exits, with the
// same fields, and fewer records stored when on.
TEST(CombinedSyscalls, OnAndOffGiveTheSameEventsForTheSameCalls) {
  JDW_REQUIRE_ROOT();
  constexpr int kCalls = 20000;
  for (bool combine : {true, false}) {
    const std::string path = testing::TempPath(combine ? "combine_on.jdw" : "combine_off.jdw");
    std::atomic<pid_t> tid{0};
    RecordSelf(path, kSchedSyscall, combine, [&] {
      std::thread t([&] {
        tid = static_cast<pid_t>(syscall(SYS_gettid));
        for (int i = 0; i < kCalls; ++i) syscall(SYS_getppid);
      });
      t.join();
    });
    const Read r = ReadTid(path, tid);
    EXPECT_EQ(r.lost, 0u) << combine;
    uint64_t enters = 0, exits = 0;
    uint64_t last_enter_ts = 0, bad_enters = 0, bad_exits = 0;
    bool paired = true;
    for (const Ev& e : r.evs) {
      if (e.type == JDW_EVENT_SYS_ENTER && Body<jdw_sys_enter>(e).nr == kNrGetppid) {
        ++enters;
        auto b = Body<jdw_sys_enter>(e);
        bad_enters += b.fd != -1 || b.obj_kind != JDW_OBJ_NONE || e.hdr.ctx != JDW_CTX_TASK ||
                      e.hdr.tgid != static_cast<uint32_t>(getpid());
        last_enter_ts = e.ts;
      } else if (e.type == JDW_EVENT_SYS_EXIT && Body<jdw_sys_exit>(e).nr == kNrGetppid) {
        ++exits;
        auto b = Body<jdw_sys_exit>(e);
        bad_exits += b.ret != getppid() || b.fd != -1 || b.obj_kind != JDW_OBJ_NONE;
        paired &= last_enter_ts != 0 && last_enter_ts <= e.ts;
      }
    }
    EXPECT_EQ(enters, uint64_t{kCalls}) << "combine=" << combine;
    EXPECT_EQ(exits, uint64_t{kCalls}) << "combine=" << combine;
    EXPECT_TRUE(paired) << "an exit came before its enter, combine=" << combine;
    EXPECT_EQ(bad_enters, 0u) << "enters with a wrong field, combine=" << combine;
    EXPECT_EQ(bad_exits, 0u) << "exits with a wrong field, combine=" << combine;
    if (combine) EXPECT_LT(r.stored + kCalls / 2, r.events) << "getppid calls were not combined";
    else EXPECT_EQ(r.stored, r.events);
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace jackdaw
