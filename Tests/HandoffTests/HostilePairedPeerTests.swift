// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import HandoffCore
import TestSupport
import Testing
import TypedValues

@Suite("Handoff against a paired device turned hostile", .serialized)
struct HostilePairedPeerTests {
    static let apps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]

    func hex(_ frame: Frame) -> String {
        FrameCodec.encode(frame).map { String(format: "%02x", $0) }.joined()
    }

    /// A and B paired, then B's daemon stopped: its key is what the hostile
    /// peer presents to A. A device that broke the protocol waits
    /// `backOffSeconds` before it may connect again (none: the tests that
    /// connect again after one need not wait).
    func pairedThenTakeB(backOffSeconds: Int = 0) throws -> (TwoStacks, onA: String) {
        let stacks = try TwoStacks(appsA: Self.apps, appsB: Self.apps,
                                   handoffEnvironment: ["USERACTIVITY_HANDOFF_BACKOFF_SECONDS": "\(backOffSeconds)"])
        let (onA, _) = try stacks.pair()
        stacks.b.killHandoffd()
        #expect(stacks.a.waitForDevice(onA, "Reachable", { $0 == .boolean(false) }), "\(stacks.logs)")
        return (stacks, onA)
    }

    /// Runs the hostile peer (`Peers/paired_peer.py`: B's key, taken after B's
    /// daemon stopped; it sends `sends` after the hellos, `pace` seconds
    /// apart, answers the first fetch with `reply` and sends `afterReply`
    /// once a fetch reply arrives) against A until it ends or `until` says enough; its lines.
    func runPeer(_ stacks: TwoStacks, sends: [Frame], raw: [String] = [], reply: Frame? = nil, afterReply: Frame? = nil, pace: Double = 0,
                 until: (String) -> Bool = { $0 == "CLOSED" }) throws -> [String] {
        let hello = Frame(.hello, ["name": .string("Stack B"), "version": .uint32(1), "port": .uint32(0)])
        let sent = sends.map(hex) + raw
        let process = try stacks.b.bus.spawn("/usr/bin/python3", [PeerScripts.path("paired_peer.py"), "\(stacks.a.port)", PeerScripts.identity(of: stacks.b), hex(hello),
                                                                 sent.isEmpty ? "-" : sent.joined(separator: ","), reply.map(hex) ?? "-",
                                                                 afterReply.map(hex) ?? "-", "\(pace)"])
        defer { process.terminate(grace: 0.5) }
        var lines: [String] = []
        while let line = try process.readLine(timeout: 30) {
            lines.append(line)
            if until(line) || line == "CLOSED" { break }
        }
        return lines
    }

    /// handoffd A is the same process as before and still answers on the bus.
    func expectAStillServes(_ stacks: TwoStacks, _ pid: pid_t?, _ context: String) {
        #expect(stacks.a.handoffd?.pid == pid && stacks.a.handoffd?.waitForExit(timeout: 0.1) == nil, "A exited after \(context)\n\(stacks.logs)")
        #expect((try? stacks.a.call(HO.busName, HO.managerPath, "org.freedesktop.DBus.Peer", "Ping")) != nil, "A stopped answering after \(context)")
    }

    @Test func framesThatOnceAbortedTheDaemonDropOnlyTheLink() throws {
        let (stacks, _) = try pairedThenTakeB()
        let activity = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Quarterly report"))])
        let id = String(activity.split(separator: "/").last ?? "")
        let pid = stacks.a.handoffd?.pid
        // `continued` naming something that is no object path element, then a live activity never fetched.
        for bad in ["1/../x", "1 2", id] {
            let lines = try runPeer(stacks, sends: [Frame(.continued, ["handoff": .string(bad), "app-id": .string(UA.editor)])])
            #expect(lines.last == "CLOSED", "\(lines)")
            expectAStillServes(stacks, pid, "continued \(bad)")
        }
        #expect(stacks.a.logEventually(contains: "a continued frame for an activity it did not fetch"), "\(stacks.logs)")
        // Timeouts that overflowed 32-bit arithmetic: the fetch is answered, capped.
        for timeout: UInt32 in [4_294_967_295, 2_147_483_647] {
            let lines = try runPeer(stacks, sends: [Frame(.fetch, ["request": .uint32(1), "id": .string(id), "timeout-ms": .uint32(timeout)])],
                                    until: { $0 == "FRAME \(FrameKind.fetchReply.rawValue)" })
            #expect(lines.contains("FRAME \(FrameKind.fetchReply.rawValue)"), "\(lines)\n\(stacks.logs)")
            expectAStillServes(stacks, pid, "fetch with timeout-ms \(timeout)")
        }
    }

    /// A device can report only the fetch it made, by the random handoff id
    /// the reply gave it: the activity's own id (its object path's last
    /// element, which the advert shows) is not enough, even right after fetching it.
    @Test func aContinuedFrameNamesTheFetchNotTheActivity() throws {
        let (stacks, _) = try pairedThenTakeB()
        let activity = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Quarterly report"))])
        let id = String(activity.split(separator: "/").last ?? "")
        let pid = stacks.a.handoffd?.pid
        let refusal = "a continued frame for an activity it did not fetch"
        for (index, naming) in [["id": TypedValue.string(id)], ["handoff": .string(id)]].enumerated() {
            let lines = try runPeer(stacks, sends: [Frame(.fetch, ["request": .uint32(1), "id": .string(id), "timeout-ms": .uint32(5000)])],
                                    afterReply: Frame(.continued, naming.merging(["app-id": .string(UA.editor)]) { $1 }))
            #expect(lines.contains("FRAME \(FrameKind.fetchReply.rawValue)"), "\(lines)\n\(stacks.logs)")
            // Refused as a report of nothing fetched (not merely dropped later for silence).
            #expect(waitUntil(timeout: 30) { stacks.a.handoffLog.components(separatedBy: refusal).count - 1 == index + 1 },
                    "\(naming): \(lines)\n\(stacks.logs)")
            expectAStillServes(stacks, pid, "continued naming \(naming)")
        }
    }

    /// What a paired device may send that breaks the protocol (frames as hex), and what A logs for it:
    /// a report of nothing fetched, a frame of a kind that does not exist, a malformed document frame.
    static let offences: [(hex: String, logged: String)] = {
        let encode = { (frame: Frame) in FrameCodec.encode(frame).map { String(format: "%02x", $0) }.joined() }
        let keepalive = encode(Frame(.keepalive))
        // The length (4 bytes), then the kind: 200 is none.
        let unknownKind = String(keepalive.prefix(8)) + "c8" + String(keepalive.dropFirst(10))
        return [
            (encode(Frame(.continued, ["handoff": .string("never fetched"), "app-id": .string(UA.editor)])), "a continued frame for an activity it did not fetch"),
            (unknownKind, "unknown frame kind 200"),
            (encode(Frame(.fileCredit, ["request": .string("not a number")])), "sent a malformed fileCredit frame"),
        ]
    }()

    /// A paired device that broke the protocol is not let in again at once:
    /// it waits (here 60 s, 10 s by default), and longer at each offence.
    @Test(arguments: 0..<offences.count)
    func aDeviceThatBrokeTheProtocolIsRefusedWhenItComesStraightBack(offence: Int) throws {
        let (stacks, _) = try pairedThenTakeB(backOffSeconds: 60)
        let pid = stacks.a.handoffd?.pid
        let first = try runPeer(stacks, sends: [], raw: [Self.offences[offence].hex])
        #expect(first.first == "HELLO" && first.last == "CLOSED", "\(first)")
        #expect(stacks.a.logEventually(contains: Self.offences[offence].logged), "\(stacks.logs)")
        let again = try runPeer(stacks, sends: [])
        #expect(!again.contains("HELLO") && again.last == "CLOSED", "let in again at once: \(again)\n\(stacks.logs)")
        expectAStillServes(stacks, pid, "a device that broke the protocol coming back")
    }

    @Test func aNULInAnAdvertOrADeviceNameDropsTheLinkAndEveryDeviceStaysReadable() throws {
        let (stacks, onA) = try pairedThenTakeB()
        let pid = stacks.a.handoffd?.pid
        let advert = Advert.frame(for: Advert(id: "7", activityType: UA.editType, appID: UA.editor, title: "Quarterly\0report",
                                                             webpageURL: "", timestamp: 1, eligibleForHandoff: true))
        let rename = Frame(.hello, ["name": .string("Stack\0B"), "version": .uint32(1), "port": .uint32(0)])
        for frame in [advert, rename] {
            let lines = try runPeer(stacks, sends: [frame])
            #expect(lines.last == "CLOSED", "\(lines)\n\(stacks.logs)")
            expectAStillServes(stacks, pid, "a NUL in a \(frame.kind) frame")
            // A NUL shown in one device's properties would make them, and GetManagedObjects, fail for everyone.
            #expect((try? stacks.a.devicePaths())?.contains(onA) == true, "\(stacks.logs)")
            #expect((try? stacks.a.deviceProperties(onA))?["Name"] == .string("Stack B"))
        }
        #expect(stacks.a.logEventually(contains: "a hello whose name holds a NUL byte"), "\(stacks.logs)")
    }

    /// The person presses Continue on A for the hostile device's advert; it answers the fetch with `reply`.
    func continueAgainst(reply: (UInt32) -> Frame) throws -> (outcome: String, stacks: TwoStacks) {
        let (stacks, onA) = try pairedThenTakeB()
        let advert = Advert.frame(for: Advert(id: "7", activityType: UA.editType, appID: UA.editor, title: "Quarterly report",
                                              webpageURL: "", timestamp: 1, eligibleForHandoff: true))
        let pid = stacks.a.handoffd?.pid
        let answer = reply(1)
        let peer = BackgroundCall { _ = try self.runPeer(stacks, sends: [advert], reply: answer) }
        #expect(stacks.a.waitForDevice(onA, "CurrentActivity", { $0?.stringVariantEntries?.contains { $0.0 == "title" } == true }), "\(stacks.logs)")
        let outcome = dbusErrorName {
            _ = try stacks.a.call(HO.busName, onA, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])], timeout: 60_000)
        } ?? "ok"
        expectAStillServes(stacks, pid, "the answer to a fetch")
        _ = waitUntil(timeout: 30) { peer.value != nil }
        return (outcome, stacks)
    }

    @Test func anErrorNameLibdbusWouldRefuseIsHandoffFailed() throws {
        let (outcome, stacks) = try continueAgainst { request in
            Frame(.error, ["request": .uint32(request), "name": .string("org.example.UserActivity.Error.not a name!"), "message": .string("x")])
        }
        #expect(outcome == UA.error("HandoffFailed"), "\(stacks.logs)")
        #expect(stacks.a.logEventually(contains: "an error reply whose name is not an error name"), "\(stacks.logs)")
    }

    @Test func aFetchedActivityLibdbusWouldRefuseIsHandoffFailedAndDropsTheLink() throws {
        for bad: TypedValue in [.objectPath("not a path"), .unixFD(0), .array(elementType: "s", [.uint32(1)])] {
            let (outcome, stacks) = try continueAgainst { request in
                Frame(.fetchReply, ["request": .uint32(request), "handoff": .string("h1"), "activity-type": .string(UA.editType), "properties": .dictionary(keyType: "s", valueType: "v", [
                    .init(key: .string("title"), value: .variant(.string("Quarterly report"))),
                    .init(key: .string("user-info"), value: .variant(.dictionary(keyType: "s", valueType: "v", [.init(key: .string("x"), value: .variant(bad))]))),
                ])])
            }
            #expect(outcome == UA.error("HandoffFailed"), "\(bad)\n\(stacks.logs)")
            #expect(stacks.a.logEventually(contains: "sent an activity with"), "\(stacks.logs)")
        }
    }

    @Test func whatIsContinuedIsWhatWasShown() throws {
        let (outcome, stacks) = try continueAgainst { request in
            Frame(.fetchReply, ["request": .uint32(request), "handoff": .string("h1"), "activity-type": .string("org.example.UserActivity.open-document"),
                                "properties": .dictionary(keyType: "s", valueType: "v", [
                                    .init(key: .string("title"), value: .variant(.string("Quarterly report"))),
                                    .init(key: .string("user-info"), value: .variant(.dictionary(keyType: "s", valueType: "v", [
                                        .init(key: .string("uri"), value: .variant(.string("file:///etc/passwd"))),
                                    ]))),
                                ])])
        }
        #expect(outcome == UA.error("HandoffFailed"), "\(stacks.logs)")
        #expect(stacks.a.logEventually(contains: "another activity than the one it advertised"), "\(stacks.logs)")
    }

    /// Adverts as fast as a desktop could never make them, but fewer than the
    /// rule that drops a link: 90 in about two seconds.
    @Test func anAdvertFloodUpdatesOneNotificationAndTheActivityAFewTimesASecond() throws {
        let (stacks, onA) = try pairedThenTakeB()
        let server = try stacks.a.spawnScript(notificationServerScript, "notifications.py", ["none"])
        let watcher = try AdvertTitleWatcher(busAddress: stacks.a.bus.address, devicePath: onA)
        defer { watcher.close() }
        let count = 90
        let adverts = (0..<count).map { index in
            Advert.frame(for: Advert(id: "\(index + 1)", activityType: UA.editType, appID: UA.editor, title: "t\(index)",
                                     webpageURL: "", timestamp: 1, eligibleForHandoff: true))
        }
        let started = Date()
        let peer = BackgroundCall { _ = try self.runPeer(stacks, sends: adverts, pace: 0.02) }
        #expect(watcher.waitForTitle("t\(count - 1)", timeout: 60), "\(stacks.logs)")
        // Whatever the load, the flood took A no longer than this to show: one
        // change at once, then at most one each 250 ms.
        let seconds = Date().timeIntervalSince(started)
        #expect(watcher.currentActivitySignals <= Int(seconds * 4) + 1,
                "\(watcher.titlesShown) shown for \(count) adverts in \(seconds) s\n\(stacks.logs)")
        // The latest state is what stays shown.
        #expect(stacks.a.waitForDevice(onA, "CurrentActivity", { $0?.stringVariantEntries?.contains { $0.0 == "title" && $0.1 == .string("t\(count - 1)") } == true }),
                "\(stacks.logs)")
        var notifications: [String] = []
        while let line = try server.readLine(timeout: 10) {
            notifications.append(line)
            if line.contains("“t\(count - 1)”") { break }
        }
        // In one notification updated in place, a few times a second at most.
        #expect(notifications.last?.contains("“t\(count - 1)”") == true, "\(notifications)")
        let ids = Set(notifications.compactMap { $0.split(separator: " ").dropFirst().first })
        #expect(ids.count == 1, "\(notifications)")
        #expect(notifications.count <= Int(seconds * 4) + 1, "\(notifications.count) Notify calls for \(count) adverts")
        // The peer's link stays up; ending A's side lets its thread return and the stacks go.
        stacks.a.killHandoffd()
        #expect(waitUntil(timeout: 60) { peer.value != nil })
    }

    /// More adverts than any desktop sends (over a hundred within ten seconds): the link drops, A keeps serving.
    @Test func anAdvertFloodBeyondTheRuleDropsTheLink() throws {
        let (stacks, onA) = try pairedThenTakeB()
        let pid = stacks.a.handoffd?.pid
        let adverts = (0..<150).map { index in
            Advert.frame(for: Advert(id: "\(index + 1)", activityType: UA.editType, appID: UA.editor, title: "t\(index)",
                                     webpageURL: "", timestamp: 1, eligibleForHandoff: true))
        }
        let lines = try runPeer(stacks, sends: adverts)
        #expect(lines.last == "CLOSED", "\(lines)")
        #expect(stacks.a.logEventually(contains: "adverts in 10 s: disconnected"), "\(stacks.logs)")
        #expect(stacks.a.waitForDevice(onA, "Reachable", { $0 == .boolean(false) }), "\(stacks.logs)")
        expectAStillServes(stacks, pid, "an advert flood")
    }
}
