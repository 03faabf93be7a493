#include "cli/live_pipeline.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "capture/clock_sync.h"
#include "common/clock.h"
#include "trace/record_decoder.h"
#include "trace/syscall_names.h"
#include "trace/trace_writer.h"

namespace jackdaw::cli {

StatusOr<std::unique_ptr<LivePipeline>> LivePipeline::Create(const schema::Schema& schema,
                                                             const trace::TraceMeta& meta,
                                                             const LivePipelineOptions& options) {
  std::unique_ptr<LivePipeline> p(new LivePipeline());
  p->options_ = options;
  ASSIGN_OR_RETURN(p->model_, model::StreamingModel::Create(options.model, options.on_assign));
  p->canonicalize_ = std::make_unique<canonical::Canonicalizer>(options.model.model.canonical);
  join::Options jo;
  jo.reorder_window = options.reorder_window_ns;
  LivePipeline* self = p.get();
  ASSIGN_OR_RETURN(p->extractor_, join::Extractor::Create(schema, meta, jo, [self](model::Request&& r) {
                     // Timed-out requests waited for the schema's timeout by
                     // definition; they are counted, not timed.
                     if (r.timed_out) {
                       ++self->delay_.timed_out;
                     } else {
                       const uint64_t now = MonotonicNs();
                       const uint64_t d = now > r.end_ns ? now - r.end_ns : 0;
                       ++self->delay_.requests;
                       self->delay_.max_ns = std::max(self->delay_.max_ns, d);
                     }
                     if (self->request_hook_) self->request_hook_(r);
                     if (self->canonical_hook_ && !r.incomplete) {
                       canonical::CanonicalRequest c = (*self->canonicalize_)(r);
                       self->canonical_hook_(r, c);
                       self->model_->Add(std::move(r), std::move(c));
                       return;
                     }
                     self->model_->Add(std::move(r));
                   }));
  return p;
}

inline void LivePipeline::Take(uint32_t cpu, jdw_record_header* h) {
  window_.Took(h->ts);
  newest_ts_ = std::max<uint64_t>(newest_ts_, h->ts);
  ++records_;
  if (counter_) counter_->CountRecord(*h);
  if (cpu >= drained_.size()) drained_.resize(cpu + 1);
  drained_[cpu].push_back(h);
}

void LivePipeline::EndDrain() {
  // k-way merge of the CPUs' records by timestamp (the head first in (ts,
  // cpu) order: ties go to the lower CPU), each CPU's own order kept. Runs
  // of one CPU that stay at or below the other CPUs' earliest head go to the
  // join in one call: with few CPUs, most records.
  const auto ncpu = static_cast<uint32_t>(drained_.size());
  next_.assign(ncpu, 0);
  const auto push_run = [&](uint32_t c, uint64_t bound) {
    const std::vector<jdw_record_header*>& v = drained_[c];
    const size_t from = next_[c];
    size_t i = from + 1;
    while (i < v.size() && v[i]->ts <= bound) ++i;
    extractor_->Push(v.data() + from, i - from);
    next_[c] = i;
    return i < v.size();
  };
  if (ncpu <= kScanMergeCpus) {
    // Few CPUs: a scan of the heads costs less than a heap.
    for (;;) {
      uint32_t c = UINT32_MAX;
      uint64_t first = UINT64_MAX, bound = UINT64_MAX;
      for (uint32_t k = 0; k < ncpu; ++k) {
        if (next_[k] == drained_[k].size()) continue;
        const uint64_t ts = drained_[k][next_[k]]->ts;
        if (c == UINT32_MAX || ts < first) {
          bound = first;
          first = ts;
          c = k;
        } else if (ts < bound) {
          bound = ts;
        }
      }
      if (c == UINT32_MAX) break;
      push_run(c, bound);
    }
  } else {
    // A min-heap of the heads.
    heads_.clear();
    for (uint32_t c = 0; c < ncpu; ++c)
      if (!drained_[c].empty()) heads_.push_back({drained_[c][0]->ts, c});
    const auto later = [](const std::pair<uint64_t, uint32_t>& a, const std::pair<uint64_t, uint32_t>& b) {
      return a > b;
    };
    std::make_heap(heads_.begin(), heads_.end(), later);
    while (!heads_.empty()) {
      std::pop_heap(heads_.begin(), heads_.end(), later);
      const uint32_t c = heads_.back().second;
      heads_.pop_back();
      if (push_run(c, heads_.empty() ? UINT64_MAX : heads_.front().first)) {
        heads_.push_back({drained_[c][next_[c]]->ts, c});
        std::push_heap(heads_.begin(), heads_.end(), later);
      }
    }
  }
  for (auto& v : drained_) v.clear();
}

void LivePipeline::OnRecord(uint32_t cpu, const uint8_t* data, size_t size) {
  if (size < sizeof(jdw_record_header) || size > RecordArena::kBlockBytes) return;
  constexpr size_t kEnterBytes = (sizeof(jdw_sys_enter_record) + 7) & ~size_t{7};
  constexpr size_t kExitBytes = (sizeof(jdw_sys_exit_record) + 7) & ~size_t{7};
  jdw_record_header in;
  memcpy(&in, data, sizeof(in));
  flight_.AppendStreaming(data, size, in.ts);
  // A combined syscall becomes its two events, as the capture session
  // would deliver them (trace/record_decoder.h), in the same order. One
  // too short to hold its call is passed on as it is, as the session does.
  if (trace::IsWireRecord(in.type) && size >= sizeof(jdw_sys_call_record)) {
    uint8_t* dst = window_.Allocate(kEnterBytes + kExitBytes);
    auto* enter = reinterpret_cast<jdw_sys_enter_record*>(dst);
    auto* exit = reinterpret_cast<jdw_sys_exit_record*>(dst + kEnterBytes);
    trace::ExpandSysCall(data, enter, exit);
    Take(cpu, &enter->hdr);
    Take(cpu, &exit->hdr);
    return;
  }
  uint8_t* dst = window_.Allocate((size + 7) & ~size_t{7});
  memcpy(dst, data, size);
  Take(cpu, reinterpret_cast<jdw_record_header*>(dst));
}

void LivePipeline::AdvanceTo(uint64_t ts) { extractor_->AdvanceTo(ts); }

void LivePipeline::Trim() {
  // Twice the window: the join pops a record once it is a window older than
  // the newest; the slack covers CPUs whose rings drained late. The flight
  // recorder keeps at least as much, so a snapshot holds what the join
  // still works on, unless its byte cap is smaller still.
  window_.Trim(2 * options_.reorder_window_ns, newest_ts_);
  const uint64_t cut = flight_.Trim(FlightSpanNs(), newest_ts_, options_.flight_bytes);
  if (cut) flight_cut_ts_ = cut;
}

uint64_t LivePipeline::FlightSpanNs() const { return std::max(2 * options_.reorder_window_ns, options_.flight_ns); }

LivePipeline::FlightWindow LivePipeline::flight_window() const {
  FlightWindow w;
  w.asked_s = double(options_.flight_ns) / 1e9;
  const uint64_t oldest = flight_.oldest_ts();
  w.held_s = oldest && newest_ts_ > oldest ? double(newest_ts_ - oldest) / 1e9 : 0;
  w.bytes = flight_.bytes();
  w.cap_bytes = options_.flight_bytes;
  w.capped = flight_cut_ts_ && flight_cut_ts_ + FlightSpanNs() >= newest_ts_;
  return w;
}

void LivePipeline::Finish() {
  EndDrain();
  extractor_->Finish();
  (void)model_->Finish();
}

LivePipeline::Delay LivePipeline::TakeDelay() {
  Delay d = delay_;
  delay_ = Delay{};
  return d;
}

StatusOr<uint64_t> LivePipeline::SaveSnapshot(const std::string& path, const nlohmann::json& header) const {
  std::map<uint32_t, std::vector<const jdw_record_header*>> per_cpu;
  for (const jdw_record_header* h : flight_.Records()) per_cpu[h->cpu].push_back(h);
  ASSIGN_OR_RETURN(auto writer, trace::TraceWriter::Create(path, header));
  uint64_t total = 0;
  std::vector<uint8_t> buf;
  for (auto& [cpu, recs] : per_cpu) {
    std::stable_sort(recs.begin(), recs.end(),
                     [](const jdw_record_header* a, const jdw_record_header* b) { return a->ts < b->ts; });
    buf.clear();
    uint64_t n = 0;
    for (const jdw_record_header* h : recs) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(h);
      buf.insert(buf.end(), p, p + h->size);
      buf.resize((buf.size() + 7) & ~size_t{7}, 0);
      if (++n % 4096 == 0 || buf.size() >= (1u << 20)) {
        RETURN_IF_ERROR(writer->WriteRecords(cpu, buf.data(), buf.size(), n));
        total += n;
        n = 0;
        buf.clear();
      }
    }
    if (n) RETURN_IF_ERROR(writer->WriteRecords(cpu, buf.data(), buf.size(), n));
    total += n;
  }
  RETURN_IF_ERROR(writer->Finish({{"flight_recorder", true}}));
  return total;
}

trace::TraceMeta LiveMeta(const capture::CaptureBackend& session, const std::vector<capture::UsdtTarget>& usdt) {
  trace::TraceMeta m;
  m.abi_version = JDW_ABI_VERSION;
  m.ncpus = session.ncpus();
  m.backend = session.name();
  m.time.base = trace::Timebase::kMonoNs;
  m.syscall_names = trace::SyscallNames();
  for (const auto& t : usdt) m.app_probes.push_back(t.provider + ":" + t.name);
  return m;
}

}  // namespace jackdaw::cli
