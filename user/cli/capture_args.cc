#include "cli/capture_args.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "capture/usdt_notes.h"
#include "cli/usage.h"
#include "trace/event_table.h"
#include "trace/syscall_names.h"

namespace jackdaw::cli {
namespace {

uint32_t PidMax() {
  std::ifstream f("/proc/sys/kernel/pid_max");
  uint64_t v = 0;
  if (!(f >> v) || v == 0 || v > INT_MAX) return 4194304;  // PID_MAX_LIMIT on 64-bit
  return static_cast<uint32_t>(v);
}

StatusOr<std::vector<int>> ParseSyscalls(const std::string& list) {
  std::vector<int> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    int nr = trace::SyscallNumber(item);
    if (nr < 0)
      return ErrStatus("unknown syscall '%s' in --syscalls (names as in unistd_64.h, e.g. read,write)", item.c_str());
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
      return ErrStatus("--usdt %s: no matching USDT probes in %s (list them with: readelf -n %s)", spec.c_str(),
                       real, real);
  }
  return out;
}

}  // namespace

StatusOr<uint32_t> ParseGroups(const std::string& list) {
  uint32_t mask = 0;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    uint32_t g;
    if (!trace::ParseGroup(item, &g))
      return ErrStatus("unknown probe group '%s'; valid groups: %s", item.c_str(), trace::GroupList().c_str());
    mask |= 1u << g;
  }
  if (mask == 0) return ErrStatus("--probes is empty; valid groups: %s", trace::GroupList().c_str());
  return mask;
}

namespace {

// A parser of this file as a CLI11 check, so a bad value is a usage error
// (exit 2) found before anything is attached, with or without privileges.
template <typename Parse>
CLI::Validator Checked(Parse parse, const std::string& name) {
  return CLI::Validator(
      [parse](std::string& in) -> std::string {
        auto parsed = parse(in);
        return parsed.ok() ? std::string() : parsed.status().message();
      },
      std::string(), name);
}

}  // namespace

void AddCaptureOptions(CLI::App* sub, CaptureArgs* args, const std::string& verb) {
  sub->add_option("--probes", args->probes, "probe groups, comma-separated: " + trace::GroupList())
      ->type_name("GROUP,...")
      ->capture_default_str()
      ->check(Checked(ParseGroups, "groups"));
  // allow_extra_args(false): one value per flag, so `--pid 1 -- cmd --opt`
  // leaves --opt to the command.
  sub->add_option("--pid", args->pids,
                  verb + " these processes and all their descendants, those running now (a server's\n"
                         "master and its pre-forked workers) and those forked later (repeatable)")
      ->type_name("PID")
      ->allow_extra_args(false);
  sub->add_option("--cgroup", args->cgroup,
                  verb + " every process in this cgroup v2 and below it, now and later: a systemd unit\n"
                         "(system.slice/nginx.service) or a container; a path under the cgroup v2 mount or\n"
                         "as /proc/PID/cgroup shows it (line 0::)")
      ->type_name("CGROUP");
  sub->add_option("--comm", args->comm,
                  verb + " processes with this name (as /proc/PID/comm shows it), running now or\n"
                         "started later, and their descendants")
      ->type_name("NAME");
  sub->add_option("--syscalls", args->syscalls, "only these syscalls, e.g. read,write,accept4 (default: all)")
      ->type_name("SYSCALL,...")
      ->check(Checked(ParseSyscalls, "syscalls"));
  sub->add_option("--usdt", args->usdt,
                  "attach the USDT probes of this binary, of one provider or one probe (repeatable)")
      ->type_name("BINARY[:PROVIDER[:NAME]]")
      ->allow_extra_args(false);
  sub->add_option("--buffer-size", args->buffer_size, "ring buffer per CPU, power of two (e.g. 4M)")
      ->type_name("SIZE")
      ->capture_default_str()
      ->check(Checked(ParseSize, "size"));
  sub->add_flag("--no-combine", args->no_combine,
                "an enter and an exit record for every syscall (default: one record for a call whose\n"
                "enter and exit meet on one CPU with nothing between them; the events read back the\n"
                "same either way: this is for measuring what combining saves)");
}

Status ParseSample(const std::string& s, bool* on, bool* automatic, double* rate) {
  *on = !s.empty() && s != "off";
  *automatic = s == "auto";
  *rate = 1.0;
  if (!*on || *automatic) return Status::Ok();
  char* end = nullptr;
  const double v = strtod(s.c_str(), &end);
  if (end == s.c_str() || *end || !(v > 0) || v > 1)
    return ErrStatus("bad --sample '%s': give the share of connections to record, 0.01 to 1 (0.1: one in ten), "
                     "auto or off",
                     s.c_str());
  if (v < 1.0 / JDW_SAMPLE_ALL * 16)
    return ErrStatus("bad --sample '%s': below %.5f nothing useful is left; give 0.01 to 1, auto or off", s.c_str(),
                     16.0 / JDW_SAMPLE_ALL);
  *rate = v;
  return Status::Ok();
}

StatusOr<Selection> Resolve(const CaptureArgs& a, capture::CaptureOptions* co) {
  ASSIGN_OR_RETURN(co->groups, ParseGroups(a.probes));
  if ((co->groups & (1u << JDW_GROUP_APP)) && a.usdt.empty())
    return Status::Error("--probes app needs --usdt BINARY[:PROVIDER[:NAME]]: the app group records only the USDT "
                         "probes named there",
                         kExitUsage);
  ASSIGN_OR_RETURN(co->syscalls, ParseSyscalls(a.syscalls));
  ASSIGN_OR_RETURN(co->ring_bytes_per_cpu, ParseSize(a.buffer_size));
  ASSIGN_OR_RETURN(co->usdt, ParseUsdt(a.usdt));
  co->combine_syscalls = !a.no_combine;
  if (!co->usdt.empty()) co->groups |= 1u << JDW_GROUP_APP;
  Selection sel;
  const uint32_t pid_max = PidMax();
  for (uint32_t p : a.pids) {
    if (p == 0 || p >= pid_max)
      return Status::Error("--pid " + std::to_string(p) + ": not a process id (1 to " + std::to_string(pid_max - 1) + ")",
                           kExitUsage);
    if (kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH) return ErrStatus("--pid %u: no such process", p);
    sel.pids_.push_back(p);
  }
  if (!a.cgroup.empty()) {
    ASSIGN_OR_RETURN(sel.cgroup_, capture::ResolveCgroup(a.cgroup));
    co->admit_cgroup_id = sel.cgroup_.id;
    co->admit_cgroup_level = sel.cgroup_.level;
  }
  if (!a.comm.empty()) {
    if (a.comm.size() >= JDW_COMM_LEN)
      return Status::Error("--comm " + a.comm + ": the kernel keeps only " + std::to_string(JDW_COMM_LEN - 1) +
                               " characters of a name; give the name as /proc/PID/comm shows it",
                           kExitUsage);
    sel.comm_ = a.comm;
    co->admit_comm = a.comm;
  }
  co->tgids = sel.Scan();
  co->filter_tgid = !sel.empty();
  return sel;
}

std::vector<uint32_t> Selection::Scan() const {
  std::vector<uint32_t> out;
  for (uint32_t p : pids_)
    for (uint32_t d : capture::DescendantsOf(p)) out.push_back(d);
  if (cgroup_.id)
    for (uint32_t p : capture::ProcessesInCgroup(cgroup_)) out.push_back(p);
  if (!comm_.empty())
    for (uint32_t p : capture::ProcessesWithComm(comm_)) out.push_back(p);
  const uint32_t self = static_cast<uint32_t>(getpid());
  out.erase(std::remove(out.begin(), out.end(), self), out.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Selection::Describe() const {
  if (!pids_.empty()) return "pid(s) and their descendants";
  if (cgroup_.id) return "cgroup " + cgroup_.path;
  if (!comm_.empty()) return "processes named " + comm_;
  return "system-wide";
}

}  // namespace jackdaw::cli
