// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

extension ContinuationTests {
    @Suite("Dispatch never blocks the daemon")
    struct Latency {
        @Test("Ping and an ordinary call stay fast (p99 < 100 ms) while 50 continuations wait for a slow app; all 50 then succeed")
        func pingWhileFiftySlowContinuations() throws {
            let h = try ContinuationHarness(apps: [AppEntry(UA.viewer, .handler())])
            try h.startHandler(UA.viewer, answer: "slow:4000")
            let sender = try h.connect()
            let prober = try h.connect()
            _ = try prober.ping() // the daemon is up and this connection identified

            final class Replies: @unchecked Sendable { var results: [String] = [] }
            let replies = Replies()
            let count = 50
            for index in 0..<count {
                let message = Message.methodCall(destination: UA.busName, path: UA.managerPath,
                                                 interface: UA.managerInterface, member: "ContinueActivity")
                try message.append([.string(UA.editType), .stringVariantDictionary([("title", .string("slow \(index)"))]),
                                    .stringVariantDictionary([])])
                sender.connection.callAsync(message, timeoutMilliseconds: 25_000) { result in
                    switch result {
                    case .success(let reply): replies.results.append((try? reply.arguments().first?.stringValue) ?? "?")
                    case .failure(let failure): replies.results.append(failure.name)
                    }
                }
            }
            sender.connection.flush()
            // All 50 are with the app (and so pending in the daemon) before measuring.
            let delivered = waitUntil(timeout: 30) { h.events(UA.viewer, "continue").count == count }
            #expect(delivered, "only \(h.events(UA.viewer, "continue").count) of \(count) reached the app\n\(h.logTail())")
            #expect(replies.results.isEmpty, "the slow app answers after 4 s")

            var pings: [Double] = []
            var calls: [Double] = []
            for _ in 0..<150 {
                pings.append(try prober.ping())
                let start = Date()
                try prober.call(UA.managerPath, "org.freedesktop.DBus.Properties", "Get",
                                [.string(UA.managerInterface), .string("Version")])
                calls.append(Date().timeIntervalSince(start))
            }
            let stillPending = h.events(UA.viewer, "answered-late").count
            #expect(stillPending < count, "the measurement did not overlap the pending continuations")
            let p99Ping = percentile(pings, 0.99)
            let p99Call = percentile(calls, 0.99)
            print("continuation latency check: \(count) pending; Ping p50 \(ms(percentile(pings, 0.5))) p99 \(ms(p99Ping)); Properties.Get p50 \(ms(percentile(calls, 0.5))) p99 \(ms(p99Call))")
            #expect(p99Ping < 0.1, "Ping p99 \(ms(p99Ping)) (p50 \(ms(percentile(pings, 0.5)))) with \(count) slow continuations pending")
            #expect(p99Call < 0.1, "Properties.Get p99 \(ms(p99Call)) (p50 \(ms(percentile(calls, 0.5))))")

            let finished = waitUntil(timeout: 30, interval: 0) {
                sender.connection.readWriteDispatch(timeoutMilliseconds: 20)
                return replies.results.count == count
            }
            #expect(finished, "\(replies.results.count) of \(count) answered\n\(h.logTail())")
            #expect(replies.results == Array(repeating: UA.viewer, count: count), "\(Set(replies.results))")
        }
    }
}

private func percentile(_ samples: [Double], _ p: Double) -> Double {
    guard !samples.isEmpty else { return 0 }
    let sorted = samples.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

private func ms(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1000) }
