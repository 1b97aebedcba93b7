// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import TypedValues

/// The privacy controls' manager properties, in display order.
enum PrivacyProperty {
    static let all = ["Paused", "BlockedApplications", "BlockedActivityTypes", "RetentionDays", "MaxSavedPerApplication", "Bridges",
                      "RecentDocumentsBecomeCurrent"]
}

struct Privacy: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the privacy settings.",
        discussion: "The settings are kept in $XDG_CONFIG_HOME/useractivity/useractivity.conf; only unconfined callers may read or change them.")

    @OptionGroup var output: OutputOptions

    func run() throws {
        let client = try ServiceClient()
        var values: [(String, TypedValue)] = []
        for name in PrivacyProperty.all { values.append((name, try client.managerProperty(name))) }
        if output.json {
            var object: [String: Any] = [:]
            for (name, value) in values { object[name] = value.jsonObject }
            try Output.json(object)
            return
        }
        func list(_ value: TypedValue) -> String {
            let items = value.stringArrayValue ?? []
            return items.isEmpty ? "none" : items.joined(separator: ", ")
        }
        let byName = Dictionary(values, uniquingKeysWith: { _, last in last })
        let retention = byName["RetentionDays"]?.uint32Value ?? 0
        let maximum = byName["MaxSavedPerApplication"]?.uint32Value ?? 0
        Output.fields([
            ("Saving", byName["Paused"]?.boolValue == true ? "paused" : "on"),
            ("Blocked apps", list(byName["BlockedApplications"] ?? .stringArray([]))),
            ("Blocked types", list(byName["BlockedActivityTypes"] ?? .stringArray([]))),
            ("Retention", retention == 0 ? "keep forever" : "\(retention) days since last use"),
            ("Max saved per app", maximum == 0 ? "no limit" : "\(maximum)"),
            ("Bridges", list(byName["Bridges"] ?? .stringArray([]))),
            ("Documents just opened", byName["RecentDocumentsBecomeCurrent"]?.boolValue == false ? "not current" : "become current"),
        ])
    }
}

struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop saving activities (off the record) until resume.",
        discussion: "Becoming current and continuation still work; donations return an empty saved id. Survives restarts.")

    func run() throws { try ServiceClient().setManagerProperty("Paused", .boolean(true)) }
}

struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Save activities again after pause.")

    func run() throws { try ServiceClient().setManagerProperty("Paused", .boolean(false)) }
}

/// Adds to or removes from a string-list property (read, change, write back).
private func edit(_ property: String, _ items: [String], add: Bool) throws {
    let client = try ServiceClient()
    var current = try client.managerProperty(property).stringArrayValue ?? []
    for item in items {
        if add { if !current.contains(item) { current.append(item) } } else { current.removeAll { $0 == item } }
    }
    try client.setManagerProperty(property, .stringArray(current))
}

struct BlockApp: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Never save or suggest these apps' activities; deletes what they saved.")

    @Argument(help: ArgumentHelp("App IDs (desktop-file IDs without .desktop).", valueName: "app-id"))
    var apps: [String]

    func run() throws { try edit("BlockedApplications", apps, add: true) }
}

struct UnblockApp: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Allow saving these apps' activities again.")

    @Argument(help: ArgumentHelp("App IDs.", valueName: "app-id"))
    var apps: [String]

    func run() throws { try edit("BlockedApplications", apps, add: false) }
}

struct BlockType: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Never save or suggest activities of these types; deletes what was saved.")

    @Argument(help: ArgumentHelp("Activity types.", valueName: "activity-type"))
    var types: [String]

    func run() throws { try edit("BlockedActivityTypes", types, add: true) }
}

struct UnblockType: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Allow saving activities of these types again.")

    @Argument(help: ArgumentHelp("Activity types.", valueName: "activity-type"))
    var types: [String]

    func run() throws { try edit("BlockedActivityTypes", types, add: false) }
}

struct Retention: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Purge saved activities not used for this many days (0 keeps them; default 90).")

    @Argument(help: ArgumentHelp("Days since last use.", valueName: "days"))
    var days: UInt32

    func run() throws { try ServiceClient().setManagerProperty("RetentionDays", .uint32(days)) }
}

struct MaxSaved: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep at most this many saved activities per app, least recently used go first (0: no limit; default 1000).")

    @Argument(help: ArgumentHelp("Entries per app.", valueName: "n"))
    var count: UInt32

    func run() throws { try ServiceClient().setManagerProperty("MaxSavedPerApplication", .uint32(count)) }
}

struct RecentDocumentsCurrent: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recent-documents-current",
        abstract: "Whether a document an app has just opened becomes the current activity (on or off; default on).",
        discussion: "The document is taken from the recent-files list (recently-used.xbel) and offered to your other desktops like any current activity; it needs the recent-files bridge.")

    @Argument(help: ArgumentHelp("on or off.", valueName: "on|off"))
    var state: String

    func run() throws {
        guard state == "on" || state == "off" else {
            throw CLIError("recent-documents-current takes on or off, not '\(state)'", exitCode: ExitCode.validationFailure.rawValue)
        }
        try ServiceClient().setManagerProperty("RecentDocumentsBecomeCurrent", .boolean(state == "on"))
    }
}

struct ForgetApp: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete every saved activity of one app; prints how many.")

    @Argument(help: ArgumentHelp("The app ID.", valueName: "app-id"))
    var app: String

    @OptionGroup var output: OutputOptions

    func run() throws {
        let deleted = try ServiceClient().call("ForgetApplication", [.string(app)]).first?.uint32Value ?? 0
        try reportDeleted(deleted, json: output.json)
    }
}

struct ForgetRange: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete every saved activity last used in [from, to); prints how many.",
        discussion: "Times are ISO 8601 (2026-11-01, 2026-11-01T09:30, 2026-11-01T09:30:00Z; local time without a zone), Unix microseconds, or now. Example: useractivityctl forget-range 2026-11-01 now")

    @Argument(help: ArgumentHelp("Start of the range (inclusive).", valueName: "from"))
    var from: String

    @Argument(help: ArgumentHelp("End of the range (exclusive).", valueName: "to"))
    var to: String

    @OptionGroup var output: OutputOptions

    func run() throws {
        let fromMicros = try parseTime(from, option: "from")
        let toMicros = try parseTime(to, option: "to")
        let deleted = try ServiceClient().call("ForgetRange", [.int64(fromMicros), .int64(toMicros)]).first?.uint32Value ?? 0
        try reportDeleted(deleted, json: output.json)
    }
}

struct ForgetAll: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete every saved activity of every app (needs --yes); prints how many.")

    @Flag(help: "Really delete everything.")
    var yes = false

    @OptionGroup var output: OutputOptions

    func run() throws {
        guard yes else {
            throw CLIError("forget-all deletes every saved activity of every app and cannot be undone; run `useractivityctl forget-all --yes` to do it",
                           exitCode: ExitCode.validationFailure.rawValue)
        }
        let deleted = try ServiceClient().call("ForgetAll").first?.uint32Value ?? 0
        try reportDeleted(deleted, json: output.json)
    }
}

private func reportDeleted(_ deleted: UInt32, json: Bool) throws {
    if json {
        try Output.json(["deleted": Int(deleted)])
    } else {
        Output.line("Deleted \(deleted) saved \(deleted == 1 ? "activity" : "activities").")
    }
}
