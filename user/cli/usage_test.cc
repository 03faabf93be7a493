#include "cli/usage.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace jackdaw::cli {
namespace {

const std::vector<std::string> kCommands = {"record", "dump",   "analyze", "demo", "reproduce", "export",
                                            "stitch", "interactions", "live", "ctl", "overhead"};

TEST(Usage, SuggestsTheCommandATypoMeant) {
  EXPECT_EQ(NearestCommand("recrod", kCommands), "record");
  EXPECT_EQ(NearestCommand("analyse", kCommands), "analyze");
  EXPECT_EQ(NearestCommand("lvie", kCommands), "live");
  EXPECT_EQ(NearestCommand("stich", kCommands), "stitch");
}

TEST(Usage, SuggestsNothingForAWordFarFromEveryCommand) {
  EXPECT_EQ(NearestCommand("frobnicate", kCommands), std::nullopt);
  EXPECT_EQ(NearestCommand("xy", kCommands), std::nullopt);
}

TEST(Usage, DurationsTakeAUnitAndABareNumberIsSeconds) {
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("5"), 5);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("5s"), 5);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("250ms"), 0.25);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("2m"), 120);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("1.5h"), 5400);
  EXPECT_EQ(ParseDurationSeconds("5x"), std::nullopt);
  EXPECT_EQ(ParseDurationSeconds("s"), std::nullopt);
  EXPECT_EQ(ParseDurationSeconds(""), std::nullopt);
  EXPECT_EQ(ParseDurationSeconds("inf"), std::nullopt);
}

double ParseDurationOption(const std::string& value) {
  CLI::App app;
  double seconds = -1;
  app.add_option("--duration", seconds)->transform(DurationSeconds(0, 3600, true));
  app.parse(std::vector<std::string>{value, "--duration"});  // CLI11 takes argv reversed
  return seconds;
}

TEST(Usage, DurationOptionHandsTheCommandSeconds) {
  EXPECT_DOUBLE_EQ(ParseDurationOption("250ms"), 0.25);
  EXPECT_DOUBLE_EQ(ParseDurationOption("2m"), 120);
  EXPECT_DOUBLE_EQ(ParseDurationOption("30"), 30);
}

TEST(Usage, DurationOptionRefusesNoUnitsAndValuesOutOfRange) {
  EXPECT_THROW(ParseDurationOption("5x"), CLI::ValidationError);
  EXPECT_THROW(ParseDurationOption("0s"), CLI::ValidationError);
  EXPECT_THROW(ParseDurationOption("2h"), CLI::ValidationError);
  try {
    ParseDurationOption("5x");
  } catch (const CLI::ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("e.g. 30s, 250ms, 2m"), std::string::npos) << e.what();
  }
}

TEST(Usage, ParseErrorsAreOneJackdawLineAndExitTwo) {
  CLI::App app{"test", "jackdaw"};
  double duration = 0;
  app.add_subcommand("record", "r")->add_option("--duration", duration)->transform(DurationSeconds(0, 10, true));
  const char* argv[] = {"jackdaw", "record", "--duration", "5x"};
  int status = -1;
  ::testing::internal::CaptureStderr();
  try {
    app.parse(4, argv);
  } catch (const CLI::ParseError& e) {
    status = ReportParseError(app, e);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, kExitUsage);
  EXPECT_EQ(err.rfind("jackdaw: ", 0), 0u) << err;
  EXPECT_NE(err.find("(see jackdaw record --help)"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(Usage, UnknownCommandIsAnsweredWithTheNearestOne) {
  CLI::App app{"test", "jackdaw"};
  app.add_subcommand("record", "r");
  app.add_subcommand("analyze", "a");
  const char* typo[] = {"jackdaw", "recrod"};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RejectUnknownCommand(app, 2, typo), kExitUsage);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "jackdaw: unknown command 'recrod'; did you mean 'record'?\n");
  const char* known[] = {"jackdaw", "analyze", "x.jdw"};
  EXPECT_EQ(RejectUnknownCommand(app, 3, known), std::nullopt);
  const char* option[] = {"jackdaw", "--version"};
  EXPECT_EQ(RejectUnknownCommand(app, 2, option), std::nullopt);
}

}  // namespace
}  // namespace jackdaw::cli
