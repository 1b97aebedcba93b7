// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import DBusKit
import Foundation
import TestSupport
import TypedValues
import UserActivityCore
import UserActivityService
#if canImport(Glibc)
import Glibc
#endif

/// The contract's names, from the daemon's own tables where they exist.
enum UA {
    static let busName = Interfaces.busName
    static let managerPath = Interfaces.managerPath
    static let manager = Interfaces.managerName
    static let activity = Interfaces.activityName
    static let activityPrefix = Interfaces.activityPathPrefix
    static let properties = "org.freedesktop.DBus.Properties"

    static func error(_ kind: UserActivityError.Kind) -> String { ErrorNames.name(for: kind) }

    static let editor = "com.example.Editor"
    static let editType = "com.example.Editor.edit-document"
    static let editorView = "com.example.Editor.view"
    /// Same team as the editor (`com.example`).
    static let viewer = "com.example.Viewer"
    static let viewType = "com.example.Viewer.view"
    /// Another team (`org.other`).
    static let player = "org.other.Player"
    static let playType = "org.other.Player.play"
    /// The app the confined (Flatpak) caller of the in-process harness is.
    static let sandboxed = "com.example.Sandboxed"
    static let sandboxedType = "com.example.Sandboxed.play"

    /// Every error name a caller may see: the daemon's table plus the
    /// standard errors it documents and those libdbus or the bus answer for
    /// members, interfaces and objects that do not exist.
    static let documentedErrors: Set<String> = Set(UserActivityError.Kind.allCases.map(ErrorNames.name(for:))).union([
        "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.InvalidArgs",
        "org.freedesktop.DBus.Error.PropertyReadOnly", "org.freedesktop.DBus.Error.UnknownProperty",
        "org.freedesktop.DBus.Error.AccessDenied",
    ])
}

/// A desktop entry installed for a test.
struct FixtureApp: Sendable {
    var id: String
    var types: [String]

    /// The editor and viewer (one team), a player of another team, and the sandboxed app.
    static let standard = [
        FixtureApp(id: UA.editor, types: [UA.editType, UA.editorView]),
        FixtureApp(id: UA.viewer, types: [UA.viewType]),
        FixtureApp(id: UA.player, types: [UA.playType]),
        FixtureApp(id: UA.sandboxed, types: [UA.sandboxedType]),
    ]
}

/// The BUILT `useractivityd` on a private bus, started by D-Bus activation
/// (as a desktop session starts it), or through a wrapper `exec` line.
final class ActivatedDaemon: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus
    let daemonPath: String

    /// - Parameters:
    ///   - exec: the service's `Exec=` line; default the daemon itself.
    ///   - prepare: runs after the session layout exists and before the bus starts (mounts, files).
    init(apps: [FixtureApp] = FixtureApp.standard, exec: ((String) -> String)? = nil,
         prepare: (SessionEnvironment) throws -> Void = { _ in }) throws {
        session = try SessionEnvironment(prefix: "uah-")
        for app in apps { try session.writeDesktopEntry(appID: app.id, types: app.types) }
        try prepare(session)
        bus = try PrivateBus(environment: session)
        daemonPath = try BuiltProducts.useractivityd()
        // A sanitized daemon (scripts/sanitizers.sh) gets the sanitizer options
        // through the session environment (SessionEnvironment.forwardedDiagnosticsVariables).
        try bus.installService(name: UA.busName, exec: exec?(daemonPath) ?? shellQuote(daemonPath))
    }

    deinit { bus.stop() }

    /// `$XDG_STATE_HOME/useractivity`, where the store lives.
    var stateDirectory: String { session.stateHome + "/useractivity" }

    func connect() throws -> BusClient { try BusClient(address: bus.address) }

    /// Starts the daemon if needed (a Ping with auto-start) and returns its PID.
    @discardableResult
    func activate(timeout: Double = 20) throws -> pid_t {
        let client = try connect()
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if case .success = client.attempt(UA.managerPath, "org.freedesktop.DBus.Peer", "Ping", timeoutMilliseconds: 20_000),
               let pid = try daemonPID(using: client) {
                return pid
            }
            if Date() > deadline { throw HardeningFailure("the daemon did not start within \(timeout) s\n\(logTail())") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// The PID owning the bus name, nil when nobody owns it.
    func daemonPID(using client: BusClient? = nil) throws -> pid_t? {
        let client = try client ?? connect()
        guard case .success(let reply) = client.busDaemon("GetConnectionUnixProcessID", [.string(UA.busName)]),
              let pid = reply.first?.uint32Value else { return nil }
        return pid_t(pid)
    }

    /// The bus's log (dbus-daemon and the activated daemon), last lines.
    func logTail(_ lines: Int = 40) -> String {
        let all = bus.log.split(separator: "\n", omittingEmptySubsequences: false)
        return "--- bus log (last \(lines) lines) ---\n" + all.suffix(lines).joined(separator: "\n")
    }
}

/// The daemon's calls these suites make often, on the shared test client.
extension BusClient {
    @discardableResult
    func manager(_ member: String, _ arguments: [TypedValue] = []) throws -> [TypedValue] {
        try call(UA.managerPath, UA.manager, member, arguments)
    }

    /// CreateActivity or the manager's BecomeCurrent; the new path.
    func create(_ type: String = UA.editType, app: String? = UA.editor, _ properties: [(String, TypedValue)] = [],
                becomeCurrent: Bool = false) throws -> String {
        let entries = (app.map { [("app-id", TypedValue.string($0))] } ?? []) + properties
        let reply = try manager(becomeCurrent ? "BecomeCurrent" : "CreateActivity",
                                [.string(type), .stringVariantDictionary(entries)])
        guard let path = reply.first?.objectPathValue else { throw HardeningFailure("CreateActivity replied \(reply)") }
        return path
    }

    func donate(_ type: String = UA.editType, app: String? = UA.editor, _ properties: [(String, TypedValue)]) throws -> String {
        let entries = (app.map { [("app-id", TypedValue.string($0))] } ?? []) + properties
        return try manager("Donate", [.string(type), .stringVariantDictionary(entries)]).first?.stringValue ?? ""
    }

    /// `Search(query, {limit})`: the results' titles and saved ids.
    func search(_ query: String, limit: UInt32 = 200) throws -> [(savedID: String, title: String)] {
        let reply = try manager("Search", [.string(query), .stringVariantDictionary([("limit", .uint32(limit))])])
        guard case .array(_, let results) = reply.first ?? .string("") else { return [] }
        return results.compactMap { result in
            guard let entries = result.stringVariantEntries else { return nil }
            let get = { (key: String) in entries.first { $0.0 == key }?.1.stringValue ?? "" }
            return (get("saved-id"), get("title"))
        }
    }

    /// A call to the bus daemon itself.
    func busDaemon(_ member: String, _ arguments: [TypedValue] = []) -> Result<[TypedValue], DBusFailure> {
        attempt("/org/freedesktop/DBus", "org.freedesktop.DBus", member, arguments, timeoutMilliseconds: 5000,
                destination: "org.freedesktop.DBus")
    }

    /// `Peer.Ping` to the daemon: the round trip in seconds, nil when it failed.
    /// The default timeout is a failure guard for "the daemon still answers"
    /// (a sanitized daemon on a loaded machine can take seconds), not a measure.
    func ping(timeoutMilliseconds: Int32 = 30_000) -> Double? {
        let start = Date()
        guard case .success = attempt(UA.managerPath, "org.freedesktop.DBus.Peer", "Ping",
                                      timeoutMilliseconds: timeoutMilliseconds) else { return nil }
        return Date().timeIntervalSince(start)
    }
}

extension Result where Failure == DBusFailure {
    /// The error name of a failed call, nil on success.
    var errorName: String? {
        if case .failure(let failure) = self { return failure.name }
        return nil
    }
}

struct HardeningFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Process inspection

enum ProcessProbe {
    /// `VmRSS` of `/proc/<pid>/status` in KiB.
    static func residentKiB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }

    /// The number of open file descriptors of `pid`.
    static func openDescriptors(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].split(separator: " ").first
        return state != "Z" && state != "X"
    }
}

/// Seconds since `start`.
func seconds(since start: Date) -> Double { Date().timeIntervalSince(start) }
