// The frequency prefix tree acceptor (Carrasco & Oncina 1994): one state per
// distinct prefix of the strings seen, counting the strings that passed
// through it and those that ended there. ALERGIA starts from it.
//
// Strings are added one at a time and only the tree is kept: a string is
// the path from the root to the state Add() returned, so a caller scoring
// many requests keeps one state index per request, not its events.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/likelihood/state_graph.h"

namespace jackdaw::model::likelihood {

class PrefixTree {
 public:
  PrefixTree();

  // Adds one string of symbol ids; `cpu_ns`, when given, is the demand of
  // each symbol's event (same length). Returns the state where it ended.
  uint32_t Add(std::span<const uint32_t> symbols, std::span<const uint64_t> cpu_ns = {});

  const std::vector<State>& states() const { return states_; }
  uint64_t strings() const { return states_[0].visits; }
  // One past the largest symbol id added (symbol ids are dense from 0).
  uint32_t alphabet_size() const { return alphabet_; }
  // Of each state: the state it hangs under (kNoState for the root), the
  // symbol leading into it and its depth (the prefix's length). A parent's
  // index is always smaller than its child's.
  uint32_t parent(uint32_t state) const { return parent_[state]; }
  uint32_t symbol_into(uint32_t state) const { return symbol_[state]; }
  uint32_t depth(uint32_t state) const { return depth_[state]; }
  // The symbols from the root to `state`: the string that ends there.
  std::vector<uint32_t> Path(uint32_t state) const;

 private:
  std::vector<State> states_;
  std::vector<uint32_t> parent_, symbol_, depth_;
  uint32_t alphabet_ = 0;
};

}  // namespace jackdaw::model::likelihood
