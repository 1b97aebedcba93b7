#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Copies the source tree (without .git and build directories) to
#   .build-pkg-out/src/useractivity-<version>/
# and prints that path. The copy's own SwiftPM scratch directory (.build-pkg)
# is kept, so package builds from it are incremental. Used by build-deb.sh
# and build-rpm.sh. Fails when the versions in debian/changelog, the RPM spec
# and the daemon disagree.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

deb_version="$(sed -n '1s/^useractivity (\([^)]*\)).*/\1/p' "$root/packaging/debian/changelog")"
upstream_version="${deb_version%-*}"
daemon_version="$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' "$root/Sources/UserActivityCore/Version.swift")"
rpm_version="$(sed -n 's/^Version:[[:space:]]*//p' "$root/packaging/rpm/useractivity.spec")"
if [ -z "$upstream_version" ] || [ "$upstream_version" != "$daemon_version" ] || [ "$upstream_version" != "$rpm_version" ]; then
  echo "stage-source.sh: versions disagree: packaging/debian/changelog '$upstream_version'," \
       "Sources/UserActivityCore/Version.swift '$daemon_version', packaging/rpm/useractivity.spec '$rpm_version'" >&2
  exit 1
fi

copy="$root/.build-pkg-out/src/useractivity-$upstream_version"
mkdir -p "$copy"
find "$copy" -mindepth 1 -maxdepth 1 ! -name .build-pkg -exec rm -rf {} +
tar -C "$root" --exclude=./.git --exclude=.build --exclude='.build-*' --exclude='.build_*' \
    --exclude=.swiftpm -cf - . | tar -C "$copy" -xf -
echo "$copy"
