// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// The Handoff contract's names, literal (the tests check the daemon against the spec).
public enum HO {
    public static let busName = "org.example.UserActivity.Handoff"
    public static let managerPath = "/org/example/UserActivity/Handoff"
    public static let manager = "org.example.UserActivity.Handoff"
    public static let device = "org.example.UserActivity.Handoff.Device"
    public static let devicePrefix = "/org/example/UserActivity/Handoff/device/"
}

public struct HandoffTestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A pairing UI on a stack's bus: answers RequestConfirmation as told and
/// prints one line per call (`REQUEST <device> <code>`, `CANCEL`).
public let agentScript = #"""
import sys, gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib
answer = sys.argv[1]
held = []
XML = """<node><interface name="org.example.UserActivity.Handoff.Agent">
<method name="RequestConfirmation"><arg type="o" direction="in"/><arg type="s" direction="in"/></method>
<method name="Cancel"/></interface></node>"""
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
def on_call(connection, sender, path, interface, method, parameters, invocation):
    if method == "RequestConfirmation":
        device, code = parameters.unpack()
        print("REQUEST " + device + " " + code, flush=True)
        if answer == "accept":
            invocation.return_value(None)
        elif answer == "hang":
            held.append(invocation)
        else:
            invocation.return_dbus_error("org.example.Agent.Refused", "the person refused")
    else:
        print("CANCEL", flush=True)
        invocation.return_value(None)
bus.register_object("/agent", Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0], on_call, None, None)
bus.call_sync("org.example.UserActivity.Handoff", "/org/example/UserActivity/Handoff", "org.example.UserActivity.Handoff",
              "RegisterAgent", GLib.Variant("(o)", ("/agent",)), None, Gio.DBusCallFlags.NONE, -1, None)
print("READY", flush=True)
GLib.MainLoop().run()
"""#

/// A fake screen saver: GetActive, and SetActive (test-only) emitting ActiveChanged.
let screenSaverScript = #"""
import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib
XML = """<node><interface name="org.freedesktop.ScreenSaver">
<method name="GetActive"><arg type="b" direction="out"/></method>
<method name="SetActive"><arg type="b" direction="in"/></method>
<signal name="ActiveChanged"><arg type="b"/></signal></interface></node>"""
state = {"active": False}
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
def on_call(connection, sender, path, interface, method, parameters, invocation):
    if method == "GetActive":
        invocation.return_value(GLib.Variant("(b)", (state["active"],)))
    else:
        state["active"] = parameters.unpack()[0]
        connection.emit_signal(None, "/org/freedesktop/ScreenSaver", "org.freedesktop.ScreenSaver", "ActiveChanged",
                               GLib.Variant("(b)", (state["active"],)))
        invocation.return_value(None)
bus.register_object("/org/freedesktop/ScreenSaver", Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0], on_call, None, None)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.ScreenSaver", Gio.BusNameOwnerFlags.NONE, None, None)
print("READY", flush=True)
GLib.MainLoop().run()
"""#

/// A fake logind on a private "system" bus: session c1 at
/// /org/freedesktop/login1/session/c1 with LockedHint, and a test-only
/// SetLocked(b) that changes it and emits PropertiesChanged.
let logindScript = #"""
import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib
MANAGER = """<node><interface name="org.freedesktop.login1.Manager">
<method name="GetSession"><arg type="s" direction="in"/><arg type="o" direction="out"/></method>
<method name="SetLocked"><arg type="b" direction="in"/></method></interface></node>"""
SESSION = """<node><interface name="org.freedesktop.login1.Session">
<property name="LockedHint" type="b" access="read"/></interface></node>"""
PATH = "/org/freedesktop/login1/session/c1"
state = {"locked": False}
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
def manager_call(connection, sender, path, interface, method, parameters, invocation):
    if method == "GetSession":
        if parameters.unpack()[0] == "c1":
            invocation.return_value(GLib.Variant("(o)", (PATH,)))
        else:
            invocation.return_dbus_error("org.freedesktop.login1.NoSuchSession", "no such session")
    else:
        state["locked"] = parameters.unpack()[0]
        connection.emit_signal(None, PATH, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                               GLib.Variant("(sa{sv}as)", ("org.freedesktop.login1.Session", {"LockedHint": GLib.Variant("b", state["locked"])}, [])))
        invocation.return_value(None)
def get_property(connection, sender, path, interface, name):
    return GLib.Variant("b", state["locked"])
bus.register_object("/org/freedesktop/login1", Gio.DBusNodeInfo.new_for_xml(MANAGER).interfaces[0], manager_call, None, None)
bus.register_object(PATH, Gio.DBusNodeInfo.new_for_xml(SESSION).interfaces[0], None, get_property, None)
def owned(*args):
    print("READY", flush=True)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.login1", Gio.BusNameOwnerFlags.NONE, owned, None)
GLib.MainLoop().run()
"""#

/// One complete desktop: its own session bus, XDG dirs, useractivityd
/// (D-Bus activated) and useractivity-handoffd listening on 127.0.0.1, or
/// where ``Placement`` says (another network namespace, its system bus).
public final class HandoffStack: @unchecked Sendable {
    /// Where useractivity-handoffd runs: the address it listens on, the
    /// system bus it is given, and how it is started (for example inside a
    /// network namespace) with the environment it is handed.
    public struct Placement: Sendable {
        public var listen: String
        public var systemBusAddress: String?
        public var launch: @Sendable (_ executable: String, _ arguments: [String], _ environment: [String: String]) throws -> ChildProcess

        public init(listen: String, systemBusAddress: String?,
                    launch: @escaping @Sendable (_ executable: String, _ arguments: [String], _ environment: [String: String]) throws -> ChildProcess) {
            self.listen = listen
            self.systemBusAddress = systemBusAddress
            self.launch = launch
        }
    }

    public let name: String
    public let session: SessionEnvironment
    public let bus: PrivateBus
    public let client: Connection
    public private(set) var handoffd: ChildProcess?
    private var children: [ChildProcess] = []

    public let keepaliveSeconds: Int
    /// Added to handoffd's environment at its next start.
    public var extraEnvironment: [String: String] = [:]
    /// A private bus standing in for the system bus (with a fake logind), when asked for.
    public let systemBus: PrivateBus?
    private let placement: Placement?

    public init(_ name: String, apps: [(id: String, types: [String])] = [], fakeScreenSaver: Bool = false, fakeLogind: Bool = false,
                keepaliveSeconds: Int = 15, placement: Placement? = nil, extraEnvironment: [String: String] = [:]) throws {
        self.name = name
        self.extraEnvironment = extraEnvironment
        self.placement = placement
        self.keepaliveSeconds = keepaliveSeconds
        systemBus = fakeLogind ? try PrivateBus() : nil
        session = try SessionEnvironment()
        for app in apps { try session.writeDesktopEntry(appID: app.id, types: app.types) }
        bus = try PrivateBus(environment: session)
        try bus.installService(name: "org.example.UserActivity", exec: "\(try BuiltProducts.useractivityd()) --verbose")
        client = try Connection.bus(address: bus.address)
        if fakeScreenSaver { _ = try spawnScript(screenSaverScript, "screensaver.py", []) }
        if let systemBus {
            let path = session.root + "/logind.py"
            try writeFileAtomically(path, contents: logindScript, mode: 0o755)
            let process = try systemBus.spawn("/usr/bin/python3", [path])
            guard try process.readLine(timeout: 20) == "READY" else { throw HandoffTestFailure("fake logind did not start: \(process.stderrText)") }
            children.append(process)
        }
        try startHandoffd()
    }

    deinit {
        for child in children { child.terminate(grace: 0.5) }
        handoffd?.terminate(grace: 1)
        client.close()
        bus.stop()
        systemBus?.stop()
    }

    public func startHandoffd() throws {
        let executable = try BuiltProducts.executable(named: "useractivity-handoffd")
        let arguments = ["--listen", placement?.listen ?? "127.0.0.1:0", "--verbose"]
        // Never the machine's system bus: the placement's, the fake one, or none.
        let environment = bus.environment(adding: [
            "USERACTIVITY_HANDOFF_KEEPALIVE_SECONDS": "\(keepaliveSeconds)",
            "DBUS_SYSTEM_BUS_ADDRESS": placement?.systemBusAddress ?? systemBus?.address ?? "unix:path=/nonexistent/system_bus_socket",
            "XDG_SESSION_ID": "c1",
        ].merging(extraEnvironment) { $1 })
        let process = try placement?.launch(executable, arguments, environment)
            ?? ChildProcess(executable: executable, arguments: arguments, environment: environment, stdout: .capture, stderr: .capture)
        handoffd = process
        guard waitUntil(timeout: 20, { (try? nameHasOwner(HO.busName)) == true }) else {
            throw HandoffTestFailure("\(name): useractivity-handoffd did not take its name: \(process.stderrText)")
        }
    }

    public func killHandoffd() {
        handoffd?.kill()
        _ = handoffd?.waitForExit(timeout: 10)
    }

    public var handoffLog: String { handoffd?.stderrText ?? "" }


    /// Whether handoffd's log comes to contain `text`: its output is read

    /// as it arrives, so a line the daemon wrote just before closing a

    /// socket may not be in ``handoffLog`` at once.

    public func logEventually(contains text: String, timeout: Double = 30) -> Bool {

        waitUntil(timeout: timeout) { handoffLog.contains(text) }

    }

    public func nameHasOwner(_ name: String) throws -> Bool {
        try client.callBus("NameHasOwner", [.string(name)]).first == .boolean(true)
    }

    @discardableResult
    public func spawnScript(_ text: String, _ file: String, _ arguments: [String]) throws -> ChildProcess {
        let path = session.root + "/" + file
        try writeFileAtomically(path, contents: text, mode: 0o755)
        let process = try bus.spawn("/usr/bin/python3", [path] + arguments)
        guard let line = try process.readLine(timeout: 20), line == "READY" else {
            throw HandoffTestFailure("\(file) did not start: \(process.stderrText)")
        }
        children.append(process)
        return process
    }

    /// A pairing agent that accepts or refuses.
    public func startAgent(accept: Bool) throws -> ChildProcess {
        try spawnScript(agentScript, "agent.py", [accept ? "accept" : "refuse"])
    }

    /// A pairing agent that never answers (a person who walked away).
    public func startSilentAgent() throws -> ChildProcess {
        try spawnScript(agentScript, "agent.py", ["hang"])
    }

    // MARK: Calls

    public func call(_ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue] = [],
              timeout: Int32 = 30_000) throws -> [TypedValue] {
        let message = try Message.methodCall(destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        return try client.call(message, timeoutMilliseconds: timeout).arguments()
    }

    public func handoff(_ member: String, _ arguments: [TypedValue] = []) throws -> [TypedValue] {
        try call(HO.busName, HO.managerPath, HO.manager, member, arguments)
    }

    public func set(_ property: String, _ value: TypedValue) throws {
        _ = try call(HO.busName, HO.managerPath, "org.freedesktop.DBus.Properties", "Set",
                     [.string(HO.manager), .string(property), .variant(value)])
    }

    public func managerProperty(_ property: String) throws -> TypedValue? {
        let value = try call(HO.busName, HO.managerPath, "org.freedesktop.DBus.Properties", "Get", [.string(HO.manager), .string(property)]).first
        if case .variant(let inner)? = value { return inner }
        return value
    }

    public func deviceProperties(_ path: String) throws -> [String: TypedValue] {
        let entries = try call(HO.busName, path, "org.freedesktop.DBus.Properties", "GetAll", [.string(HO.device)]).first?.stringVariantEntries ?? []
        return Dictionary(entries, uniquingKeysWith: { $1 })
    }

    public func devicePaths() throws -> [String] {
        guard case .dictionary(_, _, let entries)? = try call(HO.busName, HO.managerPath, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects").first else { return [] }
        return entries.compactMap(\.key.objectPathValue)
    }

    public var deviceID: String { (try? managerProperty("DeviceId")?.stringValue) ?? "" }
    public var port: UInt16 {
        if case .uint16(let port)? = try? managerProperty("ListenPort") { return port }
        return 0
    }

    public func devicePath(of other: HandoffStack) -> String { HO.devicePrefix + other.deviceID }

    /// Waits until the device object's property has the value.
    public func waitForDevice(_ path: String, _ property: String, timeout: Double = 30, _ matches: (TypedValue?) -> Bool) -> Bool {
        waitUntil(timeout: timeout) { matches((try? deviceProperties(path))?[property]) }
    }

    /// Makes an activity current on this stack's useractivityd, as `app`.
    public func becomeCurrent(app: String, type: String, _ properties: [(String, TypedValue)]) throws -> String {
        let entries = [("app-id", TypedValue.string(app))] + properties
        return try call("org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity", "BecomeCurrent",
                        [.string(type), .dictionary(keyType: "s", valueType: "v", entries.map { .init(key: .string($0.0), value: .variant($0.1)) })])
            .first?.objectPathValue ?? ""
    }

    public func setPrivacy(_ property: String, _ value: TypedValue) throws {
        _ = try call("org.example.UserActivity", "/org/example/UserActivity", "org.freedesktop.DBus.Properties", "Set",
                     [.string("org.example.UserActivity"), .string(property), .variant(value)])
    }
}

