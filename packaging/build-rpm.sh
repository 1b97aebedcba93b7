#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the binary RPM from packaging/rpm/useractivity.spec with
# `rpmbuild -bb --build-in-place` in the same source copy build-deb.sh uses
# (.build-pkg-out/src/useractivity-<version>/, whose SwiftPM scratch directory
# is shared, so the Swift code is not compiled twice).
#
#   packaging/build-rpm.sh [--output DIR]      (default .build-pkg-out/rpm/)
#
# On Fedora, with the build dependencies installed, that is a normal build.
# On Debian (apt-get install rpm) it also works, with two adjustments:
#   --nodeps                     rpm's database is empty here, so rpmbuild
#                                cannot see the BuildRequires that dpkg installed
#   debug_package %{nil}         Debian's rpm has no find-debuginfo (debugedit),
#                                so no -debuginfo subpackage
# Set RPMBUILD_FLAGS to override those two (e.g. RPMBUILD_FLAGS= on Fedora).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=packaging/output-option.sh
. "$root/packaging/output-option.sh"
parse_output_option "$root/.build-pkg-out/rpm" "$@"
command -v rpmbuild >/dev/null || { echo "build-rpm.sh: rpmbuild is missing (Debian: apt-get install rpm)" >&2; exit 1; }
mkdir -p "$output"
output="$(cd "$output" && pwd)"

if [ -z "${RPMBUILD_FLAGS+set}" ]; then
  if [ -f /etc/debian_version ]; then
    RPMBUILD_FLAGS="--nodeps --define=debug_package\ %{nil}"
  else
    RPMBUILD_FLAGS=""
  fi
fi

source_copy="$("$root/packaging/stage-source.sh")"
topdir="$(dirname "$source_copy")/rpmbuild"
rm -rf "$topdir"
mkdir -p "$topdir"
# shellcheck disable=SC2086 # RPMBUILD_FLAGS is a list of flags
(cd "$source_copy" && eval rpmbuild -bb --build-in-place $RPMBUILD_FLAGS \
   --define '"_topdir $topdir"' \
   --define '"useractivity_scratch_path $source_copy/.build-pkg"' \
   packaging/rpm/useractivity.spec)
built=()
while IFS= read -r -d '' file; do
  mv -f "$file" "$output/"
  built+=("$output/$(basename "$file")")
done < <(find "$topdir/RPMS" -name '*.rpm' -print0)
printf 'build-rpm.sh: built %s\n' "${built[@]}"
