// The Reber grammar (Reber 1967; Magpie HotOS 2003 Figure 6), for tests and
// benchmarks: a known probabilistic automaton whose strings ALERGIA must
// learn back. Every branch is taken with probability 1/2.
//
//   0 -B-> 1;  1 -T-> 2 | -P-> 3;  2 -S-> 2 | -X-> 4;  3 -T-> 3 | -V-> 5;
//   4 -X-> 3 | -S-> 6;  5 -P-> 4 | -V-> 6;  6 -E-> end
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace jackdaw::model::likelihood::reber {

struct Edge {
  char symbol;
  int target;  // 7: the string ends after E
};
// Two choices per state (state 0 and 6 have one).
inline constexpr Edge kEdges[7][2] = {
    {{'B', 1}, {'B', 1}}, {{'T', 2}, {'P', 3}}, {{'S', 2}, {'X', 4}}, {{'T', 3}, {'V', 5}},
    {{'X', 3}, {'S', 6}}, {{'P', 4}, {'V', 6}}, {{'E', 7}, {'E', 7}},
};

inline std::string Generate(std::mt19937_64& rng) {
  std::string s;
  for (int state = 0; state != 7;) {
    const Edge& e = kEdges[state][rng() & 1];
    s += e.symbol;
    state = e.target;
  }
  return s;
}

// The probability the grammar gives `s` (0 if it is not in its language).
inline double TrueProbability(const std::string& s) {
  double p = 1;
  int state = 0;
  for (char c : s) {
    if (state == 7) return 0;
    const Edge* taken = nullptr;
    for (const Edge& e : kEdges[state])
      if (e.symbol == c) taken = &e;
    if (!taken) return 0;
    if (kEdges[state][0].symbol != kEdges[state][1].symbol) p *= 0.5;
    state = taken->target;
  }
  return state == 7 ? p : 0;
}

}  // namespace jackdaw::model::likelihood::reber
