// jackdaw interactions: SysProf's in-kernel interaction summaries, live or
// recorded. Only the interact probe group is loaded, so user space receives
// one record per request (or one row per class and window), not the events.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "capture/clock_sync.h"
#include "capture/interact.h"
#include "capture/process_select.h"
#include "capture/recorder.h"
#include "capture/session.h"
#include "cli/commands.h"
#include "cli/usage.h"
#include "common/clock.h"
#include "report/interactions.h"

namespace jackdaw::cli {
namespace {

volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_toggle = 0;
void OnStop(int) { g_stop = 1; }
void OnToggle(int) { g_toggle = 1; }

struct InteractionsArgs {
  std::string by = "class";
  std::vector<uint32_t> pids;
  std::string cgroup;
  std::string comm;
  double class_window = 1.0;
  double duration = 0;
  std::string json_out;  // "-": standard output, instead of the table
  std::string output;
  int prefix4 = 32, prefix6 = 128;
  bool no_port = false, no_pid = false;
  uint32_t max_conns = 32768;
  double idle_s = 60;
  bool quiet = false;
};

// A cgroup given as a number (its id) or a path in the cgroup v2 hierarchy
// (checked there: a path that leaves it, such as ../../../etc, is refused).
StatusOr<uint64_t> ResolveCgroup(const std::string& spec) {
  if (spec.empty()) return uint64_t{0};
  char* end = nullptr;
  errno = 0;
  unsigned long long id = strtoull(spec.c_str(), &end, 10);
  if (errno == 0 && end && *end == '\0' && id > 0) return uint64_t{id};
  ASSIGN_OR_RETURN(capture::CgroupTarget target, capture::ResolveCgroup(spec));
  return target.id;
}

std::string Comm(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string s;
  std::getline(in, s);
  return s;
}

// Each interaction as a line of text, as JSON, or both (the table on the
// terminal, JSON lines into --json FILE); a null stream is not written.
class RecordPrinter : public capture::RecordSink {
 public:
  RecordPrinter(FILE* text, FILE* json) : text_(text), json_(json) {}
  void OnRecord(uint32_t, const uint8_t* data, size_t size) override {
    jdw_record_header h;
    jdw_interaction ia;
    if (size < sizeof(h) + sizeof(ia)) return;
    memcpy(&h, data, sizeof(h));
    if (h.type != JDW_EVENT_INTERACTION) return;
    memcpy(&ia, data + sizeof(h), sizeof(ia));
    ++count_;
    bytes_ += size;
    if (!print_) return;
    if (json_) fprintf(json_, "%s\n", report::InteractionJson(h, ia).dump().c_str());
    if (text_) {
      if (count_ % 40 == 1) fputs(report::InteractionHeaderLine().c_str(), text_);
      fputs(report::FormatInteractionLine(h, ia).c_str(), text_);
    }
  }
  void set_print(bool p) { print_ = p; }
  uint64_t count() const { return count_; }
  uint64_t bytes() const { return bytes_; }

 private:
  FILE* text_;
  FILE* json_;
  bool print_ = true;
  uint64_t count_ = 0;
  uint64_t bytes_ = 0;
};

// One class window: a table on stdout unless the JSON goes there, and a
// JSON line into `json` when given.
void PrintWindow(const InteractionsArgs& a, std::vector<capture::InteractClassRow> rows, double window_s,
                 const capture::InteractStats& st, bool tty, FILE* json) {
  std::vector<report::ClassRow> out;
  std::map<uint32_t, std::string> comms;
  for (const auto& r : rows) {
    report::ClassRow c;
    c.key = r.key;
    c.stats = r.stats;
    if (r.key.tgid) {
      auto it = comms.find(r.key.tgid);
      if (it == comms.end()) it = comms.emplace(r.key.tgid, Comm(r.key.tgid)).first;
      c.process = it->second;
    }
    out.push_back(c);
  }
  if (json) {
    nlohmann::json j;
    j["window_s"] = window_s;
    j["classes"] = report::ClassRowsJson(out, window_s, a.prefix4, a.prefix6);
    nlohmann::json lost;
    for (uint32_t i = 0; i < JDW_IA_STAT_MAX; ++i)
      if (const char* n = capture::InteractStatName(i)) lost[n] = st.counters[i];
    lost["EVICTED"] = st.evicted;
    j["stats"] = lost;
    fprintf(json, "%s\n", j.dump().c_str());
    fflush(json);
  }
  if (!IsStdout(a.json_out)) {
    if (tty) printf("\033[H\033[2J");
    printf("jackdaw interactions: %.1f s window, %zu classes; conns full %llu, evicted %llu, lost %llu\n",
           window_s, out.size(), static_cast<unsigned long long>(st.counters[JDW_IA_STAT_CONNS_FULL]),
           static_cast<unsigned long long>(st.evicted),
           static_cast<unsigned long long>(st.counters[JDW_IA_STAT_RING_LOST] + st.counters[JDW_IA_STAT_CLASS_FULL]));
    report::WriteClassTable(out, window_s, a.prefix4, a.prefix6, std::cout);
    printf("\n");
  }
  fflush(stdout);
}

int Run(const InteractionsArgs& a) {
  if (a.by != "class" && a.by != "interaction")
    return PrintError("--by " + a.by + ": expected 'interaction' or 'class'"), kExitUsage;
  if (a.comm.size() >= JDW_COMM_LEN)
    return PrintError("--comm " + a.comm + ": the kernel keeps only " + std::to_string(JDW_COMM_LEN - 1) +
                      " characters of a name; give the name as /proc/PID/comm shows it"),
           kExitUsage;
  Status priv = capture::CheckPrivileges();
  if (!priv.ok()) return PrintError(priv.message()), priv.exit_code();
  if (!a.json_out.empty())
    if (Status out = CheckOutput(a.json_out); !out.ok()) return PrintError("--json: " + out.message()), 1;
  // Before any loading: on a kernel without the socket tracepoints libbpf
  // would fail deep in the load, in lines that do not say why.
  Status kernel = capture::CheckInteractKernel();
  if (!kernel.ok()) return PrintError(kernel.message()), 2;
  auto cgroup = ResolveCgroup(a.cgroup);
  if (!cgroup.ok()) return PrintError(cgroup.status().message()), 1;
  for (uint32_t p : a.pids)
    if (kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH)
      return PrintError("--pid " + std::to_string(p) + ": no such process"), 1;

  capture::CaptureOptions co;
  co.groups = 1u << JDW_GROUP_INTERACT;
  // A server's workers are its descendants (nginx, apache2 prefork): take
  // those running now; the group's fork hook follows later ones (for
  // --comm, through the name admission it checks at each fork).
  auto selected = [&] {
    std::vector<uint32_t> out;
    for (uint32_t p : a.pids)
      for (uint32_t d : capture::DescendantsOf(p)) out.push_back(d);
    if (!a.comm.empty())
      for (uint32_t p : capture::ProcessesWithComm(a.comm))
        for (uint32_t d : capture::DescendantsOf(p)) out.push_back(d);
    const uint32_t self = static_cast<uint32_t>(getpid());
    out.erase(std::remove(out.begin(), out.end(), self), out.end());
    return out;
  };
  co.filter_tgid = !a.pids.empty() || !a.comm.empty();
  co.admit_comm = a.comm;
  co.tgids = selected();
  // Unlike record's, this group has no exec hook: a process that takes the
  // name later is not picked up, so an empty start is said.
  if (!a.comm.empty() && capture::ProcessesWithComm(a.comm).empty())
    fprintf(stderr, "jackdaw: warning: --comm %s: no such process is running; only those running at the start "
                    "(and their children) are followed: start the server first\n",
            a.comm.c_str());
  co.interact_max_conns = a.max_conns;
  // No syscall group here: no enter is ever parked, so the programs need
  // not look for one before each record (a session constant the verifier
  // prunes on).
  co.combine_syscalls = false;
  co.ring_bytes_per_cpu = 4u << 20;

  std::unique_ptr<capture::Recorder> rec;
  std::unique_ptr<capture::CaptureSession> own;
  capture::CaptureSession* session = nullptr;
  if (!a.output.empty()) {
    capture::RecorderOptions ro;
    ro.capture = co;
    ro.output = a.output;
    ro.command = {"jackdaw", "interactions"};
    auto r = capture::Recorder::Create(ro);
    if (!r.ok()) return PrintError(r.status().message()), r.status().exit_code() ? r.status().exit_code() : 1;
    rec = std::move(*r);
    session = rec->bpf_session();
    if (!session) return PrintError("interactions need the eBPF backend (the interact group has no module counterpart)"), 2;
  } else {
    auto s = capture::CaptureSession::Create(co);
    if (!s.ok()) return PrintError(s.status().message()), 1;
    own = std::move(*s);
    session = own.get();
  }
  auto ctl = capture::InteractControl::Attach(*session);
  if (!ctl.ok()) return PrintError(ctl.status().message()), 1;
  capture::InteractGranularity g;
  g.records = a.by == "interaction" || !a.output.empty();
  g.classes = a.by == "class";
  g.by_port = !a.no_port;
  g.by_pid = !a.no_pid;
  g.prefix4 = static_cast<uint8_t>(a.prefix4);
  g.prefix6 = static_cast<uint8_t>(a.prefix6);
  g.cgroup_id = *cgroup;
  Status st = (*ctl)->SetGranularity(g);
  if (st.ok()) st = (*ctl)->SetWindow(static_cast<uint64_t>(a.class_window * 1e9));
  if (!st.ok()) return PrintError(st.message()), 1;
  st = rec ? rec->Start() : session->Enable(JDW_GROUP_INTERACT);
  if (!st.ok()) return PrintError(st.message()), 1;
  // Forks between the first scan and the attach are caught by a second.
  for (uint32_t p : selected()) {
    st = session->AddTgid(p);
    if (!st.ok()) return PrintError(st.message()), 1;
  }

  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = OnToggle;
  sigaction(SIGUSR1, &sa, nullptr);
  FILE* json = nullptr;
  if (!a.json_out.empty()) {
    auto opened = OpenOutput(a.json_out);
    if (!opened.ok()) return PrintError("--json: " + opened.status().message()), 1;
    json = *opened;
  }
  std::unique_ptr<FILE, void (*)(FILE*)> json_closer(json, CloseOutput);
  const bool tty = isatty(STDOUT_FILENO) && !IsStdout(a.json_out);
  if (!a.quiet)
    fprintf(stderr, "jackdaw: following interactions%s%s (Ctrl-C to stop; kill -USR1 %d switches "
                    "between per-interaction and per-class)\n",
            a.output.empty() ? "" : ", recording to ", OutputName(a.output).c_str(), getpid());

  RecordPrinter printer(IsStdout(a.json_out) ? nullptr : stdout, json);
  printer.set_print(a.output.empty());
  const uint64_t start = MonotonicNs();
  while (!g_stop) {
    if (rec) {
      st = rec->Step();
    } else {
      auto n = session->Poll(printer, 50);
      st = n.ok() ? Status::Ok() : n.status();
    }
    if (!st.ok()) break;
    if (g_toggle) {
      g_toggle = 0;
      capture::InteractGranularity ng = (*ctl)->granularity();
      ng.classes = !ng.classes;
      ng.records = !ng.classes || !a.output.empty();
      st = (*ctl)->SetGranularity(ng);
      if (!st.ok()) break;
      fprintf(stderr, "jackdaw: granularity now %s\n", ng.classes ? "per class" : "per interaction");
    }
    const uint64_t now = MonotonicNs();
    auto window = (*ctl)->PollWindow(now);
    if (!window.ok()) {
      st = window.status();
      break;
    }
    if (*window) {
      auto evicted = (*ctl)->EvictIdle(static_cast<uint64_t>(a.idle_s * 1e9));
      if (!evicted.ok()) {
        st = evicted.status();
        break;
      }
      if ((*ctl)->granularity().classes)
        PrintWindow(a, std::move((*window)->rows), (*window)->seconds(), (*ctl)->ReadStats(), tty, json);
    }
    if (a.duration > 0 && now - start >= static_cast<uint64_t>(a.duration * 1e9)) break;
  }
  // The window in progress when stopped is shown too: a short run still
  // reports what it saw.
  if (st.ok() && (*ctl)->granularity().classes) {
    auto window = (*ctl)->CloseWindow(MonotonicNs());
    if (!window.ok()) st = window.status();
    else if (!window->rows.empty())
      PrintWindow(a, std::move(window->rows), window->seconds(), (*ctl)->ReadStats(), tty, json);
  }
  const capture::InteractStats stats = (*ctl)->ReadStats();
  Status stop = rec ? rec->Stop() : Status::Ok();
  if (!st.ok()) return PrintError(st.message()), 1;
  if (!stop.ok()) return PrintError(stop.message()), 1;
  if (!a.quiet) {
    const uint64_t records = rec ? rec->stats().records : printer.count();
    fprintf(stderr, "jackdaw: %llu interaction records, %llu folded into classes; %llu connections tracked, "
                    "%llu not (table full), %llu evicted idle, %llu records lost%s%s\n",
            static_cast<unsigned long long>(records),
            static_cast<unsigned long long>(stats.counters[JDW_IA_STAT_CLASSED]),
            static_cast<unsigned long long>(stats.counters[JDW_IA_STAT_CONNS]),
            static_cast<unsigned long long>(stats.counters[JDW_IA_STAT_CONNS_FULL]),
            static_cast<unsigned long long>(stats.evicted),
            static_cast<unsigned long long>(stats.counters[JDW_IA_STAT_RING_LOST]),
            a.output.empty() ? "" : ", written to ", a.output.c_str());
    // Everything that crossed from the kernel, for comparing granularities
    // with full capture (scripts/bench-interact.sh reads this line).
    const uint64_t ring_bytes = rec ? rec->stats().record_bytes_raw : printer.bytes();
    fprintf(stderr, "jackdaw: to user space: %llu records (%llu bytes) through the rings, %llu class rows "
                    "(%llu bytes) and %llu bytes of idle sweep from the maps\n",
            static_cast<unsigned long long>(records), static_cast<unsigned long long>(ring_bytes),
            static_cast<unsigned long long>(stats.class_rows), static_cast<unsigned long long>(stats.class_bytes),
            static_cast<unsigned long long>(stats.sweep_bytes));
    // Not interactions, by the definition the join shares: said so that
    // a count below the requests sent is explained.
    fprintf(stderr, "jackdaw: connections' own exchanges: %llu set-up (answering a greeting), %llu one-way; "
                    "%llu connections older than the session (role from their first message)\n",
            static_cast<unsigned long long>(stats.counters[JDW_IA_STAT_SETUP]),
            static_cast<unsigned long long>(stats.counters[JDW_IA_STAT_ONE_WAY]),
            static_cast<unsigned long long>(stats.counters[JDW_IA_STAT_ROLE_GUESSED]));
    if (stats.counters[JDW_IA_STAT_CONNS_FULL])
      fprintf(stderr, "jackdaw: some connections were not followed: raise --max-conns\n");
  }
  return 0;
}

}  // namespace

Runner RegisterInteractions(CLI::App& app) {
  auto args = std::make_shared<InteractionsArgs>();
  CLI::App* sub = app.add_subcommand(
      "interactions",
      "In-kernel request/response summaries (SysProf): per connection, a request message and its\n"
      "response make one interaction; the kernel reports each one (or sums per class) instead of\n"
      "every event, cheap enough to leave on. Latency is split into the time the request waited\n"
      "in the kernel, the time in the application and the time the response took to leave.\n"
      "  sudo jackdaw interactions                          live table per class, every second\n"
      "  sudo jackdaw interactions --pid 1234 --by interaction   one line per request\n"
      "  sudo jackdaw interactions --prefix4 24 --no-pid    classes: remote /24 and server port\n"
      "  sudo jackdaw interactions --comm nginx --json -    nginx's classes as JSON lines\n"
      "  sudo jackdaw interactions -o web.jdw --duration 60 record; then: jackdaw analyze web.jdw\n"
      "A running session switches between per-interaction and per-class on SIGUSR1.");
  sub->add_option("--by", args->by, "granularity: one line per interaction, or sums per class and window")
      ->type_name("interaction|class")
      ->capture_default_str();
  sub->add_option("--pid", args->pids, "only connections of these processes and their descendants (repeatable)")
      ->type_name("PID");
  sub->add_option("--cgroup", args->cgroup, "only connections of this cgroup (v2 path or id)")->type_name("CGROUP");
  sub->add_option("--comm", args->comm,
                  "only connections of processes with this name (as /proc/PID/comm shows it) running when the "
                  "session starts, and their descendants")
      ->type_name("NAME");
  AddClassWindow(sub, &args->class_window, "--interval");
  sub->add_option("--duration", args->duration, "stop after this long (without it: Ctrl-C)")
      ->type_name("DURATION")
      ->transform(DurationSeconds(0, kMaxDurationS, true));
  AddJsonLines(sub, &args->json_out, "one JSON object per interaction or per class window",
               "instead of the table");
  Output(sub->add_option("-o,--output", args->output, "also record the interaction records into this .jdw")
             ->type_name("FILE"));
  sub->add_option("--prefix4", args->prefix4, "remote IPv4 prefix bits kept in a class")
      ->type_name("BITS")
      ->check(IntRange(0, 32))
      ->capture_default_str();
  sub->add_option("--prefix6", args->prefix6, "remote IPv6 prefix bits kept in a class")
      ->type_name("BITS")
      ->check(IntRange(0, 128))
      ->capture_default_str();
  sub->add_flag("--no-port", args->no_port, "classes ignore the server port");
  sub->add_flag("--no-pid", args->no_pid, "classes ignore the process");
  sub->add_option("--max-conns", args->max_conns, "connections followed at once")
      ->type_name("N")
      ->check(IntRange(16, 1 << 22))
      ->capture_default_str();
  sub->add_option("--idle", args->idle_s, "forget connections silent this long")
      ->type_name("DURATION")
      ->capture_default_str()
      ->transform(DurationSeconds(0, 86400, true));
  sub->add_flag("-q,--quiet", args->quiet, "no status lines on stderr");
  return [args] { return Run(*args); };
}

}  // namespace jackdaw::cli
