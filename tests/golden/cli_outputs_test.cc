// Outputs sent to standard output ("-"), run for real on the golden trace:
// each output option writes there exactly what it writes to a file, the
// text report moves to standard error, two outputs at "-" are refused in
// one line, and ctl's --json spellings reach the command as meant.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace jackdaw {
namespace {

using testing::CommandResult;
using testing::RunCommand;

const std::string kTrace = std::string(JDW_GOLDEN_DIR) + "/testserver-mix.jdw";

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }

std::vector<std::string> Analyze(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {Jackdaw(), "analyze", kTrace, "--schema", "testserver", "-q"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// `argv` with `option FILE`, and again with `option -`: the file's content
// and the second run, whose stdout must be that content.
struct ToFileAndStdout {
  std::string file;
  CommandResult to_stdout;
};

ToFileAndStdout RunBoth(std::vector<std::string> argv, const std::string& option) {
  const std::string path = testing::TempPath("stdout-output");
  std::vector<std::string> to_file = argv;
  to_file.insert(to_file.end(), {option, path});
  const CommandResult f = RunCommand(to_file);
  EXPECT_EQ(f.exit_code, 0) << option << ": " << f.err;
  ToFileAndStdout out{testing::ReadWholeFile(path), {}};
  std::remove(path.c_str());
  argv.insert(argv.end(), {option, "-"});
  out.to_stdout = RunCommand(argv);
  return out;
}

class AnalyzeOutput : public ::testing::TestWithParam<std::string> {};

TEST_P(AnalyzeOutput, DashWritesTheFilesContentToStdoutAndTheReportToStderr) {
  const CommandResult plain = RunCommand(Analyze({}));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_FALSE(plain.out.empty());
  const ToFileAndStdout r = RunBoth(Analyze({}), GetParam());
  ASSERT_EQ(r.to_stdout.exit_code, 0) << r.to_stdout.err;
  ASSERT_FALSE(r.file.empty());
  EXPECT_EQ(r.to_stdout.out, r.file) << GetParam() << " - did not write what " << GetParam() << " FILE writes";
  EXPECT_NE(r.to_stdout.err.find(plain.out), std::string::npos)
      << "the text report is not on stderr:\n" << r.to_stdout.err;
  EXPECT_NE(r.to_stdout.err.find("written to standard output"), std::string::npos) << r.to_stdout.err;
}

INSTANTIATE_TEST_SUITE_P(Options, AnalyzeOutput,
                         ::testing::Values("--json", "--requests", "--perfetto", "--html", "--otlp-json"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string name = i.param.substr(2);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(CliOutputs, DiffJsonDashIsTheJsonAlone) {
  const ToFileAndStdout r =
      RunBoth({Jackdaw(), "diff", kTrace, kTrace, "--schema", "testserver"}, "--json");
  ASSERT_EQ(r.to_stdout.exit_code, 0) << r.to_stdout.err;
  ASSERT_FALSE(r.file.empty());
  EXPECT_EQ(r.to_stdout.out, r.file);
}

TEST(CliOutputs, PredictOutputDashIsTheJsonAlone) {
  const std::vector<std::string> argv = {Jackdaw(), "predict", kTrace, "--schema", "testserver", "--requests",
                                         "2000"};
  const ToFileAndStdout r = RunBoth(argv, "-o");
  ASSERT_EQ(r.to_stdout.exit_code, 0) << r.to_stdout.err;
  ASSERT_FALSE(r.file.empty());
  EXPECT_EQ(r.to_stdout.out, r.file);
}

TEST(CliOutputs, ExportPcapDashIsThePcapngAlone) {
  const ToFileAndStdout r = RunBoth({Jackdaw(), "export", kTrace}, "-o");
  ASSERT_EQ(r.to_stdout.exit_code, 0) << r.to_stdout.err;
  ASSERT_GT(r.file.size(), 28u);
  EXPECT_EQ(r.to_stdout.out, r.file);
  EXPECT_NE(r.to_stdout.err.find("written to standard output"), std::string::npos) << r.to_stdout.err;
}

TEST(CliOutputs, TwoOutputsOnStdoutAreRefusedInOneLine) {
  const struct {
    std::vector<std::string> argv;
    std::string first, second;
  } cases[] = {
      {Analyze({"--json", "-", "--html", "-"}), "--json", "--html"},
      {Analyze({"--requests", "-", "--otlp-json", "-", "--perfetto", "-"}), "--requests", "--perfetto"},
      // Refused before anything runs: no root, no probes needed.
      {{Jackdaw(), "interactions", "--json", "-o", "-"}, "--json", "--output"},
  };
  for (const auto& c : cases) {
    const CommandResult r = RunCommand(c.argv);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("jackdaw: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(c.first), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.second), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("a file"), std::string::npos) << "names no fix: " << r.err;
  }
}

TEST(CliOutputs, CsvNeedsADirectoryNotStdout) {
  const CommandResult r = RunCommand(Analyze({"--csv", "-"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("jackdaw: --csv -:", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A file given apart from --json is taken for the request it stands in the
// place of, and said so; --json=FILE is the spelling.
TEST(CliOutputs, CtlSaysHowToGiveJsonAFile) {
  const CommandResult r = RunCommand({Jackdaw(), "ctl", "--json", "out.json", "status"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "jackdaw: unknown request 'out.json': give one of list, status, enable, disable, filter, granularity, "
            "snapshot (a file for --json is written --json=out.json)\n");
}

TEST(CliOutputs, CtlJsonListIsJsonOnStdout) {
  JDW_REQUIRE_ROOT();
  const std::string dir = testing::TempPath("ctl-run-dir");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  for (const std::vector<std::string>& spelling :
       {std::vector<std::string>{"--json", "list"}, {"list", "--json"}, {"--json=-", "list"}, {"--raw", "list"}}) {
    std::vector<std::string> argv = {Jackdaw(), "ctl", "--run-dir", dir};
    argv.insert(argv.end(), spelling.begin(), spelling.end());
    const CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "{\"ok\":true,\"sessions\":[]}\n") << spelling[0];
  }
  const std::string file = dir + "/list.json";
  const CommandResult r = RunCommand({Jackdaw(), "ctl", "--run-dir", dir, "--json=" + file, "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no jackdaw session is running\n");
  EXPECT_EQ(testing::ReadWholeFile(file), "{\"ok\":true,\"sessions\":[]}\n");
  std::remove(file.c_str());
  rmdir(dir.c_str());
}

// A trace recorded to stdout reads as one, and the traced command's own
// output went to stderr, out of the trace's way.
TEST(CliOutputs, RecordToStdoutIsAWholeTrace) {
  JDW_REQUIRE_ROOT();
  const CommandResult r = RunCommand({Jackdaw(), "record", "-q", "-o", "-", "--", testing::BinDir() + "/jackdaw-workload",
                                      "--getppid", "300"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("\"calls\":300"), std::string::npos) << r.err;
  ASSERT_GT(r.out.size(), 64u);
  const std::string path = testing::TempPath("stdout.jdw");
  {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fwrite(r.out.data(), 1, r.out.size(), f);
    fclose(f);
  }
  const CommandResult d = RunCommand({Jackdaw(), "dump", "--summary", path});
  std::remove(path.c_str());
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("complete"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("sys_enter"), std::string::npos) << d.out;
}

}  // namespace
}  // namespace jackdaw
