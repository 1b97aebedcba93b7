// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The example apps under `examples/`, one per language.
struct ExampleApp: Sendable, CustomStringConvertible {
    /// The folder under `examples/`.
    let folder: String
    /// Its app ID (and desktop entry name).
    let appID: String
    /// The word in its titles ("Welcome note (C)").
    let label: String
    /// How it is built: a Makefile in its folder, or nothing (a script).
    let usesMake: Bool
    /// The command that runs it, given the build directory (nil for scripts).
    let command: @Sendable (_ buildDirectory: String?) -> [String]

    var description: String { label }
    var noteType: String { "\(appID).edit-note" }
    var handlerPath: String { "/" + appID.replacingOccurrences(of: ".", with: "/") + "/Handler" }
    var sourceDirectory: String { "\(repositoryRoot())/examples/\(folder)" }

    static let c = ExampleApp(folder: "c", appID: "com.example.NotesC", label: "C", usesMake: true) {
        ["\($0 ?? "")/notes-c"]
    }
    static let python = ExampleApp(folder: "python", appID: "com.example.NotesPython", label: "Python", usesMake: false) { _ in
        ["/usr/bin/python3", "\(repositoryRoot())/examples/python/notes_app.py"]
    }
    static let gjs = ExampleApp(folder: "gjs", appID: "com.example.NotesGjs", label: "GJS", usesMake: false) { _ in
        ["/usr/bin/gjs", "\(repositoryRoot())/examples/gjs/notes.js"]
    }
    static let qt = ExampleApp(folder: "qt", appID: "com.example.NotesQt", label: "Qt", usesMake: true) {
        ["\($0 ?? "")/notes-qt"]
    }
}

struct ExampleFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The environment for the example builds: the standard PATH, nothing from the
/// developer's session.
func buildEnvironment() -> [String: String] {
    var environment = ["PATH": standardSearchPath, "LANG": "C.UTF-8"]
    environment["HOME"] = ProcessInfo.processInfo.environment["HOME"] ?? "/tmp"
    return environment
}

/// Runs `make` for an example into `buildDirectory` (out of tree), with extra
/// variables such as `XML=…`.
func runMake(_ app: ExampleApp, buildDirectory: String, variables: [String] = [], timeout: Double = 900) throws -> CommandResult {
    let make = try resolveExecutable("make", environment: buildEnvironment())
    return try runCommand(make, ["-C", app.sourceDirectory, "-j2", "BUILD=\(buildDirectory)"] + variables,
                          environment: buildEnvironment(), timeout: timeout)
}

/// Builds each example at most once per test run, into one temporary
/// directory removed when the test process exits.
final class ExampleBuilds: @unchecked Sendable {
    static let shared = ExampleBuilds()

    /// One lock per example, held while it builds: a second test waits for the first build.
    private let buildLocks = ["c": NSLock(), "qt": NSLock()]
    private let resultsLock = NSLock()
    private var results: [String: Result<String, ExampleFailure>] = [:]
    let root: String

    private init() {
        var template = Array("/tmp/uaex-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        root = made.map { String(cString: $0) } ?? "/tmp/uaex-\(getpid())"
        ExampleBuilds.directoryToRemove = root
        atexit { if let dir = ExampleBuilds.directoryToRemove { try? FileManager.default.removeItem(atPath: dir) } }
    }

    nonisolated(unsafe) private static var directoryToRemove: String?

    /// The build directory of `app` (nil for a script), building it first if needed.
    /// A failed build throws with make's output, for every test that needs it.
    func build(_ app: ExampleApp) throws -> String? {
        guard app.usesMake, let buildLock = buildLocks[app.folder] else { return nil }
        buildLock.lock()
        defer { buildLock.unlock() }
        if let result = resultsLock.withLock({ results[app.folder] }) { return try result.get() }
        let directory = "\(root)/\(app.folder)"
        let result: Result<String, ExampleFailure>
        do {
            let made = try runMake(app, buildDirectory: directory)
            result = made.succeeded ? .success(directory)
                : .failure(ExampleFailure("building examples/\(app.folder) failed (exit \(made.exitCode)):\n\(made.stdout)\n\(made.stderr)"))
        } catch {
            result = .failure(ExampleFailure("building examples/\(app.folder) failed: \(error)"))
        }
        resultsLock.withLock { results[app.folder] = result }
        return try result.get()
    }
}
