// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

extension UA {
    static let browserless = "com.example.Other"
}

@Suite("Handoff adverts and continuation between two stacks", .serialized)
struct AdvertAndContinueTests {
    static let editorApps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]

    func title(_ activity: TypedValue?) -> String? {
        activity?.stringVariantEntries?.first { $0.0 == "title" }?.1.stringValue
    }

    func value(_ activity: TypedValue?, _ key: String) -> TypedValue? {
        activity?.stringVariantEntries?.first { $0.0 == key }?.1
    }

    @Test func theCurrentActivityAppearsAndDisappearsOnThePairedDevice() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps)
        let (_, onB) = try stacks.pair()
        let activity = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [
            ("title", .string("Quarterly report")), ("user-info", .dictionary(keyType: "s", valueType: "v", [
                .init(key: .string("secret"), value: .variant(.string("not in the advert"))),
            ])),
        ])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Quarterly report" }), "\(stacks.logs)")
        let seen = try stacks.b.deviceProperties(onB)["CurrentActivity"]
        #expect(value(seen, "activity-type") == .string(UA.editType))
        #expect(value(seen, "app-id") == .string(UA.editor))
        #expect(value(seen, "continuable") == .boolean(true))
        #expect(value(seen, "webpage-url") == .string(""))
        #expect(value(seen, "user-info") == nil)
        _ = try stacks.a.call(UA.busName, activity, UA.activityInterface, "Invalidate")
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.isEmpty == true }), "\(stacks.logs)")
    }

    @Test func advertsWrittenWhileThePeerReadsNothingAllArriveOnceItReadsAgain() throws {
        // B's daemon is stopped while A advertises ~8.4 MiB (140 adverts with a
        // 60 KiB webpage URL each): more than loopback
        // TCP holds (a send buffer of at most 4 MiB; B's receive buffer cannot
        // grow while nothing reads it), so A's writes find the socket full and
        // must finish once B reads again.
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps)
        let (_, onB) = try stacks.pair()
        let daemonB = try #require(stacks.b.handoffd)
        daemonB.signal(SIGSTOP)
        defer { daemonB.signal(SIGCONT) }
        let path = String(repeating: "x", count: 60 * 1024)
        for index in 0..<140 {
            _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [
                ("title", .string("advert \(index)")), ("webpage-url", .string("https://example.com/\(path)")),
            ])
        }
        // handoffd A answers after handling every signal sent before the call: each advert is written or queued.
        _ = try stacks.a.call(HO.busName, HO.managerPath, "org.freedesktop.DBus.Peer", "Ping")
        daemonB.signal(SIGCONT)
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "advert 139" }), "\(stacks.logs)")
    }

    @Test func notContinuableWithoutADeclaringAppOrURL() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps)
        let (_, onB) = try stacks.pair()
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Only on A"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Only on A" }), "\(stacks.logs)")
        #expect(value(try stacks.b.deviceProperties(onB)["CurrentActivity"], "continuable") == .boolean(false))
    }

    @Test func anAppInstalledWhileRunningMakesTheAdvertContinuable() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps)
        let (_, onB) = try stacks.pair()
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Installed later"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Installed later" }), "\(stacks.logs)")
        #expect(value(try stacks.b.deviceProperties(onB)["CurrentActivity"], "continuable") == .boolean(false))
        // The editor is installed on B while both daemons run: the shown advert follows.
        _ = try stacks.b.session.writeDesktopEntry(appID: UA.editor, types: [UA.editType])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { value($0, "continuable") == .boolean(true) }), "\(stacks.logs)")
    }

    @Test func pauseAndIneligibilityStopAdverts() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps)
        let (_, onB) = try stacks.pair()
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Visible"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Visible" }), "\(stacks.logs)")
        try stacks.a.setPrivacy("Paused", .boolean(true))
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.isEmpty == true }), "\(stacks.logs)")
        #expect(try stacks.b.deviceProperties(onB)["Reachable"] == .boolean(true), "\(stacks.logs)")
        try stacks.a.setPrivacy("Paused", .boolean(false))
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Visible" }), "\(stacks.logs)")
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Private")), ("eligible-for-handoff", .boolean(false))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.isEmpty == true }), "\(stacks.logs)")
        try stacks.a.setPrivacy("BlockedApplications", .array(elementType: "s", [.string(UA.editor)]))
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Blocked app"))])
        // A later unblocked activity shows up, and the blocked one never did.
        try stacks.a.setPrivacy("BlockedApplications", .array(elementType: "s", []))
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("After block"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "After block" }), "\(stacks.logs)")
        #expect(!stacks.b.handoffLog.contains("Blocked app"))
    }

    @Test func aLockedSessionAdvertisesNothing() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps, fakeScreenSaverA: true)
        let (_, onB) = try stacks.pair()
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Before lock"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Before lock" }), "\(stacks.logs)")
        _ = try stacks.a.call("org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver", "org.freedesktop.ScreenSaver", "SetActive", [.boolean(true)])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.isEmpty == true }), "\(stacks.logs)")
        #expect(try stacks.b.deviceProperties(onB)["Reachable"] == .boolean(true), "\(stacks.logs)")
        _ = try stacks.a.call("org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver", "org.freedesktop.ScreenSaver", "SetActive", [.boolean(false)])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Before lock" }), "\(stacks.logs)")
    }

    @Test func logindsLockedHintStopsAdverts() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps, fakeLogindA: true)
        let (_, onB) = try stacks.pair()
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Before logind lock"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Before logind lock" }), "\(stacks.logs)")
        let system = try Connection.bus(address: try #require(stacks.a.systemBus).address)
        defer { system.close() }
        func setLocked(_ locked: Bool) throws {
            _ = try system.call(try Message.methodCall(destination: "org.freedesktop.login1", path: "/org/freedesktop/login1",
                                                       interface: "org.freedesktop.login1.Manager", member: "SetLocked", arguments: [.boolean(locked)]))
        }
        try setLocked(true)
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.isEmpty == true }), "\(stacks.logs)")
        // Withdrawn by an empty advert, not by a dropped link.
        #expect(try stacks.b.deviceProperties(onB)["Reachable"] == .boolean(true), "\(stacks.logs)")
        try setLocked(false)
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Before logind lock" }), "\(stacks.logs)")
    }

    @Test func continuesIntoAHandlerOnTheOtherDeviceAndTheOriginHearsContinued() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps)
        let (_, onB) = try stacks.pair()
        let handler = try HandlerFixture.start(app: UA.editor, bus: stacks.b.bus, directory: stacks.b.session.root)
        defer { handler.terminate(grace: 0.5) }
        // The origin listens for Continued on its activity.
        let watcher = try Connection.bus(address: stacks.a.bus.address)
        defer { watcher.close() }
        let activity = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [
            ("title", .string("Handed over")),
            ("user-info", .dictionary(keyType: "s", valueType: "v", [.init(key: .string("page"), value: .variant(.int32(7)))])),
        ])
        try watcher.addMatch("type='signal',interface='\(UA.activityInterface)',member='Continued',path='\(activity)'")
        // The service sends an activity's signals only to connections that asked for them.
        _ = try watcher.call(try Message.methodCall(
            destination: UA.busName, path: UA.managerPath, interface: UA.managerInterface, member: "Subscribe",
            arguments: []))
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Handed over" }), "\(stacks.logs)")
        let app = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])])
        #expect(app.first == .string(UA.editor), "\(stacks.logs)")
        let line = try #require(try handler.readLine(timeout: 20))
        #expect(line.contains("Handed over"), "\(line)")
        var continuedBy: String?
        try watcher.addFilter { message in
            if message.member == "Continued" { continuedBy = (try? message.arguments())?.first?.stringValue }
            return false
        }
        _ = waitUntil(timeout: 30) {
            watcher.readWriteDispatch(timeoutMilliseconds: 50)
            return continuedBy != nil
        }
        #expect(continuedBy == UA.editor, "\(stacks.logs)")
    }

    @Test func continuingWhenTheOriginDiesMidFetchIsConnectionUnavailable() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps)
        let (_, onB) = try stacks.pair()
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Going away")), ("needs-save", .boolean(true))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Going away" }), "\(stacks.logs)")
        // A's owner never answers SaveActivity (no handler registered... the
        // service then uses the data as they are), so stop A's daemon instead.
        stacks.a.killHandoffd()
        let name = dbusErrorName { try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])]) }
        #expect(name == "org.example.UserActivity.Error.ConnectionUnavailable", "\(stacks.logs)")
    }

    @Test func continuingAnUnpairedDeviceIsNotPaired() throws {
        let stacks = try TwoStacks()
        let path = try stacks.link()
        let name = dbusErrorName { try stacks.a.call(HO.busName, path, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])]) }
        #expect(name == "org.example.UserActivity.Error.NotPaired")
    }

    @Test func noAppToContinueOnTheReceivingSideIsNoHandler() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps)
        let (_, onB) = try stacks.pair()
        _ = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Nowhere to go"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Nowhere to go" }), "\(stacks.logs)")
        let name = dbusErrorName { try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])]) }
        #expect(name == "org.example.UserActivity.Error.NoHandler", "\(name ?? "ok")")
    }

    @Test func anActivityThatEndedIsHandoffFailed() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps)
        let (_, onB) = try stacks.pair()
        let activity = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Short lived"))])
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { title($0) == "Short lived" }), "\(stacks.logs)")
        _ = try stacks.a.call(UA.busName, activity, UA.activityInterface, "Invalidate")
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.isEmpty == true }), "\(stacks.logs)")
        let name = dbusErrorName { try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])]) }
        #expect(name == "org.example.UserActivity.Error.HandoffFailed", "\(name ?? "ok")")
    }
}
