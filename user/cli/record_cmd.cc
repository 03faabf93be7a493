// jackdaw record: capture into a .jdw trace.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "capture/clock_sync.h"
#include "capture/process_select.h"
#include "capture/kmod_session.h"
#include "capture/recorder.h"
#include "capture/usdt_notes.h"
#include "cli/capture_args.h"
#include "cli/commands.h"
#include "cli/usage.h"
#include "common/loss_share.h"
#include "common/clock.h"
#include "pcap/pcap_input.h"
#include "control/control_socket.h"
#include "control/controller.h"
#include "control/pins.h"
#include "metrics/http_endpoint.h"
#include "metrics/record_metrics.h"
#include "trace/event_table.h"
#include "trace/syscall_names.h"

namespace jackdaw::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

struct RecordArgs {
  std::string output = "jackdaw.jdw";
  CaptureArgs cap;
  double duration = 0;
  std::string backend = "bpf";
  std::string compress = "zstd";
  bool quiet = false, verbose = false;
  bool detach = false;
  std::string pcap_iface;
  std::string metrics;  // ADDR:PORT of the Prometheus endpoint
  std::string sample;   // --sample: "", "auto" or a share of connections
  std::vector<std::string> command;
};


// What execvp would run, or why it cannot: checked before anything is
// recorded, so `record -- /nonexistent` fails with one line and no trace.
Status CheckRunnable(const std::string& cmd) {
  auto runnable = [](const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (cmd.find('/') != std::string::npos) {
    if (runnable(cmd)) return Status::Ok();
    return ErrStatus("cannot run %s: %s", cmd.c_str(),
                     access(cmd.c_str(), F_OK) != 0 ? strerror(errno) : "not an executable file");
  }
  const char* path = getenv("PATH");
  std::stringstream ss(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (runnable((dir.empty() ? "." : dir) + "/" + cmd)) return Status::Ok();
  return ErrStatus("cannot run %s: command not found in PATH", cmd.c_str());
}

// Ends the traced command unless --detach: SIGTERM, then SIGKILL if it is
// still there after a grace period. Returns its wait status.
int EndChild(pid_t child, bool detach) {
  int status = 0;
  if (child <= 0) return 0;
  if (detach) return 0;
  kill(child, SIGTERM);
  for (int i = 0; i < 200; ++i) {
    if (waitpid(child, &status, WNOHANG) == child) return status;
    usleep(10000);
  }
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  return status;
}

std::string Human(double v) {
  char buf[32];
  if (v >= 1e9) snprintf(buf, sizeof(buf), "%.2fG", v / 1e9);
  else if (v >= 1e6) snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
  else if (v >= 1e3) snprintf(buf, sizeof(buf), "%.1fk", v / 1e3);
  else snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

// Says so once more whenever the pid filter has turned away more
// processes since the last warning.
void WarnFilterFull(const control::Controller& c, uint64_t* warned, bool tty) {
  const uint64_t n = c.PidsNotFollowed();
  if (n <= *warned) return;
  *warned = n;
  fprintf(stderr, "%sjackdaw: WARNING: %s\n", tty ? "\r\033[K" : "", c.FilterFullWarning().c_str());
}

int Run(const RecordArgs& a) {
  // Handlers first: a signal during the (slow) probe load must still end in
  // a complete trace, not in the default action's exit 130 and a bare header.
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  // The module checks CAP_SYS_ADMIN itself when /dev/jackdaw is opened.
  Status priv = a.backend == "kmod" ? Status::Ok() : capture::CheckPrivileges();
  if (!priv.ok() && a.backend == "auto" && capture::KmodSession::DevicePresent()) priv = Status::Ok();
  if (!priv.ok()) {
    PrintError(priv.message());
    return 2;
  }
  if (!std::isfinite(a.duration) || a.duration < 0 || a.duration > kMaxDurationS)
    return PrintError("--duration must be a number of seconds between 0 and " +
                      std::to_string(static_cast<long>(kMaxDurationS)) + " (one year)"),
           1;
  if (!a.command.empty()) {
    Status run = CheckRunnable(a.command[0]);
    if (!run.ok()) return PrintError(run.message()), 127;
  }
  capture::RecorderOptions ro;
  ro.output = a.output;
  ro.command = a.command;
  ro.backend = a.backend;
  auto compress = trace::ParseCompression(a.compress);
  if (!compress.ok()) return PrintError(compress.status().message()), 1;
  ro.compression = *compress;
  // The processes selected now; scanned again once the probes are
  // attached, since the fork hook only follows processes from then on.
  auto sel = Resolve(a.cap, &ro.capture);
  if (!sel.ok()) return PrintError(sel.status().message()), sel.status().exit_code();
  ro.capture.verbose = a.verbose;
  if (Status sp = ParseSample(a.sample, &ro.capture.sample, &ro.sample_auto, &ro.capture.sample_rate); !sp.ok())
    return PrintError(sp.message()), kExitUsage;
  if (ro.capture.sample && a.backend == "kmod")
    return PrintError("--sample needs the eBPF backend: the jackdaw.ko module records every connection "
                      "(drop --backend kmod, or --sample)"),
           kExitUsage;

  // Launch CMD stopped on a pipe, so its pid is in the filter before it runs.
  pid_t child = -1;
  int go_pipe[2] = {-1, -1};
  if (!a.command.empty()) {
    if (pipe2(go_pipe, O_CLOEXEC) != 0) return PrintError(strerror(errno)), 1;
    const pid_t parent = getpid();
    child = fork();
    if (child == 0) {
      // The command never outlives its recorder (killed, crashed or out of
      // disk), unless asked: an untraced server left behind is a surprise.
      if (!a.detach) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
      }
      // The recorder's handlers must not be inherited across exec.
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGHUP, SIG_DFL);
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
  ro.capture.filter_tgid = !sel->empty() || child > 0;

  // libpcap beside the probes: opened first, so a bad interface fails before anything runs.
  std::unique_ptr<pcap::LiveCapture> live;
  if (!a.pcap_iface.empty()) {
    auto lc = pcap::LiveCapture::Open(a.pcap_iface);
    if (!lc.ok()) {
      if (child > 0) kill(child, SIGKILL), waitpid(child, nullptr, 0);
      PrintError(lc.status().message());
      return 1;
    }
    live = std::move(*lc);
    if (ro.capture.groups & (1u << JDW_GROUP_NET))
      fprintf(stderr, "jackdaw: warning: --pcap-iface with the net probes records each packet twice; "
                      "leave net out of --probes to take packets from libpcap alone\n");
  }
  auto rec = capture::Recorder::Create(ro);
  if (!rec.ok()) {
    if (child > 0) kill(child, SIGKILL), waitpid(child, nullptr, 0);
    PrintError(rec.status().message());
    return rec.status().exit_code() ? rec.status().exit_code() : 1;
  }
  if (!a.quiet || a.backend == "auto")
    fprintf(stderr, "jackdaw: backend: %s\n", (*rec)->backend_choice().c_str());
  for (const auto& w : (*rec)->session().warnings()) fprintf(stderr, "jackdaw: warning: %s\n", w.c_str());
  Status st = (*rec)->Start();
  if (!st.ok()) {
    if (child > 0) kill(child, SIGKILL), waitpid(child, nullptr, 0);
    PrintError(st.message());
    return 1;
  }
  // Runtime control, pinned maps and the rescan of selected processes are
  // the eBPF backend's; the module takes its tgid set at open.
  capture::CaptureSession* bpf = (*rec)->bpf_session();
  if (bpf) {
    for (uint32_t p : sel->Scan()) {
      Status added = bpf->AddTgid(p);
      if (!added.ok()) {
        if (child > 0) kill(child, SIGKILL), waitpid(child, nullptr, 0);
        PrintError(added.message());
        return 1;
      }
    }
  }
  // The same control endpoint as jackdaw live: jackdaw ctl status|enable|
  // disable|filter on this recording (no flight recorder: the trace is it).
  const std::string session_id = std::to_string(getpid());
  control::Controller::Hooks hooks;
  hooks.status = [&] {
    auto s = (*rec)->stats();
    return nlohmann::json{{"session", session_id}, {"records", s.records}, {"bytes_written", s.bytes},
                          {"output", a.output}};
  };
  std::unique_ptr<control::Controller> controller;
  std::unique_ptr<control::ControlServer> server;
  std::unique_ptr<control::PinnedMaps> pins;
  if (bpf) {
    controller = std::make_unique<control::Controller>(bpf, hooks, ro.capture.filter_tgid);
    control::CleanStaleSessions();
    auto srv = control::ControlServer::Create(control::kDefaultRunDir, session_id,
                                              [&](const std::vector<std::string>& w) { return controller->Handle(w); });
    if (srv.ok()) server = std::move(*srv);
    else fprintf(stderr, "jackdaw: warning: no control socket: %s\n", srv.status().message().c_str());
    auto pn = control::PinnedMaps::Create(control::kDefaultPinRoot, session_id, bpf->PinnableMaps());
    if (pn.ok()) pins = std::move(*pn);
    else fprintf(stderr, "jackdaw: warning: maps not pinned: %s\n", pn.status().message().c_str());
  }
  // Prometheus: the probe groups as live exports them, plus the writer.
  std::unique_ptr<metrics::HttpEndpoint> metrics_endpoint;
  if (!a.metrics.empty()) {
    auto ep = metrics::HttpEndpoint::Create(a.metrics, [&] {
      metrics::RecordState m;
      capture::CaptureBackend& cs = (*rec)->session();
      const auto events = (*rec)->group_records();
      std::array<uint64_t, JDW_GROUP_MAX> lost{};
      for (const auto& cpu : cs.ReadLosses())
        for (uint32_t g = 0; g < JDW_GROUP_MAX && g < cpu.size(); ++g) lost[g] += cpu[g];
      for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g)
        if (cs.available_groups() & (1u << g))
          m.groups.push_back({trace::GroupName(g), (cs.enabled_groups() & (1u << g)) != 0, events[g], lost[g]});
      const auto s = (*rec)->stats();
      m.records = s.records;
      m.bytes_written = s.bytes;
      m.record_bytes_raw = s.record_bytes_raw;
      m.record_bytes_stored = s.record_bytes_stored;
      m.writer_stalls = s.writer_stalls;
      m.ring_fill = cs.last_fill();
      m.rss_bytes = control::ResidentBytes();
      return metrics::RenderRecordMetrics(m);
    });
    if (!ep.ok()) {
      if (child > 0) kill(child, SIGKILL), waitpid(child, nullptr, 0);
      (void)(*rec)->Stop();
      PrintError(ep.status().message());
      return 1;
    }
    metrics_endpoint = std::move(*ep);
    // Even with -q: with port 0 this line is the only place the port shows.
    fprintf(stderr, "jackdaw: Prometheus metrics at http://%s/metrics\n", metrics_endpoint->bound().c_str());
    if (const std::string w = metrics_endpoint->ExposureWarning(); !w.empty())
      fprintf(stderr, "jackdaw: warning: %s\n", w.c_str());
  }
  if (child > 0) {
    if (write(go_pipe[1], "g", 1) != 1) {
      kill(child, SIGKILL);
    }
    close(go_pipe[1]);
  }
  if (!a.quiet) {
    const std::string what = !a.command.empty() ? a.command[0] : sel->Describe();
    fprintf(stderr, "jackdaw: recording %s to %s (Ctrl-C to stop)\n", what.c_str(), OutputName(a.output).c_str());
  }
  const uint64_t start = MonotonicNs();
  uint64_t last_report = start, last_records = 0, last_serve = 0;
  constexpr uint64_t kServeIntervalNs = 50'000'000;  // a command waits 50 ms at most
  const bool tty = isatty(STDERR_FILENO);
  uint64_t warned_not_followed = 0;
  int child_status = 0;
  bool child_ended = false;  // by itself, not ended by us
  const uint64_t duration_ns = static_cast<uint64_t>(a.duration * 1e9);
  auto poll_pcap = [&]() -> Status {
    if (!live) return Status::Ok();
    return live->Poll([&](const jdw_net_packet_record& r) {
      (*rec)->AddRecord(0, reinterpret_cast<const uint8_t*>(&r), sizeof(r));
    });
  };
  while (!g_stop) {
    st = (*rec)->Step();
    if (st.ok()) st = poll_pcap();
    if (!st.ok()) break;
    // The writer counts records per type; status shows them per group.
    if (controller) controller->SetEvents((*rec)->group_records());
    const uint64_t now = MonotonicNs();
    // The sockets are served every kServeIntervalNs, not every sweep: a
    // nonblocking accept4 that finds nobody still allocates and frees a
    // socket, and under load the reader sweeps hundreds of times a second
    // (that was a fifth of the reader's CPU on nginx under wrk).
    if (now - last_serve >= kServeIntervalNs) {
      if (server) server->Serve();
      if (metrics_endpoint) metrics_endpoint->Serve();
      last_serve = now;
    }
    if (controller) controller->Tick(now);
    if (a.duration > 0 && now - start >= duration_ns) break;
    if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
      child = -1;
      child_ended = true;
      break;
    }
    if (!a.quiet && now - last_report >= (tty ? 1'000'000'000ull : 5'000'000'000ull)) {
      auto s = (*rec)->stats();
      const double rate = double(s.records - last_records) * 1e9 / double(now - last_report);
      const std::string sampled = ro.capture.sample ? ", sampling " + SampleShareText(s.sample_rate) + " of connections" : "";
      fprintf(stderr, "%s%s events (%s/s), %s lost (%.2f %%)%s, %s written%s", tty ? "\r\033[K" : "",
              Human(double(s.records)).c_str(), Human(rate).c_str(), Human(double(s.lost)).c_str(),
              LostPercent(s.lost, s.records), sampled.c_str(), (Human(double(s.bytes)) + "B").c_str(),
              tty ? "" : "\n");
      last_report = now;
      last_records = s.records;
      if (controller) WarnFilterFull(*controller, &warned_not_followed, tty);
    }
  }
  if (st.ok()) st = poll_pcap();
  Status stop = (*rec)->Stop();
  if (tty && !a.quiet) fprintf(stderr, "\r\033[K");
  if (!st.ok() || !stop.ok()) {
    EndChild(child, a.detach);
    PrintError((st.ok() ? stop : st).message() +
               " (the trace so far is readable with --salvage)");
    return 1;
  }
  auto s = (*rec)->stats();
  if (!a.quiet) {
    fprintf(stderr, "jackdaw: %llu events in %.1f s, %llu lost (%.2f %%), %s written to %s (%.1f bytes/event%s)\n",
            static_cast<unsigned long long>(s.records), double(MonotonicNs() - start) / 1e9,
            static_cast<unsigned long long>(s.lost), LostPercent(s.lost, s.records), (Human(double(s.bytes)) + "B").c_str(),
            OutputName(a.output).c_str(),
            s.records ? double(s.bytes) / double(s.records) : 0.0, a.compress == "zstd" ? ", zstd" : "");
    if (ro.capture.sample)
      fprintf(stderr, "jackdaw: head sampling (%s): %s of connections recorded whole at the end, %s at the least; "
                      "analyze scales request counts back up by the rate in force\n",
              ro.sample_auto ? "auto" : "fixed", SampleShareText(s.sample_rate).c_str(), SampleShareText(s.sample_rate_min).c_str());
  }
  if (s.lost) {
    // Never quiet: a trace with holes must not pass for a whole one.
    fprintf(stderr,
            "jackdaw: WARNING: %llu events (%.2f%%) were LOST because the per-CPU ring buffers filled "
            "faster than they were drained; the trace has gaps (`jackdaw dump --summary` shows them per CPU and group), "
            "located in time so that analyze marks the requests they touch incomplete: "
            "grow --buffer-size (now %s), or record fewer --probes or --syscalls\n",
            static_cast<unsigned long long>(s.lost), LostPercent(s.lost, s.records),
            a.cap.buffer_size.c_str());
  }
  // A selection that matched nothing leaves an empty trace that looks like
  // an idle system: said, never quiet.
  if (ro.capture.filter_tgid && s.records == 0)
    fprintf(stderr, "jackdaw: WARNING: nothing matched: %s produced no event in the recorded probe groups; "
                    "check the selection (ps -eo pid,comm shows pids and names) or --probes\n",
            (!a.command.empty() ? a.command[0] : sel->Describe()).c_str());
  // Never quiet, and said again at the end like losses: processes that
  // went untraced are a hole too.
  warned_not_followed = 0;
  if (controller) WarnFilterFull(*controller, &warned_not_followed, false);
  if (!a.quiet) {
    if (live)
      fprintf(stderr, "jackdaw: libpcap on %s: %llu IP packets recorded, %llu dropped by the kernel\n",
              a.pcap_iface.c_str(), static_cast<unsigned long long>(live->packets()),
              static_cast<unsigned long long>(live->kernel_drops()));
  }
  EndChild(child, a.detach);
  // A Ctrl-C reaches the command too: dying of it was asked for, not a failure.
  if (child_ended && !g_stop) {
    // Like strace and time: the command's failure is the run's failure.
    if (WIFEXITED(child_status) && WEXITSTATUS(child_status) != 0) {
      fprintf(stderr, "jackdaw: %s exited with status %d\n", a.command[0].c_str(), WEXITSTATUS(child_status));
      return WEXITSTATUS(child_status);
    }
    if (WIFSIGNALED(child_status)) {
      fprintf(stderr, "jackdaw: %s was killed by signal %d (%s)\n", a.command[0].c_str(),
              WTERMSIG(child_status), strsignal(WTERMSIG(child_status)));
      return 128 + WTERMSIG(child_status);
    }
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
      "  sudo jackdaw record --pid 1234 --duration 10            trace a running process (and its children) for 10 s\n"
      "  sudo jackdaw record --cgroup system.slice/nginx.service --duration 10   a systemd unit\n"
      "  sudo jackdaw record --comm memcached --duration 10      processes by name\n"
      "  sudo jackdaw record --duration 5                        system-wide for 5 s\n"
      "  sudo jackdaw record --usdt ./server -- ./server         also attach the binary's USDT probes");
  Output(sub->add_option("-o,--output", args->output, "trace file to write")->type_name("FILE")->capture_default_str());
  AddCaptureOptions(sub, &args->cap);
  sub->add_option("--duration", args->duration, "stop after this long (without it: until CMD exits or Ctrl-C)")
      ->type_name("DURATION")
      ->transform(DurationSeconds(0, kMaxDurationS, true));
  CLI::Option* pcap_iface =
      sub->add_option("--pcap-iface", args->pcap_iface,
                      "also capture packets with libpcap on this interface ('any' for all), on the trace's "
                      "clock; usually with net left out of --probes")
          ->type_name("IFACE");
  HiddenAlias(sub, "--pcap", args->pcap_iface, pcap_iface);
  sub->add_option("--metrics", args->metrics,
                  "serve Prometheus metrics (text format 0.0.4) at http://ADDR:PORT/metrics while recording:\n"
                  "per probe group events and losses, records and bytes written, ring buffer fill\n"
                  "(e.g. 127.0.0.1:9464; :9464 for every interface)")
      ->type_name("ADDR:PORT");
  sub->add_option("--sample", args->sample,
                  "record a share of connections whole instead of every connection in part when the\n"
                  "load outruns the reader: RATE (0.1: one connection in ten, decided in the kernel by a\n"
                  "hash of its addresses and ports) or auto (all while the rings keep up, halved whenever\n"
                  "they lose records or fill past half, doubled again after 5 calm seconds). Listening\n"
                  "and datagram sockets are always recorded. analyze scales counts back up")
      ->option_text("RATE|auto");
  sub->add_option("--backend", args->backend,
                  "capture mechanism: bpf (eBPF probes), kmod (the jackdaw.ko module: make kmod, "
                  "insmod build/kmod/jackdaw.ko; TSC timestamps), auto (eBPF when it loads, else the "
                  "module when loaded; says which)")
      ->type_name("bpf|kmod|auto")
      ->check(CLI::IsMember({"bpf", "kmod", "auto"}).description(""))
      ->capture_default_str();
  sub->add_option("--compress", args->compress,
                  "record chunks on disk: zstd (compressed on the writer thread, about a quarter of the "
                  "size) or none (readable by jackdaw before format version 3)")
      ->type_name("zstd|none")
      ->check(CLI::IsMember({"none", "zstd"}).description(""))
      ->capture_default_str();
  sub->add_flag("-q,--quiet", args->quiet, "no progress line");
  sub->add_flag("-v,--verbose", args->verbose, "show libbpf's messages");
  sub->add_flag("--detach", args->detach,
                "leave CMD running when the recording ends (by default it is stopped with SIGTERM,\n"
                "and killed if jackdaw itself dies)");
  sub->add_option("command", args->command, "command to launch and trace (after --)")->type_name("CMD");
  return [args] { return Run(*args); };
}

}  // namespace jackdaw::cli
