#include "validate/real_postgres.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace jackdaw::validate {
namespace {

namespace fs = std::filesystem;

constexpr char kUser[] = "postgres";

// In a forked child: drop to the postgres user and run argv; never returns.
[[noreturn]] void ExecAs(const passwd& pw, const std::vector<std::string>& argv, int death_signal) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (initgroups(pw.pw_name, pw.pw_gid) != 0 || setgid(pw.pw_gid) != 0 || setuid(pw.pw_uid) != 0) _exit(126);
  // After setuid: a change of credentials clears the parent-death signal.
  if (death_signal) prctl(PR_SET_PDEATHSIG, death_signal);
  if (chdir("/") != 0) _exit(126);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

// Waits for `pid` with the keeper's signals blocked: true if it exited
// within timeout_ms. A stop request arriving meanwhile stays pending.
bool WaitChild(pid_t pid, int timeout_ms, int* status) {
  for (int waited = 0; waited <= timeout_ms; waited += 20) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    usleep(20 * 1000);
  }
  return false;
}

[[noreturn]] void RemoveAndExit(const std::string& data, int code) {
  std::error_code ec;
  fs::remove_all(data, ec);
  _exit(code);
}

// The keeper's body, in the forked child; never returns.
[[noreturn]] void Keeper(const passwd& pw, const std::string& dir, uint16_t port, int log_fd, int report_fd) {
  const std::string bin = fs::path(PostgresBinary()).parent_path().string();
  const std::string data = dir + "/data";
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  int st = 0;
  const pid_t initdb = fork();
  if (initdb == 0)
    ExecAs(pw,
           {bin + "/initdb", "-D", data, "-U", kUser, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync",
            "--no-instructions"},
           SIGKILL);
  if (initdb < 0 || !WaitChild(initdb, 120 * 1000, &st) || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "initdb failed (status %d)\n", st);
    RemoveAndExit(data, 1);
  }
  sigset_t pending;
  sigpending(&pending);
  if (sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT) || sigismember(&pending, SIGHUP)) RemoveAndExit(data, 0);
  const pid_t pm = fork();
  if (pm == 0)
    ExecAs(pw,
           {bin + "/postgres", "-D", data, "-p", std::to_string(port), "-c", "listen_addresses=127.0.0.1", "-c",
            "unix_socket_directories=", "-c", "logging_collector=off", "-c", "log_min_messages=warning"},
           SIGINT);
  if (pm < 0) RemoveAndExit(data, 1);
  const int32_t pid = pm;
  if (write(report_fd, &pid, sizeof(pid)) != sizeof(pid)) {
  }
  close(report_fd);
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  for (;;) {
    siginfo_t info;
    const int sig = sigwaitinfo(&set, &info);
    if (sig == SIGCHLD) {
      if (waitpid(pm, &st, WNOHANG) == pm) break;  // the server died on its own
      continue;
    }
    if (sig < 0) continue;
    // Fast shutdown: backends are told to end their sessions.
    kill(pm, SIGINT);
    if (!WaitChild(pm, 10 * 1000, &st)) {
      kill(pm, SIGKILL);
      WaitChild(pm, 5 * 1000, &st);
    }
    break;
  }
  // Backends notice the postmaster's death on their own; a moment for
  // them before the files go.
  usleep(100 * 1000);
  RemoveAndExit(data, 0);
}

}  // namespace

std::string PostgresBinary() {
  std::string best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = e.path().filename().string();
    const int v = atoi(name.c_str());
    const std::string bin = e.path().string() + "/bin/postgres";
    if (v > best_version && access(bin.c_str(), X_OK) == 0 && access((e.path().string() + "/bin/initdb").c_str(), X_OK) == 0) {
      best_version = v;
      best = bin;
    }
  }
  return best.empty() ? "/usr/lib/postgresql/15/bin/postgres" : best;
}

StatusOr<PostgresProcesses> StartPostgres(const std::string& dir, uint16_t port, int log_fd) {
  const passwd* pwp = getpwnam(kUser);
  if (!pwp) return ErrStatus("no user %s: install the Debian package postgresql (scripts/install-deps.sh)", kUser);
  const passwd pw = *pwp;  // getpwnam's storage is static
  const std::string data = dir + "/data";
  std::error_code ec;
  fs::create_directories(data, ec);
  if (ec) return ErrStatus("cannot create %s: %s", data.c_str(), ec.message().c_str());
  // The server runs as postgres: it must reach DIR and own DIR/data.
  chmod(dir.c_str(), 0755);
  if (chown(data.c_str(), pw.pw_uid, pw.pw_gid) != 0 || chmod(data.c_str(), 0700) != 0)
    return ErrStatus("cannot hand %s to the postgres user: %s", data.c_str(), strerror(errno));
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return ErrStatus("pipe: %s", strerror(errno));
  const pid_t parent = getpid();
  sigset_t block, old;
  sigemptyset(&block);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&block, s);
  sigprocmask(SIG_BLOCK, &block, &old);
  const pid_t keeper = fork();
  if (keeper == 0) {
    close(report[0]);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // the starter died before the line above
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    Keeper(pw, dir, port, log_fd, report[1]);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  close(report[1]);
  if (keeper < 0) {
    close(report[0]);
    return ErrStatus("fork: %s", strerror(errno));
  }
  setpgid(keeper, keeper);
  int32_t pm = -1;
  pollfd p{report[0], POLLIN, 0};
  ssize_t n = -1;
  if (poll(&p, 1, 120 * 1000) == 1) {
    do n = read(report[0], &pm, sizeof(pm));
    while (n < 0 && errno == EINTR);
  }
  close(report[0]);
  if (n != ssize_t(sizeof(pm))) {
    kill(keeper, SIGTERM);
    int st;
    waitpid(keeper, &st, 0);
    return ErrStatus("initdb did not complete (see %s/server.out)", dir.c_str());
  }
  return PostgresProcesses{keeper, pid_t(pm)};
}

}  // namespace jackdaw::validate
