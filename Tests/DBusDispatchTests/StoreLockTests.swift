// SPDX-License-Identifier: Apache-2.0
@testable import ActivityStore
import SchedulerTestSupport
import DBusKit
import Foundation
import GLibSupport
import TestSupport
import Testing
import TypedValues

/// Another connection holding the store's write lock (a person's `sqlite3`
/// shell inside a transaction, a daemon being replaced) must not hold up the
/// daemon's loop: a donation waits for the lock from a timer while every
/// other call is answered, is written once the lock is gone, and fails with
/// `StorageFailed` if it never is.
@Suite struct StoreLockTests {
    private static let start: Int64 = 1_790_000_000_000_000
    private static let editType = "com.example.Editor.edit-document"

    private final class Answers: @unchecked Sendable {
        var waited: Result<Message, DBusFailure>?
        var gaveUp: Result<Message, DBusFailure>?
    }

    private func donation(_ title: String) throws -> Message {
        let message = Message.methodCall(destination: "org.example.UserActivity", path: managerPath,
                                         interface: managerInterface, member: "Donate")
        try message.append([.string(Self.editType), .stringVariantDictionary([
            ("app-id", .string(ServiceHarness.editor)), ("title", .string(title)),
            ("eligible-for-search", .boolean(true)),
        ])])
        return message
    }

    /// The service with one saved entry ("lock before"), a second connection
    /// to its file holding the write lock, and a donation sent meanwhile.
    private struct LockedStore {
        let directory: TemporaryDirectory
        let harness: ServiceHarness
        let client: Connection
        let holder: SQLiteConnection
    }

    private func lockedStore(donating title: String, into answers: Answers) throws -> LockedStore {
        let directory = try TemporaryDirectory(prefix: "ualock-")
        let harness = try ServiceHarness(stateDirectory: directory.appending("state"), scheduler: ManualScheduler(now: Self.start))
        let client = try harness.client()
        try client.callService(managerInterface, "Donate", [.string(Self.editType), .stringVariantDictionary([
            ("app-id", .string(ServiceHarness.editor)), ("title", .string("lock before")), ("eligible-for-search", .boolean(true)),
        ])])
        let holder = try SQLiteConnection(path: directory.appending("state") + "/" + ActivityStore.fileName)
        try holder.execute("BEGIN IMMEDIATE")
        client.callAsync(try donation(title), timeoutMilliseconds: 60_000) { answers.waited = $0 }
        // Search writes the donations waiting before it reads, so the daemon
        // has tried (and found the lock) by the time Search is answered; a
        // daemon that waited out the lock on its loop would have answered the
        // donation first.
        #expect(try client.searchTitles("lock") == ["lock before"])
        client.dispatchPending()
        #expect(answers.waited == nil, "the donation was answered while another connection held the lock: \(String(describing: answers.waited))")
        return LockedStore(directory: directory, harness: harness, client: client, holder: holder)
    }

    @Test func aDonationWaitsForAnotherConnectionsLockWithoutHoldingUpTheLoop() throws {
        let answers = Answers()
        let locked = try lockedStore(donating: "lock waited", into: answers)
        let (harness, client, holder) = (locked.harness, locked.client, locked.holder)

        // A second of tries, every one locked out; still unanswered, nothing else held up.
        harness.advance(byMilliseconds: 1000)
        #expect(try client.searchTitles("lock") == ["lock before"])
        client.dispatchPending()
        #expect(answers.waited == nil)

        // The lock goes: the next try writes it and answers.
        try holder.execute("COMMIT")
        harness.advance(byMilliseconds: 50)
        let deadline = Date().addingTimeInterval(30)
        while answers.waited == nil, Date() < deadline { _ = client.readWriteDispatch(timeoutMilliseconds: 100) }
        let savedID = try #require(answers.waited).get().arguments().first?.stringValue ?? ""
        #expect(savedID.count == 32, "answered '\(savedID)'")
        #expect(try client.searchTitles("lock") == ["lock before", "lock waited"])

        // A lock held past the wait: the donation fails, with a message that says why.
        try holder.execute("BEGIN IMMEDIATE")
        client.callAsync(try donation("lock gave up"), timeoutMilliseconds: 60_000) { answers.gaveUp = $0 }
        #expect(try client.searchTitles("lock") == ["lock before", "lock waited"])
        client.dispatchPending()
        #expect(answers.gaveUp == nil)
        harness.advance(byMilliseconds: 5_050)
        while answers.gaveUp == nil, Date() < deadline.addingTimeInterval(30) { _ = client.readWriteDispatch(timeoutMilliseconds: 100) }
        guard case .failure(let failure)? = answers.gaveUp else {
            Issue.record("a donation kept out by the lock for 5 s was answered \(String(describing: answers.gaveUp))")
            return
        }
        #expect(failure.name == "org.example.UserActivity.Error.StorageFailed")
        #expect(failure.message.contains("another process holds its write lock"), "\(failure.message)")
        try holder.execute("COMMIT")
        #expect(try client.searchTitles("lock") == ["lock before", "lock waited"])
    }

    /// Donations waiting for the lock are bounded: past 256 a new one is
    /// refused at once, and those already waiting are written once it goes.
    @Test func atMost256DonationsWaitForTheLockTheNextAreRefusedAtOnce() throws {
        let answers = Answers()
        let locked = try lockedStore(donating: "lock queued 0", into: answers)
        let (harness, client, holder) = (locked.harness, locked.client, locked.holder)
        final class More: @unchecked Sendable { var answers: [Int: Result<Message, DBusFailure>] = [:] }
        let more = More()
        for index in 1..<300 {
            client.callAsync(try donation("lock queued \(index)"), timeoutMilliseconds: 60_000) { more.answers[index] = $0 }
        }
        #expect(try client.searchTitles("lock") == ["lock before"])
        client.dispatchPending()
        #expect(answers.waited == nil)
        #expect(Set(more.answers.keys) == Set(256..<300), "answered while the lock was held: \(more.answers.keys.sorted())")
        for (index, result) in more.answers {
            guard case .failure(let failure) = result else {
                Issue.record("donation \(index) beyond the bound was not refused: \(result)")
                continue
            }
            #expect(failure.name == "org.example.UserActivity.Error.StorageFailed")
            #expect(failure.message.contains("256 donations already wait"), "\(failure.message)")
        }

        try holder.execute("COMMIT")
        harness.advance(byMilliseconds: 50)
        let deadline = Date().addingTimeInterval(30)
        while more.answers.count < 299 || answers.waited == nil, Date() < deadline { _ = client.readWriteDispatch(timeoutMilliseconds: 100) }
        #expect(try #require(answers.waited).get().arguments().first?.stringValue?.count == 32)
        for index in 1..<256 {
            #expect(try more.answers[index]?.get().arguments().first?.stringValue?.count == 32, "donation \(index)")
        }
        // Written, and none of the refused ones.
        #expect(try client.searchTitles("lock queued 255") == ["lock queued 255"])
        #expect(try client.searchTitles("lock queued 256").isEmpty)
    }

    /// A write must not be overtaken by a donation accepted before it (a
    /// forget would miss it): a donation still waiting for the lock fails
    /// when another write comes, and is not written after the lock goes.
    @Test func aWriteFailsTheDonationsWaitingForTheLockRatherThanLettingThemFollowIt() throws {
        let answers = Answers()
        let locked = try lockedStore(donating: "lock overtaken", into: answers)
        let (harness, client, holder) = (locked.harness, locked.client, locked.holder)

        let forget = dbusErrorName { try client.callService(managerInterface, "ForgetApplication", [.string(ServiceHarness.editor)]) }
        #expect(forget == "org.example.UserActivity.Error.StorageFailed")
        client.dispatchPending()
        guard case .failure(let failure)? = answers.waited else {
            Issue.record("the waiting donation was not failed before the write: \(String(describing: answers.waited))")
            return
        }
        #expect(failure.name == "org.example.UserActivity.Error.StorageFailed")

        try holder.execute("COMMIT")
        harness.advance(byMilliseconds: 1000)
        #expect(try client.searchTitles("lock") == ["lock before"])
    }
}
