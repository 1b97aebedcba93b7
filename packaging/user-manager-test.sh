#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The systemd user manager stage of packaging/smoke-test.sh: with the package
# installed, runs a real, unprivileged `systemd --user` next to a session bus
# started with --systemd-activation, and shows that
#   - the first call to org.example.UserActivity makes the bus ask systemd for
#     SystemdService=useractivityd.service, the installed unit, which then owns
#     the name (its MainPID is the caller's peer, /proc/PID/exe is
#     /usr/libexec/useractivityd) and runs in session.slice;
#   - the daemon works under packaging/systemd/sandbox.conf (NoNewPrivileges,
#     seccomp filters, MemoryDenyWriteExecute, ...).
#
#   packaging/user-manager-test.sh       as root; exit 0 passed, 77 cannot run here
#
# A user manager normally needs a machine booted with systemd. Here it runs in
# a private mount namespace in which /run/systemd is a fresh tmpfs holding
# /run/systemd/system (the "booted with systemd" marker), inside a cgroup of
# its own handed to the test user (nobody). Nothing outside the namespace
# changes, apart from that cgroup, which is removed at the end.
set -euo pipefail

self="$(realpath "$0")"
root="$(cd "$(dirname "$self")/.." && pwd)"
user=nobody
skip() { echo "user-manager-test: cannot run here: $*"; exit 77; }
fail() { echo "FAIL: user-manager-test: $*" >&2; exit 1; }

case "${1:-}" in
"")
  [ "$(id -u)" -eq 0 ] || skip "needs root (to set up the namespace and cgroup)"
  [ -x /usr/lib/systemd/systemd ] || skip "/usr/lib/systemd/systemd is not installed"
  command -v unshare >/dev/null && command -v setpriv >/dev/null || skip "unshare/setpriv (util-linux) missing"
  [ -f /usr/lib/systemd/user/useractivityd.service ] || fail "the package is not installed"
  [ -d /run/systemd ] || skip "/run/systemd does not exist"
  id "$user" >/dev/null 2>&1 || skip "no user $user"
  if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
    cgroups=(/sys/fs/cgroup)
  elif [ -d /sys/fs/cgroup/systemd ] && [ -d /sys/fs/cgroup/unified ]; then
    cgroups=(/sys/fs/cgroup/systemd /sys/fs/cgroup/unified)
  else
    skip "neither a unified nor a hybrid cgroup hierarchy"
  fi
  work="$(mktemp -d /tmp/useractivity-user-manager.XXXXXX)"
  chmod 0755 "$work"
  name="useractivity-smoke-$$"
  for hierarchy in "${cgroups[@]}"; do mkdir "$hierarchy/$name"; done
  set +e
  WORK="$work" CGROUP_NAME="$name" unshare --mount --propagation private "$self" --namespace "${cgroups[@]}"
  status=$?
  set -e
  for hierarchy in "${cgroups[@]}"; do
    # Whatever is left (the manager's slices) is empty now; remove bottom-up.
    find "$hierarchy/$name" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ -d "$hierarchy/$name" ] && echo "user-manager-test: could not remove $hierarchy/$name" >&2
  done
  rm -rf "$work"
  exit $status
  ;;

--namespace)
  shift
  mount -t tmpfs -o mode=0755 tmpfs /run/systemd
  mkdir /run/systemd/system
  for hierarchy in "$@"; do
    echo $$ > "$hierarchy/$CGROUP_NAME/cgroup.procs"
    chown -R "$user:" "$hierarchy/$CGROUP_NAME"
  done
  home="$WORK/home"
  mkdir -p "$home/.local/share/applications" "$home/runtime"
  cp "$root/desktop/share/applications/com.example.Demo.desktop" "$home/.local/share/applications/"
  cp "$root/packaging/systemd/sandbox.conf" "$WORK/sandbox.conf"
  # The test user runs this script's --session part, from a copy: the
  # checkout itself may be where only root can enter (a clone under a 0700
  # directory), and nothing the user runs or reads may come from it.
  cp "$self" "$WORK/user-manager-test.sh"
  chmod 0755 "$WORK/user-manager-test.sh"
  chmod 0700 "$home/runtime"
  chown -R "$user:" "$home"
  set +e
  setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" USER="$user" LOGNAME="$user" WORK="$WORK" \
      XDG_RUNTIME_DIR="$home/runtime" XDG_DATA_HOME="$home/.local/share" XDG_CONFIG_HOME="$home/.config" \
      XDG_STATE_HOME="$home/.local/state" "$WORK/user-manager-test.sh" --session
  status=$?
  set -e
  # Leave the test cgroup so that it can be removed.
  for hierarchy in "$@"; do echo $$ > "$hierarchy/cgroup.procs"; done
  exit $status
  ;;

--session)
  export DBUS_SESSION_BUS_ADDRESS="unix:path=$XDG_RUNTIME_DIR/bus"
  bus_pid=""; manager_pid=""
  stop() {
    [ -n "$manager_pid" ] && { systemctl --user exit >/dev/null 2>&1 || kill "$manager_pid" 2>/dev/null || true; }
    for _ in $(seq 100); do [ -n "$manager_pid" ] && [ -d "/proc/$manager_pid" ] || break; sleep 0.05; done
    [ -n "$manager_pid" ] && kill -9 "$manager_pid" 2>/dev/null || true
    [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null || true
    wait 2>/dev/null || true
  }
  trap stop EXIT
  dbus-daemon --session --systemd-activation --nofork --nopidfile --address="$DBUS_SESSION_BUS_ADDRESS" \
    > "$HOME/bus.log" 2>&1 &
  bus_pid=$!
  for _ in $(seq 100); do [ -S "$XDG_RUNTIME_DIR/bus" ] && break; sleep 0.05; done
  /usr/lib/systemd/systemd --user > "$HOME/manager.log" 2>&1 &
  manager_pid=$!
  # systemctl talks to the manager's private socket; asked before it exists,
  # it would go through the bus and wait 25 s for org.freedesktop.systemd1.
  for _ in $(seq 200); do [ -S "$XDG_RUNTIME_DIR/systemd/private" ] && break; sleep 0.05; done
  state=""
  for _ in $(seq 100); do
    state="$(systemctl --user is-system-running 2>/dev/null || true)"
    case "$state" in running|degraded) break ;; esac
    sleep 0.1
  done
  case "$state" in running|degraded) ;; *) cat "$HOME/manager.log" >&2; fail "systemd --user did not start (state '$state')" ;; esac
  echo "user-manager-test: systemd --user runs as $(id -un) (state $state)"

  unit=useractivityd.service
  show() { systemctl --user show -p "$1" --value "$unit"; }
  [ "$(show LoadState)" = loaded ] || fail "systemd does not load $unit: $(show LoadState)"
  [ "$(show FragmentPath)" = /usr/lib/systemd/user/$unit ] || fail "$unit comes from $(show FragmentPath)"
  [ "$(show ActiveState)" = inactive ] || fail "$unit is $(show ActiveState) before the first call"

  call() { timeout 20 busctl --user "$@"; }
  check_running() {
    local main pid exe
    [ "$(show ActiveState)" = active ] || fail "$unit is $(show ActiveState) after the call"
    main="$(show MainPID)"
    pid="$(call call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetConnectionUnixProcessID s org.example.UserActivity | awk '{print $2}')"
    [ "$main" = "$pid" ] || fail "the name's owner is pid $pid, the unit's MainPID is $main: not activated through systemd"
    exe="$(readlink "/proc/$pid/exe")"
    [ "$exe" = /usr/libexec/useractivityd ] || fail "MainPID runs $exe"
    [ "$(show Slice)" = session.slice ] || fail "$unit runs in $(show Slice)"
    echo "user-manager-test: $unit active, MainPID $pid = owner of org.example.UserActivity, exe $exe, $(show ControlGroup)"
  }

  version="$(call get-property org.example.UserActivity /org/example/UserActivity org.example.UserActivity Version)" ||
    { systemctl --user status "$unit" --no-pager >&2 || true; fail "the first call failed"; }
  echo "user-manager-test: first call answered Version $version"
  check_running
  echo "PASS: D-Bus activation went through SystemdService= to the installed unit"

  # The same daemon under the sandbox that sandbox.conf describes.
  mkdir -p "$XDG_CONFIG_HOME/systemd/user/$unit.d"
  cp "$WORK/sandbox.conf" "$XDG_CONFIG_HOME/systemd/user/$unit.d/sandbox.conf"
  systemctl --user stop "$unit"
  systemctl --user daemon-reload
  call get-property org.example.UserActivity /org/example/UserActivity org.example.UserActivity Version >/dev/null ||
    { systemctl --user status "$unit" --no-pager >&2 || true; fail "the first call under sandbox.conf failed"; }
  check_running
  main="$(show MainPID)"
  grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$main/status" && grep -q '^Seccomp:[[:space:]]*2' "/proc/$main/status" ||
    fail "sandbox.conf is not in effect (no NoNewPrivs/seccomp on pid $main)"
  timeout 20 gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity \
    --method org.example.UserActivity.Donate com.example.Demo.edit-document \
    "{'app-id': <'com.example.Demo'>, 'title': <'Sandboxed report'>, 'eligible-for-search': <true>}" >/dev/null ||
    fail "Donate fails under sandbox.conf"
  found="$(timeout 20 gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity \
    --method org.example.UserActivity.Search "sandboxed" "{'limit': <uint32 5>}")"
  [[ "$found" == *"Sandboxed report"* ]] || fail "Search does not find the donated activity under sandbox.conf: $found"
  systemctl --user stop "$unit"
  echo "PASS: the daemon works under sandbox.conf (NoNewPrivs, seccomp incl. MemoryDenyWriteExecute)"
  ;;
*)
  echo "usage: $0" >&2; exit 2 ;;
esac
