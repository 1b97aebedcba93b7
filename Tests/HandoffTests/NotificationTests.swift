// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// A fake notification server: prints `NOTIFY <id> <summary> | <actions>`
/// and `CLOSE <id>`; invokes the action named on its command line (or none),
/// and any action when told with the test-only `Invoke(u id, s action)`.
let notificationServerScript = #"""
import sys, gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib
invoke = sys.argv[1]
XML = """<node><interface name="org.freedesktop.Notifications">
<method name="Notify"><arg type="s" direction="in"/><arg type="u" direction="in"/><arg type="s" direction="in"/>
<arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="as" direction="in"/><arg type="a{sv}" direction="in"/>
<arg type="i" direction="in"/><arg type="u" direction="out"/></method>
<method name="CloseNotification"><arg type="u" direction="in"/></method>
<method name="Invoke"><arg type="u" direction="in"/><arg type="s" direction="in"/></method>
<signal name="ActionInvoked"><arg type="u"/><arg type="s"/></signal>
<signal name="NotificationClosed"><arg type="u"/><arg type="u"/></signal></interface></node>"""
state = {"next": 1}
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
def on_call(connection, sender, path, interface, method, parameters, invocation):
    if method == "Notify":
        app, replaces, icon, summary, body, actions, hints, timeout = parameters.unpack()
        nid = replaces or state["next"]
        state["next"] += 1
        invocation.return_value(GLib.Variant("(u)", (nid,)))
        print("NOTIFY %d %s | %s" % (nid, summary, " ".join(actions)), flush=True)
        if invoke in actions[0::2]:
            def fire():
                connection.emit_signal(sender, "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
                                       "ActionInvoked", GLib.Variant("(us)", (nid, invoke)))
                return False
            GLib.timeout_add(50, fire)
    elif method == "Invoke":
        nid, action = parameters.unpack()
        connection.emit_signal(None, "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
                               "ActionInvoked", GLib.Variant("(us)", (nid, action)))
        invocation.return_value(None)
    else:
        print("CLOSE %d" % parameters.unpack()[0], flush=True)
        invocation.return_value(None)
bus.register_object("/org/freedesktop/Notifications", Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0], on_call, None, None)
def owned(*args):
    print("READY", flush=True)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.Notifications", Gio.BusNameOwnerFlags.NONE, owned, None)
GLib.MainLoop().run()
"""#

@Suite("Handoff notifications", .serialized)
struct NotificationTests {
    static let apps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]

    /// Starts the fake server (handoffd notices it through NameOwnerChanged).
    func startServer(_ stack: Stack, invoking action: String) throws -> ChildProcess {
        let server = try stack.spawnScript(notificationServerScript, "notifications.py", [action])
        return server
    }

    @Test func withoutAnAgentANotificationConfirmsPairing() throws {
        let stacks = try TwoStacks()
        _ = try stacks.a.startAgent(accept: true)
        let server = try startServer(stacks.b, invoking: "accept")
        let path = try stacks.link()
        _ = try stacks.a.call(HO.busName, path, HO.device, "Pair")
        let line = try #require(try server.readLine(timeout: 30))
        #expect(line.contains("Pair with Stack A?") && line.contains("accept Accept decline Decline"), "\(line)")
        #expect(stacks.b.waitForDevice(stacks.b.devicePath(of: stacks.a), "Paired", { $0 == .boolean(true) }), "\(stacks.logs)")
        // Answered, the notification is closed.
        let id = line.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
        #expect(try server.readLine(timeout: 30) == "CLOSE \(id)")
    }

    @Test func declineInTheNotificationRefuses() throws {
        let stacks = try TwoStacks()
        _ = try stacks.a.startAgent(accept: true)
        _ = try startServer(stacks.b, invoking: "decline")
        let path = try stacks.link()
        #expect(dbusErrorName { try stacks.a.call(HO.busName, path, HO.device, "Pair") } == "org.example.UserActivity.Error.PairingRefused")
    }

    @Test func onlyTheNotificationServerAnswersForThePerson() throws {
        let stacks = try TwoStacks()
        _ = try stacks.a.startAgent(accept: true)
        let server = try startServer(stacks.b, invoking: "none")
        let path = try stacks.link()
        let outcome = try stacks.a.callInBackground(path, HO.device, "Pair")
        let line = try #require(try server.readLine(timeout: 30))
        let id = try #require(line.split(separator: " ").dropFirst().first.flatMap { UInt32($0) }, "\(line)")
        // Another program on B's bus claims the person pressed Accept, again
        // and again: each Ping answers after handoffd read the signal before it.
        // (handoffd learns the id from Notify's reply, so the first ones may come early.)
        let forged = try Message.signal(path: "/org/freedesktop/Notifications", interface: "org.freedesktop.Notifications",
                                        member: "ActionInvoked", arguments: [.uint32(id), .string("accept")])
        for _ in 0..<40 where outcome.value == nil {
            _ = stacks.b.client.send(forged)
            _ = try stacks.b.call(HO.busName, HO.managerPath, "org.freedesktop.DBus.Peer", "Ping")
            Thread.sleep(forTimeInterval: 0.05)
        }
        // Then the person declines in the real notification.
        _ = try stacks.b.call("org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
                              "Invoke", [.uint32(id), .string("decline")])
        #expect(waitUntil(timeout: 30) { outcome.value != nil })
        #expect(outcome.value == "org.example.UserActivity.Error.PairingRefused", "\(stacks.logs)")
        #expect(try stacks.b.deviceProperties(stacks.b.devicePath(of: stacks.a))["Paired"] == .boolean(false))
    }

    @Test func aContinuableActivityIsOfferedAndWithdrawn() throws {
        let stacks = try TwoStacks(appsA: Self.apps, appsB: Self.apps)
        let server = try startServer(stacks.b, invoking: "none")
        let (_, onB) = try stacks.pair()
        let activity = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Draft"))])
        // The advert first, so that a failure says which side lost it.
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.contains { $0.0 == "title" && $0.1 == .string("Draft") } == true }),
                "\(stacks.logs)")
        let offer = try #require(try server.readLine(timeout: 30), "\(stacks.logs)")
        #expect(offer.contains("Continue “Draft” from Stack A") && offer.contains("continue Continue"), "\(offer)")
        _ = try stacks.a.call(UA.busName, activity, UA.activityInterface, "Invalidate")
        let close = try #require(try server.readLine(timeout: 30))
        #expect(close.hasPrefix("CLOSE "), "\(close)")
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.isEmpty == true }))
    }

    @Test func theContinueActionContinuesHere() throws {
        let stacks = try TwoStacks(appsA: Self.apps, appsB: Self.apps)
        _ = try startServer(stacks.b, invoking: "continue")
        _ = try stacks.pair()
        let handler = try HandlerFixture.start(app: UA.editor, bus: stacks.b.bus, directory: stacks.b.session.root)
        defer { handler.terminate(grace: 0.5) }
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("From the notification"))])
        let line = try #require(try handler.readLine(timeout: 20))
        #expect(line.contains("From the notification"), "\(line)\n\(stacks.logs)")
    }

    @Test func notifyContinuableFalseShowsNothingAndPersists() throws {
        let stacks = try TwoStacks(appsA: Self.apps, appsB: Self.apps)
        let server = try startServer(stacks.b, invoking: "none")
        try stacks.b.set("NotifyContinuable", .boolean(false))
        let (_, onB) = try stacks.pair()
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Quiet"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.contains { $0.0 == "title" && $0.1 == .string("Quiet") } == true }))
        // Turned on again, the next activity is the first one offered: the
        // daemon's messages to the server keep their order, so "Quiet" was never sent.
        try stacks.b.set("NotifyContinuable", .boolean(true))
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Loud"))])
        let first = try #require(try server.readLine(timeout: 30))
        #expect(first.contains("Loud"), "\(first)")
        try stacks.b.set("NotifyContinuable", .boolean(false))
        stacks.b.killHandoffd()
        try stacks.b.startHandoffd()
        #expect(try stacks.b.managerProperty("NotifyContinuable") == .boolean(false))
    }
}
