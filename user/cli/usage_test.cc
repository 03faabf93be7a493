#include "cli/usage.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "cli/app.h"
#include "cli/man_page.h"

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

// What CLI11 prints when an option is not given words: its C++ types
// (TEXT, FLOAT, UINT, INT), its validators' names (FLOAT:POSITIVE,
// FLOAT:NUMBER), ranges in interval notation ("in [0.1 - 3600]"), and in
// the option's column a default glued on with "=" (FLOAT=1, TEXT=auto;
// KIND=SHARE is a value's name).
const std::regex kParserNotation(
    R"(\b(TEXT|FLOAT|UINT|INT|BOOLEAN|NUMBER|POSITIVE|NONNEGATIVE)\b|:(DURATION|PATH|FILE)\b| in \[| in \()");
const std::regex kGluedDefault(R"(=[0-9a-z./-])");

std::vector<std::string> ParserNotation(const std::string& text) {
  std::vector<std::string> bad;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find_first_not_of(' ');
    const bool option_line = first != std::string::npos && first > 0 && line[first] == '-';
    // The option's names and its value's name ("--window FLOAT=0.25"): the
    // first two words (a long one runs into the help after one space).
    std::string column;
    if (option_line) {
      std::istringstream words(line);
      std::string names, value;
      words >> names >> value;
      column = names + " " + value;
    }
    if (std::regex_search(line, kParserNotation) || std::regex_search(column, kGluedDefault)) bad.push_back(line);
  }
  return bad;
}

TEST(Usage, HelpNamesValuesInWordsInEverySubcommand) {
  const Cli cli = BuildCli("test");
  const std::vector<std::string> commands = ManPageCommands(*cli.app);
  ASSERT_GE(commands.size(), 13u);
  for (const std::string& c : commands) {
    const CLI::App* sub = cli.app->get_subcommand(c);
    for (const std::string& line : ParserNotation(sub->help()))
      ADD_FAILURE() << "jackdaw " << c << " --help shows the parser's notation:\n" << line;
    for (const std::string& line : ParserNotation(ManPage(*cli.app, sub, "test")))
      ADD_FAILURE() << "jackdaw-" << c << "(1) shows the parser's notation:\n" << line;
    // Every option that takes a value says what the value is.
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->get_group().empty() || opt->get_expected_max() == 0) continue;  // hidden, or a flag
      EXPECT_FALSE(OptionValueName(*opt).empty()) << c << " " << opt->get_name();
    }
  }
  EXPECT_TRUE(ParserNotation(cli.app->help()).empty()) << cli.app->help();
}

TEST(Usage, TheNotationCheckCatchesWhatCli11PrintsUnaided) {
  CLI::App app{"test", "t"};
  double seconds = 0.25;
  std::string name;
  app.add_option("--window", seconds, "reorder window")->capture_default_str()->check(CLI::Range(0.01, 5.0));
  app.add_option("--name", name, "a name");
  EXPECT_EQ(ParserNotation(app.help()).size(), 2u) << app.help();
}

TEST(Usage, RangesAndDefaultsReadAsWords) {
  CLI::App app{"test", "t"};
  app.formatter(std::make_shared<HelpFormatter>());
  double seconds = 0.25;
  app.add_option("--reorder-window", seconds, "reorder window")
      ->type_name("DURATION")
      ->capture_default_str()
      ->transform(DurationSeconds(0.01, 5, false));
  const std::string help = app.help();
  EXPECT_NE(help.find("--reorder-window DURATION"), std::string::npos) << help;
  EXPECT_NE(help.find("reorder window (0.01 s to 5 s; default 0.25 s)"), std::string::npos) << help;
}

double ParseWith(const std::vector<std::string>& argv_reversed) {
  CLI::App app;
  double seconds = -1;
  CLI::Option* window = app.add_option("--reorder-window", seconds)->transform(DurationSeconds(0, 10, true));
  HiddenAlias(&app, "--window", seconds, window);
  app.parse(std::vector<std::string>(argv_reversed));
  return seconds;
}

TEST(Usage, AHiddenOldSpellingStillWorksWithTheNewOnesChecks) {
  EXPECT_DOUBLE_EQ(ParseWith({"250ms", "--reorder-window"}), 0.25);
  EXPECT_DOUBLE_EQ(ParseWith({"250ms", "--window"}), 0.25);
  EXPECT_THROW(ParseWith({"20", "--window"}), CLI::ValidationError);
}

// The old spellings of renamed options: still accepted, no longer shown.
TEST(Usage, RenamedOptionsKeepTheirOldSpellingHidden) {
  const struct {
    std::vector<std::string> argv;
    std::string old_name, new_name;
  } cases[] = {
      {{"record", "--pcap", "eth0"}, "--pcap", "--pcap-iface"},
      {{"analyze", "x.jdw", "--pcap", "a.pcapng"}, "--pcap", "--pcap-input"},
      {{"analyze", "x.jdw", "--window", "2"}, "--window", "--reorder-window"},
      {{"diff", "a.jdw", "b.jdw", "-s", "t", "--window", "2"}, "--window", "--reorder-window"},
      {{"predict", "a.jdw", "-s", "t", "--window", "2"}, "--window", "--reorder-window"},
      {{"stitch", "a.jdw", "b.jdw", "-s", "t", "--window", "2"}, "--window", "--reorder-window"},
      {{"live", "-s", "t", "--window", "0.5"}, "--window", "--reorder-window"},
      {{"live", "-s", "t", "--interval", "2"}, "--interval", "--refresh"},
      {{"interactions", "--interval", "2"}, "--interval", "--class-window"},
      {{"ctl", "granularity", "class", "--window", "5"}, "--window", "--class-window"},
  };
  for (const auto& c : cases) {
    Cli cli = BuildCli("test");
    std::vector<std::string> args(c.argv.rbegin(), c.argv.rend());
    EXPECT_NO_THROW(cli.app->parse(args)) << c.argv[0] << " " << c.old_name;
    const CLI::App* sub = cli.app->get_subcommand(c.argv[0]);
    const std::string help = sub->help();
    EXPECT_NE(help.find(c.new_name + " "), std::string::npos) << help;
    EXPECT_EQ(help.find(c.old_name + " "), std::string::npos) << c.argv[0] << " shows " << c.old_name << "\n" << help;
  }
}

std::string JsonOf(const std::vector<std::string>& argv, std::vector<std::string>* command = nullptr) {
  Cli cli = BuildCli("test");
  cli.app->parse(std::vector<std::string>(argv.rbegin(), argv.rend()));
  const CLI::App* sub = cli.app->get_subcommand(argv[0]);
  if (command) *command = sub->get_option("command")->results();
  const CLI::Option* json = sub->get_option("--json");
  return json->count() ? json->as<std::string>() : std::string();
}

TEST(Usage, JsonTakesAFileAndDashOrNothingIsStandardOutput) {
  EXPECT_EQ(JsonOf({"live", "-s", "t", "--json", "m.jsonl"}), "m.jsonl");
  EXPECT_EQ(JsonOf({"live", "-s", "t", "--json", "-"}), "-");
  EXPECT_EQ(JsonOf({"live", "--json", "-s", "t"}), "-");
  EXPECT_EQ(JsonOf({"interactions", "--json"}), "-");
  EXPECT_EQ(JsonOf({"analyze", "x.jdw", "--json", "-"}), "-");
  std::vector<std::string> command;
  EXPECT_EQ(JsonOf({"overhead", "--json", "--", "./bench", "--quick"}, &command), "-");
  EXPECT_EQ(command, (std::vector<std::string>{"./bench", "--quick"}));
  EXPECT_EQ(JsonOf({"overhead", "--json", "o.json", "--", "./bench", "--quick"}, &command), "o.json");
  EXPECT_EQ(command, (std::vector<std::string>{"./bench", "--quick"}));
}

// Every option that names an output file is an Output (its "-" is standard
// output, and main refuses two of them at "-"): the list is pinned, and an
// option that writes a FILE outside it fails here.
TEST(Usage, EveryOutputFileTakesDashForStandardOutput) {
  const Cli cli = BuildCli("test");
  std::set<std::string> outputs;
  for (const std::string& c : ManPageCommands(*cli.app)) {
    const CLI::App* sub = cli.app->get_subcommand(c);
    for (const CLI::Option* opt : OutputOptions(*sub)) {
      outputs.insert(c + " " + opt->get_name());
      EXPECT_NE(OptionHelpText(*opt).find("- for standard output"), std::string::npos) << c << " " << opt->get_name();
    }
    if (!OutputOptions(*sub).empty()) {
      EXPECT_NE(sub->help().find(kOutputNote), std::string::npos) << c;
      EXPECT_NE(ManPage(*cli.app, sub, "test").find("Only one output can be"), std::string::npos) << c;
    }
    for (const CLI::Option* opt : sub->get_options()) {
      const std::string value = OptionValueName(*opt);
      const bool writes_a_file = opt->get_description().rfind("write", 0) == 0 && value.find("FILE") != std::string::npos;
      if (writes_a_file && !opt->get_group().empty()) {
        EXPECT_EQ(opt->get_group(), kOutputGroup) << c << " " << opt->get_name() << " writes a file: make it an Output()";
      }
    }
  }
  const std::set<std::string> want = {
      "analyze --requests", "analyze --json",   "analyze --perfetto", "analyze --html",   "analyze --otlp-json",
      "diff --json",        "export --pcap",    "fleet --json",       "interactions --json", "interactions --output",
      "live --json",        "live --otlp-json", "overhead --json",    "predict --output", "record --output",
      "reproduce --results", "stitch --json",   "ctl --json"};
  EXPECT_EQ(outputs, want);
}

struct CtlParsed {
  std::string json;
  std::vector<std::string> request;
  bool raw = false;
};

CtlParsed ParseCtl(const std::vector<std::string>& argv) {
  Cli cli = BuildCli("test");
  std::vector<std::string> args = {"ctl"};
  args.insert(args.end(), argv.begin(), argv.end());
  cli.app->parse(std::vector<std::string>(args.rbegin(), args.rend()));
  const CLI::App* sub = cli.app->get_subcommand("ctl");
  CtlParsed p;
  const CLI::Option* json = sub->get_option("--json");
  if (json->count()) p.json = json->as<std::string>();
  p.request = sub->get_option("request")->results();
  p.raw = sub->get_option("--raw")->count() > 0;
  return p;
}

// --json takes a file only as --json=FILE, so the request word after it is
// never taken for one.
TEST(Usage, CtlJsonNeverSwallowsTheRequest) {
  using V = std::vector<std::string>;
  EXPECT_EQ(ParseCtl({"--json", "status"}).json, "-");
  EXPECT_EQ(ParseCtl({"--json", "status"}).request, V{"status"});
  EXPECT_EQ(ParseCtl({"status", "--json"}).json, "-");
  EXPECT_EQ(ParseCtl({"status", "--json"}).request, V{"status"});
  EXPECT_EQ(ParseCtl({"--json=reply.json", "status"}).json, "reply.json");
  EXPECT_EQ(ParseCtl({"--json=reply.json", "status"}).request, V{"status"});
  EXPECT_EQ(ParseCtl({"--json=-", "status"}).json, "-");
  EXPECT_EQ(ParseCtl({"--json", "granularity", "class", "--class-window", "5"}).request, (V{"granularity", "class"}));
  EXPECT_EQ(ParseCtl({"--json", "snapshot", "/tmp/x.jdw"}).request, (V{"snapshot", "/tmp/x.jdw"}));
  // A file apart from --json is a request word; ctl refuses it, naming --json=FILE.
  EXPECT_EQ(ParseCtl({"--json", "reply.json", "status"}).request, (V{"reply.json", "status"}));
  EXPECT_EQ(ParseCtl({"status"}).json, "");
  // The old spelling: accepted, not shown.
  EXPECT_TRUE(ParseCtl({"--raw", "status"}).raw);
  EXPECT_EQ(ParseCtl({"--raw", "status"}).request, V{"status"});
  const Cli cli = BuildCli("test");
  const std::string help = cli.app->get_subcommand("ctl")->help();
  EXPECT_NE(help.find("--json[=FILE]"), std::string::npos) << help;
  EXPECT_EQ(help.find("--raw"), std::string::npos) << help;
}

}  // namespace
}  // namespace jackdaw::cli
