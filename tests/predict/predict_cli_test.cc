// jackdaw predict as a user runs it, on a fixed recorded trace (no eBPF):
// its kinds are analyze's clusters, label for label; the same seed gives the
// same answer; what the model cannot answer is one line and exit 2; --json -
// is standard output, for analyze and predict alike.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace jackdaw {
namespace {

using testing::RunCommand;

const std::string kTrace = std::string(JDW_GOLDEN_DIR) + "/testserver-mix.jdw";

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  std::filesystem::remove(path);
  return j;
}

nlohmann::json Predict(std::vector<std::string> extra) {
  const std::string out = testing::TempPath("predict-cli.json");
  std::vector<std::string> argv = {Jackdaw(), "predict", kTrace, "--schema", "testserver", "--requests", "20000",
                                   "--json", out};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return ReadJson(out);
}

TEST(PredictCli, KindsAreAnalyzesClustersLabelForLabel) {
  const std::string model = testing::TempPath("predict-cli-model.json");
  auto a = RunCommand({Jackdaw(), "analyze", kTrace, "--schema", "testserver", "-q", "--json", model});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const nlohmann::json m = ReadJson(model);
  const nlohmann::json p = Predict({"--clients", "2"});
  ASSERT_EQ(p["kinds"].size(), m["clusters"].size());
  ASSERT_EQ(p["self_check"]["kinds"].size(), m["clusters"].size());
  for (size_t i = 0; i < m["clusters"].size(); ++i) {
    EXPECT_EQ(p["kinds"][i]["kind"], m["clusters"][i]["label"]);
    EXPECT_EQ(p["self_check"]["kinds"][i]["kind"], m["clusters"][i]["label"]);
    EXPECT_EQ(p["self_check"]["kinds"][i]["recorded_requests"].get<uint64_t>(),
              m["clusters"][i]["size"].get<uint64_t>())
        << m["clusters"][i]["label"];
  }
  for (const char* key : {"utilisation", "bottleneck", "self_check", "throughput"}) EXPECT_TRUE(p.contains(key)) << key;
  // The recorded conditions, simulated, give the recorded throughput.
  EXPECT_LT(std::abs(p["self_check"]["throughput"]["error"].get<double>()), 0.10) << p["self_check"].dump();
}

TEST(PredictCli, TheSameSeedGivesTheSameAnswerAndMoreCpusMoreThroughput) {
  const nlohmann::json a = Predict({"--clients", "8", "--seed", "3", "--other-work", "none"});
  const nlohmann::json b = Predict({"--clients", "8", "--seed", "3", "--other-work", "none"});
  EXPECT_EQ(a.dump(), b.dump());
  const nlohmann::json one = Predict({"--clients", "8", "--cpus", "1", "--other-work", "none"});
  EXPECT_GT(a["throughput"].get<double>(), 1.5 * one["throughput"].get<double>());
  EXPECT_EQ(one["bottleneck"]["resource"], "cpu");
  EXPECT_GT(one["utilisation"]["cpu"].get<double>(), 0.95);
  // Open loop: Poisson arrivals the machine keeps up with come out as
  // the throughput.
  const nlohmann::json open = Predict({"--rate", "5", "--other-work", "none"});
  EXPECT_FALSE(open["saturated"].get<bool>());
  EXPECT_NEAR(open["throughput"].get<double>(), 5.0, 0.25);
}

TEST(PredictCli, WhatTheModelCannotAnswerIsOneLineAndExit2) {
  const std::vector<std::vector<std::string>> bad = {
      {"--scale", "c99:cpu=2"}, {"--cpus", "0"},          {"--scale", "c0:cpu=-1"},
      {"--mix", "c0=0.8", "--mix", "c1=0.8"},                {"--clients", "2", "--rate", "10"},
      {"--mix", "c99=0.5"},
  };
  for (const auto& extra : bad) {
    std::vector<std::string> argv = {Jackdaw(), "predict", kTrace, "--schema", "testserver"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = RunCommand(argv);
    const std::string shown = extra[0] + " " + extra[1];
    EXPECT_EQ(r.exit_code, 2) << shown << ": " << r.err;
    EXPECT_EQ(r.err.rfind("jackdaw: ", 0), 0u) << shown << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << shown << ": " << r.err;
    EXPECT_NE(r.err.find("; "), std::string::npos) << shown << ": a cause and a fix: " << r.err;
  }
}

// --json - (every subcommand's rule): the JSON alone on standard output,
// for a pipe, and the text report on standard error; the same JSON as
// --json FILE writes.
TEST(PredictCli, JsonDashIsStandardOutputAndTheTextGoesToStderr) {
  const std::string model = testing::TempPath("predict-cli-dash-model.json");
  auto file = RunCommand({Jackdaw(), "analyze", kTrace, "--schema", "testserver", "-q", "--json", model});
  ASSERT_EQ(file.exit_code, 0) << file.err;
  auto dash = RunCommand({Jackdaw(), "analyze", kTrace, "--schema", "testserver", "-q", "--json", "-"});
  ASSERT_EQ(dash.exit_code, 0) << dash.err;
  const nlohmann::json from_stdout = nlohmann::json::parse(dash.out, nullptr, false);
  ASSERT_FALSE(from_stdout.is_discarded()) << dash.out.substr(0, 300);
  const nlohmann::json from_file = ReadJson(model);
  EXPECT_EQ(from_stdout["clusters"].size(), from_file["clusters"].size());
  EXPECT_EQ(from_stdout["summary"]["requests"], from_file["summary"]["requests"]);
  EXPECT_NE(dash.err.find(file.out.substr(0, file.out.find('\n'))), std::string::npos)
      << "the text report's first line is not on stderr:\n" << dash.err.substr(0, 500);
  EXPECT_NE(dash.err.find("written to standard output"), std::string::npos) << dash.err.substr(0, 500);

  auto p = RunCommand({Jackdaw(), "predict", kTrace, "--schema", "testserver", "--requests", "20000", "--json", "-"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const nlohmann::json prediction = nlohmann::json::parse(p.out, nullptr, false);
  ASSERT_FALSE(prediction.is_discarded()) << p.out.substr(0, 300);
  EXPECT_TRUE(prediction.contains("self_check"));
}

}  // namespace
}  // namespace jackdaw
