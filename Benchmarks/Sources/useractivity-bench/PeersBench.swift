// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import TypedValues

/// A service answering the `(s, a{sv}) → o` CreateActivity call: our daemon,
/// or one of the two peers written for the bench (`bench/peers/`).
struct PeerTarget {
    /// Short key for JSON: "useractivityd", "libdbus", "gdbus", "libdbus-glib", "libdbus-glib-signals", "libdbus-signals".
    var key: String
    /// What the report calls it.
    var label: String
    var busName: String
    var managerPath: String
    var managerInterface: String
    var activityInterface: String
    var pid: Int32 = 0

    static let ours = PeerTarget(key: "useractivityd", label: "useractivityd (ours)", busName: Service.busName,
                                 managerPath: Service.managerPath, managerInterface: Service.managerInterface,
                                 activityInterface: Service.activityInterface)

    /// The C peer run with `--object-manager-signals`.
    static let libdbusWithSignalsKey = "libdbus-signals"
    /// The C peer run with `--glib`: libdbus driven by a GLib main loop, as ours is.
    static let libdbusOnGLibKey = "libdbus-glib"
    /// The C peer run with `--glib --object-manager-signals`.
    static let libdbusOnGLibWithSignalsKey = "libdbus-glib-signals"

    /// A peer from `bench/peers/`: same object layout, its own bus name.
    static func peer(key: String, label: String, busName: String) -> PeerTarget {
        PeerTarget(key: key, label: label, busName: busName, managerPath: "/org/example/BenchPeer",
                   managerInterface: "org.example.BenchPeer", activityInterface: "org.example.BenchPeer.Activity")
    }
}

struct PeerServiceFigures: Codable {
    var key: String
    var label: String
    var busName: String
    var pid: Int32
    var ping: LatencySummary
    var createActivity: LatencySummary
    /// CreateActivity p50 − Ping p50 to the same service: the service's own share.
    var serviceShareP50Us: Double
    /// CreateActivity and its Invalidate, `pipelineDepth` calls in flight from one connection.
    var pipelinedCallsPerSecond: Double
    var pipelinedCalls: Int
    var pipelinedSeconds: Double
    /// CPU per pipelined call (both kinds), in µs: the service, dbus-daemon and the bench client.
    var pipelinedServiceCpuUsPerCall: Double?
    var pipelinedBusCpuUsPerCall: Double?
    var pipelinedClientCpuUsPerCall: Double?
    var rssKibIdle: Int?
    var rssKibAfterLoad: Int?
    var peakRssKib: Int?
}

struct PeersFigures: Codable {
    var iterations: Int
    var warmup: Int
    var pipelineDepth: Int
    var pipelineCalls: Int
    var order: String
    var propertiesBytes: Int
    var services: [PeerServiceFigures]
    /// ours/libdbus CreateActivity p50 ratio in the first and second half of the rounds.
    var oursToLibdbusP50ByHalf: [Double]
    var oursToGdbusP50ByHalf: [Double]
}

/// `--peers`: CreateActivity round trips and pipelined throughput of our
/// daemon, the C libdbus peer and the GDBus peer, on one bus, from one client
/// connection, with Ping to each as the baseline, all interleaved.
struct PeersBench {
    let session: BenchSession
    var targets: [PeerTarget]
    let iterations: Int
    let warmup: Int
    let pipelineDepth: Int
    let pipelineCalls: Int
    let progress: (String) -> Void

    private let properties = DocumentActivity.properties(persistentIdentifier: "doc-7f3c2a9e-quarterly-report-q3")

    private func createMessage(_ target: PeerTarget) throws -> Message {
        try session.message(target.managerPath, target.managerInterface, "CreateActivity",
                            [.string(Fixture.activityType), properties], destination: target.busName)
    }

    private func pingMessage(_ target: PeerTarget) throws -> Message {
        try session.message(target.managerPath, "org.freedesktop.DBus.Peer", "Ping", destination: target.busName)
    }

    private func invalidateMessage(_ target: PeerTarget, reply: Message) throws -> Message {
        guard let path = try reply.arguments().first?.objectPathValue else {
            throw BenchError("\(target.label) answered CreateActivity with \(try reply.arguments()), not an object path")
        }
        return try session.message(path, target.activityInterface, "Invalidate", destination: target.busName)
    }

    /// Activates every target (the first Ping starts a peer) and records its PID and idle RSS.
    mutating func start() throws -> [Int?] {
        var idle: [Int?] = []
        for index in targets.indices {
            _ = try session.connection.call(pingMessage(targets[index]), timeoutMilliseconds: 30_000)
            targets[index].pid = try ProcessFigures.pid(of: targets[index].busName, session: session)
        }
        // Let each settle (lazy initialisation after the first call) before reading RSS.
        usleep(300_000)
        for target in targets { idle.append(BenchSession.memory(of: target.pid)?.rssKiB) }
        return idle
    }

    func run(idleRSS: [Int?]) throws -> PeersFigures {
        // One sample = one timed call; the kinds of sample are (target, ping|create).
        let kinds = targets.indices.flatMap { [($0, false), ($0, true)] }
        func sample(_ kind: (Int, Bool)) throws -> UInt64 {
            let target = targets[kind.0]
            let nanoseconds: UInt64
            if kind.1 {
                let (ns, reply) = try session.timedCall(try createMessage(target))
                _ = try session.connection.call(invalidateMessage(target, reply: reply))
                nanoseconds = ns
            } else {
                nanoseconds = try session.timedCall(try pingMessage(target)).nanoseconds
            }
            // Fence: whatever the service does after its reply (signals) is over before the next sample.
            _ = try session.connection.call(pingMessage(target))
            return nanoseconds
        }
        func rounds(_ count: Int, record: Bool) throws -> [[UInt64]] {
            var samples = [[UInt64]](repeating: [], count: kinds.count)
            for round in 0..<count {
                for offset in 0..<kinds.count {
                    let index = (round + offset) % kinds.count
                    let ns = try sample(kinds[index])
                    if record { samples[index].append(ns) }
                }
            }
            return samples
        }
        progress("peers: warm-up \(warmup) rounds, then \(iterations) rounds of Ping + CreateActivity to each of \(targets.map(\.label).joined(separator: ", "))")
        _ = try rounds(warmup, record: false)
        let samples = try rounds(iterations, record: true)

        // Pipelined: two passes, the second in reverse order, so a slow phase of
        // the machine does not land on one service only.
        progress("peers: pipelined CreateActivity (+ Invalidate), \(pipelineDepth) in flight, \(pipelineCalls) creations per service")
        var outcomes = [(calls: Int, seconds: Double, service: UInt64?, bus: UInt64?, client: UInt64?)](
            repeating: (0, 0, 0, 0, 0), count: targets.count)
        let order = Array(targets.indices) + targets.indices.reversed()
        for index in order {
            let target = targets[index]
            let half = pipelineCalls / 2
            let messages = try (0..<half).map { _ in try createMessage(target) }
            let serviceBefore = BenchSession.cpuNanoseconds(of: target.pid)
            let busBefore = BenchSession.cpuNanoseconds(of: session.bus.pid)
            let clientBefore = ProcessFigures.clientCPUNanoseconds
            let outcome = try Pipeline.run(session.connection, messages: messages, depth: pipelineDepth) { reply in
                // Invalidate calls carry no reply of interest.
                guard reply.signature == "o" else { return .none }
                return .call(try invalidateMessage(target, reply: reply))
            }
            func delta(_ before: UInt64?, _ after: UInt64?) -> UInt64? {
                guard let before, let after, after >= before else { return nil }
                return after - before
            }
            let previous = outcomes[index]
            func add(_ a: UInt64?, _ b: UInt64?) -> UInt64? { a.flatMap { a in b.map { a + $0 } } }
            outcomes[index] = (previous.calls + outcome.calls, previous.seconds + outcome.seconds,
                               add(previous.service, delta(serviceBefore, BenchSession.cpuNanoseconds(of: target.pid))),
                               add(previous.bus, delta(busBefore, BenchSession.cpuNanoseconds(of: session.bus.pid))),
                               add(previous.client, delta(clientBefore, ProcessFigures.clientCPUNanoseconds)))
            _ = try session.connection.call(pingMessage(target))
        }

        var services: [PeerServiceFigures] = []
        for (index, target) in targets.enumerated() {
            let ping = LatencySummary(nanoseconds: samples[2 * index])
            let create = LatencySummary(nanoseconds: samples[2 * index + 1])
            let outcome = outcomes[index]
            func perCall(_ ns: UInt64?) -> Double? { ns.map { Double($0) / Double(outcome.calls) / 1000 } }
            let memory = BenchSession.memory(of: target.pid)
            services.append(PeerServiceFigures(
                key: target.key, label: target.label, busName: target.busName, pid: target.pid,
                ping: ping, createActivity: create, serviceShareP50Us: create.p50Us - ping.p50Us,
                pipelinedCallsPerSecond: Double(outcome.calls) / outcome.seconds,
                pipelinedCalls: outcome.calls, pipelinedSeconds: outcome.seconds,
                pipelinedServiceCpuUsPerCall: perCall(outcome.service),
                pipelinedBusCpuUsPerCall: perCall(outcome.bus),
                pipelinedClientCpuUsPerCall: perCall(outcome.client),
                rssKibIdle: idleRSS.indices.contains(index) ? idleRSS[index] : nil,
                rssKibAfterLoad: memory?.rssKiB, peakRssKib: memory?.peakKiB))
        }
        func byHalf(_ a: Int, _ b: Int) -> [Double] {
            let x = samples[2 * a + 1], y = samples[2 * b + 1]
            let hx = x.count / 2, hy = y.count / 2
            guard hx > 0, hy > 0 else { return [] }
            return [LatencySummary(nanoseconds: Array(x[..<hx])).p50Us / LatencySummary(nanoseconds: Array(y[..<hy])).p50Us,
                    LatencySummary(nanoseconds: Array(x[hx...])).p50Us / LatencySummary(nanoseconds: Array(y[hy...])).p50Us]
        }
        let libdbus = targets.firstIndex { $0.key == "libdbus" }
        let gdbus = targets.firstIndex { $0.key == "gdbus" }
        return PeersFigures(
            iterations: iterations, warmup: warmup, pipelineDepth: pipelineDepth, pipelineCalls: pipelineCalls,
            order: "interleaved: Ping and CreateActivity to every service once per round, the first one rotating; an untimed Ping to the same service after each sample; an untimed Invalidate after each CreateActivity",
            propertiesBytes: properties.marshalledSize, services: services,
            oursToLibdbusP50ByHalf: libdbus.map { byHalf(0, $0) } ?? [],
            oursToGdbusP50ByHalf: gdbus.map { byHalf(0, $0) } ?? [])
    }
}
