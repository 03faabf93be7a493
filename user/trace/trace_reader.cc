#include "trace/trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "trace/event_table.h"
#include "trace/trace_format.h"

namespace jackdaw::trace {
namespace {

using nlohmann::json;

void ParseClock(const json& j, ClockMapping* c) {
  if (!j.is_object()) return;
  c->method = j.value("method", c->method);
  c->tsc_per_ns = j.value("tsc_per_ns", c->tsc_per_ns);
  c->ref_mono_ns = j.value("ref_mono_ns", c->ref_mono_ns);
  c->ref_tsc = j.value("ref_tsc", c->ref_tsc);
  c->wall_minus_mono_ns = j.value("wall_minus_mono_ns", c->wall_minus_mono_ns);
  c->fit_max_residual_ns = j.value("fit_max_residual_ns", c->fit_max_residual_ns);
}

void MergeMeta(const json& j, TraceMeta* m) {
  if (!j.is_object()) return;
  if (j.contains("clock")) ParseClock(j["clock"], &m->time.clock);
  if (j.contains("app_probes") && j["app_probes"].is_array()) {
    m->app_probes.clear();
    for (const auto& p : j["app_probes"]) m->app_probes.push_back(p.is_string() ? p.get<std::string>() : "");
  }
  if (j.contains("tasks") && j["tasks"].is_object()) {
    for (const auto& [k, v] : j["tasks"].items()) {
      if (!v.is_object()) continue;
      uint32_t tid = static_cast<uint32_t>(strtoul(k.c_str(), nullptr, 10));
      m->tasks[tid] = TaskInfo{v.value("tgid", 0u), v.value("comm", std::string())};
    }
  }
}

}  // namespace

StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path, Options opts) {
  std::unique_ptr<TraceReader> r(new TraceReader());
  r->path_ = path;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ErrStatus("cannot open %s: %s", path.c_str(), strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return ErrStatus("%s is not a regular file", path.c_str());
  }
  r->map_len_ = st.st_size;
  if (r->map_len_ > 0) {
    void* p = mmap(nullptr, r->map_len_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      return ErrStatus("cannot map %s: %s", path.c_str(), strerror(errno));
    }
    r->map_ = static_cast<const uint8_t*>(p);
    madvise(p, r->map_len_, MADV_SEQUENTIAL);
  }
  close(fd);
  RETURN_IF_ERROR(r->Parse(opts.allow_truncated));
  return r;
}

TraceReader::~TraceReader() {
  if (map_) munmap(const_cast<uint8_t*>(map_), map_len_);
}

Status TraceReader::Parse(bool allow_truncated) {
  const char* p = path_.c_str();
  if (map_len_ < sizeof(FileHeader))
    return ErrStatus("%s: truncated at byte offset %zu: a .jdw file starts with a %zu-byte header",
                     p, map_len_, sizeof(FileHeader));
  FileHeader fh;
  memcpy(&fh, map_, sizeof(fh));
  if (memcmp(fh.magic, kFileMagic, sizeof(fh.magic)) != 0)
    return ErrStatus("%s: not a jackdaw trace (bad magic at byte offset 0; expected \"JDWTRACE\")", p);
  if (fh.version != kFormatVersion)
    return ErrStatus("%s: trace format version %u, this jackdaw reads version %u (use a matching jackdaw)",
                     p, fh.version, kFormatVersion);
  const uint64_t json_end = sizeof(FileHeader) + uint64_t{fh.header_json_len};
  if (json_end > map_len_)
    return ErrStatus("%s: truncated at byte offset %zu: header needs %llu bytes", p, map_len_,
                     static_cast<unsigned long long>(json_end));
  json header = json::parse(reinterpret_cast<const char*>(map_) + sizeof(FileHeader),
                            reinterpret_cast<const char*>(map_) + json_end, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    return ErrStatus("%s: corrupt header at byte offset %zu: not valid JSON", p, sizeof(FileHeader));
  meta_.header_json = header.dump();
  meta_.abi_version = header.value("abi_version", 0u);
  // ABI 2 differs from 3 only in the interaction record, which no ABI 2
  // recorder ever emitted, so its files read unchanged.
  if (meta_.abi_version != JDW_ABI_VERSION && meta_.abi_version != 2)
    return ErrStatus("%s: records use ABI version %u, this jackdaw reads version %u", p,
                     meta_.abi_version, JDW_ABI_VERSION);
  meta_.ncpus = header.value("ncpus", 0u);
  if (meta_.ncpus == 0 || meta_.ncpus > JDW_MAX_CPUS)
    return ErrStatus("%s: corrupt header: ncpus=%u", p, meta_.ncpus);
  meta_.host = header.value("host", std::string());
  meta_.kernel = header.value("kernel", std::string());
  meta_.backend = header.value("backend", std::string("bpf"));
  meta_.time.base = header.value("timebase", std::string("mono_ns")) == "tsc" ? Timebase::kTsc
                                                                               : Timebase::kMonoNs;
  if (header.contains("probe_groups") && header["probe_groups"].is_array())
    for (const auto& g : header["probe_groups"])
      if (g.is_string()) meta_.probe_groups.push_back(g.get<std::string>());
  if (header.contains("syscall_names") && header["syscall_names"].is_array())
    for (const auto& s : header["syscall_names"])
      meta_.syscall_names.push_back(s.is_string() ? s.get<std::string>() : "");
  MergeMeta(header, &meta_);
  meta_.losses.lost.assign(meta_.ncpus, std::vector<uint64_t>(JDW_GROUP_MAX, 0));

  uint64_t off = sizeof(FileHeader) + PadTo8(fh.header_json_len);
  auto damaged = [&](Status s) -> Status {
    if (!allow_truncated) return s;
    damage_ = s;
    return Status::Ok();
  };
  while (off < map_len_) {
    if (meta_.complete)
      return damaged(ErrStatus("%s: corrupt trace: data after the footer at byte offset %llu", p,
                               static_cast<unsigned long long>(off)));
    if (map_len_ - off < sizeof(ChunkHeader))
      return damaged(ErrStatus("%s: truncated at byte offset %llu: partial chunk header "
                               "(recording killed? records before this offset are intact)",
                               p, static_cast<unsigned long long>(off)));
    ChunkHeader ch;
    memcpy(&ch, map_ + off, sizeof(ch));
    if (ch.magic != kChunkMagic || ch.payload_len > kMaxChunkPayload)
      return damaged(ErrStatus("%s: corrupt chunk at byte offset %llu: bad chunk header", p,
                               static_cast<unsigned long long>(off)));
    const uint64_t body = off + sizeof(ch);
    if (body + PadTo8(ch.payload_len) > map_len_)
      return damaged(ErrStatus("%s: truncated at byte offset %llu: chunk needs %u bytes, file has %llu "
                               "(recording killed? records before this offset are intact)",
                               p, static_cast<unsigned long long>(off), ch.payload_len,
                               static_cast<unsigned long long>(map_len_ - body)));
    const uint8_t* payload = map_ + body;
    if (Crc32c(payload, ch.payload_len) != ch.crc32c)
      return damaged(ErrStatus("%s: corrupt chunk at byte offset %llu: checksum mismatch", p,
                               static_cast<unsigned long long>(off)));
    switch (static_cast<ChunkKind>(ch.kind)) {
      case ChunkKind::kRecords: {
        if (ch.cpu >= meta_.ncpus)
          return damaged(ErrStatus("%s: corrupt chunk at byte offset %llu: cpu %u >= ncpus %u", p,
                                   static_cast<unsigned long long>(off), ch.cpu, meta_.ncpus));
        // Validate every record now, so later stages can trust sizes.
        uint64_t roff = 0, n = 0;
        while (roff < ch.payload_len) {
          jdw_record_header h;
          if (ch.payload_len - roff < sizeof(h))
            return damaged(ErrStatus("%s: corrupt record at byte offset %llu: partial header", p,
                                     static_cast<unsigned long long>(body + roff)));
          memcpy(&h, payload + roff, sizeof(h));
          const EventDesc* d = FindEvent(h.type);
          if (h.size < sizeof(h) || h.size % 8 != 0 || h.size > ch.payload_len - roff ||
              (d && h.size < d->record_size()))
            return damaged(ErrStatus("%s: corrupt record at byte offset %llu: size %u invalid for type %u",
                                     p, static_cast<unsigned long long>(body + roff), h.size, h.type));
          if (d && (h.type == JDW_EVENT_TASK_FORK || h.type == JDW_EVENT_TASK_EXEC)) {
            const uint8_t* pl = payload + roff + sizeof(h);
            if (h.type == JDW_EVENT_TASK_FORK) {
              jdw_task_fork f;
              memcpy(&f, pl, sizeof(f));
              meta_.tasks[f.child_tid] = TaskInfo{f.child_tgid, std::string(f.comm, strnlen(f.comm, sizeof(f.comm)))};
            } else {
              jdw_task_exec e;
              memcpy(&e, pl, sizeof(e));
              meta_.tasks[h.tid] = TaskInfo{h.tgid, std::string(e.comm, strnlen(e.comm, sizeof(e.comm)))};
            }
          }
          roff += h.size;
          ++n;
        }
        if (n != ch.record_count)
          return damaged(ErrStatus("%s: corrupt chunk at byte offset %llu: %llu records, header says %llu",
                                   p, static_cast<unsigned long long>(off),
                                   static_cast<unsigned long long>(n),
                                   static_cast<unsigned long long>(ch.record_count)));
        chunks_.push_back(RecordChunk{ch.cpu, body, payload, ch.payload_len});
        break;
      }
      case ChunkKind::kMeta:
      case ChunkKind::kFooter: {
        json j = json::parse(reinterpret_cast<const char*>(payload),
                             reinterpret_cast<const char*>(payload) + ch.payload_len, nullptr, false);
        if (j.is_discarded() || !j.is_object())
          return damaged(ErrStatus("%s: corrupt chunk at byte offset %llu: metadata is not valid JSON",
                                   p, static_cast<unsigned long long>(off)));
        MergeMeta(j, &meta_);
        if (static_cast<ChunkKind>(ch.kind) == ChunkKind::kFooter) {
          meta_.complete = true;
          meta_.records_written = j.value("records", uint64_t{0});
          if (j.contains("lost") && j["lost"].is_array()) {
            size_t cpu = 0;
            for (const auto& row : j["lost"]) {
              if (cpu >= meta_.losses.lost.size() || !row.is_array()) break;
              for (size_t g = 0; g < row.size() && g < JDW_GROUP_MAX; ++g)
                meta_.losses.lost[cpu][g] = row[g].is_number_unsigned() ? row[g].get<uint64_t>() : 0;
              ++cpu;
            }
          }
        }
        break;
      }
      default:
        // Unknown chunk kinds from a newer writer are skipped, not fatal.
        break;
    }
    off = body + PadTo8(ch.payload_len);
  }
  if (!meta_.complete)
    return damaged(ErrStatus("%s: truncated at byte offset %zu: no footer (recording killed before "
                             "it finished? records before this offset are intact)",
                             p, map_len_));
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
