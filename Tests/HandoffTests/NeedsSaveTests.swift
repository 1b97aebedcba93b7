// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// The owning app on the origin: registers a handler, makes an activity with
/// NeedsSave current, prints `READY <path>`, then `SAVE` when asked to save;
/// answers with fresh data (`save`), an error (`fail`) or never (`hang`).
let ownerScript = #"""
import sys, gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib
app, activity_type, mode = sys.argv[1], sys.argv[2], sys.argv[3]
XML = """<node><interface name="org.example.UserActivity.Handler">
<method name="ContinueActivity"><arg type="s" direction="in"/><arg type="a{sv}" direction="in"/>
<arg type="a{sv}" direction="in"/><arg type="b" direction="out"/></method>
<method name="SaveActivity"><arg type="o" direction="in"/><arg type="a{sv}" direction="out"/></method>
<method name="ContinuationStreamOpened"><arg type="o" direction="in"/><arg type="h" direction="in"/></method>
<method name="FailedToContinue"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="s" direction="in"/></method>
</interface></node>"""
held = []
def on_call(connection, sender, path, interface, method, parameters, invocation):
    if method == "SaveActivity":
        print("SAVE", flush=True)
        if mode == "save":
            invocation.return_value(GLib.Variant("(a{sv})", ({"title": GLib.Variant("s", "Saved title")},)))
        elif mode == "fail":
            invocation.return_dbus_error("com.example.Editor.Error.DiskFull", "cannot save")
        else:
            held.append(invocation)
    elif method == "ContinueActivity":
        invocation.return_value(GLib.Variant("(b)", (True,)))
    else:
        invocation.return_value(None)
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
bus.register_object("/handler", Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0], on_call, None, None)
def call(method, args, reply=None):
    return bus.call_sync("org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity",
                         method, args, GLib.VariantType(reply) if reply else None, Gio.DBusCallFlags.NONE, -1, None)
call("RegisterApplication", GLib.Variant("(s)", (app,)))
call("RegisterHandler", GLib.Variant("(o)", ("/handler",)))
path = call("BecomeCurrent", GLib.Variant("(sa{sv})", (activity_type, {"title": GLib.Variant("s", "Unsaved"),
                                                                     "needs-save": GLib.Variant("b", True)})), "(o)").unpack()[0]
print("READY " + path, flush=True)
GLib.MainLoop().run()
"""#

@Suite("Handoff honours NeedsSave on the origin", .serialized)
struct NeedsSaveTests {
    static let apps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]

    func startOwner(_ stack: Stack, mode: String) throws -> ChildProcess {
        let script = stack.session.root + "/owner.py"
        try writeFileAtomically(script, contents: ownerScript, mode: 0o755)
        let process = try stack.bus.spawn("/usr/bin/python3", [script, UA.editor, UA.editType, mode])
        guard let line = try process.readLine(timeout: 20), line.hasPrefix("READY ") else {
            throw HandoffTestFailure("owner did not start: \(process.stderrText)")
        }
        return process
    }

    func title(_ activity: TypedValue?) -> String? {
        activity?.stringVariantEntries?.first { $0.0 == "title" }?.1.stringValue
    }

    @Test func theOriginsOwnerSavesBeforeThePayloadLeaves() throws {
        let stacks = try TwoStacks(appsA: Self.apps, appsB: Self.apps)
        let (_, onB) = try stacks.pair()
        let owner = try startOwner(stacks.a, mode: "save")
        defer { owner.terminate(grace: 0.5) }
        let handler = try HandlerFixture.start(app: UA.editor, bus: stacks.b.bus, directory: stacks.b.session.root)
        defer { handler.terminate(grace: 0.5) }
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Unsaved" }), "\(stacks.logs)")
        let app = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])])
        #expect(app.first == .string(UA.editor))
        #expect(try owner.readLine(timeout: 30) == "SAVE")
        let line = try #require(try handler.readLine(timeout: 20))
        #expect(line.contains("Saved title"), "\(line)")
    }

    /// B's ContinueActivity waits while A's owner is asked to save; then `goAway` ends A. The outcome, once it came.
    func continueWhileTheOriginGoesAway(_ goAway: (TwoStacks) -> Void) throws -> (String?, TwoStacks) {
        let stacks = try TwoStacks(appsA: Self.apps, appsB: Self.apps)
        let (_, onB) = try stacks.pair()
        let owner = try startOwner(stacks.a, mode: "hang")
        defer { owner.terminate(grace: 0.5) }
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Unsaved" }), "\(stacks.logs)")
        let outcome = try stacks.b.callInBackground(onB, HO.device, "ContinueActivity", [Self.options(timeoutMilliseconds: 60_000)])
        #expect(try owner.readLine(timeout: 20) == "SAVE")
        goAway(stacks)
        #expect(waitUntil(timeout: 30) { outcome.value != nil })
        return (outcome.value, stacks)
    }

    @Test func theOriginGoingAwayMidFetchIsConnectionUnavailable() throws {
        let (outcome, stacks) = try continueWhileTheOriginGoesAway { $0.a.killHandoffd() }
        #expect(outcome == UA.error("ConnectionUnavailable"), "\(stacks.logs)")
    }

    static func options(timeoutMilliseconds: UInt32) -> TypedValue {
        .dictionary(keyType: "s", valueType: "v", [.init(key: .string("timeout-ms"), value: .variant(.uint32(timeoutMilliseconds)))])
    }

    /// Continues A's activity on B while A's owner answers SaveActivity as `mode` says; the D-Bus error name, or `ok`.
    func continueFromB(ownerMode mode: String, timeoutMilliseconds: UInt32) throws -> String {
        let stacks = try TwoStacks(appsA: Self.apps, appsB: Self.apps)
        let (_, onB) = try stacks.pair()
        let owner = try startOwner(stacks.a, mode: mode)
        defer { owner.terminate(grace: 0.5) }
        let handler = try HandlerFixture.start(app: UA.editor, bus: stacks.b.bus, directory: stacks.b.session.root)
        defer { handler.terminate(grace: 0.5) }
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Unsaved" }), "\(stacks.logs)")
        let outcome = dbusErrorName {
            _ = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [Self.options(timeoutMilliseconds: timeoutMilliseconds)],
                                  timeout: 60_000)
        } ?? "ok"
        #expect(try owner.readLine(timeout: 30) == "SAVE")
        return outcome
    }

    @Test func anOwnerThatFailsToSaveIsHandoffFailed() throws {
        #expect(try continueFromB(ownerMode: "fail", timeoutMilliseconds: 20_000) == UA.error("HandoffFailed"))
    }

    /// The contract leaves an owner that does not answer in time open: the
    /// same as a failed save, since the data would be older than what the person sees.
    @Test func anOwnerThatDoesNotSaveInTimeIsHandoffFailed() throws {
        #expect(try continueFromB(ownerMode: "hang", timeoutMilliseconds: 1000) == UA.error("HandoffFailed"))
    }

    @Test func theOriginLosingItsSessionBusMidFetchIsConnectionUnavailable() throws {
        // A's session ends: its bus goes (and useractivityd with it); handoffd A stays up until it notices.
        let (outcome, stacks) = try continueWhileTheOriginGoesAway { $0.a.bus.stop() }
        #expect(outcome == UA.error("ConnectionUnavailable"), "\(stacks.logs)")
        // A daemon without its session bus has nobody to serve: it exits.
        #expect(stacks.a.handoffd?.waitForExit(timeout: 30) != nil, "\(stacks.logs)")
    }
}
