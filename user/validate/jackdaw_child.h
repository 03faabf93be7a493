// A jackdaw command run beside a validation workload (a recorder, the
// interactions summariser): started with its stderr in a log file, and
// handed back only once it says it is ready, so the workload never runs
// before the probes are attached.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace jackdaw::validate {

// Runs argv (argv[0] a path) with stdin/stdout on /dev/null and stderr in
// `log`; returns its pid once `ready` appears in the log. Fails, with the
// log's text, if it exits first or is not ready within 30 s (then killed).
// The child gets SIGINT (a recorder's clean stop) if the caller dies.
StatusOr<pid_t> StartJackdawChild(const std::vector<std::string>& argv, const std::string& log,
                                  const std::string& ready);

}  // namespace jackdaw::validate
