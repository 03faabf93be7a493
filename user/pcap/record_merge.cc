#include "pcap/record_merge.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <queue>

namespace jackdaw::pcap {
namespace {

// Packets read as they are needed: a window of them sorted ahead, the ones
// handed out kept until the merge is `keep` past them.
class PacketStream {
 public:
  PacketStream(const PacketSource* source, uint64_t keep) : source_(source), keep_(keep) {}
  const jdw_record_header* Peek() {
    Fill();
    return ahead_.empty() ? nullptr : &ahead_.top().hdr;
  }
  // Moves the head to the handed-out records (a deque: their addresses stay).
  const jdw_record_header* Take() {
    handed_.push_back(ahead_.top());
    ahead_.pop();
    return &handed_.back().hdr;
  }
  void ReleaseBefore(uint64_t ts) {
    while (!handed_.empty() && handed_.front().hdr.ts < ts) handed_.pop_front();
  }

 private:
  struct Later {
    bool operator()(const jdw_net_packet_record& a, const jdw_net_packet_record& b) const {
      return a.hdr.ts > b.hdr.ts;
    }
  };
  void Fill() {
    while (!ended_ && (ahead_.empty() || newest_ < ahead_.top().hdr.ts + keep_)) {
      std::optional<jdw_net_packet_record> r = (*source_)();
      if (!r) {
        ended_ = true;
        break;
      }
      newest_ = std::max<uint64_t>(newest_, r->hdr.ts);
      ahead_.push(*r);
    }
  }
  const PacketSource* source_;
  uint64_t keep_;
  bool ended_ = false;
  uint64_t newest_ = 0;
  std::priority_queue<jdw_net_packet_record, std::vector<jdw_net_packet_record>, Later> ahead_;
  std::deque<jdw_net_packet_record> handed_;
};

// One time-ordered stream of records: a CPU's chunks, the extra records, or
// a packet source.
struct Stream {
  std::optional<trace::RecordCursor> cpu;  // one chunk in memory at a time
  const std::vector<jdw_net_packet_record>* extra = nullptr;
  std::optional<PacketStream> packets;
  size_t next = 0;

  const jdw_record_header* Peek() {
    if (extra) return next < extra->size() ? &(*extra)[next].hdr : nullptr;
    if (packets) return packets->Peek();
    return cpu->Peek();
  }
  // Hands out the head record (its address stays valid as documented).
  const jdw_record_header* Take() {
    if (packets) return packets->Take();
    const jdw_record_header* h = Peek();
    if (extra) next++;
    else cpu->Advance(h);
    return h;
  }
  void ReleaseBefore(uint64_t ts) {
    if (cpu) cpu->ReleaseBefore(ts);
    if (packets) packets->ReleaseBefore(ts);
  }
};

void Merge(const trace::TraceReader& reader, std::vector<Stream>& streams, uint64_t keep,
           const std::function<void(const jdw_record_header*)>& fn, const std::function<void()>& at_end) {
  for (trace::RecordCursor& c : reader.CursorsByCpu(/*retain=*/true)) streams.emplace_back().cpu.emplace(std::move(c));
  uint64_t watermark = 0;
  using Head = std::pair<uint64_t, uint32_t>;  // (ts, stream)
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (uint32_t i = 0; i < streams.size(); i++)
    if (const jdw_record_header* h = streams[i].Peek()) heads.emplace(h->ts, i);
  while (!heads.empty()) {
    const uint32_t i = heads.top().second;
    Stream& s = streams[i];
    heads.pop();
    const jdw_record_header* h = s.Take();
    // Released before fn: the record just taken is never older than the
    // watermark, so it stays.
    watermark = std::max<uint64_t>(watermark, h->ts);
    fn(h);
    if (watermark > keep) s.ReleaseBefore(watermark - keep);
    if (const jdw_record_header* n = s.Peek()) heads.emplace(n->ts, i);
  }
  // While the retained chunks still live: the join's Finish() drains its
  // reorder window, which points into them.
  if (at_end) at_end();
}

}  // namespace

void ForEachRecordMerged(const trace::TraceReader& reader, std::vector<jdw_net_packet_record>& extra,
                         uint64_t keep, const std::function<void(const jdw_record_header*)>& fn,
                         const std::function<void()>& at_end) {
  std::stable_sort(extra.begin(), extra.end(),
                   [](const jdw_net_packet_record& a, const jdw_net_packet_record& b) { return a.hdr.ts < b.hdr.ts; });
  std::vector<Stream> streams(1);
  streams.back().extra = &extra;
  Merge(reader, streams, keep, fn, at_end);
}

void ForEachRecordMerged(const trace::TraceReader& reader, const std::vector<PacketSource>& sources, uint64_t keep,
                         const std::function<void(const jdw_record_header*)>& fn,
                         const std::function<void()>& at_end) {
  std::vector<Stream> streams(sources.size());
  for (size_t i = 0; i < sources.size(); i++) streams[i].packets.emplace(&sources[i], keep);
  Merge(reader, streams, keep, fn, at_end);
}

}  // namespace jackdaw::pcap
