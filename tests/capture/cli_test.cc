// The CLI as a user meets it: real binaries, real files, real signals.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

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
  // In time order across CPUs, each record with its process's name.
  std::istringstream all(full.out);
  double last = -1;
  size_t backward = 0;
  for (std::string l; std::getline(all, l);) {
    const double t = std::stod(l);
    backward += t < last;
    last = t;
  }
  EXPECT_EQ(backward, 0u);
  EXPECT_NE(full.out.find(" jackdaw-workloa "), std::string::npos) << full.out.substr(0, 400);
  // Filters: one type, one process, a time window; each line what was asked.
  auto enters = RunCommand({Jackdaw(), "dump", path, "--type", "sys_enter"});
  ASSERT_EQ(enters.exit_code, 0) << enters.err;
  std::istringstream lines(enters.out);
  size_t n = 0;
  std::string pid;
  for (std::string l; std::getline(lines, l); ++n) {
    EXPECT_NE(l.find(" sys_enter "), std::string::npos) << l;
    if (l.find("getppid") != std::string::npos && pid.empty()) {
      std::istringstream f(l);
      std::string t, cpu, ids;
      f >> t >> cpu >> ids;
      pid = ids.substr(ids.find('/') + 1);
    }
  }
  EXPECT_GE(n, 1234u);
  ASSERT_FALSE(pid.empty());
  auto own = RunCommand({Jackdaw(), "dump", path, "--pid", pid, "--type", "sys_enter,sys_exit", "--from", "0"});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  std::istringstream own_lines(own.out);
  for (std::string l; std::getline(own_lines, l);) EXPECT_NE(l.find("/" + pid + " "), std::string::npos) << l;
  auto none = RunCommand({Jackdaw(), "dump", path, "--from", "1000000"});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(none.out, "");
  auto bad = RunCommand({Jackdaw(), "dump", path, "--type", "sched_swtich"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no such event"), std::string::npos) << bad.err;
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
  EXPECT_EQ(r.exit_code, 2);  // a usage error, found before the privilege check
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

TEST(Cli, VersionPrintsTheBuildsVersion) {
  auto r = RunCommand({Jackdaw(), "--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("jackdaw ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find_first_of("0123456789"), std::string::npos) << r.out;
}

TEST(Cli, MistypedCommandSuggestsTheNearestOne) {
  auto r = RunCommand({Jackdaw(), "recrod", "-o", "x.jdw"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "jackdaw: unknown command 'recrod'; did you mean 'record'?\n");
  auto a = RunCommand({Jackdaw(), "analyse", "x.jdw"});
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.err.find("did you mean 'analyze'?"), std::string::npos) << a.err;
}

// Every argument error: one line, "jackdaw: " first, exit 2 (the usage
// status the man page documents), whichever subcommand and whatever error.
TEST(Cli, ArgumentErrorsAreOneJackdawLineAndExit2) {
  const std::vector<std::vector<std::string>> bad = {
      {Jackdaw()},
      {Jackdaw(), "analyze", "--no-such-option", "x.jdw"},
      {Jackdaw(), "record", "--duration", "5x"},
      {Jackdaw(), "live", "--duration", "-1s"},
      {Jackdaw(), "interactions", "--duration", "soon"},
      {Jackdaw(), "dump"},
  };
  for (const auto& argv : bad) {
    auto r = RunCommand(argv);
    const std::string shown = argv.size() > 1 ? argv[1] : "(none)";
    EXPECT_EQ(r.exit_code, 2) << shown << ": " << r.err;
    EXPECT_EQ(r.err.rfind("jackdaw: ", 0), 0u) << shown << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << shown << ": " << r.err;
  }
}

TEST(RecordCli, DurationTakesAUnit) {
  JDW_REQUIRE_ROOT();
  const std::string path = testing::TempPath("duration.jdw");
  const auto start = std::chrono::steady_clock::now();
  auto r = RunCommand({Jackdaw(), "record", "-q", "-o", path, "--duration", "300ms"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 30.0) << "300ms was not read as 0.3 s";
  auto t = trace::TraceReader::Open(path);
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::filesystem::remove(path);
}

// Options as `jackdaw COMMAND --help` lists them: on each line whose first
// word starts with '-', that word's comma-separated names (-o,--output).
std::vector<std::string> OptionsInHelp(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    const size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos || line[start] != '-') continue;
    // The names end at a space, or where a value given only as
    // --json=FILE is shown glued on ("--json[=FILE]").
    std::string column = line.substr(start, line.find(' ', start) - start);
    column = column.substr(0, column.find("[="));
    std::istringstream first(column);
    for (std::string name; std::getline(first, name, ',');)
      if (name.size() >= 2 && name[0] == '-') names.push_back(name);
  }
  return names;
}

std::string RoffDashes(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

// The man pages come from the CLI's own definitions: every subcommand has a
// page, and each page names every option that subcommand's --help lists.
TEST(Cli, EveryCommandHasAManPageNamingEveryOption) {
  auto list = RunCommand({Jackdaw(), "help-man", "--list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::vector<std::string> commands;
  std::istringstream in(list.out);
  for (std::string c; std::getline(in, c);) commands.push_back(c);
  for (const char* expected : {"record", "dump", "analyze", "live", "ctl", "interactions", "overhead"})
    EXPECT_NE(std::find(commands.begin(), commands.end(), expected), commands.end()) << expected;
  auto top = RunCommand({Jackdaw(), "help-man"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find(".TH JACKDAW 1"), std::string::npos);
  EXPECT_NE(top.out.find(".SH EXIT STATUS"), std::string::npos);
  for (const std::string& c : commands) {
    EXPECT_NE(top.out.find("jackdaw\\-" + c + " (1)"), std::string::npos) << c << " missing from jackdaw(1)";
    auto page = RunCommand({Jackdaw(), "help-man", c});
    ASSERT_EQ(page.exit_code, 0) << c << ": " << page.err;
    EXPECT_NE(page.out.find(".TH JACKDAW-" + std::string(1, static_cast<char>(toupper(c[0])))), std::string::npos)
        << page.out.substr(0, 200);
    auto help = RunCommand({Jackdaw(), c, "--help"});
    ASSERT_EQ(help.exit_code, 0) << c << ": " << help.err;
    const std::vector<std::string> options = OptionsInHelp(help.out);
    EXPECT_GE(options.size(), 1u) << c;
    for (const std::string& o : options)
      EXPECT_NE(page.out.find(RoffDashes(o)), std::string::npos) << "jackdaw-" << c << "(1) does not name " << o;
  }
  auto unknown = RunCommand({Jackdaw(), "help-man", "recrod"});
  EXPECT_EQ(unknown.exit_code, 2);
}

// Bash completion comes from the same definitions: every subcommand and
// every option its --help lists, in a script bash accepts and that
// completes as a user types.
TEST(Cli, BashCompletionOffersEveryCommandAndOption) {
  auto script = RunCommand({Jackdaw(), "help-completion"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  auto list = RunCommand({Jackdaw(), "help-man", "--list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::istringstream in(list.out);
  for (std::string c; std::getline(in, c);) {
    EXPECT_NE(script.out.find("    " + c + ") opts='"), std::string::npos) << c;
    auto help = RunCommand({Jackdaw(), c, "--help"});
    for (const std::string& o : OptionsInHelp(help.out)) {
      // Options only ("--real:" in a help text names one, it is not one).
      if (o.rfind("--", 0) != 0 || o == "--help" || o == "--help-all" || o.back() == ':') continue;
      EXPECT_NE(script.out.find(o), std::string::npos) << c << " " << o;
    }
  }
  const std::string path = testing::TempPath("jackdaw.bash");
  {
    std::ofstream f(path);
    f << script.out;
  }
  auto syntax = RunCommand({"/bin/bash", "-n", path});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
  // What bash would offer: `jackdaw rec<TAB>` and `jackdaw analyze --sch<TAB>`.
  auto complete = [&](const std::string& words) {
    auto r = RunCommand({"/bin/bash", "-c",
                         "source " + path + "; COMP_WORDS=(" + words + "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
                         "_jackdaw; echo \"${COMPREPLY[*]}\""});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  EXPECT_EQ(complete("jackdaw rec"), "record\n");
  EXPECT_EQ(complete("jackdaw analyze --sch"), "--schema\n");
  std::filesystem::remove(path);
}

// One CLI: a short form names the same option in every subcommand that has
// it (its long names share one), so `-s` is never --schema here and
// --summary there.
TEST(Cli, AShortFormMeansOneThingEverywhere) {
  auto list = RunCommand({Jackdaw(), "help-man", "--list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::map<std::string, std::vector<std::pair<std::string, std::set<std::string>>>> uses;  // -x -> (command, longs)
  std::istringstream in(list.out);
  for (std::string c; std::getline(in, c);) {
    auto help = RunCommand({Jackdaw(), c, "--help"});
    ASSERT_EQ(help.exit_code, 0) << c;
    std::istringstream lines(help.out);
    for (std::string l; std::getline(lines, l);) {
      const size_t b = l.find_first_not_of(' ');
      if (b == std::string::npos || l.compare(b, 1, "-") != 0 || l.compare(b, 2, "--") == 0) continue;
      std::string names = l.substr(b, l.find(' ', b) - b);  // "-o,--output,--json"
      std::string shortform;
      std::set<std::string> longs;
      std::istringstream parts(names);
      for (std::string n; std::getline(parts, n, ',');) {
        if (n.rfind("--", 0) == 0) longs.insert(n);
        else if (n.size() == 2) shortform = n;
      }
      if (!shortform.empty() && shortform != "-h") uses[shortform].push_back({c, longs});
    }
  }
  EXPECT_FALSE(uses.empty());
  for (const auto& [shortform, all] : uses) {
    for (size_t i = 1; i < all.size(); ++i) {
      std::vector<std::string> common;
      std::set_intersection(all[0].second.begin(), all[0].second.end(), all[i].second.begin(), all[i].second.end(),
                            std::back_inserter(common));
      EXPECT_FALSE(common.empty()) << shortform << " means " << *all[0].second.begin() << " in " << all[0].first
                                   << " but " << *all[i].second.begin() << " in " << all[i].first;
    }
  }
}

}  // namespace
}  // namespace jackdaw
