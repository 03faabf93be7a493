#include "capture/kmod_session.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "capture/kmod_ring.h"
#include "common/clock.h"
#include "jackdaw/kmod.h"
#include "trace/event_table.h"

namespace jackdaw::capture {
namespace {

const jdw_kmod_meta* Meta(const uint8_t* area, uint32_t ring_bytes, uint32_t cpu) {
  return reinterpret_cast<const jdw_kmod_meta*>(area + size_t(cpu) * (JDW_KMOD_META_BYTES + ring_bytes));
}

}  // namespace

bool KmodSession::DevicePresent() {
  struct stat st;
  return stat(JDW_KMOD_DEVICE, &st) == 0 && S_ISCHR(st.st_mode);
}

StatusOr<std::unique_ptr<KmodSession>> KmodSession::Create(const CaptureOptions& opts, bool mono_ns) {
  std::unique_ptr<KmodSession> s(new KmodSession());
  s->mono_ = mono_ns;
  s->fd_ = open(JDW_KMOD_DEVICE, O_RDONLY | O_CLOEXEC);
  if (s->fd_ < 0) {
    const int e = errno;
    if (e == ENOENT)
      return Status::Error("jackdaw: " JDW_KMOD_DEVICE " is missing: the jackdaw.ko module is not loaded "
                           "(build it with make kmod, load it with insmod build/kmod/jackdaw.ko)", 2);
    if (e == EPERM || e == EACCES)
      return Status::Error("jackdaw: opening " JDW_KMOD_DEVICE " needs CAP_SYS_ADMIN; run it with sudo", 2);
    if (e == EBUSY)
      return Status::Error("jackdaw: " JDW_KMOD_DEVICE " is in use by another recording; stop it first", 2);
    return ErrStatus("cannot open " JDW_KMOD_DEVICE ": %s", strerror(e));
  }
  jdw_kmod_setup su{};
  su.abi_version = JDW_ABI_VERSION;
  su.ring_bytes = opts.ring_bytes_per_cpu;
  if (su.ring_bytes < JDW_KMOD_MIN_RING || su.ring_bytes > JDW_KMOD_MAX_RING ||
      (su.ring_bytes & (su.ring_bytes - 1)))
    return ErrStatus("ring buffer size %u: the module takes a power of two between 4K and 64M",
                     su.ring_bytes);
  if (ioctl(s->fd_, JDW_IOC_SETUP, &su) != 0)
    return ErrStatus("jackdaw.ko refused the session (%s): the module was built for another ABI "
                     "than this jackdaw (%u); rebuild both with make && make kmod",
                     strerror(errno), JDW_ABI_VERSION);
  s->ncpus_ = su.ncpus;
  s->ring_bytes_ = su.ring_bytes;
  s->area_bytes_ = size_t(su.ncpus) * (su.meta_bytes + su.ring_bytes);
  void* p = mmap(nullptr, s->area_bytes_, PROT_READ, MAP_SHARED, s->fd_, 0);
  if (p == MAP_FAILED) return ErrStatus("cannot map jackdaw.ko's rings: %s", strerror(errno));
  s->area_ = static_cast<uint8_t*>(p);
  s->tails_.resize(s->ncpus_);
  for (uint32_t c = 0; c < s->ncpus_; ++c) s->tails_[c] = Meta(s->area_, s->ring_bytes_, c)->tail;

  s->filter_tgid_ = opts.filter_tgid;
  for (uint32_t t : opts.tgids) RETURN_IF_ERROR(s->AddTgid(t));
  RETURN_IF_ERROR(s->SetSyscallFilter(opts.syscalls));
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) {
    if (!(opts.groups & (1u << g))) continue;
    if (JDW_KMOD_GROUPS & (1u << g)) s->available_ |= 1u << g;
    else
      s->warnings_.push_back(std::string(trace::GroupName(g)) +
                             ": not implemented by the kernel module backend; group skipped");
  }
  if (!opts.usdt.empty()) s->warnings_.push_back("app: USDT probes need the eBPF backend; not attached");
  if (s->available_ == 0) return ErrStatus("none of the requested probe groups is implemented by jackdaw.ko");
  if (s->mono_) {
    // Two pairs a few ms apart give a first frequency (unless the kernel
    // publishes one); SyncClock adds one a second.
    s->fit_.Add(SampleClockPair());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    s->SyncClock();
  }
  return s;
}

void KmodSession::SyncClock() {
  fit_.Add(SampleClockPair());
  mapping_ = fit_.Mapping();
  last_sync_ns_ = MonotonicNs();
}

Status KmodSession::AddTgid(uint32_t tgid) {
  if (ioctl(fd_, JDW_IOC_ADD_TGID, &tgid) != 0)
    return ErrStatus("jackdaw.ko refused pid %u for the filter: %s", tgid, strerror(errno));
  return Status::Ok();
}

Status KmodSession::SetSyscallFilter(const std::vector<int>& syscalls) {
  jdw_kmod_filter fl{};
  if (filter_tgid_) fl.filter_flags |= JDW_FILTER_TGID;
  for (int nr : syscalls) {
    if (nr < 0 || nr >= JDW_MAX_SYSCALLS) return ErrStatus("syscall number %d out of range", nr);
    fl.syscall_bitmap[nr / 64] |= 1ull << (nr % 64);
  }
  if (!syscalls.empty()) fl.filter_flags |= JDW_FILTER_SYSCALL;
  if (ioctl(fd_, JDW_IOC_SET_FILTER, &fl) != 0) return ErrStatus("jackdaw.ko refused the filter: %s", strerror(errno));
  return Status::Ok();
}

void KmodSession::Deliver(RecordSink& sink, uint32_t cpu, const uint8_t* rec, size_t size) {
  if (!mono_) return sink.OnRecord(cpu, rec, size);
  // The ring is mapped read-only: convert a copy.
  scratch_.assign(rec, rec + size);
  RecordTimesToMono(scratch_.data(), size, mapping_);
  sink.OnRecord(cpu, scratch_.data(), size);
}

KmodSession::~KmodSession() {
  if (area_) munmap(area_, area_bytes_);
  if (fd_ >= 0) close(fd_);  // the module unregisters every probe on release
}

const std::string& KmodSession::attach_mode(uint32_t group) const {
  return (available_ & (1u << group)) ? mode_ : none_;
}

Status KmodSession::Enable(uint32_t group) {
  if (group >= JDW_GROUP_MAX || !(available_ & (1u << group)))
    return ErrStatus("probe group %s is not available in this session", trace::GroupName(group));
  if (enabled_ & (1u << group)) return Status::Ok();
  if (ioctl(fd_, JDW_IOC_ENABLE, &group) != 0)
    return ErrStatus("jackdaw.ko could not register the %s probes: %s", trace::GroupName(group),
                     strerror(errno));
  enabled_ |= 1u << group;
  return Status::Ok();
}

Status KmodSession::Disable(uint32_t group) {
  if (group >= JDW_GROUP_MAX || !(enabled_ & (1u << group))) return Status::Ok();
  enabled_ &= ~(1u << group);
  if (ioctl(fd_, JDW_IOC_DISABLE, &group) != 0)
    return ErrStatus("jackdaw.ko could not unregister the %s probes: %s", trace::GroupName(group),
                     strerror(errno));
  return Status::Ok();
}

Status KmodSession::EnableAll() {
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g)
    if (available_ & (1u << g)) RETURN_IF_ERROR(Enable(g));
  return Status::Ok();
}

void KmodSession::DisableAll() {
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) (void)Disable(g);
}

StatusOr<int> KmodSession::DrainOnce(RecordSink& sink) {
  int delivered = 0;
  busiest_bytes_ = 0;
  for (uint32_t c = 0; c < ncpus_; ++c) {
    const jdw_kmod_meta* m = Meta(area_, ring_bytes_, c);
    const uint64_t head = __atomic_load_n(&m->head, __ATOMIC_ACQUIRE);
    if (head == tails_[c]) continue;
    const uint8_t* ring = reinterpret_cast<const uint8_t*>(m) + JDW_KMOD_META_BYTES;
    ASSIGN_OR_RETURN(RingWalk w, WalkRing(ring, ring_bytes_, tails_[c], head,
                                          [&](const uint8_t* rec, size_t size) { Deliver(sink, c, rec, size); }));
    jdw_kmod_consume cm{c, 0, w.tail};
    if (ioctl(fd_, JDW_IOC_CONSUME, &cm) != 0)
      return ErrStatus("jackdaw.ko refused to free ring space of cpu %u: %s", c, strerror(errno));
    busiest_bytes_ = std::max<uint64_t>(busiest_bytes_, w.tail - tails_[c]);
    tails_[c] = w.tail;
    delivered += static_cast<int>(w.records);
  }
  return delivered;
}

StatusOr<int> KmodSession::Poll(RecordSink& sink, int timeout_ms) {
  if (mono_ && MonotonicNs() - last_sync_ns_ >= 1'000'000'000ull) SyncClock();
  // The module never wakes a reader (a wakeup from inside sched_switch
  // could deadlock on the runqueue lock), so waiting is a sleep. Like the
  // eBPF backend, which is never woken either, a poll sleeps unless a ring
  // is filling fast: returning at once whenever there were records would
  // spin on the records of this process's own ioctls.
  ASSIGN_OR_RETURN(int n, DrainOnce(sink));
  if (timeout_ms <= 0 || busiest_bytes_ >= ring_bytes_ / 4) return n;
  std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  ASSIGN_OR_RETURN(int m, DrainOnce(sink));
  return n + m;
}

StatusOr<int> KmodSession::Drain(RecordSink& sink) { return DrainOnce(sink); }

std::vector<std::vector<uint64_t>> KmodSession::ReadLosses() const {
  std::vector<std::vector<uint64_t>> out(ncpus_, std::vector<uint64_t>(JDW_GROUP_MAX, 0));
  for (uint32_t c = 0; c < ncpus_; ++c) {
    const jdw_kmod_meta* m = Meta(area_, ring_bytes_, c);
    for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) out[c][g] = __atomic_load_n(&m->lost[g], __ATOMIC_RELAXED);
  }
  return out;
}

}  // namespace jackdaw::capture
