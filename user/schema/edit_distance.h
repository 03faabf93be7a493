// Levenshtein distance (single-character insertions, deletions and
// substitutions), for "did you mean" hints: schema names here, the CLI's
// subcommands in cli/usage.
#pragma once

#include <cstddef>
#include <string_view>

namespace jackdaw::schema {

size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace jackdaw::schema
