#include "capture/interact.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "common/clock.h"

namespace jackdaw::capture {
namespace {

void AddStats(jdw_ia_class_stats& a, const jdw_ia_class_stats& b) {
  a.count += b.count;
  a.req_bytes += b.req_bytes;
  a.resp_bytes += b.resp_bytes;
  a.req_packets += b.req_packets;
  a.resp_packets += b.resp_packets;
  a.kernel_ns += b.kernel_ns;
  a.app_ns += b.app_ns;
  a.send_ns += b.send_ns;
  a.total_ns += b.total_ns;
  a.oncpu_ns += b.oncpu_ns;
  a.runq_ns += b.runq_ns;
  a.blocked_ns += b.blocked_ns;
  a.disk_ios += b.disk_ios;
  a.disk_bytes += b.disk_bytes;
  a.flagged += b.flagged;
  for (int i = 0; i < JDW_IA_HIST_BUCKETS; ++i) a.hist[i] += b.hist[i];
}

}  // namespace

const char* InteractStatName(uint32_t id) {
  switch (id) {
#define JDW_IA_STAT_NAME(name, id, desc) \
  case id:                               \
    return #name;
    JDW_IA_STAT_TABLE(JDW_IA_STAT_NAME)
#undef JDW_IA_STAT_NAME
  }
  return nullptr;
}

const char* InteractStatDescription(uint32_t id) {
  switch (id) {
#define JDW_IA_STAT_DESC(name, id, desc) \
  case id:                               \
    return desc;
    JDW_IA_STAT_TABLE(JDW_IA_STAT_DESC)
#undef JDW_IA_STAT_DESC
  }
  return nullptr;
}

Status CheckInteractHooks(const std::function<bool(const char*)>& has_tracepoint, const std::string& release) {
  // Every tracepoint bpf/interact.bpf.c attaches to but block_io_start
  // (optional: disk I/O detail).
  static const char* const kRequired[] = {"sock_recv_length", "sock_send_length", "sk_data_ready",
                                          "inet_sock_set_state", "sched_process_fork"};
  std::vector<const char*> missing;
  for (const char* tp : kRequired)
    if (!has_tracepoint(tp)) missing.push_back(tp);
  if (missing.empty()) return Status::Ok();
  std::string names;
  for (size_t i = 0; i < missing.size(); ++i) {
    if (i) names += i + 1 == missing.size() ? " and " : ", ";
    names += missing[i];
  }
  return ErrStatus("in-kernel interactions need the %s tracepoint%s, which this kernel (%s) lacks: run them on "
                   "Linux 6.5 or later, or trace this one with full capture (jackdaw record)",
                   names.c_str(), missing.size() > 1 ? "s" : "", release.c_str());
}

Status CheckInteractKernel() {
  utsname u{};
  const std::string release = uname(&u) == 0 ? u.release : "unknown release";
  btf* vmlinux = btf__load_vmlinux_btf();
  if (!vmlinux)
    return ErrStatus("in-kernel interactions need the kernel's BTF (/sys/kernel/btf/vmlinux), which this kernel "
                     "(%s) lacks: run them on a kernel built with CONFIG_DEBUG_INFO_BTF, or trace this one with "
                     "full capture (jackdaw record)",
                     release.c_str());
  Status st = CheckInteractHooks(
      [vmlinux](const char* tp) {
        const std::string type = std::string("btf_trace_") + tp;
        return btf__find_by_name_kind(vmlinux, type.c_str(), BTF_KIND_TYPEDEF) > 0;
      },
      release);
  btf__free(vmlinux);
  return st;
}

StatusOr<InteractGranularity> ParseInteractGranularity(const std::string& spec, const InteractGranularity& base) {
  InteractGranularity g = base;
  std::vector<std::string> items;
  size_t from = 0;
  for (;;) {
    const size_t comma = spec.find(',', from);
    items.push_back(spec.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  const std::string& mode = items[0];
  if (mode == "interaction") g.records = true, g.classes = false;
  else if (mode == "class") g.records = false, g.classes = true;
  else if (mode == "both") g.records = true, g.classes = true;
  else
    return ErrStatus("granularity '%s': expected interaction, class or both, then optional "
                     ",port ,no-port ,pid ,no-pid ,prefix4=N ,prefix6=N",
                     spec.c_str());
  for (size_t i = 1; i < items.size(); ++i) {
    const std::string& it = items[i];
    auto prefix = [&](const char* name, int max, uint8_t* out) -> Status {
      const std::string v = it.substr(std::strlen(name));
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 0 || n > max)
        return ErrStatus("granularity '%s': %s%s needs a number of bits from 0 to %d", spec.c_str(), name,
                         v.c_str(), max);
      *out = static_cast<uint8_t>(n);
      return Status::Ok();
    };
    if (it == "port") g.by_port = true;
    else if (it == "no-port") g.by_port = false;
    else if (it == "pid") g.by_pid = true;
    else if (it == "no-pid") g.by_pid = false;
    else if (it.rfind("prefix4=", 0) == 0) RETURN_IF_ERROR(prefix("prefix4=", 32, &g.prefix4));
    else if (it.rfind("prefix6=", 0) == 0) RETURN_IF_ERROR(prefix("prefix6=", 128, &g.prefix6));
    else
      return ErrStatus("granularity '%s': unknown item '%s' (port, no-port, pid, no-pid, prefix4=N, prefix6=N)",
                       spec.c_str(), it.c_str());
  }
  return g;
}

StatusOr<std::unique_ptr<InteractControl>> InteractControl::Attach(CaptureSession& session) {
  bpf_object* obj = session.group_object(JDW_GROUP_INTERACT);
  if (!obj)
    return ErrStatus("the interact probe group is not loaded in this session%s%s",
                     session.warnings().empty() ? "" : ": ",
                     session.warnings().empty() ? "" : session.warnings().front().c_str());
  std::unique_ptr<InteractControl> c(new InteractControl(session));
  struct {
    const char* name;
    int* fd;
  } maps[] = {{"jdw_ia_control", &c->control_fd_},
              {"jdw_ia_classes", &c->classes_fd_},
              {"jdw_ia_conns", &c->conns_fd_},
              {"jdw_ia_stats", &c->stats_fd_}};
  for (auto& m : maps) {
    bpf_map* map = bpf_object__find_map_by_name(obj, m.name);
    if (!map) return ErrStatus("interact BPF object lacks map %s: rebuild with make", m.name);
    *m.fd = bpf_map__fd(map);
    if (std::strcmp(m.name, "jdw_ia_conns") == 0) c->conn_value_size_ = bpf_map__value_size(map);
  }
  RETURN_IF_ERROR(c->WriteControl());
  c->window_start_ns_ = MonotonicNs();
  return c;
}

Status InteractControl::SetWindow(uint64_t window_ns) {
  if (window_ns < 1'000'000) return ErrStatus("an interaction window must be at least 1 ms");
  window_ns_ = window_ns;
  return Status::Ok();
}

StatusOr<std::optional<InteractWindow>> InteractControl::PollWindow(uint64_t now_ns) {
  if (now_ns < window_start_ns_ + window_ns_) return std::optional<InteractWindow>();
  ASSIGN_OR_RETURN(InteractWindow w, CloseWindow(now_ns));
  return std::optional<InteractWindow>(std::move(w));
}

StatusOr<InteractWindow> InteractControl::CloseWindow(uint64_t now_ns) {
  InteractWindow w;
  w.start_ns = window_start_ns_;
  w.end_ns = now_ns;
  window_start_ns_ = now_ns;
  ASSIGN_OR_RETURN(w.rows, TakeWindow());
  return w;
}

Status InteractControl::WriteControl() {
  jdw_ia_control ctl{};
  ctl.mode = (granularity_.records ? JDW_IA_MODE_RECORDS : 0) | (granularity_.classes ? JDW_IA_MODE_CLASSES : 0);
  if (ctl.mode == 0)
    return ErrStatus("interaction granularity needs records, classes or both");
  ctl.class_flags = (granularity_.by_port ? JDW_IA_CLASS_BY_PORT : 0) | (granularity_.by_pid ? JDW_IA_CLASS_BY_PID : 0);
  ctl.class_prefix4 = granularity_.prefix4 > 32 ? 32 : granularity_.prefix4;
  ctl.class_prefix6 = granularity_.prefix6 > 128 ? 128 : granularity_.prefix6;
  ctl.epoch = epoch_;
  ctl.cgroup_id = granularity_.cgroup_id;
  uint32_t zero = 0;
  if (bpf_map_update_elem(control_fd_, &zero, &ctl, BPF_ANY) != 0)
    return ErrStatus("cannot update the interact control map: %s", strerror(errno));
  return Status::Ok();
}

Status InteractControl::SetGranularity(const InteractGranularity& g) {
  InteractGranularity old = granularity_;
  granularity_ = g;
  Status st = WriteControl();
  if (!st.ok()) granularity_ = old;
  return st;
}

StatusOr<std::vector<InteractClassRow>> InteractControl::TakeWindow() {
  const uint8_t closing = epoch_;
  epoch_ ^= 1;
  RETURN_IF_ERROR(WriteControl());
  const uint32_t ncpus = session_.ncpus();
  std::vector<jdw_ia_class_stats> percpu(ncpus);
  std::vector<jdw_ia_class_key> keys;
  jdw_ia_class_key key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(classes_fd_, prev, &next) == 0) {
    class_bytes_ += sizeof(next);
    if (next.epoch == closing) keys.push_back(next);
    key = next;
    prev = &key;
  }
  std::vector<InteractClassRow> rows;
  for (const jdw_ia_class_key& k : keys) {
    if (bpf_map_lookup_elem(classes_fd_, &k, percpu.data()) != 0) continue;
    ++class_rows_;
    class_bytes_ += percpu.size() * sizeof(jdw_ia_class_stats);
    // Deleted right after the read: an update in between (a program that
    // loaded the old epoch before the flip) is the only loss window, and
    // it is a few instructions wide.
    bpf_map_delete_elem(classes_fd_, &k);
    InteractClassRow row;
    row.key = k;
    row.key.epoch = 0;
    for (const auto& s : percpu) AddStats(row.stats, s);
    rows.push_back(row);
  }
  return rows;
}

StatusOr<uint64_t> InteractControl::EvictIdle(uint64_t idle_ns) {
  const uint64_t now = MonotonicNs();
  std::vector<uint8_t> value(conn_value_size_);
  std::vector<uint64_t> victims;
  uint64_t key = 0, next = 0;
  const void* prev = nullptr;
  while (bpf_map_get_next_key(conns_fd_, prev, &next) == 0) {
    sweep_bytes_ += sizeof(next);
    // The BPF side keeps last activity as the value's first field.
    if (bpf_map_lookup_elem(conns_fd_, &next, value.data()) == 0) {
      sweep_bytes_ += value.size();
      uint64_t last = 0;
      memcpy(&last, value.data(), sizeof(last));
      if (last + idle_ns < now) victims.push_back(next);
    }
    key = next;
    prev = &key;
  }
  uint64_t n = 0;
  for (uint64_t k : victims)
    if (bpf_map_delete_elem(conns_fd_, &k) == 0) ++n;
  evicted_ += n;
  return n;
}

uint64_t InteractControl::ConnectionCount() const {
  uint64_t key = 0, next = 0, n = 0;
  const void* prev = nullptr;
  while (bpf_map_get_next_key(conns_fd_, prev, &next) == 0) {
    ++n;
    key = next;
    prev = &key;
  }
  return n;
}

InteractStats InteractControl::ReadStats() const {
  InteractStats out;
  std::vector<uint64_t> vals(session_.ncpus());
  for (uint32_t id = 0; id < JDW_IA_STAT_MAX; ++id) {
    if (bpf_map_lookup_elem(stats_fd_, &id, vals.data()) != 0) continue;
    for (uint64_t v : vals) out.counters[id] += v;
  }
  out.evicted = evicted_;
  out.class_rows = class_rows_;
  out.class_bytes = class_bytes_;
  out.sweep_bytes = sweep_bytes_;
  for (const auto& cpu : session_.ReadLosses()) out.ring_lost += cpu[JDW_GROUP_INTERACT];
  return out;
}

}  // namespace jackdaw::capture
