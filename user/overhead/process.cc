#include "overhead/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"

namespace jackdaw::overhead {
namespace {

// Appends whatever fd has now; false at EOF or error.
bool Drain(int fd, std::string* into) {
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof(buf));
  if (n > 0) into->append(buf, n);
  return n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN));
}

}  // namespace

bool ExitInfo::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string ExitInfo::Describe() const {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended with wait status " + std::to_string(status);
}

StatusOr<Child> Child::Spawn(const std::vector<std::string>& argv,
                             const std::vector<std::pair<std::string, std::string>>& env, bool capture) {
  if (argv.empty()) return ErrStatus("no command to run");
  int go[2], out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(go, O_CLOEXEC) != 0) return ErrStatus("pipe: %s", strerror(errno));
  if (capture && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0))
    return ErrStatus("pipe: %s", strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) return ErrStatus("fork: %s", strerror(errno));
  if (pid == 0) {
    close(go[1]);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(127);
    if (capture) {
      dup2(out[1], 1);
      dup2(err[1], 2);
    } else {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
    }
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    fprintf(stderr, "jackdaw overhead: cannot run %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  Child c;
  c.pid_ = pid;
  close(go[0]);
  c.go_fd_ = go[1];
  if (capture) {
    close(out[1]);
    close(err[1]);
    c.out_fd_ = out[0];
    c.err_fd_ = err[0];
  }
  c.go_ns_ = MonotonicNs();
  return c;
}

Child::Child(Child&& o) noexcept { *this = std::move(o); }

Child& Child::operator=(Child&& o) noexcept {
  std::swap(pid_, o.pid_);
  std::swap(go_fd_, o.go_fd_);
  std::swap(out_fd_, o.out_fd_);
  std::swap(err_fd_, o.err_fd_);
  std::swap(go_ns_, o.go_ns_);
  std::swap(out_, o.out_);
  std::swap(err_, o.err_);
  return *this;
}

Child::~Child() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    if (go_fd_ >= 0) close(go_fd_);
    waitpid(pid_, nullptr, 0);
  }
  for (int fd : {go_fd_, out_fd_, err_fd_})
    if (fd >= 0) close(fd);
}

void Child::Go() {
  if (go_fd_ < 0) return;
  go_ns_ = MonotonicNs();
  (void)!write(go_fd_, "g", 1);
  close(go_fd_);
  go_fd_ = -1;
}

void Child::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

StatusOr<std::string> Child::WaitForLine(const std::string& needle, int timeout_ms) {
  const uint64_t deadline = MonotonicNs() + uint64_t(timeout_ms) * 1000000;
  while (MonotonicNs() < deadline) {
    size_t nl;
    while ((nl = out_.find('\n')) != std::string::npos) {
      std::string line = out_.substr(0, nl);
      out_.erase(0, nl + 1);
      if (line.find(needle) != std::string::npos) return line;
    }
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) > 0 && !Drain(out_fd_, &out_)) break;
  }
  return ErrStatus("'%s' did not appear in the output of pid %d", needle.c_str(), pid_);
}

ExitInfo Child::Wait() { return Reap(0, 0); }

ExitInfo Child::Stop(int sig, int grace_ms) {
  Signal(sig);
  return Reap(sig, grace_ms);
}

ExitInfo Child::Reap(int sig, int grace_ms) {
  Go();
  ExitInfo e;
  const uint64_t start = MonotonicNs();
  uint64_t last_signal = start;
  std::vector<pollfd> fds;
  for (int fd : {out_fd_, err_fd_})
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
  auto exited = [this] {
    siginfo_t info{};
    return waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
  };
  // Without a stop schedule the pipes' end is the child's; with one, its
  // exit is checked too, since a grandchild may hold the pipes open.
  while (!fds.empty() || (sig > 0 && !exited())) {
    const int timeout_ms = sig > 0 ? 200 : -1;
    const int n = fds.empty() ? poll(nullptr, 0, timeout_ms) : poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) break;
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      if (!Drain(fds[i].fd, fds[i].fd == out_fd_ ? &out_ : &err_)) {
        fds.erase(fds.begin() + i);
        break;
      }
    }
    if (sig <= 0 || exited()) continue;
    const uint64_t now = MonotonicNs();
    if (now - start >= uint64_t(grace_ms) * 1000000) {
      kill(pid_, SIGKILL);
      e.forced = true;
      sig = 0;  // the kill ends it; back to waiting for the pipes' end
    } else if (now - last_signal >= 1000000000ull) {
      // Past a quarter of the grace, SIGTERM: a tracer that let its stop
      // signal go by has ended on it at once.
      kill(pid_, now - start >= uint64_t(grace_ms) * 250000 ? SIGTERM : sig);
      last_signal = now;
    }
  }
  rusage ru{};
  int status = 0;
  while (wait4(pid_, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  e.wall_s = double(MonotonicNs() - go_ns_) / 1e9;
  e.status = status;
  e.cpu_s = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  e.out = std::move(out_);
  e.err = std::move(err_);
  pid_ = -1;
  return e;
}

ExitInfo RunToEnd(const std::vector<std::string>& argv) {
  auto c = Child::Spawn(argv, {}, true);
  if (!c.ok()) {
    ExitInfo e;
    e.status = 127 << 8;
    e.err = c.status().message();
    return e;
  }
  return c->Wait();
}

}  // namespace jackdaw::overhead
