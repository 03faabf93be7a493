#include "join/causality_tracker.h"

namespace jackdaw::join {

void CausalityTracker::NoteSyncBindings(Thread* t, std::span<const IKey> keys) const {
  for (const IKey& k : keys) {
    if (!cs_.IsSyncAttr(k.attr)) continue;
    bool found = false;
    for (SyncVal& sv : t->sync_vals) {
      if (sv.attr == k.attr) {
        sv.value = k.value;
        found = true;
      }
    }
    if (!found) t->sync_vals.push_back(SyncVal{k.attr, k.value});
  }
}

void CausalityTracker::SyncStatements(uint16_t def, std::span<const IKey> keys, const Thread* t,
                                      const Source& self, std::vector<EdgeCand>* edges) {
  const std::vector<schema::SyncStmt>& syncs = cs_.schema().syncs;
  for (size_t si = 0; si < syncs.size(); si++) {
    const schema::SyncStmt& st = syncs[si];
    if (st.dest != def && st.source != def) continue;
    uint64_t v = 0;
    for (size_t i = 0; i < keys.size() && !v; i++)
      if (keys[i].attr == st.attr) v = keys[i].value;
    if (!v && t) {
      for (const SyncVal& sv : t->sync_vals)
        if (sv.attr == st.attr) v = sv.value;
    }
    if (!v) continue;
    const IKey pk{v, static_cast<uint32_t>(si), 0};
    if (st.dest == def) {
      if (const Source* ps = pending_.Find(pk)) {
        edges->push_back(EdgeCand{ps->seq, self.seq, ps->ts, ps->tid, ps->cpu, 1});
        pending_.Erase(pk);
      }
    }
    if (st.source == def) pending_.Set(pk, self);
  }
}

}  // namespace jackdaw::join
