// `jackdaw diff` output: the ranked text table and the JSON document
// (format jackdaw.diff, version 1; docs/diff.md).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "diff/change_detection.h"

namespace jackdaw::diff {

// Kinds matched, new and gone, then one line per change, ranked:
// kind, metric, before -> after, effect, adjusted p, share, significant.
// Only the first `max_rows` changes (0: all); the JSON holds every one.
void WriteTextTable(const DiffResult& result, std::ostream& out, size_t max_rows = 0);

nlohmann::ordered_json DiffToJson(const DiffResult& result, const DiffOptions& options);

}  // namespace jackdaw::diff
