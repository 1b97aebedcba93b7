// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Many calls in flight from one connection: a window of `depth` outstanding
/// calls, refilled as replies arrive, all dispatched on the calling thread.
enum Pipeline {
    /// What a reply may ask for: nothing more, or one follow-up call (for
    /// example the Invalidate of an activity just created), which joins the
    /// window like any other call.
    enum FollowUp {
        case none
        case call(Message)
    }

    struct Outcome {
        /// Calls answered, follow-ups included.
        var calls: Int
        var seconds: Double
        var callsPerSecond: Double { Double(calls) / seconds }
    }

    /// Sends `messages` (built beforehand, so building them is not timed),
    /// at most `depth` outstanding, and returns once every call and follow-up
    /// has been answered. An error reply ends the run with that error.
    static func run(_ connection: Connection, messages: [Message], depth: Int, timeoutMilliseconds: Int32 = 60_000,
                    followUp: @escaping (Message) throws -> FollowUp = { _ in .none }) throws -> Outcome {
        final class State: @unchecked Sendable {
            var outstanding = 0
            var answered = 0
            var failure: Error?
            var queued: [Message] = []
        }
        let state = State()
        var next = 0
        func send(_ message: Message) {
            state.outstanding += 1
            connection.callAsync(message, timeoutMilliseconds: timeoutMilliseconds) { result in
                state.outstanding -= 1
                state.answered += 1
                switch result {
                case .failure(let failure):
                    if state.failure == nil { state.failure = failure }
                case .success(let reply):
                    do {
                        if case .call(let more) = try followUp(reply) { state.queued.append(more) }
                    } catch {
                        if state.failure == nil { state.failure = error }
                    }
                }
            }
        }
        let begin = monotonicNanoseconds()
        while true {
            // Follow-ups first: they free what the earlier calls took (live activities).
            while state.outstanding < depth, !state.queued.isEmpty { send(state.queued.removeFirst()) }
            while state.outstanding < depth, next < messages.count {
                send(messages[next])
                next += 1
            }
            if let failure = state.failure { throw failure }
            if state.outstanding == 0 && state.queued.isEmpty && next == messages.count { break }
            guard connection.readWriteDispatch(timeoutMilliseconds: 1000) else {
                throw BenchError("the bus connection closed during a pipelined run")
            }
        }
        let seconds = Double(monotonicNanoseconds() - begin) / 1e9
        return Outcome(calls: state.answered, seconds: seconds)
    }
}

/// Process figures read from `/proc`.
enum ProcessFigures {
    /// Bytes allocated on disk under `path` (files of every depth), as `du` counts them.
    static func diskUsage(_ path: String) -> Int {
        var total = 0
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        total += Int(info.st_blocks) * 512
        if (info.st_mode & S_IFMT) == S_IFDIR,
           let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
            for name in names { total += diskUsage(path + "/" + name) }
        }
        return total
    }

    /// The PID that owns `name` on the bus.
    static func pid(of name: String, session: BenchSession) throws -> Int32 {
        let reply = try session.call("/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                                     [.string(name)], destination: "org.freedesktop.DBus")
        guard let pid = try reply.arguments().first?.uint32Value else {
            throw BenchError("GetConnectionUnixProcessID answered \(try reply.arguments()) for \(name)")
        }
        return Int32(bitPattern: pid)
    }

    /// Whether `name` has an owner on the bus.
    static func hasOwner(_ name: String, session: BenchSession) throws -> Bool {
        let reply = try session.call("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                                     [.string(name)], destination: "org.freedesktop.DBus")
        return try reply.arguments().first?.boolValue ?? false
    }

    /// CPU nanoseconds of the calling thread: the client making the calls
    /// (not the `--subscribers` threads, which count what listening costs).
    static var clientCPUNanoseconds: UInt64? {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return nil }
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
