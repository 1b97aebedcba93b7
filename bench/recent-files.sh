#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The recent-files bridge: a 10,000-entry recently-used.xbel imported on the
# first start, calls answered meanwhile, and the steady cost of one new entry,
# each against a baseline from the same run (bench/recent-files.py says
# which). Release build: debug Swift would measure the compiler's checks.
# Usage: bench/recent-files.sh [--entries N] [--small N] [--rounds N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v swift >/dev/null 2>&1 || PATH=/opt/swift/usr/bin:$PATH
swift build -c release --product useractivityd
exec /usr/bin/python3 bench/recent-files.py "$(swift build -c release --show-bin-path)/useractivityd" "$@"
