// The CLI as a user meets it: real binaries, real files, real signals.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "trace/trace_reader.h"

namespace jackdaw {
namespace {

using testing::RunCommand;

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }

TEST(RecordCli, RecordsACommandAndDumpSummarizesIt) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("cli.jdw");
  auto r = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--", testing::BinDir() + "/jackdaw-workload",
                       "--getppid", "1234"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"calls\":1234"), std::string::npos);
  auto d = RunCommand({Jackdaw(), "dump", "--summary", path});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("complete"), std::string::npos);
  EXPECT_NE(d.out.find("sys_enter"), std::string::npos);
  EXPECT_NE(d.out.find("(total 0)"), std::string::npos) << d.out;
  auto full = RunCommand({Jackdaw(), "dump", path});
  ASSERT_EQ(full.exit_code, 0);
  size_t getppid_lines = 0;
  for (size_t p = full.out.find("sys_enter        getppid"); p != std::string::npos;
       p = full.out.find("sys_enter        getppid", p + 1))
    ++getppid_lines;
  EXPECT_EQ(getppid_lines, 1234u);
  std::filesystem::remove(path);
}

TEST(RecordCli, KmodBackendWithoutTheModuleSaysHowToLoadIt) {
  if (std::filesystem::exists("/dev/jackdaw")) GTEST_SKIP() << "jackdaw.ko is loaded here";
  const std::string path = testing::TempPath("kmod-missing.jdw");
  auto r = RunCommand({Jackdaw(), "record", "--backend", "kmod", "-q", "-o", path, "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("insmod build/kmod/jackdaw.ko"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(RecordCli, AutoBackendPicksEbpfAndSaysSo) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("auto.jdw");
  auto r = RunCommand({Jackdaw(), "record", "--backend", "auto", "-q", "-o", path, "--",
                       testing::BinDir() + "/jackdaw-workload", "--getppid", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("backend: bpf (auto"), std::string::npos) << r.err;
  auto t = trace::TraceReader::Open(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->meta().backend, "bpf");
  EXPECT_NE((*t)->meta().header_json.find("bpf_ktime_get_ns"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(RecordCli, SigintLeavesACompleteTrace) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("sigint.jdw");
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDERR_FILENO);
    execl(Jackdaw().c_str(), "jackdaw", "record", "-o", path.c_str(), "--duration", "60", nullptr);
    _exit(127);
  }
  // Wait until the header is on disk, then interrupt.
  for (int i = 0; i < 100 && !std::filesystem::exists(path); ++i) usleep(50000);
  usleep(500000);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE((*r)->meta().complete);
  EXPECT_GT((*r)->meta().records_written, 0u);
  std::filesystem::remove(path);
}

TEST(RecordCli, UnknownProbeListsTheValidOnes) {
  auto r = RunCommand({Jackdaw(), "record", "--probes", "sched,disk", "--duration", "1"});
  if (!testing::IsRoot()) {
    EXPECT_EQ(r.exit_code, 2);
    return;
  }
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown probe group 'disk'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sched, syscall, block, net"), std::string::npos) << r.err;
}

TEST(RecordCli, UnprivilegedUserGetsOneLineAndExit2) {
  JDW_REQUIRE_ROOT();  // to become someone else
  auto r = RunCommand({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                       Jackdaw(), "record", "--duration", "1", "-o", "/dev/null"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("needs root, or CAP_BPF and CAP_PERFMON"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(DumpCli, TruncatedTraceNamesTheOffsetAndFails) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("trunc.jdw");
  auto r = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--", testing::BinDir() + "/jackdaw-workload",
                       "--getppid", "5000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 100);
  auto d = RunCommand({Jackdaw(), "dump", "--summary", path});
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.err.find("truncated at byte offset"), std::string::npos) << d.err;
  auto s = RunCommand({Jackdaw(), "dump", "--summary", "--salvage", path});
  EXPECT_EQ(s.exit_code, 1);  // readable, but still reported as damaged
  EXPECT_NE(s.out.find("INCOMPLETE"), std::string::npos) << s.out;
  std::filesystem::remove(path);
}

TEST(DumpCli, MissingAndForeignFilesAreRejected) {
  auto d = RunCommand({Jackdaw(), "dump", "/nonexistent/x.jdw"});
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.err.find("cannot open"), std::string::npos);
  auto e = RunCommand({Jackdaw(), "dump", "/etc/hostname"});
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("byte offset"), std::string::npos) << e.err;
}

}  // namespace
}  // namespace jackdaw
