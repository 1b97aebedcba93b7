// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import GLibSupport
import SchedulerTestSupport
import TestSupport
import Testing
import TypedValues

private let editType = "com.example.Editor.edit-document"
private let changed = "\(managerPath) \(managerInterface).SavedActivitiesChanged"

/// `SavedActivitiesChanged` is a coalesced hint, on the service's clock
/// (moved by hand here), to the unconfined connections that follow everything.
@Suite("SavedActivitiesChanged")
struct SavedActivitiesSignalTests {
    private static let start: Int64 = 1_700_000_000_000_000
    typealias Counter = SignalSubscriptionTests.SignalCounter

    private static func count(_ counter: Counter) -> Int { counter.received.filter { $0 == changed }.count }

    @Test("A donation gives subscribed unconfined connections one signal once the interval has passed; others get none")
    func aDonationIsSignalledOnce() throws {
        let harness = try ServiceHarness(scheduler: ManualScheduler(now: Self.start))
        let listener = try Counter(harness.client())
        try listener.connection.callService(managerInterface, "Subscribe")
        let objectManager = try Counter(harness.client())
        try objectManager.connection.callService("org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        // Following the manager's properties is not following the history.
        let propertyReader = try Counter(harness.client())
        _ = try propertyReader.connection.property(managerPath, managerInterface, "CurrentActivity")
        let actor = try Counter(harness.client())

        #expect(try actor.connection.donate(editType, app: ServiceHarness.editor, title: "Report") != "")
        try listener.settle()
        #expect(Self.count(listener) == 0, "sent before the interval: \(listener.received)")

        harness.advance(byMilliseconds: 250)
        #expect(listener.wait { $0.contains(changed) }, "\(listener.received)")
        #expect(objectManager.wait { $0.contains(changed) }, "\(objectManager.received)")
        harness.advance(byMilliseconds: 1000)
        for counter in [listener, objectManager, propertyReader, actor] { try counter.settle() }
        #expect(Self.count(listener) == 1, "\(listener.received)")
        #expect(Self.count(objectManager) == 1, "\(objectManager.received)")
        #expect(Self.count(propertyReader) == 0, "\(propertyReader.received)")
        #expect(actor.received.isEmpty, "the acting client was sent \(actor.received)")
    }

    @Test("A burst of donations and forgets is one signal; a change while one is pending is covered by it; the last change is always followed by one")
    func aBurstIsCoalesced() throws {
        let harness = try ServiceHarness(scheduler: ManualScheduler(now: Self.start))
        let listener = try Counter(harness.client())
        try listener.connection.callService(managerInterface, "Subscribe")
        let actor = try harness.client()

        var ids: [String] = []
        for index in 0..<30 { ids.append(try actor.donate(editType, app: ServiceHarness.editor, title: "Note \(index)")) }
        let deleted = try actor.callService(managerInterface, "ForgetSavedActivities", [.stringArray(Array(ids.prefix(5)))])
        #expect(deleted.first == .uint32(5))
        harness.advance(byMilliseconds: 100)
        _ = try actor.donate(editType, app: ServiceHarness.editor, title: "Late")
        harness.advance(byMilliseconds: 150)
        #expect(listener.wait { $0.contains(changed) }, "\(listener.received)")
        harness.advance(byMilliseconds: 1000)
        try listener.settle()
        #expect(Self.count(listener) == 1, "\(listener.received)")

        // A change after the signal left gets its own.
        #expect(try actor.callService(managerInterface, "ForgetAll").first == .uint32(26))
        harness.advance(byMilliseconds: 250)
        #expect(listener.wait { $0.filter { $0 == changed }.count == 2 }, "\(listener.received)")
        // A forget that deletes nothing changes nothing.
        #expect(try actor.callService(managerInterface, "ForgetAll").first == .uint32(0))
        harness.advance(byMilliseconds: 1000)
        try listener.settle()
        #expect(Self.count(listener) == 2, "\(listener.received)")
    }

    @Test("Blocking an app deletes its history, which is signalled")
    func blockingIsSignalled() throws {
        let harness = try ServiceHarness(scheduler: ManualScheduler(now: Self.start))
        let listener = try Counter(harness.client())
        try listener.connection.callService(managerInterface, "Subscribe")
        let actor = try harness.client()
        _ = try actor.donate(editType, app: ServiceHarness.editor, title: "Blocked soon")
        harness.advance(byMilliseconds: 250)
        #expect(listener.wait { $0.contains(changed) }, "\(listener.received)")
        try actor.setManagerProperty("BlockedApplications", .stringArray([ServiceHarness.editor]))
        harness.advance(byMilliseconds: 250)
        #expect(listener.wait { $0.filter { $0 == changed }.count == 2 }, "\(listener.received)")
    }

    @Test("A confined app is never sent it, not even for its own donations")
    func aConfinedAppGetsNone() throws {
        let harness = try ServiceHarness(confinedAs: ServiceHarness.sandboxed, scheduler: ManualScheduler(now: Self.start))
        let app = try Counter(harness.client())
        try app.connection.callService(managerInterface, "Subscribe")
        try app.connection.callService("org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        let saved = try app.connection.callService(managerInterface, "Donate", [.string("com.example.Sandboxed.play"), .stringVariantDictionary([
            ("title", .string("Level 3")), ("eligible-for-search", .boolean(true)),
        ])])
        #expect(saved.first?.stringValue?.isEmpty == false, "nothing was saved: \(saved)")
        // It does follow its own activities: the subscription stands.
        _ = try app.connection.createActivity("com.example.Sandboxed.play", [("title", .string("Live"))])
        #expect(app.wait { $0.contains("\(managerPath) org.freedesktop.DBus.ObjectManager.InterfacesAdded") }, "\(app.received)")
        harness.advance(byMilliseconds: 1000)
        try app.settle()
        #expect(Self.count(app) == 0, "\(app.received)")
    }
}
