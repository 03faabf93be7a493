// ExtractRequests() over a real .jdw file written by trace::TraceWriter:
// per-CPU chunks interleaved in file order, app probes and syscall names
// from the header. Built only when user/trace is in the tree.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "join/extractor.h"
#include "join/test_stream.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace jackdaw::join {
namespace {

TEST(ExtractRequests, ReadsTraceFileChunksOutOfOrder) {
  testing::Stream s;
  // Two requests on two threads (Magpie Figure 3), CPUs 0 and 1.
  for (uint64_t i = 0; i < 2; i++) {
    const uint64_t t0 = 1'000'000 + i * 1000;
    s.Switch(t0 + 0, 0, 0, 42, 0);
    s.Usdt(t0 + 100, 0, 42, "W3Server:Start", 23 + i);
    s.Usdt(t0 + 200, 0, 42, "AspNetReq:Start", 87 + i);
    s.Switch(t0 + 300, 0, 42, 0, 1);
    s.Switch(t0 + 400, 1, 0, 44, 0);
    s.Usdt(t0 + 500, 1, 44, "AspNetReq:End", 87 + i);
    s.Usdt(t0 + 600, 1, 44, "W3Server:End", 23 + i);
    s.Switch(t0 + 700, 1, 44, 0, 1);
  }
  const std::string path = ::testing::TempDir() + "/jdw_join_trace_test.jdw";
  nlohmann::json header = {{"format", "jdw"},
                           {"abi_version", JDW_ABI_VERSION},
                           {"ncpus", 2},
                           {"timebase", "mono_ns"},
                           {"syscall_names", s.meta().syscall_names},
                           {"app_probes", s.meta().app_probes},
                           {"clock", {{"method", "none"}, {"wall_minus_mono_ns", 5000}}}};
  auto w = trace::TraceWriter::Create(path, header);
  ASSERT_TRUE(w.ok()) << w.status().message();
  // One chunk per CPU per request, CPU 1's chunks first: file order is not
  // time order.
  for (uint32_t cpu : {1u, 0u}) {
    for (int half = 0; half < 2; half++) {
      std::vector<uint8_t> buf;
      uint64_t n = 0;
      for (const jdw_record_header* r : s.records()) {
        const bool in_half = (r->ts - 1'000'000) / 1000 == static_cast<uint64_t>(half);
        if (r->cpu != cpu || !in_half) continue;
        const auto* p = reinterpret_cast<const uint8_t*>(r);
        buf.insert(buf.end(), p, p + r->size);
        n++;
      }
      ASSERT_TRUE((*w)->WriteRecords(cpu, buf.data(), buf.size(), n).ok());
    }
  }
  ASSERT_TRUE((*w)->Finish(nlohmann::json::object()).ok());
  w->reset();

  auto reader = trace::TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto sch = schema::ParseSchema(R"(
event unblock = switch_in where after_block == 1 { start Tid = tid }
event block = switch_out where blocked == 1 { stop Tid = tid }
event w3_start = usdt W3Server:Start { basic Tid = tid  basic W3Id = arg0 }
event w3_end = usdt W3Server:End { basic Tid = tid  stop W3Id = arg0 }
event asp_start = usdt AspNetReq:Start { basic Tid = tid  basic IsapiId = arg0 }
event asp_end = usdt AspNetReq:End { basic Tid = tid  stop IsapiId = arg0 }
seed w3_start
)",
                                 "iis");
  ASSERT_TRUE(sch.ok()) << sch.status().message();
  Options o;
  o.reorder_window = 100;  // small on purpose: the per-CPU merge must do the work
  auto result = ExtractRequests(**reader, *sch, o);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->requests.size(), 2u);
  EXPECT_EQ(result->stats.late_records, 0u);
  EXPECT_EQ(result->requests[0].events.size(), 8u);
  EXPECT_EQ(result->requests[0].threads, (std::vector<uint32_t>{42, 44}));
  EXPECT_EQ(result->requests[0].start_wall_ns, 1'000'000u + 5000u);
  EXPECT_EQ(result->requests[1].events[1].symbol, "usdt:W3Server:Start");

  const std::string out = ::testing::TempDir() + "/jdw_join_trace_test.jsonl";
  ASSERT_TRUE(WriteRequestsJsonl(out, result->requests).ok());
  EXPECT_NE(FormatSummary(result->stats).find("requests 2 "), std::string::npos) << FormatSummary(result->stats);
}

}  // namespace
}  // namespace jackdaw::join
