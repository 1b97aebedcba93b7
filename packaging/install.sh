#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The one place that knows where useractivity's files go. Every package
# recipe (packaging/debian/rules, packaging/rpm/useractivity.spec) and a plain
# `sudo packaging/install.sh PREFIX=/usr` use it; packaging/layout.txt is the
# documented result and the smoke test compares the two.
#
#   packaging/install.sh [--build-only | --no-build] [VAR=value ...]
#
#   (default)     build (release, static Swift runtime), check linkage, install
#   --build-only  build and check linkage only (a recipe's build step)
#   --no-build    install what an earlier --build-only built (a recipe's
#                 install step; nothing is compiled, so it can run as root)
#
# Variables (environment or VAR=value arguments; arguments win):
#   DESTDIR             staging root prepended to every path (default: empty)
#   PREFIX              /usr/local
#   BINDIR              $PREFIX/bin                   useractivityctl, useractivity-example
#   LIBEXECDIR          $PREFIX/libexec               useractivityd
#   DATADIR             $PREFIX/share
#   MANDIR              $DATADIR/man
#   DOCDIR              $DATADIR/doc/useractivity     README.md
#   LICENSEDIR          $DOCDIR                       LICENSE; empty: not installed
#                                                     (Debian: debian/copyright)
#   DBUSSERVICEDIR      $DATADIR/dbus-1/services
#   DBUSINTERFACEDIR    $DATADIR/dbus-1/interfaces
#   SYSTEMDUSERUNITDIR  $PREFIX/lib/systemd/user
#   APPLICATIONSDIR     $DATADIR/applications
#   SEARCHPROVIDERDIR   $DATADIR/gnome-shell/search-providers
#   KRUNNERDIR          $DATADIR/krunner/dbusplugins
#   BASHCOMPLETIONDIR   $DATADIR/bash-completion/completions
#   ZSHCOMPLETIONDIR    $DATADIR/zsh/site-functions   (Debian: vendor-completions)
#   FISHCOMPLETIONDIR   $DATADIR/fish/vendor_completions.d
#   BROWSER_DESTDIR     staging root of the browser integration (default: DESTDIR;
#                       Debian: the webext-useractivity package's)
#   WEBEXTDIR           $DATADIR/webext/useractivity  the extension, unpacked
#   MOZILLAEXTDIR       /usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}
#   CHROMIUMEXTDIR      /usr/share/chromium/extensions
#   MOZILLAHOSTDIR      /usr/lib/mozilla/native-messaging-hosts
#   CHROMIUMHOSTDIR     /etc/chromium/native-messaging-hosts
#   CHROMEHOSTDIR       /etc/opt/chrome/native-messaging-hosts
#                       (the browsers read these fixed paths whatever PREFIX is)
#   SWIFT               swift
#   SCRATCH_PATH        .build-pkg (relative to the source tree)
#   SWIFT_BUILD_FLAGS   extra `swift build` arguments (word-split)
#
# Paths inside installed files (the D-Bus activation file's Exec=, the
# systemd unit's ExecStart=) are rewritten to LIBEXECDIR, so any PREFIX works.
# Parts whose sources are not in the tree (e.g. useractivityctl while it is
# being written) are skipped with a message naming them.
set -euo pipefail

mode=all
for argument in "$@"; do
  case "$argument" in
    --build-only) mode=build ;;
    --no-build) mode=install ;;
    -h|--help) sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    [A-Z]*=*)
      name="${argument%%=*}"
      case "$name" in
        DESTDIR|PREFIX|BINDIR|LIBEXECDIR|DATADIR|MANDIR|DOCDIR|LICENSEDIR|DBUSSERVICEDIR|DBUSINTERFACEDIR|\
        SYSTEMDUSERUNITDIR|APPLICATIONSDIR|SEARCHPROVIDERDIR|KRUNNERDIR|BASHCOMPLETIONDIR|ZSHCOMPLETIONDIR|\
        FISHCOMPLETIONDIR|SWIFT|SCRATCH_PATH|SWIFT_BUILD_FLAGS|BROWSER_DESTDIR|WEBEXTDIR|MOZILLAEXTDIR|\
        CHROMIUMEXTDIR|MOZILLAHOSTDIR|CHROMIUMHOSTDIR|CHROMEHOSTDIR)
          printf -v "$name" '%s' "${argument#*=}"
          export "${name?}" ;;
        *) echo "install.sh: unknown variable $name (see --help)" >&2; exit 2 ;;
      esac ;;
    *) echo "install.sh: unknown argument $argument (see --help)" >&2; exit 2 ;;
  esac
done

source_dir="$(cd "$(dirname "$0")/.." && pwd)"
cd "$source_dir"

DESTDIR="${DESTDIR:-}"
PREFIX="${PREFIX:-/usr/local}"
BINDIR="${BINDIR:-$PREFIX/bin}"
LIBEXECDIR="${LIBEXECDIR:-$PREFIX/libexec}"
DATADIR="${DATADIR:-$PREFIX/share}"
MANDIR="${MANDIR:-$DATADIR/man}"
DOCDIR="${DOCDIR:-$DATADIR/doc/useractivity}"
LICENSEDIR="${LICENSEDIR-$DOCDIR}"
DBUSSERVICEDIR="${DBUSSERVICEDIR:-$DATADIR/dbus-1/services}"
DBUSINTERFACEDIR="${DBUSINTERFACEDIR:-$DATADIR/dbus-1/interfaces}"
SYSTEMDUSERUNITDIR="${SYSTEMDUSERUNITDIR:-$PREFIX/lib/systemd/user}"
APPLICATIONSDIR="${APPLICATIONSDIR:-$DATADIR/applications}"
SEARCHPROVIDERDIR="${SEARCHPROVIDERDIR:-$DATADIR/gnome-shell/search-providers}"
KRUNNERDIR="${KRUNNERDIR:-$DATADIR/krunner/dbusplugins}"
BASHCOMPLETIONDIR="${BASHCOMPLETIONDIR:-$DATADIR/bash-completion/completions}"
ZSHCOMPLETIONDIR="${ZSHCOMPLETIONDIR:-$DATADIR/zsh/site-functions}"
FISHCOMPLETIONDIR="${FISHCOMPLETIONDIR:-$DATADIR/fish/vendor_completions.d}"
BROWSER_DESTDIR="${BROWSER_DESTDIR-$DESTDIR}"
WEBEXTDIR="${WEBEXTDIR:-$DATADIR/webext/useractivity}"
MOZILLAEXTDIR="${MOZILLAEXTDIR:-/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384\}}"
CHROMIUMEXTDIR="${CHROMIUMEXTDIR:-/usr/share/chromium/extensions}"
MOZILLAHOSTDIR="${MOZILLAHOSTDIR:-/usr/lib/mozilla/native-messaging-hosts}"
CHROMIUMHOSTDIR="${CHROMIUMHOSTDIR:-/etc/chromium/native-messaging-hosts}"
CHROMEHOSTDIR="${CHROMEHOSTDIR:-/etc/opt/chrome/native-messaging-hosts}"
SWIFT="${SWIFT:-swift}"
SCRATCH_PATH="${SCRATCH_PATH:-.build-pkg}"
SWIFT_BUILD_FLAGS="${SWIFT_BUILD_FLAGS:-}"

for name in PREFIX BINDIR LIBEXECDIR DATADIR MANDIR DOCDIR DBUSSERVICEDIR DBUSINTERFACEDIR SYSTEMDUSERUNITDIR \
            APPLICATIONSDIR SEARCHPROVIDERDIR KRUNNERDIR BASHCOMPLETIONDIR ZSHCOMPLETIONDIR FISHCOMPLETIONDIR \
            WEBEXTDIR MOZILLAEXTDIR CHROMIUMEXTDIR MOZILLAHOSTDIR CHROMIUMHOSTDIR CHROMEHOSTDIR; do
  case "${!name}" in
    /*) ;;
    *) echo "install.sh: $name must be an absolute path (got '${!name}')" >&2; exit 2 ;;
  esac
done
case "$LICENSEDIR" in ""|/*) ;; *) echo "install.sh: LICENSEDIR must be absolute or empty" >&2; exit 2 ;; esac

note() { echo "install.sh: $*" >&2; }

# What this tree can build: the CLI is optional until its sources land.
products=(useractivityd)
if [ -d Sources/useractivityctl ]; then
  products+=(useractivityctl)
else
  note "SKIPPING useractivityctl: Sources/useractivityctl is not in this tree (no /usr/bin/useractivityctl, no shell completions)"
fi
# Handoff's daemon, once its sources are in the tree: its binary, activation
# file and user unit are installed only with it (an activation file naming a
# missing binary would make every call to the name fail with a spawn error).
if [ -d Sources/useractivity-handoffd ]; then
  products+=(useractivity-handoffd)
else
  note "SKIPPING useractivity-handoffd: Sources/useractivity-handoffd is not in this tree (no Handoff daemon, activation file or unit)"
fi

# The UserActivity library's example app, installed as useractivity-example
# with its desktop entry: what the Handoff walk-through opens on one machine
# and the service launches on the other.
if [ -d Sources/UserActivityExample ]; then
  products+=(UserActivityExample)
fi
# The settings app (GTK 4, libadwaita) once its sources are in the tree.
if [ -d Sources/useractivity-settings ]; then
  products+=(useractivity-settings)
fi

# The browser extension's native-messaging host, with the extension itself.
if [ -d Sources/useractivity-browser-host ] && [ -d browser/extension ]; then
  products+=(useractivity-browser-host)
fi

# Release build with the Swift runtime linked in: the package then needs only
# the system's libdbus, GLib, SQLite and C/C++ runtime. Full RELRO, no
# $ORIGIN runpath (nothing is loaded from next to the binary). lld with packed
# relative relocations (DT_RELR, glibc >= 2.36): the static Swift runtime
# carries ~600 KiB of relative relocations that would otherwise all be read
# at every start, about 0.5 MiB of the daemon's idle resident size.
build_flags=(--scratch-path "$SCRATCH_PATH" -c release --static-swift-stdlib --disable-local-rpath
             -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs
             -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now)

# Link flags of one product only. useractivity-handoffd mostly idles, and the
# kernel maps its file pages in 64 KiB runs around each page it touches:
#  - packaging/useractivity-handoffd.order lists the functions it runs
#    (packaging/order-symbols.sh regenerates it), placed first and together,
#    so the runs it touches hold its code rather than code it never calls;
#  - libstdc++ linked statically: the Swift runtime uses a few of its
#    functions, and the shared library's start-up (locale tables,
#    relocations) would be resident for them (~0.8 MiB). Without libstdc++.a
#    (Fedora: libstdc++-static) it stays shared, with a note.
product_flags() {
  case "$1" in
    useractivity-handoffd)
      if [ -f packaging/useractivity-handoffd.order ]; then
        echo "-Xlinker --symbol-ordering-file=$source_dir/packaging/useractivity-handoffd.order -Xlinker --no-warn-symbol-ordering"
      fi
      local archive
      archive="$(${CXX:-c++} -print-file-name=libstdc++.a 2>/dev/null || true)"
      if [ -f "$archive" ]; then
        mkdir -p "$SCRATCH_PATH/static-libstdc++"
        ln -sf "$(readlink -f "$archive")" "$SCRATCH_PATH/static-libstdc++/libstdc++.a"
        # Searched before the system's directories, so -lstdc++ finds the archive.
        echo "-Xlinker -L$(readlink -f "$SCRATCH_PATH/static-libstdc++")"
      else
        note "libstdc++.a not found (${CXX:-c++} -print-file-name): $1 links libstdc++ dynamically"
      fi ;;
  esac
}
if [ -n "$SWIFT_BUILD_FLAGS" ]; then
  # shellcheck disable=SC2206 # word splitting is the point
  build_flags+=($SWIFT_BUILD_FLAGS)
fi

if [ "$mode" != install ]; then
  if ! command -v "$SWIFT" >/dev/null; then
    note "'$SWIFT' not found: install a Swift 6 toolchain from swift.org and put it on PATH (or set SWIFT=/path/to/swift)"
    exit 1
  fi
  for product in "${products[@]}"; do
    # shellcheck disable=SC2207 # word splitting is the point
    extra=($(product_flags "$product"))
    note "building $product: $SWIFT build ${build_flags[*]} ${extra[*]} --product $product"
    "$SWIFT" build "${build_flags[@]}" "${extra[@]}" --product "$product"
  done
fi

bin_path="$SCRATCH_PATH/release"   # SwiftPM's link to <triple>/release
binaries=()
for product in "${products[@]}"; do
  if [ ! -x "$bin_path/$product" ]; then
    note "$bin_path/$product is missing: run packaging/install.sh --build-only first"
    exit 1
  fi
  binaries+=("$bin_path/$product")
done
"$source_dir/packaging/check-linkage.sh" "${binaries[@]}"
[ "$mode" = build ] && exit 0

# ---------------------------------------------------------------- install

umask 022
# install_file MODE SOURCE DIRECTORY [NAME]
install_file() {
  install -d -m 0755 "$DESTDIR$3"
  install -m "$1" "$2" "$DESTDIR$3/${4:-$(basename "$2")}"
}
# optional_file MODE SOURCE DIRECTORY [NAME]: skipped with a note when absent.
optional_file() {
  if [ -f "$2" ]; then
    install_file "$@"
  else
    note "SKIPPING $3/${4:-$(basename "$2")}: $2 is not in this tree"
  fi
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The daemon and the CLI.
install_file 0755 "$bin_path/useractivityd" "$LIBEXECDIR"
if [ -x "$bin_path/useractivityctl" ] && [[ " ${products[*]} " == *" useractivityctl "* ]]; then
  install_file 0755 "$bin_path/useractivityctl" "$BINDIR"
fi

# D-Bus: activation file (Exec= pointing at this LIBEXECDIR) and the interface.
sed "s|^Exec=.*|Exec=$LIBEXECDIR/useractivityd|" dbus/org.example.UserActivity.service \
  > "$work/org.example.UserActivity.service"
grep -qx "SystemdService=useractivityd.service" "$work/org.example.UserActivity.service" || {
  note "dbus/org.example.UserActivity.service lacks SystemdService=useractivityd.service"; exit 1; }
install_file 0644 "$work/org.example.UserActivity.service" "$DBUSSERVICEDIR"
install_file 0644 dbus/org.example.UserActivity.xml "$DBUSINTERFACEDIR"

# systemd user unit (ExecStart= pointing at this LIBEXECDIR).
sed "s|^ExecStart=/usr/libexec/useractivityd|ExecStart=$LIBEXECDIR/useractivityd|" \
  packaging/systemd/useractivityd.service > "$work/useractivityd.service"
install_file 0644 "$work/useractivityd.service" "$SYSTEMDUSERUNITDIR"

# Handoff: the daemon, its activation file and its user unit (LIBEXECDIR in Exec= and ExecStart=).
if [[ " ${products[*]} " == *" useractivity-handoffd "* ]]; then
  install_file 0755 "$bin_path/useractivity-handoffd" "$LIBEXECDIR"
  sed "s|^Exec=.*|Exec=$LIBEXECDIR/useractivity-handoffd|" dbus/org.example.UserActivity.Handoff.service \
    > "$work/org.example.UserActivity.Handoff.service"
  grep -qx "SystemdService=useractivity-handoff.service" "$work/org.example.UserActivity.Handoff.service" || {
    note "dbus/org.example.UserActivity.Handoff.service lacks SystemdService=useractivity-handoff.service"; exit 1; }
  install_file 0644 "$work/org.example.UserActivity.Handoff.service" "$DBUSSERVICEDIR"
  sed "s|^ExecStart=/usr/libexec/useractivity-handoffd|ExecStart=$LIBEXECDIR/useractivity-handoffd|" \
    packaging/systemd/useractivity-handoff.service > "$work/useractivity-handoff.service"
  install_file 0644 "$work/useractivity-handoff.service" "$SYSTEMDUSERUNITDIR"
  optional_file 0644 dbus/org.example.UserActivity.Handoff.xml "$DBUSINTERFACEDIR"
fi

# The example app, under a command name that follows the platform's
# conventions; its desktop entry's Exec= names it by its installed path.
if [[ " ${products[*]} " == *" UserActivityExample "* ]]; then
  install_file 0755 "$bin_path/UserActivityExample" "$BINDIR" useractivity-example
  sed "s|^Exec=UserActivityExample |Exec=$BINDIR/useractivity-example |" \
    desktop/share/applications/com.example.UserActivityExample.desktop > "$work/com.example.UserActivityExample.desktop"
  grep -qx "Exec=$BINDIR/useractivity-example --handle-continuations" "$work/com.example.UserActivityExample.desktop" || {
    note "desktop/share/applications/com.example.UserActivityExample.desktop: Exec= is not 'UserActivityExample --handle-continuations'"; exit 1; }
  install_file 0644 "$work/com.example.UserActivityExample.desktop" "$APPLICATIONSDIR"
fi

# The settings app: its desktop entry (Exec= by installed path), AppStream
# metainfo, scalable icon (its man page is among man/).
if [[ " ${products[*]} " == *" useractivity-settings "* ]]; then
  install_file 0755 "$bin_path/useractivity-settings" "$BINDIR"
  sed -e "s|^Exec=useractivity-settings$|Exec=$BINDIR/useractivity-settings|" \
      -e "s|^TryExec=useractivity-settings$|TryExec=$BINDIR/useractivity-settings|" \
    desktop/share/applications/org.example.UserActivity.Settings.desktop > "$work/org.example.UserActivity.Settings.desktop"
  grep -qx "Exec=$BINDIR/useractivity-settings" "$work/org.example.UserActivity.Settings.desktop" || {
    note "desktop/share/applications/org.example.UserActivity.Settings.desktop: Exec= is not 'useractivity-settings'"; exit 1; }
  install_file 0644 "$work/org.example.UserActivity.Settings.desktop" "$APPLICATIONSDIR"
  install_file 0644 desktop/share/metainfo/org.example.UserActivity.Settings.metainfo.xml "$DATADIR/metainfo"
  install_file 0644 desktop/share/icons/hicolor/scalable/apps/org.example.UserActivity.Settings.svg \
    "$DATADIR/icons/hicolor/scalable/apps"
fi

# The browser extension, installed the way Debian's webext-* packages are:
# unpacked in WEBEXTDIR, linked into the directories Firefox and Chromium
# load system extensions from; the native-messaging host's manifests where
# Firefox, Chromium and Chrome look for them.
if [[ " ${products[*]} " == *" useractivity-browser-host "* ]]; then
  host_path="$LIBEXECDIR/useractivity-browser-host"
  install -d -m 0755 "$BROWSER_DESTDIR$LIBEXECDIR"
  install -m 0755 "$bin_path/useractivity-browser-host" "$BROWSER_DESTDIR$LIBEXECDIR/"
  (cd browser/extension && find . -type f ! -name '.*' | sort) | while read -r file; do
    install -d -m 0755 "$BROWSER_DESTDIR$WEBEXTDIR/$(dirname "$file")"
    install -m 0644 "browser/extension/$file" "$BROWSER_DESTDIR$WEBEXTDIR/$file"
  done
  gecko_id="$(sed -n 's/.*"id": *"\([^"]*@[^"]*\)".*/\1/p' browser/extension/manifest.json)"
  [ -n "$gecko_id" ] || { note "browser/extension/manifest.json: no browser_specific_settings.gecko.id"; exit 1; }
  chromium_id="$(sed -n 's/^chromium-id: *//p' browser/extension-id.txt)"
  [ -n "$chromium_id" ] || { note "browser/extension-id.txt: no chromium-id line"; exit 1; }
  install -d -m 0755 "$BROWSER_DESTDIR$MOZILLAEXTDIR" "$BROWSER_DESTDIR$CHROMIUMEXTDIR"
  ln -sfn "$(realpath -m --relative-to="$MOZILLAEXTDIR" "$WEBEXTDIR")" "$BROWSER_DESTDIR$MOZILLAEXTDIR/$gecko_id"
  ln -sfn "$(realpath -m --relative-to="$CHROMIUMEXTDIR" "$WEBEXTDIR")" "$BROWSER_DESTDIR$CHROMIUMEXTDIR/useractivity"
  manifest() {
    printf '{\n  "name": "org.example.useractivity",\n  "description": "UserActivity: publishes the focused tab to the desktop",\n'
    printf '  "path": "%s",\n  "type": "stdio",\n  %s\n}\n' "$host_path" "$1"
  }
  manifest "\"allowed_extensions\": [\"$gecko_id\"]" > "$work/mozilla.json"
  manifest "\"allowed_origins\": [\"chrome-extension://$chromium_id/\"]" > "$work/chromium.json"
  for pair in "$MOZILLAHOSTDIR mozilla" "$CHROMIUMHOSTDIR chromium" "$CHROMEHOSTDIR chromium"; do
    read -r directory flavour <<<"$pair"
    install -d -m 0755 "$BROWSER_DESTDIR$directory"
    install -m 0644 "$work/$flavour.json" "$BROWSER_DESTDIR$directory/org.example.useractivity.json"
  done
fi

# Desktop integration: the hidden desktop entry that the GNOME Shell search
# provider and the KRunner plugin name, and those two files.
optional_file 0644 desktop/org.example.UserActivity.desktop "$APPLICATIONSDIR"
optional_file 0644 desktop/org.example.UserActivity.search-provider.ini "$SEARCHPROVIDERDIR"
optional_file 0644 desktop/krunner/org.example.UserActivity.desktop "$KRUNNERDIR"

# Man pages: every man/NAME.SECTION, compressed here so that every package
# format ships the same names (dh_compress and brp-compress leave .gz alone).
shopt -s nullglob
man_pages=(man/*.[1-9])
shopt -u nullglob
if [ ${#man_pages[@]} -eq 0 ]; then
  note "SKIPPING man pages: no man/*.[1-9] in this tree"
fi
for page in "${man_pages[@]}"; do
  section="${page##*.}"
  gzip -9 -n -c "$page" > "$work/$(basename "$page").gz"
  install_file 0644 "$work/$(basename "$page").gz" "$MANDIR/man$section"
done

# Shell completions, generated by the CLI itself (swift-argument-parser).
if [ -x "$bin_path/useractivityctl" ] && [[ " ${products[*]} " == *" useractivityctl "* ]]; then
  ctl="$bin_path/useractivityctl"
  "$ctl" --generate-completion-script bash > "$work/useractivityctl.bash"
  "$ctl" --generate-completion-script zsh > "$work/_useractivityctl"
  "$ctl" --generate-completion-script fish > "$work/useractivityctl.fish"
  for script in "$work/useractivityctl.bash" "$work/_useractivityctl" "$work/useractivityctl.fish"; do
    [ -s "$script" ] || { note "useractivityctl --generate-completion-script wrote nothing for $(basename "$script")"; exit 1; }
  done
  # bash-completion sources the file: a #! line is meaningless there (lintian:
  # bash-completion-with-hashbang).
  sed -i '1{/^#!/d}' "$work/useractivityctl.bash"
  install_file 0644 "$work/useractivityctl.bash" "$BASHCOMPLETIONDIR" useractivityctl
  install_file 0644 "$work/_useractivityctl" "$ZSHCOMPLETIONDIR"
  install_file 0644 "$work/useractivityctl.fish" "$FISHCOMPLETIONDIR"
fi

# Documentation and license.
install_file 0644 README.md "$DOCDIR"
if [ -n "$LICENSEDIR" ]; then
  install_file 0644 LICENSE "$LICENSEDIR"
fi

note "installed into ${DESTDIR:-/} (PREFIX=$PREFIX)"
