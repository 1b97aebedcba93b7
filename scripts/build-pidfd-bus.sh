#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a dbus-daemon that offers ProcessFD in GetConnectionCredentials
# (dbus 1.16.2, Debian trixie's source) into .build-pidfd-bus/bin/, for the
# tests of identity by pidfd (Tests/SandboxTests/PIDReuseTests.swift). Debian
# 12's own dbus-daemon (1.14.10) does not offer ProcessFD; trixie's binary
# packages need a newer glibc, so the daemon is built from source against
# Debian 12's libraries. Only dbus-daemon is built, with libdbus linked in
# statically, so it does not pick up the system's libdbus-1 at run time.
#
# A no-op when the daemon is there and answers with ProcessFD. Needs meson,
# ninja-build, libexpat1-dev and python3-gi (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.16.2
tarball="dbus_${version}.orig.tar.xz"
url="http://deb.debian.org/debian/pool/main/d/dbus/$tarball"
# From trixie's Sources index (dists/trixie/main/source/Sources.xz).
sha256=0ba2a1a4b16afe7bceb2c07e9ce99a8c2c3508e5dec290dbb643384bd6beb7e2
prefix="$PWD/.build-pidfd-bus"
daemon="$prefix/bin/dbus-daemon"

# Starts the daemon on a throwaway bus and asks it for the credentials of the
# asking connection: they must hold a pidfd of this very process (the pidfd's
# Pid: line names the asker's PID).
offers_process_fd() {
  local scratch status=0
  scratch="$(mktemp -d /tmp/pidfd-bus-XXXXXX)"
  cat >"$scratch/session.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=$scratch</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/></policy>
</busconfig>
EOF
  "$daemon" --nofork --nopidfile --print-address=3 --config-file="$scratch/session.conf" \
    3>"$scratch/address" 2>"$scratch/daemon.log" &
  local bus=$!
  for _ in $(seq 100); do [ -s "$scratch/address" ] && break; sleep 0.1; done
  DBUS_SESSION_BUS_ADDRESS="$(head -n 1 "$scratch/address")" /usr/bin/python3 - <<'EOF' || status=$?
import os, sys
from gi.repository import Gio, GLib
bus = Gio.bus_get_sync(Gio.BusType.SESSION)
reply, fds = bus.call_with_unix_fd_list_sync(
    "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionCredentials",
    GLib.Variant("(s)", (bus.get_unique_name(),)), None, Gio.DBusCallFlags.NONE, 10000, None, None)
credentials = reply.unpack()[0]
if "ProcessFD" not in credentials:
    sys.exit("GetConnectionCredentials has no ProcessFD: " + ", ".join(sorted(credentials)))
fd = fds.get(credentials["ProcessFD"])
pid_line = [l for l in open(f"/proc/self/fdinfo/{fd}") if l.startswith("Pid:")]
if not pid_line or int(pid_line[0].split()[1]) != os.getpid():
    sys.exit(f"ProcessFD is not a pidfd of the caller: {pid_line}")
print(f"dbus-daemon {credentials.get('ProcessID')} -> ProcessFD is a pidfd of the caller")
EOF
  kill "$bus" 2>/dev/null || true
  wait "$bus" 2>/dev/null || true
  [ "$status" -eq 0 ] || cat "$scratch/daemon.log" >&2
  rm -rf "$scratch"
  return "$status"
}

if [ -x "$daemon" ] && "$daemon" --version | grep -q "Daemon $version\$" && offers_process_fd >/dev/null 2>&1; then
  exit 0
fi

work="$prefix/src"
rm -rf "$work"
mkdir -p "$work" "$prefix/bin"
curl -fsSL --retry 3 -o "$work/$tarball" "$url"
echo "$sha256  $work/$tarball" | sha256sum -c --quiet -
tar -C "$work" -xf "$work/$tarball"
# dbus reads the peer's pidfd only where the C headers define SO_PEERPIDFD
# (Linux 6.5); Debian 12's (Linux 6.1) do not, though the running kernel may
# have it. Its number is 77 on every architecture but alpha, mips, parisc and
# sparc (asm-generic/socket.h).
c_args=()
if ! printf '#include <sys/socket.h>\nint x = SO_PEERPIDFD;\n' | cc -fsyntax-only -x c - 2>/dev/null; then
  case "$(uname -m)" in
    x86_64|i?86|aarch64|arm*|riscv64|ppc64le|s390x|loongarch64) c_args=(-Dc_args=-DSO_PEERPIDFD=77) ;;
    *) echo "SO_PEERPIDFD: no headers define it and its number on $(uname -m) is not known here" >&2; exit 1 ;;
  esac
fi
# Everything the daemon can do without is off: no tools, docs, tests,
# AppArmor, SELinux, audit, systemd or X11 autolaunch.
meson setup "$work/build" "$work/dbus-$version" --buildtype=release --default-library=static \
  -Dmessage_bus=true -Dtools=false -Dasserts=false -Dstats=false -Duser_session=false \
  -Dapparmor=disabled -Dselinux=disabled -Dlibaudit=disabled -Dsystemd=disabled -Dx11_autolaunch=disabled \
  -Ddoxygen_docs=disabled -Dducktype_docs=disabled -Dxml_docs=disabled -Dqt_help=disabled \
  -Dmodular_tests=disabled -Dinstalled_tests=false -Dintrusive_tests=false -Dvalgrind=disabled \
  -Dlaunchd=disabled -Dkqueue=disabled "${c_args[@]}" >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; exit 1; }
ninja -C "$work/build" bus/dbus-daemon >"$work/build.log" 2>&1 || { tail -n 50 "$work/build.log" >&2; exit 1; }
install -m 0755 "$work/build/bus/dbus-daemon" "$daemon.new"
mv "$daemon.new" "$daemon"
rm -rf "$work"
offers_process_fd
