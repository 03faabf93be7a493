#include "model/likelihood/model_io.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace jackdaw::model::likelihood {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// The fix every malformed model shares: the file is analyze's to write.
constexpr const char* kRegenerate = "write it again with `jackdaw analyze TRACE --json FILE`";

// A member that must be a non-negative integer: nlohmann's get<uint64_t>
// would take -1 or 2.5 and wrap or truncate them.
StatusOr<uint64_t> Count(const json& o, const char* key, const std::string& where) {
  auto it = o.find(key);
  // Parsed text holds non-negative integers as unsigned; a document built
  // in code may hold them signed.
  const bool ok = it != o.end() && (it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() >= 0));
  if (!ok) return ErrStatus("%s: \"%s\" is missing or not a non-negative integer", where.c_str(), key);
  return it->get<uint64_t>();
}

// A string member, or "" if absent or not a string (json::value() would
// throw on a member of another type).
std::string StringMember(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

StatusOr<SavedModel> Parse(const json& m, const std::string& origin) {
  const auto bad = [&](const Status& s) {
    return Status::Error(origin + ": malformed likelihood model (" + s.message() + "): " + kRegenerate);
  };
  if (!m.is_object()) return bad(ErrStatus("not a JSON object"));
  if (StringMember(m, "format") != kModelFormat)
    return bad(ErrStatus("\"format\" is not \"%s\"", kModelFormat));
  const auto version = m.find("version");
  if (version == m.end() || !version->is_number_integer())
    return bad(ErrStatus("\"version\" is missing or not an integer"));
  if (version->get<int64_t>() != kModelVersion)
    return Status::Error(origin + ": likelihood model version " + version->dump() + ", this jackdaw reads version " +
                         std::to_string(kModelVersion) + ": " + kRegenerate + " with this jackdaw");
  SavedModel out;
  if (auto s = m.find("schema"); s != m.end() && s->is_string()) out.schema = s->get<std::string>();
  else return bad(ErrStatus("\"schema\" is missing or not a string"));
  if (auto a = m.find("alpha"); a != m.end() && a->is_number() && a->get<double>() > 0 && a->get<double>() <= 1)
    out.alpha = a->get<double>();
  else return bad(ErrStatus("\"alpha\" is missing or not in (0, 1]"));
  if (auto u = m.find("unlikely_below"); u != m.end()) {
    if (!u->is_number() || !(u->get<double>() <= 0))
      return bad(ErrStatus("\"unlikely_below\" is not a number at or below 0"));
    out.unlikely_below = u->get<double>();
  }
  const auto symbols = m.find("symbols");
  if (symbols == m.end() || !symbols->is_array()) return bad(ErrStatus("\"symbols\" is missing or not an array"));
  for (const json& s : *symbols) {
    if (!s.is_string()) return bad(ErrStatus("a symbol is not a string"));
    out.symbols.push_back(s.get<std::string>());
  }
  // The symbol names key the scorer's lookup: two ids of one name would
  // make one of them unreachable.
  {
    std::vector<std::string> sorted = out.symbols;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      return bad(ErrStatus("a symbol is listed twice"));
  }
  const auto states = m.find("states");
  if (states == m.end() || !states->is_array() || states->empty())
    return bad(ErrStatus("\"states\" is missing, not an array or empty"));
  const uint64_t n = states->size();
  std::vector<State> built;
  built.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const json& sj = (*states)[i];
    const std::string where = "state " + std::to_string(i);
    if (!sj.is_object()) return bad(ErrStatus("%s is not an object", where.c_str()));
    State st;
    auto visits = Count(sj, "visits", where);
    if (!visits.ok()) return bad(visits.status());
    st.visits = *visits;
    auto ends = Count(sj, "ends", where);
    if (!ends.ok()) return bad(ends.status());
    st.ends = *ends;
    if (auto cpu = sj.find("cpu_ns"); cpu != sj.end()) {
      auto count = cpu->is_object() ? Count(*cpu, "count", where + " cpu_ns") : StatusOr<uint64_t>(uint64_t{0});
      const auto mean = cpu->is_object() ? cpu->find("mean") : cpu->end();
      const auto sd = cpu->is_object() ? cpu->find("stddev") : cpu->end();
      if (!count.ok() || mean == cpu->end() || !mean->is_number() || sd == cpu->end() || !sd->is_number())
        return bad(ErrStatus("%s: \"cpu_ns\" is not {count, mean, stddev}", where.c_str()));
      st.cpu_ns.count = *count;
      st.cpu_ns.mean = mean->get<double>();
      st.cpu_ns.m2 = sd->get<double>() * sd->get<double>() * static_cast<double>(*count);
    }
    const auto tr = sj.find("transitions");
    if (tr == sj.end() || !tr->is_array()) return bad(ErrStatus("%s: \"transitions\" is missing or not an array", where.c_str()));
    uint64_t sum = st.ends;
    for (const json& tj : *tr) {
      if (!tj.is_object()) return bad(ErrStatus("%s: a transition is not an object", where.c_str()));
      Transition t;
      auto symbol = Count(tj, "symbol", where);
      auto target = Count(tj, "target", where);
      auto count = Count(tj, "count", where);
      if (!symbol.ok()) return bad(symbol.status());
      if (!target.ok()) return bad(target.status());
      if (!count.ok()) return bad(count.status());
      if (*symbol >= out.symbols.size())
        return bad(ErrStatus("%s: symbol %llu is past the %zu symbols", where.c_str(),
                             static_cast<unsigned long long>(*symbol), out.symbols.size()));
      if (*target >= n)
        return bad(ErrStatus("%s: target %llu is past the %llu states", where.c_str(),
                             static_cast<unsigned long long>(*target), static_cast<unsigned long long>(n)));
      if (!st.out.empty() && st.out.back().symbol >= *symbol)
        return bad(ErrStatus("%s: transitions are not in increasing symbol order", where.c_str()));
      t.symbol = static_cast<uint32_t>(*symbol);
      t.target = static_cast<uint32_t>(*target);
      t.count = *count;
      if (sum + t.count < sum) return bad(ErrStatus("%s: counts overflow", where.c_str()));
      sum += t.count;
      st.out.push_back(t);
    }
    // Probability() divides by visits: the counts must be the strings'.
    if (sum != st.visits)
      return bad(ErrStatus("%s: visits %llu are not its ends plus its transitions' counts (%llu)", where.c_str(),
                           static_cast<unsigned long long>(st.visits), static_cast<unsigned long long>(sum)));
    built.push_back(std::move(st));
  }
  out.automaton = Automaton(std::move(built), static_cast<uint32_t>(out.symbols.size()));
  return out;
}

}  // namespace

ordered_json SavedModelToJson(const SavedModel& m) {
  const Automaton& a = m.automaton;
  ordered_json states = ordered_json::array();
  for (uint32_t i = 0; i < a.num_states(); ++i) {
    const State& s = a.states()[i];
    ordered_json tr = ordered_json::array();
    for (const Transition& t : s.out)
      tr.push_back({{"symbol", t.symbol}, {"target", t.target}, {"count", t.count},
                    {"probability", a.Probability(i, t.symbol)}});
    states.push_back({{"visits", s.visits},
                      {"ends", s.ends},
                      {"end_probability", a.Probability(i, kEndSymbol)},
                      {"cpu_ns", {{"count", s.cpu_ns.count}, {"mean", s.cpu_ns.mean}, {"stddev", s.cpu_ns.stddev()}}},
                      {"transitions", std::move(tr)}});
  }
  ordered_json out{{"format", kModelFormat},
                      {"version", kModelVersion},
                      {"schema", m.schema},
                      {"alpha", m.alpha},
                      {"requests_learned", a.strings()},
                      {"smoothing", {{"in_model", "witten-bell"}, {"off_model", "laplace-unigram"}}},
                      {"symbols", m.symbols},
                      {"states", std::move(states)}};
  if (m.unlikely_below) out["unlikely_below"] = *m.unlikely_below;
  return out;
}

StatusOr<SavedModel> ModelFromJson(const json& j, const std::string& origin) {
  if (j.is_object() && StringMember(j, "format") == "jackdaw.model") {
    const auto l = j.find("likelihood");
    if (l == j.end() || !l->is_object() || !l->contains("model"))
      return Status::Error(origin + ": this analyze --json has no likelihood model (written by an older jackdaw, "
                                    "or no complete request was learned): " + kRegenerate + " with this jackdaw");
    return Parse((*l)["model"], origin);
  }
  return Parse(j, origin);
}

StatusOr<SavedModel> LoadModelFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrStatus("cannot read the likelihood model %s: %s (give the file `jackdaw analyze --json` wrote)",
                            path.c_str(), strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Status::Error(path + ": not JSON (truncated or another kind of file): " + kRegenerate);
  return ModelFromJson(j, path);
}

}  // namespace jackdaw::model::likelihood
