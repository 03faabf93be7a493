// A capture session: the BPF side of jackdaw's data flow, owned end to end.
//
// Lifecycle (STYLE rule 10): Create() opens every probe group's skeleton,
// creates the shared maps once (maps.bpf.c: per-CPU ring buffers, control,
// loss counters, tgid filter) and hands their fds to each group
// (bpf_map__reuse_fd), then loads each group, choosing tp_btf programs and
// falling back to raw_tp (set_autoload) — a group that loads
// neither way is disabled with a warning, the rest run. Enable()/Disable()
// attach and detach one group's links at runtime and flip its bit in the
// control map, so a disabled group costs nothing. Poll() drains every CPU's
// ring into a RecordSink.
//
// Invariants: records of one CPU reach the sink in ring order; the kernel
// counts every record it could not reserve in jdw_lost[cpu][group].
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "capture/backend.h"
#include "capture/ring_reader.h"
#include "common/status.h"
#include "jackdaw/abi.h"

struct bpf_object;
struct bpf_link;
struct ring_buffer;

struct bpf_link;
struct bpf_program;

namespace jackdaw::capture {

struct UsdtTarget {
  std::string binary;
  std::string provider;
  std::string name;
  int pid = -1;  // -1: every process running the binary
};

struct CaptureOptions {
  uint32_t groups = (1u << JDW_GROUP_SCHED) | (1u << JDW_GROUP_SYSCALL) |
                    (1u << JDW_GROUP_BLOCK) | (1u << JDW_GROUP_NET);
  uint32_t ring_bytes_per_cpu = 8u << 20;  // power of two, >= page size
  uint32_t wakeup_bytes = 0;  // 0: never woken, Poll() drains on its timer
  bool filter_tgid = false;
  std::vector<uint32_t> tgids;
  // Admission into the tgid set at fork/exec (struct jdw_admit): processes
  // in this cgroup v2 (id 0: none) or subtree, or with this comm ("" none).
  uint64_t admit_cgroup_id = 0;
  uint32_t admit_cgroup_level = 0;
  std::string admit_comm;
  std::vector<int> syscalls;  // empty: all
  std::vector<UsdtTarget> usdt;  // app group probes; cookie = index
  bool verbose = false;          // libbpf's own log on stderr
  // Skip tp_btf and use the raw_tp fallback (as on kernels without BTF-typed
  // tracepoints).
  bool force_tracepoints = false;
  // interact group: connections followed at once (a full table is counted).
  uint32_t interact_max_conns = 32768;
  // One JDW_WIRE_SYS_CALL record for a syscall whose enter and exit meet on
  // one CPU with nothing between them (bpf/jackdaw.bpf.h, "the pending
  // syscall enter"); false: an enter and an exit record for every call.
  bool combine_syscalls = true;
  // Records staged per CPU and written to the ring in batches (struct
  // jdw_stage in abi.h). Needs the syscall group's flush program, which
  // bounds how long a record waits, so it is on only with combine_syscalls
  // and the syscall group; false: a ring reserve per record.
  bool batch_records = true;
  // The longest a record may wait in a CPU's stage or parked enter slot
  // before Poll() flushes it (0: only what has not moved for a period,
  // FlushStalePending()). A reader that naps long (live, 0.5 s) needs it:
  // the period rule alone delivers a record up to two naps after it was
  // produced, later than a reorder window shorter than that can place it.
  uint64_t max_record_wait_ns = 0;
  // Head sampling (bpf/jackdaw.bpf.h, "head sampling"): loaded with the
  // objects when set, so a session without it pays nothing; the share of
  // connections recorded starts at sample_rate and SetSampleRate() moves it.
  bool sample = false;
  double sample_rate = 1.0;
};

// A share of connections (0, 1] as the kernel compares it (of JDW_SAMPLE_ALL).
uint32_t SampleKeep(double rate);

class CaptureSession : public CaptureBackend {
 public:
  static StatusOr<std::unique_ptr<CaptureSession>> Create(const CaptureOptions& opts);
  ~CaptureSession() override;

  const char* name() const override { return "bpf"; }
  trace::Timebase timebase() const override { return trace::Timebase::kMonoNs; }
  const char* clock_source() const override { return "CLOCK_MONOTONIC (bpf_ktime_get_ns)"; }
  uint32_t ncpus() const override { return ncpus_; }
  // Groups that loaded (whatever their current state).
  uint32_t available_groups() const override { return available_; }
  uint32_t enabled_groups() const override { return enabled_; }
  // "tp_btf" or "raw_tp" per loaded group; "" if it did not load.
  const std::string& attach_mode(uint32_t group) const override { return groups_[group].mode; }
  // The loaded BPF object of a group (nullptr if it did not load), for
  // group-specific maps such as the interact group's control and tables.
  bpf_object* group_object(uint32_t group) const { return group < JDW_GROUP_MAX ? groups_[group].obj : nullptr; }
  // One line per group that could not be loaded, and why.
  const std::vector<std::string>& warnings() const override { return warnings_; }

  Status Enable(uint32_t group) override;
  Status Disable(uint32_t group) override;
  Status EnableAll() override;
  void DisableAll() override;
  Status AddTgid(uint32_t tgid);
  // Clears the tgid from the filter and its bucket, and the packet filter's
  // ports it listens on; connections the kernel already follows keep
  // being traced until they close.
  Status RemoveTgid(uint32_t tgid) override;
  Status SetSyscallFilter(const std::vector<int>& syscalls);  // empty: all
  // The share of connections recorded from now on (needs opts.sample).
  Status SetSampleRate(double rate) override;

  // Waits up to timeout_ms for data, then drains every ring. Returns the
  // number of records delivered.
  StatusOr<int> Poll(RecordSink& sink, int timeout_ms) override;
  // Drains without waiting.
  StatusOr<int> Drain(RecordSink& sink) override;
  double last_fill() const override { return last_fill_; }
  uint64_t last_wait_ns() const override { return last_wait_ns_; }

  // Maps worth pinning for inspection (bpftool map dump pinned ...): the
  // control map, the per-group loss counters and the tgid filter (its
  // full set and its buckets).
  std::vector<std::pair<std::string, int>> PinnableMaps() const {
    return {{"control", control_fd_}, {"lost", lost_fd_}, {"tgid_filter", tgid_fd_}, {"tgid_buckets", buckets_fd_}};
  }
  uint64_t PidsNotFollowed() const override;
  uint64_t LeftOutExchanges() const override;

  // lost[cpu][group], summed by the kernel since the session started.
  std::vector<std::vector<uint64_t>> ReadLosses() const override;

  // Flushes every CPU's parked syscall enter into its ring (runs the
  // syscall group's flush_pending program on each CPU); Disable() of the
  // syscall group does it after the detach.
  Status FlushPending();
  // Poll() calls this every kPendingFlushNs: it reads every CPU's slot
  // (one syscall, no interrupt) and runs the flush only on a CPU whose slot
  // still holds the enter it held at the previous check, so a parked enter
  // reaches the reader within two periods. Under load every slot turns over
  // between checks and no CPU is interrupted (running the program on a CPU
  // is an inter-processor interrupt into whatever runs there). With
  // max_record_wait_ns it also flushes a CPU whose oldest held record is
  // older than that.
  Status FlushStalePending();
  static constexpr uint64_t kPendingFlushNs = 10'000'000;

 private:
  struct Group {
    std::string name;
    std::string mode;
    bpf_object* obj = nullptr;
    std::function<void()> destroy;
    std::vector<bpf_link*> links;
  };

  CaptureSession() = default;
  Status CreateSharedMaps();
  // Loads a group's object into groups_[group], or with follower set only
  // its fork and exec programs into *follower (see LoadFollower).
  Status LoadGroup(uint32_t group, Group* follower = nullptr);
  Status LoadFollower();
  Status WriteControl();
  Status WriteAdmission();

  // One CPU's parked-enter slot as the kernel keeps it (struct jdw_pending
  // in bpf/jackdaw.bpf.h: a state word, padding, a sys_enter record).
  struct PendingSlot {
    uint32_t state, pad;
    jdw_sys_enter_record rec;
  };
  static constexpr uint32_t kPendingFull = 2;  // JDW_PENDING_FULL
  // Every possible CPU's slot, or false when the map cannot be read.
  bool ReadPendingSlots(std::vector<PendingSlot>* slots) const;
  // Every possible CPU's record stage, or false when the map cannot be read.
  bool ReadStages(std::vector<jdw_stage>* stages) const;
  Status FlushPendingOn(uint32_t cpu);

  CaptureOptions opts_;
  uint32_t ncpus_ = 0;
  uint32_t available_ = 0;
  uint32_t enabled_ = 0;
  uint32_t filter_flags_ = 0;
  uint64_t syscall_bitmap_[JDW_SYSCALL_BITMAP_WORDS] = {};
  uint32_t sample_keep_ = JDW_SAMPLE_ALL;
  int gap_fd_ = -1, unsampled_fd_ = -1, left_out_reading_fd_ = -1, left_out_exchanges_fd_ = -1,
      sample_states_fd_ = -1;
  Group groups_[JDW_GROUP_MAX];
  Group follower_;  // fork/exec hooks that grow the process filter without the sched group
  std::function<void()> maps_destroy_;
  int ringbufs_fd_ = -1, control_fd_ = -1, lost_fd_ = -1, tgid_fd_ = -1, buckets_fd_ = -1, tgid_full_fd_ = -1;
  int traced_socks_fd_ = -1, traced_flows_fd_ = -1, admit_fd_ = -1, traced_ports_fd_ = -1, net_hints_fd_ = -1;
  jdw_traced_ports* traced_ports_ = nullptr;  // the port table, mapped (abi.h)
  std::vector<int> ring_fds_;
  std::vector<RingReader> readers_;  // one per CPU, consumed in place
  int ring_epoll_fd_ = -1;            // the rings' fds, for wake-ups (wakeup mode)
  double last_fill_ = 0;
  uint64_t last_wait_ns_ = 0;
  int pending_fd_ = -1;        // the per-CPU parked-enter slots
  int flush_prog_fd_ = -1;     // syscall group's flush_pending, -1 if absent
  uint64_t last_pending_flush_ns_ = 0;
  std::vector<uint64_t> unflushed_;  // per CPU: enters still parked at a stop, counted lost
  std::vector<std::vector<uint64_t>> unstaged_;  // [cpu][group]: records left in a stage at a stop, counted lost
  std::vector<uint64_t> parked_seen_;  // per CPU: the parked enter's ts at the last check, 0 if none
  std::vector<PendingSlot> pending_slots_;  // FlushStalePending's scratch
  int stage_fd_ = -1;
  bool batching_ = false;                  // the session batches records (BatchRecords)
  bool batch_refused_ = false;             // a group's load refused the record stage
  std::vector<jdw_stage> stages_;          // FlushStalePending's scratch
  std::vector<uint64_t> stage_seen_;       // per CPU: the stage's first_ts at the last check, 0 if empty
  std::vector<std::string> warnings_;
};

// Root, or CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN): returns an error with
// exit code 2 naming what is missing.
Status CheckPrivileges();

// A cgroup program (the interact group's socket-release hook) attached to
// the root of the cgroup v2 hierarchy, which every process descends from;
// nullptr when there is no cgroup2 mount or the kernel refuses.
bpf_link* AttachToCgroupRoot(bpf_program* prog);
// Mounts tracefs at /sys/kernel/tracing if nothing is mounted there.
Status EnsureTracefs();

}  // namespace jackdaw::capture
