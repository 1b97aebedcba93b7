#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A small notes app in Python (PyGObject) that uses org.example.UserActivity.

    ./notes_app.py [--interface-xml PATH]

1. names its app (RegisterApplication: a host process, not a Flatpak or Snap),
2. publishes the note it shows as the current activity (BecomeCurrent),
3. donates a shortcut to another note (Donate), found by Search,
4. exports a Handler object and registers it (RegisterHandler): when an activity
   of its type is continued, it prints what it got and shows that note, which
   becomes the current activity with the same title and user info.

Each step prints one line (current / donated / ready / continued). The desktop
entry com.example.NotesPython.desktop declares the type. The D-Bus interfaces
come from the service's interface XML, so calls are checked against it.
"""
import argparse
import os
import sys

from gi.repository import Gio, GLib

APP_ID = 'com.example.NotesPython'
NOTE_TYPE = APP_ID + '.edit-note'
HANDLER_PATH = '/com/example/NotesPython/Handler'
SERVICE = 'org.example.UserActivity'
MANAGER_PATH = '/org/example/UserActivity'
INSTALLED_XML = '/usr/share/dbus-1/interfaces/org.example.UserActivity.xml'
SOURCE_XML = os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../dbus/org.example.UserActivity.xml')

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument('--interface-xml', default=SOURCE_XML if os.path.exists(SOURCE_XML) else INSTALLED_XML,
                    help='the service\'s interface XML (default: the source tree\'s, else the installed one)')
args = parser.parse_args()

with open(args.interface_xml, encoding='utf-8') as xml:
    node = Gio.DBusNodeInfo.new_for_xml(xml.read())
bus = Gio.bus_get_sync(Gio.BusType.SESSION)
# A proxy with the interface info: each call's arguments are checked against the XML.
# Loading the manager's properties would ask the service for their changes; the notes need neither.
manager = Gio.DBusProxy.new_sync(bus, Gio.DBusProxyFlags.DO_NOT_LOAD_PROPERTIES, node.lookup_interface(SERVICE),
                                 SERVICE, MANAGER_PATH, SERVICE, None)


def become_current(title, user_info):
    """Makes the note the session's current activity. user_info is an a{sv} GLib.Variant."""
    properties = {'title': GLib.Variant('s', title), 'user-info': user_info}
    path = manager.BecomeCurrent('(sa{sv})', NOTE_TYPE, properties)
    print(f'current {path}', flush=True)


def on_call(connection, sender, path, interface, method, parameters, invocation):
    if sender != manager.get_name_owner():  # only the service hands out continuations
        invocation.return_dbus_error('org.freedesktop.DBus.Error.AccessDenied',
                                     'only org.example.UserActivity may call this handler')
        return
    if method == 'ContinueActivity':
        activity_type = parameters.get_child_value(0).get_string()
        activity = parameters.get_child_value(1)  # kept as a GLib.Variant: every value keeps its D-Bus type
        title = activity.lookup_value('title', GLib.VariantType('s'))
        user_info = activity.lookup_value('user-info', GLib.VariantType('a{sv}')) or GLib.Variant('a{sv}', {})
        title = title.get_string() if title else ''
        print(f'continued {activity_type}: {title} {user_info.print_(True)}', flush=True)
        # Answer first (true: this app took it), then show the note: it becomes current.
        invocation.return_value(GLib.Variant('(b)', (True,)))
        try:
            become_current(title, user_info)
        except GLib.Error as error:
            print(f'notes_app.py: cannot publish the continued note: {error.message}', file=sys.stderr)
    elif method == 'SaveActivity':  # nothing to refresh: the published data are current
        invocation.return_value(GLib.Variant('(a{sv})', ({},)))
    elif method == 'ContinuationStreamOpened':  # this app offers no continuation streams
        invocation.return_value(None)
    elif method == 'FailedToContinue':
        activity_type, error_name, message = parameters.unpack()
        print(f'failed {activity_type}: {error_name}: {message}', flush=True)
        invocation.return_value(None)


try:
    # 1. This connection speaks for APP_ID (its desktop entry must be installed).
    manager.RegisterApplication('(s)', APP_ID)
    # 2. The note on screen is the current activity.
    become_current('Welcome note (Python)',
                   GLib.Variant('a{sv}', {'note': GLib.Variant('s', 'welcome'), 'line': GLib.Variant('x', 1)}))
    # 3. A shortcut for search and suggestions.
    saved_id = manager.Donate('(sa{sv})', NOTE_TYPE, {
        'title': GLib.Variant('s', 'Groceries note (Python)'),
        'keywords': GLib.Variant('as', ['shopping', 'groceries']),
        'eligible-for-search': GLib.Variant('b', True),
        'persistent-identifier': GLib.Variant('s', 'note:groceries'),
        'user-info': GLib.Variant('a{sv}', {'note': GLib.Variant('s', 'groceries')}),
    })
    print(f'donated {saved_id}', flush=True)
    # 4. Continuations of NOTE_TYPE come to this object.
    bus.register_object(HANDLER_PATH, node.lookup_interface(SERVICE + '.Handler'), on_call, None, None)
    manager.RegisterHandler('(o)', HANDLER_PATH)
except GLib.Error as error:
    sys.exit(f'notes_app.py: {SERVICE}: {error.message}')
print(f'ready {HANDLER_PATH}', flush=True)

# Serve until the session bus goes away (the connection then exits the process).
GLib.MainLoop().run()
