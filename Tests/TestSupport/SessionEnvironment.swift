// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A hermetic desktop session layout in a temporary directory: `HOME` and the
/// XDG base directories, plus helpers to install desktop entries.
///
/// Layout under ``root`` (all created up front):
///
/// | variable | path |
/// |---|---|
/// | `HOME` | `home` |
/// | `XDG_DATA_HOME` | `home/.local/share` |
/// | `XDG_STATE_HOME` | `home/.local/state` |
/// | `XDG_CONFIG_HOME` | `home/.config` |
/// | `XDG_CACHE_HOME` | `home/.cache` |
/// | `XDG_RUNTIME_DIR` | `runtime` (mode 0700) |
/// | `XDG_DATA_DIRS` | `share` (then `/usr/local/share:/usr/share` if asked) |
///
/// Both `share/applications` and `home/.local/share/applications` exist.
/// The directory is removed when the object is released.
public final class SessionEnvironment: Sendable {
    /// The temporary directory holding everything.
    public let directory: TemporaryDirectory
    /// ``directory``'s path.
    public let root: String
    /// `HOME`.
    public let home: String
    /// `XDG_DATA_HOME`.
    public let dataHome: String
    /// The first entry of `XDG_DATA_DIRS` (a temporary `share` directory).
    public let sharedDataDir: String
    /// `XDG_DATA_DIRS`, in order.
    public let dataDirs: [String]
    /// The `applications` folders of `XDG_DATA_HOME` and `XDG_DATA_DIRS`, in
    /// the order the daemon searches them for desktop entries.
    public var applicationDirectories: [String] {
        [dataHome + "/applications"] + dataDirs.map { $0 + "/applications" }
    }
    /// `XDG_STATE_HOME`.
    public let stateHome: String
    /// `XDG_CONFIG_HOME`.
    public let configHome: String
    /// `XDG_CACHE_HOME`.
    public let cacheHome: String
    /// `XDG_RUNTIME_DIR` (mode 0700).
    public let runtimeDir: String
    /// `PATH` given to children.
    public let searchPath: String
    /// Extra variables merged into ``environment``.
    public let extraVariables: [String: String]

    /// Creates the layout.
    ///
    /// - Parameters:
    ///   - includeSystemDataDirs: Append `/usr/local/share:/usr/share` to
    ///     `XDG_DATA_DIRS` (off by default: tests see only their own entries).
    ///   - path: `PATH` for children; default ``standardSearchPath``.
    ///   - extraVariables: More variables for ``environment`` (they win).
    ///   - prefix: The temporary directory's name prefix (keep it short).
    public init(
        includeSystemDataDirs: Bool = false,
        path: String = standardSearchPath,
        extraVariables: [String: String] = [:],
        prefix: String = "uat-"
    ) throws {
        directory = try TemporaryDirectory(prefix: prefix)
        root = directory.path
        home = "\(root)/home"
        dataHome = "\(home)/.local/share"
        stateHome = "\(home)/.local/state"
        configHome = "\(home)/.config"
        cacheHome = "\(home)/.cache"
        runtimeDir = "\(root)/runtime"
        sharedDataDir = "\(root)/share"
        dataDirs = [sharedDataDir] + (includeSystemDataDirs ? ["/usr/local/share", "/usr/share"] : [])
        searchPath = path
        self.extraVariables = extraVariables

        let fm = FileManager.default
        for dir in [home, dataHome, stateHome, configHome, cacheHome, sharedDataDir,
                    "\(dataHome)/applications", "\(sharedDataDir)/applications"] {
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        try fm.createDirectory(atPath: runtimeDir, withIntermediateDirectories: true)
        guard chmod(runtimeDir, 0o700) == 0 else {
            throw ChildProcessError.systemCallFailed(call: "chmod(\(runtimeDir))", errno: errno)
        }
    }

    /// The complete environment for children: `PATH`, `HOME`, the XDG
    /// variables, `LANG=C.UTF-8`, and switches that keep GLib/GTK fixture apps
    /// off services a private bus lacks (`GIO_USE_VFS=local`,
    /// `GSETTINGS_BACKEND=memory`, `NO_AT_BRIDGE=1`). Nothing comes from the
    /// developer's session (no `DBUS_SESSION_BUS_ADDRESS`, no `DISPLAY`),
    /// except the runtime's diagnostics switches (``forwardedDiagnosticsVariables``):
    /// under `scripts/sanitizers.sh` the daemon, `useractivityctl` and the example
    /// app are sanitized too and must run with the same options as the tests.
    public var environment: [String: String] {
        var env: [String: String] = [
            "PATH": searchPath,
            "HOME": home,
            "XDG_DATA_HOME": dataHome,
            "XDG_DATA_DIRS": dataDirs.joined(separator: ":"),
            "XDG_STATE_HOME": stateHome,
            "XDG_CONFIG_HOME": configHome,
            "XDG_CACHE_HOME": cacheHome,
            "XDG_RUNTIME_DIR": runtimeDir,
            "LANG": "C.UTF-8",
            "GIO_USE_VFS": "local",
            "GSETTINGS_BACKEND": "memory",
            "NO_AT_BRIDGE": "1",
        ]
        for (key, value) in ProcessInfo.processInfo.environment where Self.forwardedDiagnosticsVariables.contains(key) {
            env[key] = value
        }
        env.merge(extraVariables) { _, new in new }
        return env
    }

    /// Passed from the test process to every child when set: sanitizer
    /// options (leak checking off, where reports go) and the Swift backtracer
    /// switch. Without them a sanitized child would run with the defaults, e.g.
    /// LeakSanitizer failing its exit on memory that has not leaked, and its
    /// reports would not reach the directory `scripts/sanitizers.sh` checks.
    public static let forwardedDiagnosticsVariables: Set<String> = [
        "ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "SWIFT_BACKTRACE",
    ]

    /// ``environment`` with `variables` added (they win).
    public func environment(adding variables: [String: String]) -> [String: String] {
        environment.merging(variables) { _, new in new }
    }

    /// The `applications` directory entries go to.
    public func applicationsDirectory(inDataHome: Bool = false) -> String {
        "\(inDataHome ? dataHome : sharedDataDir)/applications"
    }

    /// Writes `<share>/applications/<appID>.desktop` atomically.
    ///
    /// ```
    /// [Desktop Entry]
    /// Type=Application
    /// Name=<name or appID>
    /// Exec=<exec>
    /// X-UserActivityTypes=a;b;
    /// X-UserActivityTeam=<team>
    /// <extraLines…>
    /// ```
    /// `X-UserActivityTypes` is left out when `types` is empty,
    /// `X-UserActivityTeam` when `team` is `nil`.
    ///
    /// - Parameters:
    ///   - appID: The desktop file ID without `.desktop`.
    ///   - types: Activity types the app declares.
    ///   - team: The optional team identifier.
    ///   - name: `Name=`; default `appID`.
    ///   - exec: `Exec=`; default `/bin/true`.
    ///   - extraLines: Appended verbatim (may start further groups).
    ///   - inDataHome: Write under `XDG_DATA_HOME` instead of the first `XDG_DATA_DIRS` entry.
    /// - Returns: The path written.
    @discardableResult
    public func writeDesktopEntry(
        appID: String,
        types: [String],
        team: String? = nil,
        name: String? = nil,
        exec: String = "/bin/true",
        extraLines: [String] = [],
        inDataHome: Bool = false
    ) throws -> String {
        var lines = [
            "[Desktop Entry]",
            "Type=Application",
            "Name=\(name ?? appID)",
            "Exec=\(exec)",
        ]
        if !types.isEmpty {
            lines.append("X-UserActivityTypes=" + types.map { "\($0);" }.joined())
        }
        if let team { lines.append("X-UserActivityTeam=\(team)") }
        lines += extraLines
        let path = "\(applicationsDirectory(inDataHome: inDataHome))/\(appID).desktop"
        try writeFileAtomically(path, contents: lines.joined(separator: "\n") + "\n")
        return path
    }

    /// Removes a desktop entry written by ``writeDesktopEntry(appID:types:team:name:exec:extraLines:inDataHome:)``.
    public func removeDesktopEntry(appID: String, inDataHome: Bool = false) throws {
        try FileManager.default.removeItem(atPath: "\(applicationsDirectory(inDataHome: inDataHome))/\(appID).desktop")
    }
}

/// Writes a file through a hidden temporary name and `rename`, so watchers
/// never see it half-written.
public func writeFileAtomically(_ path: String, contents: String, mode: Int = 0o644) throws {
    let url = URL(fileURLWithPath: path)
    let dir = url.deletingLastPathComponent().path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let tmp = "\(dir)/.\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
    try Data(contents.utf8).write(to: URL(fileURLWithPath: tmp))
    chmod(tmp, mode_t(mode))
    guard rename(tmp, path) == 0 else {
        let code = errno
        unlink(tmp)
        throw ChildProcessError.systemCallFailed(call: "rename(\(tmp), \(path))", errno: code)
    }
}

/// A `/proc/PID/stat` line for a fixture `/proc` tree: the daemon reads the
/// state (field 3) and the start time in clock ticks since boot (field 22).
/// The defaults, a sleeping process started at boot, pass its checks.
public func fakeProcessStat(pid: Int32, state: Character = "S", startTicks: UInt64 = 0) -> String {
    "\(pid) (fixture app) \(state) 1 \(pid) \(pid) 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 \(startTicks) 0 0\n"
}
