// Trace files written or tampered with by someone else: the writer never
// writes through a link or into another user's file and keeps traces
// private; the reader turns every malformed input into one error line.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "trace/syscall_names.h"
#include "trace/trace_format.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace jackdaw::trace {
namespace {

namespace fs = std::filesystem;

std::string TempPath(const char* name) {
  return (fs::temp_directory_path() / (std::string("jdw_hostile_") + std::to_string(getpid()) + "_" + name))
      .string();
}

nlohmann::json Header() {
  return {{"format", "jdw"}, {"abi_version", JDW_ABI_VERSION}, {"ncpus", 2}, {"host", "h"},
          {"syscall_names", SyscallNames()}};
}

std::vector<uint8_t> Records(uint32_t cpu, int n) {
  std::vector<uint8_t> buf;
  for (int i = 0; i < n; ++i) {
    jdw_sys_enter_record r{};
    r.hdr.ts = 100 + i;
    r.hdr.type = JDW_EVENT_SYS_ENTER;
    r.hdr.size = sizeof(r);
    r.hdr.cpu = cpu;
    r.hdr.tgid = 42;
    r.hdr.tid = 43;
    r.body.nr = 110;
    const auto* p = reinterpret_cast<const uint8_t*>(&r);
    buf.insert(buf.end(), p, p + sizeof(r));
  }
  return buf;
}

// Builds a file byte by byte, with valid checksums, from raw header text
// and chunks: the tests below hand the reader well-framed nonsense.
class RawTrace {
 public:
  explicit RawTrace(const std::string& header_json, uint32_t version = kFormatVersion) {
    FileHeader fh{};
    memcpy(fh.magic, kFileMagic, sizeof(fh.magic));
    fh.version = version;
    fh.header_json_len = static_cast<uint32_t>(header_json.size());
    fh.header_crc32c = version >= 2 ? Crc32c(header_json.data(), header_json.size()) : 0;
    Append(&fh, sizeof(fh));
    Append(header_json.data(), header_json.size());
    Pad();
  }
  RawTrace& Chunk(ChunkKind kind, uint16_t cpu, const std::string& payload, uint64_t count = 0) {
    ChunkHeader ch{};
    ch.magic = kChunkMagic;
    ch.kind = static_cast<uint16_t>(kind);
    ch.cpu = cpu;
    ch.payload_len = static_cast<uint32_t>(payload.size());
    ch.crc32c = Crc32c(payload.data(), payload.size());
    ch.record_count = count;
    Append(&ch, sizeof(ch));
    Append(payload.data(), payload.size());
    Pad();
    return *this;
  }
  RawTrace& Records(uint16_t cpu, int n) {
    auto r = trace::Records(cpu, n);
    return Chunk(ChunkKind::kRecords, cpu, std::string(r.begin(), r.end()), n);
  }
  RawTrace& Footer(const std::string& json = R"({"records":0})") { return Chunk(ChunkKind::kFooter, 0, json); }
  StatusOr<std::unique_ptr<TraceReader>> Read(bool salvage = false) const {
    return TraceReader::FromBytes("t.jdw", bytes_.data(), bytes_.size(), {.allow_truncated = salvage});
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  void Append(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void Pad() { bytes_.resize(PadTo8(bytes_.size())); }
  std::vector<uint8_t> bytes_;
};

std::string Good(const std::string& extra = "") {
  return R"({"abi_version":)" + std::to_string(JDW_ABI_VERSION) + R"(,"ncpus":2)" + extra + "}";
}

// ---- the writer ----------------------------------------------------------

TEST(TraceWriterSafety, TracesArePrivateEvenOverAnOlderWorldReadableFile) {
  const std::string path = TempPath("mode.jdw");
  { std::ofstream(path) << "old"; }
  chmod(path.c_str(), 0644);
  auto w = TraceWriter::Create(path, Header());
  ASSERT_TRUE(w.ok()) << w.status().message();
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  fs::remove(path);
  auto fresh = TraceWriter::Create(path, Header());
  ASSERT_TRUE(fresh.ok());
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  fs::remove(path);
}

TEST(TraceWriterSafety, NeverWritesThroughASymlinkOrHardLink) {
  const std::string victim = TempPath("victim"), link = TempPath("link.jdw"), hard = TempPath("hard.jdw");
  { std::ofstream(victim) << "secret"; }
  fs::create_symlink(victim, link);
  auto w = TraceWriter::Create(link, Header());
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("symbolic link"), std::string::npos) << w.status().message();
  fs::create_hard_link(victim, hard);
  auto h = TraceWriter::Create(hard, Header());
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("hard link"), std::string::npos) << h.status().message();
  std::ifstream in(victim);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "secret");
  fs::remove(link);
  fs::remove(hard);
  fs::remove(victim);
}

TEST(TraceWriterSafety, FifoOutputIsRefusedWithoutBlocking) {
  const std::string path = TempPath("fifo.jdw");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  auto w = TraceWriter::Create(path, Header());
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("not a regular file"), std::string::npos) << w.status().message();
  fs::remove(path);
}

TEST(TraceWriterSafety, SecondRecordingToTheSameFileIsRefused) {
  const std::string path = TempPath("locked.jdw");
  auto first = TraceWriter::Create(path, Header());
  ASSERT_TRUE(first.ok());
  auto recs = Records(0, 10);
  ASSERT_TRUE((*first)->WriteRecords(0, recs.data(), recs.size(), 10).ok());
  auto second = TraceWriter::Create(path, Header());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("another jackdaw recording"), std::string::npos)
      << second.status().message();
  ASSERT_TRUE((*first)->Finish({{"records", 10}}).ok());
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();  // the first is whole: nothing truncated it
  EXPECT_EQ((*r)->chunks().size(), 1u);
  fs::remove(path);
}

// ---- the reader ------------------------------------------------------------

TEST(TraceReaderHostile, WrongTypesInTheHeaderAreOneError) {
  const std::string n = std::to_string(JDW_ABI_VERSION);
  for (const std::string& h :
       {std::string(R"({"abi_version":"2","ncpus":2})"), R"({"abi_version":)" + n + R"(,"ncpus":[2]})",
        R"({"abi_version":)" + n + R"(,"ncpus":-2})", Good(R"(,"host":7)"), Good(R"(,"kernel":{})"),
        Good(R"(,"clock":{"tsc_per_ns":"fast"})"), Good(R"(,"clock":{"tsc_per_ns":0})"),
        Good(R"(,"clock":{"method":1})"), Good(R"(,"clock":{"ref_tsc":-5})"), Good(R"(,"clock":3)"),
        Good(R"(,"tasks":{"1":{"tgid":"x"}})"), Good(R"(,"tasks":{"1":{"comm":5}})"),
        Good(R"(,"timebase":true)")}) {
    auto r = RawTrace(h).Footer().Read();
    ASSERT_FALSE(r.ok()) << h;
    EXPECT_NE(r.status().message().find("corrupt header"), std::string::npos) << r.status().message();
  }
}

TEST(TraceReaderHostile, WrongTypesInFooterAndMetaAreDamageNotACrash) {
  for (const std::string j : {R"({"records":"many"})", R"({"records":-1})", R"({"clock":{"ref_mono_ns":[1]}})",
                               R"({"tasks":{"7":{"tgid":1.5}}})"}) {
    RawTrace t(Good());
    t.Records(0, 3).Chunk(ChunkKind::kMeta, 0, j).Footer();
    auto strict = t.Read();
    ASSERT_FALSE(strict.ok()) << j;
    EXPECT_NE(strict.status().message().find("wrong type"), std::string::npos) << strict.status().message();
    auto salvaged = t.Read(true);
    ASSERT_TRUE(salvaged.ok()) << salvaged.status().message();
    EXPECT_EQ((*salvaged)->chunks().size(), 1u);
  }
}

TEST(TraceReaderHostile, DeeplyNestedJsonIsRefused) {
  std::string deep = Good(R"(,"x":)" + std::string(100000, '[') + std::string(100000, ']'));
  auto r = RawTrace(deep).Footer().Read();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested deeper"), std::string::npos) << r.status().message();
  RawTrace t(Good());
  t.Chunk(ChunkKind::kMeta, 0, R"({"a":)" + std::string(100000, '{') + "}").Footer();
  EXPECT_FALSE(t.Read().ok());
  EXPECT_TRUE(t.Read(true).ok());
}

TEST(TraceReaderHostile, HeaderChecksumCatchesAFlippedBit) {
  const std::string path = TempPath("hdrflip.jdw");
  {
    auto w = TraceWriter::Create(path, Header());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Finish({{"records", 0}}).ok());
  }
  ASSERT_TRUE(TraceReader::Open(path).ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find("accept4");
  ASSERT_NE(at, std::string::npos);
  bytes[at] ^= 0x02;  // accept4 -> cccept4: still valid JSON
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  for (bool salvage : {false, true}) {
    auto r = TraceReader::Open(path, {.allow_truncated = salvage});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("corrupt header at byte offset 32: checksum mismatch"),
              std::string::npos)
        << r.status().message();
  }
  fs::remove(path);
}

TEST(TraceReaderHostile, VersionOneFilesWithoutAHeaderChecksumStillRead) {
  auto r = RawTrace(Good(), 1).Records(1, 4).Footer().Read();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->chunks().size(), 1u);
  auto future = RawTrace(Good(), kFormatVersion + 1).Footer().Read();
  ASSERT_FALSE(future.ok());
  EXPECT_NE(future.status().message().find("format version"), std::string::npos);
}

TEST(TraceReaderHostile, FifoDirectoryAndDeviceAreRefusedWithoutBlocking) {
  const std::string fifo = TempPath("in.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& p : {fifo, fs::temp_directory_path().string(), std::string("/dev/zero")}) {
    auto r = TraceReader::Open(p);
    ASSERT_FALSE(r.ok()) << p;
    EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().message();
  }
  fs::remove(fifo);
}

TEST(TraceReaderHostile, FileTruncatedUnderAnOpenReaderStaysReadable) {
  const std::string path = TempPath("shrink.jdw");
  {
    auto w = TraceWriter::Create(path, Header());
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 64; ++i) {
      auto recs = Records(i % 2, 200);
      ASSERT_TRUE((*w)->WriteRecords(i % 2, recs.data(), recs.size(), 200).ok());
    }
    ASSERT_TRUE((*w)->Finish({{"records", 64 * 200}}).ok());
  }
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  uint64_t n = 0;
  (*r)->ForEachRecord([&](const jdw_record_header&) { ++n; });
  EXPECT_EQ(n, 64u * 200u);
  EXPECT_TRUE((*r)->read_error().ok());
  // Records are read chunk by chunk after Open(), so what a truncation took
  // is gone: the reader says so and reads on, where a mapping would SIGBUS.
  const uint64_t half = (*r)->chunks()[32].file_offset;
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(half)), 0);
  n = 0;
  (*r)->ForEachRecord([&](const jdw_record_header&) { ++n; });
  EXPECT_EQ(n, 32u * 200u);
  EXPECT_NE((*r)->read_error().message().find("truncated after it was opened"), std::string::npos)
      << (*r)->read_error().message();
  ASSERT_EQ(truncate(path.c_str(), 0), 0);  // what a new recording to the same path did
  n = 0;
  (*r)->ForEachRecord([&](const jdw_record_header&) { ++n; });
  EXPECT_EQ(n, 0u);
  fs::remove(path);
}

TEST(TraceReaderHostile, ChunkRewrittenAfterOpenIsSkippedAndNamed) {
  const std::string path = TempPath("rewrite.jdw");
  {
    auto w = TraceWriter::Create(path, Header());
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 4; ++i) {
      auto recs = Records(0, 50);
      ASSERT_TRUE((*w)->WriteRecords(0, recs.data(), recs.size(), 50).ok());
    }
    ASSERT_TRUE((*w)->Finish({{"records", 4 * 50}}).ok());
  }
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>((*r)->chunks()[1].file_offset + 4));  // a record size, checksummed
    f.put('\x7f');
  }
  uint64_t n = 0;
  (*r)->ForEachRecord([&](const jdw_record_header&) { ++n; });
  EXPECT_EQ(n, 3u * 50u);
  EXPECT_NE((*r)->read_error().message().find("changed after the file was opened"), std::string::npos)
      << (*r)->read_error().message();
  fs::remove(path);
}

// The reader's memory: Open() keeps an index, a cursor one chunk (or, when
// retaining for a reorder window, the chunks the caller has not released).
TEST(TraceReaderMemory, CursorsHoldOneChunkOrWhatTheCallerRetains) {
 for (Compression comp : {Compression::kNone, Compression::kZstd}) {
  const std::string path = TempPath("cursor.jdw");
  {
    auto w = TraceWriter::Create(path, Header(), comp);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 40; ++i) {
      auto recs = Records(0, 100);
      for (size_t k = 0; k < 100; ++k)
        reinterpret_cast<jdw_record_header*>(recs.data() + k * sizeof(jdw_sys_enter_record))->ts = i * 100 + k;
      ASSERT_TRUE((*w)->WriteRecords(0, recs.data(), recs.size(), 100).ok());
    }
    ASSERT_TRUE((*w)->Finish({{"records", 40 * 100}}).ok());
  }
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)->chunks().size(), 40u);
  EXPECT_EQ((*r)->chunks()[0].compressed, comp == Compression::kZstd);
  for (bool retain : {false, true}) {
    std::vector<RecordCursor> cursors = (*r)->CursorsByCpu(retain);
    ASSERT_EQ(cursors.size(), 1u);
    RecordCursor& c = cursors[0];
    uint64_t n = 0, expect_ts = 0;
    size_t most = 0;
    std::vector<const jdw_record_header*> window;  // what a 250-unit reorder window would hold
    while (const jdw_record_header* h = c.Peek()) {
      ASSERT_EQ(h->ts, expect_ts++);
      window.push_back(h);
      c.Advance(h);
      ++n;
      if (retain) {
        // Every record within 250 of the newest is still readable.
        while (window.front()->ts + 250 < h->ts) window.erase(window.begin());
        for (size_t i = 0; i < window.size(); ++i) ASSERT_EQ(window[i]->ts, h->ts + 1 - window.size() + i);
        if (h->ts > 250) c.ReleaseBefore(h->ts - 250);
      }
      most = std::max(most, c.chunks_held());
    }
    EXPECT_EQ(n, 4000u);
    // 250 units span 3 chunks of 100, plus the one being read.
    EXPECT_LE(most, retain ? 5u : 1u) << retain;
  }
  fs::remove(path);
 }
}

TEST(TraceReaderHostile, BadRecordsUnderAValidChecksumAreRefused) {
  auto recs = Records(0, 3);
  reinterpret_cast<jdw_record_header*>(recs.data())->size = 4;  // smaller than a header
  RawTrace t(Good());
  t.Chunk(ChunkKind::kRecords, 0, std::string(recs.begin(), recs.end()), 3).Records(1, 5).Footer();
  auto strict = t.Read();
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("corrupt record"), std::string::npos);
  auto s = t.Read(true);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ((*s)->chunks().size(), 1u);  // the bad chunk dropped, the next one kept
  EXPECT_EQ((*s)->chunks()[0].cpu, 1u);
  EXPECT_TRUE((*s)->meta().complete);
}

TEST(TraceSalvage, ResynchronisesOnTheNextIntactChunk) {
  RawTrace t(Good());
  t.Records(0, 10);
  const size_t first_chunk = PadTo8(sizeof(FileHeader) + Good().size());
  t.Records(1, 7).Chunk(ChunkKind::kMeta, 0, R"({"tasks":{"43":{"tgid":42,"comm":"late"}}})").Records(0, 5).Footer();
  t.bytes()[first_chunk + sizeof(ChunkHeader) + 20] ^= 0xff;  // the first chunk's payload
  auto strict = t.Read();
  ASSERT_FALSE(strict.ok());
  auto r = t.Read(true);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string damage = (*r)->damage().message();
  EXPECT_NE(damage.find("checksum mismatch"), std::string::npos) << damage;
  EXPECT_NE(damage.find("resumed"), std::string::npos) << damage;
  ASSERT_EQ((*r)->chunks().size(), 2u);  // before: 0, salvage stopped at the bad chunk
  EXPECT_EQ((*r)->meta().tasks.at(43).comm, "late");
  EXPECT_TRUE((*r)->meta().complete);
  // A bad chunk header (not only its payload) is skipped the same way.
  t.bytes()[first_chunk] ^= 0xff;
  auto h = t.Read(true);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)->chunks().size(), 2u);
}

TEST(TraceSalvage, LossesWrittenInMetaChunksSurviveAKill) {
  const std::string path = TempPath("killed.jdw");
  {
    auto w = TraceWriter::Create(path, Header());
    ASSERT_TRUE(w.ok());
    auto recs = Records(0, 10);
    ASSERT_TRUE((*w)->WriteRecords(0, recs.data(), recs.size(), 10).ok());
    nlohmann::json lost = nlohmann::json::array({{0, 7, 0, 0, 0, 0, 0, 0}, {5, 0, 0, 0, 0, 0, 0, 0}});
    ASSERT_TRUE((*w)->WriteMeta({{"lost", lost}}).ok());
    lost[1][0] = 15'000'000;  // cumulative: the later snapshot wins
    ASSERT_TRUE((*w)->WriteMeta({{"lost", lost}}).ok());
    // No Finish(): the recorder was killed.
  }
  auto r = TraceReader::Open(path, {.allow_truncated = true});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE((*r)->meta().complete);
  EXPECT_EQ((*r)->meta().losses.total(), 15'000'007u);
  fs::remove(path);
}

}  // namespace
}  // namespace jackdaw::trace
