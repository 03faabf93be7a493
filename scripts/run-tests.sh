#!/usr/bin/env bash
# Runs the whole test suite with ctest. Usage: run-tests.sh BUILD_DIR
# eBPF integration tests need root; with CI set they fail rather than skip.
set -euo pipefail
build=${1:?usage: run-tests.sh BUILD_DIR}
if [ "$(id -u)" -ne 0 ]; then
	echo "run-tests: not root: eBPF integration tests will be skipped (run: sudo make test)" >&2
fi
# Integration tests write scratch files to /var/tmp (disk-backed, for O_DIRECT).
exec ctest --test-dir "$build" --output-on-failure --no-tests=error --timeout 600 -j1
