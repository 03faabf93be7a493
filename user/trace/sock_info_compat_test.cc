// ABI 5 grew sock_info by the unix-domain fields; ABI 4 traces hold the
// shorter record. They must still read, every old field as it was and the
// new ones 0, through both reading paths, plain and zstd; and a short
// sock_info in a trace that claims ABI 5 is damage, refused.
#include <unistd.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "trace/record_decoder.h"
#include "trace/syscall_names.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace jackdaw::trace {
namespace {

constexpr size_t kV4Record = sizeof(jdw_record_header) + JDW_SOCK_INFO_V4_SIZE;

jdw_record_header Hdr(uint16_t type, uint16_t size, uint64_t ts) {
  jdw_record_header h{};
  h.ts = ts;
  h.type = type;
  h.size = size;
  h.ctx = JDW_CTX_TASK;
  h.tgid = h.tid = 700;
  return h;
}

// What an ABI 4 probe wrote: the header and the first 48 payload bytes.
void AppendV4SockInfo(std::vector<uint8_t>* b, uint64_t ts, uint64_t sk, uint16_t sport) {
  jdw_sock_info_record r{};
  r.hdr = Hdr(JDW_EVENT_SOCK_INFO, kV4Record, ts);
  r.body.sk = sk;
  r.body.family = 2;
  r.body.protocol = 6;
  r.body.sport = sport;
  r.body.dport = 80;
  r.body.saddr[0] = 127;
  const auto* p = reinterpret_cast<const uint8_t*>(&r);
  b->insert(b->end(), p, p + kV4Record);
}

void AppendSwitch(std::vector<uint8_t>* b, uint64_t ts) {
  jdw_sched_switch_record r{};
  r.hdr = Hdr(JDW_EVENT_SCHED_SWITCH, sizeof(r), ts);
  r.body.prev_tid = 700;
  const auto* p = reinterpret_cast<const uint8_t*>(&r);
  b->insert(b->end(), p, p + sizeof(r));
}

std::string Write(const std::vector<uint8_t>& recs, uint64_t n, uint32_t abi, Compression c) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("jdw-sockinfo-compat-" + std::to_string(getpid()) + "-" + std::to_string(abi) + ".jdw"))
                               .string();
  nlohmann::json header = {{"format", "jdw"},       {"abi_version", abi},
                           {"ncpus", 1},            {"timebase", "mono_ns"},
                           {"syscall_names", SyscallNames()}};
  auto w = TraceWriter::Create(path, header, c);
  EXPECT_TRUE(w.ok());
  if (!w.ok()) return path;
  EXPECT_TRUE((*w)->WriteRecords(0, recs.data(), recs.size(), n).ok());
  EXPECT_TRUE((*w)->Finish({{"records", n}}).ok());
  return path;
}

TEST(SockInfoCompat, DecoderWidensAShortSockInfoAndKeepsTheRest) {
  std::vector<uint8_t> in, out;
  AppendSwitch(&in, 10);
  AppendV4SockInfo(&in, 20, 0x5c, 40000);
  AppendSwitch(&in, 30);
  ASSERT_TRUE(ExpandRecords(in.data(), in.size(), &out));
  ASSERT_EQ(out.size(), in.size() + sizeof(jdw_sock_info_record) - kV4Record);
  jdw_sock_info_record si;
  memcpy(&si, out.data() + sizeof(jdw_sched_switch_record), sizeof(si));
  EXPECT_EQ(si.hdr.size, sizeof(jdw_sock_info_record));
  EXPECT_EQ(si.hdr.ts, 20u);
  EXPECT_EQ(si.body.sk, 0x5cu);
  EXPECT_EQ(si.body.sport, 40000);
  EXPECT_EQ(si.body.saddr[0], 127);
  EXPECT_EQ(si.body.peer_sk, 0u);
  EXPECT_EQ(si.body.path_len, 0);
  EXPECT_EQ(si.body.path[0], 0);
  jdw_record_header last;
  memcpy(&last, out.data() + sizeof(jdw_sched_switch_record) + sizeof(si), sizeof(last));
  EXPECT_EQ(last.ts, 30u);
}

TEST(SockInfoCompat, CurrentRecordsAreNotCopied) {
  std::vector<uint8_t> in, out;
  AppendSwitch(&in, 10);
  EXPECT_FALSE(ExpandRecords(in.data(), in.size(), &out));
}

class SockInfoCompatTrace : public ::testing::TestWithParam<Compression> {};

TEST_P(SockInfoCompatTrace, AnAbi4TraceReadsWithItsSockInfoWidened) {
  std::vector<uint8_t> recs;
  for (int i = 0; i < 100; i++) {
    AppendSwitch(&recs, 1000 + i * 10);
    AppendV4SockInfo(&recs, 1005 + i * 10, 0x1000 + i, static_cast<uint16_t>(40000 + i));
  }
  const std::string path = Write(recs, 200, 4, GetParam());
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int infos = 0;
  (*r)->ForEachRecord([&](const jdw_record_header& h) {
    if (h.type != JDW_EVENT_SOCK_INFO) return;
    ASSERT_EQ(h.size, sizeof(jdw_sock_info_record));
    jdw_sock_info si;
    memcpy(&si, &h + 1, sizeof(si));
    EXPECT_EQ(si.sk, uint64_t(0x1000 + infos));
    EXPECT_EQ(si.sport, 40000 + infos);
    EXPECT_EQ(si.peer_sk, 0u);
    EXPECT_EQ(si.family, 2);
    infos++;
  });
  EXPECT_EQ(infos, 100);
  auto cursors = (*r)->CursorsByCpu();
  ASSERT_EQ(cursors.size(), 1u);
  int by_cursor = 0;
  while (const jdw_record_header* h = cursors[0].Peek()) {
    if (h->type == JDW_EVENT_SOCK_INFO) {
      EXPECT_EQ(h->size, sizeof(jdw_sock_info_record));
      by_cursor++;
    }
    cursors[0].Advance(h);
  }
  EXPECT_EQ(by_cursor, 100);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Compression, SockInfoCompatTrace, ::testing::Values(Compression::kNone, Compression::kZstd));

TEST(SockInfoCompat, AShortSockInfoInAnAbi5TraceIsRefused) {
  std::vector<uint8_t> recs;
  AppendV4SockInfo(&recs, 10, 0x5c, 40000);
  const std::string path = Write(recs, 1, JDW_ABI_VERSION, Compression::kNone);
  auto r = TraceReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("size 72 invalid for type 12"), std::string::npos) << r.status().message();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace jackdaw::trace
