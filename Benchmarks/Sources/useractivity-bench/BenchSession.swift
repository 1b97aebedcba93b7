// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import TypedValues
import UserActivityInterfaces

/// Names of the service under test (the spec's fixed contract).
enum Service {
    static let busName = Interfaces.busName
    static let managerPath = Interfaces.managerPath
    static let managerInterface = Interfaces.managerName
    static let activityInterface = Interfaces.activityName
    static let handlerInterface = Interfaces.handlerName
}

/// The fixture app every scenario acts for.
enum Fixture {
    static let appID = "com.example.Bench"
    static let activityType = "com.example.Bench.edit-document"
}

/// One private bus with the daemon D-Bus-activated on it, and the single
/// client connection every scenario shares (so all kinds of call see the same
/// socket, the same bus routing and the same daemon state).
final class BenchSession {
    let daemonPath: String
    let session: SessionEnvironment
    let bus: PrivateBus
    let connection: Connection
    /// Filled by ``start()``: the activated daemon's process.
    private(set) var daemonPID: Int32 = 0

    init(daemonPath: String) throws {
        self.daemonPath = daemonPath
        session = try SessionEnvironment(prefix: "uabench-")
        try session.writeDesktopEntry(appID: Fixture.appID, types: [Fixture.activityType], name: "Bench")
        bus = try PrivateBus(environment: session)
        InterruptCleanup.track(processGroup: bus.pid, directories: [session.root, bus.directory.path])
        // Activation, not spawning: the daemon then starts the way a desktop
        // session starts it, and the first call below proves activation works.
        try bus.installService(name: Service.busName, exec: shellQuote(daemonPath))
        connection = try Connection.bus(address: bus.address)
    }

    /// Activates the daemon (through the first call), names the app for this
    /// connection and finds the daemon's PID.
    func start() throws {
        // Generous timeout: this call waits for activation (a cold release
        // binary, a fresh SQLite state directory).
        _ = try call(Service.managerPath, Service.managerInterface, "RegisterApplication",
                     [.string(Fixture.appID)], timeoutMilliseconds: 30_000)
        let reply = try call("/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
                             [.string(Service.busName)], destination: "org.freedesktop.DBus")
        guard let pid = try reply.arguments().first?.uint32Value else {
            throw BenchError("GetConnectionUnixProcessID answered \(try reply.arguments()) for \(Service.busName)")
        }
        daemonPID = Int32(bitPattern: pid)
    }

    /// Connections that follow every signal of the service, each read by its own thread.
    private var subscribers: [(connection: Connection, done: DispatchSemaphore)] = []
    private let stopping = NSLock()
    private var isStopping = false

    /// Opens `count` unconfined connections that match all of the service's
    /// signals and call its `Subscribe` (it sends its activity signals only
    /// to connections that asked), each drained by a thread until ``stop()``.
    func addSubscribers(_ count: Int) throws {
        for _ in 0..<count {
            let subscriber = try Connection.bus(address: bus.address)
            try subscriber.addMatch("type='signal',sender='\(Service.busName)'")
            // The C peers broadcast their ObjectManager signals: these reach the
            // same listeners, so that a peer's baseline pays for them as ours does.
            try subscriber.addMatch("type='signal',interface='org.freedesktop.DBus.ObjectManager'")
            do {
                _ = try subscriber.call(message(Service.managerPath, Service.managerInterface, "Subscribe", []))
            } catch let failure as DBusFailure where failure.name == "org.freedesktop.DBus.Error.UnknownMethod" {
                // An older daemon (bench/signal-fanout.sh compares builds) sent its signals to every caller.
                _ = try subscriber.call(message(Service.managerPath, "org.freedesktop.DBus.Properties", "Get",
                                                [.string(Service.managerInterface), .string("Version")]))
            }
            let done = DispatchSemaphore(value: 0)
            subscribers.append((subscriber, done))
            let box = UncheckedSendable((self, subscriber, done))
            Thread.detachNewThread {
                let (session, connection, done) = box.value
                while !session.stopping.withLock({ session.isStopping }) { connection.readWriteDispatch(timeoutMilliseconds: 20) }
                done.signal()
            }
        }
    }

    func stop() {
        stopping.withLock { isStopping = true }
        for subscriber in subscribers {
            subscriber.done.wait()
            subscriber.connection.close()
        }
        subscribers = []
        connection.close()
        bus.stop()
        InterruptCleanup.untrack()
    }

    // MARK: Calls

    /// A method call to the service (or `destination`), arguments appended.
    func message(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue] = [],
                 destination: String = Service.busName) throws -> Message {
        let message = Message.methodCall(destination: destination, path: path, interface: interface, member: member)
        try message.append(arguments)
        return message
    }

    /// An untimed blocking call, for set-up and bookkeeping between samples.
    @discardableResult
    func call(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue] = [],
              destination: String = Service.busName, timeoutMilliseconds: Int32 = 25_000) throws -> Message {
        try connection.call(message(path, interface, member, arguments, destination: destination),
                            timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Times exactly one blocking round trip of a message built beforehand:
    /// building the body (a TypedValue tree walked into libdbus) and decoding
    /// the reply are client costs the same for any server, so they stay out.
    @inline(__always)
    func timedCall(_ message: Message) throws -> (nanoseconds: UInt64, reply: Message) {
        let start = monotonicNanoseconds()
        let reply = try connection.call(message)
        let end = monotonicNanoseconds()
        return (end &- start, reply)
    }

    /// An untimed Peer.Ping to the daemon. Its reply comes after everything
    /// the daemon sent for the previous call (it serves one message at a time,
    /// and the bus keeps each sender's order), so once it is back, that call's
    /// after-reply signals have been emitted and routed.
    func fence() throws {
        _ = try connection.call(message(Service.managerPath, "org.freedesktop.DBus.Peer", "Ping"))
    }

    // MARK: Processes

    /// `VmRSS`/`VmHWM` of a process, in KiB (nil when it is gone).
    static func memory(of pid: Int32) -> (rssKiB: Int, peakKiB: Int)? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
                // "VmRSS:\t   12345 kB": tabs and spaces before the number.
                return line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
            }
            return nil
        }
        guard let rss = field("VmRSS") else { return nil }
        return (rss, field("VmHWM") ?? rss)
    }

    /// User + system CPU seconds a process has used (`/proc/PID/stat` fields 14 and 15).
    static func cpuSeconds(of pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // After "pid (comm) " the fields start at number 3 (state).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Nanoseconds on a CPU summed over a process's live threads
    /// (`/proc/PID/task/*/schedstat`, first field): fine-grained where
    /// `/proc/PID/stat` counts 10 ms ticks, so a few thousand calls suffice.
    static func cpuNanoseconds(of pid: Int32) -> UInt64? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var total: UInt64 = 0
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8),
                  let first = text.split(separator: " ").first, let ns = UInt64(first) else { continue }
            total += ns
        }
        return total
    }

    /// The 1-, 5- and 15-minute load averages.
    static func loadAverage() -> [Double] {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return [] }
        return text.split(separator: " ").prefix(3).compactMap { Double($0) }
    }

    static var onlineProcessors: Int { Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
