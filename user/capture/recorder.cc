#include "capture/recorder.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <utility>

#include "common/clock.h"
#include "trace/event_table.h"
#include "trace/loss_intervals_json.h"
#include "trace/record_decoder.h"
#include "trace/syscall_names.h"

namespace jackdaw::capture {
namespace {

std::string ReadComm(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

void ScanTgid(uint32_t tgid, nlohmann::json* out) {
  const std::string dir = "/proc/" + std::to_string(tgid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    (*out)[e->d_name] = {{"tgid", tgid}, {"comm", ReadComm(dir + "/" + e->d_name + "/comm")}};
  }
  closedir(d);
}

}  // namespace

nlohmann::json ClockJson(const trace::ClockMapping& m) {
  return {{"method", m.method},           {"tsc_per_ns", m.tsc_per_ns},
          {"ref_mono_ns", m.ref_mono_ns}, {"ref_tsc", m.ref_tsc},
          {"wall_minus_mono_ns", m.wall_minus_mono_ns},
          {"fit_max_residual_ns", m.fit_max_residual_ns}};
}

nlohmann::json ScanTasks(const std::vector<uint32_t>& tgids) {
  nlohmann::json out = nlohmann::json::object();
  if (!tgids.empty()) {
    for (uint32_t t : tgids) ScanTgid(t, &out);
    return out;
  }
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') ScanTgid(strtoul(e->d_name, nullptr, 10), &out);
  closedir(d);
  return out;
}

StatusOr<std::unique_ptr<Recorder>> Recorder::Create(const RecorderOptions& opts) {
  std::unique_ptr<Recorder> r(new Recorder());
  r->opts_ = opts;
  r->pacer_ = SweepPacer(1.0 / 16, opts.poll_timeout_ms);
  ASSIGN_OR_RETURN(r->session_, OpenBackend(opts.capture, opts.backend, BackendClock::kNative, &r->backend_choice_));
  r->stages_.resize(r->session_->ncpus());
  for (auto& s : r->stages_) s.buf.reserve(opts.flush_bytes + 4096);
  return r;
}

Recorder::~Recorder() {
  // The thread clears running_ itself when a step fails, so joinable() and
  // not running_ says whether there is a thread to join.
  running_ = false;
  if (thread_.joinable()) thread_.join();
}

nlohmann::json Recorder::Header() const {
  utsname u{};
  uname(&u);
  std::vector<std::string> groups, modes;
  for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) {
    if (session_->available_groups() & (1u << g)) {
      groups.push_back(trace::GroupName(g));
      modes.push_back(std::string(trace::GroupName(g)) + ":" + session_->attach_mode(g));
    }
  }
  std::vector<std::string> probes;
  for (const auto& t : opts_.capture.usdt) probes.push_back(t.provider + ":" + t.name);
  nlohmann::json h = {
      {"format", "jdw"},
      {"abi_version", JDW_ABI_VERSION},
      {"host", u.nodename},
      {"kernel", std::string(u.release) + " " + u.version},
      {"ncpus", session_->ncpus()},
      {"backend", session_->name()},
      {"backend_choice", backend_choice_},
      {"timebase", session_->timebase() == trace::Timebase::kTsc ? "tsc" : "mono_ns"},
      {"clock_source", session_->clock_source()},
      {"probe_groups", groups},
      {"attach_modes", modes},
      {"ring_bytes_per_cpu", opts_.capture.ring_bytes_per_cpu},
      {"filter_tgids", opts_.capture.tgids},
      {"syscall_filter", opts_.capture.syscalls},
      {"command", opts_.command},
      {"app_probes", probes},
      {"syscall_names", trace::SyscallNames()},
      {"tasks", ScanTasks(opts_.capture.filter_tgid ? opts_.capture.tgids : std::vector<uint32_t>{})},
      {"clock", ClockJson(clock_.Mapping())},
      {"warnings", session_->warnings()},
      {"loss_intervals_version", trace::kLossIntervalsVersion},
      {"sample", {{"mode", !opts_.capture.sample ? "off" : opts_.sample_auto ? "auto" : "fixed"},
                  {"rate", opts_.capture.sample ? opts_.capture.sample_rate : 1.0}}},
  };
  return h;
}

Status Recorder::Start() {
  if (opts_.capture.sample && std::string(session_->name()) != "bpf")
    return ErrStatus("--sample needs the eBPF backend, and the %s backend was chosen: the module records every "
                     "connection (use --backend bpf, or drop --sample)",
                     session_->name());
  clock_.Add(SampleClockPair());
  last_clock_ns_ = MonotonicNs();
  ASSIGN_OR_RETURN(writer_, trace::AsyncTraceWriter::Create(opts_.output, Header(), opts_.compression));
  const uint64_t before = MonotonicNs();
  losses_.Start(before, session_->ReadLosses());
  if (opts_.capture.sample) {
    sampler_ = SampleController(opts_.capture.sample_rate);
    NoteSampleRate(before, sampler_.rate());
  }
  RETURN_IF_ERROR(session_->EnableAll());
  return Status::Ok();
}

void Recorder::OnRecord(uint32_t cpu, const uint8_t* data, size_t size) {
  // A record whose header does not give its own size cannot be stored:
  // every later walk of the chunk steps by that size. No producer writes
  // one; dropped and counted, never trusted.
  uint16_t hsize = 0;
  if (size >= sizeof(jdw_record_header))
    memcpy(&hsize, data + offsetof(jdw_record_header, size), sizeof(hsize));
  if (size < sizeof(jdw_record_header) || hsize != size || cpu >= stages_.size()) {
    ++malformed_;
    return;
  }
  CpuStage& s = stages_[cpu];
  s.buf.insert(s.buf.end(), data, data + size);
  ++s.count;
  {
    uint16_t type;
    uint64_t ts;
    memcpy(&type, data + offsetof(jdw_record_header, type), sizeof(type));
    memcpy(&ts, data + offsetof(jdw_record_header, ts), sizeof(ts));
    if (ts < s.max_ts) s.sorted = false;
    s.max_ts = std::max(s.max_ts, ts);
    s.min_ts = std::min(s.min_ts, ts);
    if (trace::IsWireRecord(type)) {
      ++type_records_[JDW_EVENT_SYS_ENTER];
      ++type_records_[JDW_EVENT_SYS_EXIT];
      ++s.wire;
    } else if (type < JDW_EVENT_MAX) {
      ++type_records_[type];
    }
  }
  if (s.buf.size() >= opts_.flush_bytes && deferred_.ok()) {
    Status st = FlushCpu(cpu);
    if (!st.ok()) deferred_ = st;
  }
}

Status Recorder::FlushCpu(uint32_t cpu) {
  CpuStage& s = stages_[cpu];
  s.last_flush_ns = MonotonicNs();
  if (s.count == 0) return Status::Ok();
  // Sort through an index only when a record arrived out of order (rare:
  // OnRecord tracked it).
  struct Ref {
    uint64_t ts;
    uint32_t off, size;
  };
  const bool sorted = s.sorted;
  const uint64_t prev = s.max_ts;
  const uint8_t* out = s.buf.data();
  const uint64_t first_ts = s.min_ts;
  if (!sorted) {
    std::vector<Ref> refs;
    refs.reserve(s.count);
    for (size_t off = 0; off < s.buf.size();) {
      const auto* h = reinterpret_cast<const jdw_record_header*>(s.buf.data() + off);
      refs.push_back({h->ts, static_cast<uint32_t>(off), h->size});
      off += h->size;
    }
    std::stable_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.ts < b.ts; });
    sort_scratch_.resize(s.buf.size());
    size_t w = 0;
    for (const Ref& r : refs) {
      memcpy(sort_scratch_.data() + w, s.buf.data() + r.off, r.size);
      w += r.size;
    }
    out = sort_scratch_.data();
  }
  if (first_ts < s.last_written_ts) {
    uint64_t late = 0;
    for (size_t off = 0; off < s.buf.size();) {
      const auto* h = reinterpret_cast<const jdw_record_header*>(out + off);
      if (h->ts < s.last_written_ts) ++late;
      off += h->size;
    }
    late_ += late;
  }
  // Hand the sorted bytes to the writer thread and stage into a recycled
  // buffer: no copy when already sorted (the usual case).
  std::vector<uint8_t> chunk;
  if (sorted) {
    chunk = writer_->TakeBuffer();
    chunk.swap(s.buf);
  } else {
    chunk.assign(out, out + s.buf.size());
    s.buf.clear();
  }
  if (s.buf.capacity() < opts_.flush_bytes) s.buf.reserve(opts_.flush_bytes + 4096);
  const uint64_t count = s.count;
  records_ += count + s.wire;  // events, as the reader will count them
  wire_ += s.wire;
  s.count = s.wire = 0;
  s.last_written_ts = std::max(s.last_written_ts, prev);
  s.max_ts = 0;
  s.min_ts = ~0ull;
  s.sorted = true;
  RETURN_IF_ERROR(writer_->Submit(cpu, std::move(chunk), count));
  bytes_ = writer_->bytes_written();
  return Status::Ok();
}

Status Recorder::FlushAll() {
  for (uint32_t c = 0; c < stages_.size(); ++c) RETURN_IF_ERROR(FlushCpu(c));
  return Status::Ok();
}

Status Recorder::SyncClock() {
  clock_.Add(SampleClockPair());
  last_clock_ns_ = MonotonicNs();
  // The loss counters ride along (cumulative), so a recording killed before
  // its footer still tells how much it lost up to its last second.
  auto losses = session_->ReadLosses();
  uint64_t lost = 0;
  for (const auto& c : losses)
    for (uint64_t v : c) lost += v;
  lost_ = lost;
  bytes_ = writer_->bytes_written();
  return writer_->SubmitMeta({{"clock", ClockJson(clock_.Mapping())},
                              {"lost", losses},
                              {"lost_total", lost},
                              {"loss_intervals", trace::LossIntervalsJson(losses_.TakeNew())},
                              {"sample_rates", std::exchange(unwritten_rates_, nlohmann::json::array())},
                              {"sample_left_out_exchanges", session_->LeftOutExchanges()}});
}

void Recorder::NoteSampleRate(uint64_t ts, double rate) {
  unwritten_rates_.push_back({ts, rate});
  sample_rate_ = rate;
  if (rate < sample_rate_min_) sample_rate_min_ = rate;
}

Status Recorder::Step() {
  // The reader sleeps between sweeps (capture/sweep_pacer.h) until the
  // fullest ring reaches 1/16, never longer than poll_timeout_ms: a burst
  // is drained at the reader's full speed; a steady load (nginx under wrk
  // fills 1/250 of a ring in 10 ms) every poll_timeout_ms in batches
  // instead of every millisecond.
  const uint64_t sweep_from = MonotonicNs();
  ASSIGN_OR_RETURN(int n, session_->Poll(*this, pacer_.NapMs()));
  if (!deferred_.ok()) return deferred_;
  const uint64_t now = MonotonicNs();
  if (now - last_loss_read_ns_ >= kLossReadEveryNs) {
    lost_ = ReadLossesInto(sweep_from);
    last_loss_read_ns_ = now;
  }
  double fill = session_->last_fill();
  // Without the backend's figure: records of about 48 bytes, all CPUs'
  // counted against one ring, which errs towards sweeping again.
  if (fill < 0) fill = double(std::max(n, 0)) * 48 / double(opts_.capture.ring_bytes_per_cpu);
  pacer_.OnSweep(now, fill);
  if (opts_.sample_auto && sampler_.Observe(now, lost_, fill, session_->last_wait_ns())) {
    RETURN_IF_ERROR(session_->SetSampleRate(sampler_.rate()));
    NoteSampleRate(now, sampler_.rate());
  }
  for (uint32_t c = 0; c < stages_.size(); ++c)
    if (now - stages_[c].last_flush_ns >= opts_.flush_interval_ns) RETURN_IF_ERROR(FlushCpu(c));
  if (now - last_clock_ns_ >= opts_.clock_interval_ns) RETURN_IF_ERROR(SyncClock());
  return Status::Ok();
}

bool Recorder::running() const { return running_; }

Status Recorder::StartBackground() {
  RETURN_IF_ERROR(Start());
  running_ = true;
  thread_ = std::thread([this] {
    // The reader must keep up with producers on every CPU: ahead of the
    // machine's ordinary tasks (nice -10) without real-time priority, so a
    // busy drain can never starve the system. Not fatal without the right.
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), -10);
    while (running_) {
      Status st = Step();
      if (!st.ok()) {
        thread_status_ = st;
        running_ = false;
      }
    }
  });
  return Status::Ok();
}

Status Recorder::Stop() {
  if (stopped_) return Status::Ok();
  stopped_ = true;
  if (thread_.joinable()) {
    running_ = false;
    thread_.join();
  }
  session_->DisableAll();
  // Everything submitted before the detach is in the rings now.
  const uint64_t drain_from = MonotonicNs();
  for (int i = 0; i < 4; ++i) {
    ASSIGN_OR_RETURN(int n, session_->Drain(*this));
    if (n == 0) break;
  }
  ReadLossesInto(drain_from);
  if (!deferred_.ok()) return deferred_;
  RETURN_IF_ERROR(FlushAll());
  clock_.Add(SampleClockPair());
  auto losses = session_->ReadLosses();
  uint64_t lost = 0;
  for (const auto& c : losses)
    for (uint64_t v : c) lost += v;
  lost_ = lost;
  nlohmann::json footer = {{"records", records_.load()},
                           {"syscalls_combined", wire_.load()},
                           {"lost", losses},
                           {"lost_total", lost},
                           {"loss_intervals", trace::LossIntervalsJson(losses_.TakeNew())},
                           {"sample_rates", std::exchange(unwritten_rates_, nlohmann::json::array())},
                           {"sample_left_out_exchanges", session_->LeftOutExchanges()},
                           {"late_records", late_.load()},
                           {"malformed_records", malformed_.load()},
                           {"clock", ClockJson(clock_.Mapping())}};
  RETURN_IF_ERROR(writer_->Finish(footer));
  bytes_ = writer_->bytes_written();
  return thread_status_;
}

uint64_t Recorder::ReadLossesInto(uint64_t drain_from_ns) {
  const auto counts = session_->ReadLosses();
  losses_.Observe(MonotonicNs(), counts, drain_from_ns);
  uint64_t lost = 0;
  for (const auto& c : counts)
    for (uint64_t v : c) lost += v;
  return lost;
}

RecorderStats Recorder::stats() const {
  RecorderStats st{records_.load(), wire_.load(), bytes_.load(), lost_.load(), late_.load()};
  if (writer_) {
    st.record_bytes_raw = writer_->record_bytes_raw();
    st.record_bytes_stored = writer_->record_bytes_stored();
    st.writer_stalls = writer_->stalls();
  }
  st.sample_rate = sample_rate_;
  st.sample_rate_min = sample_rate_min_;
  return st;
}

std::array<uint64_t, JDW_GROUP_MAX> Recorder::group_records() const {
  std::array<uint64_t, JDW_GROUP_MAX> out{};
  for (uint16_t t = 0; t < JDW_EVENT_MAX; ++t) {
    if (!type_records_[t]) continue;
    const trace::EventDesc* d = trace::FindEvent(t);
    if (d && d->group < JDW_GROUP_MAX) out[d->group] += type_records_[t];
  }
  return out;
}

}  // namespace jackdaw::capture
