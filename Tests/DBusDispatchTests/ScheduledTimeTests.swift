// SPDX-License-Identifier: Apache-2.0
import SchedulerTestSupport
import DBusKit
import Foundation
import GLibSupport
import TestSupport
import Testing
import TypedValues

/// Expiry, donation batching and the signals a call causes (sent at once, on no
/// timer) on a clock the test moves by hand: dates are reached by `advance`, never by sleeping, so
/// load cannot change the outcome.
@Suite struct ScheduledTimeTests {
    private static let start: Int64 = 1_800_000_000_000_000
    private static let editType = "com.example.Editor.edit-document"
    private static let claimEditor: (String, TypedValue) = ("app-id", .string(ServiceHarness.editor))

    @Test("A current activity stays current until its expiration date, then stops being current and cannot become current again")
    func expiresAtItsDate() throws {
        let scheduler = ManualScheduler(now: Self.start)
        let harness = try ServiceHarness(scheduler: scheduler)
        let client = try harness.client()
        let path = try client.createActivity(Self.editType, [Self.claimEditor, ("title", .string("Short-lived")),
                                                             ("expiration-date", .int64(Self.start + 60_000_000))],
                                             becomeCurrent: true)
        #expect(try client.property(managerPath, managerInterface, "CurrentActivity") == .objectPath(path))

        harness.advance(byMilliseconds: 59_000)
        #expect(try client.property(managerPath, managerInterface, "CurrentActivity") == .objectPath(path))
        #expect(try client.property(path, activityInterface, "Title") == .string("Short-lived"))

        harness.advance(byMilliseconds: 2_000)
        #expect(try client.property(managerPath, managerInterface, "CurrentActivity") == .objectPath("/"))
        #expect(try client.property(path, activityInterface, "Current") == .boolean(false))
        #expect(dbusErrorName { try client.callService(on: path, activityInterface, "BecomeCurrent") }
                == "org.example.UserActivity.Error.Expired")
        // It stays on the bus until invalidated.
        #expect(try client.property(path, activityInterface, "Title") == .string("Short-lived"))
    }

    private func donation(title: String) throws -> Message {
        let donate = Message.methodCall(destination: "org.example.UserActivity", path: managerPath,
                                        interface: managerInterface, member: "Donate")
        try donate.append([.string(Self.editType), .stringVariantDictionary([Self.claimEditor, ("title", .string(title))])])
        return donate
    }

    @Test("A donation with no call queued behind it is written and answered at once, on no idle work or timer")
    func loneDonationIsWrittenAtOnce() throws {
        let scheduler = ManualScheduler(now: Self.start)
        let harness = try ServiceHarness(scheduler: scheduler)
        let client = try harness.client()
        // The service's own timers (the hourly retention check).
        let quiet = harness.onLoop { scheduler.pendingCount }
        final class Answer: @unchecked Sendable { var result: Result<Message, DBusFailure>? }
        let answer = Answer()
        client.callAsync(try donation(title: "Alone"), timeoutMilliseconds: 30_000) { answer.result = $0 }
        // The service's time stands still: only a write in the same dispatch can answer.
        let deadline = Date().addingTimeInterval(30)
        while answer.result == nil, Date() < deadline { _ = client.readWriteDispatch(timeoutMilliseconds: 200) }
        let savedID = try #require(answer.result).get().arguments().first?.stringValue ?? ""
        #expect(savedID.count == 32)
        #expect(harness.onLoop { scheduler.pendingCount } == quiet, "the donation left idle work or a timer behind")
    }

    @Test("A donation with a call queued behind it waits for its batch: at the batching deadline when the loop stays busy")
    func donationWaitsForItsBatch() throws {
        let scheduler = ManualScheduler(now: Self.start)
        let harness = try ServiceHarness(scheduler: scheduler)
        let client = try harness.client()
        let quiet = harness.onLoop { scheduler.pendingCount }
        final class Answers: @unchecked Sendable {
            var donation: Result<Message, DBusFailure>?
            var version: Result<Message, DBusFailure>?
        }
        let answers = Answers()
        func version() throws -> Message {
            let get = Message.methodCall(destination: "org.example.UserActivity", path: managerPath,
                                         interface: "org.freedesktop.DBus.Properties", member: "Get")
            try get.append([.string(managerInterface), .string("Version")])
            return get
        }
        // The service learns who the caller is on its first call (asking the
        // bus); that call over, a Donate is handled as soon as it is read.
        _ = try client.call(try version(), timeoutMilliseconds: 30_000)

        // The service's loop is held while both calls reach its socket, so
        // that it reads them together and finds the Get queued behind the Donate.
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread.detachNewThread { harness.onLoop { held.signal(); release.wait() } }
        held.wait()
        client.callAsync(try donation(title: "Batched"), timeoutMilliseconds: 30_000) { answers.donation = $0 }
        client.callAsync(try version(), timeoutMilliseconds: 30_000) { answers.version = $0 }
        // The bus handles one sender's messages in order: once it answers
        // this, it has passed both calls on to the service.
        _ = try client.call(Message.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               interface: "org.freedesktop.DBus", member: "GetId"),
                            timeoutMilliseconds: 30_000)
        release.signal()

        let deadline = Date().addingTimeInterval(30)
        while answers.version == nil, Date() < deadline { _ = client.readWriteDispatch(timeoutMilliseconds: 200) }
        _ = try #require(answers.version).get()
        // The write waits for both the idle work and the deadline timer.
        #expect(harness.onLoop { scheduler.pendingCount } == quiet + 2)
        _ = client.readWriteDispatch(timeoutMilliseconds: 0)
        #expect(answers.donation == nil, "answered before the batch was written")

        harness.advance(byMilliseconds: 5)
        #expect(harness.onLoop { scheduler.pendingCount } == quiet, "the write cancelled the idle work it made unnecessary")
        while answers.donation == nil, Date() < deadline { _ = client.readWriteDispatch(timeoutMilliseconds: 200) }
        let savedID = try #require(answers.donation).get().arguments().first?.stringValue ?? ""
        #expect(savedID.count == 32)
    }

    @Test("A call's signals wait for no timer: they arrive while the service's time stands still")
    func signalsNeedNoTimer() throws {
        let scheduler = ManualScheduler(now: Self.start)
        let harness = try ServiceHarness(scheduler: scheduler)
        let owner = try harness.client()
        let watcher = try harness.client()
        try watcher.addMatch("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        // The service sends activity signals only to connections that asked for them.
        try watcher.callService(managerInterface, "Subscribe")
        let path = try owner.createActivity(Self.editType, [Self.claimEditor, ("title", .string("One"))])
        harness.advance(byMilliseconds: 1)
        // The service's own timers (the hourly retention check).
        let quiet = harness.onLoop { scheduler.pendingCount }
        var titles: [TypedValue] = []
        try watcher.addFilter { message in
            if message.member == "PropertiesChanged", message.path == path,
               let entries = (try? message.arguments())?[1].stringVariantEntries {
                titles += entries.filter { $0.0 == "Title" }.map { $0.1.unwrappedVariant }
            }
            return false
        }

        try owner.callService(on: path, activityInterface, "Update", [.stringVariantDictionary([("title", .string("Two"))])])
        // Answered; its signal went out with the reply, and no timer was armed for it.
        #expect(harness.onLoop { scheduler.pendingCount } == quiet)
        _ = waitUntil(timeout: 30) {
            watcher.readWriteDispatch(timeoutMilliseconds: 50)
            return !titles.isEmpty
        }
        #expect(titles == [.string("Two")])
    }

    @Test("The retention limit is enforced hourly on the scheduler: an entry unused for too long goes without any call")
    func retentionIsCheckedHourly() throws {
        let scheduler = ManualScheduler(now: Self.start)
        let harness = try ServiceHarness(scheduler: scheduler)
        let client = try harness.client()
        try client.setManagerProperty("RetentionDays", .uint32(30))
        try donate(client, harness, title: "old note")
        harness.advance(byMilliseconds: 20 * 86_400_000)
        try donate(client, harness, title: "new note")
        harness.advance(byMilliseconds: 9 * 86_400_000 + 23 * 3_600_000)
        let before = try client.searchTitles("note")
        #expect(before == ["new note", "old note"], "purged before 30 days passed")
        // 30 days and 1 h: the hourly check has passed the old entry's limit.
        harness.advance(byMilliseconds: 2 * 3_600_000)
        let after = try client.searchTitles("note")
        #expect(after == ["new note"])
    }

    /// Donates and waits for the answer, moving the batching deadline by hand.
    private func donate(_ client: Connection, _ harness: ServiceHarness, title: String) throws {
        let donate = Message.methodCall(destination: "org.example.UserActivity", path: managerPath,
                                        interface: managerInterface, member: "Donate")
        try donate.append([.string(Self.editType), .stringVariantDictionary([Self.claimEditor, ("title", .string(title)),
                                                                                 ("eligible-for-search", .boolean(true))])])
        final class Answer: @unchecked Sendable { var result: Result<Message, DBusFailure>? }
        let answer = Answer()
        client.callAsync(donate, timeoutMilliseconds: 30_000) { answer.result = $0 }
        client.flush()
        let deadline = Date().addingTimeInterval(30)
        while answer.result == nil, Date() < deadline {
            harness.advance(byMilliseconds: 5)
            _ = client.readWriteDispatch(timeoutMilliseconds: 50)
        }
        _ = try #require(answer.result).get()
    }
}
