#include "control/controller.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>

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
    : session_(session), hooks_(std::move(hooks)), tgid_filter_(tgid_filter) {}

void Controller::CountRecord(uint16_t type) {
  const trace::EventDesc* d = trace::FindEvent(type);
  if (d && d->group < JDW_GROUP_MAX) ++events_[d->group];
}

void Controller::Tick(uint64_t now_ns) {
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
                      {"lost", lost[g]}});
  }
  nlohmann::json s = {{"pid", getpid()},
                      {"groups", groups},
                      {"filters", {{"syscalls", syscall_filter_}, {"pids_added", added_pids_}}},
                      {"memory", {{"rss_bytes", ResidentBytes()}, {"peak_rss_bytes", PeakResidentBytes()}}}};
  if (hooks_.status) {
    const nlohmann::json extra = hooks_.status();
    for (const auto& [k, v] : extra.items()) s[k] = v;
  }
  return s;
}

StatusOr<nlohmann::json> Controller::Handle(const std::vector<std::string>& w) {
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
    if (w.size() == 3 && w[1] == "pid") {
      if (!tgid_filter_)
        return ErrStatus("this session traces every process; start it with --pid to filter by process");
      char* end = nullptr;
      unsigned long pid = strtoul(w[2].c_str(), &end, 10);
      if (*end || pid == 0 || pid > 0x3fffffff) return ErrStatus("filter pid: '%s' is not a pid", w[2].c_str());
      RETURN_IF_ERROR(session_->AddTgid(static_cast<uint32_t>(pid)));
      added_pids_.push_back(static_cast<uint32_t>(pid));
      return nlohmann::json{{"pids_added", added_pids_}};
    }
    return ErrStatus("usage: filter syscalls LIST|all, or filter pid PID");
  }
  if (cmd == "snapshot") {
    if (w.size() != 2) return ErrStatus("usage: snapshot FILE.jdw");
    if (!hooks_.snapshot) return ErrStatus("this session keeps no flight recorder (jackdaw live has one)");
    return hooks_.snapshot(w[1]);
  }
  return ErrStatus("unknown request '%s': status, list, enable GROUP, disable GROUP, filter ..., snapshot FILE",
                   cmd.c_str());
}

}  // namespace jackdaw::control
