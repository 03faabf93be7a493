#include "pcap/record_merge.h"

#include <algorithm>
#include <optional>
#include <queue>

namespace jackdaw::pcap {
namespace {

// One time-ordered stream of records: a CPU's chunks, or the extra records.
struct Stream {
  std::optional<trace::RecordCursor> cpu;  // one chunk in memory at a time
  const std::vector<jdw_net_packet_record>* extra = nullptr;
  size_t next = 0;

  const jdw_record_header* Peek() {
    if (extra) return next < extra->size() ? &(*extra)[next].hdr : nullptr;
    return cpu->Peek();
  }
  void Advance(const jdw_record_header* h) {
    if (extra) next++;
    else cpu->Advance(h);
  }
};

}  // namespace

void ForEachRecordMerged(const trace::TraceReader& reader, std::vector<jdw_net_packet_record>& extra,
                         uint64_t keep, const std::function<void(const jdw_record_header*)>& fn,
                         const std::function<void()>& at_end) {
  std::stable_sort(extra.begin(), extra.end(),
                   [](const jdw_net_packet_record& a, const jdw_net_packet_record& b) { return a.hdr.ts < b.hdr.ts; });
  std::vector<Stream> streams;
  for (trace::RecordCursor& c : reader.CursorsByCpu(/*retain=*/true)) streams.emplace_back().cpu.emplace(std::move(c));
  streams.emplace_back();
  streams.back().extra = &extra;
  uint64_t watermark = 0;
  using Head = std::pair<uint64_t, uint32_t>;  // (ts, stream)
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (uint32_t i = 0; i < streams.size(); i++)
    if (const jdw_record_header* h = streams[i].Peek()) heads.emplace(h->ts, i);
  while (!heads.empty()) {
    Stream& s = streams[heads.top().second];
    const uint32_t i = heads.top().second;
    heads.pop();
    const jdw_record_header* h = s.Peek();
    fn(h);
    watermark = std::max<uint64_t>(watermark, h->ts);
    s.Advance(h);
    if (s.cpu && watermark > keep) s.cpu->ReleaseBefore(watermark - keep);
    if (const jdw_record_header* n = s.Peek()) heads.emplace(n->ts, i);
  }
  // While the retained chunks still live: the join's Finish() drains its
  // reorder window, which points into them.
  if (at_end) at_end();
}

}  // namespace jackdaw::pcap
