// SPDX-License-Identifier: Apache-2.0
import Foundation

extension BenchReport {
    /// One JSON object; keys in snake_case, sorted, so diffs between runs stay small.
    func json() throws -> String { try reportJSON(self) }

    /// The human-readable table and notes.
    func table() -> String {
        var out: [String] = []
        out.append("useractivity-bench: \(iterations) rounds (+\(warmup) warm-up), \(order)")
        out.append("one client connection on one private bus; baseline = \(baseline), measured in this run")
        out.append("")

        let header = [pad("scenario", 15), pad("p50 µs", 9, right: true), pad("p90 µs", 9, right: true),
                      pad("p99 µs", 9, right: true), pad("mean µs", 9, right: true),
                      "   " + pad("p50/\(baseline)", 13), pad("p99/\(baseline)", 13), "target"]
        out.append(header.joined())
        out.append(String(repeating: "-", count: header.joined().count + 8))
        for scenario in scenarios {
            let l = scenario.latency
            let target: String
            if let maxRatio = scenario.maxRatio {
                target = "≤ " + String(format: "%.1f", maxRatio) + "× \(baseline)"
            } else {
                target = scenario.name == baseline ? "(baseline)" : "(reference)"
            }
            out.append([
                pad(scenario.name, 15),
                pad(fixed(l.p50Us), 9, right: true), pad(fixed(l.p90Us), 9, right: true),
                pad(fixed(l.p99Us), 9, right: true), pad(fixed(l.meanUs), 9, right: true),
                "   " + pad(ratio(scenario.p50Ratio, scenario.p50Pass), 13),
                pad(ratio(scenario.p99Ratio, scenario.p99Pass), 13),
                target,
            ].joined())
        }
        out.append("")
        for scenario in scenarios {
            out.append("\(scenario.name): \(scenario.timed)")
            var line = "    n=\(scenario.latency.samples)  min \(fixed(scenario.latency.minUs)) µs  p99.9 \(fixed(scenario.latency.p999Us)) µs  max \(fixed(scenario.latency.maxUs)) µs"
            if scenario.name != baseline {
                line += "  p50/\(baseline) by half: " + scenario.p50RatioByHalf.map { String(format: "%.2f×", $0) }.joined(separator: ", ")
            }
            out.append(line)
            if scenario.daemonCpuUsPerCall != nil || scenario.busCpuUsPerCall != nil {
                out.append("    CPU per call (separate pass of \(cpuSamples), bookkeeping included): useractivityd \(optionalFixed(scenario.daemonCpuUsPerCall)) µs, dbus-daemon \(optionalFixed(scenario.busCpuUsPerCall)) µs, client \(optionalFixed(scenario.clientCpuUsPerCall)) µs")
            }
            for fact in scenario.facts {
                out.append("    \(fact.name): \(fact.value)")
            }
        }
        out.append("")

        let targets = scenarios.filter { $0.maxRatio != nil }
        if targets.isEmpty {
            out.append("targets: none selected")
        } else {
            let missed = targets.filter { $0.p50Pass == false || $0.p99Pass == false }.map(\.name)
            out.append(missed.isEmpty ? "targets: all met (p50 and p99 ratios)" : "targets: MISS in \(missed.joined(separator: ", "))")
        }
        out.append("")

        out.append("useractivityd: \(daemon.path) (pid \(daemon.pid))")
        out.append("    RSS after start \(kib(daemon.rssKibAfterStart)), after the run \(kib(daemon.rssKibAfterRun)), peak \(kib(daemon.peakRssKib))")
        let rounds = Double(iterations)
        let cpu = daemon.cpuSecondsTimedPhase.map {
            String(format: "%.2f s (%.1f µs per round)", $0, $0 / rounds * 1e6)
        } ?? "n/a"
        let busCPU = daemon.busCpuSecondsTimedPhase.map {
            String(format: "%.2f s (%.1f µs per round)", $0, $0 / rounds * 1e6)
        } ?? "n/a"
        out.append("    CPU during the timed rounds (fences and Invalidates included): useractivityd \(cpu), dbus-daemon \(busCPU), wall \(String(format: "%.2f", daemon.wallSecondsTimedPhase)) s")
        out.append("")

        out.append("machine noise: \(noise.processors) CPU(s); load average before \(loads(noise.loadAverageBefore)), after \(loads(noise.loadAverageAfter))")
        out.append("    \(baseline) p50 first half \(fixed(noise.baselineP50FirstHalfUs)) µs, second half \(fixed(noise.baselineP50SecondHalfUs)) µs (spread \(String(format: "%.1f", noise.baselineHalvesSpreadPercent))%)")
        out.append("    \(noise.note)")
        return out.joined(separator: "\n")
    }

    private func fixed(_ value: Double) -> String { String(format: "%.1f", value) }

    private func optionalFixed(_ value: Double?) -> String { value.map(fixed) ?? "n/a" }

    private func ratio(_ value: Double, _ pass: Bool?) -> String {
        let text = String(format: "%.2f×", value)
        guard let pass else { return text }
        return text + (pass ? " PASS" : " MISS")
    }

    private func kib(_ value: Int?) -> String {
        guard let value else { return "n/a" }
        return String(format: "%.1f MiB", Double(value) / 1024)
    }

    private func loads(_ values: [Double]) -> String {
        values.isEmpty ? "n/a" : values.map { String(format: "%.2f", $0) }.joined(separator: " ")
    }

    /// Pads by characters, not bytes, so "µs" and "×" line up.
    private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return right ? padding + text + " " : text + padding
    }
}

/// A report as one JSON object: keys in snake_case and sorted, so diffs
/// between runs stay small.
func reportJSON<Report: Encodable>(_ report: Report) throws -> String {
    let encoder = JSONEncoder()
    encoder.keyEncodingStrategy = .convertToSnakeCase
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(report), as: UTF8.self)
}
