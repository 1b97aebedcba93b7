// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The outcome of ``runCommand(_:_:environment:timeout:)``.
public struct CommandResult: Sendable, CustomStringConvertible {
    /// The resolved executable and its arguments.
    public var command: [String]
    /// The exit status, or the negated signal number when a signal killed it.
    public var exitCode: Int32
    /// Everything the command wrote to stdout.
    public var stdout: String
    /// Everything the command wrote to stderr.
    public var stderr: String

    public init(command: [String], exitCode: Int32, stdout: String, stderr: String) {
        self.command = command
        self.exitCode = exitCode
        self.stdout = stdout
        self.stderr = stderr
    }

    /// `exitCode == 0`.
    public var succeeded: Bool { exitCode == 0 }

    /// stdout without leading and trailing white space.
    public var trimmedStdout: String { stdout.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// Returns `self` when the command succeeded, else throws ``CommandFailure``.
    @discardableResult
    public func requireSuccess() throws -> CommandResult {
        guard succeeded else { throw CommandFailure(result: self) }
        return self
    }

    public var description: String {
        "\(command.joined(separator: " ")) → \(exitCode)\nstdout: \(stdout)\nstderr: \(stderr)"
    }
}

/// Thrown by ``CommandResult/requireSuccess()``.
public struct CommandFailure: Error, CustomStringConvertible, Sendable {
    public var result: CommandResult
    public init(result: CommandResult) { self.result = result }
    public var description: String { "command failed: \(result)" }
}

/// Runs a command to completion and captures stdout and stderr in full.
///
/// The child gets exactly `environment`, stdin from `/dev/null`, an empty
/// signal mask (see ``ChildProcess``), and its own process group. Both streams
/// are drained concurrently, so large output cannot deadlock.
///
/// - Parameters:
///   - executable: A path, or a name resolved through `environment["PATH"]`
///     (for example `"gdbus"` or `"busctl"`).
///   - arguments: The arguments after `argv[0]`.
///   - environment: The complete environment of the command, typically
///     ``PrivateBus/environment``.
///   - timeout: Seconds before the command (and its process group) is killed
///     and ``ChildProcessError/timedOut(_:)`` is thrown.
/// - Returns: The exit status and output; a non-zero status is not an error
///   (use ``CommandResult/requireSuccess()``).
public func runCommand(
    _ executable: String,
    _ arguments: [String],
    environment: [String: String],
    timeout: Double = 30
) throws -> CommandResult {
    let deadline = monotonicNow() + timeout
    let child = try ChildProcess(
        executable: executable, arguments: arguments, environment: environment,
        stdout: .capture, stderr: .capture, newProcessGroup: true)
    let command = [child.executable] + arguments
    guard let code = child.waitForExit(timeout: timeout) else {
        child.kill()
        child.waitForOutputEOF(timeout: 1)
        throw ChildProcessError.timedOut(
            "\(command.joined(separator: " ")) after \(timeout) s\nstdout: \(child.stdoutText)\nstderr: \(child.stderrText)")
    }
    // A grandchild may still hold the pipes; don't wait past the deadline for it.
    child.waitForOutputEOF(timeout: max(0.2, deadline - monotonicNow()))
    return CommandResult(command: command, exitCode: code, stdout: child.stdoutText, stderr: child.stderrText)
}
