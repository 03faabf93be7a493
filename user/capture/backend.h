// CaptureBackend: what the Recorder needs from a source of kernel records,
// whichever mechanism produces them — the eBPF probes (CaptureSession) or
// the jackdaw.ko module (KmodSession). Both deliver include/jackdaw/abi.h
// records byte for byte; they differ only in the timebase of hdr.ts (and
// block_complete.issue_ts), which the trace header names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "trace/clock.h"

namespace jackdaw::capture {

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void OnRecord(uint32_t cpu, const uint8_t* data, size_t size) = 0;
  // A sink that keeps records as they are (the trace file) takes wire-only
  // records (abi.h) unexpanded; every other sink receives the events they
  // stand for (trace/record_decoder.h), so it never sees one.
  virtual bool TakesWireRecords() const { return false; }
};

class CaptureBackend {
 public:
  virtual ~CaptureBackend() = default;

  virtual const char* name() const = 0;  // "bpf" | "kmod"
  virtual trace::Timebase timebase() const = 0;
  // How records are stamped, for the trace header.
  virtual const char* clock_source() const = 0;
  virtual uint32_t ncpus() const = 0;
  virtual uint32_t available_groups() const = 0;
  virtual uint32_t enabled_groups() const = 0;
  virtual const std::string& attach_mode(uint32_t group) const = 0;
  virtual const std::vector<std::string>& warnings() const = 0;

  virtual Status Enable(uint32_t group) = 0;
  virtual Status Disable(uint32_t group) = 0;
  virtual Status EnableAll() = 0;
  virtual void DisableAll() = 0;
  // Runtime filters (jackdaw ctl): one more tgid in the set (when the
  // session filters by tgid), and the syscall set (empty: all).
  virtual Status AddTgid(uint32_t tgid) = 0;
  // The process leaves the set (not its descendants, which are tgids of
  // their own); a backend that cannot remove says so.
  virtual Status RemoveTgid(uint32_t tgid) {
    return ErrStatus("the %s backend cannot take pid %u out of the filter (use --backend bpf)", name(), tgid);
  }
  virtual Status SetSyscallFilter(const std::vector<int>& syscalls) = 0;
  // Head sampling: the share of connections recorded from now on. Only
  // the eBPF backend samples.
  virtual Status SetSampleRate(double) {
    return ErrStatus("the %s backend records every connection: head sampling needs --backend bpf", name());
  }

  // Waits up to timeout_ms for data, then drains every CPU's ring. Returns
  // the number of records delivered.
  virtual StatusOr<int> Poll(RecordSink& sink, int timeout_ms) = 0;
  virtual StatusOr<int> Drain(RecordSink& sink) = 0;
  // The fullest ring's fill (0..1) seen by the last Poll/Drain, before it
  // was drained: the reader sweeps again at once while this is high. -1:
  // the backend does not know (the recorder estimates from the records).
  virtual double last_fill() const { return -1; }
  // How long the last Poll waited for data before draining (the reader's
  // idle time, against which --sample auto judges its room to grow).
  virtual uint64_t last_wait_ns() const { return 0; }
  // lost[cpu][group] since the session started.
  virtual std::vector<std::vector<uint64_t>> ReadLosses() const = 0;
  // Processes a traced parent forked that the pid filter had no room for
  // (so they went untraced), since the session started.
  virtual uint64_t PidsNotFollowed() const { return 0; }
  // Under head sampling: the exchanges that the connections left out of the
  // sample made since the session started (the served requests the
  // recorded ones stand for). 0 when nothing was left out.
  virtual uint64_t LeftOutExchanges() const { return 0; }
};

struct CaptureOptions;  // capture/session.h

// The clock the records reach a sink in. kNative: the backend's own (the
// trace header names it and carries the TSC mapping). kMonoNs:
// CLOCK_MONOTONIC ns whichever backend, the module's TSC stamps converted
// as they are read — for consumers that keep no clock mapping (live).
enum class BackendClock { kNative, kMonoNs };

// Opens the backend named "bpf", "kmod" or "auto" (eBPF when its probes
// load, else the module when /dev/jackdaw exists). *choice says which one
// runs and, under auto, why.
StatusOr<std::unique_ptr<CaptureBackend>> OpenBackend(const CaptureOptions& opts, const std::string& backend,
                                                      BackendClock clock, std::string* choice);

}  // namespace jackdaw::capture
