#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the translation template of useractivity-settings (OUT, default
# .build/po/useractivity-settings.pot) from the strings its Swift sources mark
# with localized(…) and from its desktop entry and AppStream metainfo.
# xgettext has no Swift parser; the marked strings are plain C-style literals.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.build/po/useractivity-settings.pot}"
mkdir -p "$(dirname "$out")"
xgettext --language=C --from-code=UTF-8 --keyword= --keyword=localized:1 --keyword=localized:1,2 --keyword=localizedFormat:1 \
  --add-comments=TRANSLATORS --package-name=useractivity-settings --msgid-bugs-address=maintainers@example.org \
  -o "$out" Sources/useractivity-settings/*.swift Sources/GtkSupport/*.swift
xgettext --join-existing --from-code=UTF-8 -o "$out" \
  desktop/share/applications/org.example.UserActivity.Settings.desktop \
  desktop/share/metainfo/org.example.UserActivity.Settings.metainfo.xml
count=$(grep -c '^msgid "[^"]' "$out")
echo "$out: $count strings"
# A template that lost the app's strings (a renamed marker, a parse failure) is an error.
[ "$count" -ge 100 ] || { echo "update-pot.sh: only $count strings found" >&2; exit 1; }
# A string of each source: a page, a plural message, the desktop entry's
# name, the metainfo's summary (a long msgid is wrapped: its first line).
for line in 'msgid "Search history"' 'msgid_plural "%d results"' 'msgid "Handoff and History"' \
            '"Continue your work on your other computers and control your activity history"'; do
  grep -qxF "$line" "$out" || { echo "update-pot.sh: $out lacks $line" >&2; exit 1; }
done
