#include "capture/session.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/capability.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "capture/listeners.h"
#include "capture/process_select.h"
#include "app.skel.h"
#include "block.skel.h"
#include "interact.skel.h"
#include "maps.skel.h"
#include "net.skel.h"
#include "sched.skel.h"
#include "syscall.skel.h"
#include "common/clock.h"
#include "trace/event_table.h"
#include "trace/record_decoder.h"

namespace jackdaw::capture {
namespace {

constexpr const char* kSharedMaps[] = {"jdw_ringbufs",     "jdw_control",      "jdw_lost",
                                       "jdw_tgid_filter",  "jdw_tgid_buckets", "jdw_traced_socks",
                                       "jdw_traced_flows", "jdw_admit",        "jdw_pending",
                                       "jdw_traced_ports", "jdw_net_hints",    "jdw_stage",
                                       "jdw_tgid_full",    "jdw_gap",          "jdw_unsampled",
                                       "jdw_left_out_reading", "jdw_left_out_exchanges",
                                       "jdw_sample_states"};

// libbpf's log: kept quiet unless verbose, but the last lines are remembered
// so a failed load can say why.
bool g_verbose = false;
std::mutex g_log_mu;
std::string g_last_log;

// The verifier's log arrives as one message of any length; its last line
// before the END marker is the reason a program was refused, kept so the
// load error can name it.
std::string g_verifier_reason;

int LibbpfPrint(enum libbpf_print_level level, const char* fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  const int n = vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n < 0) return 0;
  std::string msg(static_cast<size_t>(n) + 1, '\0');
  vsnprintf(msg.data(), msg.size(), fmt, ap);
  msg.pop_back();
  if (g_verbose && level != LIBBPF_DEBUG) fputs(msg.c_str(), stderr);
  if (level == LIBBPF_WARN) {
    std::lock_guard<std::mutex> lock(g_log_mu);
    const size_t end = msg.find("-- END PROG LOAD LOG --");
    if (end != std::string::npos) {
      // The reason is the last line that is neither an instruction
      // ("12: (0f) ...") nor the closing statistics.
      std::istringstream lines(msg.substr(0, end));
      std::string line;
      while (std::getline(lines, line)) {
        if (line.empty() || isdigit(static_cast<unsigned char>(line[0])) || line[0] == ';' ||
            line.starts_with("processed ") || line.starts_with("verification time") ||
            line.starts_with("stack depth") || line.starts_with("func#") ||
            line.starts_with("libbpf:"))
          continue;
        g_verifier_reason = line;
      }
    }
    g_last_log = msg;
    while (!g_last_log.empty() && g_last_log.back() == '\n') g_last_log.pop_back();
    if (g_last_log.find("failed to load object") != std::string::npos && !g_verifier_reason.empty()) {
      g_last_log += " (verifier: " + g_verifier_reason + ")";
      g_verifier_reason.clear();
    }
  }
  return 0;
}

std::string LastLibbpfLine() {
  std::lock_guard<std::mutex> lock(g_log_mu);
  return g_last_log;
}

struct OpenedObject {
  bpf_object* obj = nullptr;
  uint32_t abi = 0;
  std::function<void()> destroy;
};

// Batching needs the flush program of the syscall group (bpf/syscall.bpf.c),
// which the reader runs to bound how long a staged record waits.
bool BatchRecords(const CaptureOptions& opts) {
  return opts.batch_records && opts.combine_syscalls && (opts.groups & (1u << JDW_GROUP_SYSCALL));
}

// One entry per probe group; the only place that names the skeletons.
// Session constants go into each object's rodata before load (every object
// shares them through jackdaw.bpf.h), so the verifier prunes on them.
template <typename Skel, Skel* (*OpenFn)(), void (*DestroyFn)(Skel*)>
OpenedObject OpenSkel(const CaptureOptions& opts, bool batch) {
  Skel* s = OpenFn();
  if (!s) return {};
  s->rodata->targ_filter_tgid = opts.filter_tgid;
  s->rodata->targ_wakeup_bytes = opts.wakeup_bytes;
  s->rodata->targ_combine_syscalls = opts.combine_syscalls;
  s->rodata->targ_batch_records = batch;
  s->rodata->targ_sample = opts.sample;
  return {s->obj, s->rodata->jdw_abi_version, [s] { DestroyFn(s); }};
}

OpenedObject OpenGroup(uint32_t group, const CaptureOptions& o, bool batch) {
  switch (group) {
    case JDW_GROUP_SCHED:
      return OpenSkel<jdw_sched_bpf, jdw_sched_bpf__open, jdw_sched_bpf__destroy>(o, batch);
    case JDW_GROUP_SYSCALL:
      return OpenSkel<jdw_syscall_bpf, jdw_syscall_bpf__open, jdw_syscall_bpf__destroy>(o, batch);
    case JDW_GROUP_BLOCK:
      return OpenSkel<jdw_block_bpf, jdw_block_bpf__open, jdw_block_bpf__destroy>(o, batch);
    case JDW_GROUP_NET:
      return OpenSkel<jdw_net_bpf, jdw_net_bpf__open, jdw_net_bpf__destroy>(o, batch);
    case JDW_GROUP_APP:
      return OpenSkel<jdw_app_bpf, jdw_app_bpf__open, jdw_app_bpf__destroy>(o, batch);
    case JDW_GROUP_INTERACT:
      return OpenSkel<jdw_interact_bpf, jdw_interact_bpf__open, jdw_interact_bpf__destroy>(o, batch);
  }
  return {};
}

// Empties a hash map from user space (its programs detached).
void ClearMap(bpf_map* map) {
  const int fd = bpf_map__fd(map);
  std::vector<uint8_t> key(bpf_map__key_size(map)), next(key.size());
  while (bpf_map_get_next_key(fd, nullptr, next.data()) == 0) {
    if (bpf_map_delete_elem(fd, next.data()) != 0) break;
  }
}

// Zeroes every element of an array map (arrays cannot delete); per-CPU
// maps on every CPU.
void ZeroArrayMap(bpf_map* map) {
  const int fd = bpf_map__fd(map);
  const bool percpu = bpf_map__type(map) == BPF_MAP_TYPE_PERCPU_ARRAY;
  const int ncpus = libbpf_num_possible_cpus();
  if (percpu && ncpus <= 0) return;
  const size_t value = percpu ? ((bpf_map__value_size(map) + 7) / 8 * 8) * static_cast<size_t>(ncpus)
                              : bpf_map__value_size(map);
  std::vector<uint8_t> zero(value);
  for (uint32_t k = 0; k < bpf_map__max_entries(map); ++k) bpf_map_update_elem(fd, &k, zero.data(), BPF_ANY);
}

bool HasPrefix(const char* s, const char* prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

}  // namespace

bpf_link* AttachToCgroupRoot(bpf_program* prog) {
  const std::string root = CgroupV2Mount();
  if (root.empty()) return nullptr;
  const int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  bpf_link* l = bpf_program__attach_cgroup(prog, fd);  // the link holds the cgroup
  close(fd);
  return l;
}

Status CheckPrivileges() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0)
    return Status::Error("jackdaw: cannot read capabilities; run as root (sudo)", 2);
  auto has = [&](int cap) { return (data[cap / 32].effective >> (cap % 32)) & 1u; };
  constexpr int kCapSysAdmin = 21, kCapPerfmon = 38, kCapBpf = 39;
  if (has(kCapSysAdmin)) return Status::Ok();
  std::string missing;
  if (!has(kCapBpf)) missing += "CAP_BPF";
  if (!has(kCapPerfmon)) missing += missing.empty() ? "CAP_PERFMON" : " and CAP_PERFMON";
  if (missing.empty()) return Status::Ok();
  return Status::Error("jackdaw: loading eBPF probes needs root, or CAP_BPF and CAP_PERFMON (missing: " +
                           missing + "); run it with sudo",
                       2);
}

Status EnsureTracefs() {
  struct statfs sfs;
  constexpr long kTracefsMagic = 0x74726163;
  if (statfs("/sys/kernel/tracing", &sfs) == 0 && sfs.f_type == kTracefsMagic) return Status::Ok();
  if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0)
    return ErrStatus("cannot mount tracefs on /sys/kernel/tracing: %s (mount it by hand: "
                     "mount -t tracefs tracefs /sys/kernel/tracing)",
                     strerror(errno));
  return Status::Ok();
}

StatusOr<std::unique_ptr<CaptureSession>> CaptureSession::Create(const CaptureOptions& opts) {
  g_verbose = opts.verbose;
  libbpf_set_print(LibbpfPrint);
  std::unique_ptr<CaptureSession> s(new CaptureSession());
  s->opts_ = opts;
  if (opts.sample) s->sample_keep_ = SampleKeep(opts.sample_rate);
  const int n = libbpf_num_possible_cpus();
  if (n <= 0 || n > JDW_MAX_CPUS) return ErrStatus("cannot count possible CPUs (%d)", n);
  s->ncpus_ = n;
  const uint32_t ring = opts.ring_bytes_per_cpu;
  if (ring < 4096 || (ring & (ring - 1)) != 0)
    return ErrStatus("ring buffer size %u is not a power of two >= 4096", ring);
  if (opts.filter_tgid) s->filter_flags_ |= JDW_FILTER_TGID;
  RETURN_IF_ERROR(s->CreateSharedMaps());
  for (uint32_t t : opts.tgids) RETURN_IF_ERROR(s->AddTgid(t));
  RETURN_IF_ERROR(s->WriteAdmission());
  RETURN_IF_ERROR(s->SetSyscallFilter(opts.syscalls));
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) {
    if (!(opts.groups & (1u << g))) continue;
    Status st = s->LoadGroup(g);
    if (!st.ok()) s->warnings_.push_back(st.message());
    else s->available_ |= 1u << g;
  }
  if (s->available_ == 0 && opts.groups != 0)
    return ErrStatus("no probe group could be loaded: %s",
                     s->warnings_.empty() ? "unknown reason" : s->warnings_.front().c_str());
  const uint32_t net_alone = (1u << JDW_GROUP_NET) | (1u << JDW_GROUP_SYSCALL);
  if (opts.filter_tgid && (s->available_ & net_alone) == (1u << JDW_GROUP_NET))
    s->warnings_.push_back("net: without the syscall group the selected processes' TCP connections are followed "
                           "from connect() and listen(), their UDP traffic not at all; add syscall to --probes "
                           "for UDP");
  if (opts.filter_tgid && !(s->available_ & (1u << JDW_GROUP_SCHED))) {
    Status st = s->LoadFollower();
    if (!st.ok()) s->warnings_.push_back(st.message());
  }
  return s;
}

Status CaptureSession::CreateSharedMaps() {
  jdw_maps_bpf* m = jdw_maps_bpf__open();
  if (!m) return ErrStatus("cannot open the shared BPF maps: %s", LastLibbpfLine().c_str());
  maps_destroy_ = [m] { jdw_maps_bpf__destroy(m); };
  bpf_map__set_max_entries(m->maps.jdw_ringbufs, ncpus_);
  // The outer map's inner template must match the rings' size; the rings
  // themselves are created below, one per CPU.
  int tmpl = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "jdw_ring_tmpl", 0, 0, opts_.ring_bytes_per_cpu, nullptr);
  if (tmpl < 0) return ErrStatus("cannot create a BPF ring buffer: %s", strerror(errno));
  bpf_map__set_inner_map_fd(m->maps.jdw_ringbufs, tmpl);
  const int loaded = jdw_maps_bpf__load(m);
  close(tmpl);
  if (loaded != 0)
    return ErrStatus("cannot create the shared BPF maps: %s", LastLibbpfLine().c_str());
  if (m->rodata->jdw_abi_version != JDW_ABI_VERSION)
    return ErrStatus("BPF objects built for ABI %u, this jackdaw speaks %u: rebuild with make",
                     m->rodata->jdw_abi_version, JDW_ABI_VERSION);
  ringbufs_fd_ = bpf_map__fd(m->maps.jdw_ringbufs);
  control_fd_ = bpf_map__fd(m->maps.jdw_control);
  lost_fd_ = bpf_map__fd(m->maps.jdw_lost);
  tgid_fd_ = bpf_map__fd(m->maps.jdw_tgid_filter);
  buckets_fd_ = bpf_map__fd(m->maps.jdw_tgid_buckets);
  tgid_full_fd_ = bpf_map__fd(m->maps.jdw_tgid_full);
  traced_socks_fd_ = bpf_map__fd(m->maps.jdw_traced_socks);
  traced_flows_fd_ = bpf_map__fd(m->maps.jdw_traced_flows);
  admit_fd_ = bpf_map__fd(m->maps.jdw_admit);
  pending_fd_ = bpf_map__fd(m->maps.jdw_pending);
  stage_fd_ = bpf_map__fd(m->maps.jdw_stage);
  gap_fd_ = bpf_map__fd(m->maps.jdw_gap);
  unsampled_fd_ = bpf_map__fd(m->maps.jdw_unsampled);
  left_out_reading_fd_ = bpf_map__fd(m->maps.jdw_left_out_reading);
  left_out_exchanges_fd_ = bpf_map__fd(m->maps.jdw_left_out_exchanges);
  sample_states_fd_ = bpf_map__fd(m->maps.jdw_sample_states);
  batching_ = BatchRecords(opts_);
  traced_ports_fd_ = bpf_map__fd(m->maps.jdw_traced_ports);
  net_hints_fd_ = bpf_map__fd(m->maps.jdw_net_hints);
  void* ports = mmap(nullptr, sizeof(jdw_traced_ports), PROT_READ | PROT_WRITE, MAP_SHARED, traced_ports_fd_, 0);
  if (ports == MAP_FAILED) return ErrStatus("cannot map the packet filter's port table: %s", strerror(errno));
  traced_ports_ = static_cast<jdw_traced_ports*>(ports);
  unflushed_.assign(ncpus_, 0);
  unstaged_.assign(ncpus_, std::vector<uint64_t>(JDW_GROUP_MAX, 0));
  for (uint32_t cpu = 0; cpu < ncpus_; ++cpu) {
    const std::string name = "jdw_ring" + std::to_string(cpu);
    int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, name.c_str(), 0, 0, opts_.ring_bytes_per_cpu, nullptr);
    if (fd < 0) return ErrStatus("cannot create ring buffer for cpu %u: %s", cpu, strerror(errno));
    ring_fds_.push_back(fd);
    if (bpf_map_update_elem(ringbufs_fd_, &cpu, &fd, BPF_ANY) != 0)
      return ErrStatus("cannot install ring buffer for cpu %u: %s", cpu, strerror(errno));
  }
  for (uint32_t cpu = 0; cpu < ncpus_; ++cpu) {
    ASSIGN_OR_RETURN(RingReader r, RingReader::Map(ring_fds_[cpu], opts_.ring_bytes_per_cpu));
    readers_.push_back(std::move(r));
  }
  // Wake-ups (wakeup_bytes) come through an epoll set of the ring fds, not
  // libbpf's ring_buffer: that one maps every ring's data a second time,
  // twice its size, which shows as resident memory (32 MB at 2 CPUs of
  // 8 MB rings) for pages the RingReaders already map.
  ring_epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (ring_epoll_fd_ < 0) return ErrStatus("cannot create an epoll set for the rings: %s", strerror(errno));
  for (uint32_t cpu = 0; cpu < ncpus_; ++cpu) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = cpu;
    if (epoll_ctl(ring_epoll_fd_, EPOLL_CTL_ADD, ring_fds_[cpu], &ev) != 0)
      return ErrStatus("cannot poll the ring buffer of cpu %u: %s", cpu, strerror(errno));
  }
  return WriteControl();
}

// The process filter grows in the sched group's fork hook (a traced
// parent's child) and exec hook (--comm, --cgroup), and shrinks in its
// exit hook, which do that even while the group is disabled. A session
// without the sched group (--probes syscall, net, ...) still needs them,
// or a server's workers forked after the start go untraced and a dead
// process's pid stays traced for whoever gets it next: the sched object is
// loaded with those three programs alone, attached for the session's life,
// its group bit never set, so they keep the filter and record nothing.
Status CaptureSession::LoadFollower() {
  RETURN_IF_ERROR(LoadGroup(JDW_GROUP_SCHED, &follower_));
  bpf_program* prog;
  bpf_object__for_each_program(prog, follower_.obj) {
    if (!bpf_program__autoload(prog)) continue;
    bpf_link* l = bpf_program__attach(prog);
    if (!l)
      return ErrStatus("processes forked during the session will not be traced: cannot attach %s: %s",
                       bpf_program__name(prog), LastLibbpfLine().c_str());
    follower_.links.push_back(l);
  }
  return Status::Ok();
}

Status CaptureSession::LoadGroup(uint32_t group, Group* follower) {
  const char* gname = trace::GroupName(group);
  // tp_btf first; raw_tp (the same hooks, untyped) when the kernel refuses
  // them. Neither needs tracefs.
  // Each mode with the record stage first when the session batches, then
  // without it (a verifier that refuses the stage's code, as a kernel
  // might, costs the batching, not the group).
  const bool batch_wanted = BatchRecords(opts_) && !batch_refused_;
  std::vector<std::pair<const char*, bool>> attempts;
  for (const char* m : {"tp_btf", "raw_tp"}) {
    if (batch_wanted) attempts.emplace_back(m, true);
    attempts.emplace_back(m, false);
  }
  for (const auto& [mode, batch] : attempts) {
    if (group == JDW_GROUP_APP && strcmp(mode, "raw_tp") == 0) break;
    // The socket tracepoints it needs carry no fields worth an untyped
    // fallback: the interact group is tp_btf only.
    if (group == JDW_GROUP_INTERACT && strcmp(mode, "raw_tp") == 0)
      return ErrStatus("%s: disabled: needs BTF-typed tracepoints (tp_btf), which this kernel refused", gname);
    if (opts_.force_tracepoints && group != JDW_GROUP_APP && strcmp(mode, "tp_btf") == 0) continue;
    OpenedObject o = OpenGroup(group, opts_, batch);
    if (!o.obj) return ErrStatus("%s: disabled: cannot open its BPF object", gname);
    if (o.abi != JDW_ABI_VERSION) {
      o.destroy();
      return ErrStatus("%s: BPF object built for ABI %u, jackdaw speaks %u: rebuild with make", gname,
                       o.abi, JDW_ABI_VERSION);
    }
    bpf_program* prog;
    bpf_object__for_each_program(prog, o.obj) {
      const char* sec = bpf_program__section_name(prog);
      // SEC("raw_tp") alone: a program user space runs, never attached.
      bool wanted = group == JDW_GROUP_APP || HasPrefix(sec, mode) || strcmp(sec, "raw_tp") == 0 ||
                    (group == JDW_GROUP_INTERACT && HasPrefix(sec, "cgroup/"));
      if (follower)
        wanted = HasPrefix(sec, mode) && (strstr(sec, "/sched_process_fork") || strstr(sec, "/sched_process_exec") ||
                                          strstr(sec, "/sched_process_exit"));
      // Optional hooks add detail where the kernel has them; without them
      // the group still works.
      if (wanted && strcmp(sec, "tp_btf/block_io_start") == 0 &&
          libbpf_find_vmlinux_btf_id("block_io_start", BPF_TRACE_RAW_TP) < 0)
        wanted = false;
      bpf_program__set_autoload(prog, wanted);
    }
    const int shared_fds[] = {ringbufs_fd_, control_fd_,      lost_fd_,         tgid_fd_,   buckets_fd_,
                              traced_socks_fd_, traced_flows_fd_, admit_fd_, pending_fd_, traced_ports_fd_,
                              net_hints_fd_, stage_fd_, tgid_full_fd_, gap_fd_, unsampled_fd_,
                              left_out_reading_fd_, left_out_exchanges_fd_, sample_states_fd_};
    static_assert(std::size(shared_fds) == std::size(kSharedMaps));
    for (size_t i = 0; i < std::size(kSharedMaps); ++i) {
      bpf_map* map = bpf_object__find_map_by_name(o.obj, kSharedMaps[i]);
      if (map && bpf_map__reuse_fd(map, shared_fds[i]) != 0) {
        o.destroy();
        return ErrStatus("%s: disabled: cannot share map %s", gname, kSharedMaps[i]);
      }
    }
    if (group == JDW_GROUP_INTERACT) {
      bpf_map* conns = bpf_object__find_map_by_name(o.obj, "jdw_ia_conns");
      if (conns) bpf_map__set_max_entries(conns, opts_.interact_max_conns);
    }
    if (bpf_object__load(o.obj) == 0) {
      if (batch_wanted && !batch) {
        batch_refused_ = true;  // the groups loaded after this one do not try
        warnings_.push_back(std::string(gname) +
                            ": records not batched (this kernel's verifier refused the record stage): "
                            "one ring reserve per record");
      }
      if (follower) {
        *follower = Group{gname, mode, o.obj, o.destroy, {}};
        return Status::Ok();
      }
      groups_[group] = Group{gname, mode, o.obj, o.destroy, {}};
      if (bpf_program* flush = bpf_object__find_program_by_name(o.obj, "flush_pending"))
        flush_prog_fd_ = bpf_program__fd(flush);
      return Status::Ok();
    }
    const std::string why = LastLibbpfLine();
    o.destroy();
    if (batch) continue;  // again without the stage
    if (strcmp(mode, "raw_tp") == 0 || group == JDW_GROUP_APP)
      return ErrStatus("%s: disabled: the kernel refused its probes (%s)", gname, why.c_str());
  }
  return ErrStatus("%s: disabled: no attach method worked", gname);
}

CaptureSession::~CaptureSession() {
  DisableAll();
  for (bpf_link* l : follower_.links) bpf_link__destroy(l);
  if (follower_.destroy) follower_.destroy();
  if (ring_epoll_fd_ >= 0) close(ring_epoll_fd_);
  for (auto& g : groups_)
    if (g.destroy) g.destroy();
  for (int fd : ring_fds_) close(fd);
  if (traced_ports_) munmap(traced_ports_, sizeof(jdw_traced_ports));
  if (maps_destroy_) maps_destroy_();
}

Status CaptureSession::WriteAdmission() {
  jdw_admit a{};
  if (opts_.admit_cgroup_id) {
    a.flags |= JDW_ADMIT_CGROUP;
    a.cgroup_id = opts_.admit_cgroup_id;
    a.cgroup_level = opts_.admit_cgroup_level;
  }
  if (!opts_.admit_comm.empty()) {
    if (opts_.admit_comm.size() >= JDW_COMM_LEN)
      return ErrStatus("comm '%s' is longer than the kernel's %d characters", opts_.admit_comm.c_str(),
                       JDW_COMM_LEN - 1);
    a.flags |= JDW_ADMIT_COMM;
    memcpy(a.comm, opts_.admit_comm.data(), opts_.admit_comm.size());
  }
  if (a.flags && !(filter_flags_ & JDW_FILTER_TGID))
    return ErrStatus("admission by cgroup or comm needs the tgid filter (filter_tgid)");
  uint32_t zero = 0;
  if (bpf_map_update_elem(admit_fd_, &zero, &a, BPF_ANY) != 0)
    return ErrStatus("cannot update the admission map: %s", strerror(errno));
  return Status::Ok();
}

Status CaptureSession::WriteControl() {
  jdw_control ctl{};
  ctl.abi_version = JDW_ABI_VERSION;
  ctl.enabled_groups = enabled_;
  ctl.filter_flags = filter_flags_;
  ctl.wakeup_bytes = opts_.wakeup_bytes;
  memcpy(ctl.syscall_bitmap, syscall_bitmap_, sizeof(ctl.syscall_bitmap));
  ctl.sample_keep = sample_keep_;
  uint32_t zero = 0;
  if (bpf_map_update_elem(control_fd_, &zero, &ctl, BPF_ANY) != 0)
    return ErrStatus("cannot update the control map: %s", strerror(errno));
  return Status::Ok();
}

uint32_t SampleKeep(double rate) {
  if (!(rate > 0)) return 1;  // never none: a sample of nothing says nothing
  if (rate >= 1) return JDW_SAMPLE_ALL;
  return std::max<uint32_t>(1, static_cast<uint32_t>(rate * JDW_SAMPLE_ALL + 0.5));
}

Status CaptureSession::SetSampleRate(double rate) {
  if (!opts_.sample) return ErrStatus("head sampling was not loaded with this session (record --sample)");
  sample_keep_ = SampleKeep(rate);
  return WriteControl();
}

Status CaptureSession::Enable(uint32_t group) {
  if (group >= JDW_GROUP_MAX || !(available_ & (1u << group)))
    return ErrStatus("probe group %s is not available in this session", trace::GroupName(group));
  if (enabled_ & (1u << group)) return Status::Ok();
  Group& g = groups_[group];
  // While detached the fd cache saw no close(): start it afresh.
  if (bpf_map* cache = bpf_object__find_map_by_name(g.obj, "jdw_fd_cache")) ClearMap(cache);
  if (bpf_map* memo = bpf_object__find_map_by_name(g.obj, "jdw_fd_memo")) ZeroArrayMap(memo);
  if (group == JDW_GROUP_APP) {
    bpf_program* prog = bpf_object__find_program_by_name(g.obj, "usdt_probe");
    for (size_t i = 0; i < opts_.usdt.size(); ++i) {
      const UsdtTarget& t = opts_.usdt[i];
      LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = i);
      bpf_link* l = bpf_program__attach_usdt(prog, t.pid, t.binary.c_str(), t.provider.c_str(),
                                             t.name.c_str(), &uo);
      if (!l) {
        const std::string why = LastLibbpfLine();
        for (bpf_link* x : g.links) bpf_link__destroy(x);
        g.links.clear();
        return ErrStatus("cannot attach USDT probe %s:%s in %s: %s", t.provider.c_str(), t.name.c_str(),
                         t.binary.c_str(), why.c_str());
      }
      g.links.push_back(l);
    }
  } else {
    bpf_program* prog;
    bpf_object__for_each_program(prog, g.obj) {
      if (!bpf_program__autoload(prog)) continue;
      // Cgroup hooks are optional detail (see interact.bpf.c): without one
      // the group still works.
      if (strcmp(bpf_program__section_name(prog), "raw_tp") == 0) continue;  // run, not attached
      if (HasPrefix(bpf_program__section_name(prog), "cgroup/")) {
        if (bpf_link* l = AttachToCgroupRoot(prog)) g.links.push_back(l);
        continue;
      }
      bpf_link* l = bpf_program__attach(prog);
      if (!l) {
        const std::string why = LastLibbpfLine();
        for (bpf_link* x : g.links) bpf_link__destroy(x);
        g.links.clear();
        return ErrStatus("cannot attach %s program %s: %s", g.name.c_str(), bpf_program__name(prog),
                         why.c_str());
      }
      g.links.push_back(l);
    }
  }
  enabled_ |= 1u << group;
  return WriteControl();
}

Status CaptureSession::Disable(uint32_t group) {
  if (group >= JDW_GROUP_MAX || !(enabled_ & (1u << group))) return Status::Ok();
  // Flag first, so programs still attached during the detach emit nothing.
  enabled_ &= ~(1u << group);
  Status st = WriteControl();
  for (bpf_link* l : groups_[group].links) bpf_link__destroy(l);
  groups_[group].links.clear();
  if (group == JDW_GROUP_SYSCALL && opts_.combine_syscalls) {
    // No enter parks any more: flush what is parked, and count what a
    // failed flush leaves behind (it would reach no reader).
    Status fs = FlushPending();
    if (st.ok()) st = fs;
    std::vector<PendingSlot> slots;
    if (ReadPendingSlots(&slots))
      for (uint32_t c = 0; c < ncpus_ && c < slots.size(); ++c)
        if (slots[c].state == kPendingFull) ++unflushed_[c];
  }
  return st;
}

bool CaptureSession::ReadStages(std::vector<jdw_stage>* stages) const {
  static_assert(sizeof(jdw_stage) % 8 == 0, "per-CPU values are 8-byte aligned");
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0 || stage_fd_ < 0) return false;
  stages->resize(static_cast<size_t>(ncpus));
  uint32_t zero = 0;
  return bpf_map_lookup_elem(stage_fd_, &zero, stages->data()) == 0;
}

bool CaptureSession::ReadPendingSlots(std::vector<PendingSlot>* slots) const {
  static_assert(sizeof(PendingSlot) % 8 == 0, "per-CPU values are 8-byte aligned");
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0 || pending_fd_ < 0) return false;
  slots->resize(static_cast<size_t>(ncpus));
  uint32_t zero = 0;
  return bpf_map_lookup_elem(pending_fd_, &zero, slots->data()) == 0;
}

Status CaptureSession::FlushPendingOn(uint32_t cpu) {
  LIBBPF_OPTS(bpf_test_run_opts, run, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = cpu);
  // An offline CPU runs nothing, so it parks nothing.
  if (bpf_prog_test_run_opts(flush_prog_fd_, &run) != 0 && errno != ENXIO)
    return ErrStatus("cannot flush the syscall enter parked on cpu %u: %s", cpu, strerror(errno));
  return Status::Ok();
}

Status CaptureSession::FlushPending() {
  last_pending_flush_ns_ = MonotonicNs();
  if (!opts_.combine_syscalls || flush_prog_fd_ < 0) return Status::Ok();
  for (uint32_t cpu = 0; cpu < ncpus_; ++cpu) RETURN_IF_ERROR(FlushPendingOn(cpu));
  return Status::Ok();
}

Status CaptureSession::FlushStalePending() {
  last_pending_flush_ns_ = MonotonicNs();
  if (!opts_.combine_syscalls || flush_prog_fd_ < 0) return Status::Ok();
  if (!ReadPendingSlots(&pending_slots_)) return FlushPending();
  parked_seen_.resize(ncpus_, 0);
  stage_seen_.resize(ncpus_, 0);
  const bool stages = batching_ && ReadStages(&stages_);
  for (uint32_t cpu = 0; cpu < ncpus_ && cpu < pending_slots_.size(); ++cpu) {
    const PendingSlot& s = pending_slots_[cpu];
    // The same enter (by its timestamp) as a period ago: nothing has
    // reserved a record on that CPU since, so nothing else will flush it.
    // Likewise a stage whose oldest record is the one it held a period ago
    // has not been written out since: its records have waited a period.
    const uint64_t ts = s.state == kPendingFull ? s.rec.hdr.ts : 0;
    const uint64_t sts = stages && cpu < stages_.size() && stages_[cpu].len ? stages_[cpu].first_ts : 0;
    // And one held longer than the reader's reorder window allows, however
    // the CPU's slot moved: a CPU busy with untraced work (a build, the load
    // generator) stages a traced record now and then and never goes idle.
    const auto too_old = [&](uint64_t t) {
      return opts_.max_record_wait_ns && t && last_pending_flush_ns_ > t + opts_.max_record_wait_ns;
    };
    if ((ts != 0 && ts == parked_seen_[cpu]) || (sts != 0 && sts == stage_seen_[cpu]) || too_old(ts) || too_old(sts)) {
      RETURN_IF_ERROR(FlushPendingOn(cpu));
      parked_seen_[cpu] = stage_seen_[cpu] = 0;
    } else {
      parked_seen_[cpu] = ts;
      stage_seen_[cpu] = sts;
    }
  }
  return Status::Ok();
}

Status CaptureSession::EnableAll() {
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g)
    if (available_ & (1u << g)) RETURN_IF_ERROR(Enable(g));
  return Status::Ok();
}

void CaptureSession::DisableAll() {
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) (void)Disable(g);
  if (!batching_) return;
  // Nothing stages any more: write every stage out, and count what a
  // failed flush leaves in one (it would reach no reader).
  (void)FlushPending();
  std::vector<jdw_stage> stages;
  if (ReadStages(&stages))
    for (uint32_t c = 0; c < ncpus_ && c < stages.size(); ++c)
      if (stages[c].len)
        for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) unstaged_[c][g] += stages[c].count[g];
}

Status CaptureSession::AddTgid(uint32_t tgid) {
  if (tgid == 0) return ErrStatus("pid 0 cannot be traced");
  uint8_t one = 1;
  if (bpf_map_update_elem(tgid_fd_, &tgid, &one, BPF_ANY) != 0)
    return ErrStatus("cannot add pid %u to the filter: %s", tgid, strerror(errno));
  // Same bucket discipline as jdw_tgid_add() in bpf/jackdaw.bpf.h.
  uint32_t idx = tgid & (JDW_TGID_BUCKETS - 1);
  jdw_tgid_bucket b{};
  if (bpf_map_lookup_elem(buckets_fd_, &idx, &b) != 0)
    return ErrStatus("cannot read the pid filter: %s", strerror(errno));
  bool placed = false;
  for (uint32_t i = 0; i < JDW_TGID_WAYS && !placed; ++i) {
    if (b.tgid[i] == tgid) placed = true;
    else if (b.tgid[i] == 0) b.tgid[i] = tgid, placed = true;
  }
  if (!placed) b.overflow = 1;
  if (bpf_map_update_elem(buckets_fd_, &idx, &b, BPF_ANY) != 0)
    return ErrStatus("cannot update the pid filter: %s", strerror(errno));
  // A server listening since before the session: its clients' first
  // packets (SYN, handshake, the request itself) arrive before accept()
  // names their socket, so the filter keeps its listening ports.
  // Ended since it was found (a scan of /proc, then this insert): its exit
  // hook ran before the insert and will not run again, so it leaves now
  // rather than stay for the next process to get its pid.
  if (kill(static_cast<pid_t>(tgid), 0) != 0 && errno == ESRCH) return RemoveTgid(tgid);
  for (uint16_t port : ListeningPortsOf(static_cast<pid_t>(tgid)))
    __atomic_store_n(&traced_ports_->traced[port], 1, __ATOMIC_RELAXED);
  return Status::Ok();
}

Status CaptureSession::RemoveTgid(uint32_t tgid) {
  if (tgid == 0) return ErrStatus("pid 0 is not traced");
  // The bucket first: the BPF side checks it before the overflow map.
  const uint32_t idx = tgid & (JDW_TGID_BUCKETS - 1);
  jdw_tgid_bucket b{};
  if (bpf_map_lookup_elem(buckets_fd_, &idx, &b) != 0)
    return ErrStatus("cannot read the pid filter: %s", strerror(errno));
  bool found = false;
  for (uint32_t i = 0; i < JDW_TGID_WAYS; ++i)
    if (b.tgid[i] == tgid) b.tgid[i] = 0, found = true;
  if (found && bpf_map_update_elem(buckets_fd_, &idx, &b, BPF_ANY) != 0)
    return ErrStatus("cannot update the pid filter: %s", strerror(errno));
  if (bpf_map_delete_elem(tgid_fd_, &tgid) == 0) found = true;
  if (!found) return ErrStatus("pid %u is not in this session's filter", tgid);
  for (uint16_t port : ListeningPortsOf(static_cast<pid_t>(tgid))) {
    jdw_flow_key key{};
    key.lport = port;
    (void)bpf_map_delete_elem(traced_flows_fd_, &key);
  }
  return Status::Ok();
}

Status CaptureSession::SetSyscallFilter(const std::vector<int>& syscalls) {
  memset(syscall_bitmap_, 0, sizeof(syscall_bitmap_));
  if (syscalls.empty()) {
    filter_flags_ &= ~JDW_FILTER_SYSCALL;
  } else {
    for (int nr : syscalls) {
      if (nr < 0 || nr >= JDW_MAX_SYSCALLS) return ErrStatus("syscall number %d out of range", nr);
      syscall_bitmap_[nr / 64] |= 1ull << (nr % 64);
    }
    filter_flags_ |= JDW_FILTER_SYSCALL;
  }
  return WriteControl();
}

StatusOr<int> CaptureSession::Poll(RecordSink& sink, int timeout_ms) {
  last_wait_ns_ = 0;
  if (timeout_ms > 0) {
    const uint64_t wait_from = MonotonicNs();
    if (opts_.wakeup_bytes) {
      epoll_event ev[8];
      const int n = epoll_wait(ring_epoll_fd_, ev, 8, timeout_ms);
      if (n < 0 && errno != EINTR) return ErrStatus("ring buffer poll failed: %s", strerror(errno));
    } else {
      // The rings never wake anyone: sleep, then sweep.
      usleep(static_cast<useconds_t>(timeout_ms) * 1000);
    }
    last_wait_ns_ = MonotonicNs() - wait_from;
  }
  // A kernel that cannot run the flush on another CPU (test runs on a CPU
  // need 5.10) keeps parked enters until the next record on their CPU:
  // still in order, only later; what is left at the stop is counted lost.
  if (opts_.combine_syscalls && flush_prog_fd_ >= 0 && MonotonicNs() - last_pending_flush_ns_ >= kPendingFlushNs &&
      !FlushStalePending().ok())
    flush_prog_fd_ = -1;
  // Counts what reaches the sink, and expands wire records for sinks that
  // do not keep them.
  struct Counting : RecordSink {
    RecordSink* inner;
    bool expand;
    int n = 0;
    void OnRecord(uint32_t cpu, const uint8_t* data, size_t size) override {
      jdw_record_header h;
      if (expand && size >= sizeof(jdw_sys_call_record) && (memcpy(&h, data, sizeof(h)), trace::IsWireRecord(h.type))) {
        jdw_sys_enter_record enter;
        jdw_sys_exit_record exit;
        trace::ExpandSysCall(data, &enter, &exit);
        n += 2;
        inner->OnRecord(cpu, reinterpret_cast<const uint8_t*>(&enter), sizeof(enter));
        inner->OnRecord(cpu, reinterpret_cast<const uint8_t*>(&exit), sizeof(exit));
        return;
      }
      ++n;
      inner->OnRecord(cpu, data, size);
    }
  } counting;
  counting.inner = &sink;
  counting.expand = !sink.TakesWireRecords();
  // A sink that keeps wire records (the recorder) gets them straight from
  // the ring: one virtual call per record, not two; the reader counts.
  RecordSink& target = counting.expand ? static_cast<RecordSink&>(counting) : sink;
  double fill = 0;
  uint64_t direct = 0;
  for (uint32_t cpu = 0; cpu < readers_.size(); ++cpu) {
    uint64_t n = 0;
    const uint64_t bytes = readers_[cpu].Consume(target, cpu, &n);
    direct += n;
    fill = std::max(fill, double(bytes) / double(readers_[cpu].size()));
  }
  last_fill_ = fill;
  return counting.expand ? counting.n : static_cast<int>(direct);
}

StatusOr<int> CaptureSession::Drain(RecordSink& sink) { return Poll(sink, 0); }

uint64_t CaptureSession::PidsNotFollowed() const {
  std::vector<uint64_t> per_cpu(ncpus_);
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(tgid_full_fd_, &zero, per_cpu.data()) != 0) return 0;
  uint64_t n = 0;
  for (uint64_t v : per_cpu) n += v;
  return n;
}

uint64_t CaptureSession::LeftOutExchanges() const {
  std::vector<uint64_t> per_cpu(ncpus_);
  uint32_t zero = 0;
  if (left_out_exchanges_fd_ < 0 || bpf_map_lookup_elem(left_out_exchanges_fd_, &zero, per_cpu.data()) != 0) return 0;
  uint64_t n = 0;
  for (uint64_t v : per_cpu) n += v;
  return n;
}

std::vector<std::vector<uint64_t>> CaptureSession::ReadLosses() const {
  std::vector<std::vector<uint64_t>> out(ncpus_, std::vector<uint64_t>(JDW_GROUP_MAX, 0));
  std::vector<uint64_t> vals(ncpus_);
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) {
    if (bpf_map_lookup_elem(lost_fd_, &g, vals.data()) != 0) continue;
    for (uint32_t c = 0; c < ncpus_; ++c) out[c][g] = vals[c];
  }
  for (uint32_t c = 0; c < ncpus_ && c < unflushed_.size(); ++c) out[c][JDW_GROUP_SYSCALL] += unflushed_[c];
  for (uint32_t c = 0; c < ncpus_ && c < unstaged_.size(); ++c)
    for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) out[c][g] += unstaged_[c][g];
  return out;
}

}  // namespace jackdaw::capture
