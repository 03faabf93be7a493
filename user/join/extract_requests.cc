// ExtractRequests(): reorder + join over a whole trace file. Built only when
// the trace library is in the tree (see CMakeLists.txt).
#include <queue>

#include "join/extractor.h"
#include "trace/trace_reader.h"

namespace jackdaw::join {
namespace {

// Walks one CPU's chunks, in file order, record by record.
struct CpuCursor {
  std::vector<const trace::RecordChunk*> chunks;
  size_t chunk = 0;
  size_t off = 0;

  const jdw_record_header* Peek() {
    while (chunk < chunks.size()) {
      const trace::RecordChunk* c = chunks[chunk];
      if (off + sizeof(jdw_record_header) <= c->len) {
        const auto* h = reinterpret_cast<const jdw_record_header*>(c->data + off);
        // The reader validated sizes; a zero size would loop forever, so
        // treat anything impossible as the end of the chunk.
        if (h->size >= sizeof(jdw_record_header) && off + h->size <= c->len) return h;
      }
      chunk++;
      off = 0;
    }
    return nullptr;
  }
  void Advance(const jdw_record_header* h) { off += h->size; }
};

}  // namespace

Status ExtractRequests(const trace::TraceReader& reader, const schema::Schema& schema, Options opts,
                       const Extractor::RequestSink& sink, Stats* stats,
                       const Extractor::ConnectionSink& conn_sink) {
  ASSIGN_OR_RETURN(std::unique_ptr<Extractor> ex, Extractor::Create(schema, reader.meta(), opts, sink));
  if (conn_sink) ex->SetConnectionSink(conn_sink);
  // Per-CPU cursors merged by head timestamp: chunks of different CPUs cover
  // overlapping spans of time, so feeding them in file order would make the
  // reorder window see whole chunks out of order.
  std::vector<CpuCursor> cursors;
  for (const trace::RecordChunk& c : reader.chunks()) {
    if (c.cpu >= cursors.size()) cursors.resize(size_t{c.cpu} + 1);
    cursors[c.cpu].chunks.push_back(&c);
  }
  using Head = std::pair<uint64_t, uint32_t>;  // (ts, cpu)
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (uint32_t i = 0; i < cursors.size(); i++)
    if (const jdw_record_header* h = cursors[i].Peek()) heads.emplace(h->ts, i);
  while (!heads.empty()) {
    const uint32_t cpu = heads.top().second;
    heads.pop();
    CpuCursor& cur = cursors[cpu];
    const jdw_record_header* h = cur.Peek();
    ex->Push(h);
    cur.Advance(h);
    if (const jdw_record_header* n = cur.Peek()) heads.emplace(n->ts, cpu);
  }
  ex->Finish();
  if (stats) *stats = ex->stats();
  return Status::Ok();
}

StatusOr<ExtractionResult> ExtractRequests(const trace::TraceReader& reader, const schema::Schema& schema,
                                           Options opts) {
  ExtractionResult result;
  RETURN_IF_ERROR(ExtractRequests(
      reader, schema, opts, [&](model::Request&& r) { result.requests.push_back(std::move(r)); },
      &result.stats, [&](model::Connection&& c) { result.connections.push_back(std::move(c)); }));
  return result;
}

}  // namespace jackdaw::join
