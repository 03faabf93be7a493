#include "control/controller.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "capture/clock_sync.h"
#include "common/clock.h"
#include "common/loss_share.h"
#include "trace/event_table.h"
#include "trace/syscall_names.h"

namespace jackdaw::control {
namespace {

uint64_t StatusField(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  const size_t n = strlen(key);
  while (fgets(line, sizeof(line), f))
    if (strncmp(line, key, n) == 0) kb = strtoull(line + n, nullptr, 10);
  fclose(f);
  return kb * 1024;
}

}  // namespace

uint64_t ResidentBytes() { return StatusField("VmRSS:"); }
uint64_t PeakResidentBytes() { return StatusField("VmHWM:"); }

Controller::Controller(capture::CaptureBackend* session, Hooks hooks, bool tgid_filter)
    : session_(session), hooks_(std::move(hooks)), tgid_filter_(tgid_filter) {
  for (uint16_t t = 0; t < JDW_EVENT_MAX; ++t) {
    const trace::EventDesc* d = trace::FindEvent(t);
    group_of_[t] = static_cast<uint8_t>(d && d->group < JDW_GROUP_MAX ? d->group : uint32_t{JDW_GROUP_MAX});
  }
}

void Controller::Tick(uint64_t now_ns) {
  if (interact_ && interact_->granularity().classes && now_ns - class_window_start_ns_ >= class_window_ns_)
    CloseClassWindow(now_ns);
  if (tick_ns_ == 0) {
    tick_ns_ = now_ns;
    events_at_tick_ = events_;
    return;
  }
  if (now_ns - tick_ns_ < 1'000'000'000) return;
  const double secs = static_cast<double>(now_ns - tick_ns_) / 1e9;
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g)
    rate_[g] = static_cast<double>(events_[g] - events_at_tick_[g]) / secs;
  events_at_tick_ = events_;
  tick_ns_ = now_ns;
}

std::array<uint64_t, JDW_GROUP_MAX> Controller::Losses() const {
  std::array<uint64_t, JDW_GROUP_MAX> out{};
  for (const auto& cpu : session_->ReadLosses())
    for (uint32_t g = 0; g < JDW_GROUP_MAX && g < cpu.size(); ++g) out[g] += cpu[g];
  return out;
}

nlohmann::json Controller::Status() const {
  nlohmann::json groups = nlohmann::json::array();
  const auto lost = Losses();
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) {
    const char* name = trace::GroupName(g);
    if (strcmp(name, "unknown") == 0) continue;
    const bool available = session_->available_groups() & (1u << g);
    groups.push_back({{"group", name},
                      {"available", available},
                      {"enabled", static_cast<bool>(session_->enabled_groups() & (1u << g))},
                      {"mode", available ? session_->attach_mode(g) : ""},
                      {"events", events_[g]},
                      {"events_per_s", rate_[g]},
                      {"last_event_ns", last_ts_[g]},
                      {"lost", lost[g]}});
  }
  // The loss as the closing lines state it, a share of every event the
  // probes produced: per-group counts alone leave the user to add them up.
  uint64_t events = 0, lost_total = 0;
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) events += events_[g], lost_total += lost[g];
  nlohmann::json s = {{"pid", getpid()},
                      {"groups", groups},
                      {"events", events},
                      {"lost", lost_total},
                      {"lost_percent", LostPercent(lost_total, events)},
                      {"filters", {{"syscalls", syscall_filter_}, {"pids_added", added_pids_}, {"pids_removed", removed_pids_}}},
                      {"memory", {{"rss_bytes", ResidentBytes()}, {"peak_rss_bytes", PeakResidentBytes()}}}};
  if (interact_) s["interact"] = InteractStatus();
  s["filters"]["pids_not_followed"] = session_->PidsNotFollowed();
  if (const std::string w = FilterFullWarning(); !w.empty()) s["warnings"] = {w};
  if (hooks_.status) {
    const nlohmann::json extra = hooks_.status();
    for (const auto& [k, v] : extra.items()) s[k] = v;
  }
  return s;
}

std::string Controller::FilterFullWarning() const {
  const uint64_t n = PidsNotFollowed();
  if (n == 0) return "";
  return std::to_string(n) +
         " processes forked by traced ones were NOT traced: the pid filter was full; "
         "narrow the selection (--pid of fewer processes, --comm, --cgroup)";
}

StatusOr<nlohmann::json> Controller::Handle(const std::vector<std::string>& w) {
  const uint64_t received = MonotonicNs();
  ASSIGN_OR_RETURN(nlohmann::json reply, Dispatch(w));
  if (reply.is_object()) reply["received_ns"] = received;
  return reply;
}

StatusOr<nlohmann::json> Controller::FilterPid(const std::string& arg) {
  if (!tgid_filter_) return ErrStatus("this session traces every process; start it with --pid to filter by process");
  const bool remove = !arg.empty() && arg[0] == '-';
  const std::string digits = remove ? arg.substr(1) : arg;
  char* end = nullptr;
  unsigned long pid = strtoul(digits.c_str(), &end, 10);
  if (digits.empty() || !isdigit(static_cast<unsigned char>(digits[0])) || *end || pid == 0 || pid > 0x3fffffff)
    return ErrStatus("filter pid: '%s' is not a pid (PID adds the process, -PID removes it)", arg.c_str());
  const uint32_t tgid = static_cast<uint32_t>(pid);
  if (remove) {
    RETURN_IF_ERROR(session_->RemoveTgid(tgid));
    added_pids_.erase(std::remove(added_pids_.begin(), added_pids_.end(), tgid), added_pids_.end());
    removed_pids_.push_back(tgid);
  } else {
    RETURN_IF_ERROR(session_->AddTgid(tgid));
    removed_pids_.erase(std::remove(removed_pids_.begin(), removed_pids_.end(), tgid), removed_pids_.end());
    added_pids_.push_back(tgid);
  }
  return nlohmann::json{{"pids_added", added_pids_}, {"pids_removed", removed_pids_}};
}

StatusOr<nlohmann::json> Controller::Dispatch(const std::vector<std::string>& w) {
  const std::string& cmd = w[0];
  auto group_arg = [&]() -> StatusOr<uint32_t> {
    if (w.size() != 2) return ErrStatus("usage: %s GROUP (groups: %s)", cmd.c_str(), trace::GroupList().c_str());
    uint32_t g;
    if (!trace::ParseGroup(w[1], &g))
      return ErrStatus("unknown probe group '%s'; valid groups: %s", w[1].c_str(), trace::GroupList().c_str());
    return g;
  };
  if (cmd == "status") return Status();
  if (cmd == "list") return nlohmann::json{{"groups", Status()["groups"]}};
  if (cmd == "enable") {
    ASSIGN_OR_RETURN(uint32_t g, group_arg());
    RETURN_IF_ERROR(session_->Enable(g));
    return nlohmann::json{{"group", w[1]}, {"enabled", true}};
  }
  if (cmd == "disable") {
    ASSIGN_OR_RETURN(uint32_t g, group_arg());
    if (!(session_->available_groups() & (1u << g)))
      return ErrStatus("probe group %s is not available in this session", w[1].c_str());
    RETURN_IF_ERROR(session_->Disable(g));
    return nlohmann::json{{"group", w[1]}, {"enabled", false}};
  }
  if (cmd == "filter") {
    if (w.size() == 3 && w[1] == "syscalls") {
      std::vector<int> nrs;
      if (w[2] != "all") {
        std::stringstream ss(w[2]);
        std::string item;
        while (std::getline(ss, item, ',')) {
          if (item.empty()) continue;
          int nr = trace::SyscallNumber(item);
          if (nr < 0) return ErrStatus("unknown syscall '%s' (names as in unistd_64.h, e.g. read,write)", item.c_str());
          nrs.push_back(nr);
        }
        if (nrs.empty()) return ErrStatus("filter syscalls: empty list; use 'all' to trace every syscall");
      }
      RETURN_IF_ERROR(session_->SetSyscallFilter(nrs));
      syscall_filter_ = w[2];
      return nlohmann::json{{"syscalls", syscall_filter_}};
    }
    if (w.size() == 3 && w[1] == "pid") return FilterPid(w[2]);
    return ErrStatus("usage: filter syscalls LIST|all, or filter pid PID|-PID");
  }
  if (cmd == "granularity") return Granularity(w);
  if (cmd == "snapshot") {
    if (w.size() != 2) return ErrStatus("usage: snapshot FILE.jdw");
    if (!hooks_.snapshot) return ErrStatus("this session keeps no flight recorder (jackdaw live has one)");
    // Resolved here, a relative path would land in the session's directory,
    // not the caller's.
    if (w[1].empty() || w[1][0] != '/')
      return ErrStatus("snapshot '%s': the session cannot know your directory: give an absolute path "
                       "(jackdaw ctl makes relative ones absolute)",
                       w[1].c_str());
    return hooks_.snapshot(w[1]);
  }
  return ErrStatus("unknown request '%s': status, list, enable GROUP, disable GROUP, filter ..., "
                   "granularity interaction|class [--class-window S], snapshot FILE",
                   cmd.c_str());
}

}  // namespace jackdaw::control

namespace jackdaw::control {
namespace {

// Idle connections the interact group forgets at each class window: a
// socket silent this long (never closed: UDP, lingering) frees its slot.
constexpr uint64_t kInteractIdleNs = 60'000'000'000;
constexpr size_t kTopClasses = 10;

std::string RemoteAddress(const jdw_ia_class_key& k) {
  char buf[INET6_ADDRSTRLEN] = "?";
  inet_ntop(k.family == AF_INET6 ? AF_INET6 : AF_INET, k.raddr, buf, sizeof(buf));
  return buf;
}

}  // namespace

StatusOr<nlohmann::json> Controller::Granularity(const std::vector<std::string>& w) {
  const auto usage = [] {
    return ErrStatus(
        "usage: granularity interaction|class [--class-window SECONDS] (no argument: show the current one)");
  };
  if (!(session_->available_groups() & (1u << JDW_GROUP_INTERACT)))
    return ErrStatus("the interact probe group is not loaded in this session: start it with --probes ...,interact");
  if (!interact_) {
    // Interactions are computed by the eBPF interact group only.
    auto* bpf = dynamic_cast<capture::CaptureSession*>(session_);
    if (!bpf) return ErrStatus("granularity: this session's backend has no interact group (use --backend bpf)");
    ASSIGN_OR_RETURN(interact_, capture::InteractControl::Attach(*bpf));
  }
  if (w.size() == 1) return InteractStatus();
  std::string mode;
  double window_s = -1;
  for (size_t i = 1; i < w.size(); ++i) {
    // --window: the spelling jackdaw ctl sends, which sessions of earlier
    // versions understand too.
    if (w[i] == "--class-window" || w[i] == "--window") {
      if (i + 1 >= w.size()) return usage();
      char* end = nullptr;
      window_s = strtod(w[i + 1].c_str(), &end);
      if (*end || !std::isfinite(window_s) || window_s < 0.1 || window_s > 3600)
        return ErrStatus("granularity --class-window: '%s' is not a number of seconds between 0.1 and 3600",
                         w[i + 1].c_str());
      ++i;
    } else if (mode.empty() && (w[i] == "interaction" || w[i] == "class")) {
      mode = w[i];
    } else {
      return usage();
    }
  }
  if (mode.empty() && window_s < 0) return usage();
  capture::InteractGranularity g = interact_->granularity();
  const bool was_classes = g.classes;
  if (!mode.empty()) {
    g.records = mode == "interaction";
    g.classes = mode == "class";
  }
  RETURN_IF_ERROR(interact_->SetGranularity(g));
  if (window_s > 0) class_window_ns_ = static_cast<uint64_t>(window_s * 1e9);
  if (g.classes && !was_classes) {
    // Sums left from an earlier class period belong to no window of this one.
    RETURN_IF_ERROR(interact_->TakeWindow().status());
    class_window_start_ns_ = MonotonicNs();
    last_class_window_ = nullptr;
  }
  return InteractStatus();
}

void Controller::CloseClassWindow(uint64_t now_ns) {
  const double window_s = static_cast<double>(now_ns - class_window_start_ns_) / 1e9;
  class_window_start_ns_ = now_ns;
  auto evicted = interact_->EvictIdle(kInteractIdleNs);
  auto rows = interact_->TakeWindow();
  if (!rows.ok()) {
    last_class_window_ = {{"error", rows.status().message()}};
    return;
  }
  std::sort(rows->begin(), rows->end(), [](const capture::InteractClassRow& a, const capture::InteractClassRow& b) {
    return a.stats.count > b.stats.count;
  });
  uint64_t interactions = 0;
  nlohmann::json top = nlohmann::json::array();
  for (const auto& r : *rows) {
    interactions += r.stats.count;
    if (top.size() >= kTopClasses) continue;
    const double n = static_cast<double>(std::max<uint64_t>(r.stats.count, 1));
    top.push_back({{"remote", RemoteAddress(r.key)},
                   {"port", r.key.port},
                   {"tgid", r.key.tgid},
                   {"role", r.key.role},
                   {"interactions", r.stats.count},
                   {"mean_latency_ms", static_cast<double>(r.stats.total_ns) / n / 1e6},
                   {"mean_oncpu_ms", static_cast<double>(r.stats.oncpu_ns) / n / 1e6},
                   {"request_bytes", r.stats.req_bytes},
                   {"response_bytes", r.stats.resp_bytes}});
  }
  last_class_window_ = {{"window_s", window_s},
                        {"classes", rows->size()},
                        {"interactions", interactions},
                        {"evicted_idle", evicted.ok() ? *evicted : 0},
                        {"top", top}};
}

nlohmann::json Controller::InteractStatus() const {
  const capture::InteractGranularity& g = interact_->granularity();
  nlohmann::json j = {{"granularity", g.classes ? (g.records ? "interaction+class" : "class") : "interaction"},
                      {"window_s", static_cast<double>(class_window_ns_) / 1e9},
                      {"connections", interact_->ConnectionCount()}};
  if (!last_class_window_.is_null()) j["last_window"] = last_class_window_;
  return j;
}

}  // namespace jackdaw::control
