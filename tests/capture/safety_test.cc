// Recording safety and hostile use of the CLI, as a user meets them: real
// binaries, real signals, real files, and for the security cases a
// throwaway unprivileged user created here and removed afterwards.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <cstring>
#include <algorithm>

#include <gtest/gtest.h>

#include "support/test_support.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace jackdaw {
namespace {

namespace fs = std::filesystem;
using testing::RunCommand;

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }
std::string Workload() { return testing::BinDir() + "/jackdaw-workload"; }

// jackdaw started in the background, its stderr discarded.
pid_t Spawn(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // our own group: the test's signals never reach it by accident
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDERR_FILENO);
    dup2(devnull, STDOUT_FILENO);
    std::vector<char*> args;
    for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

bool WaitForFile(const std::string& path, int tries = 2000) {
  for (int i = 0; i < tries; ++i) {
    if (fs::exists(path)) return true;
    usleep(1000);
  }
  return false;
}

// Until the file holds at least its fixed header: the recorder creates the
// file and writes the header right after, and a kill between the two leaves
// an empty file (which every reader refuses with one clear line).
bool WaitForHeader(const std::string& path, int tries = 20000) {
  constexpr uintmax_t kFixedHeaderBytes = 32;
  std::error_code ec;
  for (int i = 0; i < tries; ++i) {
    if (fs::exists(path, ec) && fs::file_size(path, ec) >= kFixedHeaderBytes) return true;
    usleep(1000);
  }
  return false;
}

// Children of `pid` as the kernel lists them.
std::vector<pid_t> Children(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t c;
  while (f >> c) out.push_back(c);
  return out;
}

bool Alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  const size_t close_paren = line.rfind(')');
  return close_paren != std::string::npos && line.size() > close_paren + 2 && line[close_paren + 2] != 'Z';
}

// ---- security --------------------------------------------------------------

// A throwaway user, removed (with anything it owns under /var/tmp that the
// test names) when the test ends.
class ThrowawayUser {
 public:
  ThrowawayUser() : name_("jdwt" + std::to_string(getpid() % 100000)) {
    auto r = RunCommand({"useradd", "-M", "-s", "/usr/sbin/nologin", name_});
    ok_ = r.exit_code == 0;
    err_ = r.err;
  }
  ~ThrowawayUser() {
    if (ok_) (void)RunCommand({"userdel", name_});
  }
  bool ok() const { return ok_; }
  const std::string& err() const { return err_; }
  // Runs a shell command as the user.
  testing::CommandResult Sh(const std::string& cmd) const {
    return RunCommand({"setpriv", "--reuid=" + name_, "--regid=" + name_, "--init-groups", "/bin/sh", "-c", cmd});
  }

 private:
  std::string name_;
  bool ok_ = false;
  std::string err_;
};

TEST(Security, ReproduceRefusesAWorkDirPlantedByAnotherUser) {
  JDW_REQUIRE_ROOT();
  ThrowawayUser u;
  ASSERT_TRUE(u.ok()) << u.err();
  const std::string victim = testing::TempPath("victim"), dir = testing::TempPath("planted");
  { std::ofstream(victim) << "secret\n"; }
  auto planted = u.Sh("mkdir " + dir + " && ln -s " + victim + " " + dir + "/A_c1.jdw && ln -s " + victim +
                      " " + dir + "/A_c1.truth.jsonl");
  ASSERT_EQ(planted.exit_code, 0) << planted.err;
  auto r = RunCommand({Jackdaw(), "reproduce", "--only", "A:1", "-n", "20", "--work-dir", dir});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("refusing to use " + dir + ": it belongs to uid"), std::string::npos) << r.err;
  std::ifstream in(victim);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "secret");  // before: it started with JDWTRACE
  fs::remove_all(dir);
  fs::remove(victim);
}

TEST(Security, TraceIsUnreadableByOtherUsers) {
  JDW_REQUIRE_ROOT();
  ThrowawayUser u;
  ASSERT_TRUE(u.ok()) << u.err();
  const std::string path = testing::TempPath("private.jdw");
  auto r = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--", Workload(), "--getppid", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto read = u.Sh("cat " + path + " > /dev/null");
  EXPECT_NE(read.exit_code, 0) << "another user could read the trace";
  fs::remove(path);
}

TEST(Security, RecordRefusesAnOutputSymlinkedElsewhere) {
  JDW_REQUIRE_ROOT();
  const std::string victim = testing::TempPath("victim2"), link = testing::TempPath("link.jdw");
  { std::ofstream(victim) << "secret\n"; }
  fs::create_symlink(victim, link);
  auto r = RunCommand({Jackdaw(), "record", "-q", "-o", link, "--", Workload(), "--getppid", "10"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  std::ifstream in(victim);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "secret");
  fs::remove(link);
  fs::remove(victim);
}

// ---- recording safety --------------------------------------------------------

TEST(RecordSafety, SecondRecordingToTheSameOutputIsRefused) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("twice.jdw");
  pid_t first = Spawn({Jackdaw(), "record", "-q", "-o", path, "--", "/bin/sleep", "30"});
  ASSERT_TRUE(WaitForFile(path));
  usleep(300000);
  auto second = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--", Workload(), "--getppid", "10"});
  EXPECT_EQ(second.exit_code, 1);  // before: 0, and the file mixed both recordings
  EXPECT_NE(second.err.find("another jackdaw recording"), std::string::npos) << second.err;
  kill(first, SIGINT);
  int status = 0;
  waitpid(first, &status, 0);
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE((*r)->meta().complete);
  fs::remove(path);
}

TEST(RecordSafety, SighupEndsTheRecordingLikeSigintAndStopsTheCommand) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("hup.jdw");
  pid_t pid = Spawn({Jackdaw(), "record", "-q", "-o", path, "--", "/bin/sleep", "30"});
  ASSERT_TRUE(WaitForFile(path));
  usleep(300000);
  std::vector<pid_t> kids = Children(pid);
  ASSERT_EQ(kids.size(), 1u);
  kill(pid, SIGHUP);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);  // before: SIGHUP's 129
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE((*r)->meta().complete);
  EXPECT_FALSE(Alive(kids[0])) << "the traced command outlived the recording";
  fs::remove(path);
}

TEST(RecordSafety, KilledRecorderTakesItsCommandWithIt) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("kill9.jdw");
  pid_t pid = Spawn({Jackdaw(), "record", "-q", "-o", path, "--", "/bin/sleep", "30"});
  ASSERT_TRUE(WaitForFile(path));
  usleep(300000);
  std::vector<pid_t> kids = Children(pid);
  ASSERT_EQ(kids.size(), 1u);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // The command is reparented and killed by PR_SET_PDEATHSIG; give the
  // kernel a moment to deliver it.
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = !Alive(kids[0]);
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "pid " << kids[0] << " kept running untraced";
  if (!gone) kill(kids[0], SIGKILL);
  fs::remove(path);
}

TEST(RecordSafety, SigintAsSoonAsTheFileAppearsStillLeavesACompleteTrace) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("early.jdw");
  pid_t pid = Spawn({Jackdaw(), "record", "-q", "-o", path, "--duration", "30"});
  ASSERT_TRUE(WaitForFile(path, 20000));
  kill(pid, SIGINT);  // while the probes attach
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);  // before: 130
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto r = trace::TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();  // before: a header-only file
  EXPECT_TRUE((*r)->meta().complete);
  fs::remove(path);
}

TEST(RecordSafety, KilledBeforeTheFirstClockSyncClaimsNoTscFrequency) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("noclock.jdw");
  pid_t pid = Spawn({Jackdaw(), "record", "-q", "-o", path, "--duration", "30"});
  ASSERT_TRUE(WaitForHeader(path));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  auto d = RunCommand({Jackdaw(), "dump", "--summary", "--salvage", path});
  EXPECT_EQ(d.out.find("TSC 1.000000 GHz"), std::string::npos) << d.out;
  auto r = trace::TraceReader::Open(path, {.allow_truncated = true});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& clock = (*r)->meta().time.clock;
  EXPECT_TRUE(clock.method == "none" || clock.method == "perf-mmap") << clock.method;
  fs::remove(path);
}

TEST(RecordSafety, DiskFullAtTheHeaderLeavesNoFileAndSaysWhy) {
  JDW_REQUIRE_ROOT();
  const std::string dir = testing::TempPath("tinyfs");
  fs::create_directories(dir);
  ASSERT_EQ(mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=4k"), 0) << strerror(errno);
  const std::string path = dir + "/out.jdw";
  auto r = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--", Workload(), "--getppid", "10"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("disk full"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(path)) << "a header cut short was left behind";  // before: a 4 KiB stub
  umount(dir.c_str());
  fs::remove_all(dir);
}

TEST(RecordSafety, DiskFullWhileRecordingStopsTheCommandAndLeavesASalvageableTrace) {
  JDW_REQUIRE_ROOT();
  const std::string dir = testing::TempPath("smallfs");
  fs::create_directories(dir);
  ASSERT_EQ(mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=256k"), 0) << strerror(errno);
  const std::string path = dir + "/out.jdw";
  const std::string marker = testing::TempPath("spinner.pid");
  // A command that would run for ever, making events (a fork and exec per
  // loop) until the file system is full.
  auto r = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--", "/bin/sh", "-c",
                       "echo $$ > " + marker + "; while :; do /bin/true; done"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--salvage"), std::string::npos) << r.err;
  std::ifstream m(marker);
  pid_t spinner = 0;
  m >> spinner;
  ASSERT_GT(spinner, 0);
  EXPECT_FALSE(Alive(spinner)) << "the command kept running untraced after the write error";
  if (Alive(spinner)) kill(spinner, SIGKILL);
  {
    // Scoped: a reader keeps its file open (it reads records chunk by
    // chunk), which would keep the file system busy.
    auto t = trace::TraceReader::Open(path, {.allow_truncated = true});
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (t.ok()) {
      EXPECT_GT((*t)->chunks().size(), 0u);
    }
  }
  umount(dir.c_str());
  fs::remove_all(dir);
  fs::remove(marker);
}

TEST(RecordSafety, CommandThatCannotRunOrDiesGivesANonZeroExit) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("nonexist.jdw");
  auto r = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 127) << r.err;  // before: 0
  EXPECT_NE(r.err.find("cannot run /nonexistent"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path));
  auto killed = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--", "/bin/sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL) << killed.err;  // before: 0
  EXPECT_NE(killed.err.find("killed by signal 9"), std::string::npos) << killed.err;
  auto failed = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--", "/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(failed.exit_code, 3) << failed.err;
  auto trace = trace::TraceReader::Open(path);
  EXPECT_TRUE(trace.ok()) << "the recording itself is complete";
  fs::remove(path);
}

TEST(RecordCliArgs, ImpossiblePidAndAppWithoutUsdtAreRefused) {
  JDW_REQUIRE_ROOT();
  // Command-line mistakes: the usage status, 2.
  auto pid = RunCommand({Jackdaw(), "record", "-o", "/dev/null", "--pid", "4294967295", "--duration", "1"});
  EXPECT_EQ(pid.exit_code, 2);
  EXPECT_NE(pid.err.find("--pid 4294967295: not a process id"), std::string::npos) << pid.err;
  auto app = RunCommand({Jackdaw(), "record", "-o", "/dev/null", "--probes", "app", "--duration", "1"});
  EXPECT_EQ(app.exit_code, 2);
  EXPECT_NE(app.err.find("--probes app needs --usdt"), std::string::npos) << app.err;
  auto comm = RunCommand({Jackdaw(), "live", "--schema", "tcp-threadpool", "--comm",
                          "a-name-longer-than-the-kernel-keeps", "--duration", "1"});
  EXPECT_EQ(comm.exit_code, 2);
  EXPECT_NE(comm.err.find("characters of a name"), std::string::npos) << comm.err;
}

TEST(RecordCliArgs, UsdtAndPidBeforeTheCommandLeaveItsOptionsAlone) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("usdtargs.jdw");
  auto r = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--usdt", testing::BinDir() + "/jackdaw-testserver",
                       "--", Workload(), "--getppid", "10"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // before: "The following argument was not expected: --getppid"
  EXPECT_NE(r.out.find("\"calls\":10"), std::string::npos) << r.out;
  auto p = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--pid", std::to_string(getpid()), "--", Workload(),
                       "--getppid", "10"});
  EXPECT_EQ(p.exit_code, 0) << p.err;
  fs::remove(path);
}

TEST(RecordCliArgs, DurationWindowAndThresholdOutOfRangeAreRefused) {
  for (const std::string d : {"1e30", "nan", "inf", "-1", "0"}) {
    auto r = RunCommand({Jackdaw(), "record", "-o", "/dev/null", "--duration", d});
    EXPECT_NE(r.exit_code, 0) << d;
    EXPECT_NE(r.err.find("--duration"), std::string::npos) << d << ": " << r.err;
  }
  for (const std::string w : {"1e30", "-1", "nan", "0"}) {
    auto r = RunCommand({Jackdaw(), "analyze", "x.jdw", "--schema", "testserver", "--reorder-window", w});
    EXPECT_NE(r.exit_code, 0) << w;
    EXPECT_NE(r.err.find("--reorder-window"), std::string::npos) << w << ": " << r.err;
  }
  for (const std::string t : {"-1", "nan", "0"}) {
    auto r = RunCommand({Jackdaw(), "analyze", "x.jdw", "--schema", "testserver", "--threshold", t});
    EXPECT_NE(r.exit_code, 0) << t;
    EXPECT_NE(r.err.find("--threshold"), std::string::npos) << t << ": " << r.err;
  }
}

// NaN passed every "<= 0" test and 1e300 overflowed a nanosecond count (the
// deadline passed at once); each is refused naming its option.
TEST(CliArgs, IntervalsDurationsAndOffsetsOutOfRangeAreRefused) {
  const std::vector<std::vector<std::string>> cases = {
      {"interactions", "--class-window", "nan"}, {"interactions", "--class-window", "0"},
      {"interactions", "--idle", "-5"},      {"interactions", "--idle", "nan"},
      {"interactions", "--duration", "1e300"}, {"live", "--schema", "testserver", "--duration", "1e300"},
      {"analyze", "x.jdw", "--schema", "testserver", "--pcap-offset", "1e300"},
      {"analyze", "x.jdw", "--schema", "testserver", "--pcap-offset", "nan"},
  };
  for (std::vector<std::string> argv : cases) {
    const std::string option = argv[argv.size() - 2];
    argv.insert(argv.begin(), Jackdaw());
    auto r = RunCommand(argv);
    EXPECT_NE(r.exit_code, 0) << option << " " << argv.back();
    EXPECT_NE(r.err.find(option), std::string::npos) << option << " " << argv.back() << ": " << r.err;
  }
}

TEST(CliArgs, EmptyProbeListIsRefusedNotMeasured) {
  auto r = RunCommand({Jackdaw(), "overhead", "--probes", "", "--no-tools", "--runs", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("--probes is empty"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");  // no report, no ratio
}

TEST(CliArgs, InteractionsCgroupOutsideTheHierarchyIsRefused) {
  JDW_REQUIRE_ROOT();
  auto r = RunCommand({Jackdaw(), "interactions", "--cgroup", "../../../etc", "--duration", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  // Where it lands depends on the mount (/sys/fs/cgroup or .../unified);
  // either way it is not a cgroup, and the line says what to give instead.
  EXPECT_EQ(r.err.rfind("jackdaw: --cgroup ../../../etc: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("give a path under"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// ---- reading back ----------------------------------------------------------

std::string WriteUnfinishedTrace() {
  const std::string path = testing::TempPath("unfinished.jdw");
  nlohmann::json header = {{"abi_version", JDW_ABI_VERSION}, {"ncpus", 1}};
  auto w = trace::TraceWriter::Create(path, header);
  EXPECT_TRUE(w.ok());
  EXPECT_TRUE((*w)->WriteMeta({{"clock", {{"method", "none"}}}}).ok());
  return path;  // no footer: a killed recording
}

TEST(SalvageCli, HintOnlyWhereSalvageCanHelpAndOneExitStatusForOneFile) {
  const std::string path = WriteUnfinishedTrace();
  auto d = RunCommand({Jackdaw(), "dump", "--summary", path});
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.err.find("--salvage"), std::string::npos) << d.err;
  const std::string foreign = testing::TempPath("foreign.jdw");
  { std::ofstream(foreign) << "JDWTRACE but not really a trace at all"; }
  auto f = RunCommand({Jackdaw(), "dump", foreign});
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_EQ(f.err.find("--salvage"), std::string::npos) << "useless hint: " << f.err;
  auto missing = RunCommand({Jackdaw(), "analyze", "/nonexistent.jdw", "--schema", "testserver"});
  EXPECT_EQ(missing.err.find("--salvage"), std::string::npos) << "useless hint: " << missing.err;
  auto ds = RunCommand({Jackdaw(), "dump", "--summary", "--salvage", path});
  auto as = RunCommand({Jackdaw(), "analyze", "--salvage", "-q", path, "--schema", "testserver"});
  EXPECT_EQ(ds.exit_code, 1) << ds.err;
  EXPECT_EQ(as.exit_code, ds.exit_code) << as.err;
  fs::remove(path);
  fs::remove(foreign);
}

}  // namespace
}  // namespace jackdaw
