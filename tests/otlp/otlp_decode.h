// OTLP/JSON batches (ExportTraceServiceRequest) read back for tests: the
// traces, the request spans' jackdaw.request_id, and spans whose parent is
// missing from their trace. Checks each span's shape as it goes.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace jackdaw::otlp_testing {

using nlohmann::json;

struct Exported {
  std::set<std::string> traces;
  std::set<std::string> request_ids;  // jackdaw.request_id of the request spans
  size_t spans = 0;
  size_t orphans = 0;  // spans whose parentSpanId is not a span of their trace
};

inline Exported Read(const std::vector<std::string>& batches) {
  Exported e;
  std::map<std::string, std::set<std::string>> ids;  // trace -> span ids
  std::vector<std::pair<std::string, std::string>> parents;  // trace, parent span id
  for (const std::string& b : batches) {
    const json doc = json::parse(b);
    for (const json& rs : doc.at("resourceSpans")) {
      EXPECT_EQ(rs["resource"]["attributes"][0]["key"], "service.name");
      for (const json& ss : rs.at("scopeSpans"))
        for (const json& s : ss.at("spans")) {
          const std::string trace = s.at("traceId");
          EXPECT_EQ(trace.size(), 32u);
          EXPECT_EQ(s.at("spanId").get<std::string>().size(), 16u);
          EXPECT_TRUE(s.at("startTimeUnixNano").is_string());
          EXPECT_LE(std::stoull(s["startTimeUnixNano"].get<std::string>()),
                    std::stoull(s["endTimeUnixNano"].get<std::string>()));
          e.traces.insert(trace);
          ids[trace].insert(s["spanId"].get<std::string>());
          e.spans++;
          if (s.contains("parentSpanId")) {
            parents.emplace_back(trace, s["parentSpanId"].get<std::string>());
          } else {
            for (const json& kv : s["attributes"])
              if (kv["key"] == "jackdaw.request_id") e.request_ids.insert(kv["value"]["intValue"].get<std::string>());
          }
        }
    }
  }
  for (const auto& [trace, parent] : parents) e.orphans += !ids[trace].count(parent);
  return e;
}

}  // namespace jackdaw::otlp_testing
