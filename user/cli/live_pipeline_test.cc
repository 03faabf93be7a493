// LivePipeline: the records of one drain reach the join merged across CPUs,
// whatever order the rings were read in.
#include "cli/live_pipeline.h"

#include <gtest/gtest.h>

#include "join/test_stream.h"
#include "schema/schema.h"

namespace jackdaw::cli {
namespace {

constexpr char kSchema[] = R"(
event begin = usdt app:begin { basic Req = arg0 }
event end = usdt app:end { stop Req = arg0 }
seed begin
)";

// One request every 10 ms on each of `cpus` CPUs for `span_ms`.
join::testing::Stream Cpus(uint16_t cpus, uint64_t span_ms, uint64_t* requests) {
  join::testing::Stream s;
  *requests = 0;
  for (uint16_t cpu = 0; cpu < cpus; ++cpu)
    for (uint64_t t = 10; t < span_ms; t += 10) {
      const uint64_t id = cpu * 100000 + t, ts = t * 1'000'000 + cpu * 1000;
      s.Usdt(ts, cpu, 10 + cpu, "app:begin", id);
      s.Usdt(ts + 2'000'000, cpu, 10 + cpu, "app:end", id);
      ++*requests;
    }
  return s;
}
join::testing::Stream TwoCpus(uint64_t span_ms, uint64_t* requests) { return Cpus(2, span_ms, requests); }

// The rings are read one CPU after the other: in a long drain the CPU read
// last brings records older than the other's newest by far more than the
// reorder window. None of them may be late, every request is modelled.
TEST(LivePipeline, ADrainLongerThanTheWindowLosesNothing) {
  uint64_t requests = 0;
  auto s = TwoCpus(600, &requests);
  auto schema = schema::ParseSchema(kSchema, "test.schema");
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  LivePipelineOptions o;
  o.reorder_window_ns = 100'000'000;  // 0.1 s, a sixth of the drain
  auto p = LivePipeline::Create(*schema, s.meta(), o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  for (uint16_t cpu = 0; cpu < 2; ++cpu)
    for (const jdw_record_header* h : s.records())
      if (h->cpu == cpu) (*p)->OnRecord(cpu, reinterpret_cast<const uint8_t*>(h), h->size);
  (*p)->EndDrain();
  (*p)->Finish();
  EXPECT_EQ((*p)->records(), s.records().size());
  EXPECT_EQ((*p)->join_stats().late_records, 0u);
  EXPECT_EQ((*p)->model().stats().requests, requests);
}

// The canonical hook (the likelihood watchdog's input) sees every complete
// request once, with the canonical form of the model's options, and the
// model still takes every request.
TEST(LivePipeline, TheCanonicalHookSeesEveryRequestWithItsCanonicalForm) {
  uint64_t requests = 0;
  auto s = TwoCpus(300, &requests);
  auto schema = schema::ParseSchema(kSchema, "test.schema");
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  auto p = LivePipeline::Create(*schema, s.meta(), LivePipelineOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  uint64_t seen = 0;
  const canonical::Canonicalizer canonicalize(LivePipelineOptions{}.model.model.canonical);
  (*p)->set_canonical_hook([&](const model::Request& r, const canonical::CanonicalRequest& c) {
    ++seen;
    EXPECT_FALSE(r.incomplete);
    const canonical::CanonicalRequest want = canonicalize(r);
    ASSERT_EQ(c.events.size(), want.events.size());
    for (size_t i = 0; i < c.events.size(); ++i) EXPECT_EQ(c.events[i].symbol, want.events[i].symbol);
  });
  for (const jdw_record_header* h : s.records()) (*p)->OnRecord(h->cpu, reinterpret_cast<const uint8_t*>(h), h->size);
  (*p)->EndDrain();
  (*p)->Finish();
  EXPECT_EQ(seen, requests);
  EXPECT_EQ((*p)->model().stats().requests, requests);
}

// Drains in turn: what one drain leaves in the reorder window is joined
// with the next one's records, and nothing is lost at the end.
TEST(LivePipeline, SuccessiveDrainsJoinEveryRequest) {
  uint64_t requests = 0;
  auto s = TwoCpus(1000, &requests);
  auto schema = schema::ParseSchema(kSchema, "test.schema");
  ASSERT_TRUE(schema.ok());
  LivePipelineOptions o;
  o.reorder_window_ns = 50'000'000;
  auto p = LivePipeline::Create(*schema, s.meta(), o);
  ASSERT_TRUE(p.ok());
  for (uint64_t end = 250'000'000; end <= 1'000'000'000; end += 250'000'000) {
    for (uint16_t cpu = 0; cpu < 2; ++cpu)
      for (const jdw_record_header* h : s.records())
        if (h->cpu == cpu && h->ts < end && h->ts + 250'000'000 >= end)
          (*p)->OnRecord(cpu, reinterpret_cast<const uint8_t*>(h), h->size);
    (*p)->EndDrain();
    (*p)->Trim();
  }
  (*p)->Finish();
  EXPECT_EQ((*p)->records(), s.records().size());
  EXPECT_EQ((*p)->join_stats().late_records, 0u);
  EXPECT_EQ((*p)->model().stats().requests, requests);
}

// The merge takes the next head by a scan with few CPUs and from a heap
// with many: either way one long drain, read CPU after CPU, reaches the
// join in time order (nothing late for a window a sixth of the drain).
TEST(LivePipeline, ManyCpusMergeInTimeOrder) {
  for (uint16_t cpus : {3, 12}) {
    uint64_t requests = 0;
    auto s = Cpus(cpus, 600, &requests);
    auto schema = schema::ParseSchema(kSchema, "test.schema");
    ASSERT_TRUE(schema.ok()) << schema.status().message();
    LivePipelineOptions o;
    o.reorder_window_ns = 100'000'000;
    auto p = LivePipeline::Create(*schema, s.meta(), o);
    ASSERT_TRUE(p.ok()) << p.status().message();
    for (uint16_t cpu = cpus; cpu-- > 0;)  // the last CPU first: its records are the latest
      for (const jdw_record_header* h : s.records())
        if (h->cpu == cpu) (*p)->OnRecord(cpu, reinterpret_cast<const uint8_t*>(h), h->size);
    (*p)->EndDrain();
    (*p)->Finish();
    EXPECT_EQ((*p)->records(), s.records().size()) << cpus;
    EXPECT_EQ((*p)->join_stats().late_records, 0u) << cpus;
    EXPECT_EQ((*p)->model().stats().requests, requests) << cpus;
  }
}

// A loss the capture located after a drain marks the requests that ran
// through it incomplete, as analyze marks them from a trace's intervals.
TEST(LivePipeline, LossesLocatedAfterADrainMarkRequestsIncomplete) {
  uint64_t requests = 0;
  auto s = TwoCpus(600, &requests);
  auto schema = schema::ParseSchema(kSchema, "test.schema");
  ASSERT_TRUE(schema.ok());
  // CPU 1 lost app records within [300, 320] ms: its requests of 300 and
  // 310 ms (2 ms each) ran through that, those of 290 and 320 ms did not.
  const trace::LossInterval loss{1, JDW_GROUP_APP, 300'000'000, 320'000'000, 3};
  LivePipelineOptions o;
  o.reorder_window_ns = 100'000'000;
  auto p = LivePipeline::Create(*schema, s.meta(), o);
  ASSERT_TRUE(p.ok());
  const auto drain = [&](uint64_t from, uint64_t to) {
    for (uint16_t cpu = 0; cpu < 2; ++cpu)
      for (const jdw_record_header* h : s.records())
        if (h->cpu == cpu && h->ts >= from && h->ts < to)
          (*p)->OnRecord(cpu, reinterpret_cast<const uint8_t*>(h), h->size);
  };
  drain(0, 300'000'000);
  (*p)->EndDrain();
  (*p)->AddLossIntervals({loss});  // read after the drain that ended at 300 ms
  drain(300'000'000, UINT64_MAX);
  (*p)->EndDrain();
  (*p)->Finish();
  EXPECT_EQ((*p)->model().stats().incomplete, 2u);
  EXPECT_EQ((*p)->model().stats().requests, requests - 2);
  // analyze: the same interval in the trace's metadata.
  trace::TraceMeta meta = s.meta();
  meta.loss_intervals = {loss};
  meta.losses_located = true;
  uint64_t incomplete = 0;
  auto ex = join::Extractor::Create(*schema, meta, join::Options{},
                                    [&](model::Request&& r) { incomplete += r.incomplete; });
  ASSERT_TRUE(ex.ok());
  for (const jdw_record_header* h : s.records()) (*ex)->Push(h);
  (*ex)->Finish();
  EXPECT_EQ(incomplete, 2u);
}

}  // namespace
}  // namespace jackdaw::cli
