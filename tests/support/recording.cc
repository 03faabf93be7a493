#include "support/recording.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace jackdaw::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

BackgroundRecording::BackgroundRecording(std::vector<std::string> args, const std::string& stem) {
  path_ = TempPath(stem + ".jdw");
  log_ = TempPath(stem + ".log");
  args.insert(args.begin(), {BinDir() + "/jackdaw", "record", "-o", path_});
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDERR_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  for (int i = 0; i < 600 && !started(); ++i) usleep(50000);
}

BackgroundRecording::~BackgroundRecording() {
  if (pid_ > 0) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
  std::filesystem::remove(path_);
  std::filesystem::remove(log_);
}

bool BackgroundRecording::started() const { return log().find("jackdaw: recording") != std::string::npos; }

std::string BackgroundRecording::log() const { return ReadFile(log_); }

std::string BackgroundRecording::StopAndDump() {
  kill(pid_, SIGINT);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log();
  auto d = RunCommand({BinDir() + "/jackdaw", "dump", path_});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  return d.out;
}

int BackgroundRecording::StopAndCountGetppid() {
  const std::string dump = StopAndDump();
  int n = 0;
  for (size_t p = dump.find("sys_enter        getppid"); p != std::string::npos;
       p = dump.find("sys_enter        getppid", p + 1))
    ++n;
  return n;
}

GatedChild::GatedChild(const std::function<void()>& body) {
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  pid_ = fork();
  if (pid_ == 0) {
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) != 1) _exit(1);
    body();
    _exit(0);
  }
  close(p[0]);
  go_ = p[1];
}

GatedChild::~GatedChild() {
  if (go_ >= 0) close(go_);
  if (pid_ > 0) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
}

void GatedChild::Go() {
  EXPECT_EQ(write(go_, "g", 1), 1);
  close(go_);
  go_ = -1;
}

void GatedChild::RunToEnd() {
  Go();
  int st = 0;
  waitpid(pid_, &st, 0);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

void ExecGetppidWorkload(int calls) {
  const std::string n = std::to_string(calls);
  int null = open("/dev/null", O_WRONLY);
  dup2(null, STDOUT_FILENO);
  execl((BinDir() + "/jackdaw-workload").c_str(), "jackdaw-workload", "--getppid", n.c_str(), nullptr);
  _exit(127);
}

int CountRecords(const std::string& dump, const std::string& type) {
  int n = 0;
  for (size_t p = dump.find(" " + type + " "); p != std::string::npos; p = dump.find(" " + type + " ", p + 1)) ++n;
  return n;
}

}  // namespace jackdaw::testing
