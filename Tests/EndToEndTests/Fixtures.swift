// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

// End-to-end fixtures: the BUILT `useractivityd`, started by D-Bus activation
// on a private bus per test, driven with `gdbus`/`busctl` one-liners (as a
// user types them) and with in-process DBusKit connections where a connection
// has to stay open (a live activity lives as long as the connection that
// created it).

/// A desktop entry installed for a test.
struct FixtureApp: Sendable {
    var id: String
    var types: [String]
    var team: String?

    init(_ id: String, types: [String], team: String? = nil) {
        self.id = id
        self.types = types
        self.team = team
    }

    /// com.example.Editor (declares com.example.Editor.edit-document) and
    /// com.example.Viewer (declares com.example.Viewer.view).
    static let standard = [
        FixtureApp(UA.editor, types: [UA.editType]),
        FixtureApp(UA.viewer, types: [UA.viewType]),
    ]
}

/// One private session bus whose `org.example.UserActivity` is the built
/// daemon, started on demand by D-Bus activation.
final class DaemonHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus
    let daemonPath: String

    init(apps: [FixtureApp] = FixtureApp.standard) throws {
        session = try SessionEnvironment()
        for app in apps {
            try session.writeDesktopEntry(appID: app.id, types: app.types, team: app.team)
        }
        bus = try PrivateBus(environment: session)
        daemonPath = try BuiltProducts.useractivityd()
        try bus.installService(name: UA.busName, exec: "\(shellQuote(daemonPath)) --verbose")
    }

    deinit {
        bus.stop()
    }

    /// The bus's log (dbus-daemon and the activated daemon's `--verbose` output), last `lines` lines.
    func logTail(_ lines: Int = 60) -> String {
        let all = bus.log.split(separator: "\n", omittingEmptySubsequences: false)
        return "--- bus log (last \(lines) lines) ---\n" + all.suffix(lines).joined(separator: "\n")
    }

    // MARK: Command-line clients

    /// `busctl --user <arguments>`; with `debug`, `SYSTEMD_LOG_LEVEL=debug`
    /// makes busctl print the D-Bus error *name* of a failed call on stderr.
    func busctl(_ arguments: [String], debug: Bool = false) throws -> CommandResult {
        try bus.run("busctl", ["--user"] + arguments,
                    extraEnvironment: debug ? ["SYSTEMD_LOG_LEVEL": "debug"] : [:])
    }

    /// `busctl --user --json=short <arguments>`, required to succeed, decoded.
    func busctlJSON(_ arguments: [String]) throws -> BusctlJSON {
        let result = try busctl(["--json=short"] + arguments)
        guard result.succeeded else { throw CommandFailure(result: result) }
        return try BusctlJSON(parsing: result.stdout)
    }

    /// `gdbus call --session --dest org.example.UserActivity --object-path <path> --method <method> <arguments…>`.
    func gdbusCall(path: String = UA.managerPath, _ method: String, _ arguments: [String] = []) throws -> CommandResult {
        try bus.run("gdbus", ["call", "--session", "--dest", UA.busName, "--object-path", path,
                              "--method", method] + arguments)
    }

    /// `gdbus call` of a manager method (`org.example.UserActivity.<member>`).
    func gdbusManager(_ member: String, _ arguments: [String] = []) throws -> CommandResult {
        try gdbusCall(path: UA.managerPath, "\(UA.managerInterface).\(member)", arguments)
    }

    // MARK: Service state through the command line

    /// Activates the daemon (if needed) by reading Version, as a user would.
    @discardableResult
    func activate() throws -> String {
        let json = try busctlJSON(["call", UA.busName, UA.managerPath, "org.freedesktop.DBus.Properties", "Get",
                                   "ss", UA.managerInterface, "Version"])
        return json.arguments.first.flatMap { BusctlJSON.unwrapVariant($0) as? String } ?? ""
    }

    /// `busctl --user get-property org.example.UserActivity /org/example/UserActivity org.example.UserActivity CurrentActivity`.
    func currentActivity() throws -> String {
        let json = try busctlJSON(["get-property", UA.busName, UA.managerPath, UA.managerInterface, "CurrentActivity"])
        return json.data as? String ?? "<not an object path: \(json.raw)>"
    }

    /// A property of an activity object, read with `busctl --user --json=short get-property`.
    func activityProperty(_ path: String, _ name: String) throws -> Any? {
        try busctlJSON(["get-property", UA.busName, path, UA.activityInterface, name]).data
    }

    /// The PID owning `org.example.UserActivity`, nil when nobody owns it.
    /// (`busctl --user call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetConnectionUnixProcessID s org.example.UserActivity`)
    func daemonPID() throws -> pid_t? {
        let result = try busctl(["--json=short", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                 "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s", UA.busName])
        guard result.succeeded else { return nil }
        let json = try BusctlJSON(parsing: result.stdout)
        return (json.arguments.first as? NSNumber).map { pid_t($0.int32Value) }
    }

    /// Whether anyone owns `org.example.UserActivity` on the bus.
    func nameHasOwner() throws -> Bool {
        let json = try busctlJSON(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                   "NameHasOwner", "s", UA.busName])
        return (json.arguments.first as? Bool) ?? ((json.arguments.first as? NSNumber)?.boolValue ?? false)
    }

    /// Object paths GetManagedObjects lists, with their Activity properties (busctl JSON).
    func managedObjects() throws -> [String: [String: Any]] {
        let json = try busctlJSON(["call", UA.busName, UA.managerPath, "org.freedesktop.DBus.ObjectManager",
                                   "GetManagedObjects"])
        guard let objects = json.arguments.first as? [String: Any] else { return [:] }
        var result: [String: [String: Any]] = [:]
        for (path, interfaces) in objects {
            let properties = (interfaces as? [String: Any])?[UA.activityInterface] as? [String: Any] ?? [:]
            result[path] = properties.mapValues { BusctlJSON.unwrapVariant($0) ?? NSNull() }
        }
        return result
    }

    // MARK: In-process connections

    /// A new in-process connection to this bus (closed when released).
    func connect() throws -> BusClient {
        try BusClient(address: bus.address)
    }

    /// A connection that records signals matching `rules`.
    func monitor(_ rules: [String]) throws -> SignalMonitor {
        try SignalMonitor(address: bus.address, rules: rules)
    }
}

// MARK: - busctl --json

/// The output of `busctl --json=short`: `{"type": "...", "data": ...}`.
/// For `call`, `data` is the array of reply arguments; for `get-property`, the value.
struct BusctlJSON {
    let raw: String
    let type: String
    let data: Any?

    init(parsing text: String) throws {
        raw = text
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let object = try JSONSerialization.jsonObject(with: Data(trimmed.utf8), options: [.fragmentsAllowed])
            as? [String: Any] else {
            throw ParseFailure("busctl --json output is not an object: \(text)")
        }
        type = object["type"] as? String ?? ""
        data = object["data"]
    }

    /// The reply arguments of a `call`.
    var arguments: [Any] { data as? [Any] ?? [] }

    /// busctl writes a variant as `{"type": "s", "data": ...}`: its content.
    static func unwrapVariant(_ value: Any) -> Any? {
        if let dict = value as? [String: Any], dict.count == 2, dict["type"] is String, let data = dict["data"] {
            return data
        }
        return value
    }
}

struct ParseFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Command results

extension CommandResult {
    /// The D-Bus error name in gdbus's `Error: GDBus.Error:<name>: <message>`.
    var gdbusErrorName: String? {
        guard let match = stderr.firstMatch(of: #/GDBus\.Error:([A-Za-z0-9_.\-]+):/#) else { return nil }
        return String(match.1)
    }

    /// The D-Bus error name of a failed `busctl` call run with `debug: true`
    /// (sd-bus logs `Got message type=error … error-name=<name>`).
    var busctlErrorName: String? {
        guard let match = stderr.firstMatch(of: #/type=error .*?error-name=([A-Za-z0-9_.\-]+)/#) else { return nil }
        return String(match.1)
    }

    /// The first single-quoted string of gdbus's GVariant text output,
    /// e.g. the path in `(objectpath '/org/example/UserActivity/activity/3',)`.
    var gdbusFirstString: String? {
        guard let match = stdout.firstMatch(of: #/'([^']*)'/#) else { return nil }
        return String(match.1)
    }

}

// MARK: - In-process client

/// Conveniences of this suite (the client itself is TestSupport's).
extension BusClient {
    /// Calls `org.example.UserActivity.<member>` on the manager.
    @discardableResult
    func manager(_ member: String, _ arguments: [TypedValue] = []) throws -> [TypedValue] {
        try call(UA.managerPath, UA.managerInterface, member, arguments)
    }

    /// Calls `org.example.UserActivity.Activity.<member>` on an activity.
    @discardableResult
    func activity(_ path: String, _ member: String, _ arguments: [TypedValue] = []) throws -> [TypedValue] {
        try call(path, UA.activityInterface, member, arguments)
    }

    /// CreateActivity (or the manager's BecomeCurrent) claiming `app` with `app-id`.
    func create(_ type: String = UA.editType, app: String = UA.editor,
                _ properties: [(String, TypedValue)] = [], becomeCurrent: Bool = false) throws -> String {
        let entries = [("app-id", TypedValue.string(app))] + properties
        let reply = try manager(becomeCurrent ? "BecomeCurrent" : "CreateActivity",
                                [.string(type), .stringVariantDictionary(entries)])
        guard let path = reply.first?.objectPathValue else {
            throw ParseFailure("CreateActivity replied \(reply), not an object path")
        }
        return path
    }

    /// `org.freedesktop.DBus.Properties.Set`.
    func setProperty(_ path: String, _ name: String, _ value: TypedValue, interface: String = UA.activityInterface) throws {
        try call(path, "org.freedesktop.DBus.Properties", "Set", [.string(interface), .string(name), .variant(value)])
    }

    /// A call to the bus daemon itself.
    @discardableResult
    func busDaemon(_ member: String, _ arguments: [TypedValue] = []) throws -> [TypedValue] {
        let message = Message.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                         interface: "org.freedesktop.DBus", member: member)
        try message.append(arguments)
        return try connection.call(message, timeoutMilliseconds: 5000).arguments()
    }
}

// MARK: - Processes

/// How a process ended, judged from `/proc/<pid>/stat`: nil while it runs;
/// `.gone` when reaped; `.zombie(exitCode:)` with the raw wait status.
enum ProcessState: Equatable {
    case running
    case zombie(waitStatus: Int32)
    case gone
}

func processState(_ pid: pid_t) -> ProcessState {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return .gone }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard let state = fields.first else { return .gone }
    if state == "Z" || state == "X" {
        // Field 52 (exit_code) is the 50th after "pid (comm)".
        let status = fields.count >= 50 ? Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 : -1
        return .zombie(waitStatus: status)
    }
    return .running
}

/// `/proc/<pid>/cmdline` as arguments.
func commandLine(of pid: pid_t) -> [String] {
    guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return [] }
    return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
}

/// The `<interface name="…">…</interface>` element of `xml`, from the start of
/// the line of the doc comment right before it (when there is one) to the
/// closing tag.
func interfaceBlock(_ name: String, in xml: String) -> String? {
    guard let open = xml.range(of: "<interface name=\"\(name)\">"),
          let close = xml.range(of: "</interface>", range: open.upperBound..<xml.endIndex)
    else { return nil }
    var start = open.lowerBound
    let before = xml[..<open.lowerBound]
    let trimmed = before.reversed().drop { $0 == " " || $0 == "\n" || $0 == "\t" }
    if String(trimmed.prefix(3).reversed()) == "-->",
       let comment = before.range(of: "<!--", options: .backwards) {
        start = comment.lowerBound
    }
    // Back to the start of the line when only indentation precedes.
    var lineStart = start
    while lineStart > xml.startIndex {
        let previous = xml.index(before: lineStart)
        if xml[previous] == " " || xml[previous] == "\t" { lineStart = previous } else { break }
    }
    if lineStart == xml.startIndex || xml[xml.index(before: lineStart)] == "\n" { start = lineStart }
    return String(xml[start..<close.upperBound])
}

// MARK: - JSON values

/// A JSON boolean (Foundation may hand it over as Bool or NSNumber).
func jsonBool(_ value: Any?) -> Bool? {
    if let bool = value as? Bool { return bool }
    if let number = value as? NSNumber { return number.boolValue }
    return nil
}

/// A JSON integer.
func jsonInt(_ value: Any?) -> Int64? {
    if let int = value as? Int { return Int64(int) }
    if let int = value as? Int64 { return int }
    if let number = value as? NSNumber { return number.int64Value }
    return nil
}
