#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the Debian package with `dpkg-buildpackage -us -uc -b` from a copy of
# the source tree in which packaging/debian is debian/.
#
#   packaging/build-deb.sh [--output DIR]
#
# Output (default .build-pkg-out/deb/): useractivity_<version>_<arch>.deb,
# webext-useractivity_<version>_<arch>.deb, their -dbgsym .debs, .buildinfo
# and .changes. The copy lives in
# .build-pkg-out/src/useractivity-<version>/ and keeps its SwiftPM scratch
# directory between runs, so a rebuild only compiles what changed.
#
# Needs: a Swift 6 toolchain on PATH (or SWIFT=/path/to/swift), and
#   apt-get install dpkg-dev debhelper libdbus-1-dev libglib2.0-dev libsqlite3-dev pkg-config
# SwiftPM fetches the two pinned dependencies (swift-log, swift-argument-parser)
# on the first build unless they are in its cache (~/.cache/org.swift.swiftpm).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=packaging/output-option.sh
. "$root/packaging/output-option.sh"
parse_output_option "$root/.build-pkg-out/deb" "$@"
mkdir -p "$output"
output="$(cd "$output" && pwd)"

for tool in dpkg-buildpackage dh; do
  command -v "$tool" >/dev/null || {
    echo "build-deb.sh: $tool is missing: apt-get install dpkg-dev debhelper" >&2; exit 1; }
done

source_copy="$("$root/packaging/stage-source.sh")"
cp -a "$root/packaging/debian" "$source_copy/debian"
deb_version="$(dpkg-parsechangelog -l "$source_copy/debian/changelog" -S Version)"

export SCRATCH_PATH="$source_copy/.build-pkg"
(cd "$source_copy" && dpkg-buildpackage -us -uc -b)

parent="$(dirname "$source_copy")"
arch="$(dpkg-architecture -qDEB_HOST_ARCH)"
built=()
# useractivity and webext-useractivity (the browser extension), with their -dbgsym.
for file in "$parent"/{,webext-}useractivity*_"${deb_version}"_"$arch".{deb,ddeb,buildinfo,changes}; do
  [ -e "$file" ] || continue
  mv -f "$file" "$output/"
  built+=("$output/$(basename "$file")")
done
printf 'build-deb.sh: built %s\n' "${built[@]}"
