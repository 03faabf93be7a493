#include "overhead/workloads.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "common/clock.h"
#include "common/safe_file.h"
#include "common/scratch_dir.h"

namespace jackdaw::overhead {
namespace {

Status Failed(const std::string& what, const ExitInfo& e) {
  std::string tail = e.err.size() > 300 ? e.err.substr(e.err.size() - 300) : e.err;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  for (char& c : tail)
    if (c == '\n') c = ' ';
  return Status::Error(what + " failed (" + e.Describe() + ")" + (tail.empty() ? "" : ": " + tail));
}

// One process, traced from its first instruction.
class CommandRun : public PreparedRun {
 public:
  CommandRun(Child c, std::string what) : child_(std::move(c)), what_(std::move(what)) {}
  std::vector<pid_t> traced_pids() const override { return {child_.pid()}; }
  StatusOr<RunCost> Run() override {
    ExitInfo e = child_.Wait();
    if (!e.ok()) return Failed(what_, e);
    return RunCost{e.wall_s, e.cpu_s, 1};
  }

 private:
  Child child_;
  std::string what_;
};

class Command : public Workload {
 public:
  Command(std::string name, std::vector<std::string> argv) : name_(std::move(name)), argv_(std::move(argv)) {}
  std::string name() const override { return name_; }
  StatusOr<std::unique_ptr<PreparedRun>> Prepare(const Env& env) override {
    auto c = Child::Spawn(argv_, env, true);
    if (!c.ok()) return c.status();
    std::string what = "the command '" + argv_[0] + "'";
    return std::unique_ptr<PreparedRun>(new CommandRun(std::move(*c), what));
  }

 private:
  std::string name_;
  std::vector<std::string> argv_;
};

// A server (traced) under a load driver (not traced).
struct ServerSpec {
  std::vector<std::string> server;
  std::string ready_line;  // the server prints it when it accepts
  int port = 0;            // fixed port (0: parse it from the ready line)
  // Builds the driver's argv for the port; ops parsed from its output.
  std::function<std::vector<std::string>(int port)> driver;
  std::function<double(const std::string& out)> ops;
  std::shared_ptr<ScratchDir> scratch;  // the server's files, if it has any
};

bool PortAccepts(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(s);
  return ok;
}

class ServerRun : public PreparedRun {
 public:
  ServerRun(Child server, const ServerSpec& spec) : server_(std::move(server)), spec_(spec) {}
  std::vector<pid_t> traced_pids() const override { return {server_.pid()}; }
  StatusOr<RunCost> Run() override {
    server_.Go();
    int port = spec_.port;
    if (!spec_.ready_line.empty()) {
      auto line = server_.WaitForLine(spec_.ready_line, 10000);
      if (!line.ok()) return Failed("the server " + spec_.server[0], StopServer());
      port = atoi(line->c_str() + line->rfind(':') + 1);
    } else {
      const uint64_t deadline = MonotonicNs() + 10'000'000'000ull;
      while (!PortAccepts(port) && MonotonicNs() < deadline) usleep(10000);
      if (!PortAccepts(port)) return Failed("the server " + spec_.server[0] + " (never accepted)", StopServer());
    }
    const uint64_t t0 = MonotonicNs();
    ExitInfo d = RunToEnd(spec_.driver(port));
    const double wall = double(MonotonicNs() - t0) / 1e9;
    ExitInfo s = StopServer();
    if (!d.ok()) return Failed("the load driver " + spec_.driver(port)[0], d);
    RunCost c{wall, s.cpu_s, spec_.ops(d.out)};
    if (!(c.ops > 0)) return ErrStatus("the load driver %s reported no requests", spec_.driver(port)[0].c_str());
    return c;
  }

 private:
  ExitInfo StopServer() {
    server_.Signal(SIGTERM);
    return server_.Wait();
  }
  Child server_;
  const ServerSpec& spec_;
};

class Server : public Workload {
 public:
  Server(std::string name, ServerSpec spec, bool single) : name_(std::move(name)), spec_(std::move(spec)), single_(single) {}
  std::string name() const override { return name_; }
  bool single_process() const override { return single_; }
  StatusOr<std::unique_ptr<PreparedRun>> Prepare(const Env& env) override {
    auto c = Child::Spawn(spec_.server, env, true);
    if (!c.ok()) return c.status();
    return std::unique_ptr<PreparedRun>(new ServerRun(std::move(*c), spec_));
  }

 private:
  std::string name_;
  ServerSpec spec_;
  bool single_;
};

int FreePort() {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

// nginx from Debian: one worker, a 5 KB static file, keep-alive, in a
// private prefix (a ScratchDir under /var/tmp, removed with the workload);
// wrk with one thread and 10 connections.
StatusOr<std::unique_ptr<Workload>> Nginx() {
  if (access("/usr/sbin/nginx", X_OK) != 0)
    return ErrStatus("the nginx workload needs nginx (apt-get install nginx, or scripts/install-deps.sh)");
  if (access("/usr/bin/wrk", X_OK) != 0)
    return ErrStatus("the nginx workload needs wrk (apt-get install wrk, or scripts/install-deps.sh)");
  ASSIGN_OR_RETURN(std::shared_ptr<ScratchDir> scratch, ScratchDir::Create("/var/tmp", "jackdaw-overhead-nginx"));
  const std::string& dir = scratch->path();
  // nginx's worker drops to an unprivileged user: it may pass through the
  // prefix (not list it, not write it) and read the page.
  if (chmod(dir.c_str(), 0711) != 0 || mkdir((dir + "/html").c_str(), 0755) != 0 ||
      mkdir((dir + "/logs").c_str(), 0700) != 0)
    return ErrStatus("cannot set up %s: %s", dir.c_str(), strerror(errno));
  RETURN_IF_ERROR(WriteOwnedFile(dir + "/html/5k.html", std::string(5 * 1024, 'n'), 0644));
  const int port = FreePort();
  RETURN_IF_ERROR(WriteOwnedFile(
      dir + "/nginx.conf",
      "worker_processes 1;\ndaemon off;\nmaster_process on;\npid " + dir + "/nginx.pid;\nerror_log " + dir +
          "/logs/error.log;\nevents { worker_connections 1024; }\nhttp {\n  access_log off;\n"
          "  keepalive_requests 1000000;\n  server {\n    listen 127.0.0.1:" + std::to_string(port) +
          ";\n    root " + dir + "/html;\n  }\n}\n",
      0600));
  ServerSpec spec;
  spec.server = {"/usr/sbin/nginx", "-p", dir, "-c", dir + "/nginx.conf"};
  spec.port = port;
  spec.driver = [](int p) {
    return std::vector<std::string>{"wrk", "-t1", "-c10", "-d3s", "http://127.0.0.1:" + std::to_string(p) + "/5k.html"};
  };
  spec.ops = [](const std::string& out) {
    // "  12345 requests in 3.00s, ..."
    auto p = out.find(" requests in ");
    if (p == std::string::npos) return 0.0;
    auto b = out.rfind('\n', p);
    return atof(out.c_str() + (b == std::string::npos ? 0 : b + 1));
  };
  spec.scratch = std::move(scratch);
  return std::unique_ptr<Workload>(new Server("nginx", std::move(spec), false));
}

}  // namespace

std::string BuiltinWorkloadNames() { return "getppid, socketpair, file, pingpong, disk, testserver, nginx"; }

StatusOr<std::unique_ptr<Workload>> BuiltinWorkload(const std::string& name, const std::string& bin_dir) {
  const std::string wl = bin_dir + "/jackdaw-workload";
  auto cmd = [&](std::vector<std::string> args) -> std::unique_ptr<Workload> {
    args.insert(args.begin(), wl);
    return std::make_unique<Command>(name, std::move(args));
  };
  if (name == "getppid") return cmd({"--getppid", "1000000"});
  if (name == "socketpair") return cmd({"--socketpair-rounds", "200000"});
  if (name == "file") return cmd({"--file-rounds", "200000"});
  if (name == "pingpong") return cmd({"--pipe-rounds", "20000"});
  if (name == "disk") return cmd({"--disk-rounds", "500"});
  if (name == "testserver") {
    ServerSpec spec;
    spec.server = {bin_dir + "/jackdaw-testserver", "--port", "0", "--workers", "4", "--keepalive"};
    spec.ready_line = "listening on";
    const std::string load = bin_dir + "/jackdaw-load";
    spec.driver = [load](int p) {
      return std::vector<std::string>{load, "--url", "http://127.0.0.1:" + std::to_string(p), "-n", "300", "--mix",
                                      "C:1,D:1", "-c", "4", "--keepalive"};
    };
    spec.ops = [](const std::string&) { return 300.0; };
    return std::unique_ptr<Workload>(new Server(name, std::move(spec), true));
  }
  if (name == "nginx") return Nginx();
  return ErrStatus("unknown workload '%s'; built-in workloads: %s (or give a command after --)", name.c_str(),
                   BuiltinWorkloadNames().c_str());
}

std::unique_ptr<Workload> CommandWorkload(std::vector<std::string> argv) {
  std::string name = argv.empty() ? "command" : std::filesystem::path(argv[0]).filename().string();
  return std::make_unique<Command>(name, std::move(argv));
}

}  // namespace jackdaw::overhead
