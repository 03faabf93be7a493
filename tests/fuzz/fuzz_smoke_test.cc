// A short, deterministic fuzz run of every target in the test suite: the
// seed corpus (real traces and the shipped schemas) plus a fixed number of
// mutations of it, so a regression that libFuzzer would find in minutes is
// caught by every `make test`. The long runs are `make fuzz`.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fuzz/fuzz_targets.h"
#include "trace/trace_reader.h"

namespace jackdaw::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<fs::path> Files(const std::string& dir, const std::string& ext) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// xorshift64*: the same mutations on every run, so a failure reproduces.
class Mutator {
 public:
  explicit Mutator(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    s_ ^= s_ >> 12, s_ ^= s_ << 25, s_ ^= s_ >> 27;
    return s_ * 2685821657736338717ull;
  }
  std::vector<uint8_t> Mutate(std::vector<uint8_t> d) {
    static const char* kTokens[] = {"{", "}", "[", "]", "\"", ":", ",", "-1", "1e309", "null", "true",
                                    "4294967295", "18446744073709551616", "\"x\"", "{}", "[]",
                                    "event ", "seed ", "timeout ", " = ", "sys_enter", " where ", "\0"};
    const int n = 1 + Next() % 8;
    for (int i = 0; i < n; ++i) {
      const size_t at = d.empty() ? 0 : Next() % d.size();
      switch (Next() % 6) {
        case 0:
          if (!d.empty()) d[at] ^= 1u << (Next() % 8);
          break;
        case 1:
          if (!d.empty()) d[at] = static_cast<uint8_t>(Next());
          break;
        case 2: {
          const char* t = kTokens[Next() % std::size(kTokens)];
          d.insert(d.begin() + at, t, t + std::max<size_t>(1, strlen(t)));
          break;
        }
        case 3:
          if (!d.empty()) d.erase(d.begin() + at, d.begin() + std::min(d.size(), at + 1 + Next() % 16));
          break;
        case 4:
          if (!d.empty()) {
            const size_t len = std::min(d.size() - at, size_t{1 + Next() % 32});
            std::vector<uint8_t> copy(d.begin() + at, d.begin() + at + len);
            d.insert(d.begin() + Next() % d.size(), copy.begin(), copy.end());
          }
          break;
        default:
          if (d.size() >= 4) {
            const uint32_t v = static_cast<uint32_t>(Next() % 3 == 0 ? 0xffffffffu : Next());
            const size_t p = Next() % (d.size() - 3);
            memcpy(d.data() + p, &v, 4);
          }
      }
    }
    return d;
  }

 private:
  uint64_t s_;
};

void RunTarget(void (*target)(const uint8_t*, size_t), const std::vector<std::vector<uint8_t>>& seeds, int rounds,
         uint64_t seed) {
  ASSERT_FALSE(seeds.empty());
  for (const auto& s : seeds) target(s.data(), s.size());
  Mutator m(seed);
  for (int i = 0; i < rounds; ++i) {
    const auto input = m.Mutate(seeds[m.Next() % seeds.size()]);
    target(input.data(), input.size());
  }
}

std::vector<std::vector<uint8_t>> TraceSeeds() {
  std::vector<std::vector<uint8_t>> out;
  for (const auto& p : Files(JDW_CORPUS_DIR, ".jdw")) out.push_back(ReadAll(p));
  return out;
}

TEST(FuzzSmoke, TraceFile) { RunTarget(FuzzTraceFile, TraceSeeds(), 2000, 1); }

TEST(FuzzSmoke, TraceMetadata) {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& p : Files(JDW_CORPUS_DIR, ".jdw")) {
    auto r = trace::TraceReader::Open(p.string());
    ASSERT_TRUE(r.ok()) << r.status().message();
    const std::string& h = (*r)->meta().header_json;
    seeds.emplace_back(h.begin(), h.end());
  }
  const std::string footer = R"({"records":80,"lost":[[0,3,0,0,0,0,0,0],[1,2]],"late_records":0,)"
                             R"("clock":{"method":"tsc-fit","tsc_per_ns":2.3,"ref_mono_ns":5,"ref_tsc":9},)"
                             R"("tasks":{"43":{"tgid":42,"comm":"w"}}})";
  seeds.emplace_back(footer.begin(), footer.end());
  RunTarget(FuzzTraceMetadata, seeds, 1500, 2);
}

TEST(FuzzSmoke, RecordsThroughTheJoin) {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& p : Files(JDW_CORPUS_DIR, ".jdw")) {
    auto r = trace::TraceReader::Open(p.string());
    ASSERT_TRUE(r.ok()) << r.status().message();
    (*r)->ForEachChunk([&](const trace::RecordChunk&, const uint8_t* data, size_t len) {
      seeds.emplace_back(data, data + std::min<size_t>(len, 4096));
    });
  }
  RunTarget(FuzzRecordsAndJoin, seeds, 400, 3);
}

TEST(FuzzSmoke, CompressedChunks) {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& p : Files(JDW_CORPUS_DIR, ".jdw")) {
    auto r = trace::TraceReader::Open(p.string());
    ASSERT_TRUE(r.ok()) << r.status().message();
    (*r)->ForEachChunk([&](const trace::RecordChunk&, const uint8_t* data, size_t len) {
      seeds.emplace_back(data, data + std::min<size_t>(len, 4096));
    });
  }
  RunTarget(FuzzCompressedChunks, seeds, 400, 5);
}

TEST(FuzzSmoke, Schema) {
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& p : Files(JDW_SCHEMA_DIR, ".schema")) seeds.push_back(ReadAll(p));
  RunTarget(FuzzSchema, seeds, 5000, 4);
}

}  // namespace
}  // namespace jackdaw::fuzz
