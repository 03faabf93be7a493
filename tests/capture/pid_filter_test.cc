// The pid filter's life cycle (issue 30, item 3): a traced process leaves
// the filter when its last thread exits, so an unrelated process that gets
// its pid later is not recorded; a thread's exit, even the group leader's,
// does not end the tracing of the threads left; and a child the full filter
// cannot take is counted, not silently left out.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "capture/session.h"
#include "support/recording.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

using Recording = testing::BackgroundRecording;

// A gated child that gets exactly `pid` (the kernel hands out ns_last_pid
// + 1 next). Other processes on the machine fork too: it tries again, and
// waits while one of them holds the pid, for up to 30 s. nullptr if the
// pid never became ours.
std::unique_ptr<testing::GatedChild> ChildWithPid(pid_t pid, const std::function<void()>& body) {
  for (int attempt = 0; attempt < 3000; ++attempt) {
    if (kill(pid, 0) == 0) {  // taken by someone else for now
      usleep(10000);
      continue;
    }
    {
      std::ofstream last("/proc/sys/kernel/ns_last_pid");
      last << pid - 1;
    }
    auto c = std::make_unique<testing::GatedChild>(body);
    if (c->pid() == pid) return c;
  }
  return nullptr;
}

// Before the fix the dead process's tgid stayed in the filter, and every
// getppid of the unrelated process that reused its pid was recorded.
TEST(PidFilter, ForgetsAProcessOnceItExitsSoItsPidsNextOwnerIsNotRecorded) {
  JDW_REQUIRE_ROOT();
  // The sched group's exit hook, and the one a session without that group
  // attaches on its own.
  for (const char* probes : {"sched,syscall", "syscall"}) {
    SCOPED_TRACE(probes);
    testing::GatedChild traced([] { testing::ExecGetppidWorkload(123); });
    const pid_t pid = traced.pid();
    Recording rec({"--pid", std::to_string(pid), "--probes", probes}, "pidreuse");
    ASSERT_TRUE(rec.started()) << rec.log();
    traced.RunToEnd();
    auto next_owner = ChildWithPid(pid, [] { testing::ExecGetppidWorkload(777); });
    ASSERT_TRUE(next_owner) << "pid " << pid << " was never free again (taken by another process)";
    next_owner->RunToEnd();
    EXPECT_EQ(rec.StopAndCountGetppid(), 123) << rec.log();
  }
}

void GetppidCalls(int n) {
  for (int i = 0; i < n; ++i) (void)syscall(SYS_getppid);
}

// A thread's exit is not the process's: the filter keeps a process until
// its last thread has gone, also when the group leader ends first
// (pthread_exit in main) and the rest go on.
TEST(PidFilter, KeepsAProcessWhileAnyOfItsThreadsRuns) {
  JDW_REQUIRE_ROOT();
  testing::GatedChild traced([] {
    std::thread([] { GetppidCalls(11); }).join();  // a thread ends, the process goes on
    GetppidCalls(22);
    std::thread rest([] {
      usleep(200000);  // the leader is gone by now
      GetppidCalls(33);
      syscall(SYS_exit_group, 0);
    });
    rest.detach();
    syscall(SYS_exit, 0);  // the leader's thread alone
  });
  Recording rec({"--pid", std::to_string(traced.pid()), "--probes", "sched,syscall"}, "threadexit");
  ASSERT_TRUE(rec.started()) << rec.log();
  traced.RunToEnd();
  EXPECT_EQ(rec.StopAndCountGetppid(), 11 + 22 + 33) << rec.log();
}

// The filter's full set holds 16,384 processes: a child forked when it and
// the child's bucket are both full goes untraced, and is counted.
TEST(PidFilter, CountsTheChildrenAFullFilterCannotTake) {
  JDW_REQUIRE_ROOT();
  testing::GatedChild parent([] {
    for (int i = 0; i < 3; ++i) {
      const pid_t c = fork();
      if (c == 0) _exit(0);
      waitpid(c, nullptr, 0);
    }
  });
  const uint32_t tgid = static_cast<uint32_t>(parent.pid());
  capture::CaptureOptions co;
  co.groups = 1u << JDW_GROUP_SCHED;
  co.filter_tgid = true;
  co.tgids = {tgid};
  auto s = capture::CaptureSession::Create(co);
  ASSERT_TRUE(s.ok()) << s.status().message();
  int full_set = -1, buckets = -1;
  for (const auto& [name, fd] : (*s)->PinnableMaps()) {
    if (name == "tgid_filter") full_set = fd;
    if (name == "tgid_buckets") buckets = fd;
  }
  ASSERT_GE(full_set, 0);
  ASSERT_GE(buckets, 0);
  // Pids no process can have (above PID_MAX_LIMIT) fill every bucket's
  // ways but the parent's, then the full set.
  uint32_t fake = 1u << 23;
  for (uint32_t idx = 0; idx < JDW_TGID_BUCKETS; ++idx) {
    jdw_tgid_bucket b{};
    for (uint32_t w = 0; w < JDW_TGID_WAYS; ++w) b.tgid[w] = fake++;
    if (idx == (tgid & (JDW_TGID_BUCKETS - 1))) b.tgid[0] = tgid;
    b.overflow = 1;
    ASSERT_EQ(bpf_map_update_elem(buckets, &idx, &b, BPF_ANY), 0) << strerror(errno);
  }
  uint8_t one = 1;
  while (bpf_map_update_elem(full_set, &fake, &one, BPF_NOEXIST) == 0) ++fake;
  ASSERT_EQ(errno, E2BIG) << strerror(errno);
  ASSERT_TRUE((*s)->EnableAll().ok());
  EXPECT_EQ((*s)->PidsNotFollowed(), 0u);
  parent.RunToEnd();
  EXPECT_EQ((*s)->PidsNotFollowed(), 3u);
}

}  // namespace
}  // namespace jackdaw
