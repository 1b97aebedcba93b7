# SPDX-License-Identifier: Apache-2.0
#
# Sourced by build-deb.sh and build-rpm.sh, which take the same command line.

# parse_output_option DEFAULT ARGS...: sets output to --output DIR (default
# DEFAULT); --help prints the calling script's header comment.
parse_output_option() {
  local name
  name="$(basename "$0")"
  output="$1"
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --output|-o) output="$2"; shift 2 ;;
      --output=*) output="${1#*=}"; shift ;;
      -h|--help) sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
      *) echo "$name: unknown argument $1" >&2; exit 2 ;;
    esac
  done
}
