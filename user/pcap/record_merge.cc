#include "pcap/record_merge.h"

#include <algorithm>
#include <queue>

namespace jackdaw::pcap {
namespace {

// One time-ordered stream of records: a CPU's chunks, or the extra records.
struct Stream {
  std::vector<const trace::RecordChunk*> chunks;
  size_t chunk = 0, off = 0;
  const std::vector<jdw_net_packet_record>* extra = nullptr;
  size_t next = 0;

  const jdw_record_header* Peek() {
    if (extra) return next < extra->size() ? &(*extra)[next].hdr : nullptr;
    while (chunk < chunks.size()) {
      const trace::RecordChunk* c = chunks[chunk];
      if (off + sizeof(jdw_record_header) <= c->len) {
        const auto* h = reinterpret_cast<const jdw_record_header*>(c->data + off);
        if (h->size >= sizeof(jdw_record_header) && off + h->size <= c->len) return h;
      }
      chunk++;
      off = 0;
    }
    return nullptr;
  }
  void Advance(const jdw_record_header* h) {
    if (extra) next++;
    else off += h->size;
  }
};

}  // namespace

void ForEachRecordMerged(const trace::TraceReader& reader, std::vector<jdw_net_packet_record>& extra,
                         const std::function<void(const jdw_record_header*)>& fn) {
  std::stable_sort(extra.begin(), extra.end(),
                   [](const jdw_net_packet_record& a, const jdw_net_packet_record& b) { return a.hdr.ts < b.hdr.ts; });
  std::vector<Stream> streams;
  for (const trace::RecordChunk& c : reader.chunks()) {
    if (c.cpu >= streams.size()) streams.resize(size_t{c.cpu} + 1);
    streams[c.cpu].chunks.push_back(&c);
  }
  streams.emplace_back();
  streams.back().extra = &extra;
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
    s.Advance(h);
    if (const jdw_record_header* n = s.Peek()) heads.emplace(n->ts, i);
  }
}

}  // namespace jackdaw::pcap
