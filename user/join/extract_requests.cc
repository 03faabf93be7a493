// ExtractRequests(): reorder + join over a whole trace file. Built only when
// the trace library is in the tree (see CMakeLists.txt).
#include <algorithm>
#include <queue>

#include "join/extractor.h"
#include "trace/trace_reader.h"

namespace jackdaw::join {

Status ExtractRequests(const trace::TraceReader& reader, const schema::Schema& schema, Options opts,
                       const Extractor::RequestSink& sink, Stats* stats,
                       const Extractor::ConnectionSink& conn_sink) {
  ASSIGN_OR_RETURN(std::unique_ptr<Extractor> ex, Extractor::Create(schema, reader.meta(), opts, sink));
  if (conn_sink) ex->SetConnectionSink(conn_sink);
  // Per-CPU cursors merged by head timestamp: chunks of different CPUs cover
  // overlapping spans of time, so feeding them in file order would make the
  // reorder window see whole chunks out of order.
  // The cursors read a chunk at a time and keep the chunks whose records the
  // reorder window may still point to: memory follows the window, not the
  // trace.
  std::vector<trace::RecordCursor> cursors = reader.CursorsByCpu(/*retain=*/true);
  uint64_t watermark = 0;
  using Head = std::pair<uint64_t, uint32_t>;  // (ts, cpu)
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (uint32_t i = 0; i < cursors.size(); i++)
    if (const jdw_record_header* h = cursors[i].Peek()) heads.emplace(h->ts, i);
  while (!heads.empty()) {
    const uint32_t cpu = heads.top().second;
    heads.pop();
    trace::RecordCursor& cur = cursors[cpu];
    const jdw_record_header* h = cur.Peek();
    ex->Push(h);
    watermark = std::max<uint64_t>(watermark, h->ts);
    cur.Advance(h);
    // Push() released every record at or before watermark - window.
    if (watermark > opts.reorder_window) cur.ReleaseBefore(watermark - opts.reorder_window);
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
