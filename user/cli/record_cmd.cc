// jackdaw record: capture into a .jdw trace.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "capture/clock_sync.h"
#include "capture/kmod_session.h"
#include "capture/recorder.h"
#include "capture/usdt_notes.h"
#include "cli/commands.h"
#include "trace/event_table.h"
#include "trace/syscall_names.h"

namespace jackdaw::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

struct RecordArgs {
  std::string output = "jackdaw.jdw";
  std::string probes = "sched,syscall,block,net";
  std::string syscalls;
  std::vector<std::string> usdt;
  std::vector<uint32_t> pids;
  double duration = 0;
  std::string buffer_size = "8M";
  std::string backend = "bpf";
  bool quiet = false, verbose = false;
  std::vector<std::string> command;
};

StatusOr<uint32_t> ParseGroups(const std::string& list) {
  uint32_t mask = 0;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    uint32_t g;
    if (!trace::ParseGroup(item, &g))
      return ErrStatus("unknown probe group '%s'; valid groups: %s", item.c_str(),
                       trace::GroupList().c_str());
    mask |= 1u << g;
  }
  if (mask == 0) return ErrStatus("--probes is empty; valid groups: %s", trace::GroupList().c_str());
  return mask;
}

StatusOr<std::vector<int>> ParseSyscalls(const std::string& list) {
  std::vector<int> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    int nr = trace::SyscallNumber(item);
    if (nr < 0) return ErrStatus("unknown syscall '%s' in --syscalls (names as in unistd_64.h, e.g. read,write)", item.c_str());
    out.push_back(nr);
  }
  return out;
}

StatusOr<uint32_t> ParseSize(const std::string& s) {
  char* end = nullptr;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return ErrStatus("bad --buffer-size '%s': expected e.g. 4M, 512K", s.c_str());
  if (*end == 'K' || *end == 'k') v <<= 10, ++end;
  else if (*end == 'M' || *end == 'm') v <<= 20, ++end;
  if (*end != '\0' || v < 4096 || v > (1ull << 30) || (v & (v - 1)) != 0)
    return ErrStatus("bad --buffer-size '%s': must be a power of two between 4K and 1024M", s.c_str());
  return static_cast<uint32_t>(v);
}

// BINARY, BINARY:PROVIDER or BINARY:PROVIDER:NAME -> probes to attach.
StatusOr<std::vector<capture::UsdtTarget>> ParseUsdt(const std::vector<std::string>& specs) {
  std::vector<capture::UsdtTarget> out;
  for (const auto& spec : specs) {
    std::string bin = spec, provider, name;
    if (auto c = spec.find(':'); c != std::string::npos) {
      bin = spec.substr(0, c);
      provider = spec.substr(c + 1);
      if (auto c2 = provider.find(':'); c2 != std::string::npos) {
        name = provider.substr(c2 + 1);
        provider = provider.substr(0, c2);
      }
    }
    char real[PATH_MAX];
    if (!realpath(bin.c_str(), real)) return ErrStatus("--usdt %s: %s", bin.c_str(), strerror(errno));
    ASSIGN_OR_RETURN(auto probes, capture::ListUsdtProbes(real));
    size_t before = out.size();
    for (const auto& p : probes) {
      if (!provider.empty() && p.provider != provider) continue;
      if (!name.empty() && p.name != name) continue;
      out.push_back({real, p.provider, p.name, -1});
    }
    if (out.size() == before)
      return ErrStatus("--usdt %s: no matching USDT probes in %s (list them with: readelf -n %s)",
                       spec.c_str(), real, real);
  }
  return out;
}

std::string Human(double v) {
  char buf[32];
  if (v >= 1e9) snprintf(buf, sizeof(buf), "%.2fG", v / 1e9);
  else if (v >= 1e6) snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
  else if (v >= 1e3) snprintf(buf, sizeof(buf), "%.1fk", v / 1e3);
  else snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

int Run(const RecordArgs& a) {
  // The module checks CAP_SYS_ADMIN itself when /dev/jackdaw is opened.
  Status priv = a.backend == "kmod" ? Status::Ok() : capture::CheckPrivileges();
  if (!priv.ok() && a.backend == "auto" && capture::KmodSession::DevicePresent()) priv = Status::Ok();
  if (!priv.ok()) {
    PrintError(priv.message());
    return 2;
  }
  capture::RecorderOptions ro;
  ro.output = a.output;
  ro.command = a.command;
  ro.backend = a.backend;
  auto groups = ParseGroups(a.probes);
  if (!groups.ok()) return PrintError(groups.status().message()), 1;
  ro.capture.groups = *groups;
  auto sys = ParseSyscalls(a.syscalls);
  if (!sys.ok()) return PrintError(sys.status().message()), 1;
  ro.capture.syscalls = *sys;
  auto ring = ParseSize(a.buffer_size);
  if (!ring.ok()) return PrintError(ring.status().message()), 1;
  ro.capture.ring_bytes_per_cpu = *ring;
  ro.capture.verbose = a.verbose;
  auto usdt = ParseUsdt(a.usdt);
  if (!usdt.ok()) return PrintError(usdt.status().message()), 1;
  ro.capture.usdt = *usdt;
  if (!ro.capture.usdt.empty()) ro.capture.groups |= 1u << JDW_GROUP_APP;
  for (uint32_t p : a.pids) {
    if (kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH)
      return PrintError("--pid " + std::to_string(p) + ": no such process"), 1;
    ro.capture.tgids.push_back(p);
  }

  // Launch CMD stopped on a pipe, so its pid is in the filter before it runs.
  pid_t child = -1;
  int go_pipe[2] = {-1, -1};
  if (!a.command.empty()) {
    if (pipe2(go_pipe, O_CLOEXEC) != 0) return PrintError(strerror(errno)), 1;
    child = fork();
    if (child == 0) {
      close(go_pipe[1]);
      char c;
      if (read(go_pipe[0], &c, 1) != 1) _exit(127);
      std::vector<char*> argv;
      for (const auto& s : a.command) argv.push_back(const_cast<char*>(s.c_str()));
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      fprintf(stderr, "jackdaw: cannot run %s: %s\n", argv[0], strerror(errno));
      _exit(127);
    }
    close(go_pipe[0]);
    ro.capture.tgids.push_back(static_cast<uint32_t>(child));
  }
  ro.capture.filter_tgid = !ro.capture.tgids.empty();

  auto rec = capture::Recorder::Create(ro);
  if (!rec.ok()) {
    if (child > 0) kill(child, SIGKILL);
    PrintError(rec.status().message());
    return rec.status().exit_code() ? rec.status().exit_code() : 1;
  }
  if (!a.quiet || a.backend == "auto")
    fprintf(stderr, "jackdaw: backend: %s\n", (*rec)->backend_choice().c_str());
  for (const auto& w : (*rec)->session().warnings()) fprintf(stderr, "jackdaw: warning: %s\n", w.c_str());
  Status st = (*rec)->Start();
  if (!st.ok()) {
    if (child > 0) kill(child, SIGKILL);
    PrintError(st.message());
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (child > 0) {
    if (write(go_pipe[1], "g", 1) != 1) {
      kill(child, SIGKILL);
    }
    close(go_pipe[1]);
  }
  if (!a.quiet) {
    std::string what = a.command.empty() ? (a.pids.empty() ? "system-wide" : "pid(s)") : a.command[0];
    fprintf(stderr, "jackdaw: recording %s to %s (Ctrl-C to stop)\n", what.c_str(), a.output.c_str());
  }
  const uint64_t start = capture::MonoNowNs();
  uint64_t last_report = start, last_records = 0;
  const bool tty = isatty(STDERR_FILENO);
  int child_status = 0;
  while (!g_stop) {
    st = (*rec)->Step();
    if (!st.ok()) break;
    const uint64_t now = capture::MonoNowNs();
    if (a.duration > 0 && now - start >= static_cast<uint64_t>(a.duration * 1e9)) break;
    if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
      child = -1;
      break;
    }
    if (!a.quiet && now - last_report >= (tty ? 1'000'000'000ull : 5'000'000'000ull)) {
      auto s = (*rec)->stats();
      const double rate = double(s.records - last_records) * 1e9 / double(now - last_report);
      fprintf(stderr, "%s%s events (%s/s), %s lost, %s written%s", tty ? "\r\033[K" : "",
              Human(double(s.records)).c_str(), Human(rate).c_str(), Human(double(s.lost)).c_str(),
              (Human(double(s.bytes)) + "B").c_str(), tty ? "" : "\n");
      last_report = now;
      last_records = s.records;
    }
  }
  Status stop = (*rec)->Stop();
  if (tty && !a.quiet) fprintf(stderr, "\r\033[K");
  if (!st.ok()) return PrintError(st.message()), 1;
  if (!stop.ok()) return PrintError(stop.message()), 1;
  auto s = (*rec)->stats();
  if (!a.quiet) {
    fprintf(stderr, "jackdaw: %llu events in %.1f s, %llu lost%s, %s written to %s\n",
            static_cast<unsigned long long>(s.records), double(capture::MonoNowNs() - start) / 1e9,
            static_cast<unsigned long long>(s.lost), s.lost ? " (grow --buffer-size)" : "",
            (Human(double(s.bytes)) + "B").c_str(), a.output.c_str());
  }
  if (child > 0) {
    kill(child, SIGTERM);
    waitpid(child, &child_status, 0);
  } else if (!a.command.empty() && WIFEXITED(child_status) && WEXITSTATUS(child_status) != 0 && !a.quiet) {
    fprintf(stderr, "jackdaw: %s exited with status %d\n", a.command[0].c_str(), WEXITSTATUS(child_status));
  }
  return 0;
}

}  // namespace

Runner RegisterRecord(CLI::App& app) {
  auto args = std::make_shared<RecordArgs>();
  CLI::App* sub = app.add_subcommand(
      "record",
      "Capture kernel events into a .jdw trace.\n"
      "  sudo jackdaw record -o out.jdw -- ./server --port 8080   trace CMD and its children until it exits\n"
      "  sudo jackdaw record --pid 1234 --duration 10            trace a running process for 10 s\n"
      "  sudo jackdaw record --duration 5                        system-wide for 5 s\n"
      "  sudo jackdaw record --usdt ./server -- ./server         also attach the binary's USDT probes");
  sub->add_option("-o,--output", args->output, "trace file to write")->capture_default_str();
  sub->add_option("--probes", args->probes,
                  "probe groups, comma-separated: " + trace::GroupList())
      ->capture_default_str();
  sub->add_option("--pid", args->pids, "trace these processes and their descendants (repeatable)");
  sub->add_option("--duration", args->duration, "stop after this many seconds (default: until CMD exits or Ctrl-C)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--syscalls", args->syscalls, "only these syscalls, e.g. read,write,accept4 (default: all)");
  sub->add_option("--usdt", args->usdt, "attach USDT probes: BINARY[:PROVIDER[:NAME]] (repeatable)");
  sub->add_option("--buffer-size", args->buffer_size, "ring buffer per CPU, power of two (e.g. 4M)")
      ->capture_default_str();
  sub->add_option("--backend", args->backend,
                  "capture mechanism: bpf (eBPF probes), kmod (the jackdaw.ko module: make kmod, "
                  "insmod build/kmod/jackdaw.ko; TSC timestamps), auto (eBPF when it loads, else the "
                  "module when loaded; says which)")
      ->check(CLI::IsMember({"bpf", "kmod", "auto"}))
      ->capture_default_str();
  sub->add_flag("-q,--quiet", args->quiet, "no progress line");
  sub->add_flag("-v,--verbose", args->verbose, "show libbpf's messages");
  sub->add_option("command", args->command, "command to launch and trace (after --)");
  return [args] { return Run(*args); };
}

}  // namespace jackdaw::cli
