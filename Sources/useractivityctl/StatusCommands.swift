// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import TypedValues
import UserActivityInterfaces

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show whether the daemon runs or can be started, its version, the current activity and the live-activity count.",
        discussion: "Does not start the daemon. Exits with 69 when it is neither running nor activatable.")

    @OptionGroup var output: OutputOptions

    func run() throws {
        let client = try ServiceClient()
        let running = try client.busDaemon("NameHasOwner", [.string(Interfaces.busName)]).first?.boolValue ?? false
        let activatable = (try client.busDaemon("ListActivatableNames").first?.stringArrayValue ?? []).contains(Interfaces.busName)
        var pid: UInt32?
        var version: String?
        var current: String?
        var currentSummary: String?
        var live = 0
        var paused: Bool?
        if running {
            pid = (try? client.busDaemon("GetConnectionUnixProcessID", [.string(Interfaces.busName)]))?.first?.uint32Value
            version = try client.managerProperty("Version", autoStart: false).stringValue
            let path = try client.managerProperty("CurrentActivity", autoStart: false).objectPathValue ?? "/"
            if path != "/" {
                current = path
                if let properties = try? client.activityProperties(path) {
                    let byName = Dictionary(properties, uniquingKeysWith: { _, last in last })
                    currentSummary = "\(byName["AppId"]?.plainText ?? "?"): \(byName["Title"]?.plainText ?? "")"
                }
            }
            let objects = try client.call(interface: "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", autoStart: false)
            if case .dictionary(_, _, let entries)? = objects.first { live = entries.count }
            // Only unconfined callers may read it; a sandboxed useractivityctl just skips the line.
            paused = (try? client.managerProperty("Paused", autoStart: false))?.boolValue
        }
        let store = Self.expectedStorePath()

        if output.json {
            var object: [String: Any] = [
                "running": running, "activatable": activatable, "live-activities": live,
                "version": version ?? NSNull(), "current-activity": current ?? NSNull(),
                "paused": paused ?? NSNull(), "store": store,
            ]
            object["pid"] = pid.map { Int($0) } ?? NSNull()
            try Output.json(object)
        } else {
            var daemon: String
            if running {
                daemon = "running" + (pid.map { " (pid \($0))" } ?? "")
            } else if activatable {
                daemon = "not running; D-Bus starts it on first use"
            } else {
                daemon = "not running and not activatable"
            }
            var fields: [(String, String)] = [("Daemon", daemon)]
            if let version { fields.append(("Version", version)) }
            fields.append(("Current", current.map { "\($0)" + (currentSummary.map { " (\($0))" } ?? "") } ?? "none"))
            fields.append(("Live activities", "\(live)"))
            if let paused { fields.append(("Saving", paused ? "paused (useractivityctl resume)" : "on")) }
            fields.append(("Store", store + (FileManager.default.fileExists(atPath: store) ? "" : " (not created yet)")))
            Output.fields(fields)
        }
        if !running && !activatable {
            throw CLIError(
                "\(Interfaces.busName) is not running and cannot be started",
                hint: "start useractivityd by hand, or install dbus/\(Interfaces.busName).service into ~/.local/share/dbus-1/services/.",
                exitCode: CLIError.unavailable)
        }
    }

    /// Where the daemon keeps saved activities when it runs with this
    /// shell's environment: `$XDG_STATE_HOME/useractivity/activities.sqlite3`.
    /// The daemon does not publish its path, and one started by another
    /// environment (a systemd unit) may use another.
    static func expectedStorePath() -> String {
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? NSHomeDirectory()
        let state = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/state"
        return state + "/useractivity/activities.sqlite3"
    }
}

// MARK: - Live activities

/// The properties of a live activity as JSON (D-Bus property names) or as lines.
enum ActivityView {
    static func json(path: String, properties: [(String, TypedValue)]) -> [String: Any] {
        var object: [String: Any] = ["path": path]
        var values: [String: Any] = [:]
        for (name, value) in properties { values[name] = value.jsonObject }
        object["properties"] = values
        return object
    }

    static func print(path: String, properties: [(String, TypedValue)]) {
        Output.fields([("Path", path)] + properties.map { ($0.0, $0.1.plainText) })
    }
}

struct Current: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the session's current activity.",
        discussion: "Prints \"No current activity.\" (or null with --json) when there is none.")

    @OptionGroup var output: OutputOptions

    func run() throws {
        let client = try ServiceClient()
        let path = try client.managerProperty("CurrentActivity").objectPathValue ?? "/"
        guard path != "/" else {
            if output.json { try Output.json(NSNull()) } else { Output.line("No current activity.") }
            return
        }
        let properties = try client.activityProperties(path)
        if output.json {
            try Output.json(ActivityView.json(path: path, properties: properties))
        } else {
            ActivityView.print(path: path, properties: properties)
        }
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the live activities (the daemon's object manager).")

    @OptionGroup var output: OutputOptions

    func run() throws {
        let client = try ServiceClient()
        let reply = try client.call(interface: "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        var activities: [(path: String, properties: [(String, TypedValue)])] = []
        if case .dictionary(_, _, let entries)? = reply.first {
            for entry in entries {
                guard let path = entry.key.objectPathValue, case .dictionary(_, _, let interfaces) = entry.value,
                      let properties = interfaces.first(where: { $0.key.stringValue == Interfaces.activityName })?.value
                else { continue }
                activities.append((path, properties.stringVariantEntries ?? []))
            }
        }
        if output.json {
            try Output.json(activities.map { ActivityView.json(path: $0.path, properties: $0.properties) })
            return
        }
        guard !activities.isEmpty else {
            Output.line("No live activities.")
            return
        }
        let rows = activities.map { activity -> [String] in
            let byName = Dictionary(activity.properties, uniquingKeysWith: { _, last in last })
            return [
                String(activity.path.dropFirst(Interfaces.activityPathPrefix.count)),
                byName["Current"]?.boolValue == true ? "*" : "",
                byName["AppId"]?.plainText ?? "",
                byName["ActivityType"]?.plainText ?? "",
                byName["Title"]?.plainText ?? "",
            ]
        }
        Output.table(["ID", "CURRENT", "APP", "TYPE", "TITLE"], rows)
    }
}

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show every property of a live activity.")

    @Argument(help: ArgumentHelp("The activity's object path, or its id (the last part of the path).", valueName: "path|id"))
    var activity: String

    @OptionGroup var output: OutputOptions

    func run() throws {
        let path = try activityPath(activity)
        let client = try ServiceClient()
        let properties = try client.activityProperties(path)
        if output.json {
            try Output.json(ActivityView.json(path: path, properties: properties))
        } else {
            ActivityView.print(path: path, properties: properties)
        }
    }
}
