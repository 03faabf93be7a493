#include "trace/loss_intervals_json.h"
#include "trace/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>
#include <zstd.h>

#include "trace/event_table.h"
#include "trace/record_decoder.h"
#include "trace/trace_format.h"

namespace jackdaw::trace {
namespace {

using nlohmann::json;

// Deeper JSON than any writer produces is refused before it is parsed:
// nlohmann's dump() and comparisons recurse, so a 100,000-deep header would
// overflow the stack.
constexpr int kMaxJsonDepth = 32;

bool TooDeep(const char* b, const char* e) {
  int depth = 0;
  bool in_string = false;
  for (const char* c = b; c < e; ++c) {
    if (in_string) {
      if (*c == '\\') ++c;
      else if (*c == '"') in_string = false;
    } else if (*c == '"') {
      in_string = true;
    } else if (*c == '{' || *c == '[') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (*c == '}' || *c == ']') {
      --depth;
    }
  }
  return false;
}

// Typed access to a metadata object written by another program: a field of
// the wrong type or out of range keeps the default and names itself in
// bad(), so the caller can report "field X" instead of throwing.
class Fields {
 public:
  Fields(const json& j, std::string* bad) : j_(j), bad_(bad) {}

  template <typename T>
  T Get(const char* key, T def) const {
    if (!j_.is_object()) return def;
    auto it = j_.find(key);
    if (it == j_.end()) return def;
    T out = def;
    if (Convert(*it, &out)) return out;
    if (bad_->empty()) *bad_ = key;
    return def;
  }

 private:
  static bool Convert(const json& v, std::string* out) {
    if (!v.is_string()) return false;
    *out = v.get<std::string>();
    return true;
  }
  static bool Convert(const json& v, double* out) {
    if (!v.is_number()) return false;
    *out = v.get<double>();
    return std::isfinite(*out);
  }
  static bool Convert(const json& v, int64_t* out) {
    if (!v.is_number_integer()) return false;
    *out = v.get<int64_t>();
    return true;
  }
  template <typename U>
    requires std::is_unsigned_v<U>
  static bool Convert(const json& v, U* out) {
    if (!v.is_number_unsigned()) return false;
    const uint64_t x = v.get<uint64_t>();
    if (x > std::numeric_limits<U>::max()) return false;
    *out = static_cast<U>(x);
    return true;
  }

  const json& j_;
  std::string* bad_;
};

void ParseClock(const json& j, ClockMapping* c, std::string* bad) {
  if (!j.is_object()) {
    *bad = "clock";
    return;
  }
  Fields f(j, bad);
  c->method = f.Get("method", c->method);
  const double tsc_per_ns = f.Get("tsc_per_ns", c->tsc_per_ns);
  // A frequency of 0 or 1e300 would turn every timestamp into garbage.
  if (tsc_per_ns > 1e-3 && tsc_per_ns < 1e3) c->tsc_per_ns = tsc_per_ns;
  else if (bad->empty()) *bad = "clock.tsc_per_ns";
  c->ref_mono_ns = f.Get("ref_mono_ns", c->ref_mono_ns);
  c->ref_tsc = f.Get("ref_tsc", c->ref_tsc);
  c->wall_minus_mono_ns = f.Get("wall_minus_mono_ns", c->wall_minus_mono_ns);
  c->fit_max_residual_ns = f.Get("fit_max_residual_ns", c->fit_max_residual_ns);
}

// Merges a header, meta or footer object; names the first malformed field
// in *bad.
void MergeMeta(const json& j, TraceMeta* m, std::string* bad) {
  if (!j.is_object()) return;
  if (j.contains("clock")) ParseClock(j["clock"], &m->time.clock, bad);
  if (j.contains("app_probes") && j["app_probes"].is_array()) {
    m->app_probes.clear();
    for (const auto& p : j["app_probes"]) m->app_probes.push_back(p.is_string() ? p.get<std::string>() : "");
  }
  if (j.contains("tasks") && j["tasks"].is_object()) {
    for (const auto& [k, v] : j["tasks"].items()) {
      if (!v.is_object()) continue;
      uint32_t tid = static_cast<uint32_t>(strtoul(k.c_str(), nullptr, 10));
      Fields f(v, bad);
      m->tasks[tid] = TaskInfo{f.Get("tgid", 0u), f.Get("comm", std::string())};
    }
  }
  // Loss counters are cumulative snapshots: the recorder writes one in a
  // meta chunk every clock sync and a last one in the footer, so a killed
  // recording still reports what it lost up to its last second.
  // Loss intervals are written once each, so they add up; the header says
  // whether the recorder located its losses.
  if (j.contains("loss_intervals") && !AppendLossIntervals(j["loss_intervals"], &m->loss_intervals) && bad->empty())
    *bad = "loss_intervals";
  if (j.contains("loss_intervals_version")) m->losses_located = true;
  if (j.contains("sample") && j["sample"].is_object() && j["sample"].contains("mode") &&
      j["sample"]["mode"].is_string())
    m->sampling.mode = j["sample"]["mode"].get<std::string>();
  if (j.contains("sample_rates") && j["sample_rates"].is_array()) {
    for (const auto& c : j["sample_rates"]) {
      if (!c.is_array() || c.size() != 2 || !c[0].is_number_unsigned() || !c[1].is_number() ||
          !(c[1].get<double>() > 0) || c[1].get<double>() > 1) {
        if (bad->empty()) *bad = "sample_rates";
        break;
      }
      const uint64_t ts = c[0].get<uint64_t>();
      if (!m->sampling.changes.empty() && ts < m->sampling.changes.back().first) {
        if (bad->empty()) *bad = "sample_rates";
        break;
      }
      m->sampling.changes.emplace_back(ts, c[1].get<double>());
    }
  }
  // Cumulative, like the loss counters.
  if (j.contains("sample_left_out_exchanges")) {
    if (j["sample_left_out_exchanges"].is_number_unsigned())
      m->sampling.left_out_exchanges =
          std::max(m->sampling.left_out_exchanges.value_or(0), j["sample_left_out_exchanges"].get<uint64_t>());
    else if (bad->empty())
      *bad = "sample_left_out_exchanges";
  }
  if (j.contains("lost") && j["lost"].is_array()) {
    size_t cpu = 0;
    for (const auto& row : j["lost"]) {
      if (cpu >= m->losses.lost.size() || !row.is_array()) break;
      for (size_t g = 0; g < row.size() && g < JDW_GROUP_MAX; ++g)
        m->losses.lost[cpu][g] = row[g].is_number_unsigned() ? row[g].get<uint64_t>() : 0;
      ++cpu;
    }
  }
}

}  // namespace

StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path, Options opts) {
  std::unique_ptr<TraceReader> r(new TraceReader());
  r->path_ = path;
  // O_NONBLOCK: a FIFO must not hang the open; it is refused just below.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return ErrStatus("cannot open %s: %s", path.c_str(), strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return ErrStatus("%s is not a regular file (%s): pass a .jdw trace", path.c_str(),
                     S_ISDIR(st.st_mode) ? "a directory" : "a pipe, socket or device");
  }
  // Read with pread, chunk by chunk, not mapped: a mapping dies with SIGBUS
  // when someone truncates the file under it. Bytes appended after this
  // point (a recording still running) are not part of this reading.
  r->fd_ = fd;
  r->file_len_ = static_cast<uint64_t>(st.st_size);
  RETURN_IF_ERROR(r->ParseCatching(opts.allow_truncated));
  return r;
}

StatusOr<std::unique_ptr<TraceReader>> TraceReader::OpenForCli(const std::string& path, bool salvage) {
  auto r = Open(path, {.allow_truncated = salvage});
  if (r.ok() || salvage) return r;
  if (!Open(path, {.allow_truncated = true}).ok()) return r;
  return Status::Error(r.status().message() + " (--salvage reads what is intact)");
}

StatusOr<std::unique_ptr<TraceReader>> TraceReader::FromBytes(const std::string& name, const uint8_t* data,
                                                              size_t len, Options opts) {
  std::unique_ptr<TraceReader> r(new TraceReader());
  r->path_ = name;
  r->bytes_.assign(data, data + len);
  r->file_len_ = len;
  RETURN_IF_ERROR(r->ParseCatching(opts.allow_truncated));
  return r;
}

Status TraceReader::ParseCatching(bool allow_truncated) {
  try {
    return Parse(allow_truncated);
  } catch (const std::exception& e) {
    // Backstop: every field is type-checked, so this means a case missed.
    return ErrStatus("%s: corrupt metadata: %s", path_.c_str(), e.what());
  }
}

TraceReader::~TraceReader() {
  if (fd_ >= 0) close(fd_);
}

const uint8_t* TraceReader::ReadAt(uint64_t off, size_t len, std::vector<uint8_t>* scratch) const {
  if (off > file_len_ || len > file_len_ - off) return nullptr;
  if (fd_ < 0) return bytes_.data() + off;
  if (scratch->size() < len) scratch->resize(len);
  size_t got = 0;
  while (got < len) {
    const ssize_t n = pread(fd_, scratch->data() + got, len - got, static_cast<off_t>(off + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return nullptr;  // an error, or the file shrank since Open()
    got += static_cast<size_t>(n);
  }
  return scratch->data();
}

Status TraceReader::Parse(bool allow_truncated) {
  const char* p = path_.c_str();
  std::vector<uint8_t> head_buf, payload_buf, inflate_buf;
  const uint8_t* fh_bytes = ReadAt(0, sizeof(FileHeader), &head_buf);
  if (!fh_bytes)
    return ErrStatus("%s: truncated at byte offset %zu: a .jdw file starts with a %zu-byte header",
                     p, file_len_, sizeof(FileHeader));
  FileHeader fh;
  memcpy(&fh, fh_bytes, sizeof(fh));
  if (memcmp(fh.magic, kFileMagic, sizeof(fh.magic)) != 0)
    return ErrStatus("%s: not a jackdaw trace (bad magic at byte offset 0; expected \"JDWTRACE\")", p);
  if (fh.version < kOldestReadableVersion || fh.version > kFormatVersion)
    return ErrStatus("%s: trace format version %u, this jackdaw reads versions %u to %u (use a matching jackdaw)",
                     p, fh.version, kOldestReadableVersion, kFormatVersion);
  const uint64_t json_end = sizeof(FileHeader) + uint64_t{fh.header_json_len};
  if (json_end > file_len_)
    return ErrStatus("%s: truncated at byte offset %zu: header needs %llu bytes", p, file_len_,
                     static_cast<unsigned long long>(json_end));
  const uint8_t* json_bytes = ReadAt(sizeof(FileHeader), fh.header_json_len, &head_buf);
  if (!json_bytes)
    return ErrStatus("%s: truncated at byte offset %zu: header needs %llu bytes", p, file_len_,
                     static_cast<unsigned long long>(json_end));
  const char* jb = reinterpret_cast<const char*>(json_bytes);
  const char* je = jb + fh.header_json_len;
  if (fh.version >= 2 && Crc32c(jb, fh.header_json_len) != fh.header_crc32c)
    return ErrStatus("%s: corrupt header at byte offset %zu: checksum mismatch (the trace's metadata "
                     "is damaged; no record can be interpreted without it)",
                     p, sizeof(FileHeader));
  if (TooDeep(jb, je))
    return ErrStatus("%s: corrupt header at byte offset %zu: JSON nested deeper than %d", p,
                     sizeof(FileHeader), kMaxJsonDepth);
  json header = json::parse(jb, je, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    return ErrStatus("%s: corrupt header at byte offset %zu: not valid JSON", p, sizeof(FileHeader));
  std::string bad;
  meta_.header_json.assign(jb, je);
  Fields hf(header, &bad);
  meta_.abi_version = hf.Get("abi_version", 0u);
  meta_.ncpus = hf.Get("ncpus", 0u);
  meta_.host = hf.Get("host", std::string());
  meta_.kernel = hf.Get("kernel", std::string());
  meta_.backend = hf.Get("backend", std::string("bpf"));
  meta_.time.base = hf.Get("timebase", std::string("mono_ns")) == "tsc" ? Timebase::kTsc : Timebase::kMonoNs;
  if (!bad.empty())
    return ErrStatus("%s: corrupt header at byte offset %zu: field '%s' has the wrong type", p,
                     sizeof(FileHeader), bad.c_str());
  // ABI 2 differs from 3 only in the interaction record, which no ABI 2
  // recorder ever emitted, and 3 from 4 only in the wire record 4 may hold,
  // so their files read unchanged; 4's sock_info is widened to 5's as it
  // is read (record_decoder.h). 5 also added the sample_gap record.
  if (meta_.abi_version != JDW_ABI_VERSION && (meta_.abi_version < 2 || meta_.abi_version > 4))
    return ErrStatus("%s: records use ABI version %u, this jackdaw reads version %u", p,
                     meta_.abi_version, JDW_ABI_VERSION);
  if (meta_.ncpus == 0 || meta_.ncpus > JDW_MAX_CPUS)
    return ErrStatus("%s: corrupt header: ncpus=%u", p, meta_.ncpus);
  if (header.contains("probe_groups") && header["probe_groups"].is_array())
    for (const auto& g : header["probe_groups"])
      if (g.is_string()) meta_.probe_groups.push_back(g.get<std::string>());
  if (header.contains("syscall_names") && header["syscall_names"].is_array())
    for (const auto& s : header["syscall_names"])
      meta_.syscall_names.push_back(s.is_string() ? s.get<std::string>() : "");
  meta_.losses.lost.assign(meta_.ncpus, std::vector<uint64_t>(JDW_GROUP_MAX, 0));
  MergeMeta(header, &meta_, &bad);
  if (!bad.empty())
    return ErrStatus("%s: corrupt header at byte offset %zu: field '%s' has the wrong type", p,
                     sizeof(FileHeader), bad.c_str());

  uint64_t off = sizeof(FileHeader) + PadTo8(fh.header_json_len);
  // Salvage: keep the first damage as the report, then look for the next
  // chunk whose header and checksum hold and carry on from there, so one
  // bad chunk in the middle costs that chunk, not the rest of the file.
  size_t resumed = 0;
  uint64_t skipped_bytes = 0;
  auto damaged = [&](Status s, uint64_t from) -> std::optional<Status> {
    if (!allow_truncated) return s;
    if (damage_.ok()) damage_ = s;
    const uint64_t next = NextValidChunk(from);
    if (next < file_len_) ++resumed, skipped_bytes += next - off;
    off = next;
    return std::nullopt;
  };
// A block, not do/while(0): `continue` must reach the chunk loop.
#define JDW_DAMAGED(from, ...)                                       \
  {                                                                  \
    if (auto e = damaged(ErrStatus(__VA_ARGS__), (from))) return *e; \
    continue;                                                        \
  }
  while (off < file_len_) {
    const unsigned long long o = off;
    if (meta_.complete)
      JDW_DAMAGED(file_len_, "%s: corrupt trace: data after the footer at byte offset %llu", p, o);
    if (file_len_ - off < sizeof(ChunkHeader))
      JDW_DAMAGED(file_len_,
                  "%s: truncated at byte offset %llu: partial chunk header "
                  "(recording killed? records before this offset are intact)",
                  p, o);
    const uint8_t* ch_bytes = ReadAt(off, sizeof(ChunkHeader), &head_buf);
    if (!ch_bytes)
      JDW_DAMAGED(file_len_, "%s: truncated at byte offset %llu: the file shrank while it was read", p, o);
    ChunkHeader ch;
    memcpy(&ch, ch_bytes, sizeof(ch));
    if (ch.magic != kChunkMagic || ch.payload_len > kMaxChunkPayload)
      JDW_DAMAGED(off + 8, "%s: corrupt chunk at byte offset %llu: bad chunk header", p, o);
    const uint64_t body = off + sizeof(ch);
    const uint64_t next = body + PadTo8(ch.payload_len);
    if (next > file_len_)
      JDW_DAMAGED(off + 8,
                  "%s: truncated at byte offset %llu: chunk needs %u bytes, file has %llu "
                  "(recording killed? records before this offset are intact)",
                  p, o, ch.payload_len, static_cast<unsigned long long>(file_len_ - body));
    const uint8_t* payload = ReadAt(body, ch.payload_len, &payload_buf);
    if (!payload)
      JDW_DAMAGED(file_len_, "%s: truncated at byte offset %llu: the file shrank while it was read", p, o);
    if (Crc32c(payload, ch.payload_len) != ch.crc32c)
      JDW_DAMAGED(off + 8, "%s: corrupt chunk at byte offset %llu: checksum mismatch", p, o);
    switch (static_cast<ChunkKind>(ch.kind)) {
      case ChunkKind::kRecords: {
        // The checksum holds, so a bad record below was written that way:
        // the chunk is dropped whole and reading goes on at the next one.
        size_t events_len = 0;
        uint64_t events = 0;
        Status rs = ValidateRecords(ch, body, payload, ch.payload_len, &events_len, &events);
        if (!rs.ok()) JDW_DAMAGED(next, "%s", rs.message().c_str());
        chunks_.push_back(RecordChunk{ch.cpu, body, ch.payload_len, ch.crc32c, false, events_len, events,
                                      ch.payload_len, ch.record_count});
        break;
      }
      case ChunkKind::kRecordsZstd: {
        if (fh.version < 3)
          JDW_DAMAGED(next, "%s: corrupt chunk at byte offset %llu: compressed chunk in a version %u file", p, o,
                      fh.version);
        auto raw = Inflate(body, payload, ch.payload_len, &inflate_buf);
        if (!raw.ok()) JDW_DAMAGED(next, "%s", raw.status().message().c_str());
        // A few bytes of zstd can claim 64 MiB: what a file may inflate to
        // in total is bounded by its size, so a hostile file cannot make
        // every reading of it decompress without end.
        if (inflated_bytes_ + raw->second > std::max<uint64_t>(kMaxInflateRatio * file_len_, kMaxChunkPayload))
          JDW_DAMAGED(next,
                      "%s: corrupt chunk at byte offset %llu: the compressed chunks inflate to more than %llu "
                      "times the file size",
                      p, o, static_cast<unsigned long long>(kMaxInflateRatio));
        inflated_bytes_ += raw->second;
        size_t events_len = 0;
        uint64_t events = 0;
        Status rs = ValidateRecords(ch, body, raw->first, raw->second, &events_len, &events);
        if (!rs.ok()) JDW_DAMAGED(next, "%s", rs.message().c_str());
        chunks_.push_back(RecordChunk{ch.cpu, body, ch.payload_len, ch.crc32c, true, events_len, events,
                                      raw->second, ch.record_count});
        break;
      }
      case ChunkKind::kMeta:
      case ChunkKind::kFooter: {
        const char* b = reinterpret_cast<const char*>(payload);
        json j = TooDeep(b, b + ch.payload_len) ? json(json::value_t::discarded)
                                                 : json::parse(b, b + ch.payload_len, nullptr, false);
        if (j.is_discarded() || !j.is_object())
          JDW_DAMAGED(next, "%s: corrupt chunk at byte offset %llu: metadata is not valid JSON", p, o);
        bad.clear();
        MergeMeta(j, &meta_, &bad);  // a malformed field keeps its last good value
        const uint64_t records = Fields(j, &bad).Get("records", uint64_t{0});
        if (!bad.empty())
          JDW_DAMAGED(next, "%s: corrupt chunk at byte offset %llu: metadata field '%s' has the wrong type",
                      p, o, bad.c_str());
        if (static_cast<ChunkKind>(ch.kind) == ChunkKind::kFooter) {
          meta_.complete = true;
          meta_.records_written = records;
        }
        break;
      }
      default:
        // Unknown chunk kinds from a newer writer are skipped, not fatal.
        break;
    }
    off = next;
  }
#undef JDW_DAMAGED
  if (resumed > 0)
    damage_ = ErrStatus("%s (salvage resumed %zu time(s) at the next intact chunk, %llu bytes skipped)",
                        damage_.message().c_str(), resumed, static_cast<unsigned long long>(skipped_bytes));
  if (!meta_.complete) {
    Status s = ErrStatus("%s: truncated at byte offset %zu: no footer (recording killed before "
                         "it finished? records before this offset are intact)",
                         p, file_len_);
    if (!allow_truncated) return s;
    if (damage_.ok()) damage_ = s;
  }
  return Status::Ok();
}

uint64_t TraceReader::NextValidChunk(uint64_t from) const {
  // Scans a window at a time (one pread per window, not per offset) for a
  // chunk magic, then checks that candidate's length and checksum.
  constexpr size_t kWindow = 1u << 20;
  std::vector<uint8_t> window, payload;
  for (uint64_t start = PadTo8(from); start + sizeof(ChunkHeader) <= file_len_; start += kWindow) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(kWindow + sizeof(ChunkHeader), file_len_ - start));
    const uint8_t* w = ReadAt(start, len, &window);
    if (!w) return file_len_;
    for (size_t i = 0; i < kWindow && i + sizeof(ChunkHeader) <= len; i += 8) {
      ChunkHeader ch;
      memcpy(&ch, w + i, sizeof(ch));
      if (ch.magic != kChunkMagic || ch.payload_len > kMaxChunkPayload) continue;
      const uint64_t body = start + i + sizeof(ch);
      if (body + PadTo8(ch.payload_len) > file_len_) continue;
      const uint8_t* p = ReadAt(body, ch.payload_len, &payload);
      if (p && Crc32c(p, ch.payload_len) == ch.crc32c) return start + i;
    }
  }
  return file_len_;
}

StatusOr<std::pair<const uint8_t*, size_t>> TraceReader::Inflate(uint64_t body, const uint8_t* payload, size_t len,
                                                                  std::vector<uint8_t>* out) const {
  const char* p = path_.c_str();
  const auto o = static_cast<unsigned long long>(body - sizeof(ChunkHeader));
  ZstdPrefix prefix;
  if (len < sizeof(prefix))
    return ErrStatus("%s: corrupt chunk at byte offset %llu: compressed chunk without its length", p, o);
  memcpy(&prefix, payload, sizeof(prefix));
  if (prefix.raw_len == 0 || prefix.raw_len > kMaxChunkPayload)
    return ErrStatus("%s: corrupt chunk at byte offset %llu: compressed chunk claims %u bytes", p, o,
                     prefix.raw_len);
  if (out->size() < prefix.raw_len) {
    try {
      out->resize(prefix.raw_len);
    } catch (const std::bad_alloc&) {
      return ErrStatus("%s: chunk at byte offset %llu: %u bytes do not fit in memory", p, o, prefix.raw_len);
    }
  }
  const size_t n = ZSTD_decompress(out->data(), prefix.raw_len, payload + sizeof(prefix), len - sizeof(prefix));
  if (ZSTD_isError(n) || n != prefix.raw_len)
    return ErrStatus("%s: corrupt chunk at byte offset %llu: the compressed records do not decompress (%s)", p, o,
                     ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
  return std::pair<const uint8_t*, size_t>{out->data(), prefix.raw_len};
}

Status TraceReader::ValidateRecords(const ChunkHeader& ch, uint64_t body, const uint8_t* payload, size_t len,
                                   size_t* events_len, uint64_t* events) {
  const char* p = path_.c_str();
  if (ch.cpu >= meta_.ncpus)
    return ErrStatus("%s: corrupt chunk at byte offset %llu: cpu %u >= ncpus %u", p,
                     static_cast<unsigned long long>(body - sizeof(ch)), ch.cpu, meta_.ncpus);
  // Validate every record now, so later stages can trust sizes. Tasks are
  // collected aside and kept only if the whole chunk is sound.
  std::vector<std::pair<uint32_t, TaskInfo>> tasks;
  uint64_t roff = 0, n = 0, wire = 0, wire_bytes = 0, widened = 0;
  while (roff < len) {
    jdw_record_header h;
    if (len - roff < sizeof(h))
      return ErrStatus("%s: corrupt record at byte offset %llu: partial header", p,
                       static_cast<unsigned long long>(body + roff));
    memcpy(&h, payload + roff, sizeof(h));
    const EventDesc* d = FindEvent(h.type);
    if (h.size < sizeof(h) || h.size % 8 != 0 || h.size > len - roff ||
        (d && h.size < MinRecordSize(h.type, d->record_size(), meta_.abi_version)) ||
        (IsWireRecord(h.type) && h.size < sizeof(jdw_sys_call_record)))
      return ErrStatus("%s: corrupt record at byte offset %llu: size %u invalid for type %u", p,
                       static_cast<unsigned long long>(body + roff), h.size, h.type);
    if (IsWireRecord(h.type)) ++wire, wire_bytes += h.size;
    else widened += WidenedSize(h) - h.size;
    if (d && (h.type == JDW_EVENT_TASK_FORK || h.type == JDW_EVENT_TASK_EXEC)) {
      const uint8_t* pl = payload + roff + sizeof(h);
      if (h.type == JDW_EVENT_TASK_FORK) {
        jdw_task_fork f;
        memcpy(&f, pl, sizeof(f));
        tasks.push_back(
            {f.child_tid, TaskInfo{f.child_tgid, std::string(f.comm, strnlen(f.comm, sizeof(f.comm))), h.ts}});
      } else {
        jdw_task_exec e;
        memcpy(&e, pl, sizeof(e));
        tasks.push_back({h.tid, TaskInfo{h.tgid, std::string(e.comm, strnlen(e.comm, sizeof(e.comm))), h.ts}});
      }
    }
    roff += h.size;
    ++n;
  }
  if (n != ch.record_count)
    return ErrStatus("%s: corrupt chunk at byte offset %llu: %llu records, header says %llu", p,
                     static_cast<unsigned long long>(body - sizeof(ch)), static_cast<unsigned long long>(n),
                     static_cast<unsigned long long>(ch.record_count));
  for (auto& [tid, t] : tasks) {
    TaskInfo& known = meta_.tasks[tid];
    if (known.comm.empty() || known.named_ts <= t.named_ts) known = std::move(t);
  }
  *events_len = len - wire_bytes + wire * kSysCallExpandedBytes + widened;
  *events = n + wire;
  return Status::Ok();
}

void TraceReader::ReadFailed(Status s) const {
  if (read_error_.ok()) read_error_ = std::move(s);
}

bool TraceReader::ReadChunk(const RecordChunk& c, ChunkBuffer* buf, const uint8_t** data, size_t* len,
                            uint64_t* max_ts) const {
  const char* p = path_.c_str();
  const auto o = static_cast<unsigned long long>(c.file_offset - sizeof(ChunkHeader));
  const uint8_t* payload = ReadAt(c.file_offset, c.payload_len, &buf->disk);
  if (!payload) {
    ReadFailed(ErrStatus("%s: the chunk at byte offset %llu can no longer be read (the file was truncated "
                         "after it was opened); its records are missing",
                         p, o));
    return false;
  }
  // The bytes given to FromBytes are a private copy; a file may have been
  // rewritten since Open() validated it.
  if (fd_ >= 0 && Crc32c(payload, c.payload_len) != c.crc32c) {
    ReadFailed(ErrStatus("%s: the chunk at byte offset %llu changed after the file was opened; its records "
                         "are missing",
                         p, o));
    return false;
  }
  const uint8_t* recs = payload;
  size_t n = c.payload_len;
  if (c.compressed) {
    auto raw = Inflate(c.file_offset, payload, c.payload_len, &buf->raw);
    if (!raw.ok()) {
      ReadFailed(raw.status());
      return false;
    }
    recs = raw->first;
    n = raw->second;
  }
  // Same checksum, so the same records Open() validated, unless someone
  // forged a collision: the sizes are checked again, as cheaply as a walk
  // over the headers, so no input can send a reader past the chunk.
  uint64_t count = 0, newest = 0;
  for (size_t off = 0; off < n; ++count) {
    jdw_record_header h;
    if (n - off < sizeof(h)) return ReadFailed(ErrStatus("%s: chunk at byte offset %llu changed", p, o)), false;
    memcpy(&h, recs + off, sizeof(h));
    if (h.size < sizeof(h) || h.size % 8 != 0 || h.size > n - off)
      return ReadFailed(ErrStatus("%s: chunk at byte offset %llu changed", p, o)), false;
    newest = std::max<uint64_t>(newest, h.ts);
    off += h.size;
  }
  if (n != c.stored_len || count != c.stored_count)
    return ReadFailed(ErrStatus("%s: chunk at byte offset %llu changed", p, o)), false;
  if (c.stored_count != c.record_count || c.len != c.stored_len) {
    // Wire records: the events they stand for, in time order (an exit may
    // be the chunk's newest event); an older trace's short records widened.
    ExpandRecords(recs, n, &buf->expanded);
    recs = buf->expanded.data();
    n = buf->expanded.size();
    for (size_t off = 0; off < n;) {
      jdw_record_header h;
      memcpy(&h, recs + off, sizeof(h));
      newest = std::max<uint64_t>(newest, h.ts);
      off += h.size;
    }
    if (n != c.len) return ReadFailed(ErrStatus("%s: chunk at byte offset %llu changed", p, o)), false;
  }
  *data = recs;
  *len = n;
  if (max_ts) *max_ts = newest;
  return true;
}

const jdw_record_header* RecordCursor::Load() {
  // Leaving the current chunk: keep it while pointers into it may live on.
  if (cur_) {
    if (retain_) held_.push_back(Held{std::move(cur_), cur_max_ts_});
    else spare_.push_back(std::move(cur_));
  }
  data_ = nullptr;
  len_ = off_ = 0;
  while (next_ < chunks_.size()) {
    const RecordChunk* c = chunks_[next_++];
    std::unique_ptr<ChunkBuffer> buf;
    if (!spare_.empty()) {
      buf = std::move(spare_.back());
      spare_.pop_back();
    } else {
      buf = std::make_unique<ChunkBuffer>();
    }
    size_t len = 0;
    if (reader_->ReadChunk(*c, buf.get(), &data_, &len, &cur_max_ts_) && len >= sizeof(jdw_record_header)) {
      cur_ = std::move(buf);
      len_ = len;
      return reinterpret_cast<const jdw_record_header*>(data_);
    }
    spare_.push_back(std::move(buf));
  }
  // Done: a finished CPU keeps only what is retained.
  spare_.clear();
  data_ = nullptr;
  return nullptr;
}

void RecordCursor::Recycle() {
  // Two spare buffers absorb the churn of a steady stream; more would only
  // hold memory after a burst.
  if (spare_.size() < 2 && next_ < chunks_.size()) spare_.push_back(std::move(held_.front().buf));
  held_.pop_front();
}

std::vector<RecordCursor> TraceReader::CursorsByCpu(bool retain) const {
  std::vector<std::vector<const RecordChunk*>> by_cpu;
  for (const RecordChunk& c : chunks_) {
    if (c.cpu >= by_cpu.size()) by_cpu.resize(size_t{c.cpu} + 1);
    by_cpu[c.cpu].push_back(&c);
  }
  std::vector<RecordCursor> out;
  out.reserve(by_cpu.size());
  for (auto& v : by_cpu) out.emplace_back(this, std::move(v), retain);
  return out;
}

void TraceReader::ForEachChunk(
    const std::function<void(const RecordChunk&, const uint8_t* data, size_t len)>& fn) const {
  ChunkBuffer buf;
  for (const auto& c : chunks_) {
    const uint8_t* data = nullptr;
    size_t len = 0;
    if (ReadChunk(c, &buf, &data, &len)) fn(c, data, len);
  }
}

void TraceReader::ForEachRecord(const std::function<void(const jdw_record_header&)>& fn) const {
  ForEachRecordWhile([&](const jdw_record_header& h) {
    fn(h);
    return true;
  });
}

bool TraceReader::ForEachRecordWhile(const std::function<bool(const jdw_record_header&)>& fn) const {
  ChunkBuffer buf;
  for (const auto& c : chunks_) {
    const uint8_t* data = nullptr;
    size_t len = 0;
    if (!ReadChunk(c, &buf, &data, &len)) continue;
    for (size_t off = 0; off < len;) {
      const auto* h = reinterpret_cast<const jdw_record_header*>(data + off);
      if (!fn(*h)) return false;
      off += h->size;
    }
  }
  return true;
}

}  // namespace jackdaw::trace
