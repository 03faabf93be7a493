#include "support/test_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <fstream>

namespace jackdaw::testing {

bool IsRoot() { return geteuid() == 0; }
bool InCi() {
  const char* ci = getenv("CI");
  return ci && *ci && std::string(ci) != "0" && std::string(ci) != "false";
}
std::string BinDir() { return JDW_BIN_DIR; }

std::string TempPath(const std::string& stem) {
  // /var/tmp is disk-backed (O_DIRECT and block events need a real device).
  return "/var/tmp/jdw_test_" + std::to_string(getpid()) + "_" + stem;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

static std::string ReadAll(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) s.append(buf, n);
  return s;
}

PausedChild::PausedChild(const std::vector<std::string>& argv) {
  int go[2], out[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) abort();
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(go[0]);
  close(out[1]);
  go_fd_ = go[1];
  out_fd_ = out[0];
}

PausedChild::~PausedChild() {
  if (go_fd_ >= 0) close(go_fd_);
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

void PausedChild::Go() {
  if (write(go_fd_, "g", 1) != 1) abort();
  close(go_fd_);
  go_fd_ = -1;
}

std::string PausedChild::Wait(int* exit_code) {
  std::string out = ReadAll(out_fd_);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

CommandResult RunCommand(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) abort();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  CommandResult r;
  // stderr is small in these tests; read stdout first, then stderr.
  r.out = ReadAll(out[0]);
  r.err = ReadAll(err[0]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

bool AcceptsOnLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

}  // namespace jackdaw::testing
