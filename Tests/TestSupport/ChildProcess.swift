// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Errors raised by ``ChildProcess`` and ``runCommand(_:_:environment:timeout:)``.
public enum ChildProcessError: Error, CustomStringConvertible, Sendable {
    /// The executable name could not be resolved through `PATH`.
    case executableNotFound(name: String, searchPath: String)
    /// A system call needed to set up the child failed.
    case systemCallFailed(call: String, errno: Int32)
    /// `posix_spawn` itself failed (for example: not executable).
    case spawnFailed(executable: String, errno: Int32)
    /// An operation did not complete in time.
    case timedOut(String)
    /// The requested stream was not captured to a pipe.
    case notCaptured(String)

    public var description: String {
        switch self {
        case let .executableNotFound(name, searchPath):
            return "executable '\(name)' not found in PATH=\(searchPath)"
        case let .systemCallFailed(call, code):
            return "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        case let .spawnFailed(executable, code):
            return "posix_spawn \(executable) failed: \(String(cString: strerror(code))) (errno \(code))"
        case let .timedOut(what):
            return "timed out: \(what)"
        case let .notCaptured(what):
            return "\(what) is not captured (use .capture)"
        }
    }
}

/// How a child process ended.
public enum Termination: Sendable, Equatable, CustomStringConvertible {
    /// Normal `exit(code)`.
    case exited(Int32)
    /// Killed by a signal.
    case signaled(Int32)

    /// The exit code, or the negated signal number (like Python's `returncode`).
    public var code: Int32 {
        switch self {
        case let .exited(code): return code
        case let .signaled(signal): return -signal
        }
    }

    public var description: String {
        switch self {
        case let .exited(code): return "exited with status \(code)"
        case let .signaled(signal): return "killed by signal \(signal)"
        }
    }

    init(waitStatus status: Int32) {
        let low = status & 0x7f
        if low == 0 {
            self = .exited((status >> 8) & 0xff)
        } else {
            self = .signaled(low)
        }
    }
}

/// A child process started with `posix_spawn`, for tests and benchmarks.
///
/// Unlike `Foundation.Process`, the child always starts with an **empty signal
/// mask and default signal dispositions**, whatever the mask of the calling
/// thread (Swift Testing's worker threads block `SIGTERM`; a child inheriting
/// that mask ignores ``terminate(grace:)``). Nothing is inherited implicitly:
/// the argument vector and the environment are explicit, and every file
/// descriptor above 2 is closed in the child.
///
/// Captured output is drained by a background thread into a buffer, so a
/// chatty child can never block on a full pipe; read it with
/// ``readLine(timeout:)`` or the ``stdoutText`` / ``stderrText`` snapshots.
///
/// The process is killed (`SIGKILL`) and reaped when the object is released
/// while it is still running.
public final class ChildProcess: @unchecked Sendable {
    /// Where a standard output stream goes.
    public enum Output: Sendable, Equatable {
        /// Into a pipe drained by a background thread (see ``readLine(timeout:)``).
        case capture
        /// To this file, created or truncated (opened with `O_APPEND`, so the same
        /// file may serve both stdout and stderr).
        case file(String)
        /// Appended to this file.
        case appendToFile(String)
        /// Shared with the test process.
        case inherit
        /// To `/dev/null`.
        case discard
        /// Only for stderr: wherever stdout goes (`2>&1`).
        case mergeWithStdout
    }

    /// Where standard input comes from.
    public enum Input: Sendable, Equatable {
        /// `/dev/null` (the default).
        case null
        /// Shared with the test process.
        case inherit
    }

    /// The child's process ID.
    public let pid: pid_t
    /// The resolved executable path.
    public let executable: String
    /// The arguments (without `argv[0]`).
    public let arguments: [String]
    /// Whether the child leads its own process group (signals then go to the group).
    public let usesProcessGroup: Bool

    private let stdoutCollector: OutputCollector?
    private let stderrCollector: OutputCollector?
    private let lock = NSLock()
    private var _termination: Termination?

    /// Spawns a process.
    ///
    /// - Parameters:
    ///   - executable: A path, or a bare name resolved through the `PATH` of
    ///     `environment` (falling back to a standard system `PATH`).
    ///   - arguments: The arguments after `argv[0]` (which is `executable`).
    ///   - environment: The complete environment of the child.
    ///   - stdout: Where standard output goes.
    ///   - stderr: Where standard error goes.
    ///   - stdin: Where standard input comes from (default `/dev/null`).
    ///   - workingDirectory: The child's current directory (default: inherited).
    ///   - newProcessGroup: Make the child a process-group leader; ``terminate(grace:)``
    ///     and ``kill()`` then signal the whole group, including grandchildren
    ///     (for example services that `dbus-daemon` activated).
    public init(
        executable: String,
        arguments: [String],
        environment: [String: String],
        stdout: Output,
        stderr: Output,
        stdin: Input = .null,
        workingDirectory: String? = nil,
        newProcessGroup: Bool = false
    ) throws {
        let path = try resolveExecutable(executable, environment: environment)
        self.executable = path
        self.arguments = arguments
        self.usesProcessGroup = newProcessGroup

        var actions = posix_spawn_file_actions_t()
        var attr = posix_spawnattr_t()
        guard posix_spawn_file_actions_init(&actions) == 0 else {
            throw ChildProcessError.systemCallFailed(call: "posix_spawn_file_actions_init", errno: errno)
        }
        defer { posix_spawn_file_actions_destroy(&actions) }
        guard posix_spawnattr_init(&attr) == 0 else {
            throw ChildProcessError.systemCallFailed(call: "posix_spawnattr_init", errno: errno)
        }
        defer { posix_spawnattr_destroy(&attr) }

        // Signals: empty mask, every disposition back to SIG_DFL.
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        if newProcessGroup { flags |= Int32(POSIX_SPAWN_SETPGROUP) }
        posix_spawnattr_setsigmask(&attr, &emptyMask)
        posix_spawnattr_setsigdefault(&attr, &allSignals)
        if newProcessGroup { posix_spawnattr_setpgroup(&attr, 0) }
        posix_spawnattr_setflags(&attr, Int16(flags))

        // File descriptors. Parent ends are close-on-exec; closefrom(3) in the child.
        var parentReadEnds: [Int32] = []
        var childWriteEnds: [Int32] = []
        var ok = false
        defer {
            for fd in childWriteEnds { close(fd) }
            if !ok { for fd in parentReadEnds { close(fd) } }
        }

        func addOutput(_ output: Output, fd: Int32, isStderr: Bool) throws -> Int32? {
            switch output {
            case .capture:
                let (readEnd, writeEnd) = try makePipe()
                parentReadEnds.append(readEnd)
                childWriteEnds.append(writeEnd)
                posix_spawn_file_actions_adddup2(&actions, writeEnd, fd)
                return readEnd
            case let .file(filePath):
                posix_spawn_file_actions_addopen(&actions, fd, filePath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o644)
            case let .appendToFile(filePath):
                posix_spawn_file_actions_addopen(&actions, fd, filePath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            case .inherit:
                break
            case .discard:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            case .mergeWithStdout:
                precondition(isStderr, ".mergeWithStdout is only valid for stderr")
                posix_spawn_file_actions_adddup2(&actions, 1, 2)
            }
            return nil
        }

        switch stdin {
        case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .inherit: break
        }
        let stdoutRead = try addOutput(stdout, fd: 1, isStderr: false)
        let stderrRead = try addOutput(stderr, fd: 2, isStderr: true)
        if let workingDirectory { try SpawnExtras.addChdir(&actions, workingDirectory) }
        SpawnExtras.addCloseFrom(&actions, 3)

        // argv / envp as NUL-terminated C string arrays.
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) }
        argv.append(nil)
        var envp: [UnsafeMutablePointer<CChar>?] = environment
            .sorted { $0.key < $1.key }
            .map { strdup("\($0.key)=\($0.value)") }
        envp.append(nil)
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }

        var childPID: pid_t = 0
        let rc = posix_spawn(&childPID, path, &actions, &attr, argv, envp)
        guard rc == 0 else { throw ChildProcessError.spawnFailed(executable: path, errno: rc) }
        ok = true
        self.pid = childPID

        let name = (path as NSString).lastPathComponent
        self.stdoutCollector = stdoutRead.map { OutputCollector(fd: $0, label: "\(name)[\(childPID)].stdout") }
        self.stderrCollector = stderrRead.map { OutputCollector(fd: $0, label: "\(name)[\(childPID)].stderr") }
    }

    deinit {
        if termination == nil || usesProcessGroup {
            kill()
        }
    }

    // MARK: - Output

    /// Reads the next line of captured stdout, without its newline.
    ///
    /// - Returns: The line, a final unterminated line at end of file, or `nil`
    ///   at end of file.
    /// - Throws: ``ChildProcessError/timedOut(_:)`` when no full line arrives in
    ///   time; ``ChildProcessError/notCaptured(_:)`` when stdout isn't `.capture`.
    public func readLine(timeout: Double) throws -> String? {
        guard let stdoutCollector else { throw ChildProcessError.notCaptured("stdout") }
        return try stdoutCollector.readLine(timeout: timeout)
    }

    /// Reads the next line of captured stderr (see ``readLine(timeout:)``).
    public func readStderrLine(timeout: Double) throws -> String? {
        guard let stderrCollector else { throw ChildProcessError.notCaptured("stderr") }
        return try stderrCollector.readLine(timeout: timeout)
    }

    /// Everything captured on stdout so far (empty when not captured).
    /// Independent of what ``readLine(timeout:)`` consumed.
    public var stdoutText: String { stdoutCollector?.text ?? "" }

    /// Everything captured on stderr so far (empty when not captured).
    public var stderrText: String { stderrCollector?.text ?? "" }

    /// Waits until every captured stream reached end of file (all writers,
    /// including grandchildren that inherited the pipe, closed it).
    @discardableResult
    public func waitForOutputEOF(timeout: Double) -> Bool {
        let deadline = monotonicNow() + timeout
        for collector in [stdoutCollector, stderrCollector].compactMap({ $0 }) {
            if !collector.waitForEOF(timeout: max(0, deadline - monotonicNow())) { return false }
        }
        return true
    }

    // MARK: - Lifetime

    /// How the process ended, once it has been reaped (`nil` while running).
    public var termination: Termination? {
        lock.lock(); defer { lock.unlock() }
        return _termination
    }

    /// Whether the process is still running (reaps it if it exited).
    public var isRunning: Bool { reap() == nil }

    /// Waits for the process to exit.
    ///
    /// - Returns: The exit status, or the negated signal number when a signal
    ///   killed it (see ``Termination/code``); `nil` on timeout (the process is
    ///   left running).
    @discardableResult
    public func waitForExit(timeout: Double) -> Int32? {
        let deadline = monotonicNow() + timeout
        var delay: Double = 0.0005
        while true {
            if let t = reap() { return t.code }
            let remaining = deadline - monotonicNow()
            if remaining <= 0 { return nil }
            sleepSeconds(min(delay, remaining))
            delay = min(delay * 2, 0.01)
        }
    }

    /// Sends a signal to the process (to its group if ``usesProcessGroup``).
    /// Does nothing once the process has been reaped, unless it led a group.
    public func signal(_ signal: Int32) {
        lock.lock(); defer { lock.unlock() }
        if usesProcessGroup {
            _ = Glibc.kill(-pid, signal)
        } else if _termination == nil {
            _ = Glibc.kill(pid, signal)
        }
    }

    /// Stops the process: `SIGTERM`, up to `grace` seconds to exit, then
    /// `SIGKILL`; always reaps it. Safe from any thread, whatever that thread's
    /// signal mask. With a process group, members still alive when the grace
    /// period ends are killed too.
    public func terminate(grace: Double = 2) {
        let deadline = monotonicNow() + grace
        signal(SIGTERM)
        _ = waitForExit(timeout: grace)
        if usesProcessGroup {
            var delay = 0.0005
            while processGroupHasLiveMembers(pid), monotonicNow() < deadline {
                sleepSeconds(delay)
                delay = min(delay * 2, 0.01)
            }
        }
        kill()
    }

    /// Kills the process (and its group, if any) with `SIGKILL` and reaps it.
    /// A process the kernel has not let go of after a minute (stuck in an
    /// uninterruptible wait) is left, with a line on stderr saying where it
    /// waits, rather than holding the test forever.
    public func kill() {
        signal(SIGKILL)
        let deadline = monotonicNow() + 60
        var delay = 0.001
        while reap() == nil {
            guard monotonicNow() < deadline else {
                let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "gone"
                let waitChannel = (try? String(contentsOfFile: "/proc/\(pid)/wchan", encoding: .utf8)) ?? "?"
                FileHandle.standardError.write(Data("ChildProcess: \(pid) not reaped 60 s after SIGKILL; stat: \(state.prefix(200)) wchan: \(waitChannel)\n".utf8))
                return
            }
            sleepSeconds(delay)
            delay = min(delay * 2, 0.01)
        }
    }

    /// Non-blocking reap; returns the termination once known.
    @discardableResult
    private func reap() -> Termination? {
        lock.lock(); defer { lock.unlock() }
        if let t = _termination { return t }
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid {
                _termination = Termination(waitStatus: status)
                return _termination
            }
            if r == -1 && errno == EINTR { continue }
            if r == -1 && errno == ECHILD {
                // Someone else reaped it (should not happen); treat as gone.
                _termination = .signaled(0)
                return _termination
            }
            return nil
        }
    }
}

// MARK: - Helpers

/// Captures one pipe into memory on a background thread.
final class OutputCollector: @unchecked Sendable {
    private let condition = NSCondition()
    private var buffer: [UInt8] = []
    private var lineOffset = 0
    private var eof = false

    init(fd: Int32, label: String) {
        let thread = Thread { [self] in self.drain(fd: fd) }
        thread.name = label
        thread.stackSize = 256 * 1024
        thread.start()
    }

    private func drain(fd: Int32) {
        let chunkSize = 64 * 1024
        let chunk = UnsafeMutableRawPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer {
            chunk.deallocate()
            close(fd)
        }
        while true {
            let n = read(fd, chunk, chunkSize)
            if n < 0 && errno == EINTR { continue }
            condition.lock()
            if n > 0 {
                buffer.append(contentsOf: UnsafeRawBufferPointer(start: chunk, count: n))
            } else {
                eof = true
            }
            condition.broadcast()
            condition.unlock()
            if n <= 0 { return }
        }
    }

    var text: String {
        condition.lock(); defer { condition.unlock() }
        return String(decoding: buffer, as: UTF8.self)
    }

    func waitForEOF(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock(); defer { condition.unlock() }
        while !eof {
            if !condition.wait(until: deadline) { return eof }
        }
        return true
    }

    func readLine(timeout: Double) throws -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock(); defer { condition.unlock() }
        while true {
            if let nl = buffer[lineOffset...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[lineOffset..<nl], as: UTF8.self)
                lineOffset = nl + 1
                return line
            }
            if eof {
                if lineOffset < buffer.count {
                    let line = String(decoding: buffer[lineOffset...], as: UTF8.self)
                    lineOffset = buffer.count
                    return line
                }
                return nil
            }
            if !condition.wait(until: deadline) {
                let partial = String(decoding: buffer[lineOffset...], as: UTF8.self)
                throw ChildProcessError.timedOut(
                    "no complete line within \(timeout) s (partial: \(partial.debugDescription))")
            }
        }
    }
}

/// Glibc functions Swift does not import without `_GNU_SOURCE`, looked up at run time.
enum SpawnExtras {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32

    static let addCloseFromFn: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }
    static let addChdirFn: AddChdir? = dlsym(nil, "posix_spawn_file_actions_addchdir_np")
        .map { unsafeBitCast($0, to: AddChdir.self) }
    static let pipe2Fn: Pipe2? = dlsym(nil, "pipe2").map { unsafeBitCast($0, to: Pipe2.self) }

    static func addCloseFrom(_ actions: inout posix_spawn_file_actions_t, _ from: Int32) {
        if let addCloseFromFn { _ = addCloseFromFn(&actions, from) }
    }

    static func addChdir(_ actions: inout posix_spawn_file_actions_t, _ path: String) throws {
        guard let addChdirFn else {
            throw ChildProcessError.systemCallFailed(call: "posix_spawn_file_actions_addchdir_np", errno: ENOSYS)
        }
        let rc = path.withCString { addChdirFn(&actions, $0) }
        if rc != 0 { throw ChildProcessError.systemCallFailed(call: "posix_spawn_file_actions_addchdir_np", errno: rc) }
    }
}

/// A close-on-exec pipe: (read end, write end).
func makePipe() throws -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    if let pipe2 = SpawnExtras.pipe2Fn {
        guard pipe2(&fds, O_CLOEXEC) == 0 else {
            throw ChildProcessError.systemCallFailed(call: "pipe2", errno: errno)
        }
    } else {
        guard pipe(&fds) == 0 else { throw ChildProcessError.systemCallFailed(call: "pipe", errno: errno) }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
    }
    return (fds[0], fds[1])
}

/// The `PATH` used when an environment has none.
public let standardSearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/// Resolves `name` through the `PATH` of `environment` (a name containing `/`
/// is returned unchanged).
public func resolveExecutable(_ name: String, environment: [String: String]) throws -> String {
    if name.contains("/") { return name }
    let searchPath = environment["PATH"].flatMap { $0.isEmpty ? nil : $0 } ?? standardSearchPath
    for dir in searchPath.split(separator: ":", omittingEmptySubsequences: true) {
        let candidate = "\(dir)/\(name)"
        var st = stat()
        if stat(candidate, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, access(candidate, X_OK) == 0 {
            return candidate
        }
    }
    throw ChildProcessError.executableNotFound(name: name, searchPath: searchPath)
}

/// Whether a process group still has members that are not zombies.
func processGroupHasLiveMembers(_ pgid: pid_t) -> Bool {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return false }
    for entry in entries {
        guard let first = entry.utf8.first, first >= 48, first <= 57 else { continue }
        guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        // After "pid (comm) ": state ppid pgrp ...
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count >= 3, let pgrp = Int32(fields[2]) else { continue }
        if pgrp == pgid, fields[0] != "Z", fields[0] != "X" { return true }
    }
    return false
}

/// Seconds on the monotonic clock.
func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func sleepSeconds(_ seconds: Double) {
    guard seconds > 0 else { return }
    var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var remaining = timespec()
    while nanosleep(&ts, &remaining) == -1 && errno == EINTR { ts = remaining }
}
