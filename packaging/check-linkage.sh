#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Fails unless every binary given depends only on the system libraries a
# distribution package may depend on: libdbus, GLib/GIO/GObject, SQLite and
# the C/C++ runtime that the statically linked Swift runtime needs (libc,
# libm, libstdc++, libgcc_s, the dynamic loader).
#
#   packaging/check-linkage.sh BINARY...
#
# Two checks per binary:
#   1. its own NEEDED entries (readelf -d) are all on the allowed list;
#   2. everything `ldd` resolves is either on the allowed list or pulled in by
#      an allowed library itself (GLib's libmount/libffi/libpcre2, libdbus's
#      libsystemd, ...), nothing is "not found", and nothing comes from the
#      Swift toolchain (libswift*, Foundation, dispatch, ICU): a dynamically
#      linked Swift runtime means the build forgot --static-swift-stdlib.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 BINARY..." >&2
  exit 2
fi

# GnuTLS: useractivity-handoffd makes its key and certificate with it (TLS itself
# goes through GIO and glib-networking, loaded at run time).
allowed='^(linux-vdso\.so\.1|linux-gate\.so\.1|ld-linux[-a-z0-9_.]*\.so\.[0-9]+|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libutil\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libdbus-1\.so\.3|libglib-2\.0\.so\.0|libgio-2\.0\.so\.0|libgobject-2\.0\.so\.0|libgmodule-2\.0\.so\.0|libsqlite3\.so\.0|libgnutls\.so\.30|libadwaita-1\.so\.0|libgtk-4\.so\.1|libpangocairo-1\.0\.so\.0|libpango-1\.0\.so\.0|libharfbuzz\.so\.0|libgdk_pixbuf-2\.0\.so\.0|libcairo-gobject\.so\.2|libcairo\.so\.2|libgraphene-1\.0\.so\.0)$'
swift_runtime='(^|/)lib(swift[A-Za-z_]*|_?Foundation[A-Za-z_]*|dispatch|BlocksRuntime|icu[a-z0-9_]*|_FoundationICU)\.so'

# ldd output as "soname<TAB>path" lines ("not found" as the path when unresolved).
ldd_pairs() {
  ldd "$1" | sed -n \
    -e 's/^[[:space:]]*\([^[:space:]]*\) => not found.*/\1\tnot found/p' \
    -e 's/^[[:space:]]*\([^[:space:]]*\) => \([^[:space:]]*\) (0x.*/\1\t\2/p' \
    -e 's/^[[:space:]]*\(\/[^[:space:]]*\) (0x.*/\1\t\1/p' \
    -e 's/^[[:space:]]*\(linux-[a-z]*\.so\.[0-9]*\) (0x.*/\1\t(kernel)/p' \
    | awk -F'\t' '{ n = $1; sub(/.*\//, "", n); print n "\t" $2 }'
}

status=0
for binary in "$@"; do
  name="$(basename "$binary")"
  if [ ! -x "$binary" ]; then
    echo "check-linkage: $binary: not an executable file" >&2
    status=1
    continue
  fi
  problems=()

  mapfile -t needed < <(readelf -dW "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  for lib in "${needed[@]}"; do
    [[ "$lib" =~ $allowed ]] || problems+=("links $lib directly (not an allowed system library)")
  done

  # The closure the allowed libraries bring along by themselves.
  declare -A explained=()
  while IFS=$'\t' read -r soname path; do
    if [[ "$soname" =~ $allowed ]] && [ -f "$path" ]; then
      explained["$soname"]=1
      while IFS=$'\t' read -r dep _; do explained["$dep"]=1; done < <(ldd_pairs "$path")
    fi
  done < <(ldd_pairs "$binary")

  while IFS=$'\t' read -r soname path; do
    if [ "$path" = "not found" ]; then
      problems+=("$soname is not found")
    elif [[ "$path" =~ $swift_runtime ]] || [[ "$path" == */swift/* ]]; then
      problems+=("$soname comes from the Swift toolchain ($path): build with --static-swift-stdlib")
    elif [ -z "${explained[$soname]:-}" ] && ! [[ "$soname" =~ $allowed ]]; then
      problems+=("depends on $soname ($path), which no allowed library explains")
    fi
  done < <(ldd_pairs "$binary")
  unset explained

  if [ ${#problems[@]} -gt 0 ]; then
    echo "check-linkage: $name FAILS:" >&2
    printf '  - %s\n' "${problems[@]}" >&2
    status=1
  else
    echo "check-linkage: $name ok: links ${needed[*]}"
  fi
done
exit $status
