// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Errors raised while setting up a sandbox.
public enum SandboxError: Error, CustomStringConvertible, Sendable {
    /// `bwrap` or `xdg-dbus-proxy` is missing or cannot create a sandbox here.
    case unavailable(String)
    /// The proxy did not come up.
    case proxyFailed(String)
    /// No writable cgroup hierarchy for a Snap-like scope.
    case noCgroupHierarchy(String)

    public var description: String {
        switch self {
        case .unavailable(let why): return "no sandbox: \(why)"
        case .proxyFailed(let why): return "xdg-dbus-proxy did not start: \(why)"
        case .noCgroupHierarchy(let why): return "no writable cgroup hierarchy: \(why)"
        }
    }
}

/// A Flatpak app as the daemon sees it: processes in a `bwrap` sandbox with a
/// `/.flatpak-info` (`[Application] name=<appID>`) at its root, reaching the
/// session bus through `xdg-dbus-proxy --filter` (itself run in a sandbox with
/// the same `/.flatpak-info`, as Flatpak runs it, since the bus reports the
/// proxy's process as the caller), or, in ``BusAccess/directSocket`` mode,
/// through the real bus socket bound inside.
///
/// Inside the sandbox: `/usr` (with the merged-`/usr` symlinks), `/etc`,
/// `/opt` (the Swift runtime of built helpers), a private `/tmp` and PID
/// namespace, ``directory`` at the same path as outside (read-write: scripts,
/// dump files and "go" files are exchanged through it), and the bus at
/// `unix:path=/run/flatpak/bus`.
///
/// ```swift
/// let app = try SandboxedApp(bus: bus, appID: "com.example.Sandboxed")
/// let agent = try app.spawnAgent([.call(...)])
/// ```
///
/// ``stop()`` (or deinit) ends the proxy and every process spawned here.
public final class SandboxedApp: @unchecked Sendable {
    /// How the sandbox reaches the bus.
    public enum BusAccess: Sendable, Equatable {
        /// `xdg-dbus-proxy --filter --talk=<name>` for each name: Flatpak's
        /// `--talk-name` (method calls to the name, its signals).
        case talk([String])
        /// `xdg-dbus-proxy --filter --call=<rule>` for each rule
        /// (`org.example.UserActivity=org.example.UserActivity.*@/org/example/UserActivity`):
        /// only those method calls, and no broadcast signals.
        case call([String])
        /// No proxy: the real bus socket is bound inside (a sandbox given
        /// `--socket=session-bus`). The bus then reports the app's own process.
        case directSocket

        /// Talk to the user-activity service only: how an app that uses it is packaged.
        public static let userActivity = BusAccess.talk(["org.example.UserActivity"])
    }

    /// The app ID in `/.flatpak-info`.
    public let appID: String
    /// How the sandbox reaches the bus.
    public let access: BusAccess
    /// The bus the sandbox is attached to.
    public let bus: PrivateBus
    /// Shared between the test and the sandbox, at the same path on both sides.
    public let directory: TemporaryDirectory
    /// The bus address inside the sandbox.
    public let addressInside = "unix:path=/run/flatpak/bus"
    /// The `xdg-dbus-proxy` (inside its own bwrap), unless ``BusAccess/directSocket``.
    public let proxy: ChildProcess?

    private let infoPath: String
    /// The socket bound at `/run/flatpak/bus`.
    private let socketOutside: String
    private let children = ChildProcessGroup()

    /// Where `/run/flatpak/bus` points outside the sandbox.
    public var busSocketOutside: String { socketOutside }

    /// Whether `bwrap` and `xdg-dbus-proxy` are installed and `bwrap` can
    /// build a sandbox here (it needs user namespaces, or root).
    public static let availability: Result<Void, SandboxError> = {
        for tool in ["bwrap", "xdg-dbus-proxy"] {
            guard (try? resolveExecutable(tool, environment: ["PATH": standardSearchPath])) != nil else {
                return .failure(.unavailable("\(tool) is not installed (Debian: bubblewrap, xdg-dbus-proxy)"))
            }
        }
        do {
            let result = try runCommand("bwrap", baseSandboxArguments + ["--", "/usr/bin/true"],
                                        environment: ["PATH": standardSearchPath], timeout: 30)
            guard result.succeeded else { return .failure(.unavailable("bwrap cannot create a sandbox: \(result.stderr)")) }
        } catch {
            return .failure(.unavailable("bwrap failed: \(error)"))
        }
        return .success(())
    }()

    /// Whether sandboxes can be made here (see ``availability``).
    public static var isAvailable: Bool {
        if case .success = availability { return true }
        return false
    }

    /// The filesystem every sandbox gets: the host's `/usr`, `/etc` and `/opt`
    /// read-only, fresh `/proc`, `/dev`, `/tmp`, its own PID namespace.
    static var baseSandboxArguments: [String] {
        var arguments = [
            "--ro-bind", "/usr", "/usr",
            "--ro-bind", "/etc", "/etc",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--unshare-pid", "--die-with-parent",
        ]
        for link in ["bin", "sbin", "lib", "lib64", "lib32", "libx32"] {
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/\(link)"))
            if let target { arguments += ["--symlink", target, "/\(link)"] }
            else if FileManager.default.fileExists(atPath: "/\(link)") { arguments += ["--ro-bind", "/\(link)", "/\(link)"] }
        }
        if FileManager.default.fileExists(atPath: "/opt") { arguments += ["--ro-bind", "/opt", "/opt"] }
        return arguments
    }

    /// Sets the sandbox up; with a proxy, waits (up to 20 s) until it accepts connections.
    ///
    /// - Parameters:
    ///   - bus: The private bus to attach to.
    ///   - appID: The Flatpak app ID written into `/.flatpak-info`.
    ///   - access: Through which proxy, or none.
    ///   - extraInfo: More lines for `/.flatpak-info` (after `name=`).
    public init(bus: PrivateBus, appID: String, access: BusAccess = .userActivity, extraInfo: [String] = []) throws {
        if case .failure(let error) = Self.availability { throw error }
        self.bus = bus
        self.appID = appID
        self.access = access
        directory = try TemporaryDirectory(prefix: "uas-", base: TemporaryDirectory.defaultBase(maxLength: 40))
        chmod(directory.path, 0o755)
        infoPath = directory.appending("flatpak-info")
        try writeFileAtomically(infoPath, contents: (["[Application]", "name=\(appID)"] + extraInfo).joined(separator: "\n") + "\n")

        guard let busSocket = Self.socketPath(ofAddress: bus.address) else {
            throw SandboxError.unavailable("the bus address \(bus.address) is not a unix:path= address")
        }
        switch access {
        case .directSocket:
            socketOutside = busSocket
            proxy = nil
        case .talk(let names), .call(let names):
            let flag = { if case .talk = access { return "--talk=" } else { return "--call=" } }()
            socketOutside = directory.appending("bus")
            let arguments = Self.baseSandboxArguments + [
                "--ro-bind", infoPath, "/.flatpak-info",
                "--ro-bind", busSocket, busSocket,
                "--bind", directory.path, directory.path,
                "--", "xdg-dbus-proxy", bus.address, socketOutside, "--fd=1", "--filter",
            ] + names.map { flag + $0 }
            let proxy = try ChildProcess(executable: "bwrap", arguments: arguments,
                                         environment: ["PATH": standardSearchPath],
                                         stdout: .capture, stderr: .capture, newProcessGroup: true)
            self.proxy = proxy
            // With --fd, the proxy writes a byte once it listens.
            guard waitUntil(timeout: 20, { !proxy.stdoutText.isEmpty || !proxy.isRunning }), proxy.isRunning else {
                proxy.terminate(grace: 0.5)
                throw SandboxError.proxyFailed("\(proxy.termination?.description ?? "no ready byte in 20 s"): \(proxy.stderrText)")
            }
        }
    }

    deinit { stop() }

    /// The path in `unix:path=<path>,guid=…`.
    static func socketPath(ofAddress address: String) -> String? {
        guard address.hasPrefix("unix:") else { return nil }
        for part in address.dropFirst("unix:".count).split(separator: ",") where part.hasPrefix("path=") {
            return String(part.dropFirst("path=".count))
        }
        return nil
    }

    /// The `bwrap` command line that runs `executable` in the sandbox.
    public func sandboxArguments(_ executable: String, _ arguments: [String], readOnlyBinds: [String] = []) -> [String] {
        var result = Self.baseSandboxArguments + [
            "--ro-bind", infoPath, "/.flatpak-info",
            "--bind", socketOutside, "/run/flatpak/bus",
            "--bind", directory.path, directory.path,
            "--setenv", "DBUS_SESSION_BUS_ADDRESS", addressInside,
        ]
        for path in readOnlyBinds { result += ["--ro-bind", path, path] }
        return result + ["--", executable] + arguments
    }

    /// Starts `executable` in the sandbox (in its own process group; ended by ``stop()``).
    ///
    /// - Parameters:
    ///   - executable: A path as seen inside (`/usr/…`, `/opt/…`, or under
    ///     ``directory`` or one of `readOnlyBinds`).
    ///   - environment: The environment inside; default the bus's session
    ///     environment (HOME and XDG dirs, which do not exist inside unless bound).
    ///   - readOnlyBinds: Further host paths visible inside at the same path
    ///     (the build directory of a helper executable).
    public func spawn(
        _ executable: String, _ arguments: [String] = [],
        environment: [String: String]? = nil, readOnlyBinds: [String] = [],
        stdout: ChildProcess.Output = .capture, stderr: ChildProcess.Output = .capture
    ) throws -> ChildProcess {
        var env = environment ?? bus.session.environment
        env["DBUS_SESSION_BUS_ADDRESS"] = addressInside
        let child = try ChildProcess(executable: "bwrap",
                                     arguments: sandboxArguments(executable, arguments, readOnlyBinds: readOnlyBinds),
                                     environment: env, stdout: stdout, stderr: stderr, newProcessGroup: true)
        children.add(child)
        return child
    }

    /// Runs ``SandboxAgent`` with `steps` in the sandbox.
    public func spawnAgent(_ steps: [SandboxAgent.Step], dumpReceived: Bool = true) throws -> SandboxAgent {
        let script = try SandboxAgent.install(in: directory)
        let agent = try SandboxAgent(steps: steps, directory: directory, dumpReceived: dumpReceived) { arguments in
            try self.spawn("/usr/bin/python3", [script] + arguments)
        }
        return agent
    }

    /// Ends every process started here, then the proxy. Idempotent.
    public func stop() {
        children.terminateAll()
        proxy?.terminate(grace: 1)
    }
}

/// A process confined the way snapd confines one: moved into a cgroup named
/// `snap.<snap>.<app>-<n>.scope` before it runs, connected to the bus
/// directly (Snaps have no proxy). The daemon maps the snap name to an app
/// through `X-SnapInstanceName` in a desktop entry.
///
/// Needs a writable cgroup hierarchy (root, or a delegated one):
/// ``writableHierarchy()``.
public final class SnapScope: @unchecked Sendable {
    /// The cgroup directory.
    public let cgroupPath: String
    /// The snap's instance name.
    public let snapName: String
    private let bus: PrivateBus
    private let children = ChildProcessGroup()

    /// A hierarchy where this process may create cgroups and move processes:
    /// the cgroup v2 root, else the v1 `name=systemd` hierarchy (either is
    /// where the daemon's probe reads the `snap.` component).
    public static func writableHierarchy() -> Result<String, SandboxError> {
        var tried: [String] = []
        for candidate in ["/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
            let probe = "\(candidate)/useractivity-probe-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            if mkdir(probe, 0o755) == 0 {
                let movable = FileManager.default.isWritableFile(atPath: "\(probe)/cgroup.procs")
                rmdir(probe)
                if movable { return .success(candidate) }
                tried.append("\(candidate): cgroup.procs not writable")
            } else {
                tried.append("\(candidate): \(String(cString: strerror(errno)))")
            }
        }
        return .failure(.noCgroupHierarchy(tried.joined(separator: "; ")))
    }

    /// Creates `<hierarchy>/snap.<snapName>.<app>-<random>.scope`.
    public init(bus: PrivateBus, snapName: String, app: String = "app") throws {
        let hierarchy = try Self.writableHierarchy().get()
        self.bus = bus
        self.snapName = snapName
        cgroupPath = "\(hierarchy)/snap.\(snapName).\(app)-\(UInt32.random(in: 1_000_000...UInt32.max)).scope"
        guard mkdir(cgroupPath, 0o755) == 0 else {
            throw SandboxError.noCgroupHierarchy("mkdir \(cgroupPath): \(String(cString: strerror(errno)))")
        }
    }

    deinit { stop() }

    /// Starts `executable` inside the scope (it joins the cgroup before `exec`).
    public func spawn(
        _ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
        stdout: ChildProcess.Output = .capture, stderr: ChildProcess.Output = .capture
    ) throws -> ChildProcess {
        let env = environment ?? bus.environment
        let child = try ChildProcess(
            executable: "/bin/sh",
            arguments: ["-c", "echo $$ > \"$0\" && exec \"$@\"", "\(cgroupPath)/cgroup.procs", executable] + arguments,
            environment: env, stdout: stdout, stderr: stderr, newProcessGroup: true)
        children.add(child)
        return child
    }

    /// Runs ``SandboxAgent`` with `steps` in the scope.
    public func spawnAgent(_ steps: [SandboxAgent.Step], directory: TemporaryDirectory, dumpReceived: Bool = true) throws -> SandboxAgent {
        let script = try SandboxAgent.install(in: directory)
        return try SandboxAgent(steps: steps, directory: directory, dumpReceived: dumpReceived) { arguments in
            try self.spawn("/usr/bin/python3", [script] + arguments)
        }
    }

    /// Ends the processes started here and removes the cgroup. Idempotent.
    public func stop() {
        children.terminateAll()
        // A cgroup can be removed once its last process has been reaped.
        _ = waitUntil(timeout: 5) { rmdir(cgroupPath) == 0 || errno == ENOENT }
    }
}

/// The processes a sandbox started. Tests spawn from several threads, and a
/// stop by the test is followed by another from `deinit`.
private final class ChildProcessGroup: @unchecked Sendable {
    private let lock = NSLock()
    private var children: [ChildProcess] = []

    func add(_ child: ChildProcess) {
        lock.withLock { children.append(child) }
    }

    /// Ends each process once: a later call finds none left.
    func terminateAll() {
        let all = lock.withLock {
            defer { children = [] }
            return children
        }
        for child in all { child.terminate(grace: 1) }
    }
}
