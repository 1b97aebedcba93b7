#!/usr/bin/gjs
// SPDX-License-Identifier: Apache-2.0
//
// A small notes app in JavaScript (GJS) that uses org.example.UserActivity.
//
//     gjs notes.js [INTERFACE_XML]
//
// 1. names its app (RegisterApplication: a host process, not a Flatpak or Snap),
// 2. publishes the note it shows as the current activity (BecomeCurrent),
// 3. donates a shortcut to another note (Donate), found by Search,
// 4. exports a Handler object and registers it (RegisterHandler): when an
//    activity of its type is continued, it prints what it got and shows that
//    note, which becomes the current activity with the same title and user info.
//
// Each step prints one line (current / donated / ready / continued). The desktop
// entry com.example.NotesGjs.desktop declares the type. The proxy and the
// exported Handler are made from the service's interface XML.
const {Gio, GLib} = imports.gi;
const System = imports.system;

const APP_ID = 'com.example.NotesGjs';
const NOTE_TYPE = `${APP_ID}.edit-note`;
const HANDLER_PATH = '/com/example/NotesGjs/Handler';
const SERVICE = 'org.example.UserActivity';
const MANAGER_PATH = '/org/example/UserActivity';

// The interface XML: the argument, else the source tree's, else the installed copy.
function interfaceXML() {
    const here = GLib.path_get_dirname(System.programPath);
    const candidates = [
        ARGV[0],
        GLib.build_filenamev([here, '..', '..', 'dbus', 'org.example.UserActivity.xml']),
        '/usr/share/dbus-1/interfaces/org.example.UserActivity.xml',
    ];
    const path = candidates.find(candidate => candidate && GLib.file_test(candidate, GLib.FileTest.EXISTS));
    if (!path)
        throw new Error('org.example.UserActivity.xml not found: give its path as the argument');
    const [, bytes] = GLib.file_get_contents(path);
    return new TextDecoder().decode(bytes);
}

const xml = interfaceXML();
const node = Gio.DBusNodeInfo.new_for_xml(xml);
// makeProxyWrapper uses the XML's first interface: in this file, the manager.
if (node.interfaces[0].name !== SERVICE)
    throw new Error(`the interface XML starts with ${node.interfaces[0].name}, not ${SERVICE}`);
const ManagerProxy = Gio.DBusProxy.makeProxyWrapper(xml);
// Loading the manager's properties would ask the service for their changes; the notes need neither.
const manager = new ManagerProxy(Gio.DBus.session, SERVICE, MANAGER_PATH, null, null,
    Gio.DBusProxyFlags.DO_NOT_LOAD_PROPERTIES);

// Makes the note the session's current activity. userInfo is an a{sv} GLib.Variant.
function becomeCurrent(title, userInfo) {
    const [path] = manager.BecomeCurrentSync(NOTE_TYPE, {
        'title': new GLib.Variant('s', title),
        'user-info': userInfo,
    });
    print(`current ${path}`);
}

// Only the service hands out continuations: refuse calls from anyone else.
function fromService(invocation) {
    if (invocation.get_sender() === manager.get_name_owner())
        return true;
    invocation.return_dbus_error('org.freedesktop.DBus.Error.AccessDenied',
        'only org.example.UserActivity may call this handler');
    return false;
}

// The Handler. "…Async" methods get the arguments (a{sv} values stay GLib.Variants,
// so every value keeps its D-Bus type) and the invocation, and answer through it.
const handler = Gio.DBusExportedObject.wrapJSObject(node.lookup_interface(`${SERVICE}.Handler`), {
    ContinueActivityAsync([activityType, activity, platformData], invocation) {
        if (!fromService(invocation))
            return;
        const title = activity['title']?.unpack() ?? '';
        const userInfo = activity['user-info'] ?? new GLib.Variant('a{sv}', {});
        print(`continued ${activityType}: ${title} ${userInfo.print(true)}`);
        // Answer first (true: this app took it), then show the note: it becomes current.
        invocation.return_value(new GLib.Variant('(b)', [true]));
        try {
            becomeCurrent(title, userInfo);
        } catch (error) {
            printerr(`notes.js: cannot publish the continued note: ${error.message}`);
        }
    },
    SaveActivityAsync([activity], invocation) {
        if (fromService(invocation)) // nothing to refresh: the published data are current
            invocation.return_value(new GLib.Variant('(a{sv})', [{}]));
    },
    ContinuationStreamOpenedAsync([activity, stream], invocation) {
        if (fromService(invocation)) // this app offers no continuation streams
            invocation.return_value(null);
    },
    FailedToContinueAsync([activityType, errorName, message], invocation) {
        if (!fromService(invocation))
            return;
        print(`failed ${activityType}: ${errorName}: ${message}`);
        invocation.return_value(null);
    },
});

try {
    // 1. This connection speaks for APP_ID (its desktop entry must be installed).
    manager.RegisterApplicationSync(APP_ID);
    // 2. The note on screen is the current activity.
    becomeCurrent('Welcome note (GJS)', new GLib.Variant('a{sv}', {
        'note': new GLib.Variant('s', 'welcome'),
        'line': new GLib.Variant('x', 1),
    }));
    // 3. A shortcut for search and suggestions.
    const [savedID] = manager.DonateSync(NOTE_TYPE, {
        'title': new GLib.Variant('s', 'Groceries note (GJS)'),
        'keywords': new GLib.Variant('as', ['shopping', 'groceries']),
        'eligible-for-search': new GLib.Variant('b', true),
        'persistent-identifier': new GLib.Variant('s', 'note:groceries'),
        'user-info': new GLib.Variant('a{sv}', {'note': new GLib.Variant('s', 'groceries')}),
    });
    print(`donated ${savedID}`);
    // 4. Continuations of NOTE_TYPE come to this object.
    handler.export(Gio.DBus.session, HANDLER_PATH);
    manager.RegisterHandlerSync(HANDLER_PATH);
} catch (error) {
    printerr(`notes.js: ${SERVICE}: ${error.message}`);
    System.exit(1);
}
print(`ready ${HANDLER_PATH}`);

// Serve until the session bus goes away (the connection then exits the process).
new GLib.MainLoop(null, false).run();
