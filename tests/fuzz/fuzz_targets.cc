#include "fuzz/fuzz_targets.h"

#include <cstring>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>
#include <zstd.h>

#include "join/extractor.h"
#include "schema/schema.h"
#include "trace/event_table.h"
#include "trace/syscall_names.h"
#include "trace/trace_format.h"
#include "trace/trace_reader.h"

namespace jackdaw::fuzz {
namespace {

std::string g_schema_dir = JDW_SCHEMA_DIR;

// Builds a .jdw image with valid framing and checksums around fuzzed parts.
class Image {
 public:
  explicit Image(const std::string& header) {
    trace::FileHeader fh{};
    memcpy(fh.magic, trace::kFileMagic, sizeof(fh.magic));
    fh.version = trace::kFormatVersion;
    fh.header_json_len = static_cast<uint32_t>(header.size());
    fh.header_crc32c = trace::Crc32c(header.data(), header.size());
    Append(&fh, sizeof(fh));
    Append(header.data(), header.size());
    bytes_.resize(trace::PadTo8(bytes_.size()));
  }
  void Chunk(trace::ChunkKind kind, uint16_t cpu, const void* p, size_t n, uint64_t count) {
    trace::ChunkHeader ch{};
    ch.magic = trace::kChunkMagic;
    ch.kind = static_cast<uint16_t>(kind);
    ch.cpu = cpu;
    ch.payload_len = static_cast<uint32_t>(n);
    ch.crc32c = trace::Crc32c(p, n);
    ch.record_count = count;
    Append(&ch, sizeof(ch));
    Append(p, n);
    bytes_.resize(trace::PadTo8(bytes_.size()));
  }
  void Read() const {
    for (bool salvage : {false, true}) {
      auto r = trace::TraceReader::FromBytes("fuzz.jdw", bytes_.data(), bytes_.size(), {.allow_truncated = salvage});
      if (!r.ok()) continue;
      uint64_t sum = 0;
      (*r)->ForEachRecord([&](const jdw_record_header& h) { sum += h.size + h.ts; });
      const auto& m = (*r)->meta();
      sum += m.losses.total() + m.tasks.size() + m.time.ToMonoNs(sum);
      (void)sum;
    }
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void Append(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> bytes_;
};

std::string GoodHeader() {
  static const std::string h = nlohmann::json{{"format", "jdw"},
                                              {"abi_version", JDW_ABI_VERSION},
                                              {"ncpus", 2},
                                              {"timebase", "mono_ns"},
                                              {"syscall_names", trace::SyscallNames()},
                                              {"app_probes", {"jackdaw_ts:dispatch", "jackdaw_ts:request_start",
                                                              "jackdaw_ts:request_end", "jackdaw_ts:worker_pickup"}},
                                              {"tasks", {{"100", {{"tgid", 100}, {"comm", "server"}}}}}}
                                   .dump();
  return h;
}

const std::vector<schema::Schema>& Schemas() {
  static const std::vector<schema::Schema> schemas = [] {
    std::vector<schema::Schema> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(g_schema_dir, ec)) {
      if (e.path().extension() != ".schema") continue;
      auto s = schema::LoadSchemaFile(e.path().string());
      if (s.ok()) out.push_back(std::move(*s));
    }
    return out;
  }();
  return schemas;
}

// Turns fuzzed bytes into records that pass the reader's size checks, so
// the fuzzing reaches the fields: type, tids, timestamps and payload all
// come from the input. Records alternate between two CPU chunks.
void BuildRecords(const uint8_t* data, size_t size, std::vector<uint8_t> out[2], uint64_t count[2]) {
  const auto events = trace::AllEvents();
  size_t off = 0;
  uint64_t ts = 1'000'000;
  while (off + 16 <= size) {
    const uint8_t sel = data[off];
    const trace::EventDesc& d = events[sel % events.size()];
    const size_t rec_size = d.record_size();
    jdw_record_header h{};
    // Mostly increasing time with fuzzed steps; a high bit sends it back.
    uint32_t step;
    memcpy(&step, data + off + 1, sizeof(step));
    ts = (sel & 0x80) ? ts - (step & 0xffff) : ts + (step & 0xfffff);
    h.ts = ts;
    h.type = d.id;
    h.size = static_cast<uint16_t>(rec_size);
    h.cpu = sel & 1;
    h.ctx = data[off + 5] & 3;
    // Few distinct tids and tgids, so records of one task meet in the join.
    // tgid 0 (idle and irq context, or a crafted file) is among them: the
    // join must take requests that belong to no process.
    h.tgid = (data[off + 6] & 3) == 3 ? 0 : 100 + (data[off + 6] & 3);
    h.tid = h.tgid + (data[off + 7] & 3);
    std::vector<uint8_t> rec(rec_size, 0);
    memcpy(rec.data(), &h, sizeof(h));
    const size_t payload = rec_size - sizeof(h);
    const size_t avail = std::min(payload, size - off - 8);
    memcpy(rec.data() + sizeof(h), data + off + 8, avail);
    off += 8 + avail;
    std::vector<uint8_t>& dst = out[h.cpu];
    dst.insert(dst.end(), rec.begin(), rec.end());
    ++count[h.cpu];
  }
}

}  // namespace

void SetSchemaDir(const std::string& dir) { g_schema_dir = dir; }

void FuzzTraceFile(const uint8_t* data, size_t size) {
  for (bool salvage : {false, true}) {
    auto r = trace::TraceReader::FromBytes("fuzz.jdw", data, size, {.allow_truncated = salvage});
    if (!r.ok()) continue;
    uint64_t n = 0;
    (*r)->ForEachRecord([&](const jdw_record_header& h) { n += h.size; });
    (void)n;
  }
}

void FuzzTraceMetadata(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Image as_header(text);
  as_header.Chunk(trace::ChunkKind::kFooter, 0, "{}", 2, 0);
  as_header.Read();
  Image as_meta(GoodHeader());
  as_meta.Chunk(trace::ChunkKind::kMeta, 0, text.data(), text.size(), 0);
  as_meta.Chunk(trace::ChunkKind::kFooter, 0, text.data(), text.size(), 0);
  as_meta.Read();
}

void FuzzRecordsAndJoin(const uint8_t* data, size_t size) {
  std::vector<uint8_t> recs[2];
  uint64_t count[2] = {0, 0};
  BuildRecords(data, size, recs, count);
  Image img(GoodHeader());
  for (uint16_t cpu = 0; cpu < 2; ++cpu)
    if (!recs[cpu].empty()) img.Chunk(trace::ChunkKind::kRecords, cpu, recs[cpu].data(), recs[cpu].size(), count[cpu]);
  const std::string footer = R"({"records":0})";
  img.Chunk(trace::ChunkKind::kFooter, 0, footer.data(), footer.size(), 0);
  auto r = trace::TraceReader::FromBytes("fuzz.jdw", img.bytes().data(), img.bytes().size(), {});
  if (!r.ok()) return;
  for (const schema::Schema& s : Schemas()) {
    join::Options jo;
    jo.reorder_window = 1'000'000;
    auto e = join::ExtractRequests(**r, s, jo);
    (void)e;
  }
}

void FuzzCompressedChunks(const uint8_t* data, size_t size) {
  if (size < 4) return;
  // 1. The bytes as the zstd frame of a compressed chunk, behind a prefix
  //    whose claimed length comes from the input (bounded like a writer's).
  uint32_t claim;
  memcpy(&claim, data, sizeof(claim));
  std::vector<uint8_t> raw(sizeof(trace::ZstdPrefix));
  const trace::ZstdPrefix prefix{claim % (4u << 20), 0};
  memcpy(raw.data(), &prefix, sizeof(prefix));
  raw.insert(raw.end(), data + 4, data + size);
  Image as_frame(GoodHeader());
  as_frame.Chunk(trace::ChunkKind::kRecordsZstd, 0, raw.data(), raw.size(), claim >> 24);
  as_frame.Chunk(trace::ChunkKind::kFooter, 0, "{}", 2, 0);
  as_frame.Read();
  // 2. Fuzzed records compressed properly, then one byte of the frame
  //    flipped (chosen by the input) with the CRC recomputed: zstd's own
  //    decoding and the record checks behind it both see hostile input.
  std::vector<uint8_t> recs[2];
  uint64_t count[2] = {0, 0};
  BuildRecords(data, size, recs, count);
  for (int flip = 0; flip < 2; ++flip) {
    Image img(GoodHeader());
    for (uint16_t cpu = 0; cpu < 2; ++cpu) {
      if (recs[cpu].empty()) continue;
      std::vector<uint8_t> z(sizeof(trace::ZstdPrefix) + ZSTD_compressBound(recs[cpu].size()));
      const trace::ZstdPrefix p{static_cast<uint32_t>(recs[cpu].size()), 0};
      memcpy(z.data(), &p, sizeof(p));
      const size_t n = ZSTD_compress(z.data() + sizeof(p), z.size() - sizeof(p), recs[cpu].data(),
                                     recs[cpu].size(), 1);
      if (ZSTD_isError(n)) return;
      z.resize(sizeof(p) + n);
      if (flip) z[sizeof(p) + data[1] % n] ^= static_cast<uint8_t>(1 + data[2] % 255);
      img.Chunk(trace::ChunkKind::kRecordsZstd, cpu, z.data(), z.size(), count[cpu]);
    }
    img.Chunk(trace::ChunkKind::kFooter, 0, "{}", 2, 0);
    img.Read();
  }
}

void FuzzSchema(const uint8_t* data, size_t size) {
  auto s = schema::ParseSchema(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.schema");
  (void)s;
}

}  // namespace jackdaw::fuzz
