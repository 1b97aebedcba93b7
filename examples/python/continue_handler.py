#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Continue activities in Python: serve org.example.UserActivity.Handler.

The service calls ContinueActivity on this object when an activity of a type
the app declares is continued (from a search result, another app, a script).

    ./continue_handler.py [--app-id com.example.UserActivityExample] [--once]
"""
import argparse
import sys

from gi.repository import Gio, GLib

BUS_NAME = 'org.example.UserActivity'
MANAGER = ('/org/example/UserActivity', 'org.example.UserActivity')
HANDLER_XML = '''
<node>
  <interface name="org.example.UserActivity.Handler">
    <method name="ContinueActivity">
      <arg name="activity_type" type="s"/><arg name="activity" type="a{sv}"/>
      <arg name="platform_data" type="a{sv}"/><arg name="handled" type="b" direction="out"/>
    </method>
    <method name="SaveActivity">
      <arg name="activity" type="o"/><arg name="properties" type="a{sv}" direction="out"/>
    </method>
    <method name="ContinuationStreamOpened">
      <arg name="activity" type="o"/><arg name="stream" type="h"/>
    </method>
    <method name="FailedToContinue">
      <arg name="activity_type" type="s"/><arg name="error_name" type="s"/><arg name="message" type="s"/>
    </method>
  </interface>
</node>'''

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument('--app-id', default='com.example.UserActivityExample',
                    help='an installed app whose desktop entry declares the types (X-UserActivityTypes)')
parser.add_argument('--once', action='store_true', help='exit after the first continuation')
args = parser.parse_args()

bus = Gio.bus_get_sync(Gio.BusType.SESSION)
loop = GLib.MainLoop()


def call_manager(method, signature, values):
    return bus.call_sync(BUS_NAME, *MANAGER, method, GLib.Variant(signature, values),
                         None, Gio.DBusCallFlags.NONE, -1, None)


def service_owner():
    reply = bus.call_sync('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                          'GetNameOwner', GLib.Variant('(s)', (BUS_NAME,)), None, 0, -1, None)
    return reply.unpack()[0]


def on_call(connection, sender, path, interface, method, parameters, invocation):
    if sender != service_owner():  # only the service hands out activities
        invocation.return_dbus_error('org.freedesktop.DBus.Error.AccessDenied', 'not the service')
        return
    if method == 'ContinueActivity':
        activity_type, activity, platform = parameters.unpack()
        print(f"continue {activity_type}: title={activity.get('title')!r} "
              f"user-info={activity.get('user-info')} from {activity.get('app-id', 'an unknown app')}", flush=True)
        invocation.return_value(GLib.Variant('(b)', (True,)))
        if args.once:
            GLib.idle_add(loop.quit)
    elif method == 'SaveActivity':          # this example publishes nothing: nothing to refresh
        invocation.return_value(GLib.Variant('(a{sv})', ({},)))
    elif method == 'ContinuationStreamOpened':
        invocation.return_value(None)
    elif method == 'FailedToContinue':
        activity_type, error_name, message = parameters.unpack()
        print(f'failed to continue {activity_type}: {error_name}: {message}', flush=True)
        invocation.return_value(None)


path = '/' + args.app_id.replace('.', '/').replace('-', '_') + '/PythonHandler'
interface = Gio.DBusNodeInfo.new_for_xml(HANDLER_XML).interfaces[0]
bus.register_object(path, interface, on_call, None, None)
try:
    call_manager('RegisterApplication', '(s)', (args.app_id,))  # a host process names its app
    call_manager('RegisterHandler', '(o)', (path,))
except GLib.Error as error:
    sys.exit(f'cannot register with {BUS_NAME}: {error.message}')

print(f'waiting for continuations of {args.app_id} at {path}', flush=True)
loop.run()
