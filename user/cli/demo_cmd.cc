// jackdaw demo: the whole pipeline on a built-in workload, no arguments.
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace jackdaw::cli {
namespace {

std::string SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string s(buf);
  return s.substr(0, s.rfind('/'));
}

int RunChild(const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

Runner RegisterDemo(CLI::App& app) {
  auto out = std::make_shared<std::string>("jackdaw-demo.jdw");
  CLI::App* sub = app.add_subcommand("demo", "Record a built-in workload and show what was captured (needs root).");
  sub->add_option("-o,--output", *out, "trace file to write")->capture_default_str();
  return [out] {
    const std::string dir = SelfDir();
    printf("== jackdaw demo: recording a known workload (getppid loop, O_DIRECT I/O, loopback TCP, pipe ping-pong)\n");
    int rc = RunChild({dir + "/jackdaw", "record", "-q", "-o", *out, "--", dir + "/jackdaw-workload",
                       "--getppid", "10000", "--direct-io", "1048576", "--tcp", "100000", "50000",
                       "--pipe-rounds", "1000"});
    if (rc != 0) return rc;
    printf("\n== what was captured (jackdaw dump %s --summary)\n", out->c_str());
    return RunChild({dir + "/jackdaw", "dump", "--summary", *out});
  };
}

}  // namespace jackdaw::cli
