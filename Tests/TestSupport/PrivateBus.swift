// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Errors raised by ``PrivateBus``.
public enum PrivateBusError: Error, CustomStringConvertible, Sendable {
    /// `dbus-daemon` did not print its address.
    case startFailed(reason: String, daemonLog: String)
    /// A helper command against the bus failed.
    case commandFailed(CommandResult)
    /// No `dbus-daemon` that offers `ProcessFD` was found.
    case processFDDaemonMissing(String)

    public var description: String {
        switch self {
        case let .startFailed(reason, log):
            return "dbus-daemon did not start: \(reason)\n--- dbus-daemon output ---\n\(log)"
        case let .commandFailed(result):
            return "bus command failed: \(result)"
        case let .processFDDaemonMissing(why):
            return why
        }
    }
}

/// A private session bus: one `dbus-daemon` per test, with its own config,
/// socket directory and D-Bus activation directory.
///
/// The daemon runs with the ``session`` environment, so services it activates
/// inherit the test's XDG directories (and `dbus-daemon` adds
/// `DBUS_SESSION_BUS_ADDRESS` / `DBUS_STARTER_ADDRESS` for them). It leads its
/// own process group: ``stop()`` sends `SIGTERM` to the daemon and every
/// service it activated, then `SIGKILL`s whatever is left after the grace
/// period. Many buses can run in parallel.
///
/// The daemon's stderr, and the stdout/stderr of activated services (they
/// inherit the daemon's), are captured: see ``log``.
public final class PrivateBus: @unchecked Sendable {
    /// The session layout the daemon and its services run with.
    public let session: SessionEnvironment
    /// The bus's own temporary directory (`bus/`, `services/`, `session.conf`).
    public let directory: TemporaryDirectory
    /// Where the listening socket lives.
    public let socketDirectory: String
    /// Where ``installService(name:exec:extraEnvironment:)`` writes `.service` files.
    public let servicesDirectory: String
    /// The generated configuration file.
    public let configPath: String
    /// The bus address (`unix:path=…,guid=…`).
    public let address: String
    /// The `dbus-daemon` process.
    public let process: ChildProcess

    /// Starts `dbus-daemon` and waits (up to 10 s) for its address.
    ///
    /// - Parameters:
    ///   - environment: The session layout; its ``SessionEnvironment/environment``
    ///     becomes the daemon's.
    ///   - serviceStartTimeout: Seconds the daemon waits for an activated
    ///     service to take its name (below `gdbus`'s 25 s call timeout).
    ///   - daemonPath: The `dbus-daemon` executable: ``defaultDaemonPath``
    ///     unless given, ``processFDDaemon()`` for one that offers `ProcessFD`.
    ///   - launcher: A command the daemon runs under (its arguments follow),
    ///     for example `unshare --pid --fork --mount-proc` to give the bus and
    ///     every service it activates a PID namespace of their own.
    public init(
        environment: SessionEnvironment,
        serviceStartTimeout: Double = 20,
        daemonPath: String = PrivateBus.defaultDaemonPath,
        launcher: [String] = []
    ) throws {
        session = environment
        directory = try TemporaryDirectory(prefix: "uab-", base: TemporaryDirectory.defaultBase(maxLength: 40))
        socketDirectory = try directory.makeDirectory("bus", mode: 0o700)
        servicesDirectory = try directory.makeDirectory("services")
        configPath = directory.appending("session.conf")
        try writeFileAtomically(configPath, contents: PrivateBus.configuration(
            socketDirectory: socketDirectory, servicesDirectory: servicesDirectory,
            serviceStartTimeoutMilliseconds: Int(serviceStartTimeout * 1000)))

        let daemonArguments = ["--nofork", "--nopidfile", "--print-address=1", "--config-file=\(configPath)"]
        process = try ChildProcess(
            executable: launcher.first ?? daemonPath,
            arguments: launcher.isEmpty ? daemonArguments : Array(launcher.dropFirst()) + [daemonPath] + daemonArguments,
            environment: environment.environment,
            stdout: .capture, stderr: .capture,
            workingDirectory: environment.root,
            newProcessGroup: true)

        let line: String?
        do {
            line = try process.readLine(timeout: 10)
        } catch {
            process.terminate(grace: 0.5)
            throw PrivateBusError.startFailed(reason: "\(error)", daemonLog: process.stderrText)
        }
        guard let line, line.hasPrefix("unix:") else {
            process.terminate(grace: 0.5)
            process.waitForOutputEOF(timeout: 1)
            throw PrivateBusError.startFailed(
                reason: "expected an address on stdout, got \(line.debugDescription) (\(process.termination?.description ?? "still running"))",
                daemonLog: process.stderrText)
        }
        address = line
    }

    /// The `dbus-daemon` buses start with: `$USERACTIVITY_TEST_DBUS_DAEMON`
    /// when set (to run suites against another bus, such as the one
    /// `scripts/build-pidfd-bus.sh` builds), else the system's.
    public static var defaultDaemonPath: String {
        let chosen = ProcessInfo.processInfo.environment["USERACTIVITY_TEST_DBUS_DAEMON"] ?? ""
        return chosen.isEmpty ? "dbus-daemon" : chosen
    }

    /// Whether a missing ``processFDDaemon()`` fails the tests that need it
    /// instead of skipping them (`USERACTIVITY_REQUIRE_PIDFD_BUS=1`, set by CI).
    public static var processFDDaemonRequired: Bool {
        ProcessInfo.processInfo.environment["USERACTIVITY_REQUIRE_PIDFD_BUS"] == "1"
    }

    /// A `dbus-daemon` that offers `ProcessFD` in `GetConnectionCredentials`
    /// (the system's does not on Debian 12): `$USERACTIVITY_PIDFD_DBUS_DAEMON`,
    /// else `.build-pidfd-bus/bin/dbus-daemon` in the repository, where
    /// `scripts/build-pidfd-bus.sh` builds one.
    ///
    /// - Returns: Its path, or why there is none.
    public static func processFDDaemon(filePath: String = #filePath) -> Result<String, PrivateBusError> {
        let configured = ProcessInfo.processInfo.environment["USERACTIVITY_PIDFD_DBUS_DAEMON"] ?? ""
        let path = configured.isEmpty ? repositoryRoot(filePath: filePath) + "/.build-pidfd-bus/bin/dbus-daemon" : configured
        guard access(path, X_OK) == 0 else {
            return .failure(.processFDDaemonMissing(
                "no dbus-daemon offering ProcessFD at \(path): run scripts/build-pidfd-bus.sh (or set USERACTIVITY_PIDFD_DBUS_DAEMON)"))
        }
        return .success(path)
    }

    /// Starts a bus with a fresh ``SessionEnvironment``.
    public convenience init() throws {
        try self.init(environment: SessionEnvironment())
    }

    deinit {
        stop()
    }

    /// The daemon's process ID.
    public var pid: pid_t { process.pid }

    /// Whether the daemon is still running.
    public var isRunning: Bool { process.isRunning }

    /// The session environment plus `DBUS_SESSION_BUS_ADDRESS`: for `gdbus`,
    /// `busctl`, the daemon under test and any other client.
    public var environment: [String: String] {
        session.environment(adding: ["DBUS_SESSION_BUS_ADDRESS": address])
    }

    /// ``environment`` with `variables` added (they win).
    public func environment(adding variables: [String: String]) -> [String: String] {
        environment.merging(variables) { _, new in new }
    }

    /// What the daemon and the services it activated wrote to stderr (and the
    /// services' stdout, which follows the daemon's address line).
    public var log: String {
        let out = process.stdoutText
        let services = out.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).dropFirst().first ?? ""
        return process.stderrText + (services.isEmpty ? "" : "\n--- services' stdout ---\n\(services)")
    }

    /// Writes `<servicesDirectory>/<name>.service` (atomically) for D-Bus activation.
    ///
    /// `dbus-daemon` watches the directory and also rescans it when asked for an
    /// unknown name, so no reload is needed.
    ///
    /// - Parameters:
    ///   - name: The well-known bus name (also the file name).
    ///   - exec: The `Exec=` command line, parsed by D-Bus with shell-like
    ///     quoting (``shellQuote(_:)`` quotes one argument); backslashes are
    ///     escaped for the key-file syntax here, so write it as for `sh`.
    ///   - extraEnvironment: Variables for this service only, applied through
    ///     `/usr/bin/env`.
    /// - Returns: The path of the `.service` file.
    @discardableResult
    public func installService(name: String, exec: String, extraEnvironment: [String: String]? = nil) throws -> String {
        var command = exec
        if let extraEnvironment, !extraEnvironment.isEmpty {
            let assignments = extraEnvironment.sorted { $0.key < $1.key }.map { shellQuote("\($0.key)=\($0.value)") }
            command = "/usr/bin/env " + assignments.joined(separator: " ") + " " + exec
        }
        // The .service parser reads backslash escapes (and silently drops the
        // whole file on an unknown one), before the shell-like Exec parsing.
        let escaped = command
            .replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\n", with: "\\n")
        let path = "\(servicesDirectory)/\(name).service"
        try writeFileAtomically(path, contents: "[D-BUS Service]\nName=\(name)\nExec=\(escaped)\n")
        return path
    }

    /// Removes a `.service` file written by ``installService(name:exec:extraEnvironment:)``.
    public func removeService(name: String) throws {
        try FileManager.default.removeItem(atPath: "\(servicesDirectory)/\(name).service")
    }

    /// Asks the daemon to reload its configuration and service files
    /// (`org.freedesktop.DBus.ReloadConfig` through `gdbus`).
    public func reload() throws {
        let result = try run("gdbus", [
            "call", "--session", "--dest", "org.freedesktop.DBus",
            "--object-path", "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.ReloadConfig",
        ])
        guard result.succeeded else { throw PrivateBusError.commandFailed(result) }
    }

    /// Runs a command against this bus (``runCommand(_:_:environment:timeout:)``
    /// with ``environment`` plus `extraEnvironment`).
    public func run(
        _ executable: String, _ arguments: [String],
        extraEnvironment: [String: String] = [:], timeout: Double = 30
    ) throws -> CommandResult {
        try runCommand(executable, arguments, environment: environment(adding: extraEnvironment), timeout: timeout)
    }

    /// Starts a long-running client of this bus (for example the daemon under
    /// test) with ``environment`` plus `extraEnvironment`.
    public func spawn(
        _ executable: String, _ arguments: [String] = [],
        extraEnvironment: [String: String] = [:],
        stdout: ChildProcess.Output = .capture, stderr: ChildProcess.Output = .capture
    ) throws -> ChildProcess {
        try ChildProcess(
            executable: executable, arguments: arguments,
            environment: environment(adding: extraEnvironment), stdout: stdout, stderr: stderr)
    }

    /// Stops the daemon and the services it activated: `SIGTERM` to the
    /// process group, `SIGKILL` after `grace` seconds. Idempotent. The
    /// temporary directories go when the object is released.
    public func stop(grace: Double = 2) {
        process.terminate(grace: grace)
    }

    /// The generated `session.conf`.
    static func configuration(socketDirectory: String, servicesDirectory: String, serviceStartTimeoutMilliseconds: Int) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <keep_umask/>
          <listen>unix:dir=\(xmlEscape(socketDirectory))</listen>
          <auth>EXTERNAL</auth>
          <servicedir>\(xmlEscape(servicesDirectory))</servicedir>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
          <limit name="max_incoming_bytes">1000000000</limit>
          <limit name="max_incoming_unix_fds">250000000</limit>
          <limit name="max_outgoing_bytes">1000000000</limit>
          <limit name="max_outgoing_unix_fds">250000000</limit>
          <limit name="max_message_size">1000000000</limit>
          <limit name="max_message_unix_fds">4096</limit>
          <limit name="service_start_timeout">\(serviceStartTimeoutMilliseconds)</limit>
          <limit name="auth_timeout">60000</limit>
          <limit name="pending_fd_timeout">150000</limit>
          <limit name="max_completed_connections">100000</limit>
          <limit name="max_incomplete_connections">10000</limit>
          <limit name="max_connections_per_user">100000</limit>
          <limit name="max_pending_service_starts">10000</limit>
          <limit name="max_names_per_connection">50000</limit>
          <limit name="max_match_rules_per_connection">50000</limit>
          <limit name="max_replies_per_connection">50000</limit>
        </busconfig>

        """
    }
}

/// Quotes `s` for a POSIX shell or a D-Bus `Exec=` line.
public func shellQuote(_ s: String) -> String {
    if !s.isEmpty, s.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_./=:,@%+".contains($0)) }) {
        return s
    }
    return "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

func xmlEscape(_ s: String) -> String {
    s.replacingOccurrences(of: "&", with: "&amp;")
        .replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;")
}
