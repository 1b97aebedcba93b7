// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity

@Suite("Saved activities: donate, search, suggestions, delete", .serialized)
struct SavedActivityTests {
    @Test("donate() saves a shortcut that search() and suggestions() find, with the spec's result fields")
    func donateSearchSuggest() async throws {
        let h = try LibraryHarness()
        let client = try h.client()
        let shortcut = UserActivity(activityType: UA.openDocument, client: client)
        shortcut.title = "Quarterly report"
        shortcut.contentDescription = "Finance, third quarter"
        shortcut.keywords = ["finance", "q3"]
        shortcut.isEligibleForSearch = true
        shortcut.persistentIdentifier = "doc-42"
        shortcut.webpageURL = URL(string: "https://example.com/doc-42")
        shortcut.suggestedInvocationPhrase = "Open the report"
        shortcut.userInfo = ["path": "/home/me/report.odt"]
        let savedID = try await shortcut.donate()
        #expect(!savedID.isEmpty)
        #expect(shortcut.objectPath == nil, "donating publishes no live activity")
        #expect(try await client.donate(shortcut) == savedID, "the same persistent identifier gives the same saved id")

        let results = try await client.search("quarterly rep")   // the last word matches as a prefix
        #expect(results.count == 1, "\(results)")
        let result = try #require(results.first)
        #expect(result.savedID == savedID)
        #expect(result.appID == UA.notes)
        #expect(result.activityType == UA.openDocument)
        #expect(result.title == "Quarterly report")
        #expect(result.contentDescription == "Finance, third quarter")
        #expect(Set(result.keywords) == ["finance", "q3"])
        #expect(result.webpageURL == URL(string: "https://example.com/doc-42"))
        #expect(result.score > 0)
        #expect(abs(result.lastUsed.timeIntervalSinceNow) < 600)
        #expect(try await client.search("quarterly", appID: "com.example.Reader").isEmpty)
        #expect(try await client.search("quarterly", activityTypes: [UA.openDocument]).count == 1)
        #expect(try await client.search("nothing-like-it").isEmpty)

        // A donation is eligible for prediction unless it says otherwise.
        let suggestions = try await client.suggestions(limit: 5)
        let suggestion = try #require(suggestions.first { $0.savedID == savedID }, "\(suggestions)")
        #expect(suggestion.suggestedInvocationPhrase == "Open the report")
        #expect((suggestion.useCount ?? 0) >= 1)

        // Becoming current with search eligibility saves a copy too.
        let live = UserActivity(activityType: UA.editNote, client: client)
        live.title = "Grocery note"
        live.isEligibleForSearch = true
        try await live.becomeCurrent().wait()
        #expect(try await client.search("grocery").first?.activityType == UA.editNote)
    }

    @Test("deleteSavedActivities(withPersistentIdentifiers:) and deleteAllSavedActivities() remove only this app's copies")
    func deleteSaved() async throws {
        let h = try LibraryHarness()
        let notes = try h.client(UA.notes)
        let reader = try h.client(UA.reader)
        for (client, type, id) in [(notes, UA.openDocument, "a"), (notes, UA.openDocument, "b"),
                                   (notes, UA.editNote, "c"), (reader, UA.editNote, "r")] {
            let activity = UserActivity(activityType: type, client: client)
            activity.title = "Searchable \(id)"
            activity.isEligibleForSearch = true
            activity.persistentIdentifier = id
            try await activity.donate()
        }
        #expect(try await notes.search("searchable").count == 4)

        try await notes.deleteSavedActivities(withPersistentIdentifiers: ["a", "r"])
        let afterOne = try await notes.search("searchable").map(\.title).sorted()
        #expect(afterOne == ["Searchable b", "Searchable c", "Searchable r"], "another app's 'r' stays")

        try await notes.deleteAllSavedActivities()
        #expect(try await notes.search("searchable").map(\.title) == ["Searchable r"])
    }
}
