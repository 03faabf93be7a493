#include "overhead/harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string_view>

#include "capture/recorder.h"
#include "common/safe_file.h"
#include "common/scratch_dir.h"
#include "jackdaw/abi.h"
#include "trace/event_table.h"

namespace jackdaw::overhead {
namespace {

// How long a tracer may take to write out and exit once told to stop (perf
// writing a large file on a loaded machine takes seconds, not this).
constexpr int kTracerStopGraceMs = 20000;

double SelfCpuS() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

bool Installed(const char* tool) {
  for (const char* dir : {"/usr/bin/", "/usr/sbin/", "/usr/local/bin/"})
    if (access((std::string(dir) + tool).c_str(), X_OK) == 0) return true;
  return false;
}

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

// One tracer attached around one run.
class ActiveTracer {
 public:
  virtual ~ActiveTracer() = default;
  virtual Status Attach(const std::vector<pid_t>& pids) = 0;
  virtual StatusOr<Sample> Detach() = 0;
};

class JackdawTracer : public ActiveTracer {
 public:
  JackdawTracer(uint32_t groups, std::string path) : groups_(groups), path_(std::move(path)) {}
  Status Attach(const std::vector<pid_t>& pids) override {
    capture::RecorderOptions ro;
    ro.output = path_;
    ro.capture.groups = groups_;
    ro.capture.filter_tgid = true;
    for (pid_t p : pids) ro.capture.tgids.push_back(p);
    auto rec = capture::Recorder::Create(ro);
    if (!rec.ok()) return rec.status();
    rec_ = std::move(*rec);
    cpu0_ = SelfCpuS();
    return rec_->StartBackground();
  }
  StatusOr<Sample> Detach() override {
    RETURN_IF_ERROR(rec_->Stop());
    Sample s;
    s.tracer_cpu_s = SelfCpuS() - cpu0_;
    const auto st = rec_->stats();
    s.events = st.records;
    s.lost = st.lost;
    rec_.reset();
    s.bytes = FileSize(path_);
    std::filesystem::remove(path_);
    return s;
  }

 private:
  uint32_t groups_;
  std::string path_;
  std::unique_ptr<capture::Recorder> rec_;
  double cpu0_ = 0;
};

class PerfTracer : public ActiveTracer {
 public:
  PerfTracer(uint32_t groups, std::string path) : groups_(groups), path_(std::move(path)) {}
  ~PerfTracer() override {
    for (const auto& f : {ctl_, ack_}) unlink(f.c_str());
  }
  Status Attach(const std::vector<pid_t>& pids) override {
    ctl_ = path_ + ".ctl";
    ack_ = path_ + ".ack";
    for (const auto& f : {ctl_, ack_}) {
      unlink(f.c_str());
      if (mkfifo(f.c_str(), 0600) != 0) return ErrStatus("perf: mkfifo %s: %s", f.c_str(), strerror(errno));
    }
    std::string pidlist;
    for (pid_t p : pids) pidlist += (pidlist.empty() ? "" : ",") + std::to_string(p);
    std::vector<std::string> argv = {"perf", "record", "-D", "-1", "--control", "fifo:" + ctl_ + "," + ack_,
                                     "-o", path_, "-p", pidlist};
    for (const auto& tp : PerfTracepoints(groups_)) argv.insert(argv.end(), {"-e", tp});
    auto c = Child::Spawn(argv, {}, true);
    if (!c.ok()) return c.status();
    child_ = std::make_unique<Child>(std::move(*c));
    child_->Go();
    // Opening the fifos blocks until perf opens its ends; then "enable" is
    // acknowledged once the events count.
    int ctl = open(ctl_.c_str(), O_WRONLY);
    int ack = open(ack_.c_str(), O_RDONLY);
    if (ctl < 0 || ack < 0) return ErrStatus("perf: cannot open its control fifo");
    (void)!write(ctl, "enable\n", 7);
    char buf[16] = {};
    const ssize_t n = read(ack, buf, sizeof(buf) - 1);
    close(ctl);
    close(ack);
    if (n <= 0 || strncmp(buf, "ack", 3) != 0) return ErrStatus("perf did not acknowledge enabling its events");
    return Status::Ok();
  }
  StatusOr<Sample> Detach() override {
    ExitInfo e = child_->Stop(SIGINT, kTracerStopGraceMs);
    if (e.forced) return ErrStatus("perf record did not exit within %d s of SIGINT", kTracerStopGraceMs / 1000);
    Sample s;
    s.tracer_cpu_s = e.cpu_s;
    s.bytes = FileSize(path_);
    // "[ perf record: Captured and wrote 1.234 MB FILE (56789 samples) ]"
    if (auto p = e.err.rfind(" samples)"); p != std::string::npos) {
      auto b = e.err.rfind('(', p);
      if (b != std::string::npos) s.events = strtoull(e.err.c_str() + b + 1, nullptr, 10);
    }
    // "Processed N events and lost M chunks!" / "lost M samples"
    for (const char* key : {"lost ", "LOST "}) {
      if (auto p = e.err.find(key); p != std::string::npos) s.lost += strtoull(e.err.c_str() + p + 5, nullptr, 10);
    }
    std::filesystem::remove(path_);
    // perf record re-raises the SIGINT that stopped it, and names no sample
    // count when it wrote none: its closing line says it finished.
    if (s.events == 0 && !e.ok() && e.err.find("Captured and wrote") == std::string::npos)
      return ErrStatus("perf record failed (%s): %s", e.Describe().c_str(), e.err.c_str());
    return s;
  }

 private:
  uint32_t groups_;
  std::string path_, ctl_, ack_;
  std::unique_ptr<Child> child_;
};

class BpftraceTracer : public ActiveTracer {
 public:
  BpftraceTracer(uint32_t groups, std::string path) : groups_(groups), path_(std::move(path)) {}
  // Its stdout goes to a file, as perf's output does: a pipe nobody reads
  // while the workload runs fills at 64 KiB and then blocks bpftrace, which
  // stops consuming its ring and drops what the row should count. Not -o:
  // bpftrace 0.17 never flushes printf output written there until it
  // exits, so the ready line would not appear; stdout stays line-buffered
  // (-B line) when it is a file.
  Status Attach(const std::vector<pid_t>& pids) override {
    const std::string script = path_ + ".bt";
    std::filesystem::remove(path_);
    RETURN_IF_ERROR(WriteOwnedFile(script, BpftraceScript(groups_, pids.at(0)), 0600));
    auto c = Child::Spawn({"sh", "-c", "exec bpftrace -B line \"$0\" > \"$1\"", script, path_}, {}, true);
    if (!c.ok()) return c.status();
    child_ = std::make_unique<Child>(std::move(*c));
    child_->Go();
    bool ready = false;
    for (int i = 0; i < 600 && !ready; ++i) {  // 60 s: compiling the script is slow on a loaded machine
      std::ifstream in(path_);
      std::string line;
      while (!ready && std::getline(in, line)) ready = line.find("jackdaw-ready") != std::string::npos;
      if (!ready) usleep(100 * 1000);
    }
    std::filesystem::remove(script);
    if (!ready) return ErrStatus("bpftrace did not start its probes");
    return Status::Ok();
  }
  StatusOr<Sample> Detach() override {
    // bpftrace prints far slower than a tight loop makes events, and on
    // SIGINT it drops what its buffers still hold without counting it
    // lost: let it finish printing first (its output stops growing).
    uint64_t size = FileSize(path_);
    for (int i = 0; i < 600; ++i) {  // at most 60 s
      usleep(100 * 1000);
      const uint64_t now = FileSize(path_);
      if (now == size) break;
      size = now;
    }
    ExitInfo e = child_->Stop(SIGINT, kTracerStopGraceMs);
    if (e.forced)
      fprintf(stderr,
              "jackdaw overhead: bpftrace did not exit within %d s of SIGINT and was killed; its row counts the "
              "events it printed, and may miss losses it had not yet reported\n",
              kTracerStopGraceMs / 1000);
    Sample s;
    s.tracer_cpu_s = e.cpu_s;
    std::ifstream in(path_, std::ios::binary);
    const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    s.bytes = out.size();
    const BpftraceCount n = CountBpftraceOutput(out, e.err);
    s.events = n.events;
    s.lost = n.lost;
    std::filesystem::remove(path_);
    return s;
  }

 private:
  uint32_t groups_;
  std::string path_;
  std::unique_ptr<Child> child_;
};

std::string GroupsName(uint32_t groups) {
  std::string out;
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g)
    if (groups & (1u << g)) out += (out.empty() ? "" : ",") + std::string(trace::GroupName(g));
  return out;
}

}  // namespace

const char* TracerName(TracerKind t) {
  switch (t) {
    case TracerKind::kUntraced: return "untraced";
    case TracerKind::kJackdaw: return "jackdaw";
    case TracerKind::kPerf: return "perf";
    case TracerKind::kBpftrace: return "bpftrace";
  }
  return "?";
}

std::vector<std::string> PerfTracepoints(uint32_t groups) {
  std::vector<std::string> out;
  if (groups & (1u << JDW_GROUP_SCHED))
    out.insert(out.end(), {"sched:sched_switch", "sched:sched_wakeup", "sched:sched_wakeup_new",
                           "sched:sched_process_fork", "sched:sched_process_exec", "sched:sched_process_exit"});
  if (groups & (1u << JDW_GROUP_SYSCALL)) out.insert(out.end(), {"raw_syscalls:sys_enter", "raw_syscalls:sys_exit"});
  if (groups & (1u << JDW_GROUP_BLOCK)) out.insert(out.end(), {"block:block_rq_issue", "block:block_rq_complete"});
  if (groups & (1u << JDW_GROUP_NET)) out.insert(out.end(), {"net:net_dev_start_xmit", "net:netif_receive_skb"});
  return out;
}

// The fields jackdaw records, printed per event (bpftrace's own output path).
std::string BpftraceScript(uint32_t groups, pid_t pid) {
  const std::string p = std::to_string(pid);
  std::string s = "BEGIN { printf(\"jackdaw-ready\\n\"); }\n";
  if (groups & (1u << JDW_GROUP_SCHED)) {
    s += "tracepoint:sched:sched_switch /pid == " + p +
         "/ { printf(\"S %llu %d %d %d\\n\", nsecs, args->prev_pid, args->next_pid, args->prev_state); }\n";
    s += "tracepoint:sched:sched_wakeup,tracepoint:sched:sched_wakeup_new /pid == " + p +
         "/ { printf(\"W %llu %d %d %d\\n\", nsecs, tid, args->pid, args->target_cpu); }\n";
    s += "tracepoint:sched:sched_process_fork /pid == " + p +
         "/ { printf(\"F %llu %d %d\\n\", nsecs, tid, args->child_pid); }\n";
  }
  if (groups & (1u << JDW_GROUP_SYSCALL)) {
    s += "tracepoint:raw_syscalls:sys_enter /pid == " + p +
         "/ { printf(\"E %llu %d %ld %lu %lu\\n\", nsecs, tid, args->id, args->args[0], args->args[2]); }\n";
    s += "tracepoint:raw_syscalls:sys_exit /pid == " + p +
         "/ { printf(\"X %llu %d %ld %ld\\n\", nsecs, tid, args->id, args->ret); }\n";
  }
  if (groups & (1u << JDW_GROUP_BLOCK)) {
    s += "tracepoint:block:block_rq_issue { printf(\"I %llu %d %u %llu %u\\n\", nsecs, tid, args->dev, "
         "args->sector, args->bytes); }\n";
    s += "tracepoint:block:block_rq_complete { printf(\"C %llu %u %llu %u\\n\", nsecs, args->dev, args->sector, "
         "args->nr_sector); }\n";
  }
  if (groups & (1u << JDW_GROUP_NET)) {
    s += "tracepoint:net:net_dev_start_xmit /pid == " + p + "/ { printf(\"T %llu %d %u\\n\", nsecs, tid, args->len); }\n";
    s += "tracepoint:net:netif_receive_skb { printf(\"R %llu %u\\n\", nsecs, args->len); }\n";
  }
  return s;
}

BpftraceCount CountBpftraceOutput(const std::string& out, const std::string& err) {
  BpftraceCount n;
  auto scan = [&n](const std::string& text, bool events) {
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      const std::string_view line(text.data() + pos, end - pos);
      if (line.substr(0, 5) == "Lost ")
        n.lost += strtoull(std::string(line.substr(5)).c_str(), nullptr, 10);
      else if (events && line.size() >= 2 && line[0] >= 'A' && line[0] <= 'Z' && line[1] == ' ')
        ++n.events;
      pos = end + 1;
    }
  };
  scan(out, true);
  scan(err, false);
  return n;
}

StatusOr<std::vector<ConfigResult>> RunHarness(Workload& workload, const HarnessOptions& opts) {
  if (opts.runs < 2) return ErrStatus("--runs must be at least 2 for a confidence interval");
  // The tracers' outputs (trace, perf data and fifos, bpftrace's script and
  // output) are written as root under fixed names: only in a directory of
  // our own, gone when the measurement ends however it ends.
  ASSIGN_OR_RETURN(auto scratch, ScratchDir::Create(opts.work_dir, "jackdaw-overhead"));
  std::vector<ConfigResult> results;
  for (uint32_t groups : opts.configs) {
    ConfigResult cr;
    cr.groups = groups;
    cr.tracers.push_back({TracerKind::kUntraced, {}, ""});
    cr.tracers.push_back({TracerKind::kJackdaw, {}, ""});
    if (opts.compare_tools) {
      TracerRuns perf{TracerKind::kPerf, {}, ""}, bt{TracerKind::kBpftrace, {}, ""};
      if (PerfTracepoints(groups).empty()) perf.unavailable = bt.unavailable = "no tracepoints for these groups";
      if (!Installed("perf")) perf.unavailable = "perf is not installed (linux-perf)";
      if (!Installed("bpftrace")) bt.unavailable = "bpftrace is not installed";
      if (bt.unavailable.empty() && !workload.single_process())
        bt.unavailable = "the workload forks; a bpftrace pid filter would miss its children";
      cr.tracers.push_back(perf);
      cr.tracers.push_back(bt);
    }
    for (int round = 0; round < opts.warmup + opts.runs; ++round) {
      if (opts.progress)
        fprintf(stderr, "jackdaw overhead: %s, probes %s, %s %d/%d\n", workload.name().c_str(),
                GroupsName(groups).c_str(), round < opts.warmup ? "warm-up" : "round", round < opts.warmup ? round + 1 : round - opts.warmup + 1,
                round < opts.warmup ? opts.warmup : opts.runs);
      for (TracerRuns& tr : cr.tracers) {
        if (!tr.unavailable.empty()) continue;
        const std::string file = scratch->path() + "/" + TracerName(tr.tracer);
        std::unique_ptr<ActiveTracer> tracer;
        if (tr.tracer == TracerKind::kJackdaw) tracer = std::make_unique<JackdawTracer>(groups, file + ".jdw");
        if (tr.tracer == TracerKind::kPerf) tracer = std::make_unique<PerfTracer>(groups, file + ".data");
        if (tr.tracer == TracerKind::kBpftrace) tracer = std::make_unique<BpftraceTracer>(groups, file);
        auto run = workload.Prepare({{"JACKDAW_OVERHEAD_MODE", TracerName(tr.tracer)}});
        if (!run.ok()) return run.status();
        if (tracer) {
          Status st = tracer->Attach((*run)->traced_pids());
          if (!st.ok()) {
            if (tr.tracer == TracerKind::kJackdaw) return st;
            tr.unavailable = st.message();
            continue;
          }
        }
        auto cost = (*run)->Run();
        Sample s;
        if (tracer) {
          auto t = tracer->Detach();
          if (!t.ok() && tr.tracer == TracerKind::kJackdaw) return t.status();
          if (!t.ok()) tr.unavailable = t.status().message();
          else s = *t;
        }
        if (!cost.ok()) return cost.status();
        s.cost = *cost;
        if (round >= opts.warmup) tr.samples.push_back(s);
      }
    }
    results.push_back(std::move(cr));
  }
  return results;
}

}  // namespace jackdaw::overhead
