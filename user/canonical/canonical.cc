#include "canonical/canonical.h"

#include "canonical/tid_map.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace jackdaw::canonical {
namespace {

// Forks and roots are ordered by this many leading symbols of their subtree
// before falling back to size, demand and a structural hash. A bounded
// prefix keeps the key O(1) per node.
constexpr size_t kOrderPrefix = 16;

uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

const std::string kInterruptSymbolStr(kInterruptSymbol);

// Fnv1a of a symbol that lives as long as the process (an interned
// model::Symbol's string, kInterruptSymbolStr), through a direct-mapped
// slot per address: every node of every request hashed its symbol, and a
// request repeats a handful of them.
uint64_t SymbolHash(const std::string& symbol) {
  struct Slot {
    const std::string* key = nullptr;
    uint64_t hash = 0;
  };
  constexpr size_t kSlots = 64;
  thread_local std::array<Slot, kSlots> slots{};
  Slot& slot = slots[(reinterpret_cast<uintptr_t>(&symbol) >> 4) & (kSlots - 1)];
  if (slot.key != &symbol) slot = Slot{&symbol, Fnv1a(symbol)};
  return slot.hash;
}

bool HasPrefix(std::string_view symbol, const std::vector<std::string>& prefixes) {
  for (const std::string& p : prefixes)
    if (symbol.substr(0, p.size()) == p) return true;
  return false;
}

// Which of CanonicalOptions' symbol prefix lists a symbol starts with,
// memoised per interned symbol (model::Symbol: one string per name, so its
// address is the key). Testing some twenty prefixes on every event of every
// request was a fifth of canonicalization in `jackdaw live`; a workload has
// a few dozen symbols. The memo holds for one set of lists: Canonicalize()
// binds it to its options' lists first (compared by content: a request's
// few comparisons, not its events'), and options with other lists start it
// afresh. Per thread, like Canonicalize's scratch.
class PrefixMemo {
 public:
  enum : uint8_t { kScheduling = 1, kDurability = 2, kBlockWrite = 4 };
  static PrefixMemo& Get() {
    thread_local PrefixMemo memo;
    return memo;
  }
  // `id`: a Canonicalizer's (its options never change), or 0 (compare).
  void Bind(const CanonicalOptions& o, uint64_t id) {
    if (id != 0 && id == bound_id_) return;
    bound_id_ = id;
    if (o.scheduling_symbol_prefixes == scheduling_ && o.durability_symbol_prefixes == durability_ &&
        o.block_write_symbol_prefixes == block_write_)
      return;
    scheduling_ = o.scheduling_symbol_prefixes;
    durability_ = o.durability_symbol_prefixes;
    block_write_ = o.block_write_symbol_prefixes;
    memo_.clear();
    slots_.fill(Slot{});
  }
  uint8_t Of(const model::Symbol& symbol) {
    const std::string* key = &symbol.str();
    // A direct-mapped slot per address in front of the map: a request's
    // events repeat a handful of symbols, and the map's lookup cost ~90
    // instructions an event.
    Slot& slot = slots_[(reinterpret_cast<uintptr_t>(key) >> 4) & (kSlots - 1)];
    if (slot.key == key) return slot.classes;
    uint8_t c;
    if (const auto it = memo_.find(key); it != memo_.end()) {
      c = it->second;
    } else {
      c = 0;
      if (HasPrefix(*key, scheduling_)) c |= kScheduling;
      if (HasPrefix(*key, durability_)) c |= kDurability;
      if (HasPrefix(*key, block_write_)) c |= kBlockWrite;
      if (memo_.size() >= kMaxSymbols) memo_.clear();
      memo_.emplace(key, c);
    }
    slot = Slot{key, c};
    return c;
  }

 private:
  static constexpr size_t kMaxSymbols = 1 << 14;
  static constexpr size_t kSlots = 64;
  struct Slot {
    const std::string* key = nullptr;
    uint8_t classes = 0;
  };
  std::vector<std::string> scheduling_, durability_, block_write_;
  uint64_t bound_id_ = 0;  // the lists are this Canonicalizer's (0: none known)
  std::unordered_map<const std::string*, uint8_t> memo_;
  std::array<Slot, kSlots> slots_{};
};

// Scheduling, or durability work (CanonicalOptions::durability_symbol_prefixes,
// which names the join's synthetic io_start of a block write too). The
// prefix lists are the options' through PrefixMemo (bound by Canonicalize).
bool IsSchedulingArtefact(const model::RequestEvent& e, const CanonicalOptions&) {
  if (e.synthetic != model::SyntheticKind::kNone && e.synthetic != model::SyntheticKind::kIoStart) return false;
  const uint8_t c = PrefixMemo::Get().Of(e.symbol);
  if (e.synthetic == model::SyntheticKind::kNone && (c & PrefixMemo::kScheduling)) return true;
  return c & PrefixMemo::kDurability;
}

Demand EventDemand(const model::RequestEvent& e, const CanonicalOptions&) {
  Demand d{e.cpu_ns, e.disk_bytes, e.net_bytes};
  if (e.disk_bytes && (PrefixMemo::Get().Of(e.symbol) & PrefixMemo::kBlockWrite)) d.disk_write_bytes = e.disk_bytes;
  return d;
}

// A wake-up edge into the first event its target thread has in the request:
// the thread entered the request there (a pool thread handed work). The
// join observes such a hand-off only when the thread was asleep.
bool IsWakeupFork(const model::CausalEdge& e, const std::vector<model::RequestEvent>& events,
                  const TidIndex& first_of_thread) {
  if (e.kind != model::EdgeKind::kWakeup || e.from >= e.to || e.to >= events.size()) return false;
  const uint32_t to_tid = events[e.to].tid;
  if (to_tid == kInterruptTid || events[e.from].tid == to_tid) return false;
  const uint32_t* first = first_of_thread.Get(to_tid);
  return first && *first == e.to;
}

TidIndex FirstOfThread(const std::vector<model::RequestEvent>& events) {
  TidIndex first;
  for (uint32_t i = 0; i < events.size(); ++i) first.KeepFirst(events[i].tid, i);
  return first;
}

// The wake-up hand-offs CanonicalOptions::elide_wakeup_forks removes: into
// a thread's first event, from a synthetic Signal to a synthetic Resume that
// are endpoints of no other edge.
std::vector<std::pair<uint32_t, uint32_t>> ElidableForks(const std::vector<model::RequestEvent>& events,
                                                         const std::vector<model::CausalEdge>& edges) {
  std::vector<std::pair<uint32_t, uint32_t>> forks;
  const uint32_t n = static_cast<uint32_t>(events.size());
  bool any = false;
  for (const model::CausalEdge& e : edges) any |= e.kind == model::EdgeKind::kWakeup;
  if (!any) return forks;
  const auto first = FirstOfThread(events);
  std::vector<uint8_t> uses(n, 0);
  for (const model::CausalEdge& e : edges) {
    if (e.from >= e.to || e.to >= n) continue;
    if (uses[e.from] < 2) uses[e.from]++;
    if (uses[e.to] < 2) uses[e.to]++;
  }
  for (const model::CausalEdge& e : edges) {
    if (!IsWakeupFork(e, events, first)) continue;
    if (events[e.from].synthetic != model::SyntheticKind::kSignal ||
        events[e.to].synthetic != model::SyntheticKind::kResume || uses[e.from] != 1 || uses[e.to] != 1)
      continue;
    forks.emplace_back(e.from, e.to);
  }
  return forks;
}

// CanonicalOptions::idle_wakeup_cpu_ns: the threads that entered through an
// elided hand-off and did nothing of the request's there (no event but
// scheduling records and the hand-off's Resume, little CPU, no I/O).
std::vector<char> IdleWakees(const std::vector<model::RequestEvent>& events,
                             const std::vector<std::pair<uint32_t, uint32_t>>& forks,
                             const CanonicalOptions& options, std::unordered_map<uint32_t, uint32_t>* fork_of) {
  std::vector<char> idle_event(events.size(), 0);
  if (options.idle_wakeup_cpu_ns == 0 || forks.empty()) return idle_event;
  std::unordered_map<uint32_t, uint32_t> target;  // tid -> its fork's Resume
  for (auto [from, to] : forks) target.emplace(events[to].tid, to);
  struct Sum {
    Demand demand;
    bool own = false;
  };
  std::unordered_map<uint32_t, Sum> sum;
  for (uint32_t i = 0; i < events.size(); ++i) {
    auto it = target.find(events[i].tid);
    if (it == target.end()) continue;
    Sum& s = sum[events[i].tid];
    s.demand += EventDemand(events[i], options);
    if (i != it->second && (events[i].synthetic != model::SyntheticKind::kNone ||
                            !IsSchedulingArtefact(events[i], options)))
      s.own = true;
  }
  for (auto [from, to] : forks) {
    const Sum& s = sum[events[to].tid];
    if (s.own || s.demand.cpu_ns >= options.idle_wakeup_cpu_ns || s.demand.disk_bytes || s.demand.net_bytes)
      continue;
    if (fork_of) fork_of->emplace(events[to].tid, from);
    for (uint32_t i = to; i < events.size(); ++i)
      if (events[i].tid == events[to].tid) idle_event[i] = 1;
  }
  return idle_event;
}

// CanonicalOptions::infer_unobserved_joins. A thread T that entered the
// request through a wake-up from thread P, and whose part ended with no edge
// back to P while P went on, handed its result back without P having to
// wait: P's check found it done, so the kernel saw no wake-up. The join P
// would have waited at is put where P next did something of its own (its
// first non-scheduling event after T's last event): a Signal after T's last
// event, a Resume just before that event of P, and a wake-up edge between
// them, exactly what the trace shows when P had to wait. Returns false if it
// inferred none; otherwise fills `out`, whose `origin` maps each of its
// events to the request's (an inferred event to the one it sits next to).
struct Augmented {
  std::vector<model::RequestEvent> events;
  std::vector<model::CausalEdge> edges;
  std::vector<uint32_t> origin;
  uint32_t inferred = 0;
};

bool InferUnobservedJoins(const model::Request& request, const CanonicalOptions& options,
                          Augmented* out) {
  const auto& events = request.events;
  const uint32_t n = static_cast<uint32_t>(events.size());
  bool any_wakeup = false;
  for (const model::CausalEdge& e : request.edges) any_wakeup |= e.kind == model::EdgeKind::kWakeup;
  if (!any_wakeup) return false;
  const auto first = FirstOfThread(events);
  TidIndex last;
  for (uint32_t i = 0; i < n; ++i) last.Set(events[i].tid, i);
  std::vector<char> fork_endpoint(n, 0);
  for (const model::CausalEdge& e : request.edges)
    if (IsWakeupFork(e, events, first)) fork_endpoint[e.from] = fork_endpoint[e.to] = 1;
  const std::vector<char> idle =
      options.elide_wakeup_forks
          ? IdleWakees(events, ElidableForks(events, request.edges), options, nullptr)
          : std::vector<char>(n, 0);
  struct Join {
    uint32_t after;   // T's last event: the Signal follows it
    uint32_t before;  // P's next event of its own: the Resume precedes it
  };
  std::vector<Join> joins;
  for (const model::CausalEdge& e : request.edges) {
    if (!IsWakeupFork(e, events, first) || idle[e.to]) continue;
    const uint32_t p = events[e.from].tid, t = events[e.to].tid;
    bool answered = false;
    for (const model::CausalEdge& b : request.edges)
      answered |= b.from < n && b.to < n && events[b.from].tid == t && events[b.to].tid == p;
    if (answered) continue;
    const uint32_t t_last = *last.Get(t);  // t is a tid of the request's events
    for (uint32_t j = t_last + 1; j < n; ++j) {
      const model::RequestEvent& ev = events[j];
      if (ev.tid != p || fork_endpoint[j] || IsSchedulingArtefact(ev, options)) continue;
      joins.push_back(Join{t_last, j});
      break;
    }
  }
  if (joins.empty()) return false;
  out->inferred = static_cast<uint32_t>(joins.size());
  std::vector<model::RequestEvent>* events_out = &out->events;
  std::vector<model::CausalEdge>* edges_out = &out->edges;
  std::vector<uint32_t> index(n);
  std::vector<int64_t> signal_of(joins.size(), -1), resume_of(joins.size(), -1);
  events_out->clear();
  events_out->reserve(n + 2 * joins.size());
  out->origin.clear();
  out->origin.reserve(n + 2 * joins.size());
  // A synthetic Resume or Signal at event i's place on its thread.
  auto push_synthetic = [&](uint32_t i, model::SyntheticKind kind, const char* symbol) {
    model::RequestEvent e;
    e.ts_ns = events[i].ts_ns;
    e.tsc = events[i].tsc;
    e.tid = events[i].tid;
    e.cpu = events[i].cpu;
    e.synthetic = kind;
    e.symbol = symbol;
    events_out->push_back(std::move(e));
    out->origin.push_back(i);
    return static_cast<int64_t>(events_out->size() - 1);
  };
  for (uint32_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < joins.size(); ++k)
      if (joins[k].before == i) resume_of[k] = push_synthetic(i, model::SyntheticKind::kResume, "resume");
    index[i] = static_cast<uint32_t>(events_out->size());
    events_out->push_back(events[i]);
    out->origin.push_back(i);
    for (size_t k = 0; k < joins.size(); ++k)
      if (joins[k].after == i) signal_of[k] = push_synthetic(i, model::SyntheticKind::kSignal, "signal");
  }
  edges_out->clear();
  edges_out->reserve(request.edges.size() + joins.size());
  for (const model::CausalEdge& e : request.edges) {
    if (e.from >= n || e.to >= n) {
      edges_out->push_back(model::CausalEdge{n + 2 * static_cast<uint32_t>(joins.size()), 0, e.kind});
      continue;  // out of range stays out of range (ignored and counted later)
    }
    edges_out->push_back(model::CausalEdge{index[e.from], index[e.to], e.kind});
  }
  for (size_t k = 0; k < joins.size(); ++k)
    edges_out->push_back(model::CausalEdge{static_cast<uint32_t>(signal_of[k]),
                                           static_cast<uint32_t>(resume_of[k]),
                                           model::EdgeKind::kWakeup});
  return true;
}

// Per kept event, during construction (indices are kept positions, which
// follow timestamp order).
struct Node {
  uint32_t source = 0;
  Demand demand;
  int32_t thread_prev = -1;
  std::vector<uint32_t> in_edges;  // kept positions of edge sources
  uint64_t ready = 0, done = 0;
  int32_t critical_pred = -1;
  int32_t parent = -1;
  TreeRole role = TreeRole::kRoot;
  int32_t continuation = -1;    // child on the same thread
  std::vector<uint32_t> forks;  // children via causal edges
  // Ordering key of the subtree rooted here (inline: no allocation per node).
  struct Prefix {
    std::array<const std::string*, kOrderPrefix> s{};
    uint32_t n = 0;
    size_t size() const { return n; }
    const std::string* operator[](size_t i) const { return s[i]; }
  } prefix;
  uint32_t size = 1;
  Demand subtree_demand;
  uint64_t hash = 0;
  uint32_t repeats = 1;  // events of the run this node stands for
  bool interrupt = false;  // the request's aggregated interrupt-context work
};

bool SubtreeLess(const std::vector<Node>& nodes, uint32_t a, uint32_t b) {
  const Node& x = nodes[a];
  const Node& y = nodes[b];
  size_t n = std::min(x.prefix.size(), y.prefix.size());
  for (size_t i = 0; i < n; ++i) {
    int c = x.prefix[i]->compare(*y.prefix[i]);
    if (c != 0) return c < 0;
  }
  if (x.prefix.size() != y.prefix.size()) return x.prefix.size() < y.prefix.size();
  if (x.size != y.size) return x.size < y.size;
  // Larger demand first: the heavier branch is usually the one of interest.
  if (x.subtree_demand.cpu_ns != y.subtree_demand.cpu_ns)
    return x.subtree_demand.cpu_ns > y.subtree_demand.cpu_ns;
  if (x.subtree_demand.disk_bytes != y.subtree_demand.disk_bytes)
    return x.subtree_demand.disk_bytes > y.subtree_demand.disk_bytes;
  if (x.subtree_demand.net_bytes != y.subtree_demand.net_bytes)
    return x.subtree_demand.net_bytes > y.subtree_demand.net_bytes;
  if (x.hash != y.hash) return x.hash < y.hash;
  return a < b;  // indistinguishable subtrees: any order serializes alike
}

// A thread's fold of dropped events' demand into its next kept event.
struct ThreadFold {
  uint32_t tid = 0;
  Demand pending;
  int32_t last_kept = -1;
  int32_t last_any = -1;
};

// The per-request working arrays of Canonicalize(), kept between calls
// (per thread) so that a request costs no allocation for them once the
// arrays have grown to the usual size; a runaway request's are released
// after it (kScratchKeep).
struct Scratch {
  std::vector<char> elided, endpoint, keep, critical;
  std::vector<Demand> demand;
  std::vector<int32_t> pos, out_index;
  std::vector<std::pair<uint32_t, uint32_t>> edges, node_edges;
  std::vector<std::vector<uint32_t>> sources_of;
  std::vector<uint32_t> roots, stack;
  std::vector<char> idle;
  std::vector<ThreadFold> fold;
  SmallTidMap<uint32_t> fold_index;  // tid -> its entry in `fold`
  SmallTidMap<int32_t> last_on_thread;
  SmallTidMap<uint32_t> canonical_thread;
  // Nodes of the last request: the first `used` are this request's. A
  // reused node keeps its edge vectors' capacity, so steady state allocates
  // no node and no edge list.
  std::vector<Node> nodes;
  uint32_t used = 0;
  Node& NewNode() {
    if (used == nodes.size()) return nodes.emplace_back(), nodes[used++];
    Node& node = nodes[used++];
    std::vector<uint32_t> in_edges = std::move(node.in_edges), forks = std::move(node.forks);
    in_edges.clear();
    forks.clear();
    node = Node{};
    node.in_edges = std::move(in_edges);
    node.forks = std::move(forks);
    return node;
  }
};
constexpr uint32_t kScratchKeep = 1u << 16;

}  // namespace

static CanonicalRequest CanonicalizeBound(const model::Request& request, const CanonicalOptions& options,
                                          uint64_t bind_id) {
  CanonicalRequest out;
  out.request_id = request.id;
  if (request.has_message) {
    out.msg_in_bytes = request.msg_in_bytes;
    out.msg_out_bytes = request.msg_out_bytes;
  }
  if (request.events.empty()) return out;
  PrefixMemo::Get().Bind(options, bind_id);
  Augmented aug;
  const bool augmented = options.infer_unobserved_joins && InferUnobservedJoins(request, options, &aug);
  out.stats.inferred_joins = aug.inferred;
  const auto& events = augmented ? aug.events : request.events;
  const auto& request_edges = augmented ? aug.edges : request.edges;
  const uint32_t n = static_cast<uint32_t>(events.size());

  // Wake-up hand-offs to a thread entering the request
  // (CanonicalOptions::elide_wakeup_forks): their Signal and Resume go, and
  // the edge joins the kept events around them (below).
  thread_local Scratch scratch;
  std::vector<char>& elided = scratch.elided;
  elided.assign(n, 0);
  std::vector<std::pair<uint32_t, uint32_t>> forks;
  std::vector<char>& idle = scratch.idle;
  idle.assign(n, 0);
  std::unordered_map<uint32_t, uint32_t> idle_fork_of;  // idle wakee tid -> its hand-off's Signal
  if (options.elide_wakeup_forks) {
    forks = ElidableForks(events, request_edges);
    for (auto [from, to] : forks) elided[from] = elided[to] = 1;
    idle = IdleWakees(events, forks, options, &idle_fork_of);
    out.stats.elided_wakeup_forks = static_cast<uint32_t>(forks.size());
  }

  // Causal edges: forward in time only, deduplicated.
  std::vector<std::pair<uint32_t, uint32_t>>& edges = scratch.edges;
  edges.clear();
  edges.reserve(request_edges.size());
  for (const model::CausalEdge& e : request_edges) {
    if (e.from >= e.to || e.to >= n) {
      out.stats.ignored_backward_edges++;
      continue;
    }
    if (elided[e.from] && elided[e.to]) continue;
    edges.emplace_back(e.from, e.to);
  }
  std::sort(edges.begin(), edges.end());
  size_t before = edges.size();
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  // An edge within one thread says nothing program order does not.
  edges.erase(
      std::remove_if(edges.begin(), edges.end(),
                     [&](const auto& e) { return events[e.first].tid == events[e.second].tid; }),
      edges.end());
  out.stats.duplicate_edges = static_cast<uint32_t>(before - edges.size());

  std::vector<char>& endpoint = scratch.endpoint;
  endpoint.assign(n, 0);
  for (auto [from, to] : edges) endpoint[from] = endpoint[to] = 1;

  // Drop scheduling artefacts and fold their demand into the next kept
  // event of the same thread.
  std::vector<char>& keep = scratch.keep;
  keep.assign(n, 0);
  std::vector<Demand>& demand = scratch.demand;
  demand.assign(n, Demand{});
  // Per thread, in order of first event (the order the loop below takes
  // them in does not matter: each writes its own events, or adds). The last
  // hit is tried first: consecutive events are mostly on one thread.
  std::vector<ThreadFold>& fold = scratch.fold;
  fold.clear();
  SmallTidMap<uint32_t>& fold_index = scratch.fold_index;
  fold_index.Clear();
  uint32_t fold_hint = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const model::RequestEvent& e = events[i];
    demand[i] = EventDemand(e, options);
    keep[i] = !elided[i] && !idle[i] && (endpoint[i] || !IsSchedulingArtefact(e, options));
    if (fold_hint >= fold.size() || fold[fold_hint].tid != e.tid) {
      const uint32_t* known = fold_index.Find(e.tid);
      fold_hint = known ? *known : fold_index.Set(e.tid, static_cast<uint32_t>(fold.size()));
      if (fold_hint == fold.size()) fold.emplace_back().tid = e.tid;
    }
    ThreadFold& f = fold[fold_hint];
    f.last_any = static_cast<int32_t>(i);
    if (keep[i]) {
      demand[i] += f.pending;
      f.pending = {};
      // The join inserts a Resume at its target's instant and charges the
      // CPU before that instant to the target; it was used before the
      // synchronization, so it belongs to the Resume.
      if (f.last_kept >= 0 && events[f.last_kept].synthetic == model::SyntheticKind::kResume &&
          e.synthetic == model::SyntheticKind::kNone && events[f.last_kept].ts_ns == e.ts_ns) {
        demand[f.last_kept] += demand[i];
        demand[i] = {};
      }
      f.last_kept = static_cast<int32_t>(i);
    } else {
      f.pending += demand[i];
    }
  }
  for (ThreadFold& f : fold) {
    const uint32_t tid = f.tid;
    if (f.last_kept >= 0) {
      demand[f.last_kept] += f.pending;
      continue;
    }
    // An idle wakee's demand goes to the kept event its hand-off came from.
    if (auto it = idle_fork_of.find(tid); it != idle_fork_of.end()) {
      int32_t src = -1;
      for (uint32_t k = it->second + 1; k-- > 0;) {
        if (keep[k] && events[k].tid == events[it->second].tid) {
          src = static_cast<int32_t>(k);
          break;
        }
      }
      if (src >= 0) {
        demand[src] += f.pending;
        out.stats.idle_wakeups++;
        continue;
      }
    }
    if (f.pending.IsZero()) continue;
    keep[f.last_any] = 1;
    demand[f.last_any] = f.pending;
  }

  // An elided hand-off's edge joins the kept events around it: the source
  // thread's last kept event at or before the Signal, the target thread's
  // first kept event at or after the Resume. The source's CPU up to the
  // Signal went to its next kept event, so the edge starts before it: where
  // in the source's work the hand-off came is what the trace shows only when
  // the target slept, and is not kept.
  if (!forks.empty()) {
    std::unordered_map<uint32_t, std::vector<uint32_t>> kept_on;
    for (uint32_t i = 0; i < n; ++i)
      if (keep[i]) kept_on[events[i].tid].push_back(i);
    for (auto [from, to] : forks) {
      const auto& src = kept_on[events[from].tid];
      const auto& dst = kept_on[events[to].tid];
      auto s_it = std::upper_bound(src.begin(), src.end(), from);
      auto d_it = std::lower_bound(dst.begin(), dst.end(), to);
      if (s_it == src.begin() || d_it == dst.end()) continue;
      const uint32_t a = *(s_it - 1), b = *d_it;
      if (a < b) edges.emplace_back(a, b);
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  }

  // Edge sources per destination (source indices), for the merge test.
  std::vector<std::vector<uint32_t>>& sources_of = scratch.sources_of;
  if (sources_of.size() > n) sources_of.resize(n);
  for (auto& v : sources_of) v.clear();
  sources_of.resize(n);
  for (auto [from, to] : edges) sources_of[to].push_back(from);

  // Kept events in timestamp order; a run of events with the same symbol on
  // one thread becomes one node (its first event) carrying the run's demand.
  std::vector<int32_t>& pos = scratch.pos;
  pos.assign(n, -1);
  std::vector<Node>& nodes = scratch.nodes;
  scratch.used = 0;
  SmallTidMap<int32_t>& last_on_thread = scratch.last_on_thread;
  last_on_thread.Clear();
  // Interrupt context: one node, not in program order with anything.
  int32_t interrupt_node = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if (!keep[i]) {
      out.stats.dropped_scheduling_events++;
      continue;
    }
    if (options.aggregate_interrupt_events && events[i].tid == kInterruptTid && !endpoint[i]) {
      if (interrupt_node >= 0) {
        pos[i] = interrupt_node;
        nodes[interrupt_node].demand += demand[i];
        nodes[interrupt_node].repeats++;
        out.stats.merged_repeats++;
        continue;
      }
      interrupt_node = pos[i] = static_cast<int32_t>(scratch.used);
      Node& node = scratch.NewNode();
      node.source = i;
      node.demand = demand[i];
      node.interrupt = true;
      continue;
    }
    const int32_t* last = last_on_thread.Find(events[i].tid);
    const int32_t prev = last ? *last : -1;
    if (options.merge_repeats && prev >= 0 &&
        events[nodes[prev].source].symbol == events[i].symbol) {
      // The run's node sits at its first event; it can take i's incoming
      // edges only if their sources come before it (the order stays
      // topological).
      bool ok = true;
      for (uint32_t src : sources_of[i]) ok = ok && pos[src] < prev;
      if (ok) {
        pos[i] = prev;
        nodes[prev].demand += demand[i];
        nodes[prev].repeats++;
        out.stats.merged_repeats++;
        continue;
      }
    }
    pos[i] = static_cast<int32_t>(scratch.used);
    last_on_thread.Set(events[i].tid, pos[i]);
    Node& node = scratch.NewNode();
    node.source = i;
    node.demand = demand[i];
    node.thread_prev = prev;
  }
  // Edges between nodes: merged runs can make several edges one.
  std::vector<std::pair<uint32_t, uint32_t>>& node_edges = scratch.node_edges;
  node_edges.clear();
  node_edges.reserve(edges.size());
  for (auto [from, to] : edges)
    node_edges.emplace_back(static_cast<uint32_t>(pos[from]), static_cast<uint32_t>(pos[to]));
  std::sort(node_edges.begin(), node_edges.end());
  node_edges.erase(std::unique(node_edges.begin(), node_edges.end()), node_edges.end());
  out.stats.merged_edges = static_cast<uint32_t>(edges.size() - node_edges.size());
  for (auto [from, to] : node_edges) nodes[to].in_edges.push_back(from);
  const uint32_t m = scratch.used;

  // Schedule on unlimited CPUs. Node positions are a topological order:
  // thread predecessors and edge sources both come earlier. The CPU charged
  // to an event was used by its thread since its previous event, so on a
  // thread that was already in the request it runs from the previous
  // event's completion, and the event itself happens once that work and
  // every edge source are done. A thread's first event has no work of the
  // request before it: its work starts when its sources are done.
  uint64_t latency = 0;
  int32_t last = -1;
  for (uint32_t k = 0; k < m; ++k) {
    Node& node = nodes[k];
    uint64_t sources_done = 0;
    int32_t latest_source = -1;
    for (uint32_t src : node.in_edges) {
      if (latest_source < 0 || nodes[src].done > sources_done) {
        sources_done = nodes[src].done;
        latest_source = static_cast<int32_t>(src);
      }
    }
    if (node.thread_prev >= 0) {
      node.ready = nodes[node.thread_prev].done;
      node.done = std::max(node.ready + node.demand.cpu_ns, sources_done);
      node.critical_pred = node.thread_prev;
      if (latest_source >= 0 && sources_done > node.ready + node.demand.cpu_ns)
        node.critical_pred = latest_source;
    } else {
      node.ready = sources_done;
      node.done = node.ready + node.demand.cpu_ns;
      node.critical_pred = latest_source;
    }
    if (last < 0 || node.done > latency) {
      latency = node.done;
      last = static_cast<int32_t>(k);
    }
  }
  out.latency_ns = latency;

  // Overlay the binary tree.
  for (uint32_t k = 0; k < m; ++k) {
    Node& node = nodes[k];
    if (!node.in_edges.empty()) {
      uint32_t best = node.in_edges.front();
      for (uint32_t src : node.in_edges)
        if (nodes[src].done > nodes[best].done) best = src;
      node.parent = static_cast<int32_t>(best);
      node.role = TreeRole::kFork;
      nodes[best].forks.push_back(k);
    } else if (node.thread_prev >= 0) {
      node.parent = node.thread_prev;
      node.role = TreeRole::kContinue;
      nodes[node.thread_prev].continuation = static_cast<int32_t>(k);
    }
  }

  // Subtree keys bottom-up (children have larger positions than parents),
  // ordering each node's forks on the way.
  for (uint32_t k = m; k-- > 0;) {
    Node& node = nodes[k];
    std::sort(node.forks.begin(), node.forks.end(),
              [&](uint32_t a, uint32_t b) { return SubtreeLess(nodes, a, b); });
    const std::string& sym = node.interrupt ? kInterruptSymbolStr : events[node.source].symbol.str();
    node.prefix.s[0] = &sym;
    node.prefix.n = 1;
    node.subtree_demand = node.demand;
    node.size = 1;
    uint64_t h = SymbolHash(sym);
    auto absorb = [&](uint32_t c, uint64_t role_tag) {
      const Node& child = nodes[c];
      for (uint32_t i = 0; i < child.prefix.n && node.prefix.n < kOrderPrefix; ++i)
        node.prefix.s[node.prefix.n++] = child.prefix.s[i];
      node.size += child.size;
      node.subtree_demand += child.subtree_demand;
      h = Mix(Mix(h, role_tag), child.hash);
    };
    if (node.continuation >= 0) absorb(static_cast<uint32_t>(node.continuation), 1);
    for (uint32_t c : node.forks) absorb(c, 2);
    node.hash = h;
  }

  // Roots in the order they began (node positions follow timestamps), then
  // the interrupt-context aggregate. Several roots mean causality that was
  // not observed (a pool thread took work from a queue without being woken,
  // so the hand-off left no edge). An unobserved cause still came before its
  // effect, so the order roots began in is the order the missing edges
  // would have put them in: the request's beginning first, then the threads
  // it handed work to, in the order they took it up — just as in the tree of
  // a request whose hand-offs were seen (with elide_wakeup_forks, the same
  // sequence exactly).
  std::vector<uint32_t>& roots = scratch.roots;
  roots.clear();
  int32_t interrupt_root = -1;
  for (uint32_t k = 0; k < m; ++k) {
    if (nodes[k].parent >= 0) continue;
    if (nodes[k].interrupt) {
      interrupt_root = static_cast<int32_t>(k);
    } else {
      roots.push_back(k);
    }
  }
  if (interrupt_root >= 0) roots.push_back(static_cast<uint32_t>(interrupt_root));

  std::vector<char>& critical = scratch.critical;
  critical.assign(m, 0);
  for (int32_t k = last; k >= 0; k = nodes[k].critical_pred) critical[k] = 1;

  // Depth-first, continuation before forks. Iterative: a long thread is a
  // long chain of continuations.
  std::vector<int32_t>& out_index = scratch.out_index;
  out_index.assign(m, -1);
  SmallTidMap<uint32_t>& canonical_thread = scratch.canonical_thread;  // tid -> canonical thread,
  canonical_thread.Clear();                                             // numbered as first met
  std::vector<uint32_t>& stack = scratch.stack;
  stack.assign(roots.rbegin(), roots.rend());
  out.events.reserve(m);
  while (!stack.empty()) {
    uint32_t k = stack.back();
    stack.pop_back();
    const Node& node = nodes[k];
    const model::RequestEvent& src = events[node.source];
    CanonicalEvent ce;
    ce.source_index = augmented ? aug.origin[node.source] : node.source;
    const uint32_t* known = canonical_thread.Find(src.tid);
    ce.thread = known ? *known : canonical_thread.Set(src.tid, static_cast<uint32_t>(canonical_thread.size()));
    ce.synthetic = src.synthetic;
    ce.symbol = node.interrupt ? kInterruptSymbolStr : src.symbol;
    ce.demand = node.demand;
    ce.repeats = node.repeats;
    ce.ready_ns = node.ready;
    ce.done_ns = node.done;
    ce.parent = node.parent >= 0 ? out_index[node.parent] : -1;
    ce.role = node.role;
    ce.leaf = node.continuation < 0 && node.forks.empty();
    ce.critical = critical[k];
    out_index[k] = static_cast<int32_t>(out.events.size());
    out.total += ce.demand;
    out.events.push_back(std::move(ce));
    for (auto f = node.forks.rbegin(); f != node.forks.rend(); ++f) stack.push_back(*f);
    if (node.continuation >= 0) stack.push_back(static_cast<uint32_t>(node.continuation));
  }
  out.num_threads = static_cast<uint32_t>(canonical_thread.size());
  if (n > kScratchKeep) scratch = Scratch{};
  return out;
}

CanonicalRequest Canonicalize(const model::Request& request, const CanonicalOptions& options) {
  return CanonicalizeBound(request, options, 0);
}

Canonicalizer::Canonicalizer(CanonicalOptions options) : options_(std::move(options)) {
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id.fetch_add(1, std::memory_order_relaxed);
}

CanonicalRequest Canonicalizer::operator()(const model::Request& request) const {
  return CanonicalizeBound(request, options_, id_);
}

}  // namespace jackdaw::canonical
