// SPDX-License-Identifier: Apache-2.0
import Foundation

extension ComparisonReport {
    func json() throws -> String { try reportJSON(self) }

    /// Ratios first, absolute numbers second, machine noise last.
    func table() -> String {
        var out: [String] = []
        out.append("useractivityd against its peers — \(generated), \(processors) CPU(s), \(String(format: "%.0f", wallSeconds)) s\(quick ? ", --quick" : "")")
        out.append("load average before \(loads(loadAverageBefore)), after \(loads(loadAverageAfter))"
                   + (otherProcessesCpuPercent.map { String(format: "; other processes used %.0f%% of the CPUs during the run", $0) } ?? ""))
        out.append("")
        out.append("RATIOS AND TARGETS")
        let nameWidth = verdicts.map(\.name.count).max() ?? 0
        for verdict in verdicts {
            let value: String
            if let v = verdict.value {
                value = verdict.unit == "×" ? String(format: "%.2f×", v) : String(format: "%.1f %@", v, verdict.unit)
            } else {
                value = "n/a"
            }
            let status = verdict.pass.map { $0 ? "PASS" : "MISS" } ?? "—"
            out.append("  " + pad(verdict.name, nameWidth + 2) + pad(value, 10, right: true) + "  "
                       + pad(verdict.target, 10) + pad(status, 6) + verdict.note)
        }
        let missed = verdicts.filter { $0.pass == false }.count
        let met = verdicts.filter { $0.pass == true }.count
        out.append("  \(met) met, \(missed) missed, \(verdicts.count - met - missed) not measured")
        out.append("")
        if !context.isEmpty {
            out.append("CONTEXT (same run, no target): what the targets are up against")
            if peers?.services.contains(where: { $0.key == PeerTarget.libdbusWithSignalsKey }) == true {
                out.append("  \"C libdbus + signals\": the C peer again, emitting the InterfacesAdded/InterfacesRemoved signals the contract")
                out.append("  requires of us, right after each reply (bench/peers/libdbus-peer.c --object-manager-signals)")
            }
            if zeitgeist != nil {
                out.append("  \"ceiling\": the sequential ratio a Donate would reach if it cost no more than a Ping round trip to our daemon")
            }
            let contextWidth = context.map(\.name.count).max() ?? 0
            for row in context {
                out.append("  " + pad(row.name, contextWidth + 2) + pad(row.value.map { String(format: "%.2f×", $0) } ?? "n/a", 10, right: true)
                           + "  " + row.note)
            }
            out.append("")
        }

        out.append("ABSOLUTE FIGURES")
        if let peers {
            out.append("CreateActivity(s, a{sv}) → o, \(peers.propertiesBytes)-byte a{sv}; \(peers.iterations) rounds (+\(peers.warmup) warm-up), \(peers.order)")
            let header = pad("service", 24) + pad("Ping p50", 10, right: true) + pad("p99", 9, right: true)
                + pad("Create p50", 12, right: true) + pad("p99", 9, right: true) + pad("−Ping p50", 11, right: true)
                + pad("pipelined", 12, right: true) + "   CPU µs/call service+bus+client"
            out.append("  " + header)
            for s in peers.services {
                let cpu = [s.pipelinedServiceCpuUsPerCall, s.pipelinedBusCpuUsPerCall, s.pipelinedClientCpuUsPerCall]
                    .map { $0.map { String(format: "%.1f", $0) } ?? "?" }.joined(separator: " + ")
                out.append("  " + pad(s.label, 24) + pad(us(s.ping.p50Us), 10, right: true) + pad(us(s.ping.p99Us), 9, right: true)
                           + pad(us(s.createActivity.p50Us), 12, right: true) + pad(us(s.createActivity.p99Us), 9, right: true)
                           + pad(us(s.serviceShareP50Us), 11, right: true)
                           + pad(String(format: "%.0f/s", s.pipelinedCallsPerSecond), 12, right: true) + "   " + cpu)
            }
            out.append("  (µs; pipelined = calls/s with \(peers.pipelineDepth) in flight from one connection, each CreateActivity followed by its Invalidate, both counted; \(peers.pipelineCalls) creations per service in two passes)")
            if !peers.oursToLibdbusP50ByHalf.isEmpty {
                out.append("  ours ÷ C libdbus p50 by half of the rounds: " + peers.oursToLibdbusP50ByHalf.map { String(format: "%.2f×", $0) }.joined(separator: ", ")
                           + "; ours ÷ GDBus: " + peers.oursToGdbusP50ByHalf.map { String(format: "%.2f×", $0) }.joined(separator: ", "))
            }
            out.append("")
        }
        if let zeitgeist {
            out.append("Zeitgeist \(zeitgeist.version): search through \(zeitgeist.searchMethod)")
            out.append("  durability: \(zeitgeist.durability)")
            out.append("  one-entry inserts: \(zeitgeist.insertSamples) sequential calls per side and size, in alternating blocks, then as many with \(ZeitgeistBench.insertDepth) in flight (ours first); Zeitgeist filled in batches of \(zeitgeist.fillBatch) events per InsertEvents, ours with pipelined Donates (untimed)")
            for size in zeitgeist.sizes {
                out.append("  \(size.entries) entries:")
                out.append("    " + pad("", 30) + pad("ours", 22, right: true) + pad("Zeitgeist", 22, right: true) + pad("ratio", 9, right: true))
                out.append("    " + pad("one-entry insert, calls/s", 30)
                           + pad(String(format: "%.0f", size.oursInsert.callsPerSecond), 22, right: true)
                           + pad(String(format: "%.0f", size.zeitgeistInsert.callsPerSecond), 22, right: true)
                           + pad(String(format: "%.2f×", size.insertRatio), 9, right: true))
                out.append("    " + pad("  \(size.pipelinedInserts.depth) in flight, calls/s", 30)
                           + pad(String(format: "%.0f", size.pipelinedInserts.oursCallsPerSecond), 22, right: true)
                           + pad(String(format: "%.0f", size.pipelinedInserts.zeitgeistCallsPerSecond), 22, right: true)
                           + pad(String(format: "%.2f×", size.pipelinedInserts.ratio), 9, right: true))
                out.append("    " + pad("  insert p50 / p99 µs", 30)
                           + pad(us(size.oursInsert.latency.p50Us) + " / " + us(size.oursInsert.latency.p99Us), 22, right: true)
                           + pad(us(size.zeitgeistInsert.latency.p50Us) + " / " + us(size.zeitgeistInsert.latency.p99Us), 22, right: true))
                out.append("    " + pad("  CPU µs/insert service, bus", 30)
                           + pad(cpu(size.oursInsert), 22, right: true) + pad(cpu(size.zeitgeistInsert), 22, right: true))
                out.append("    " + pad("Ping p50 / p99 µs", 30)
                           + pad(us(size.oursPing.p50Us) + " / " + us(size.oursPing.p99Us), 22, right: true)
                           + pad(us(size.zeitgeistPing.p50Us) + " / " + us(size.zeitgeistPing.p99Us), 22, right: true))
                for query in size.queries {
                    out.append("    " + pad("Search \(query.kind)", 30)
                               + pad(us(query.ours.p50Us) + " / " + us(query.ours.p99Us), 22, right: true)
                               + pad(us(query.zeitgeist.p50Us) + " / " + us(query.zeitgeist.p99Us), 22, right: true)
                               + pad(String(format: "%.3f×", query.p50Ratio), 9, right: true)
                               + "   results \(query.oursResults) / \(query.zeitgeistResults)"
                               + (query.zeitgeistMatches.map { " of \($0)" } ?? ""))
                }
                if let first = size.queries.first {
                    out.append("    " + pad("  \(first.kind), p50 by slot", 30)
                               + pad(us(first.oursAfterZeitgeistP50Us) + " / " + us(first.oursAfterOursP50Us), 22, right: true)
                               + pad(us(first.zeitgeistAfterOursP50Us) + " / " + us(first.zeitgeistAfterZeitgeistP50Us), 22, right: true)
                               + "   right after the other side's round / after its own")
                }
                out.append("    " + pad("RSS", 30) + pad(kib(size.oursRssKib), 22, right: true)
                           + pad(kib(size.zeitgeistDaemonRssKib) + " + " + kib(size.zeitgeistFtsRssKib), 22, right: true))
                out.append("    " + pad("on disk", 30) + pad(mib(size.oursDiskBytes), 22, right: true)
                           + pad(mib(size.zeitgeistDatabaseBytes) + " + " + mib(size.zeitgeistIndexBytes), 22, right: true)
                           + pad(String(format: "%.2f×", Double(size.oursDiskBytes) / Double(max(1, size.zeitgeistDatabaseBytes + size.zeitgeistIndexBytes))), 9, right: true))
                var fill = "    bulk fill (untimed, informational): "
                fill += size.oursFillPerSecond.map { String(format: "ours %.0f/s", $0) } ?? "ours —"
                fill += size.zeitgeistFillEventsPerSecond.map { String(format: ", Zeitgeist %.0f events/s", $0) } ?? ""
                fill += String(format: "; waited %.1f s for zeitgeist-fts to catch up", size.zeitgeistIndexCatchUpSeconds)
                out.append(fill)
            }
            out.append("  (search: p50 / p99 µs, ratio = ours p50 ÷ Zeitgeist p50; Zeitgeist RSS = zeitgeist-daemon + zeitgeist-fts; its disk = activity.sqlite with WAL + fts.index)")
            out.append("")
        }
        out.append("Memory (RSS; idle = after start, before any load)")
        for row in processes {
            out.append("  " + pad(row.name, 32) + "idle " + pad(kib(row.rssKibIdle), 10, right: true)
                       + "   after load " + pad(kib(row.rssKibAfterLoad), 10, right: true)
                       + "   peak " + pad(kib(row.peakRssKib), 10, right: true) + "   (after \(row.after))")
        }
        out.append("")
        out.append("NOTES")
        for note in notes { out.append("  - " + note) }
        return out.joined(separator: "\n")
    }

    private func us(_ value: Double) -> String { String(format: "%.1f", value) }

    private func cpu(_ figures: InsertFigures) -> String {
        guard let service = figures.serviceCpuUsPerCall, let bus = figures.busCpuUsPerCall else { return "n/a" }
        return String(format: "%.0f, %.0f", service, bus)
    }

    private func kib(_ value: Int?) -> String {
        value.map { String(format: "%.1f MiB", Double($0) / 1024) } ?? "n/a"
    }

    private func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

    private func loads(_ values: [Double]) -> String {
        values.isEmpty ? "n/a" : values.map { String(format: "%.2f", $0) }.joined(separator: " ")
    }

    private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return right ? padding + text : text + padding
    }
}
