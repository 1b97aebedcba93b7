// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

private let editType = "com.example.Editor.edit-document"

/// Donations that arrive together share one commit; each is still answered
/// on its own, after that commit, and nothing behind them overtakes them.
@Suite struct GroupedDonationTests {
    private func donation(_ type: String, title: String, persistentID: String) throws -> Message {
        let message = Message.methodCall(destination: "org.example.UserActivity", path: managerPath,
                                         interface: managerInterface, member: "Donate")
        try message.append([.string(type), .stringVariantDictionary([
            ("app-id", .string(ServiceHarness.editor)), ("title", .string(title)),
            ("eligible-for-search", .boolean(true)), ("persistent-identifier", .string(persistentID)),
        ])])
        return message
    }

    @Test func pipelinedDonatesAreEachAnsweredAndWhatFollowsThemSeesThemAll() throws {
        let dirs = try TemporaryDirectory(prefix: "uagroup-")
        // More than the 64 that may wait at once, so one group is written before the loop is idle.
        let count = 150
        var expectedTitles: Set<String> = []
        var messages: [Message] = []
        for index in 0..<count {
            // Every tenth reuses one persistent identifier: one entry, saved again in the same group.
            let persistentID = index % 10 == 0 ? "shared" : "doc-\(index)"
            let title = "grouped note \(index)"
            if index % 10 != 0 { expectedTitles.insert(title) }
            messages.append(try donation(editType, title: title, persistentID: persistentID))
        }
        expectedTitles.insert("grouped note \(count - 10)")
        // One refused in the middle: its error must not touch its neighbours.
        messages.insert(try donation("com.example.Editor.undeclared", title: "grouped refused", persistentID: "x"), at: 75)
        let search = Message.methodCall(destination: "org.example.UserActivity", path: managerPath,
                                        interface: managerInterface, member: "Search")
        try search.append([.string("grouped"), .stringVariantDictionary([("limit", .uint32(200))])])

        do {
            let harness = try ServiceHarness(stateDirectory: dirs.appending("state"))
            let client = try harness.client()
            final class Answers: @unchecked Sendable {
                var donations: [Int: Result<Message, DBusFailure>] = [:]
                var search: Result<Message, DBusFailure>?
            }
            let answers = Answers()
            // Everything is sent before any reply is read.
            for (index, message) in messages.enumerated() {
                client.callAsync(message, timeoutMilliseconds: 20_000) { answers.donations[index] = $0 }
            }
            client.callAsync(search, timeoutMilliseconds: 20_000) { answers.search = $0 }
            let deadline = Date().addingTimeInterval(30)
            while answers.donations.count < messages.count || answers.search == nil, Date() < deadline {
                _ = client.readWriteDispatch(timeoutMilliseconds: 200)
            }
            #expect(answers.donations.count == messages.count)

            var savedIDs: [String: [String]] = [:]
            for (index, message) in messages.enumerated() {
                let result = try #require(answers.donations[index])
                if index == 75 {
                    #expect(throws: DBusFailure.self) { try result.get() }
                    if case .failure(let failure) = result { #expect(failure.name == "org.example.UserActivity.Error.NotDeclared") }
                    continue
                }
                let savedID = try result.get().arguments().first?.stringValue ?? ""
                #expect(savedID.count == 32, "donation \(index) answered '\(savedID)'")
                let persistentID = try message.arguments()[1].stringVariantEntries?.first { $0.0 == "persistent-identifier" }?.1.stringValue ?? ""
                savedIDs[persistentID, default: []].append(savedID)
            }
            // The shared identifier got one saved id every time; the others one each.
            #expect(Set(savedIDs["shared"] ?? []).count == 1)
            #expect(savedIDs["shared"]?.count == count / 10)
            #expect(Set(savedIDs.values.flatMap { $0 }).count == count - count / 10 + 1)

            // The Search sent right behind them saw every one of them.
            let searchReply = try #require(answers.search).get()
            guard case .array(_, let results)? = try searchReply.arguments().first else {
                Issue.record("Search answered no array")
                return
            }
            let found = Set(results.compactMap { $0.stringVariantEntries?.first { $0.0 == "title" }?.1.stringValue })
            #expect(found == expectedTitles)
            harness.stop()
        }
        // Every acknowledged donation was committed: a new daemon on the same files finds them.
        let restarted = try ServiceHarness(stateDirectory: dirs.appending("state"))
        #expect(Set(try restarted.client().searchTitles("grouped")) == expectedTitles)
    }
}
