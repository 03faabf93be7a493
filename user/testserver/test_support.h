// Test-only helpers: run jackdaw-testserver / jackdaw-load as real processes
// and talk HTTP to them on loopback.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "testserver/http.h"

extern char** environ;

namespace jackdaw::testserver::testing {

inline std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string TempPath(const std::string& stem) {
  static int counter = 0;
  return "/tmp/jdw-ts-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" +
         stem;
}

// A temporary file path removed at scope exit, even when an ASSERT returns.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& stem) : path_(TempPath(stem)) {}
  ~ScopedPath() { unlink(path_.c_str()); }
  ScopedPath(const ScopedPath&) = delete;
  ScopedPath& operator=(const ScopedPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A child process with stdout on a pipe and stderr in a file.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    // A test that bailed out early: ask for a clean stop first, so the server
    // removes its docroot, and kill only if it does not go.
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      Wait(5000);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (!stderr_path_.empty()) unlink(stderr_path_.c_str());
  }

  Status Spawn(const std::vector<std::string>& argv) {
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) return ErrStatus("pipe failed");
    stderr_path_ = TempPath("stderr");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    out_fd_ = pipefd[0];
    if (rc != 0) {
      pid_ = -1;
      return ErrStatus("posix_spawn %s: %s", args[0], strerror(rc));
    }
    return Status::Ok();
  }

  // Next stdout line (without '\n'); "" on EOF or timeout.
  std::string ReadLine(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      size_t nl = out_buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = out_buf_.substr(0, nl);
        out_buf_.erase(0, nl + 1);
        return line;
      }
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      if (left <= 0) return "";
      pollfd pfd{out_fd_, POLLIN, 0};
      if (poll(&pfd, 1, left) <= 0) return "";
      char buf[4096];
      ssize_t n = read(out_fd_, buf, sizeof(buf));
      if (n <= 0) return "";
      out_buf_.append(buf, static_cast<size_t>(n));
    }
  }

  // Everything left on stdout until EOF.
  std::string ReadAllStdout() {
    char buf[4096];
    for (;;) {
      ssize_t n = read(out_fd_, buf, sizeof(buf));
      if (n <= 0) break;
      out_buf_.append(buf, static_cast<size_t>(n));
    }
    return std::exchange(out_buf_, "");
  }

  // No-op once the child has been waited for: kill(-1, ...) would signal
  // every process on the machine.
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

  // Exit code, or -signal, or -1000 on timeout (then the child is killed).
  // Once waited for, returns -1 at once (waitpid(-1) would reap any child).
  int Wait(int timeout_ms) {
    if (pid_ <= 0) return -1;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return -1000;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  std::string Stderr() const { return ReadFileOrEmpty(stderr_path_); }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string out_buf_;
  std::string stderr_path_;
};

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a command to completion.
inline RunResult Run(const std::vector<std::string>& argv, int timeout_ms = 30000) {
  Child c;
  RunResult r;
  Status st = c.Spawn(argv);
  if (!st.ok()) {
    r.err = st.message();
    return r;
  }
  std::string out;
  // Drain stdout while waiting so a chatty child never blocks on the pipe.
  std::thread reader([&] { out = c.ReadAllStdout(); });
  r.exit_code = c.Wait(timeout_ms);
  reader.join();
  r.out = out;
  r.err = c.Stderr();
  return r;
}

// jackdaw-testserver on an ephemeral loopback port.
class ServerProcess {
 public:
  Status Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {JDW_TESTSERVER_BIN, "--port", "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    RETURN_IF_ERROR(child_.Spawn(argv));
    std::string line = child_.ReadLine(20000);
    const std::string prefix = "listening on 127.0.0.1:";
    if (line.rfind(prefix, 0) != 0)
      return ErrStatus("server did not start: stdout '%s', stderr '%s'", line.c_str(),
                       child_.Stderr().c_str());
    port_ = static_cast<uint16_t>(std::stoi(line.substr(prefix.size())));
    return Status::Ok();
  }
  // Sends `sig` and returns the exit code (0 expected).
  int Stop(int sig = SIGTERM) {
    child_.Signal(sig);
    return child_.Wait(10000);
  }
  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string Stderr() const { return child_.Stderr(); }

 private:
  Child child_;
  uint16_t port_ = 0;
};

inline int ConnectLoopback(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One GET on its own connection.
inline StatusOr<HttpResponse> Get(uint16_t port, const std::string& path) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return ErrStatus("connect failed");
  Status st = WriteAll(fd, "GET " + path + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  std::string buf;
  StatusOr<HttpResponse> resp = st.ok() ? ReadResponse(fd, buf, 10000) : StatusOr<HttpResponse>(st);
  close(fd);
  return resp;
}

}  // namespace jackdaw::testserver::testing
