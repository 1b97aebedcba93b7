#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Installed smoke test: builds the Debian package, installs it into THIS
# machine, proves that the installed files work by D-Bus activation alone,
# and purges it again. Run as root on a throwaway machine (CI).
#
#   packaging/smoke-test.sh [--deb FILE]
#
#   --deb FILE   test this package instead of building one (build-deb.sh)
#   KEEP_INSTALLED=1           leave the package installed at the end
#   REQUIRE_USER_MANAGER=1     fail (instead of skip) when the systemd user
#                              manager stage cannot run here
#
# Stages:
#   1. the installed file list equals packaging/layout.txt (deb), and so does
#      packaging/install.sh's own output (install variant);
#   2. the installed binaries link only the allowed system libraries;
#   3. `systemd-analyze --user verify` accepts the installed unit, silently;
#   4. on a private session bus using the standard session configuration (so
#      /usr/share/dbus-1/services), as an unprivileged user, the first call to
#      org.example.UserActivity activates /usr/libexec/useractivityd
#      (/proc/PID/exe), `useractivityctl status` reports it, and a saved
#      activity lands in that user's $XDG_STATE_HOME;
#   5. with a real systemd user manager (packaging/user-manager-test.sh): the
#      activation goes through SystemdService= to the installed unit, which
#      runs in session.slice; the daemon also works under
#      packaging/systemd/sandbox.conf;
#   6. purging removes every installed file and leaves /usr, /etc, /opt and
#      /var/lib as they were before the installation.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
deb=""
while [ $# -gt 0 ]; do
  case "$1" in
    --deb) deb="$(realpath "$2")"; shift 2 ;;
    -h|--help) sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "smoke-test.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

step() { printf '\n== [%d s] %s\n' "$SECONDS" "$*"; }
pass() { printf 'PASS: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "run as root (the package is installed into this machine)"
for tool in dpkg dbus-daemon busctl systemd-analyze setpriv; do
  command -v "$tool" >/dev/null || fail "$tool is missing (apt-get install dpkg dbus-daemon systemd util-linux)"
done

package=useractivity
work="$(mktemp -d /tmp/useractivity-smoke.XXXXXX)"
chmod 0755 "$work"   # the test user must reach its home inside
bus_pid=""
installed_by_us=0
cleanup() {
  local status=$?
  [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null || true
  [ -n "${pid:-}" ] && [ -d "/proc/$pid" ] && kill "$pid" 2>/dev/null || true
  if [ "$installed_by_us" = 1 ] && [ "${KEEP_INSTALLED:-0}" != 1 ]; then
    echo "smoke-test.sh: purging $package after a failure" >&2
    dpkg --purge "$package" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT

# ------------------------------------------------------------------ build
if [ -z "$deb" ]; then
  step "building the Debian package"
  "$root/packaging/build-deb.sh" --output "$root/.build-pkg-out/deb"
  version="$(dpkg-parsechangelog -l "$root/packaging/debian/changelog" -S Version)"
  deb="$root/.build-pkg-out/deb/${package}_${version}_$(dpkg --print-architecture).deb"
fi
[ -f "$deb" ] || fail "$deb does not exist"
version="$(dpkg-deb -f "$deb" Version)"
upstream_version="${version%-*}"

# --------------------------------------------------------------- install
if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "installed"; then
  echo "smoke-test.sh: $package is installed already; purging it first" >&2
  dpkg --purge "$package"
fi
for shadow in /usr/local/share/dbus-1/services/org.example.UserActivity.service \
              "$HOME/.local/share/dbus-1/services/org.example.UserActivity.service"; do
  [ -e "$shadow" ] && fail "$shadow would be found before the package's activation file: remove it"
done

# What the package may touch, before it is installed. dpkg's and apt's own
# state, caches and logs change with any installation and are left out.
snapshot() {
  find /usr /etc /opt /var/lib -xdev \
    \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/lib/ucf -o -path /var/lib/systemd \
       -o -path /var/lib/man-db -o -path /etc/ld.so.cache \) -prune -o -print 2>/dev/null | sort
}
snapshot > "$work/before"

step "installing $deb"
installed_by_us=1
if command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb"
else
  dpkg -i "$deb"
fi
dpkg-query -W -f='${Status}\n' "$package" | grep -qx "install ok installed" || fail "$package is not installed"
dpkg -L "$package" > "$work/files"
pass "installed $package $version"

# ---------------------------------------------------------------- layout
step "installed files against packaging/layout.txt"
"$root/packaging/check-layout.sh" deb "$work/files" || fail "the Debian package's files are not the documented layout"
scratch="$root/.build-pkg-out/src/useractivity-$upstream_version/.build-pkg"
if [ -x "$scratch/release/useractivityd" ]; then
  "$root/packaging/install.sh" --no-build SCRATCH_PATH="$scratch" DESTDIR="$work/destdir" PREFIX=/usr >/dev/null
  (cd "$work/destdir" && find . ! -type d | sed 's|^\.||') > "$work/destdir-files"
  "$root/packaging/check-layout.sh" install "$work/destdir-files" || fail "install.sh's files are not the documented layout"
else
  echo "smoke-test.sh: no build in $scratch: install.sh's own layout not checked (it is when this script builds the package)"
fi
pass "the installed files are the documented layout"

step "linkage of the installed binaries"
"$root/packaging/check-linkage.sh" /usr/libexec/useractivityd /usr/bin/useractivityctl || fail "installed binaries link more than the allowed system libraries"
pass "installed binaries link only libdbus, GLib, SQLite and the C/C++ runtime"

# ----------------------------------------------------------- systemd unit
step "systemd-analyze --user verify /usr/lib/systemd/user/useractivityd.service"
# No user manager runs here; the offline check needs only a runtime directory.
# It loads the unit with the user manager's rules, checks ExecStart= and the
# Documentation= man page, and prints every unknown or invalid setting.
mkdir -m 0700 "$work/verify-runtime"
if ! XDG_RUNTIME_DIR="$work/verify-runtime" systemd-analyze --user verify \
       /usr/lib/systemd/user/useractivityd.service > "$work/verify.log" 2>&1; then
  cat "$work/verify.log" >&2
  fail "systemd-analyze verify rejects the unit"
fi
if [ -s "$work/verify.log" ]; then
  cat "$work/verify.log" >&2
  fail "systemd-analyze verify has remarks on the unit"
fi
grep -qx "Type=dbus" /usr/lib/systemd/user/useractivityd.service &&
  grep -qx "BusName=org.example.UserActivity" /usr/lib/systemd/user/useractivityd.service &&
  grep -qx "Slice=session.slice" /usr/lib/systemd/user/useractivityd.service ||
  fail "the unit lacks Type=dbus, BusName=org.example.UserActivity or Slice=session.slice"
grep -qx "SystemdService=useractivityd.service" /usr/share/dbus-1/services/org.example.UserActivity.service ||
  fail "the activation file does not name the unit in SystemdService="
pass "systemd accepts the unit; the activation file names it"

# Handoff's unit, once the package ships useractivity-handoffd.
if [ -f /usr/lib/systemd/user/useractivity-handoff.service ]; then
  step "systemd-analyze --user verify /usr/lib/systemd/user/useractivity-handoff.service"
  if ! XDG_RUNTIME_DIR="$work/verify-runtime" systemd-analyze --user verify \
         /usr/lib/systemd/user/useractivity-handoff.service > "$work/verify-handoff.log" 2>&1 ||
     [ -s "$work/verify-handoff.log" ]; then
    cat "$work/verify-handoff.log" >&2
    fail "systemd-analyze verify rejects or remarks on useractivity-handoff.service"
  fi
  grep -qx "BusName=org.example.UserActivity.Handoff" /usr/lib/systemd/user/useractivity-handoff.service &&
    grep -qx "SystemdService=useractivity-handoff.service" /usr/share/dbus-1/services/org.example.UserActivity.Handoff.service ||
    fail "the Handoff unit or its activation file lacks BusName= or SystemdService="
  [ -x /usr/libexec/useractivity-handoffd ] || fail "/usr/libexec/useractivity-handoffd is not installed"
  pass "systemd accepts the Handoff unit; its activation file names it"
fi

# ----------------------------------------------------- D-Bus activation
step "D-Bus activation on a private session bus, as an unprivileged user"
user=nobody
group="$(id -gn "$user")"
home="$work/home"
runtime="$work/runtime"
mkdir -p "$home/.local/share/applications" "$runtime"
chmod 0700 "$runtime"
# An app that declares an activity type, to save an activity as it.
cp "$root/desktop/share/applications/com.example.Demo.desktop" "$home/.local/share/applications/"
chown -R "$user:$group" "$home" "$runtime"
user_command() {   # the environment of the test user's session, then "$@"
  printf '%s\0' setpriv --reuid="$user" --regid="$group" --clear-groups \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" USER="$user" LOGNAME="$user" \
      XDG_RUNTIME_DIR="$runtime" XDG_DATA_HOME="$home/.local/share" XDG_CONFIG_HOME="$home/.config" \
      XDG_STATE_HOME="$home/.local/state" ${bus_address:+DBUS_SESSION_BUS_ADDRESS="$bus_address"} "$@"
}
as_user() { local command; mapfile -d '' -t command < <(user_command "$@"); "${command[@]}"; }
bus_address=""
# The standard session configuration: its service directories are
# $XDG_DATA_HOME, each of $XDG_DATA_DIRS (default /usr/local/share:/usr/share)
# and the runtime directory, each with /dbus-1/services.
# (setpriv and env exec, so $! is the bus daemon itself.)
mapfile -d '' -t bus_command < <(user_command dbus-daemon --session --nofork --nopidfile --print-address=1 \
  --address="unix:dir=$runtime")
"${bus_command[@]}" > "$work/bus-address" 2> "$work/bus.log" &
bus_pid=$!
for _ in $(seq 100); do [ -s "$work/bus-address" ] && break; sleep 0.05; done
bus_address="$(head -n1 "$work/bus-address")"
[ -n "$bus_address" ] || { cat "$work/bus.log" >&2; fail "the private session bus did not start"; }

bus_call() { as_user busctl --user "$@"; }
has_owner="$(bus_call call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus NameHasOwner s org.example.UserActivity)"
[ "$has_owner" = "b false" ] || fail "org.example.UserActivity has an owner before the first call ($has_owner)"
bus_call call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ListActivatableNames | grep -q '"org.example.UserActivity"' ||
  fail "the bus does not find org.example.UserActivity in /usr/share/dbus-1/services"

as_user useractivityctl status --json > "$work/status-before.json" || fail "useractivityctl status failed before activation"
grep -q '"activatable" *: *true' "$work/status-before.json" && grep -q '"running" *: *false' "$work/status-before.json" ||
  { cat "$work/status-before.json"; fail "useractivityctl status does not report the daemon as activatable and not running"; }

# The first call: the bus starts the daemon.
served_version="$(bus_call get-property org.example.UserActivity /org/example/UserActivity org.example.UserActivity Version)"
[ "$served_version" = "s \"$upstream_version\"" ] || fail "Version is $served_version, the package is $upstream_version"
pid="$(bus_call call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetConnectionUnixProcessID s org.example.UserActivity | awk '{print $2}')"
exe="$(readlink "/proc/$pid/exe")"
[ "$exe" = /usr/libexec/useractivityd ] || fail "the bus started $exe (pid $pid), not /usr/libexec/useractivityd"
pass "the first call activated the installed daemon: pid $pid, /proc/$pid/exe -> $exe, Version $upstream_version"

as_user useractivityctl status > "$work/status"
cat "$work/status"
as_user useractivityctl status --json > "$work/status.json"
grep -q '"running" *: *true' "$work/status.json" && grep -q "\"pid\" *: *$pid\b" "$work/status.json" ||
  { cat "$work/status.json"; fail "useractivityctl status does not report the running daemon (pid $pid)"; }
pass "useractivityctl status reports the daemon (pid $pid)"

saved="$(as_user gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity \
  --method org.example.UserActivity.Donate com.example.Demo.edit-document \
  "{'app-id': <'com.example.Demo'>, 'title': <'Smoke test report'>, 'eligible-for-search': <true>}")"
found="$(as_user gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity \
  --method org.example.UserActivity.Search "smoke rep" "{'limit': <uint32 5>}")"
[[ "$found" == *"Smoke test report"* ]] || fail "a donated activity is not found by Search ($saved; $found)"
[ -f "$home/.local/state/useractivity/activities.sqlite3" ] || fail "no store in the user's \$XDG_STATE_HOME/useractivity"
pass "Donate and Search work; the store is in the user's \$XDG_STATE_HOME/useractivity"

# Continuing an activity of the example app: the daemon launches the
# installed useractivity-example from its desktop entry, which takes it.
continued_by="$(as_user gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity \
  --method org.example.UserActivity.ContinueActivity com.example.UserActivityExample.open-document \
  "{'title': <'Open Smoke.odt'>, 'user-info': <{'path': <'/tmp/Smoke.odt'>, 'page': <int64 3>}>}" \
  "{'target-app-id': <'com.example.UserActivityExample'>}")" ||
  fail "ContinueActivity of an example activity failed ($continued_by)"
[[ "$continued_by" == *"com.example.UserActivityExample"* ]] || fail "the example app did not take the continuation ($continued_by)"
for _ in $(seq 200); do
  grep -qs "open-document: /tmp/Smoke.odt, page 3 (continued" "$work/bus.log" "$work/bus-address" && break
  sleep 0.1
done
grep -qs "open-document: /tmp/Smoke.odt, page 3 (continued" "$work/bus.log" "$work/bus-address" ||
  { tail -n 20 "$work/bus.log" >&2; fail "the launched useractivity-example did not open the document"; }
pass "continuing an example activity launched the installed useractivity-example, which opened the document at its page"

kill "$bus_pid"; wait "$bus_pid" 2>/dev/null || true; bus_pid=""
for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.05; done
if [ -d "/proc/$pid" ]; then kill "$pid" 2>/dev/null || true; fail "the daemon did not exit when its bus went away"; fi
pass "the daemon exited with its bus"

# ---------------------------------------------------- systemd user manager
step "activation through a systemd user manager (SystemdService=)"
set +e
"$root/packaging/user-manager-test.sh"
user_manager=$?
set -e
case $user_manager in
  0) pass "systemd user manager: the unit was activated by D-Bus and runs under sandbox.conf" ;;
  77)
    if [ "${REQUIRE_USER_MANAGER:-0}" = 1 ]; then fail "the systemd user manager stage cannot run here"; fi
    echo "SKIP: the systemd user manager stage cannot run here (see above)" ;;
  *) fail "the systemd user manager stage failed" ;;
esac

# ------------------------------------------------------------------ purge
if [ "${KEEP_INSTALLED:-0}" = 1 ]; then
  echo "KEEP_INSTALLED=1: leaving $package installed"
  exit 0
fi
step "purging $package"
if command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "$package"
else
  dpkg --purge "$package"
fi
installed_by_us=0
if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "installed\|config-files"; then
  fail "$package is still known to dpkg after the purge"
fi
left=()
while IFS= read -r path; do
  [ "$path" = /. ] && continue
  if [ -e "$path" ] || [ -L "$path" ]; then
    # Directories shared with other packages (/usr/share/man/man1, ...) stay.
    if [ -d "$path" ] && [ ! -L "$path" ] && grep -qx "$path" "$work/before"; then continue; fi
    left+=("$path")
  fi
done < "$work/files"
[ ${#left[@]} -eq 0 ] || { printf '  %s\n' "${left[@]}" >&2; fail "the purge left files of $package behind"; }
snapshot > "$work/after"
if ! diff -u --label "before installing" --label "after purging" "$work/before" "$work/after" > "$work/diff"; then
  # On a shared machine another installation may run meanwhile: ignore paths
  # that another package owns.
  unexplained=()
  while IFS= read -r line; do
    path="${line:1}"
    dpkg -S "$path" >/dev/null 2>&1 && continue
    unexplained+=("$line")
  done < <(grep -E '^[-+]/' "$work/diff")
  if [ ${#unexplained[@]} -gt 0 ]; then
    printf '  %s\n' "${unexplained[@]}" >&2
    fail "/usr, /etc, /opt or /var/lib differ before installing and after purging (- gone, + new)"
  fi
fi
pass "purging removed all $(grep -c . "$work/files") paths the package installed; /usr, /etc, /opt and /var/lib are as before"

printf '\nsmoke-test.sh: all stages passed (%s %s)\n' "$package" "$version"
