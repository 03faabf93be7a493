// Helpers shared by the extractor's tests (extractor_test.cc: the temporal
// join; extractor_accounting_test.cc: resources, causality, scheduling;
// extractor_schemas_test.cc: the shipped schemas, sockets and messages).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "join/extractor.h"
#include "join/test_stream.h"

namespace jackdaw::join::testing {

struct Result {
  std::vector<model::Request> reqs;
  std::vector<model::Connection> conns;
  Stats stats;
};

inline schema::Schema MustParse(const std::string& text) {
  auto s = schema::ParseSchema(text, "test.schema");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : schema::Schema{};
}

// A schema shipped with jackdaw (tcp-threadpool, testserver), found where
// the binary finds it.
inline schema::Schema ShippedSchema(const std::string& name) {
  auto s = schema::LoadSchema(name, schema::DefaultSchemaDirs(""));
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : schema::Schema{};
}

inline Result RunRecords(const schema::Schema& sch, Stream& s, const std::vector<const jdw_record_header*>& recs,
                         Options opts = {}) {
  Result r;
  auto ex = Extractor::Create(sch, s.meta(), opts, [&](model::Request&& q) { r.reqs.push_back(std::move(q)); });
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  if (!ex.ok()) return r;
  (*ex)->SetConnectionSink([&](model::Connection&& c) { r.conns.push_back(std::move(c)); });
  for (const jdw_record_header* rec : recs) (*ex)->Push(rec);
  (*ex)->Finish();
  r.stats = (*ex)->stats();
  return r;
}

inline Result Extract(const std::string& text, Stream& s, Options opts = {}) {
  return RunRecords(MustParse(text), s, s.records(), opts);
}

inline std::vector<std::string> Symbols(const model::Request& r) {
  std::vector<std::string> out;
  for (const auto& e : r.events) out.push_back(e.symbol);
  return out;
}

}  // namespace jackdaw::join::testing
