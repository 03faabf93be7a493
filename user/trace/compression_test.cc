// Compressed traces (kRecordsZstd chunks) and the AsyncTraceWriter: real
// files written and read back, damaged on purpose.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "trace/async_writer.h"
#include "trace/syscall_names.h"
#include "trace/trace_format.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace jackdaw::trace {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("jdw_compress_test_" + std::to_string(getpid()) + "_" + name))
      .string();
}

nlohmann::json Header() {
  return {{"format", "jdw"}, {"abi_version", JDW_ABI_VERSION}, {"ncpus", 2}, {"timebase", "mono_ns"},
          {"syscall_names", SyscallNames()}};
}

// n getppid enter records of one thread, 1 us apart: as repetitive as a
// real syscall loop, so zstd has something to find.
std::vector<uint8_t> Syscalls(uint32_t cpu, uint64_t t0, int n) {
  std::vector<uint8_t> buf;
  for (int i = 0; i < n; ++i) {
    jdw_sys_enter_record r{};
    r.hdr.ts = t0 + uint64_t(i) * 1000 + (i * 7919) % 97;
    r.hdr.type = JDW_EVENT_SYS_ENTER;
    r.hdr.size = sizeof(r);
    r.hdr.cpu = cpu;
    r.hdr.tgid = 4242;
    r.hdr.tid = 4243;
    r.body.nr = 110;
    r.body.fd = -1;
    const auto* p = reinterpret_cast<const uint8_t*>(&r);
    buf.insert(buf.end(), p, p + sizeof(r));
  }
  return buf;
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void WriteAll(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Records read back, as one byte string per CPU.
std::vector<std::vector<uint8_t>> PerCpu(const TraceReader& r) {
  std::vector<std::vector<uint8_t>> out(2);
  r.ForEachChunk([&](const RecordChunk& c, const uint8_t* data, size_t len) {
    out[c.cpu].insert(out[c.cpu].end(), data, data + len);
  });
  return out;
}

std::string WriteTrace(const std::string& name, Compression c, const std::vector<uint8_t>& a,
                       const std::vector<uint8_t>& b) {
  const std::string path = TempPath(name);
  auto w = TraceWriter::Create(path, Header(), c);
  EXPECT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE((*w)->WriteRecords(0, a.data(), a.size(), a.size() / sizeof(jdw_sys_enter_record)).ok());
  EXPECT_TRUE((*w)->WriteRecords(1, b.data(), b.size(), b.size() / sizeof(jdw_sys_enter_record)).ok());
  EXPECT_TRUE((*w)->Finish({{"records", (a.size() + b.size()) / sizeof(jdw_sys_enter_record)}}).ok());
  return path;
}

TEST(CompressedTrace, ReadsBackTheSameRecordsInAQuarterOfTheSpace) {
  const auto a = Syscalls(0, 1000, 20000), b = Syscalls(1, 1500, 10000);
  const std::string plain = WriteTrace("plain", Compression::kNone, a, b);
  const std::string z = WriteTrace("zstd", Compression::kZstd, a, b);
  auto rp = TraceReader::Open(plain);
  auto rz = TraceReader::Open(z);
  ASSERT_TRUE(rp.ok()) << rp.status().message();
  ASSERT_TRUE(rz.ok()) << rz.status().message();
  EXPECT_EQ(PerCpu(**rz), PerCpu(**rp));
  EXPECT_EQ(PerCpu(**rz)[0], a);
  uint64_t n = 0;
  (*rz)->ForEachRecord([&](const jdw_record_header& h) { n += h.type == JDW_EVENT_SYS_ENTER; });
  EXPECT_EQ(n, 30000u);
  const auto zsize = std::filesystem::file_size(z), psize = std::filesystem::file_size(plain);
  EXPECT_LT(zsize * 4, psize) << "zstd " << zsize << " bytes, plain " << psize;
  // Only compressed files carry the new version; plain ones stay readable
  // by the previous jackdaw.
  FileHeader fz, fp;
  memcpy(&fz, ReadAll(z).data(), sizeof(fz));
  memcpy(&fp, ReadAll(plain).data(), sizeof(fp));
  EXPECT_EQ(fz.version, 3u);
  EXPECT_EQ(fp.version, 2u);
  std::filesystem::remove(plain);
  std::filesystem::remove(z);
}

TEST(CompressedTrace, IncompressibleChunkIsStoredPlain) {
  std::vector<uint8_t> noise = Syscalls(0, 1, 64);
  // Same record headers, random bodies: not worth compressing below its size.
  uint32_t x = 12345;
  for (size_t off = 0; off < noise.size(); off += sizeof(jdw_sys_enter_record))
    for (size_t i = sizeof(jdw_record_header); i < sizeof(jdw_sys_enter_record); ++i)
      noise[off + i] = static_cast<uint8_t>((x = x * 1103515245 + 12345) >> 16);
  const std::string path = TempPath("noise");
  auto w = TraceWriter::Create(path, Header(), Compression::kZstd);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->WriteRecords(0, noise.data(), noise.size(), 64).ok());
  ASSERT_TRUE((*w)->Finish({{"records", 64}}).ok());
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)->chunks().size(), 1u);
  EXPECT_EQ(PerCpu(**r)[0], noise);
  std::filesystem::remove(path);
}

// Damage inside a compressed chunk whose CRC was recomputed (as a buggy
// writer would leave it): zstd refuses it; Open says where, and --salvage
// keeps the other chunk.
TEST(CompressedTrace, CorruptCompressedChunkIsOneClearErrorAndSalvageKeepsTheRest) {
  const auto a = Syscalls(0, 1000, 4000), b = Syscalls(1, 1500, 4000);
  const std::string path = WriteTrace("corrupt", Compression::kZstd, a, b);
  std::vector<uint8_t> f = ReadAll(path);
  FileHeader fh;
  memcpy(&fh, f.data(), sizeof(fh));
  const size_t first = sizeof(FileHeader) + PadTo8(fh.header_json_len);
  ChunkHeader ch;
  memcpy(&ch, f.data() + first, sizeof(ch));
  ASSERT_EQ(ch.kind, static_cast<uint16_t>(ChunkKind::kRecordsZstd));
  uint8_t* payload = f.data() + first + sizeof(ch);
  for (size_t i = sizeof(ZstdPrefix) + 4; i < ch.payload_len; i += 3) payload[i] ^= 0x5a;
  ch.crc32c = Crc32c(payload, ch.payload_len);
  memcpy(f.data() + first, &ch, sizeof(ch));
  WriteAll(path, f);

  auto strict = TraceReader::Open(path);
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("byte offset " + std::to_string(first)), std::string::npos)
      << strict.status().message();
  EXPECT_NE(strict.status().message().find("do not decompress"), std::string::npos) << strict.status().message();
  auto salvaged = TraceReader::Open(path, {.allow_truncated = true});
  ASSERT_TRUE(salvaged.ok()) << salvaged.status().message();
  EXPECT_FALSE((*salvaged)->damage().ok());
  EXPECT_EQ(PerCpu(**salvaged)[1], b);
  EXPECT_TRUE(PerCpu(**salvaged)[0].empty());

  // A prefix claiming more than a chunk may hold is refused before any
  // allocation.
  ZstdPrefix big{kMaxChunkPayload + 1, 0};
  memcpy(payload, &big, sizeof(big));
  ch.crc32c = Crc32c(payload, ch.payload_len);
  memcpy(f.data() + first, &ch, sizeof(ch));
  WriteAll(path, f);
  auto huge = TraceReader::Open(path);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("claims"), std::string::npos) << huge.status().message();
  std::filesystem::remove(path);
}

TEST(CompressedTrace, UnknownCompressionNameIsRefused) {
  EXPECT_TRUE(ParseCompression("zstd").ok());
  EXPECT_TRUE(ParseCompression("none").ok());
  auto bad = ParseCompression("gzip");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("valid: none, zstd"), std::string::npos);
}

// The async writer keeps call order (records, meta, footer) and its file
// reads exactly like the synchronous writer's.
TEST(AsyncTraceWriter, WritesEverythingInCallOrderAndRecyclesBuffers) {
  const std::string path = TempPath("async");
  auto w = AsyncTraceWriter::Create(path, Header(), Compression::kZstd, /*max_queued_bytes=*/64 << 10);
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::vector<uint8_t> expect0;
  for (int i = 0; i < 200; ++i) {
    std::vector<uint8_t> buf = (*w)->TakeBuffer();
    EXPECT_TRUE(buf.empty());
    auto recs = Syscalls(0, 1000 + uint64_t(i) * 1'000'000, 100);
    buf.assign(recs.begin(), recs.end());
    expect0.insert(expect0.end(), recs.begin(), recs.end());
    ASSERT_TRUE((*w)->Submit(0, std::move(buf), 100).ok());
    if (i == 100) {
      ASSERT_TRUE((*w)->SubmitMeta({{"tasks", {{"4243", {{"tgid", 4242}, {"comm", "loop"}}}}}}).ok());
    }
  }
  ASSERT_TRUE((*w)->Finish({{"records", 20000}}).ok());
  EXPECT_EQ((*w)->records_written(), 20000u);
  EXPECT_LT((*w)->record_bytes_stored(), (*w)->record_bytes_raw());
  auto r = TraceReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE((*r)->meta().complete);
  EXPECT_EQ((*r)->meta().tasks.at(4243).comm, "loop");
  EXPECT_EQ(PerCpu(**r)[0], expect0);
  // A submit after the footer is refused, not written past it.
  EXPECT_FALSE((*w)->Submit(0, Syscalls(0, 1, 1), 1).ok());
  std::filesystem::remove(path);
}

// A file size limit makes the writer thread's write fail with EFBIG: the
// error reaches the submitting thread, names the file, nothing is queued
// after it, and nothing already queued is written after it. (ctest runs
// each test in its own process, so the limit stays here.)
TEST(AsyncTraceWriter, WriteErrorIsLatchedAndReported) {
  const std::string path = TempPath("efbig");
  signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit lim = old;
  lim.rlim_cur = 256 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  auto w = AsyncTraceWriter::Create(path, Header(), Compression::kNone);
  ASSERT_TRUE(w.ok()) << w.status().message();
  Status first;
  for (int i = 0; i < 100 && first.ok(); ++i) first = (*w)->Submit(0, Syscalls(0, 1 + uint64_t(i) * 100000, 1000), 1000);
  Status fin = (*w)->Finish({{"records", 0}});
  setrlimit(RLIMIT_FSIZE, &old);
  ASSERT_FALSE(fin.ok());
  EXPECT_NE(fin.message().find(path), std::string::npos) << fin.message();
  EXPECT_FALSE((*w)->SubmitMeta({{"x", 1}}).ok());
  // What was queued behind the failed write is dropped, not written once
  // the limit is lifted: the writer thread, joined here, appends nothing.
  w->reset();
  EXPECT_LE(std::filesystem::file_size(path), uint64_t{256 << 10});
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace jackdaw::trace
