// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import GLibSupport
import UserActivityCore

/// GLib's key-file parser behind the core's protocol. A wrapper rather than
/// a conformance of `GLibKeyFile` itself: the daemon's service module
/// declares that conformance, and the two must never meet in one binary.
struct KeyFileAdapter: KeyFileReading {
    let file: GLibKeyFile
    func string(group: String, key: String) -> String? { file.string(group: group, key: key) }
    func stringList(group: String, key: String) -> [String]? { file.stringList(group: group, key: key) }
    func boolean(group: String, key: String) -> Bool? { file.boolean(group: group, key: key) }
    func hasGroup(_ group: String) -> Bool { file.hasGroup(group) }
}

struct Types: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show which installed app declares which activity types, with team-rule warnings.",
        discussion: """
        Reads the desktop entries itself, as the daemon does ($XDG_DATA_HOME/applications, then each \
        $XDG_DATA_DIRS/applications): X-UserActivityTypes and X-UserActivityTeam. A declaration that breaks the \
        team rule (a type must begin with the app's team, by default its app ID without the last component) is \
        ignored by the daemon and listed under Warnings. Apps that declare nothing are left out unless --all.
        """)

    @Option(name: .customLong("type"), help: ArgumentHelp("Only the apps that declare this activity type.", valueName: "activity-type"))
    var type: String?

    @Flag(help: "Also list installed apps that declare no activity types.")
    var all = false

    @OptionGroup var output: OutputOptions

    func run() throws {
        let directories = AppCatalog.applicationDirectories(environment: ProcessInfo.processInfo.environment)
        let catalog = AppCatalog.load(applicationDirectories: directories,
                                      loadKeyFile: { path in GLibKeyFile.load(path: path).map(KeyFileAdapter.init) })
        var apps = type.map { catalog.apps(declaring: $0) } ?? catalog.apps
        if !all && type == nil { apps = apps.filter { !$0.declaredTypes.isEmpty } }
        let warnings = catalog.warnings.filter { warning in type == nil || warning.contains(type!) }

        if output.json {
            try Output.json([
                "apps": apps.map { app -> [String: Any] in
                    ["app-id": app.id, "name": app.name ?? NSNull(), "team": app.team, "types": app.declaredTypes,
                     "desktop-file": app.desktopFilePath, "dbus-activatable": app.dbusActivatable]
                },
                "warnings": warnings,
            ] as [String: Any])
            return
        }
        if apps.isEmpty {
            Output.line(type.map { "No installed app declares \($0)." } ?? "No installed app declares activity types.")
        } else {
            var rows: [[String]] = []
            for app in apps {
                let types = app.declaredTypes.isEmpty ? ["-"] : app.declaredTypes
                for (index, declared) in types.enumerated() {
                    rows.append(index == 0 ? [app.id, app.team, declared] : ["", "", declared])
                }
            }
            Output.table(["APP", "TEAM", "TYPES"], rows)
        }
        if !warnings.isEmpty {
            Output.line()
            Output.line("Warnings (these declarations are ignored):")
            for warning in warnings { Output.line("  " + warning) }
        }
    }
}
