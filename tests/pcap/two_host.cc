#include "pcap/two_host.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "support/test_support.h"

namespace jackdaw::testing {
namespace {

bool Ip(const std::vector<std::string>& args, std::string* error) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunCommand(argv);
  if (r.exit_code == 0) return true;
  if (error->empty()) {
    *error = "ip";
    for (const std::string& a : args) *error += " " + a;
    *error += ": " + r.err;
  }
  return false;
}

}  // namespace

TwoHosts::TwoHosts() {
  // Names unique to this process; addresses from TEST-NET-2, which nothing
  // routes, and only on this pair.
  const std::string tag = std::to_string(getpid() % 100000);
  for (int h = 0; h < 2; ++h) {
    ns_[h] = "jdw-t" + tag + (h ? "b" : "a");
    veth_[h] = "jdw" + tag + (h ? "b" : "a");
    addr_[h] = "198.51.100." + std::to_string(h + 1);
  }
  if (!Ip({"netns", "add", ns_[0]}, &error_) || !Ip({"netns", "add", ns_[1]}, &error_)) return;
  if (!Ip({"link", "add", veth_[0], "type", "veth", "peer", "name", veth_[1]}, &error_)) return;
  for (int h = 0; h < 2; ++h) {
    if (!Ip({"link", "set", veth_[h], "netns", ns_[h]}, &error_) ||
        !Ip({"-n", ns_[h], "addr", "add", addr_[h] + "/24", "dev", veth_[h]}, &error_) ||
        !Ip({"-n", ns_[h], "link", "set", veth_[h], "up"}, &error_) ||
        !Ip({"-n", ns_[h], "link", "set", "lo", "up"}, &error_))
      return;
  }
}

TwoHosts::~TwoHosts() {
  std::string ignored;
  // Deleting a namespace deletes the veth end in it, and with it its peer.
  for (int h = 0; h < 2; ++h) Ip({"netns", "del", ns_[h]}, &ignored);
  Ip({"link", "del", veth_[0]}, &ignored);  // if it never moved
}

std::vector<std::string> TwoHosts::In(int host, const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {"ip", "netns", "exec", ns_[host]};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

RecordedServer::RecordedServer(const std::string& trace, const std::vector<std::string>& server_cmd,
                               const std::vector<std::string>& record_args) {
  std::vector<std::string> argv = {BinDir() + "/jackdaw", "record", "-q", "--usdt",
                                   BinDir() + "/jackdaw-testserver", "-o", trace};
  argv.insert(argv.end(), record_args.begin(), record_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), server_cmd.begin(), server_cmd.end());
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return;
  recorder_ = fork();
  if (recorder_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  out_fd_ = out[0];
  std::string line;
  char c;
  while (read(out_fd_, &c, 1) == 1) {
    if (c != '\n') {
      line += c;
      continue;
    }
    if (size_t p = line.find("listening on "); p != std::string::npos) {
      port_ = atoi(line.c_str() + line.rfind(':') + 1);
      break;
    }
    line.clear();
  }
}

int RecordedServer::Stop() {
  if (recorder_ <= 0) return -1;
  kill(recorder_, SIGINT);
  int status = 0;
  waitpid(recorder_, &status, 0);
  recorder_ = -1;
  if (out_fd_ >= 0) close(out_fd_);
  out_fd_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

RecordedServer::~RecordedServer() { Stop(); }

}  // namespace jackdaw::testing
