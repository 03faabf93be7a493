// jackdaw dump: a trace's records, human-readably, or a summary of counts.
#include <arpa/inet.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <map>
#include <queue>

#include "cli/commands.h"
#include "cli/usage.h"
#include "trace/event_table.h"
#include "trace/trace_reader.h"

namespace jackdaw::cli {
namespace {

struct DumpArgs {
  std::string file;
  bool summary = false;
  bool salvage = false;
  uint64_t limit = 0;
  std::vector<uint32_t> pids;       // a record's thread or process
  std::vector<std::string> types;   // event names, as printed
  double from_s = -1, to_s = -1;    // seconds from the trace's first record, as printed
};

// The records a dump prints: every filter given must hold.
struct RecordFilter {
  std::vector<uint32_t> pids;
  std::vector<uint16_t> types;
  uint64_t from_ns = 0, to_ns = UINT64_MAX;  // since the first record
  bool Keeps(const jdw_record_header& h, uint64_t since_first_ns) const {
    if (!pids.empty() && std::find(pids.begin(), pids.end(), h.tid) == pids.end() &&
        std::find(pids.begin(), pids.end(), h.tgid) == pids.end())
      return false;
    if (!types.empty() && std::find(types.begin(), types.end(), h.type) == types.end()) return false;
    return since_first_ns >= from_ns && since_first_ns <= to_ns;
  }
};

// --type names, checked against the event table: an unknown one is a
// usage error that lists the names.
StatusOr<RecordFilter> MakeFilter(const DumpArgs& a) {
  RecordFilter f;
  f.pids = a.pids;
  for (const std::string& name : a.types) {
    const trace::EventDesc* d = trace::FindEvent(name);
    if (!d) {
      std::string known;
      for (const trace::EventDesc& e : trace::AllEvents()) known += (known.empty() ? "" : ", ") + std::string(e.name);
      return ErrStatus("dump --type %s: no such event (known: %s)", name.c_str(), known.c_str());
    }
    f.types.push_back(d->id);
  }
  if (a.from_s >= 0) f.from_ns = static_cast<uint64_t>(a.from_s * 1e9);
  if (a.to_s >= 0) f.to_ns = static_cast<uint64_t>(a.to_s * 1e9);
  if (f.from_ns > f.to_ns) return ErrStatus("dump: --from %.6f is after --to %.6f", a.from_s, a.to_s);
  return f;
}

std::string Addr(uint16_t family, const uint8_t* a, uint16_t port) {
  char buf[INET6_ADDRSTRLEN + 8] = "?";
  if (family == 2) inet_ntop(AF_INET, a, buf, sizeof(buf));
  else if (family == 10) inet_ntop(AF_INET6, a, buf, sizeof(buf));
  return std::string(family == 10 ? "[" : "") + buf + (family == 10 ? "]" : "") + ":" + std::to_string(port);
}

const char* kCtx[] = {"task", "softirq", "hardirq", "nmi"};
const char* kObj[] = {"none", "socket", "pipe", "file", "futex", "epoll", "fd"};

// A block request's operation (the kernel's REQ_OP_* values).
const char* BlockOp(uint64_t op) {
  switch (op) {
    case 0: return "read";
    case 1: return "write";
    case 2: return "flush";
    case 3: return "discard";
    case 5: return "secure_erase";
    case 9: return "write_zeroes";
    default: return "op";
  }
}

void PrintRecord(const trace::TraceMeta& m, const jdw_record_header& h, uint64_t t0) {
  const trace::EventDesc* d = trace::FindEvent(h.type);
  const uint64_t ns = m.time.ToMonoNs(h.ts);
  // The process as the trace names it (its task table and fork/exec
  // records): "-" for a thread it never named (an interrupted one).
  const auto task = m.tasks.find(h.tid);
  const std::string comm = task != m.tasks.end() && !task->second.comm.empty() ? task->second.comm : "-";
  printf("%12.6f cpu%-2u %7u/%-7u %-15.15s %-7s %-16s", double(ns - t0) / 1e9, h.cpu, h.tid, h.tgid, comm.c_str(),
         h.ctx < 4 ? kCtx[h.ctx] : "?", d ? d->name : "unknown");
  if (!d) {
    printf(" type=%u size=%u\n", h.type, h.size);
    return;
  }
  const uint8_t* p = trace::Payload(h);
  auto syscall = [&](uint64_t nr) -> std::string {
    return nr < m.syscall_names.size() && !m.syscall_names[nr].empty() ? m.syscall_names[nr]
                                                                       : "sys_" + std::to_string(nr);
  };
  switch (h.type) {
    case JDW_EVENT_SOCK_INFO: {
      jdw_sock_info s;
      memcpy(&s, p, sizeof(s));
      if (s.family == 1) {
        // a unix socket: its peer socket and process, and the name (an
        // abstract one's leading NUL shown as '@')
        std::string name(s.path, std::min<size_t>(s.path_len, sizeof(s.path)));
        if (!name.empty() && name[0] == '\0') name[0] = '@';
        name.resize(strnlen(name.c_str(), name.size()));
        printf(" sk=%#" PRIx64 " unix %s peer_sk=%#" PRIx64 " peer_pid=%u %s%s%s\n", uint64_t(s.sk),
               s.sock_type == 5 ? "seqpacket" : "stream", uint64_t(s.peer_sk), s.peer_tgid,
               s.unix_flags & JDW_UNIX_PATH_PEER ? "peer_path=" : "path=", name.c_str(),
               s.path_len - (s.path[0] ? 1u : 0u) > sizeof(s.path) ? "..." : "");
        return;
      }
      printf(" sk=%#" PRIx64 " %s %s -> %s\n", uint64_t(s.sk), s.protocol == 6 ? "tcp" : "udp",
             Addr(s.family, s.saddr, s.sport).c_str(), Addr(s.family, s.daddr, s.dport).c_str());
      return;
    }
    case JDW_EVENT_NET_XMIT:
    case JDW_EVENT_NET_RECV: {
      jdw_net_packet n;
      memcpy(&n, p, sizeof(n));
      printf(" if=%u len=%u %s %s -> %s seq=%u ack=%u flags=%#x payload=%u sk=%#" PRIx64 "\n",
             n.ifindex, n.len, n.protocol == 6 ? "tcp" : n.protocol == 17 ? "udp" : "ip",
             Addr(n.family, n.saddr, n.sport).c_str(), Addr(n.family, n.daddr, n.dport).c_str(), n.seq,
             n.ack, n.tcp_flags, n.payload_len, uint64_t(n.sk));
      return;
    }
    case JDW_EVENT_USDT: {
      jdw_usdt u;
      memcpy(&u, p, sizeof(u));
      printf(" %s", u.probe_id < m.app_probes.size() ? m.app_probes[u.probe_id].c_str() : "probe?");
      for (uint32_t i = 0; i < u.nargs && i < JDW_USDT_MAX_ARGS; ++i) printf(" arg%u=%" PRId64, i, int64_t(u.args[i]));
      printf("\n");
      return;
    }
  }
  const bool block = h.type == JDW_EVENT_BLOCK_ISSUE || h.type == JDW_EVENT_BLOCK_COMPLETE;
  for (const auto& f : d->fields) {
    if (strcmp(f.name, "reserved") == 0) continue;
    if (f.kind == trace::FieldKind::kChars) {
      printf(" %s=%.*s", f.name, int(strnlen(reinterpret_cast<const char*>(p + f.offset), f.count)),
             reinterpret_cast<const char*>(p + f.offset));
      continue;
    }
    if (f.count != 1) continue;
    const uint64_t v = trace::ReadScalar(h, f);
    if (strcmp(f.name, "nr") == 0) printf(" %s", syscall(v).c_str());
    else if (strcmp(f.name, "obj_kind") == 0) printf(" obj=%s", v < 7 ? kObj[v] : "?");
    else if (block && strcmp(f.name, "dev") == 0)  // the kernel's dev_t: 12 bits of major, 20 of minor
      printf(" dev=%" PRIu64 ":%" PRIu64, v >> 20, v & 0xfffff);
    else if (block && strcmp(f.name, "op") == 0)  // cmd_flags: the operation in its low byte, then flags
      printf(" op=%s(%#" PRIx64 ")", BlockOp(v & 0xff), v);
    else if (strcmp(f.name, "obj") == 0 || strcmp(f.name, "rq") == 0 || strcmp(f.name, "sk") == 0)
      printf(" %s=%#" PRIx64, f.name, v);
    else if (f.kind == trace::FieldKind::kSigned) printf(" %s=%" PRId64, f.name, int64_t(v));
    else printf(" %s=%" PRIu64, f.name, v);
  }
  printf("\n");
}

int Run(const DumpArgs& a) {
  auto filter = MakeFilter(a);
  if (!filter.ok()) {
    PrintError(filter.status().message());
    return kExitUsage;
  }
  auto r = trace::TraceReader::OpenForCli(a.file, a.salvage);
  if (!r.ok()) {
    PrintError(r.status().message());
    return 1;
  }
  const trace::TraceReader& tr = **r;
  const trace::TraceMeta& m = tr.meta();
  if (!tr.damage().ok()) fprintf(stderr, "jackdaw: warning: %s\n", tr.damage().message().c_str());
  if (a.summary) {
    std::map<uint16_t, uint64_t> per_type;
    std::vector<uint64_t> per_cpu(m.ncpus, 0);
    uint64_t total = 0, first = UINT64_MAX, last = 0;
    tr.ForEachRecord([&](const jdw_record_header& h) {
      ++per_type[h.type];
      ++per_cpu[h.cpu < m.ncpus ? h.cpu : 0];
      ++total;
      first = std::min<uint64_t>(first, h.ts);
      last = std::max<uint64_t>(last, h.ts);
    });
    printf("trace:    %s (%s)\n", a.file.c_str(), m.complete ? "complete" : "INCOMPLETE");
    printf("host:     %s, kernel %s, %u cpus, backend %s\n", m.host.c_str(), m.kernel.c_str(), m.ncpus,
           m.backend.c_str());
    if (m.time.clock.method == "none")
      printf("clock:    none (the recording ended before its first clock sync: TSC frequency unknown)\n");
    else
      printf("clock:    %s, TSC %.6f GHz, fit residual %.0f ns\n", m.time.clock.method.c_str(),
             m.time.clock.tsc_per_ns, m.time.clock.fit_max_residual_ns);
    std::string groups;
    for (const auto& g : m.probe_groups) groups += (groups.empty() ? "" : ",") + g;
    printf("probes:   %s\n", groups.c_str());
    printf("events:   %" PRIu64 " over %.3f s\n", total,
           total ? double(m.time.ToMonoNs(last) - m.time.ToMonoNs(first)) / 1e9 : 0.0);
    uint64_t stored = 0, expanded = 0;
    for (const auto& c : tr.chunks()) stored += c.stored_count, expanded += c.record_count;
    if (stored != expanded)
      printf("stored:   %" PRIu64 " records (%" PRIu64 " syscalls stored as one combined record each)\n", stored,
             expanded - stored);
    printf("\n%-18s %12s\n", "type", "count");
    for (auto [t, n] : per_type) {
      const trace::EventDesc* d = trace::FindEvent(t);
      printf("%-18s %12" PRIu64 "\n", d ? d->name : ("type" + std::to_string(t)).c_str(), n);
    }
    printf("\n%-6s %12s %12s\n", "cpu", "events", "lost");
    for (uint32_t c = 0; c < m.ncpus; ++c) {
      uint64_t lost = 0;
      for (uint64_t v : m.losses.lost[c]) lost += v;
      printf("%-6u %12" PRIu64 " %12" PRIu64 "\n", c, per_cpu[c], lost);
    }
    printf("\nlost per group:");
    for (uint32_t g = 0; g < JDW_GROUP_MAX; ++g) {
      uint64_t lost = 0;
      for (uint32_t c = 0; c < m.ncpus; ++c) lost += m.losses.lost[c][g];
      if (std::string(trace::GroupName(g)) != "unknown") printf(" %s=%" PRIu64, trace::GroupName(g), lost);
    }
    printf("  (total %" PRIu64 ")\n", m.losses.total());
    return ExitFor(tr);
  }
  // Time order across CPUs: the per-CPU chunk streams (each in time order)
  // merged by their head records, a chunk at a time in memory.
  std::vector<trace::RecordCursor> cursors = tr.CursorsByCpu(/*retain=*/false);
  using Head = std::pair<uint64_t, uint32_t>;  // (ts, cursor)
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (uint32_t i = 0; i < cursors.size(); i++)
    if (const jdw_record_header* h = cursors[i].Peek()) heads.emplace(h->ts, i);
  const uint64_t t0 = heads.empty() ? 0 : m.time.ToMonoNs(heads.top().first);
  uint64_t n = 0;
  while (!heads.empty() && !(a.limit && n >= a.limit)) {
    const uint32_t i = heads.top().second;
    heads.pop();
    trace::RecordCursor& cur = cursors[i];
    const jdw_record_header* h = cur.Peek();
    const uint64_t ns = m.time.ToMonoNs(h->ts);
    if (filter->Keeps(*h, ns > t0 ? ns - t0 : 0)) {
      PrintRecord(m, *h, t0);
      ++n;
    }
    cur.Advance(h);
    if (const jdw_record_header* next = cur.Peek()) heads.emplace(next->ts, i);
  }
  return ExitFor(tr);
}

}  // namespace

Runner RegisterDump(CLI::App& app) {
  auto args = std::make_shared<DumpArgs>();
  CLI::App* sub = app.add_subcommand("dump",
                                     "Print a trace's events, or with --summary counts per type and CPU and losses.\n"
                                     "  jackdaw dump out.jdw --summary\n"
                                     "  jackdaw dump out.jdw --limit 100\n"
                                     "  jackdaw dump out.jdw --pid 4242 --type sys_enter,sys_exit --from 1.5 --to 2");
  sub->add_option("file", args->file, "trace file (.jdw)")->type_name("FILE")->required();
  sub->add_flag("--summary", args->summary, "counts per event type and CPU, losses, clock");
  sub->add_option("--limit", args->limit, "print at most N events")->type_name("N");
  sub->add_flag("--salvage", args->salvage, "read the intact part of a truncated or damaged trace");
  sub->add_option("-p,--pid", args->pids, "only records of this thread or process (repeatable, comma-separated)")
      ->type_name("PID")
      ->delimiter(',');
  sub->add_option("-t,--type", args->types,
                  "only events of this type, as printed (sched_switch, sys_enter, net_xmit, ...; comma-separated)")
      ->type_name("TYPE")
      ->delimiter(',');
  sub->add_option("--from", args->from_s, "only records at or after this many seconds from the trace's first, as printed")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber.description("0 or more"));
  sub->add_option("--to", args->to_s, "only records at or before this many seconds from the trace's first")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber.description("0 or more"));
  return [args] { return Run(*args); };
}

}  // namespace jackdaw::cli
