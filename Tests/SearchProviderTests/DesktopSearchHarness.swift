// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Desktop-search tests call the daemon's org.gnome.Shell.SearchProvider2 and
// org.kde.krunner1 objects with `gdbus call`, as the shells do, on a private
// bus where the BUILT daemon is started by D-Bus activation.

extension UA {
    static let searchProvider = "org.gnome.Shell.SearchProvider2"
    static let krunner = "org.kde.krunner1"
}

final class DesktopSearchHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus

    /// - Parameter extraEntries: more desktop entries, written before the daemon starts.
    init(extraEntries: [(id: String, lines: [String])] = []) throws {
        session = try SessionEnvironment()
        // The editor has an icon; the viewer has none (the generic icon is used).
        try session.writeDesktopEntry(appID: UA.editor, types: [UA.editType], name: "Editor", extraLines: ["Icon=accessories-text-editor"])
        try session.writeDesktopEntry(appID: UA.viewer, types: [UA.viewType], name: "Viewer")
        for entry in extraEntries {
            try writeFileAtomically(session.applicationsDirectory() + "/\(entry.id).desktop",
                                    contents: entry.lines.joined(separator: "\n") + "\n")
        }
        bus = try PrivateBus(environment: session)
        try bus.installService(name: UA.busName, exec: "\(shellQuote(try BuiltProducts.useractivityd())) --verbose")
    }

    deinit { bus.stop() }

    func logTail(_ lines: Int = 40) -> String {
        "--- bus log ---\n" + bus.log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// `gdbus call --session --dest org.example.UserActivity --object-path <path> --method <method> <arguments…>`.
    func gdbus(_ path: String, _ method: String, _ arguments: [String] = []) throws -> CommandResult {
        try bus.run("gdbus", ["call", "--session", "--dest", UA.busName, "--object-path", path, "--method", method] + arguments)
    }

    /// A gdbus call that must succeed.
    func gdbusOK(_ path: String, _ method: String, _ arguments: [String] = []) throws -> CommandResult {
        let result = try gdbus(path, method, arguments)
        guard result.succeeded else { throw CommandFailure(result: result) }
        return result
    }

    /// Donates a search-eligible activity with gdbus; its saved id.
    func donate(_ title: String, app: String = UA.editor, type: String = UA.editType, description: String = "",
                url: String? = nil) throws -> String {
        var properties = "{'app-id': <'\(app)'>, 'title': <'\(title)'>, 'eligible-for-search': <true>, 'content-description': <'\(description)'>"
        if let url { properties += ", 'webpage-url': <'\(url)'>" }
        properties += "}"
        let result = try gdbusOK(UA.managerPath, "org.example.UserActivity.Donate", [type, properties])
        return try #require(result.stdout.firstMatch(of: #/'([0-9a-f]{32})'/#).map { String($0.1) }, "\(result)")
    }

    // MARK: The shells' calls

    /// GetInitialResultSet(as terms) → as.
    func initialResultSet(_ terms: [String]) throws -> [String] {
        strings(try gdbusOK(UA.searchProviderPath, "\(UA.searchProvider).GetInitialResultSet", [gvariantStrings(terms)]).stdout)
    }

    /// GetSubsearchResultSet(as previous, as terms) → as.
    func subsearchResultSet(_ previous: [String], _ terms: [String]) throws -> [String] {
        strings(try gdbusOK(UA.searchProviderPath, "\(UA.searchProvider).GetSubsearchResultSet",
                            [gvariantStrings(previous), gvariantStrings(terms)]).stdout)
    }

    /// KRunner's Match(s) → a(sssida{sv}), parsed from gdbus's text.
    func match(_ query: String) throws -> [KRunnerMatch] {
        let output = try gdbusOK(UA.krunnerPath, "\(UA.krunner).Match", [query]).stdout
        return output.matches(of: #/\('([^']*)', '([^']*)', '([^']*)', (-?\d+), ([-+0-9.e]+), (\{[^}]*\}|@a\{sv\} \{\})\)/#).map {
            KRunnerMatch(id: String($0.1), text: String($0.2), icon: String($0.3), type: Int($0.4) ?? -1,
                         relevance: Double($0.5) ?? -1, properties: String($0.6))
        }
    }

    /// `['a', 'b']` (or `@as []`) for gdbus.
    func gvariantStrings(_ strings: [String]) -> String {
        strings.isEmpty ? "@as []" : "[" + strings.map { "'\($0)'" }.joined(separator: ", ") + "]"
    }

    /// Every single-quoted string of gdbus output (saved IDs are plain hex).
    func strings(_ output: String) -> [String] {
        output.matches(of: #/'([^']*)'/#).map { String($0.1) }
    }
}

struct KRunnerMatch {
    var id: String
    var text: String
    var icon: String
    var type: Int
    var relevance: Double
    var properties: String
}

extension CommandResult {
    /// The D-Bus error name in gdbus's `GDBus.Error:<name>: <message>`.
    var gdbusErrorName: String? {
        stderr.firstMatch(of: #/GDBus\.Error:([A-Za-z0-9_.\-]+):/#).map { String($0.1) }
    }
}

