// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// CLI tests run the BUILT `useractivityctl` against the BUILT `useractivityd`,
// which a private dbus-daemon starts by D-Bus activation (as on a desktop).

extension UA {
    /// `sysexits.h` EX_UNAVAILABLE, the CLI's status for "no bus / no daemon".
    static let unavailable: Int32 = 69
}

/// A private bus whose `org.example.UserActivity` is the built daemon, the
/// fixture apps' desktop entries, and the built CLI.
final class CLIHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus
    let ctlPath: String

    /// - Parameter installDaemon: false leaves the bus without the daemon's
    ///   activation file (the "daemon not available" case).
    init(installDaemon: Bool = true, desktopEntries: [(id: String, types: [String], extra: [String])] = CLIHarness.standardApps) throws {
        session = try SessionEnvironment()
        for entry in desktopEntries {
            try session.writeDesktopEntry(appID: entry.id, types: entry.types, extraLines: entry.extra)
        }
        bus = try PrivateBus(environment: session)
        ctlPath = try BuiltProducts.executable(named: "useractivityctl")
        if installDaemon {
            try bus.installService(name: UA.busName, exec: "\(shellQuote(try BuiltProducts.useractivityd())) --verbose")
        }
    }

    static let standardApps: [(id: String, types: [String], extra: [String])] = [
        (UA.editor, [UA.editType], ["Icon=accessories-text-editor"]),
        (UA.viewer, [UA.viewType], []),
    ]

    deinit { bus.stop() }

    /// `useractivityctl <arguments>` against this bus.
    func ctl(_ arguments: [String], environment: [String: String]? = nil, timeout: Double = 30) throws -> CommandResult {
        try runCommand(ctlPath, arguments, environment: environment ?? bus.environment, timeout: timeout)
    }

    /// Runs `useractivityctl` and requires exit status 0.
    @discardableResult
    func ctlOK(_ arguments: [String]) throws -> CommandResult {
        let result = try ctl(arguments)
        guard result.succeeded else { throw CommandFailure(result: result) }
        return result
    }

    /// `useractivityctl <arguments> --json`, parsed.
    func ctlJSON(_ arguments: [String]) throws -> Any {
        let result = try ctlOK(arguments + ["--json"])
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8), options: [.fragmentsAllowed])
    }

    /// Starts a long-running `useractivityctl` (monitor, become-current).
    func spawnCtl(_ arguments: [String]) throws -> ChildProcess {
        try bus.spawn(ctlPath, arguments)
    }

    /// Donates through the CLI; the saved id it prints.
    func donate(title: String, extra: [String] = []) throws -> String {
        let result = try ctlOK(["donate", UA.editType, "--app-id", UA.editor, "--title", title, "--search"] + extra)
        return result.trimmedStdout
    }

    func logTail(_ lines: Int = 40) -> String {
        "--- bus log ---\n" + bus.log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}

