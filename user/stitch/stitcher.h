// Cross-machine stitching (Magpie §4.1): request fragments extracted on
// several machines, each on its own clock, joined into end-to-end requests
// where a TCP segment one machine sent is one another machine received.
//
// Algorithm.
//  1. Matching needs no clock: a sent segment and a received one are the
//     same bytes when their directional 5-tuple is equal and their sequence
//     ranges overlap (ranges rather than equal starts, so that a segment the
//     sender's TSO split or the receiver's GRO merged still matches).
//     Addresses must be the same on both machines (no NAT in between).
//  2. Each match links the sending fragment and the receiving one. The
//     caller of the two is the end that sent the connection's first data
//     (the client speaks first); the other is its callee. Which flow came
//     first is what both fragments' first segments on the connection say;
//     should they disagree (a fragment that lacks the first segment), the
//     earlier of the two on trace 0's clock. A fragment
//     with no caller is the root of an end-to-end request, which holds every
//     fragment reachable from it through callee links.
//  3. Clock offsets: for machines i and j, a segment sent by i at t_i and
//     received by j at t_j gives t_j - t_i = off_ij + delay >= off_ij; one
//     the other way gives t_i - t_j = -off_ij + delay'. With the smallest
//     delay each way taken as equal (NTP's assumption), off_ij = (min d_ij -
//     min d_ji) / 2, uncertain by half the smallest round trip
//     ((min d_ij + min d_ji) / 2). With matches one way only the offset is
//     bounded, not estimated, and is reported as such. Every machine's
//     offset is expressed against the first trace's clock, through a chain
//     of estimated pairs (breadth-first from trace 0).
//  4. Each end-to-end request becomes one model::Request on the root
//     trace's clock: every fragment's events shifted by its machine's
//     offset, threads renamed apart per machine (tids are per machine), and
//     a SYNC edge from each matched send to its receive, so that
//     canonicalization sees the call structure.
//  Traces with no segment matched against any other are unstitchable: they
//  are reported and left out, never merged by time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "request/request.h"
#include "stitch/segments.h"

namespace jackdaw::stitch {

// One machine's input: its requests and the segments of each (segments[i]
// belongs to requests[i]).
struct TraceFragments {
  std::string name;  // for messages: the file name
  std::vector<model::Request> requests;
  std::vector<std::vector<Segment>> segments;
};

struct ClockOffset {
  bool known = false;      // linked to trace 0 through matched segments
  bool estimated = false;  // matches both ways on every link of the chain
  // this trace's clock minus trace 0's (ns); with one-way matches only,
  // the bound the matches give (offset <= this, or >=: see `one_way`).
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;  // half the smallest round trip
  uint64_t matched_segments = 0;  // on the links of the chain
  std::string one_way;            // why only a bound, when !estimated
};

struct FragmentRef {
  uint32_t trace = 0;
  uint32_t request = 0;  // index into TraceFragments::requests
  int32_t caller = -1;   // index into EndToEnd::fragments, -1 for the root
};

struct EndToEnd {
  std::vector<FragmentRef> fragments;  // the root first, then depth-first
  model::Request request;              // merged, on trace 0's clock
};

struct StitchResult {
  std::vector<ClockOffset> offsets;  // per trace; offsets[0] is 0
  std::vector<EndToEnd> requests;    // one per root fragment that has a callee
  std::vector<uint32_t> unstitchable;      // traces that share no data with any other
  std::vector<uint64_t> lone_fragments;    // per trace: fragments in no end-to-end request
  uint64_t matched_segments = 0;
  uint64_t fragments_with_two_callers = 0;  // kept under the first caller seen
  // Matched segments whose fragments disagreed on which flow came first
  // (one lacks the connection's first segment): roles set by the clock.
  uint64_t roles_by_time = 0;
};

// Fails only when fewer than two traces are given.
StatusOr<StitchResult> Stitch(const std::vector<TraceFragments>& traces);

}  // namespace jackdaw::stitch
