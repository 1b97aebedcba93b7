#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the browser extension's native-messaging host for your own user,
# pointing at a development build, so that Firefox and Chromium run it:
#
#   scripts/install-browser-dev.sh            # build, then write the manifests
#   scripts/install-browser-dev.sh --remove   # take them away again
#
# Manifests go to ~/.mozilla/native-messaging-hosts/ (Firefox) and
# ~/.config/chromium/NativeMessagingHosts/ (Chromium). The extension itself is
# loaded by hand from browser/extension (the script prints how).
set -euo pipefail
cd "$(dirname "$0")/.."
name=org.example.useractivity
mozilla_dir="$HOME/.mozilla/native-messaging-hosts"
chromium_dir="${XDG_CONFIG_HOME:-$HOME/.config}/chromium/NativeMessagingHosts"

if [ "${1:-}" = --remove ]; then
  rm -f "$mozilla_dir/$name.json" "$chromium_dir/$name.json"
  echo "removed $mozilla_dir/$name.json and $chromium_dir/$name.json"
  exit 0
fi

swift build --product useractivity-browser-host
host="$PWD/.build/debug/useractivity-browser-host"
gecko_id="$(sed -n 's/.*"id": *"\([^"]*@[^"]*\)".*/\1/p' browser/extension/manifest.json)"
chromium_id="$(sed -n 's/^chromium-id: *//p' browser/extension-id.txt)"
manifest() {
  printf '{\n  "name": "%s",\n  "description": "UserActivity (development build)",\n' "$name"
  printf '  "path": "%s",\n  "type": "stdio",\n  %s\n}\n' "$host" "$1"
}
mkdir -p "$mozilla_dir" "$chromium_dir"
manifest "\"allowed_extensions\": [\"$gecko_id\"]" > "$mozilla_dir/$name.json"
manifest "\"allowed_origins\": [\"chrome-extension://$chromium_id/\"]" > "$chromium_dir/$name.json"
cat <<TEXT
Installed the host manifests for $host:
  $mozilla_dir/$name.json
  $chromium_dir/$name.json
Now load the extension from $PWD/browser/extension:
  Chromium: chrome://extensions → Developer mode → Load unpacked (or chromium --load-extension=$PWD/browser/extension)
  Firefox:  about:debugging#/runtime/this-firefox → Load Temporary Add-on… → browser/extension/manifest.json
TEXT
