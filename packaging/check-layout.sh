#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Compares a list of installed files with the documented layout. A line's
# optional fourth column if=PATH makes it hold only when PATH is in the tree.
#
#   packaging/check-layout.sh VARIANT LIST-FILE|-
#
# VARIANT is install, deb, rpm or webext (see packaging/layout.txt); the list has one
# absolute path per line (files and symlinks; directories are ignored when
# they exist on this machine, so `dpkg -L` output can be given as is).
# Exits 1 and prints both differences when they differ, or when a file of the
# layout comes from a source that is not in the tree.
set -euo pipefail

if [ $# -ne 2 ]; then echo "usage: $0 install|deb|rpm|webext LIST-FILE|-" >&2; exit 2; fi
variant="$1"
list="$2"
case "$variant" in install|deb|rpm|webext) ;; *) echo "check-layout: unknown variant $variant" >&2; exit 2 ;; esac
root="$(cd "$(dirname "$0")/.." && pwd)"
layout="$root/packaging/layout.txt"

expected="$(mktemp)"; actual="$(mktemp)"
trap 'rm -f "$expected" "$actual"' EXIT

status=0
while read -r path variants source condition; do
  case "$path" in ""|\#*) continue ;; esac
  if [ -z "$source" ]; then echo "check-layout: $layout: malformed line for $path" >&2; exit 2; fi
  # An optional fourth column if=PATH: the line holds only when PATH is in the tree.
  case "$condition" in
    "") ;;
    if=*) [ -e "$root/${condition#if=}" ] || continue ;;
    *) echo "check-layout: $layout: unknown condition '$condition' for $path" >&2; exit 2 ;;
  esac
  # "*" is the main package's three variants; webext is a package of its own.
  case ",$variants," in
    *",$variant,"*) ;;
    ",*,") [ "$variant" != webext ] || continue ;;
    *) continue ;;
  esac
  if [ "$source" != "-" ] && [ ! -e "$root/$source" ]; then
    echo "check-layout: $path is documented as made from $source, which is not in the tree" >&2
    status=1
  fi
  echo "$path" >> "$expected"
done < "$layout"
sort -u -o "$expected" "$expected"

# Keep files and symlinks; drop directories (dpkg -L lists them).
if [ "$list" = "-" ]; then list=/dev/stdin; fi
while IFS= read -r path; do
  [ -n "$path" ] || continue
  if [ -d "$path" ] && [ ! -L "$path" ]; then continue; fi
  case "$path" in /.) continue ;; esac
  echo "$path"
done < "$list" | sort -u > "$actual"

# Lines with a * are patterns (files that package tools name themselves):
# each must match at least one installed file, and what they match is expected.
patterns=()
while IFS= read -r path; do
  case "$path" in *\**) patterns+=("$path") ;; esac
done < "$expected"
if [ ${#patterns[@]} -gt 0 ]; then
  literal="$(mktemp)"; trap 'rm -f "$expected" "$actual" "$literal"' EXIT
  grep -v '\*' "$expected" > "$literal" || true
  for pattern in "${patterns[@]}"; do
    matched=0
    while IFS= read -r path; do
      # shellcheck disable=SC2053 # the pattern is meant to match
      if [[ "$path" == $pattern ]]; then echo "$path" >> "$literal"; matched=1; fi
    done < "$actual"
    [ $matched -eq 1 ] || echo "$pattern" >> "$literal"
  done
  sort -u -o "$expected" "$literal"
fi

if ! diff -u --label "layout.txt ($variant)" --label "installed" "$expected" "$actual"; then
  echo "check-layout: the installed files ($variant) differ from packaging/layout.txt (- documented only, + installed only)" >&2
  status=1
fi
if [ $status -eq 0 ]; then
  echo "check-layout: $variant: $(wc -l < "$actual") files, as documented in packaging/layout.txt"
fi
exit $status
