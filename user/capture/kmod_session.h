// KmodSession: the jackdaw.ko backend. Opens /dev/jackdaw (one session at a
// time, CAP_SYS_ADMIN), sizes the per-CPU rings, maps them read-only, sets
// the filters and enables groups by ioctl (the module registers or
// unregisters that group's tracepoint probes). Poll() walks every CPU's ring
// from the tail this session returned last to the head the module
// published, then gives the space back with JDW_IOC_CONSUME.
//
// Records are abi.h's byte for byte; their timestamps are TSC cycles
// (rdtsc in the probe), so the trace's timebase is "tsc". In mono mode
// (live, which keeps no clock mapping) each record is copied as it is read
// and its hdr.ts and block_complete.issue_ts are rewritten to
// CLOCK_MONOTONIC ns through a ClockFit that gains a (rdtsc, monotonic) pair
// every second; a refit moves the mapping by far less than the reorder
// window.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "capture/backend.h"
#include "capture/clock_sync.h"
#include "capture/session.h"

namespace jackdaw::capture {

class KmodSession : public CaptureBackend {
 public:
  static StatusOr<std::unique_ptr<KmodSession>> Create(const CaptureOptions& opts, bool mono_ns = false);
  ~KmodSession() override;

  // Whether /dev/jackdaw exists (the module is loaded).
  static bool DevicePresent();

  const char* name() const override { return "kmod"; }
  trace::Timebase timebase() const override { return mono_ ? trace::Timebase::kMonoNs : trace::Timebase::kTsc; }
  const char* clock_source() const override {
    return mono_ ? "TSC (rdtsc in jackdaw.ko) mapped to CLOCK_MONOTONIC by jackdaw"
                 : "TSC direct (rdtsc in jackdaw.ko)";
  }
  uint32_t ncpus() const override { return ncpus_; }
  uint32_t available_groups() const override { return available_; }
  uint32_t enabled_groups() const override { return enabled_; }
  const std::string& attach_mode(uint32_t group) const override;
  const std::vector<std::string>& warnings() const override { return warnings_; }

  Status Enable(uint32_t group) override;
  Status Disable(uint32_t group) override;
  Status EnableAll() override;
  void DisableAll() override;
  Status AddTgid(uint32_t tgid) override;
  Status SetSyscallFilter(const std::vector<int>& syscalls) override;

  StatusOr<int> Poll(RecordSink& sink, int timeout_ms) override;
  StatusOr<int> Drain(RecordSink& sink) override;
  std::vector<std::vector<uint64_t>> ReadLosses() const override;

  int fd() const { return fd_; }

 private:
  KmodSession() = default;
  StatusOr<int> DrainOnce(RecordSink& sink);
  // Delivers one record, its times converted when mono_.
  void Deliver(RecordSink& sink, uint32_t cpu, const uint8_t* rec, size_t size);
  void SyncClock();

  int fd_ = -1;
  uint8_t* area_ = nullptr;
  size_t area_bytes_ = 0;
  uint32_t ring_bytes_ = 0;
  uint32_t ncpus_ = 0;
  uint32_t available_ = 0;
  uint32_t enabled_ = 0;
  std::vector<uint64_t> tails_;
  uint64_t busiest_bytes_ = 0;  // the most one CPU's ring held at the last drain
  std::vector<std::string> warnings_;
  std::string mode_ = "tracepoint-module";
  std::string none_;
  bool filter_tgid_ = false;
  bool mono_ = false;
  ClockFit fit_;
  trace::ClockMapping mapping_;
  uint64_t last_sync_ns_ = 0;
  std::vector<uint8_t> scratch_;
};

}  // namespace jackdaw::capture
