#include "validate/jackdaw_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace jackdaw::validate {
namespace {

std::string ReadLog(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace

StatusOr<pid_t> StartJackdawChild(const std::vector<std::string>& argv, const std::string& log,
                                  const std::string& ready) {
  const std::string what = argv.size() > 1 ? "jackdaw " + argv[1] : "jackdaw";
  const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err < 0) return ErrStatus("cannot create %s: %s", log.c_str(), strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Stopped like a user's Ctrl-C should this process die first (a
    // SIGINT'ed or crashed reproduce), so no recorder outlives its run.
    signal(SIGINT, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGINT);
    if (getppid() != parent) _exit(1);
    dup2(err, STDERR_FILENO);
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, STDIN_FILENO), dup2(null, STDOUT_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(err);
  if (pid < 0) return ErrStatus("fork: %s", strerror(errno));
  for (int i = 0; i < 600; ++i) {  // 30 s: loading the probes on a busy machine
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid)
      return ErrStatus("%s exited before it was ready: %s", what.c_str(), ReadLog(log).c_str());
    if (ReadLog(log).find(ready) != std::string::npos) return pid;
    usleep(50 * 1000);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return ErrStatus("%s did not start within 30 s (see %s)", what.c_str(), log.c_str());
}

}  // namespace jackdaw::validate
