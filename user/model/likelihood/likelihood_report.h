// What the likelihood model tells the reports (plain data: the reports
// render it, request_likelihood.h fills it): the model's size and the
// requests it found least likely, each with the steps that made it so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/likelihood/automaton.h"

namespace jackdaw::model::likelihood {

// The learned model as it is saved (model_io.h) and loaded: the automaton,
// the names of its symbol ids, the schema whose canonical strings it
// learned and ALERGIA's parameter.
struct SavedModel {
  std::string schema;
  double alpha = 0;
  Automaton automaton;
  std::vector<std::string> symbols;  // id -> canonical event symbol
  // The score below which a request is unlikely, calibrated on the
  // requests learned (calibration.h); absent in models saved before it.
  std::optional<double> unlikely_below;
};

// One step of an unlikely request: at its `position`-th canonical event it
// did `symbol` ("end": it ended there) with `probability`, where the model
// expected `expected` with `expected_probability`.
struct UnlikelyStep {
  uint32_t position = 0;
  std::string symbol;
  double probability = 0;
  std::string expected;
  double expected_probability = 0;
  // The automaton state the step left: how many strings reached it and the
  // CPU of the events that led into it (its demand distribution).
  uint32_t state = 0;
  uint64_t state_visits = 0;
  double state_cpu_mean_ns = 0, state_cpu_stddev_ns = 0;
};

struct UnlikelyRequest {
  uint64_t request_id = 0;
  double log_likelihood = 0;  // mean log-probability per event, end included
  uint32_t events = 0;        // canonical events
  // Steps within the automaton, least probable first. Once a request takes
  // a transition the automaton has not got, the rest of its events are
  // scored off the model (by their overall frequency): those are counted
  // here, not listed, since the model expected nothing in particular there.
  std::vector<UnlikelyStep> steps;
  uint32_t off_model_events = 0;
};

struct LikelihoodSummary {
  bool present = false;
  double alpha = 0;
  uint64_t requests_learned = 0;
  uint64_t prefix_tree_states = 0;
  uint64_t states = 0, transitions = 0;
  uint32_t alphabet = 0;   // distinct canonical event symbols
  uint32_t merges = 0;
  double learn_seconds = 0;
  std::vector<UnlikelyRequest> unlikely;  // least likely first
  // The model itself, for --json's likelihood.model (schema: the caller's).
  SavedModel model;
};

}  // namespace jackdaw::model::likelihood
