#include "capture/interact.h"

#include <bpf/libbpf.h>
#include <linux/types.h>

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "jackdaw/thread_split.h"

namespace jackdaw::capture {
namespace {

TEST(ParseInteractGranularity, ModesAndClassKey) {
  auto g = ParseInteractGranularity("interaction");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->records);
  EXPECT_FALSE(g->classes);

  g = ParseInteractGranularity("class,prefix4=24,no-pid");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_FALSE(g->records);
  EXPECT_TRUE(g->classes);
  EXPECT_EQ(g->prefix4, 24);
  EXPECT_EQ(g->prefix6, 128);
  EXPECT_TRUE(g->by_port);
  EXPECT_FALSE(g->by_pid);

  g = ParseInteractGranularity("both,no-port,prefix6=48");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->records && g->classes);
  EXPECT_FALSE(g->by_port);
  EXPECT_EQ(g->prefix6, 48);
}

TEST(ParseInteractGranularity, KeepsWhatTheSpecDoesNotSay) {
  InteractGranularity base;
  base.prefix4 = 16;
  base.by_pid = false;
  base.cgroup_id = 42;
  auto g = ParseInteractGranularity("class", base);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->prefix4, 16);
  EXPECT_FALSE(g->by_pid);
  EXPECT_EQ(g->cgroup_id, 42u);
}

TEST(ParseInteractGranularity, RejectsWithOneLineNamingTheFix) {
  for (const char* bad : {"", "classes", "class,prefix4=33", "class,prefix4=", "class,prefix6=x", "class,bogus",
                          "interaction,"}) {
    auto g = ParseInteractGranularity(bad);
    EXPECT_FALSE(g.ok()) << bad;
    if (!g.ok()) {
      EXPECT_EQ(g.status().message().find('\n'), std::string::npos);
    }
  }
}

// Debian 12's kernel: BTF, but none of the socket tracepoints.
const std::set<std::string> kLinux61 = {"inet_sock_set_state", "sched_switch", "sched_wakeup",
                                        "sched_process_fork", "sys_enter", "sys_exit", "net_dev_queue"};

TEST(CheckInteractHooks, ALinux61KernelIsRefusedInOneLineNamingCauseAndFix) {
  Status st = CheckInteractHooks([](const char* tp) { return kLinux61.count(tp) > 0; }, "6.1.0-13-amd64");
  ASSERT_FALSE(st.ok());
  const std::string& m = st.message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("sock_recv_length, sock_send_length and sk_data_ready tracepoints"), std::string::npos) << m;
  EXPECT_NE(m.find("6.1.0-13-amd64"), std::string::npos) << m;
  EXPECT_NE(m.find("Linux 6.5 or later"), std::string::npos) << m;
  EXPECT_NE(m.find("jackdaw record"), std::string::npos) << m;
  // Hooks the kernel has are not named as missing.
  EXPECT_EQ(m.find("sched_switch"), std::string::npos) << m;
}

TEST(CheckInteractHooks, OneMissingHookIsNamedAlone) {
  auto has = [](const char* tp) { return std::string(tp) != "sk_data_ready"; };
  Status st = CheckInteractHooks(has, "6.3.0");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the sk_data_ready tracepoint,"), std::string::npos) << st.message();
}

TEST(CheckInteractHooks, AKernelWithEveryRequiredHookPassesWithoutTheOptionalOne) {
  auto has = [](const char* tp) { return std::string(tp) != "block_io_start"; };
  EXPECT_TRUE(CheckInteractHooks(has, "6.4.0").ok());
}

// The serving threads' times come from the scheduler's per-task counters:
// the group no longer needs (or attaches) sched_switch and sched_wakeup.
TEST(CheckInteractHooks, TheSchedulerTracepointsAreNotRequired) {
  auto has = [](const char* tp) {
    return std::string(tp) != "sched_switch" && std::string(tp) != "sched_wakeup";
  };
  EXPECT_TRUE(CheckInteractHooks(has, "6.6.0").ok());
}

// The running kernel's BTF, read for real: this host's kernel (6.x with the
// socket tracepoints) passes; the answer agrees with libbpf's own lookup.
TEST(CheckInteractKernel, AgreesWithLibbpfOnThisKernel) {
  Status st = CheckInteractKernel();
  const bool has_all = libbpf_find_vmlinux_btf_id("sock_send_length", BPF_TRACE_RAW_TP) > 0 &&
                       libbpf_find_vmlinux_btf_id("sock_recv_length", BPF_TRACE_RAW_TP) > 0 &&
                       libbpf_find_vmlinux_btf_id("sk_data_ready", BPF_TRACE_RAW_TP) > 0;
  EXPECT_EQ(st.ok(), has_all) << st.message();
}

// The serving thread's split (jdw_split_thread_time, run in the kernel). A
// hypervisor's steal from before the first touch, accounted between the two
// touches, takes the on-CPU clock's difference below zero: a thread that
// never slept was on CPU for the span less its run-queue waits regardless.
TEST(ThreadSplit, AThreadThatNeverSleptIsOnCpuButForItsRunQueueWaits) {
  jdw_thread_split sp{};
  const __u64 span = 20'000;
  const __u64 behind = static_cast<__u64>(-int64_t{300'000});  // 300 us of earlier steal taken off
  jdw_split_thread_time(span, 0, behind, 0, &sp);
  EXPECT_EQ(sp.oncpu, span);
  EXPECT_EQ(sp.runq, 0u);
  EXPECT_EQ(sp.blocked, 0u);

  jdw_split_thread_time(span, 5'000, behind, 0, &sp);
  EXPECT_EQ(sp.oncpu, 15'000u);
  EXPECT_EQ(sp.runq, 5'000u);
  EXPECT_EQ(sp.blocked, 0u);

  // Run-queue waits measured on the run queue's clock may exceed the span
  // read from another by a hair: never more than the span.
  jdw_split_thread_time(span, span + 10, 7, 0, &sp);
  EXPECT_EQ(sp.oncpu + sp.runq + sp.blocked, span);
  EXPECT_EQ(sp.runq, span);
}

TEST(ThreadSplit, AThreadThatSleptIsOnCpuForWhatItsClockSays) {
  jdw_thread_split sp{};
  jdw_split_thread_time(25'000'000, 100'000, 5'000'000, 1, &sp);
  EXPECT_EQ(sp.oncpu, 5'000'000u);
  EXPECT_EQ(sp.runq, 100'000u);
  EXPECT_EQ(sp.blocked, 19'900'000u);

  // Its clock behind: nothing on CPU, never a wrapped-around huge value.
  jdw_split_thread_time(25'000'000, 0, static_cast<__u64>(-int64_t{1000}), 1, &sp);
  EXPECT_EQ(sp.oncpu, 0u);
  EXPECT_EQ(sp.blocked, 25'000'000u);

  // Its clock ahead (a tick across a migration): at most what the span
  // and the waits leave.
  jdw_split_thread_time(1'000'000, 200'000, 2'000'000, 1, &sp);
  EXPECT_EQ(sp.oncpu, 800'000u);
  EXPECT_EQ(sp.blocked, 0u);
}

}  // namespace
}  // namespace jackdaw::capture
