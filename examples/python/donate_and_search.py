#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Donate a shortcut, then search and ask for suggestions, over D-Bus.

    ./donate_and_search.py [QUERY] [--app-id com.example.UserActivityExample]
"""
import argparse
import sys

from gi.repository import Gio, GLib

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument('query', nargs='?', default='quarterly')
parser.add_argument('--app-id', default='com.example.UserActivityExample')
args = parser.parse_args()

bus = Gio.bus_get_sync(Gio.BusType.SESSION)


def call(method, signature, values):
    reply = bus.call_sync('org.example.UserActivity', '/org/example/UserActivity', 'org.example.UserActivity',
                          method, GLib.Variant(signature, values), None, Gio.DBusCallFlags.NONE, -1, None)
    return reply.unpack()[0]


shortcut = {
    'app-id': GLib.Variant('s', args.app_id),  # a script names the (installed) app it speaks for
    'title': GLib.Variant('s', 'Quarterly report'),
    'keywords': GLib.Variant('as', ['finance', 'q3']),
    'eligible-for-search': GLib.Variant('b', True),
    'persistent-identifier': GLib.Variant('s', '/home/user/Quarterly Report.odt'),
    'suggested-invocation-phrase': GLib.Variant('s', 'Open the quarterly report'),
    'user-info': GLib.Variant('a{sv}', {'path': GLib.Variant('s', '/home/user/Quarterly Report.odt'),
                                        'page': GLib.Variant('x', 3)}),
}
try:
    saved_id = call('Donate', '(sa{sv})', (f'{args.app_id}.open-document', shortcut))
except GLib.Error as error:
    sys.exit(f'Donate failed: {error.message}')
print(f'donated: saved id {saved_id}')

print(f'search {args.query!r}:')
for result in call('Search', '(sa{sv})', (args.query, {'limit': GLib.Variant('u', 5)})):
    print(f"  {result['title']} — {result['app-id']} ({result['activity-type']}), score {result['score']:.2f}")

print('suggestions:')
for result in call('GetSuggestions', '(a{sv})', ({'limit': GLib.Variant('u', 3)},)):
    phrase = result['suggested-invocation-phrase'] or result['title']
    print(f"  {phrase} — used {result['use-count']} time(s), saved id {result['saved-id']}")
