// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Everything one run measured; the table and `--json` both print this.
struct BenchReport: Codable {
    var iterations: Int
    var warmup: Int
    var cpuSamples: Int
    var fence: Bool
    var order: String
    var baseline: String
    var scenarios: [ScenarioFigures]
    var daemon: DaemonFigures
    var noise: NoiseFigures
    /// Every target (p50 and p99 ratios) met; true when no scenario has one.
    var allTargetsMet: Bool
}

struct ScenarioFigures: Codable {
    var name: String
    var timed: String
    var latency: LatencySummary
    var p50Ratio: Double
    var p99Ratio: Double
    var maxRatio: Double?
    /// CPU time per sample from the separate, non-interleaved pass (bookkeeping
    /// calls such as CreateActivity's Invalidate included); nil when skipped.
    /// p50 ratio in the first and the second half of the rounds: the rounds
    /// interleave, so both halves saw the same machine; a verdict that flips
    /// between them is noise, not the daemon.
    var p50RatioByHalf: [Double]
    var daemonCpuUsPerCall: Double?
    var busCpuUsPerCall: Double?
    /// The calling client's thread (signals it is sent included).
    var clientCpuUsPerCall: Double?
    var p50Pass: Bool?
    var p99Pass: Bool?
    /// In the order the scenario gave them.
    var facts: [Fact]

    struct Fact: Codable {
        var name: String
        var value: String
    }
}

struct DaemonFigures: Codable {
    var path: String
    var pid: Int32
    var rssKibAfterStart: Int?
    var rssKibAfterRun: Int?
    var peakRssKib: Int?
    /// CPU seconds the daemon used during the timed rounds (bookkeeping calls included).
    var cpuSecondsTimedPhase: Double?
    /// The same for dbus-daemon, which carries every message twice.
    var busCpuSecondsTimedPhase: Double?
    var wallSecondsTimedPhase: Double
}

struct NoiseFigures: Codable {
    var processors: Int
    var loadAverageBefore: [Double]
    var loadAverageAfter: [Double]
    var baselineP50FirstHalfUs: Double
    var baselineP50SecondHalfUs: Double
    /// |first − second| / overall p50 of the baseline, in percent.
    var baselineHalvesSpreadPercent: Double
    var note: String
}

/// Runs the selected scenarios interleaved and summarises them.
struct Runner {
    let options: BenchOptions
    let scenarios: [Scenario]
    let progress: (String) -> Void

    func run(daemonPath: String) throws -> BenchReport {
        let loadBefore = BenchSession.loadAverage()
        progress("starting a private bus; useractivityd = \(daemonPath)")
        let session = try BenchSession(daemonPath: daemonPath)
        do {
            let report = try measure(session, daemonPath: daemonPath, loadBefore: loadBefore)
            session.stop()
            return report
        } catch {
            InterruptCleanup.parkIfInterrupted()
            // The daemon's own words usually say why a call failed.
            let log = session.bus.log.trimmingCharacters(in: .whitespacesAndNewlines)
            session.stop()
            if !log.isEmpty { progress("--- bus and daemon log ---\n\(log)") }
            throw error
        }
    }

    private func measure(_ session: BenchSession, daemonPath: String, loadBefore: [Double]) throws -> BenchReport {
        try session.start()
        try session.addSubscribers(options.subscribers)
        let pid = session.daemonPID
        let rssAfterStart = BenchSession.memory(of: pid)?.rssKiB
        progress("useractivityd is pid \(pid); scenarios: \(scenarios.map(\.name).joined(separator: ", "))")

        let benchmarks = scenarios.map { $0.make() }
        for benchmark in benchmarks { try benchmark.setUp(session) }

        progress("warm-up: \(options.warmup) rounds")
        _ = try rounds(options.warmup, benchmarks, session, record: false)

        progress("measuring: \(options.iterations) rounds")
        let cpuBefore = BenchSession.cpuSeconds(of: pid)
        let busCPUBefore = BenchSession.cpuSeconds(of: session.bus.pid)
        let wallStart = monotonicNanoseconds()
        let samples = try rounds(options.iterations, benchmarks, session, record: true)
        let wallSeconds = Double(monotonicNanoseconds() - wallStart) / 1e9
        let cpuAfter = BenchSession.cpuSeconds(of: pid)
        let busCPUAfter = BenchSession.cpuSeconds(of: session.bus.pid)
        let memory = BenchSession.memory(of: pid)
        let loadAfter = BenchSession.loadAverage()

        // CPU cost per call: a pass per scenario, after the latency rounds so
        // it cannot disturb them. Interleaving would mix the scenarios' costs.
        var cpuPerCall: [(daemon: Double?, bus: Double?, client: Double?)] = Array(repeating: (nil, nil, nil), count: benchmarks.count)
        if options.cpuSamples > 0 {
            progress("CPU pass: \(options.cpuSamples) calls per scenario")
            for (index, benchmark) in benchmarks.enumerated() {
                let daemonBefore = BenchSession.cpuNanoseconds(of: pid)
                let busBefore = BenchSession.cpuNanoseconds(of: session.bus.pid)
                let clientBefore = ProcessFigures.clientCPUNanoseconds
                for _ in 0..<options.cpuSamples { _ = try benchmark.sample(session) }
                let clientAfter = ProcessFigures.clientCPUNanoseconds
                let daemonAfter = BenchSession.cpuNanoseconds(of: pid)
                let busAfter = BenchSession.cpuNanoseconds(of: session.bus.pid)
                func perCall(_ before: UInt64?, _ after: UInt64?) -> Double? {
                    guard let before, let after, after >= before else { return nil }
                    return Double(after - before) / Double(options.cpuSamples) / 1000
                }
                cpuPerCall[index] = (perCall(daemonBefore, daemonAfter), perCall(busBefore, busAfter), perCall(clientBefore, clientAfter))
            }
        }

        for benchmark in benchmarks { try benchmark.tearDown(session) }

        // Figures. `ScenarioCatalog.select` keeps the baseline first.
        precondition(scenarios.first?.name == ScenarioCatalog.baseline.name, "the baseline must be scenario 0")
        let baselineSamples = samples[0]
        let baseline = LatencySummary(nanoseconds: baselineSamples)
        let half = baselineSamples.count / 2
        func halves(_ values: [UInt64]) -> [LatencySummary] {
            half > 0 ? [LatencySummary(nanoseconds: Array(values[..<half])), LatencySummary(nanoseconds: Array(values[half...]))]
                : [LatencySummary(nanoseconds: values), LatencySummary(nanoseconds: values)]
        }
        let baselineHalves = halves(baselineSamples)
        var figures: [ScenarioFigures] = []
        for (index, scenario) in scenarios.enumerated() {
            let latency = LatencySummary(nanoseconds: samples[index])
            let byHalf = zip(halves(samples[index]), baselineHalves).map { $0.p50Us / $1.p50Us }
            let p50Ratio = latency.p50Us / baseline.p50Us
            let p99Ratio = latency.p99Us / baseline.p99Us
            let facts = benchmarks[index].facts
            figures.append(ScenarioFigures(
                name: scenario.name, timed: scenario.timed, latency: latency,
                p50Ratio: p50Ratio, p99Ratio: p99Ratio, maxRatio: scenario.maxRatioToBaseline, p50RatioByHalf: byHalf,
                daemonCpuUsPerCall: cpuPerCall[index].daemon, busCpuUsPerCall: cpuPerCall[index].bus,
                clientCpuUsPerCall: cpuPerCall[index].client,
                p50Pass: scenario.maxRatioToBaseline.map { p50Ratio <= $0 },
                p99Pass: scenario.maxRatioToBaseline.map { p99Ratio <= $0 },
                facts: facts.map { ScenarioFigures.Fact(name: $0.0, value: $0.1) }))
        }

        let firstHalf = baselineHalves[0].p50Us
        let secondHalf = baselineHalves[1].p50Us
        let spread = abs(firstHalf - secondHalf) / baseline.p50Us * 100
        let noise = NoiseFigures(
            processors: BenchSession.onlineProcessors, loadAverageBefore: loadBefore, loadAverageAfter: loadAfter,
            baselineP50FirstHalfUs: firstHalf, baselineP50SecondHalfUs: secondHalf,
            baselineHalvesSpreadPercent: spread,
            note: Self.noiseNote(spread: spread, load: loadBefore.first ?? 0, processors: BenchSession.onlineProcessors))

        let daemon = DaemonFigures(
            path: daemonPath, pid: pid, rssKibAfterStart: rssAfterStart, rssKibAfterRun: memory?.rssKiB,
            peakRssKib: memory?.peakKiB,
            cpuSecondsTimedPhase: cpuBefore.flatMap { before in cpuAfter.map { $0 - before } },
            busCpuSecondsTimedPhase: busCPUBefore.flatMap { before in busCPUAfter.map { $0 - before } },
            wallSecondsTimedPhase: wallSeconds)

        return BenchReport(
            iterations: options.iterations, warmup: options.warmup, cpuSamples: options.cpuSamples,
            fence: options.fence,
            order: "interleaved: every scenario once per round, the first one rotating"
                + (options.fence ? "; an untimed fence Ping after each sample" : "; no fence between samples"),
            baseline: ScenarioCatalog.baseline.name, scenarios: figures, daemon: daemon, noise: noise,
            allTargetsMet: figures.allSatisfy { ($0.p50Pass ?? true) && ($0.p99Pass ?? true) })
    }

    /// `count` rounds; round r starts with scenario r mod n, so no scenario
    /// always follows the same one (e.g. the untimed Invalidate of CreateActivity).
    private func rounds(_ count: Int, _ benchmarks: [any Benchmark], _ session: BenchSession,
                        record: Bool) throws -> [[UInt64]] {
        var samples = [[UInt64]](repeating: [], count: benchmarks.count)
        if record { for index in samples.indices { samples[index].reserveCapacity(count) } }
        let n = benchmarks.count
        for round in 0..<count {
            for offset in 0..<n {
                let index = (round + offset) % n
                let nanoseconds = try benchmarks[index].sample(session)
                if record { samples[index].append(nanoseconds) }
                if options.fence { try session.fence() }
            }
        }
        return samples
    }

    static func noiseNote(spread: Double, load: Double, processors: Int) -> String {
        var notes: [String] = []
        if spread > 5 {
            notes.append(String(format: "the baseline's p50 moved %.1f%% between the halves of the run: the machine was busy, rerun", spread))
        }
        if load > Double(processors) * 0.5 {
            notes.append(String(format: "1-min load %.2f on %d CPUs before the run: other work competed", load, processors))
        }
        if notes.isEmpty {
            notes.append(String(format: "quiet: baseline p50 halves within %.1f%%", spread))
        }
        notes.append("client, dbus-daemon and useractivityd share \(processors) CPU(s); ratios are meaningful, absolute µs are this machine's")
        return notes.joined(separator: "; ")
    }
}
