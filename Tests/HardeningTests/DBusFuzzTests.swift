// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// Thousands of generated calls against the BUILT daemon, started by D-Bus
/// activation, from several connections at once (see ``CallFuzzer``).
///
/// Throughout: the same daemon process serves (its PID never changes),
/// Ping is answered within a second, every error has a documented name,
/// and the resident size stays within twice its size after a warm-up that
/// runs the same generator (so the first huge messages, caches and pools
/// are in the baseline; what grows after that is a leak). Open file
/// descriptors are tracked the same way.
///
/// Default: about 25 s. `FUZZ_SECONDS=<s>` runs longer; `FUZZ_ITERATIONS=<n>`
/// runs until n calls were made, however long that takes. `FUZZ_SEED=<n>`
/// changes the seed (the default is fixed, so a failure reproduces).
@Suite("Fuzzing over D-Bus")
struct DBusFuzzTests {
    static let workers = 6

    /// What the workers and the watchdog share: everything behind one lock
    /// (the watchdog reads `calls` while the workers count; ThreadSanitizer).
    final class State: @unchecked Sendable {
        private let lock = NSLock()
        private var _stop = false
        private var _calls = 0
        private var recentPaths: [String] = []
        private var savedIDs: [String] = []
        private var _shapes: [String: Int] = [:]
        private var _outcomes: [String: Int] = [:]
        private var _violations: [String] = []
        private var _violationCount = 0

        var shouldStop: Bool { lock.withLock { _stop } }
        func stop() { lock.withLock { _stop = true } }

        var calls: Int { lock.withLock { _calls } }
        var shapes: [String: Int] { lock.withLock { _shapes } }
        var outcomes: [String: Int] { lock.withLock { _outcomes } }
        var violations: [String] { lock.withLock { _violations } }
        var violationCount: Int { lock.withLock { _violationCount } }

        func violation(_ text: String) {
            lock.withLock {
                _violationCount += 1
                if _violations.count < 25 { _violations.append(text) }
            }
        }

        func record(shape: String, outcome: String) -> Int {
            lock.withLock {
                _calls += 1
                _shapes[shape, default: 0] += 1
                _outcomes[outcome, default: 0] += 1
                return _calls
            }
        }

        func remember(path: String) {
            lock.withLock {
                recentPaths.append(path)
                if recentPaths.count > 64 { recentPaths.removeFirst(16) }
            }
        }

        func remember(savedID: String) {
            lock.withLock {
                savedIDs.append(savedID)
                if savedIDs.count > 64 { savedIDs.removeFirst(16) }
            }
        }

        var paths: [String] { lock.withLock { recentPaths } }
        var saved: [String] { lock.withLock { savedIDs } }
    }

    @Test("Random members, signatures and values from 6 connections: same PID, Ping answered, documented errors only, RSS < 2× warmed-up")
    func randomCallsFromSeveralConnections() throws {
        let environment = ProcessInfo.processInfo.environment
        let iterationTarget = environment["FUZZ_ITERATIONS"].flatMap { Int($0) }
        let budget = iterationTarget == nil ? environment["FUZZ_SECONDS"].flatMap { Double($0) } ?? 25 : .infinity
        let seed = environment["FUZZ_SEED"].flatMap { UInt64($0) } ?? 20_251_121

        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let state = State()
        let start = Date()
        let warmUpEnds = iterationTarget == nil ? budget * 0.25 : .infinity
        let warmUpCalls = iterationTarget.map { $0 / 4 } ?? .max
        let devNull = open("/dev/null", O_RDONLY)
        defer { close(devNull) }
        let address = daemon.bus.address

        let group = DispatchGroup()
        for worker in 0..<Self.workers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                Self.work(worker: worker, seed: seed, address: address, fileDescriptor: devNull, state: state,
                          until: { calls in
                              if let iterationTarget { return calls >= iterationTarget }
                              return seconds(since: start) >= budget
                          })
            }
        }

        // The watchdog: Ping, PID, RSS and descriptors while the workers run.
        let probe = try daemon.connect()
        var baselineRSS: Int?
        var baselineFDs = 0
        var peakRSS = 0
        var slowestPing = 0.0
        var pings = 0
        var samples: [(Double, Int)] = []
        while group.wait(timeout: .now() + 0.2) == .timedOut {
            pings += 1
            // A liveness guard, not a latency measure: the fuzz calls include
            // ForgetAll/ForgetRange, whose secure deletion and WAL checkpoint
            // take the loop for a moment, and a loaded machine stretches that.
            if let roundTrip = probe.ping(timeoutMilliseconds: 10_000) {
                slowestPing = max(slowestPing, roundTrip)
            } else {
                state.violation("Ping got no answer within 10 s at \(String(format: "%.1f", seconds(since: start))) s")
            }
            if pings % 5 == 0, try daemon.daemonPID(using: probe) != pid {
                state.violation("the daemon is no longer PID \(pid) (it exited or was replaced)\n\(daemon.logTail())")
                state.stop()
            }
            guard let rss = ProcessProbe.residentKiB(pid) else { continue }
            samples.append((seconds(since: start), rss))
            let warmedUp = seconds(since: start) >= warmUpEnds || state.calls >= warmUpCalls
            if warmedUp && baselineRSS == nil {
                baselineRSS = rss
                baselineFDs = ProcessProbe.openDescriptors(pid)
            } else if let baselineRSS, warmedUp {
                peakRSS = max(peakRSS, rss)
                // AddressSanitizer keeps freed blocks in a quarantine of up to
                // 256 MiB (its default quarantine_size_mb), which RSS counts:
                // under it the bound allows that much more, and still catches
                // growth without end.
                let quarantine = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil ? 256 * 1024 : 0
                if rss > 2 * baselineRSS + quarantine {
                    state.violation("RSS \(rss) KiB is over twice the warmed-up \(baselineRSS) KiB (+ \(quarantine) KiB of sanitizer quarantine)")
                    state.stop()
                }
            }
        }
        let elapsed = seconds(since: start)
        let finalFDs = ProcessProbe.openDescriptors(pid)

        let rate = Double(state.calls) / elapsed
        print("""
        D-Bus fuzz: \(state.calls) calls in \(String(format: "%.1f", elapsed)) s (\(Int(rate))/s) from \(Self.workers) connections, seed \(seed)
          slowest Ping \(String(format: "%.1f", slowestPing * 1000)) ms over \(pings) pings; RSS warmed-up \(baselineRSS ?? 0) KiB, peak after \(peakRSS) KiB; fds \(baselineFDs) → \(finalFDs)
          shapes: \(state.shapes.sorted { $0.value > $1.value }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
          outcomes: \(state.outcomes.sorted { $0.value > $1.value }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        """)

        for text in state.violations { Issue.record(Comment(rawValue: text)) }
        #expect(state.violationCount == 0, "\(state.violationCount) violations; the first are recorded above")
        #expect(state.calls >= 1000, "only \(state.calls) calls in \(elapsed) s")

        if state.violationCount > 0 || (try? daemon.daemonPID(using: probe)) != pid {
            print(daemon.logTail(80))
        }

        // Still the same process, still serving everything.
        #expect(try daemon.daemonPID(using: probe) == pid)
        #expect(probe.ping() != nil)
        let app = try daemon.connect()
        _ = try app.manager("RegisterApplication", [.string(UA.editor)])
        let path = try app.create(app: nil, [("title", .string("after the storm"))], becomeCurrent: true)
        #expect(try app.property(UA.managerPath, "CurrentActivity", interface: UA.manager) == .objectPath(path))
        let savedID = try app.donate(app: nil, [("title", .string("survivor quokka")), ("eligible-for-search", .boolean(true))])
        #expect(try app.search("survivor quokka").contains { $0.savedID == savedID } || savedID.isEmpty,
                "a donation after fuzzing can be found (empty only when the fuzzer paused saving)")
        if baselineFDs > 0 {
            #expect(finalFDs <= baselineFDs + 16, "open descriptors went from \(baselineFDs) after warm-up to \(finalFDs)")
        }
        let zombies = Self.zombieChildren(of: pid)
        #expect(zombies <= 2, "\(zombies) unreaped children of the daemon (apps it launched for continuations)")

    }

    /// One fuzzing connection (reopened every few hundred calls, so that
    /// connection teardown is fuzzed too and live activities do not pile up).
    static func work(worker: Int, seed: UInt64, address: String, fileDescriptor: Int32, state: State, until done: (Int) -> Bool) {
        var fuzzer = CallFuzzer(seed: seed &+ UInt64(worker) &* 7919, fileDescriptor: fileDescriptor)
        var client: BusClient?
        var ownPaths: [String] = []
        var callsLeftOnConnection = 0
        while !state.shouldStop {
            if client == nil || callsLeftOnConnection <= 0 {
                client?.close()
                client = try? BusClient(address: address)
                ownPaths = []
                callsLeftOnConnection = fuzzer.input.int(50...400)
                guard client != nil else {
                    state.violation("worker \(worker) could not connect to the bus")
                    return
                }
            }
            guard let connection = client?.connection else { return }
            callsLeftOnConnection -= 1
            let call = fuzzer.next(livePaths: ownPaths + state.paths, savedIDs: state.saved)
            // The kernel passes at most 253 descriptors in one message (and a
            // stock session bus 16): more would only get this client disconnected.
            if call.arguments.reduce(0, { $0 + $1.fileDescriptorCount }) > 64 { continue }
            let message = Message.methodCall(destination: UA.busName, path: call.path, interface: call.interface, member: call.member)
            do {
                try message.append(call.arguments)
            } catch {
                _ = state.record(shape: call.shape, outcome: "not sendable")
                continue
            }
            if let trace = Self.trace {
                let line = "\(worker) \(call.shape) \(call.member) \(call.path) (\(call.arguments.map(\.signature).joined())) \(call.arguments.map { String(describing: $0).prefix(300) })\n"
                trace.lock.withLock { trace.handle.write(Data(line.utf8)) }
            }
            var outcome = "ok"
            if call.expectsReply {
                message.expectsReply = true
                do {
                    let reply = try connection.call(message, timeoutMilliseconds: call.timeoutMilliseconds)
                    let arguments = (try? reply.arguments()) ?? []
                    if call.interface == UA.manager && (call.member == "CreateActivity" || call.member == "BecomeCurrent"),
                       let path = arguments.first?.objectPathValue {
                        ownPaths.append(path)
                        state.remember(path: path)
                    }
                    if call.member == "Donate", let id = arguments.first?.stringValue, !id.isEmpty { state.remember(savedID: id) }
                    if call.member == "Invalidate" { ownPaths.removeAll { $0 == call.path } }
                } catch {
                    outcome = error.name
                    if let trace = Self.trace {
                        trace.lock.withLock { trace.handle.write(Data("\(worker) -> \(error.name)\n".utf8)) }
                    }
                    if error.name == "org.freedesktop.DBus.Error.NoReply" {
                        state.violation("\(call.shape) (\(call.member) on \(call.path)) got no reply within \(call.timeoutMilliseconds) ms")
                    } else if !UA.documentedErrors.contains(error.name) {
                        state.violation("\(call.shape): undocumented error \(error.name): \(error.message.prefix(300))")
                    }
                }
            } else {
                message.expectsReply = false
                connection.send(message)
                connection.flush()
            }
            if done(state.record(shape: call.shape, outcome: outcome)) { state.stop() }
        }
        client?.close()
    }

    /// `FUZZ_TRACE=<file>`: every call is written there before it is sent (to find the one that did harm).
    final class Trace: @unchecked Sendable {
        let handle: FileHandle
        let lock = NSLock()
        init?(path: String?) {
            guard let path, FileManager.default.createFile(atPath: path, contents: nil),
                  let handle = FileHandle(forWritingAtPath: path) else { return nil }
            self.handle = handle
        }
    }
    static let trace = Trace(path: ProcessInfo.processInfo.environment["FUZZ_TRACE"])

    /// Zombie children of `pid` (launched apps nobody reaped).
    static func zombieChildren(of pid: pid_t) -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        var count = 0
        for entry in entries where entry.first?.isNumber == true {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 2, fields[0] == "Z", Int32(fields[1]) == pid { count += 1 }
        }
        return count
    }
}

extension TypedValue {
    /// How many `h` values the tree holds.
    var fileDescriptorCount: Int {
        switch self {
        case .unixFD: return 1
        case .variant(let inner): return inner.fileDescriptorCount
        case .array(_, let elements), .structure(let elements): return elements.reduce(0) { $0 + $1.fileDescriptorCount }
        case .dictionary(_, _, let entries): return entries.reduce(0) { $0 + $1.key.fileDescriptorCount + $1.value.fileDescriptorCount }
        default: return 0
        }
    }
}
