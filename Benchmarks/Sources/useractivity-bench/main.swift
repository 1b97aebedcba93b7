// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport

/// Progress and diagnostics go to stderr, so `--json` output stays parseable.
func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func runBench() -> Int32 {
    let arguments = Array(CommandLine.arguments.dropFirst())
    if arguments.first == "--encode" { return EncodeBench.run(Array(arguments.dropFirst())) }
    if arguments.first == "--poll" { return PollBench.run(Array(arguments.dropFirst())) }
    if arguments.first == "--replies" { return ReplyBench.run(Array(arguments.dropFirst())) }
    InterruptCleanup.install()
    let options: BenchOptions
    do {
        options = try BenchOptions.parse(Array(CommandLine.arguments.dropFirst()))
    } catch {
        note("useractivity-bench: \(error)\n\n\(BenchOptions.usage)")
        return 2
    }
    if options.help {
        print(BenchOptions.usage)
        return 0
    }
    if options.listScenarios {
        for scenario in ScenarioCatalog.all {
            let target = scenario.maxRatioToBaseline.map { "target ≤ " + String(format: "%.1f", $0) + "× \(ScenarioCatalog.baseline.name)" }
                ?? (scenario.name == ScenarioCatalog.baseline.name ? "baseline" : "reference")
            print("\(scenario.name)\t\(target)\t\(scenario.timed)")
        }
        return 0
    }

    do {
        let scenarios = try ScenarioCatalog.select(options.scenarios)
        var daemonPath = try options.daemonPath ?? BuiltProducts.useractivityd()
        if !daemonPath.hasPrefix("/") {
            // The .service file's Exec= is run by dbus-daemon from another directory.
            daemonPath = FileManager.default.currentDirectoryPath + "/" + daemonPath
        }
        guard FileManager.default.isExecutableFile(atPath: daemonPath) else {
            throw BenchError("\(daemonPath) is not an executable file (build it: swift build -c release --product useractivityd)")
        }
        if options.peers || options.zeitgeist {
            let report = try ComparisonRun(options: options, daemonPath: daemonPath, progress: note).run()
            print(options.json ? try report.json() : report.table())
            return 0
        }
        if options.resilience {
            let session = try BenchSession(daemonPath: daemonPath)
            defer { session.stop() }
            try session.start()
            print("useractivity-bench --resilience: private bus, one daemon; each figure against a baseline from this run")
            print(try ResilienceBench(session: session, quick: options.quick, progress: note).run())
            return 0
        }
        if options.store {
            let session = try BenchSession(daemonPath: daemonPath)
            defer { session.stop() }
            try session.start()
            let rows = try StoreBench(session: session, sizes: options.storeSizes, samples: options.storeSamples,
                                      progress: note).run()
            print("useractivity-bench --store: one client on one private bus; baseline = Ping to the same daemon, measured in the same rounds")
            print(StoreBench.table(rows))
            let load = BenchSession.loadAverage().map { String(format: "%.2f", $0) }.joined(separator: " ")
            print("machine noise: load average \(load) on \(ProcessInfo.processInfo.activeProcessorCount) CPU(s); absolute µs are this machine's")
            return 0
        }
        let report = try Runner(options: options, scenarios: scenarios, progress: note).run(daemonPath: daemonPath)
        print(options.json ? try report.json() : report.table())
        return 0
    } catch {
        note("useractivity-bench: \(error)")
        return 1
    }
}

exit(runBench())
