// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

// End-to-end fixtures for continuation: the BUILT `useractivityd`, started by
// D-Bus activation on a private bus per test, and fixture apps written in
// Python + gi (FixtureScript.swift) that are real bus clients: handler apps,
// a D-Bus-activatable GApplication, a plain app the daemon launches from its
// Exec line, and a fake browser set as the https handler in mimeapps.list.

/// Fixture apps of these tests (the contract's names are TestSupport's `UA`).
extension UA {
    static let lite = "com.example.Editor.Lite"
    static let activatable = "com.example.Activatable"
    static let plain = "com.example.Plain"
    static let browser = "com.example.Browser"
}

/// One JSON line of a fixture's log.
typealias FixtureEvent = [String: Any]

extension Dictionary where Key == String, Value == Any {
    var event: String { self["event"] as? String ?? "" }
    /// A nested dictionary (`activity`, `platform`).
    func dictionary(_ key: String) -> [String: Any] { self[key] as? [String: Any] ?? [:] }
    func string(_ key: String) -> String? { self[key] as? String }
}

/// A fixture app process started by a test.
final class FixtureProcess: @unchecked Sendable {
    let app: String
    let log: String
    let process: ChildProcess
    /// Its bus connection's unique name (from its READY line).
    let uniqueName: String

    init(app: String, log: String, process: ChildProcess, uniqueName: String) {
        self.app = app
        self.log = log
        self.process = process
        self.uniqueName = uniqueName
    }

    deinit { process.terminate(grace: 0.5) }
}

/// A desktop entry for a test.
struct AppEntry {
    enum Kind {
        /// Exec runs the handler fixture (so a launch by the daemon starts it).
        case handler(extraArguments: [String] = [])
        /// DBusActivatable=true, with a D-Bus .service that starts the GApplication fixture.
        case activatable
        /// The fake browser, default for x-scheme-handler/https.
        case browser
        /// An Exec line that never registers a handler.
        case exec(String)
    }

    var id: String
    var types: [String]
    var team: String?
    var kind: Kind

    init(_ id: String, types: [String] = [UA.editType], team: String? = nil, _ kind: Kind) {
        self.id = id
        self.types = types
        self.team = team
        self.kind = kind
    }
}

/// One private bus with the daemon as a D-Bus-activatable service and the
/// fixture apps' desktop entries.
final class ContinuationHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus
    let script: String
    let logDirectory: String
    private var processes: [FixtureProcess] = []

    /// - Parameter environment: more variables for the bus and the daemon it starts.
    init(apps: [AppEntry], environment: [String: String] = [:]) throws {
        session = try SessionEnvironment(extraVariables: environment)
        logDirectory = session.root + "/logs"
        try FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
        script = session.root + "/fixture.py"
        try writeFileAtomically(script, contents: FixtureScript.python, mode: 0o755)
        bus = try PrivateBus(environment: session)
        try bus.installService(name: UA.busName, exec: "\(shellQuote(try BuiltProducts.useractivityd())) --verbose")
        for app in apps { try install(app) }
    }

    deinit {
        for process in processes { process.process.terminate(grace: 0.5) }
        bus.stop()
    }

    func logPath(_ app: String) -> String { "\(logDirectory)/\(app).jsonl" }

    /// The handler fixture's command line for `app` (as a desktop entry's Exec, or to spawn).
    func handlerCommand(_ app: String, _ extra: [String] = []) -> [String] {
        ["/usr/bin/python3", script, "--mode", "handler", "--app-id", app, "--log", logPath(app)] + extra
    }

    private func install(_ app: AppEntry) throws {
        switch app.kind {
        case .handler(let extra):
            try session.writeDesktopEntry(appID: app.id, types: app.types, team: app.team,
                                          exec: handlerCommand(app.id, extra).map(desktopQuote).joined(separator: " "))
        case .activatable:
            try session.writeDesktopEntry(appID: app.id, types: app.types, team: app.team, exec: "/bin/false",
                                          extraLines: ["DBusActivatable=true"])
            let command = ["/usr/bin/python3", script, "--mode", "activatable", "--app-id", app.id, "--log", logPath(app.id),
                           "--gapplication-service"]
            try bus.installService(name: app.id, exec: command.map(shellQuote).joined(separator: " "))
        case .browser:
            let command = ["/usr/bin/python3", script, "--mode", "browser", "--log", logPath(app.id)]
            try session.writeDesktopEntry(appID: app.id, types: app.types, team: app.team,
                                          exec: command.map(desktopQuote).joined(separator: " ") + " %u",
                                          extraLines: ["MimeType=x-scheme-handler/https;x-scheme-handler/http;"])
            try writeFileAtomically(session.configHome + "/mimeapps.list", contents: """
                [Default Applications]
                x-scheme-handler/https=\(app.id).desktop
                x-scheme-handler/http=\(app.id).desktop

                """)
        case .exec(let exec):
            try session.writeDesktopEntry(appID: app.id, types: app.types, team: app.team, exec: exec)
        }
    }

    /// Starts the handler fixture for `app` and waits until it has registered.
    @discardableResult
    func startHandler(_ app: String, answer: String = "true", _ extra: [String] = []) throws -> FixtureProcess {
        let command = handlerCommand(app, ["--answer", answer] + extra)
        let child = try bus.spawn(command[0], Array(command.dropFirst()), stderr: .capture)
        let line = try? child.readLine(timeout: 20)
        guard let line, line.hasPrefix("READY ") else {
            child.terminate(grace: 0.5)
            throw FixtureFailure("the \(app) fixture did not start: \(line ?? "no output")\nstderr: \(child.stderrText)\n\(logTail())")
        }
        let fixture = FixtureProcess(app: app, log: logPath(app), process: child,
                                     uniqueName: String(line.dropFirst("READY ".count)))
        processes.append(fixture)
        return fixture
    }

    // MARK: Logs

    /// Every event `app`'s fixture logged so far.
    func events(_ app: String) -> [FixtureEvent] {
        guard let text = try? String(contentsOfFile: logPath(app), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? FixtureEvent
        }
    }

    /// The events of one kind.
    func events(_ app: String, _ kind: String) -> [FixtureEvent] { events(app).filter { $0.event == kind } }

    /// Waits for the `count`-th event of a kind; nil on timeout.
    func waitForEvent(_ app: String, _ kind: String, count: Int = 1, timeout: Double = 10) -> FixtureEvent? {
        var found: FixtureEvent?
        _ = waitUntil(timeout: timeout, interval: 0.02) {
            let matching = events(app, kind)
            if matching.count >= count { found = matching[count - 1] }
            return found != nil
        }
        return found
    }

    /// The bus log's end (dbus-daemon, the daemon's --verbose output, launched apps' stderr).
    func logTail(_ lines: Int = 40) -> String {
        let all = bus.log.split(separator: "\n", omittingEmptySubsequences: false)
        return "--- bus log (last \(lines) lines) ---\n" + all.suffix(lines).joined(separator: "\n")
    }

    // MARK: Clients

    /// A new in-process connection to the bus.
    func connect() throws -> Client { try Client(address: bus.address) }
}

/// The suite's client: TestSupport's, with the conveniences below.
typealias Client = BusClient

extension BusClient {
    /// `ContinueActivity(type, properties, options)` → the app ID.
    func continueActivity(_ type: String = UA.editType, _ properties: [(String, TypedValue)] = [],
                          options: [(String, TypedValue)] = []) throws -> String {
        try call(UA.managerPath, UA.managerInterface, "ContinueActivity",
                 [.string(type), .stringVariantDictionary(properties), .stringVariantDictionary(options)])
            .first?.stringValue ?? "<no string>"
    }

    /// `Activity.Continue(options)` → the app ID.
    func continueLive(_ path: String, options: [(String, TypedValue)] = []) throws -> String {
        try call(path, UA.activityInterface, "Continue", [.stringVariantDictionary(options)]).first?.stringValue ?? "<no string>"
    }

    func registerApplication(_ app: String) throws {
        try call(UA.managerPath, UA.managerInterface, "RegisterApplication", [.string(app)])
    }

    /// `org.freedesktop.DBus.Peer.Ping` to the daemon; seconds taken.
    func ping() throws -> Double {
        let message = Message.methodCall(destination: UA.busName, path: UA.managerPath,
                                         interface: "org.freedesktop.DBus.Peer", member: "Ping")
        let start = Date()
        _ = try connection.call(message, timeoutMilliseconds: 5000)
        return Date().timeIntervalSince(start)
    }
}

struct FixtureFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The D-Bus error (name, message) `body` failed with; nil when it succeeded.
func dbusError(_ body: () throws -> Any) -> (name: String, message: String)? {
    do {
        _ = try body()
        return nil
    } catch let failure as DBusFailure {
        return (failure.name, failure.message)
    } catch {
        return ("not a D-Bus error", "\(error)")
    }
}

/// Quotes one argument of a desktop entry's Exec line (the Desktop Entry
/// Specification's rules: double quotes, with `"`, `` ` ``, `$` and `\` escaped).
func desktopQuote(_ argument: String) -> String {
    if !argument.isEmpty, argument.allSatisfy({ $0.isLetter || $0.isNumber || "-_./=:,@+".contains($0) }) {
        return argument
    }
    var quoted = "\""
    for character in argument {
        if "\"`$\\".contains(character) { quoted.append("\\") }
        quoted.append(character)
    }
    return quoted + "\""
}

/// A JSON number as Int.
func jsonInt(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }
