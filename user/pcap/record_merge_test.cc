#include "pcap/record_merge.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "trace/trace_writer.h"

namespace jackdaw::pcap {
namespace {

TEST(ForEachRecordMerged, TraceCpusAndExtraPacketsInOneTimeOrder) {
  const std::string path = ::testing::TempDir() + "/jdw_merge_" + std::to_string(getpid()) + ".jdw";
  {
    nlohmann::json header = {{"format", "jdw"}, {"abi_version", JDW_ABI_VERSION}, {"ncpus", 2}, {"host", "h"},
                             {"kernel", "k"},   {"timebase", "mono_ns"}};
    auto w = trace::TraceWriter::Create(path, header);
    ASSERT_TRUE(w.ok()) << w.status().message();
    for (uint32_t cpu = 0; cpu < 2; ++cpu) {
      std::vector<jdw_sys_enter_record> recs(3);
      for (size_t i = 0; i < recs.size(); ++i) {
        recs[i].hdr.ts = 100 * (i + 1) + cpu * 10;  // cpu0: 100 200 300, cpu1: 110 210 310
        recs[i].hdr.type = JDW_EVENT_SYS_ENTER;
        recs[i].hdr.size = sizeof(jdw_sys_enter_record);
        recs[i].hdr.cpu = static_cast<uint16_t>(cpu);
      }
      ASSERT_TRUE((*w)->WriteRecords(cpu, reinterpret_cast<const uint8_t*>(recs.data()),
                                     recs.size() * sizeof(recs[0]), recs.size()).ok());
    }
    ASSERT_TRUE((*w)->Finish(nlohmann::json::object()).ok());
  }
  auto reader = trace::TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<jdw_net_packet_record> extra(3);
  const uint64_t extra_ts[] = {305, 5, 150};  // unsorted on purpose
  for (size_t i = 0; i < 3; ++i) {
    extra[i].hdr.ts = extra_ts[i];
    extra[i].hdr.type = JDW_EVENT_NET_RECV;
    extra[i].hdr.size = sizeof(jdw_net_packet_record);
  }
  std::vector<uint64_t> seen;
  std::vector<const jdw_record_header*> ptrs;
  int ends = 0;
  // Pointers stay valid while the merge is within `keep` of them (the join
  // holds them in its reorder window): with keep = 1000, all the way.
  ForEachRecordMerged(**reader, extra, 1000, [&](const jdw_record_header* h) {
    seen.push_back(h->ts);
    ptrs.push_back(h);
    for (size_t i = 0; i < ptrs.size(); ++i) ASSERT_EQ(ptrs[i]->ts, seen[i]);
    EXPECT_EQ(ptrs[0]->type, JDW_EVENT_NET_RECV);
    if (ptrs.size() > 1) {
      EXPECT_EQ(ptrs[1]->type, JDW_EVENT_SYS_ENTER);
    }
  }, [&] {
    // The join's Finish() runs here and drains its window: still readable.
    ++ends;
    for (size_t i = 0; i < ptrs.size(); ++i) ASSERT_EQ(ptrs[i]->ts, seen[i]);
  });
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(seen, (std::vector<uint64_t>{5, 100, 110, 150, 200, 210, 300, 305, 310}));
  std::filesystem::remove(path);
}

// Packets read as the merge goes (analyze --pcap-input streams its captures):
// small disorders within `keep` come out sorted, a handed-out record stays
// readable while the merge is within `keep` of it, and no more of the
// source is read ahead than the window needs.
TEST(ForEachRecordMerged, PacketSourcesAreSortedInTheWindowAndReadAsNeeded) {
  const std::string path = ::testing::TempDir() + "/jdw_merge_src_" + std::to_string(getpid()) + ".jdw";
  {
    nlohmann::json header = {{"format", "jdw"}, {"abi_version", JDW_ABI_VERSION}, {"ncpus", 1}, {"host", "h"},
                             {"kernel", "k"},   {"timebase", "mono_ns"}};
    auto w = trace::TraceWriter::Create(path, header);
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_TRUE((*w)->Finish(nlohmann::json::object()).ok());
  }
  auto reader = trace::TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  // 10,000 packets 100 units apart, each pair swapped: 100 0 300 200 ...
  constexpr uint64_t kPackets = 10000, kKeep = 1000;
  uint64_t produced = 0;
  PacketSource source = [&]() -> std::optional<jdw_net_packet_record> {
    if (produced == kPackets) return std::nullopt;
    jdw_net_packet_record r{};
    r.hdr.ts = 100 * (produced ^ 1);
    r.hdr.type = JDW_EVENT_NET_RECV;
    r.hdr.size = sizeof(r);
    ++produced;
    return r;
  };
  std::vector<uint64_t> seen;
  std::vector<const jdw_record_header*> recent;
  uint64_t most_ahead = 0;
  ForEachRecordMerged(**reader, {source}, kKeep, [&](const jdw_record_header* h) {
    seen.push_back(h->ts);
    recent.push_back(h);
    // Everything within kKeep of the newest is still readable.
    while (recent.size() > kKeep / 100) recent.erase(recent.begin());
    for (const jdw_record_header* r : recent) ASSERT_GE(r->ts + kKeep, h->ts);
    most_ahead = std::max(most_ahead, produced - seen.size());
  });
  ASSERT_EQ(seen.size(), kPackets);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_LE(most_ahead, kKeep / 100 + 4);  // a window's worth read ahead, not the whole source
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace jackdaw::pcap
