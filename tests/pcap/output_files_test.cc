// Every file jackdaw writes, as root, where another user may have put
// something first: a symbolic link to a victim file, a FIFO (which blocked
// a plain open forever), a file of another user's (chowned to nobody), or
// an earlier result. Each is refused with one line naming the option, the
// victim is left as it was, and the check comes before the work does.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "pcap/synthetic_trace.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

namespace fs = std::filesystem;
using testing::RunCommand;

std::string Jackdaw() { return testing::BinDir() + "/jackdaw"; }

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OutputFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempPath("outputs");
    fs::remove_all(dir_);
    fs::create_directory(dir_);
    victim_ = dir_ + "/victim";
    std::ofstream(victim_) << "secret\n";
    packets_ = dir_ + "/packets.jdw";
    testing::WriteOneRecordTrace(packets_, true);
    no_packets_ = dir_ + "/no-packets.jdw";
    testing::WriteOneRecordTrace(no_packets_, false);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Link(const std::string& name) {
    const std::string p = dir_ + "/" + name;
    fs::create_symlink(victim_, p);
    return p;
  }
  std::string Fifo(const std::string& name) {
    const std::string p = dir_ + "/" + name;
    EXPECT_EQ(mkfifo(p.c_str(), 0666), 0);
    return p;
  }
  std::string OthersFile(const std::string& name) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p) << "theirs\n";
    const passwd* nobody = getpwnam("nobody");
    EXPECT_NE(nobody, nullptr);
    if (nobody) {
      EXPECT_EQ(chown(p.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
    }
    return p;
  }
  // Bounded: before the checked open, a FIFO blocked jackdaw forever.
  testing::CommandResult Run(std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"timeout", "60", Jackdaw()});
    return RunCommand(argv);
  }
  std::string dir_, victim_, packets_, no_packets_;
};

TEST_F(OutputFiles, ExportPcapRefusesALinkAFifoAndAnotherUsersFile) {
  JDW_REQUIRE_ROOT();
  auto link = Run({"export", packets_, "--pcap", Link("out.pcapng")});
  EXPECT_EQ(link.exit_code, 1) << link.err;
  EXPECT_NE(link.err.find("--pcap: refusing to write " + dir_ + "/out.pcapng: it is a symbolic link"),
            std::string::npos)
      << link.err;
  EXPECT_EQ(Slurp(victim_), "secret\n");

  auto fifo = Run({"export", packets_, "--pcap", Fifo("fifo.pcapng")});
  EXPECT_EQ(fifo.exit_code, 1) << fifo.err;
  EXPECT_NE(fifo.err.find("it is not a regular file"), std::string::npos) << fifo.err;

  const std::string theirs = OthersFile("theirs.pcapng");
  auto other = Run({"export", packets_, "--pcap", theirs});
  EXPECT_EQ(other.exit_code, 1) << other.err;
  EXPECT_NE(other.err.find("it belongs to uid"), std::string::npos) << other.err;
  EXPECT_EQ(Slurp(theirs), "theirs\n");
}

TEST_F(OutputFiles, ExportPcapWritesAPrivateFileAndLeavesItAloneWithoutPackets) {
  JDW_REQUIRE_ROOT();
  const std::string out = dir_ + "/out.pcapng";
  auto ok = Run({"export", packets_, "--pcap", out});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  struct stat st;
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_GT(st.st_size, 0);

  // A trace without packets says so and does not empty the earlier file.
  const std::string before = Slurp(out);
  auto none = Run({"export", no_packets_, "--pcap", out});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("holds no packet records"), std::string::npos) << none.err;
  EXPECT_EQ(Slurp(out), before);
}

TEST_F(OutputFiles, AnalyzeChecksEveryOutputBeforeAnalysing) {
  JDW_REQUIRE_ROOT();
  // Each bad path is refused before the trace is read: the trace here does
  // not even exist, so any later failure would name it instead.
  const std::string missing_trace = dir_ + "/absent.jdw";
  const std::pair<const char*, std::string> cases[] = {
      {"--html", "/nonexistent-dir/r.html"},
      {"--json", Link("model.json")},
      {"--requests", Fifo("requests.jsonl")},
      {"--perfetto", OthersFile("trace.json")},
  };
  for (const auto& [option, path] : cases) {
    auto r = Run({"analyze", missing_trace, "--schema", "testserver", option, path});
    EXPECT_EQ(r.exit_code, 1) << option << ": " << r.err;
    EXPECT_EQ(r.err.rfind(std::string("jackdaw: ") + option + ": ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find("absent.jdw"), std::string::npos) << r.err;
  }
  EXPECT_EQ(Slurp(victim_), "secret\n");
  EXPECT_EQ(Slurp(dir_ + "/trace.json"), "theirs\n");

  // A CSV directory is a real directory of ours, never a link elsewhere.
  const std::string csv_link = dir_ + "/csv";
  fs::create_directory_symlink("/etc", csv_link);
  auto csv = Run({"analyze", missing_trace, "--schema", "testserver", "--csv", csv_link});
  EXPECT_EQ(csv.exit_code, 1);
  EXPECT_NE(csv.err.find("--csv: refusing to use " + csv_link + ": it is a symbolic link"), std::string::npos)
      << csv.err;
}

TEST_F(OutputFiles, AnalyzeCheckOfANewPathLeavesNoFileBehind) {
  JDW_REQUIRE_ROOT();
  // The check for a new file creates nothing that stays when the run fails.
  const std::string json = dir_ + "/model.json";
  auto r = Run({"analyze", dir_ + "/absent.jdw", "--schema", "testserver", "--json", json});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(fs::exists(json));
}

TEST_F(OutputFiles, StitchJsonIsCheckedBeforeStitching) {
  JDW_REQUIRE_ROOT();
  const std::string link = Link("e2e.json");
  auto r = Run({"stitch", dir_ + "/absent-a.jdw", dir_ + "/absent-b.jdw", "--schema", "testserver", "--json", link});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--json: refusing to write " + link + ": it is a symbolic link"), std::string::npos) << r.err;
  EXPECT_EQ(Slurp(victim_), "secret\n");
}

}  // namespace
}  // namespace jackdaw
