// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// Continuation streams whose two apps are on different devices, relayed by
/// both handoff daemons; and continuations that fail on the receiving device.
@Suite("Continuation streams between two stacks", .serialized)
struct CrossDeviceStreamTests {
    static let editorApps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]

    func line(_ process: ChildProcess, _ prefix: String) -> String? { streamAppLine(process, prefix) }

    /// Pairs two stacks, starts the origin app on A in `originMode` and the
    /// continuing app on B in `continuerMode`, continues on B and waits until
    /// both apps hold their ends.
    func connected(origin originMode: [String], continuer continuerMode: [String]) throws -> (TwoStacks, origin: ChildProcess, continuer: ChildProcess) {
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps)
        let (_, onB) = try stacks.pair()
        let origin = try stacks.a.spawnScript(streamAppScript, "stream_app.py", ["origin", UA.editor, UA.editType] + originMode)
        #expect(line(origin, "CURRENT") != nil)
        let continuer = try stacks.b.spawnScript(streamAppScript, "stream_app.py", ["continuer", UA.editor, UA.editType] + continuerMode)
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", {
            $0?.stringVariantEntries?.first { $0.0 == "title" }?.1 == .string("Streaming")
        }), "\(stacks.logs)")
        let app = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])])
        #expect(app.first == .string(UA.editor), "\(stacks.logs)")
        #expect(line(continuer, "CONTINUE") == "CONTINUE token", "\(continuer.stderrText)")
        guard line(continuer, "OPENED") != nil, line(origin, "OPENED") != nil else {
            throw HandoffTestFailure("the stream did not open on both ends: \(continuer.stderrText) \(origin.stderrText)\n\(stacks.logs)")
        }
        return (stacks, origin, continuer)
    }

    @Test func bytesTravelBothWaysAndClosingOneEndClosesTheOther() throws {
        // A's app writes 300 000 bytes; B's app, once it has them all, writes
        // 1 MiB back (four flow-control windows) and closes its end.
        let (stacks, origin, continuer) = try connected(origin: ["send", "300000"], continuer: ["echo-then-close", "300000"])
        defer {
            origin.terminate(grace: 0.5)
            continuer.terminate(grace: 0.5)
        }
        let sentByA = try #require(line(origin, "SENT"), "\(stacks.logs)")
        let receivedByB = try #require(line(continuer, "RECV 300000 "), "\(continuer.stdoutText)\n\(stacks.logs)")
        #expect(receivedByB.split(separator: " ").last == sentByA.split(separator: " ").last)
        let sentByB = try #require(line(continuer, "SENT"), "\(stacks.logs)")
        #expect(line(continuer, "CLOSED") != nil)
        // Everything B's app wrote before closing arrives, then the end of the stream.
        let endOnA = try #require(line(origin, "EOF"), "\(origin.stdoutText)\n\(stacks.logs)")
        #expect(endOnA == "EOF 1048576 \(sentByB.split(separator: " ").last ?? "")", "\(stacks.logs)")
    }

    @Test func whenTheOriginDeviceGoesAwayBothEndsAreClosed() throws {
        let (stacks, origin, continuer) = try connected(origin: ["send", "1000"], continuer: ["hold"])
        defer {
            origin.terminate(grace: 0.5)
            continuer.terminate(grace: 0.5)
        }
        #expect(line(continuer, "RECV 1000 ") != nil, "\(stacks.logs)")
        stacks.a.killHandoffd()
        #expect(line(continuer, "EOF 1000 ") != nil, "\(continuer.stdoutText)\n\(stacks.logs)")
        #expect(line(origin, "EOF") != nil, "\(origin.stdoutText)")
        #expect(waitUntil(timeout: 30) { stacks.b.handoffLog.contains("ConnectionUnavailable: Stack A went away") }, "\(stacks.logs)")
    }

    @Test func closingTheOriginsEndClosesTheContinuingAppsEnd() throws {
        let (stacks, origin, continuer) = try connected(origin: ["echo-then-close", "10"], continuer: ["send", "10"])
        defer {
            origin.terminate(grace: 0.5)
            continuer.terminate(grace: 0.5)
        }
        let sentByA = try #require(line(origin, "SENT"), "\(stacks.logs)")
        #expect(line(origin, "CLOSED") != nil)
        let endOnB = try #require(line(continuer, "EOF"), "\(continuer.stdoutText)\n\(stacks.logs)")
        #expect(endOnB == "EOF 1048576 \(sentByA.split(separator: " ").last ?? "")", "\(stacks.logs)")
    }

    @Test func aStreamWhoseAppStopsReadingDoesNotHoldUpAdverts() throws {
        // A's app writes 8 MiB into a stream B's app never reads: flow control
        // stops the relays at a window, and the link keeps carrying adverts.
        let (stacks, origin, continuer) = try connected(origin: ["send", "\(8 << 20)"], continuer: ["stall"])
        defer {
            origin.terminate(grace: 0.5)
            continuer.terminate(grace: 0.5)
        }
        let onB = stacks.b.devicePath(of: stacks.a)
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Meanwhile"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", {
            $0?.stringVariantEntries?.first { $0.0 == "title" }?.1 == .string("Meanwhile")
        }), "\(stacks.logs)")
        #expect(stacks.b.waitForDevice(onB, "Reachable", { $0 == .boolean(true) }))
    }

    @Test func aContinuationThatFailsOnTheReceivingDeviceIsReportedToTheOrigin() throws {
        // B has no app declaring the type: it fetches the activity, then its useractivityd finds no handler.
        let stacks = try TwoStacks(appsA: Self.editorApps)
        let (_, onB) = try stacks.pair()
        let watcher = try Connection.bus(address: stacks.a.bus.address)
        defer { watcher.close() }
        let activity = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Cannot land"))])
        var continued = false
        try watcher.addMatch("type='signal',interface='\(UA.activityInterface)',member='Continued',path='\(activity)'")
        try watcher.addFilter { message in
            if message.member == "Continued" { continued = true }
            return false
        }
        _ = try watcher.call(try Message.methodCall(
            destination: UA.busName, path: UA.managerPath, interface: UA.managerInterface, member: "Subscribe",
            arguments: []))
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", {
            $0?.stringVariantEntries?.first { $0.0 == "title" }?.1 == .string("Cannot land")
        }), "\(stacks.logs)")
        let name = dbusErrorName { try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])]) }
        #expect(name == "org.example.UserActivity.Error.NoHandler", "\(name ?? "ok")")
        let id = activity.split(separator: "/").last.map(String.init) ?? ""
        #expect(waitUntil(timeout: 30) {
            watcher.readWriteDispatch(timeoutMilliseconds: 50)
            return stacks.a.handoffLog.contains("Stack B could not continue activity \(id): org.example.UserActivity.Error.NoHandler")
        }, "\(stacks.logs)")
        // Whatever was in flight has arrived by now: the log line came after any Continued would have.
        watcher.readWriteDispatch(timeoutMilliseconds: 200)
        #expect(!continued)
    }
}
