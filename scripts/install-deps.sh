#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages useractivity builds and tests against (as root, or with sudo).
set -euo pipefail
packages=(libdbus-1-dev libglib2.0-dev libsqlite3-dev dbus-daemon dbus-bin libglib2.0-bin systemd pkg-config
  # Tests/SandboxTests: apps run as Flatpak runs them (bwrap, xdg-dbus-proxy), scripted with GDBus from Python.
  bubblewrap xdg-dbus-proxy python3-gi gir1.2-glib-2.0
  # useractivity-handoffd: GnuTLS keys, GIO TLS (glib-networking); its tests' hostile peers use openssl;
  # bench/paired-handshake.sh's paired client needs the TLS exporter (pyOpenSSL).
  libgnutls28-dev glib-networking openssl python3-openssl
  # The discovery tests: two network namespaces, each with its own system bus and Avahi.
  avahi-daemon avahi-utils iproute2 util-linux
  # Tests/ExampleAppTests: the example apps in C (gdbus-codegen, in libglib2.0-dev-bin), GJS and C++ with Qt 5.
  libglib2.0-dev-bin make gcc g++ gjs qtbase5-dev qtbase5-dev-tools
  # scripts/build-pidfd-bus.sh: a dbus-daemon that offers ProcessFD, built from dbus 1.16's source.
  curl xz-utils meson ninja-build libexpat1-dev
  # useractivity-settings (GTK 4, libadwaita) and its tier: Xvfb, the accessibility bus, pyatspi,
  # GDK 3 for screenshots; AppStream, desktop-file and gettext checks of what it ships.
  libgtk-4-dev libadwaita-1-dev xvfb at-spi2-core python3-pyatspi gir1.2-gtk-3.0 appstream desktop-file-utils gettext
  # browser/: the extension's unit tests (node --test); the real-browser tests (headless Chromium
  # over the DevTools protocol, Firefox ESR with a test profile).
  nodejs chromium firefox-esr)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
