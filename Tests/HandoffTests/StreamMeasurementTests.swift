// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// Throughput of a continuation stream relayed between two stacks, against a
/// local stream on one stack measured in the same run (a ratio, not a gate):
/// `HANDOFF_MEASURE=1 swift test --filter StreamMeasurementTests`.
@Suite("Handoff stream measurements", .serialized, .enabled(if: ProcessInfo.processInfo.environment["HANDOFF_MEASURE"] == "1"))
struct StreamMeasurementTests {
    static let bytes = 32 << 20

    func line(_ process: ChildProcess, _ prefix: String) -> String? { streamAppLine(process, prefix, timeout: 120) }

    /// Milliseconds from the sink's OPENED to its end of file, once it had every byte.
    func elapsed(_ sink: ChildProcess) -> Double? {
        guard let elapsed = line(sink, "ELAPSED").flatMap({ Double($0.dropFirst("ELAPSED ".count)) }),
              line(sink, "EOF") == "EOF \(Self.bytes) \(hashlessDigest)" else { return nil }
        return elapsed
    }

    /// The sink does not hash (it would measure Python): its EOF line carries the empty input's SHA-256.
    let hashlessDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    @Test func relayedAgainstLocalThroughput() throws {
        let stacks = try TwoStacks(appsA: [(UA.editor, [UA.editType]), (UA.viewer, [UA.editType])], appsB: [(UA.editor, [UA.editType])])
        let (_, onB) = try stacks.pair()
        let script = "stream_app.py"

        // Baseline: origin and continuing app on the same stack (one socket pair).
        let localOrigin = try stacks.a.spawnScript(streamAppScript, script, ["origin", UA.editor, UA.editType, "send-close", "\(Self.bytes)"])
        let activity = try #require(line(localOrigin, "CURRENT").map { String($0.dropFirst("CURRENT ".count)) })
        let localSink = try stacks.a.spawnScript(streamAppScript, script, ["continuer", UA.viewer, UA.editType, "sink"])
        _ = try stacks.a.call(UA.busName, activity, UA.activityInterface, "Continue",
                              [.dictionary(keyType: "s", valueType: "v", [.init(key: .string("target-app-id"), value: .variant(.string(UA.viewer)))])])
        let local = try #require(elapsed(localSink), "\(localSink.stdoutText) \(localSink.stderrText)")
        localOrigin.terminate(grace: 0.5)
        localSink.terminate(grace: 0.5)

        let peakBefore = peakResidentSize(stacks.b)
        // Relayed: the continuing app on the other stack.
        let origin = try stacks.a.spawnScript(streamAppScript, script, ["origin", UA.editor, UA.editType, "send-close", "\(Self.bytes)"])
        defer { origin.terminate(grace: 0.5) }
        _ = line(origin, "CURRENT")
        let sink = try stacks.b.spawnScript(streamAppScript, script, ["continuer", UA.editor, UA.editType, "sink"])
        defer { sink.terminate(grace: 0.5) }
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", {
            $0?.stringVariantEntries?.first { $0.0 == "title" }?.1 == .string("Streaming")
        }), "\(stacks.logs)")
        _ = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])])
        let relayed = try #require(elapsed(sink), "\(sink.stdoutText) \(stacks.logs)")

        let mib = Double(Self.bytes) / 1_048_576
        print(String(format: "MEASURE stream of %.0f MiB: local %.1f ms (%.1f MiB/s), relayed over TLS %.1f ms (%.1f MiB/s), relayed/local time %.2f",
                     mib, local, mib / local * 1000, relayed, mib / relayed * 1000, relayed / local))
        print("MEASURE receiving useractivity-handoffd peak resident size: before the stream \(peakBefore), after \(peakResidentSize(stacks.b))")
    }

    func peakResidentSize(_ stack: Stack) -> String {
        guard let pid = stack.handoffd?.pid, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return "?" }
        return line.dropFirst("VmHWM:".count).trimmingCharacters(in: .whitespaces)
    }
}
