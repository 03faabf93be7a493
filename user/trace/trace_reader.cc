#include "trace/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>
#include <zstd.h>

#include "trace/event_table.h"
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
  // Read, not mapped: a mapping dies with SIGBUS when someone truncates the
  // file under it, and a trace may belong to another user.
  const size_t want = static_cast<size_t>(st.st_size);
  r->buf_.reset(want ? new (std::nothrow) uint8_t[want] : nullptr);
  if (want && !r->buf_) {
    close(fd);
    return ErrStatus("cannot read %s: %zu bytes do not fit in memory", path.c_str(), want);
  }
  size_t got = 0;
  while (got < want) {
    ssize_t n = pread(fd, r->buf_.get() + got, want - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return ErrStatus("cannot read %s: %s", path.c_str(), strerror(e));
    }
    if (n == 0) break;  // shrunk while we read: what is left reads as truncated
    got += static_cast<size_t>(n);
  }
  close(fd);
  r->map_ = r->buf_.get();
  r->map_len_ = got;
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
  r->buf_.reset(len ? new uint8_t[len] : nullptr);
  if (len) memcpy(r->buf_.get(), data, len);
  r->map_ = r->buf_.get();
  r->map_len_ = len;
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

TraceReader::~TraceReader() = default;

Status TraceReader::Parse(bool allow_truncated) {
  const char* p = path_.c_str();
  if (map_len_ < sizeof(FileHeader))
    return ErrStatus("%s: truncated at byte offset %zu: a .jdw file starts with a %zu-byte header",
                     p, map_len_, sizeof(FileHeader));
  FileHeader fh;
  memcpy(&fh, map_, sizeof(fh));
  if (memcmp(fh.magic, kFileMagic, sizeof(fh.magic)) != 0)
    return ErrStatus("%s: not a jackdaw trace (bad magic at byte offset 0; expected \"JDWTRACE\")", p);
  if (fh.version < kOldestReadableVersion || fh.version > kFormatVersion)
    return ErrStatus("%s: trace format version %u, this jackdaw reads versions %u to %u (use a matching jackdaw)",
                     p, fh.version, kOldestReadableVersion, kFormatVersion);
  const uint64_t json_end = sizeof(FileHeader) + uint64_t{fh.header_json_len};
  if (json_end > map_len_)
    return ErrStatus("%s: truncated at byte offset %zu: header needs %llu bytes", p, map_len_,
                     static_cast<unsigned long long>(json_end));
  const char* jb = reinterpret_cast<const char*>(map_) + sizeof(FileHeader);
  const char* je = reinterpret_cast<const char*>(map_) + json_end;
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
  // recorder ever emitted, so its files read unchanged.
  if (meta_.abi_version != JDW_ABI_VERSION && meta_.abi_version != 2)
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
    if (next < map_len_) ++resumed, skipped_bytes += next - off;
    off = next;
    return std::nullopt;
  };
// A block, not do/while(0): `continue` must reach the chunk loop.
#define JDW_DAMAGED(from, ...)                                       \
  {                                                                  \
    if (auto e = damaged(ErrStatus(__VA_ARGS__), (from))) return *e; \
    continue;                                                        \
  }
  while (off < map_len_) {
    const unsigned long long o = off;
    if (meta_.complete)
      JDW_DAMAGED(map_len_, "%s: corrupt trace: data after the footer at byte offset %llu", p, o);
    if (map_len_ - off < sizeof(ChunkHeader))
      JDW_DAMAGED(map_len_,
                  "%s: truncated at byte offset %llu: partial chunk header "
                  "(recording killed? records before this offset are intact)",
                  p, o);
    ChunkHeader ch;
    memcpy(&ch, map_ + off, sizeof(ch));
    if (ch.magic != kChunkMagic || ch.payload_len > kMaxChunkPayload)
      JDW_DAMAGED(off + 8, "%s: corrupt chunk at byte offset %llu: bad chunk header", p, o);
    const uint64_t body = off + sizeof(ch);
    const uint64_t next = body + PadTo8(ch.payload_len);
    if (next > map_len_)
      JDW_DAMAGED(off + 8,
                  "%s: truncated at byte offset %llu: chunk needs %u bytes, file has %llu "
                  "(recording killed? records before this offset are intact)",
                  p, o, ch.payload_len, static_cast<unsigned long long>(map_len_ - body));
    const uint8_t* payload = map_ + body;
    if (Crc32c(payload, ch.payload_len) != ch.crc32c)
      JDW_DAMAGED(off + 8, "%s: corrupt chunk at byte offset %llu: checksum mismatch", p, o);
    switch (static_cast<ChunkKind>(ch.kind)) {
      case ChunkKind::kRecords: {
        // The checksum holds, so a bad record below was written that way:
        // the chunk is dropped whole and reading goes on at the next one.
        Status rs = ValidateRecords(ch, body, payload, ch.payload_len);
        if (!rs.ok()) JDW_DAMAGED(next, "%s", rs.message().c_str());
        chunks_.push_back(RecordChunk{ch.cpu, body, payload, ch.payload_len});
        break;
      }
      case ChunkKind::kRecordsZstd: {
        if (fh.version < 3)
          JDW_DAMAGED(next, "%s: corrupt chunk at byte offset %llu: compressed chunk in a version %u file", p, o,
                      fh.version);
        auto raw = Inflate(body, payload, ch.payload_len);
        if (!raw.ok()) JDW_DAMAGED(next, "%s", raw.status().message().c_str());
        Status rs = ValidateRecords(ch, body, raw->first, raw->second);
        if (!rs.ok()) JDW_DAMAGED(next, "%s", rs.message().c_str());
        chunks_.push_back(RecordChunk{ch.cpu, body, raw->first, raw->second});
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
                         p, map_len_);
    if (!allow_truncated) return s;
    if (damage_.ok()) damage_ = s;
  }
  return Status::Ok();
}

uint64_t TraceReader::NextValidChunk(uint64_t from) const {
  for (uint64_t off = PadTo8(from); off + sizeof(ChunkHeader) <= map_len_; off += 8) {
    ChunkHeader ch;
    memcpy(&ch, map_ + off, sizeof(ch));
    if (ch.magic != kChunkMagic || ch.payload_len > kMaxChunkPayload) continue;
    const uint64_t body = off + sizeof(ch);
    if (body + PadTo8(ch.payload_len) > map_len_) continue;
    if (Crc32c(map_ + body, ch.payload_len) == ch.crc32c) return off;
  }
  return map_len_;
}

StatusOr<std::pair<const uint8_t*, size_t>> TraceReader::Inflate(uint64_t body, const uint8_t* payload,
                                                                  size_t len) {
  const char* p = path_.c_str();
  const auto o = static_cast<unsigned long long>(body - sizeof(ChunkHeader));
  ZstdPrefix prefix;
  if (len < sizeof(prefix))
    return ErrStatus("%s: corrupt chunk at byte offset %llu: compressed chunk without its length", p, o);
  memcpy(&prefix, payload, sizeof(prefix));
  if (prefix.raw_len == 0 || prefix.raw_len > kMaxChunkPayload)
    return ErrStatus("%s: corrupt chunk at byte offset %llu: compressed chunk claims %u bytes", p, o,
                     prefix.raw_len);
  // A few bytes of zstd can claim 64 MiB; what a file may inflate to in
  // total is bounded by its size so a hostile file cannot exhaust memory.
  if (inflated_bytes_ + prefix.raw_len > std::max<uint64_t>(kMaxInflateRatio * map_len_, kMaxChunkPayload))
    return ErrStatus("%s: corrupt chunk at byte offset %llu: the compressed chunks inflate to more than %llu "
                     "times the file size",
                     p, o, static_cast<unsigned long long>(kMaxInflateRatio));
  std::unique_ptr<uint8_t[]> out(new (std::nothrow) uint8_t[prefix.raw_len]);
  if (!out)
    return ErrStatus("%s: chunk at byte offset %llu: %u bytes do not fit in memory", p, o, prefix.raw_len);
  const size_t n = ZSTD_decompress(out.get(), prefix.raw_len, payload + sizeof(prefix), len - sizeof(prefix));
  if (ZSTD_isError(n) || n != prefix.raw_len)
    return ErrStatus("%s: corrupt chunk at byte offset %llu: the compressed records do not decompress (%s)", p, o,
                     ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong length");
  inflated_bytes_ += prefix.raw_len;
  inflated_.push_back(std::move(out));
  return std::pair<const uint8_t*, size_t>{inflated_.back().get(), prefix.raw_len};
}

Status TraceReader::ValidateRecords(const ChunkHeader& ch, uint64_t body, const uint8_t* payload, size_t len) {
  const char* p = path_.c_str();
  if (ch.cpu >= meta_.ncpus)
    return ErrStatus("%s: corrupt chunk at byte offset %llu: cpu %u >= ncpus %u", p,
                     static_cast<unsigned long long>(body - sizeof(ch)), ch.cpu, meta_.ncpus);
  // Validate every record now, so later stages can trust sizes. Tasks are
  // collected aside and kept only if the whole chunk is sound.
  std::vector<std::pair<uint32_t, TaskInfo>> tasks;
  uint64_t roff = 0, n = 0;
  while (roff < len) {
    jdw_record_header h;
    if (len - roff < sizeof(h))
      return ErrStatus("%s: corrupt record at byte offset %llu: partial header", p,
                       static_cast<unsigned long long>(body + roff));
    memcpy(&h, payload + roff, sizeof(h));
    const EventDesc* d = FindEvent(h.type);
    if (h.size < sizeof(h) || h.size % 8 != 0 || h.size > len - roff ||
        (d && h.size < d->record_size()))
      return ErrStatus("%s: corrupt record at byte offset %llu: size %u invalid for type %u", p,
                       static_cast<unsigned long long>(body + roff), h.size, h.type);
    if (d && (h.type == JDW_EVENT_TASK_FORK || h.type == JDW_EVENT_TASK_EXEC)) {
      const uint8_t* pl = payload + roff + sizeof(h);
      if (h.type == JDW_EVENT_TASK_FORK) {
        jdw_task_fork f;
        memcpy(&f, pl, sizeof(f));
        tasks.push_back({f.child_tid, TaskInfo{f.child_tgid, std::string(f.comm, strnlen(f.comm, sizeof(f.comm)))}});
      } else {
        jdw_task_exec e;
        memcpy(&e, pl, sizeof(e));
        tasks.push_back({h.tid, TaskInfo{h.tgid, std::string(e.comm, strnlen(e.comm, sizeof(e.comm)))}});
      }
    }
    roff += h.size;
    ++n;
  }
  if (n != ch.record_count)
    return ErrStatus("%s: corrupt chunk at byte offset %llu: %llu records, header says %llu", p,
                     static_cast<unsigned long long>(body - sizeof(ch)), static_cast<unsigned long long>(n),
                     static_cast<unsigned long long>(ch.record_count));
  for (auto& [tid, t] : tasks) meta_.tasks[tid] = std::move(t);
  return Status::Ok();
}

void TraceReader::ForEachRecord(const std::function<void(const jdw_record_header&)>& fn) const {
  for (const auto& c : chunks_) {
    size_t off = 0;
    while (off < c.len) {
      const auto* h = reinterpret_cast<const jdw_record_header*>(c.data + off);
      fn(*h);
      off += h->size;
    }
  }
}

}  // namespace jackdaw::trace
