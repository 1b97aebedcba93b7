// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// One benchmark target and how this run did against it.
struct Verdict: Codable {
    var name: String
    /// The measured value (a ratio, or MiB for memory).
    var value: Double?
    var unit: String
    /// "≤ 1.10×", "≥ 15×"…
    var target: String
    /// nil: not measured in this run (see `note`).
    var pass: Bool?
    var note: String
}

struct ProcessRow: Codable {
    var name: String
    var pid: Int32?
    var rssKibIdle: Int?
    var rssKibAfterLoad: Int?
    var peakRssKib: Int?
    var after: String
}

/// Everything `--report` measured; the text and `--json` both print this.
struct ComparisonReport: Codable {
    var generated: String
    var command: String
    var processors: Int
    var loadAverageBefore: [Double]
    var loadAverageAfter: [Double]
    var wallSeconds: Double
    /// CPU used by processes other than the bench's own (client, bus, services)
    /// during the run, in percent of all CPUs: the machine's noise.
    var otherProcessesCpuPercent: Double?
    var quick: Bool
    var verdicts: [Verdict]
    /// Ratios with no target that say what the targets are up against.
    var context: [Verdict] = []
    var peers: PeersFigures?
    var zeitgeist: ZeitgeistFigures?
    var processes: [ProcessRow]
    var notes: [String]
}

/// Runs `--report` / `--peers` / `--zeitgeist` on one private bus.
struct ComparisonRun {
    let options: BenchOptions
    let daemonPath: String
    let progress: (String) -> Void

    private var iterations: Int { options.iterationsGiven ? options.iterations : (options.quick ? 2_000 : 10_000) }
    private var pipelineCalls: Int { options.pipelineCalls ?? (options.quick ? 4_000 : 20_000) }
    private var sizes: [Int] { options.storeSizesGiven ? options.storeSizes : (options.quick ? [10_000] : [10_000, 100_000]) }
    private var searchSamples: Int { options.storeSamplesGiven ? options.storeSamples : (options.quick ? 60 : 300) }
    private var insertSamples: Int { options.insertSamples ?? (options.quick ? 200 : 1_000) }

    static let zeitgeistInstallHint = "zeitgeist-daemon was not found: install it with `apt-get install zeitgeist-core` (this report installs nothing itself); the Zeitgeist comparison was skipped"

    private func resolveZeitgeist() -> (daemon: String?, fts: String?) {
        let daemon = options.zeitgeistDaemonPath
            ?? (try? resolveExecutable("zeitgeist-daemon", environment: ProcessInfo.processInfo.environment))
        guard let daemon, FileManager.default.isExecutableFile(atPath: daemon) else { return (nil, nil) }
        let fts = options.zeitgeistFtsPath ?? "/usr/lib/zeitgeist/zeitgeist-fts"
        return (daemon, FileManager.default.isExecutableFile(atPath: fts) ? fts : nil)
    }

    /// Busy CPU seconds of the whole machine (`/proc/stat`: all but idle and iowait).
    static func machineBusySeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 8 else { return nil }
        let busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
        return busy / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func run() throws -> ComparisonReport {
        let begin = monotonicNanoseconds()
        let loadBefore = BenchSession.loadAverage()
        let machineBusyBefore = Self.machineBusySeconds()
        let selfCPUBefore = BenchSession.cpuSeconds(of: getpid())
        var notes: [String] = []
        var processes: [ProcessRow] = []

        var peerPaths: [(key: String, label: String, name: String, path: String, flags: String)] = []
        if options.peers {
            guard let libdbus = options.libdbusPeerPath, let gdbus = options.gdbusPeerPath else {
                throw BenchError("--peers needs --libdbus-peer PATH and --gdbus-peer PATH (bench/report.sh builds them from bench/peers/)")
            }
            // The third is the C peer again, emitting the ObjectManager signals the
            // contract requires of us: what those cost a C service (no target of its own).
            for (key, label, name, path, flags) in [
                ("libdbus", "C libdbus peer", "org.example.BenchPeer.LibDBus", libdbus, ""),
                ("gdbus", "GDBus peer", "org.example.BenchPeer.GDBus", gdbus, ""),
                // The C peer on a GLib main loop, as our daemon's libdbus is driven,
                // without and with the ObjectManager signals (the same service as ours in C).
                (PeerTarget.libdbusOnGLibKey, "C libdbus on GLib", "org.example.BenchPeer.LibDBusGLib", libdbus, " --glib"),
                (PeerTarget.libdbusOnGLibWithSignalsKey, "C libdbus on GLib + signals", "org.example.BenchPeer.LibDBusGLibSignals", libdbus,
                 " --glib --object-manager-signals"),
                (PeerTarget.libdbusWithSignalsKey, "C libdbus + signals", "org.example.BenchPeer.LibDBusSignals", libdbus,
                 " --object-manager-signals"),
            ] {
                let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
                guard FileManager.default.isExecutableFile(atPath: absolute) else {
                    throw BenchError("\(absolute) is not an executable file (bench/report.sh compiles bench/peers/*.c)")
                }
                peerPaths.append((key, label, name, absolute, flags))
            }
        }
        var zeitgeistPaths: (daemon: String?, fts: String?) = (nil, nil)
        if options.zeitgeist {
            zeitgeistPaths = resolveZeitgeist()
            if zeitgeistPaths.daemon == nil {
                notes.append(Self.zeitgeistInstallHint)
                progress("useractivity-bench: " + Self.zeitgeistInstallHint)
            }
        }

        progress("starting a private bus; useractivityd = \(daemonPath)")
        let session = try BenchSession(daemonPath: daemonPath)
        do {
            try session.start()
            try session.addSubscribers(options.subscribers)
            usleep(300_000)
            let oursIdle = BenchSession.memory(of: session.daemonPID)?.rssKiB
            var oursAfterPeers: Int?

            var peers: PeersFigures?
            if !peerPaths.isEmpty {
                var targets = [PeerTarget.ours]
                for peer in peerPaths {
                    try session.bus.installService(name: peer.name, exec: shellQuote(peer.path) + peer.flags + " " + peer.name)
                    targets.append(.peer(key: peer.key, label: peer.label, busName: peer.name))
                }
                var bench = PeersBench(session: session, targets: targets, iterations: iterations,
                                       warmup: max(100, iterations / 10), pipelineDepth: options.pipelineDepth,
                                       pipelineCalls: pipelineCalls, progress: progress)
                var idle = try bench.start()
                idle[0] = oursIdle
                let figures = try bench.run(idleRSS: idle)
                peers = figures
                oursAfterPeers = figures.services.first?.rssKibAfterLoad
                for service in figures.services.dropFirst() {
                    processes.append(ProcessRow(name: service.label, pid: service.pid, rssKibIdle: service.rssKibIdle,
                                                rssKibAfterLoad: service.rssKibAfterLoad, peakRssKib: service.peakRssKib,
                                                after: "the CreateActivity rounds and pipelined pass"))
                }
            }

            var zeitgeist: ZeitgeistFigures?
            if let daemon = zeitgeistPaths.daemon {
                progress("starting Zeitgeist (\(daemon)\(zeitgeistPaths.fts.map { ", " + $0 } ?? "")) on the same bus")
                let bench = try ZeitgeistBench(session: session, sizes: sizes, searchSamples: searchSamples,
                                               insertSamples: insertSamples, fillBatch: options.zeitgeistBatch,
                                               daemonPath: daemon, ftsPath: zeitgeistPaths.fts, progress: progress)
                let idle = try bench.start()
                let figures = try bench.run(daemonIdle: idle)
                zeitgeist = figures
                let last = figures.sizes.last
                processes.append(ProcessRow(name: "zeitgeist-daemon", pid: figures.daemonPid, rssKibIdle: figures.daemonRssKibIdle,
                                            rssKibAfterLoad: last?.zeitgeistDaemonRssKib,
                                            peakRssKib: BenchSession.memory(of: figures.daemonPid)?.peakKiB,
                                            after: "\(last?.entries ?? 0) events"))
                if let pid = figures.ftsPid {
                    processes.append(ProcessRow(name: "zeitgeist-fts", pid: pid, rssKibIdle: figures.ftsRssKibIdle,
                                                rssKibAfterLoad: last?.zeitgeistFtsRssKib,
                                                peakRssKib: BenchSession.memory(of: pid)?.peakKiB,
                                                after: "\(last?.entries ?? 0) events"))
                }
                notes.append(contentsOf: figures.notes)
            }

            let oursNow = BenchSession.memory(of: session.daemonPID)
            let oursAfter = zeitgeist?.sizes.last?.oursRssKib ?? oursAfterPeers ?? oursNow?.rssKiB
            processes.insert(ProcessRow(name: "useractivityd", pid: session.daemonPID, rssKibIdle: oursIdle,
                                        rssKibAfterLoad: oursAfter, peakRssKib: oursNow?.peakKiB,
                                        after: zeitgeist != nil ? "\(zeitgeist?.sizes.last?.entries ?? 0) saved entries"
                                            : "the CreateActivity rounds and pipelined pass"), at: 0)
            // The machine's noise: busy CPU not spent by the bench's own processes.
            var ownPIDs = [session.bus.pid, session.daemonPID]
            ownPIDs += peers?.services.dropFirst().map(\.pid) ?? []
            ownPIDs += [zeitgeist?.daemonPid, zeitgeist?.ftsPid].compactMap { $0 }
            var otherPercent: Double?
            if let before = machineBusyBefore, let after = Self.machineBusySeconds(),
               let selfBefore = selfCPUBefore, let selfAfter = BenchSession.cpuSeconds(of: getpid()) {
                let own = ownPIDs.compactMap { BenchSession.cpuSeconds(of: $0) }.reduce(selfAfter - selfBefore, +)
                let wall = Double(monotonicNanoseconds() - begin) / 1e9
                otherPercent = max(0, (after - before - own) / (wall * Double(BenchSession.onlineProcessors)) * 100)
            }
            let busMemory = BenchSession.memory(of: session.bus.pid)
            processes.append(ProcessRow(name: "dbus-daemon (the private bus)", pid: session.bus.pid, rssKibIdle: nil,
                                        rssKibAfterLoad: busMemory?.rssKiB, peakRssKib: busMemory?.peakKiB, after: "everything"))
            session.stop()

            let loadAfter = BenchSession.loadAverage()
            let processors = BenchSession.onlineProcessors
            if let otherPercent {
                notes.append(String(format: "other processes used %.0f%% of the %d CPUs during the run%@", otherPercent, processors,
                                    otherPercent > 10 ? ": the machine was not quiet, absolute figures and close verdicts may move on a rerun" : " (quiet)"))
            }
            if otherPercent == nil, (loadBefore.first ?? 0) > Double(processors) * 0.75 {
                notes.append(String(format: "1-min load %.2f on %d CPUs before the run: other work competed; rerun on a quiet machine before trusting a verdict", loadBefore.first ?? 0, processors))
            }
            notes.append("client, dbus-daemon and every service share \(processors) CPU(s); ratios are meaningful, absolute µs are this machine's")
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime]
            var report = ComparisonReport(
                generated: formatter.string(from: Date()),
                command: CommandLine.arguments.joined(separator: " "),
                processors: processors, loadAverageBefore: loadBefore, loadAverageAfter: loadAfter,
                wallSeconds: Double(monotonicNanoseconds() - begin) / 1e9, otherProcessesCpuPercent: otherPercent,
                quick: options.quick,
                verdicts: [], peers: peers, zeitgeist: zeitgeist, processes: processes, notes: notes)
            report.verdicts = Self.verdicts(report, oursIdleKib: oursIdle, wantedPeers: options.peers,
                                            wantedZeitgeist: options.zeitgeist)
            report.context = Self.context(report)
            return report
        } catch {
            InterruptCleanup.parkIfInterrupted()
            let log = session.bus.log.trimmingCharacters(in: .whitespacesAndNewlines)
            session.stop()
            if !log.isEmpty { progress("--- bus and services' log (last 60 lines) ---\n" + log.split(separator: "\n").suffix(60).joined(separator: "\n")) }
            throw error
        }
    }

    // MARK: Verdicts

    /// Figures with no target that say what the targets are up against: what
    /// the contract's `InterfacesAdded`/`InterfacesRemoved` signals cost the C
    /// service, ours against the C service that emits them too, and the most a
    /// one-at-a-time Donate could reach if it cost no more than a Ping.
    static func context(_ report: ComparisonReport) -> [Verdict] {
        func row(_ name: String, _ value: Double, _ note: String) -> Verdict {
            Verdict(name: name, value: value, unit: "×", target: "", pass: nil, note: note)
        }
        var rows: [Verdict] = []
        if let peers = report.peers, let ours = peers.services.first,
           let plain = peers.services.first(where: { $0.key == "libdbus" }),
           let signalling = peers.services.first(where: { $0.key == PeerTarget.libdbusWithSignalsKey }) {
            rows += [
                row("C libdbus + signals ÷ C libdbus, CreateActivity p50", signalling.createActivity.p50Us / plain.createActivity.p50Us,
                    String(format: "%.1f vs %.1f µs", signalling.createActivity.p50Us, plain.createActivity.p50Us)),
                row("C libdbus + signals ÷ C libdbus, pipelined", signalling.pipelinedCallsPerSecond / plain.pipelinedCallsPerSecond,
                    String(format: "%.0f vs %.0f calls/s", signalling.pipelinedCallsPerSecond, plain.pipelinedCallsPerSecond)),
                row("ours ÷ C libdbus + signals, CreateActivity p50", ours.createActivity.p50Us / signalling.createActivity.p50Us,
                    String(format: "%.1f vs %.1f µs", ours.createActivity.p50Us, signalling.createActivity.p50Us)),
                row("ours ÷ C libdbus + signals, CreateActivity p99", ours.createActivity.p99Us / signalling.createActivity.p99Us,
                    String(format: "%.1f vs %.1f µs", ours.createActivity.p99Us, signalling.createActivity.p99Us)),
                row("ours ÷ C libdbus + signals, pipelined", ours.pipelinedCallsPerSecond / signalling.pipelinedCallsPerSecond,
                    String(format: "%.0f vs %.0f calls/s", ours.pipelinedCallsPerSecond, signalling.pipelinedCallsPerSecond)),
            ]
        }
        if let peers = report.peers, let ours = peers.services.first,
           let quiet = peers.services.first(where: { $0.key == PeerTarget.libdbusOnGLibKey }) {
            rows += [
                row("ours ÷ C libdbus on GLib (no signals), CreateActivity p50", ours.createActivity.p50Us / quiet.createActivity.p50Us,
                    String(format: "%.1f vs %.1f µs", ours.createActivity.p50Us, quiet.createActivity.p50Us)),
                row("ours ÷ C libdbus on GLib (no signals), pipelined", ours.pipelinedCallsPerSecond / quiet.pipelinedCallsPerSecond,
                    String(format: "%.0f vs %.0f calls/s", ours.pipelinedCallsPerSecond, quiet.pipelinedCallsPerSecond)),
            ]
        }
        for size in report.zeitgeist?.sizes ?? [] where size.oursPing.meanUs > 0 && size.zeitgeistInsert.callsPerSecond > 0 {
            // Sequential rates are calls ÷ elapsed time, so the ceiling uses the Ping's mean too.
            let pingRate = 1e6 / size.oursPing.meanUs
            rows.append(row("sequential insert ceiling at \(size.entries): a Ping per Donate ÷ Zeitgeist", pingRate / size.zeitgeistInsert.callsPerSecond,
                            String(format: "our Ping's mean %.1f µs = %.0f calls/s vs Zeitgeist's %.0f inserts/s",
                                   size.oursPing.meanUs, pingRate, size.zeitgeistInsert.callsPerSecond)))
        }
        return rows
    }

    static func verdicts(_ report: ComparisonReport, oursIdleKib: Int?, wantedPeers: Bool, wantedZeitgeist: Bool) -> [Verdict] {
        var verdicts: [Verdict] = []
        func ratio(_ name: String, _ value: Double?, atMost: Double? = nil, atLeast: Double? = nil, note: String) {
            let target = atMost.map { String(format: "≤ %.2f×", $0) } ?? atLeast.map { String(format: "≥ %.2f×", $0) } ?? ""
            var pass: Bool?
            if let value {
                if let atMost { pass = value <= atMost }
                if let atLeast { pass = value >= atLeast }
            }
            verdicts.append(Verdict(name: name, value: value, unit: "×", target: target, pass: pass, note: note))
        }
        if let peers = report.peers, let ours = peers.services.first {
            let c = peers.services.first { $0.key == "libdbus" }
            let g = peers.services.first { $0.key == "gdbus" }
            ratio("CreateActivity round trip p50, ours ÷ C libdbus", c.map { ours.createActivity.p50Us / $0.createActivity.p50Us }, atMost: 1.1,
                  note: c.map { String(format: "%.1f vs %.1f µs", ours.createActivity.p50Us, $0.createActivity.p50Us) } ?? "")
            ratio("CreateActivity round trip p99, ours ÷ C libdbus", c.map { ours.createActivity.p99Us / $0.createActivity.p99Us }, atMost: 1.1,
                  note: c.map { String(format: "%.1f vs %.1f µs", ours.createActivity.p99Us, $0.createActivity.p99Us) } ?? "")
            ratio("CreateActivity round trip p50, ours ÷ GDBus", g.map { ours.createActivity.p50Us / $0.createActivity.p50Us }, atMost: 0.75,
                  note: g.map { String(format: "%.1f vs %.1f µs", ours.createActivity.p50Us, $0.createActivity.p50Us) } ?? "")
            ratio("CreateActivity round trip p99, ours ÷ GDBus", g.map { ours.createActivity.p99Us / $0.createActivity.p99Us }, atMost: 0.75,
                  note: g.map { String(format: "%.1f vs %.1f µs", ours.createActivity.p99Us, $0.createActivity.p99Us) } ?? "")
            ratio("pipelined throughput (\(peers.pipelineDepth) in flight), ours ÷ C libdbus",
                  c.map { ours.pipelinedCallsPerSecond / $0.pipelinedCallsPerSecond }, atLeast: 0.9,
                  note: c.map { String(format: "%.0f vs %.0f calls/s", ours.pipelinedCallsPerSecond, $0.pipelinedCallsPerSecond) } ?? "")
            // Against the same service in C, its libdbus driven by a GLib loop as
            // ours is and emitting the contract's ObjectManager signals: what our own code adds.
            let cg = peers.services.first { $0.key == PeerTarget.libdbusOnGLibWithSignalsKey }
            ratio("CreateActivity round trip p50, ours ÷ C libdbus on GLib + signals", cg.map { ours.createActivity.p50Us / $0.createActivity.p50Us }, atMost: 1.2,
                  note: cg.map { String(format: "%.1f vs %.1f µs", ours.createActivity.p50Us, $0.createActivity.p50Us) } ?? "")
            if let cg, let oursClient = ours.pipelinedClientCpuUsPerCall, let theirs = cg.pipelinedClientCpuUsPerCall, theirs > 0 {
                ratio("client CPU per pipelined call, ours ÷ C libdbus on GLib + signals", oursClient / theirs, atMost: 1.3,
                      note: String(format: "%.1f vs %.1f µs", oursClient, theirs))
            }
            ratio("pipelined throughput (\(peers.pipelineDepth) in flight), ours ÷ C libdbus on GLib + signals",
                  cg.map { ours.pipelinedCallsPerSecond / $0.pipelinedCallsPerSecond }, atLeast: 0.8,
                  note: cg.map { String(format: "%.0f vs %.0f calls/s", ours.pipelinedCallsPerSecond, $0.pipelinedCallsPerSecond) } ?? "")
        } else if wantedPeers {
            verdicts.append(Verdict(name: "CreateActivity and throughput against the peers", value: nil, unit: "×", target: "",
                                    pass: nil, note: "not measured"))
        }
        if let zeitgeist = report.zeitgeist {
            for size in zeitgeist.sizes {
                ratio("durable one-entry inserts at \(size.entries), ours ÷ Zeitgeist", size.insertRatio, atLeast: 15,
                      note: String(format: "%.0f vs %.0f calls/s", size.oursInsert.callsPerSecond, size.zeitgeistInsert.callsPerSecond))
                let pipelined = size.pipelinedInserts
                ratio("  the same, \(pipelined.depth) in flight on each side", pipelined.ratio, atLeast: 15,
                      note: String(format: "%.0f vs %.0f calls/s", pipelined.oursCallsPerSecond, pipelined.zeitgeistCallsPerSecond))
            }
            if let last = zeitgeist.sizes.last {
                let at = last.entries >= 100_000 ? "" : " (target is for 100k: only \(last.entries) in this run)"
                let rare = last.queries.first
                ratio("Search p50 at \(last.entries), rare two words, ours ÷ Zeitgeist",
                      zeitgeist.searchComparable ? rare?.p50Ratio : nil, atMost: 0.25,
                      note: (rare.map { String(format: "%.0f vs %.0f µs", $0.ours.p50Us, $0.zeitgeist.p50Us) } ?? "") + at
                        + (zeitgeist.searchComparable ? "" : "; not comparable: \(zeitgeist.searchMethod)"))
                let oursWorst = last.queries.first { $0.kind == last.oursWorstKind }
                let theirWorst = last.queries.first { $0.kind == last.zeitgeistWorstKind }
                ratio("Search p50 at \(last.entries), worst kind, ours ÷ Zeitgeist",
                      zeitgeist.searchComparable ? last.worstP50Ratio : nil, atMost: 0.05,
                      note: String(format: "ours %@ %.0f µs vs Zeitgeist %@ %.0f µs", last.oursWorstKind, oursWorst?.ours.p50Us ?? 0,
                                   last.zeitgeistWorstKind, theirWorst?.zeitgeist.p50Us ?? 0) + at)
            }
        } else if wantedZeitgeist {
            verdicts.append(Verdict(name: "Donate and Search against Zeitgeist", value: nil, unit: "×", target: "",
                                    pass: nil, note: zeitgeistInstallHint))
        }
        if let oursIdleKib {
            let mb = Double(oursIdleKib) * 1024 / 1e6
            verdicts.append(Verdict(name: "useractivityd idle RSS after start", value: mb, unit: "MB", target: "≤ 15 MB",
                                    pass: mb <= 15, note: String(format: "%.1f MiB", Double(oursIdleKib) / 1024)))
        }
        return verdicts
    }
}
