// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import TypedValues

/// `--store`: durable Donate throughput and Search latency at growing store
/// sizes, with Ping to the same daemon measured alongside as the baseline.
///
/// Entries come from ``Corpus``, so that the four query kinds the targets name
/// exist at every size (one entry per size step holds two rare words).
struct StoreBench {
    let session: BenchSession
    let sizes: [Int]
    let samples: Int
    let progress: (String) -> Void

    struct Row {
        var label: String
        var figures: String
    }

    init(session: BenchSession, sizes: [Int], samples: Int, progress: @escaping (String) -> Void) {
        self.session = session
        self.sizes = sizes
        self.samples = samples
        self.progress = progress
    }

    private func donation(_ n: Int, title: String) -> [TypedValue] { Corpus.donation(n, title: title) }

    private func title(_ n: Int) -> String { Corpus.title(n) }

    private func donateMessage(_ arguments: [TypedValue]) throws -> Message {
        try session.message(Service.managerPath, Service.managerInterface, "Donate", arguments)
    }

    /// Sequential durable Donates: each waits for its reply (written and committed).
    private func sequentialDonates(from start: Int, count: Int) throws -> Double {
        let begin = monotonicNanoseconds()
        for n in start..<(start + count) {
            _ = try session.connection.call(donateMessage(donation(n, title: title(n))))
        }
        return Double(count) / (Double(monotonicNanoseconds() - begin) / 1e9)
    }

    /// Donates with `inFlight` calls outstanding at any time.
    private func pipelinedDonates(from start: Int, count: Int, inFlight: Int) throws -> Double {
        let connection = session.connection
        final class Counter: @unchecked Sendable { var done = 0; var failed: DBusFailure? }
        let counter = Counter()
        var next = start
        let end = start + count
        let begin = monotonicNanoseconds()
        func sendOne() throws {
            let n = next
            next += 1
            connection.callAsync(try donateMessage(donation(n, title: title(n))), timeoutMilliseconds: 30_000) { result in
                counter.done += 1
                if case .failure(let failure) = result { counter.failed = failure }
            }
        }
        while next < min(start + inFlight, end) { try sendOne() }
        while counter.done < count {
            let before = counter.done
            connection.readWriteDispatch(timeoutMilliseconds: 1000)
            for _ in before..<counter.done where next < end { try sendOne() }
            if let failed = counter.failed { throw failed }
        }
        return Double(count) / (Double(monotonicNanoseconds() - begin) / 1e9)
    }

    /// Fills the store up to `size` entries (untimed bulk: pipelined donations).
    private func fill(from start: Int, to size: Int) throws {
        guard size > start else { return }
        progress("filling the store to \(size) entries…")
        _ = try pipelinedDonates(from: start, count: size - start, inFlight: 32)
    }

    private func timedSearch(_ query: String, limit: UInt32) throws -> UInt64 {
        let message = try session.message(Service.managerPath, Service.managerInterface, "Search",
                                          [.string(query), .stringVariantDictionary([("limit", .uint32(limit))])])
        return try session.timedCall(message).nanoseconds
    }

    private func timedPing() throws -> UInt64 {
        try session.timedCall(try session.message(Service.managerPath, "org.freedesktop.DBus.Peer", "Ping")).nanoseconds
    }

    func run() throws -> [Row] {
        var rows: [Row] = []
        // The default per-app limit (1000) would trim this single app's entries: lift it, as a user may.
        _ = try session.call(Service.managerPath, "org.freedesktop.DBus.Properties", "Set",
                             [.string(Service.managerInterface), .string("MaxSavedPerApplication"), .variant(.uint32(0))])
        let throughputCount = 2000
        progress("durable Donate throughput: \(throughputCount) sequential, then \(throughputCount) with 16 in flight…")
        let sequential = try sequentialDonates(from: 0, count: throughputCount)
        let pipelined = try pipelinedDonates(from: throughputCount, count: throughputCount, inFlight: 16)
        rows.append(Row(label: "Donate, sequential", figures: String(format: "%8.0f calls/s (each reply after its commit)", sequential)))
        rows.append(Row(label: "Donate, 16 in flight", figures: String(format: "%8.0f calls/s", pipelined)))
        var filled = 2 * throughputCount
        for size in sizes {
            try fill(from: filled, to: size - 1)
            filled = max(filled, size - 1)
            // One entry with two rare words, so a rare two-word query has exactly one answer.
            _ = try session.connection.call(donateMessage(donation(filled, title: Corpus.rareTitle)))
            filled += 1
            let queries = Corpus.queries.map { ($0.kind, $0.ours, $0.limit) }
            var pings: [UInt64] = []
            var timings = Array(repeating: [UInt64](), count: queries.count)
            for round in 0..<(samples + samples / 10) {
                let ping = try timedPing()
                var these: [UInt64] = []
                for query in queries { these.append(try timedSearch(query.1, limit: query.2)) }
                guard round >= samples / 10 else { continue } // warm-up
                pings.append(ping)
                for (index, value) in these.enumerated() { timings[index].append(value) }
            }
            let pingSummary = LatencySummary(nanoseconds: pings)
            rows.append(Row(label: "\(size) entries: Ping", figures: String(format: "p50 %7.1f µs  p99 %7.1f µs", pingSummary.p50Us, pingSummary.p99Us)))
            for (index, query) in queries.enumerated() {
                let summary = LatencySummary(nanoseconds: timings[index])
                let pass = summary.p99Us <= 5000 ? "PASS" : "MISS"
                rows.append(Row(label: "\(size) entries: \(query.0)",
                                figures: String(format: "p50 %7.1f µs  p99 %7.1f µs  (%.1f× / %.1f× Ping)  p99 ≤ 5 ms %@",
                                                summary.p50Us, summary.p99Us, summary.p50Us / pingSummary.p50Us, summary.p99Us / pingSummary.p99Us, pass)))
            }
            let memory = BenchSession.memory(of: session.daemonPID)
            let disk = Self.directorySize(session.session.stateHome + "/useractivity")
            rows.append(Row(label: "\(size) entries: daemon RSS",
                            figures: String(format: "%.1f MiB (peak %.1f MiB); target ≤ 40 MiB at 100k", Double(memory?.rssKiB ?? 0) / 1024, Double(memory?.peakKiB ?? 0) / 1024)))
            rows.append(Row(label: "\(size) entries: store on disk",
                            figures: String(format: "%.1f MiB (database + WAL); target ≤ 150 MiB at 100k", Double(disk) / 1_048_576)))
        }
        return rows
    }

    static func directorySize(_ path: String) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return 0 }
        return names.reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: path + "/" + name)[.size] as? Int) ?? 0
            return total + size
        }
    }

    static func table(_ rows: [Row]) -> String {
        let width = rows.map(\.label.count).max() ?? 0
        return rows.map { $0.label.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.figures }.joined(separator: "\n")
    }
}
