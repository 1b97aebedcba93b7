#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The in-memory SearchIndex (through ActivityStore.search) against an FTS5
# table in an in-memory database answering the same queries, side by side in
# one run: p50/p99 per query class, memory, build and per-row write cost at
# 1k, 10k and 100k entries (or the sizes given as arguments). No bus, no
# daemon; release build, since debug Swift would measure the compiler's checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
swift build -c release --package-path Benchmarks --product searchindex-bench
exec "$(swift build -c release --package-path Benchmarks --show-bin-path)/searchindex-bench" "$@"
