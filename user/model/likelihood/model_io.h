// The likelihood model saved and loaded: `jackdaw analyze --json` writes the
// learned automaton as `likelihood.model`, and `jackdaw live --baseline`
// reads it back to score new requests against it (docs/likelihood.md,
// "The saved model").
//
// What is saved is what Automaton::Probability() reads: per state the
// strings that reached it, ended there and left on each symbol (the
// smoothing is a function of these counts, so a loaded model scores every
// string to the bit as the learned one did), plus the symbol names, since
// ids are only meaningful within one trace's symbol table. Probabilities
// and the states' CPU are written for a reader of the file; the loader
// recomputes the former and keeps the latter for the explanations.
//
// Schema (format "jackdaw.likelihood", version 1):
//   format, version, schema (the schema whose canonical strings it learned),
//   alpha, requests_learned,
//   smoothing   {"in_model": "witten-bell", "off_model": "laplace-unigram"}
//   symbols     [name, ...]: symbol id i is symbols[i]
//   states      [{visits, ends, end_probability, cpu_ns {count, mean, stddev},
//                 transitions [{symbol, target, count, probability}]}]
//               states[0] is the start; transitions sorted by symbol.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "model/likelihood/likelihood_report.h"

namespace jackdaw::model::likelihood {

inline constexpr const char* kModelFormat = "jackdaw.likelihood";
inline constexpr int kModelVersion = 1;

nlohmann::ordered_json SavedModelToJson(const SavedModel& m);

// Reads a model object (format jackdaw.likelihood) or a whole `analyze
// --json` document (format jackdaw.model, the model under likelihood.model).
// Every inconsistency (a count that does not add up, a target or symbol out
// of range, a wrong type or version) is an error naming the cause and the
// fix; `origin` (a file name) starts the message.
StatusOr<SavedModel> ModelFromJson(const nlohmann::json& j, const std::string& origin);
StatusOr<SavedModel> LoadModelFile(const std::string& path);

}  // namespace jackdaw::model::likelihood
