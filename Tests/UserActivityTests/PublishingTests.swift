// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity

@Suite("Publishing: becomeCurrent, batched updates, resign, invalidate", .serialized)
struct PublishingTests {
    @Test("becomeCurrent() publishes the activity as CurrentActivity with every property it was given")
    func becomeCurrentPublishesProperties() async throws {
        let h = try LibraryHarness()
        let client = try h.client()
        let activity = UserActivity(activityType: UA.editNote, client: client)
        activity.title = "Shopping list"
        activity.userInfo = [
            "note": "n-1",
            "line": .uint32(12),
            "tags": ["home", "weekend"],
            "cursor": ["x": 1, "y": 2.5],
        ]
        activity.requiredUserInfoKeys = ["note"]
        activity.keywords = ["groceries", "list"]
        activity.contentDescription = "Milk, eggs, bread"
        activity.webpageURL = URL(string: "https://example.com/notes/n-1")
        activity.referrerURL = URL(string: "https://example.com/")
        activity.targetContentIdentifier = "window-2"
        activity.persistentIdentifier = "n-1"
        activity.expirationDate = Date(timeIntervalSince1970: 4_000_000_000)
        activity.isEligibleForHandoff = false
        activity.isEligibleForSearch = true
        activity.isEligibleForPrediction = true
        activity.isEligibleForPublicIndexing = true
        activity.suggestedInvocationPhrase = "Show my list"

        #expect(activity.objectPath == nil)
        try await activity.becomeCurrent().wait()
        let path = try #require(activity.objectPath)
        #expect(path.hasPrefix("/org/example/UserActivity/activity/"))
        #expect(try await h.currentActivity() == path)

        let properties = try await h.properties(path)
        #expect(properties["ActivityType"] == .string(UA.editNote))
        #expect(properties["AppId"] == .string(UA.notes))
        #expect(properties["Current"] == .boolean(true))
        #expect(properties["Title"] == .string("Shopping list"))
        #expect(properties["Keywords"] == .stringArray(["groceries", "list"]))
        #expect(properties["RequiredUserInfoKeys"] == .stringArray(["note"]))
        #expect(properties["ContentDescription"] == .string("Milk, eggs, bread"))
        #expect(properties["WebpageURL"] == .string("https://example.com/notes/n-1"))
        #expect(properties["ReferrerURL"] == .string("https://example.com/"))
        #expect(properties["TargetContentIdentifier"] == .string("window-2"))
        #expect(properties["PersistentIdentifier"] == .string("n-1"))
        #expect(properties["ExpirationDate"] == .int64(4_000_000_000_000_000))
        #expect(properties["EligibleForHandoff"] == .boolean(false))
        #expect(properties["EligibleForSearch"] == .boolean(true))
        #expect(properties["EligibleForPrediction"] == .boolean(true))
        #expect(properties["EligibleForPublicIndexing"] == .boolean(true))
        #expect(properties["SuggestedInvocationPhrase"] == .string("Show my list"))
        #expect(properties["NeedsSave"] == .boolean(false))

        // User info keeps each value's exact type through the service.
        let info = entries(properties["UserInfo"])
        #expect(info["note"] == .string("n-1"))
        #expect(info["line"] == .uint32(12))
        #expect(info["tags"] == .stringArray(["home", "weekend"]))
        #expect(entries(info["cursor"]) == ["x": .int64(1), "y": .double(2.5)])

        // And it reads back the same way through UserInfoValue.
        let roundTrip = UserInfoCoding.userInfo(try #require(properties["UserInfo"]?.unwrappedVariant))
        #expect(roundTrip == activity.userInfo)
    }

    @Test("Changes after publishing go out as one Update: one PropertiesChanged with all of them")
    func updatesAreBatched() async throws {
        let h = try LibraryHarness()
        let client = try h.client()
        let activity = UserActivity(activityType: UA.editNote, client: client)
        activity.title = "Draft"
        activity.userInfo = ["note": "n-2", "line": 1]
        try await activity.becomeCurrent().wait()
        let path = try #require(activity.objectPath)
        let monitor = try h.monitor([DaemonSignal.rule(path: path, interface: "org.freedesktop.DBus.Properties")])
        defer { monitor.stop() }

        activity.performBatchUpdates {
            activity.title = "Draft (edited)"
            activity.keywords = ["draft"]
            activity.addUserInfoEntries(["line": 2, "column": .uint32(7)])
            activity.isEligibleForSearch = true
        }
        await client.waitForPendingRequests()

        let seen = await monitor.wait { signals in signals.contains { $0.changed["Title"] != nil } }
        #expect(seen, "no PropertiesChanged with Title\n\(h.logTail())")
        // (The daemon announces Current=true right after BecomeCurrent's reply: not part of the batch.)
        let changes = monitor.signals.filter {
            $0.arguments.first == .string(UA.activityInterface) && !Set($0.changed.keys).subtracting(["Current"]).isEmpty
        }
        #expect(changes.count == 1, "expected one PropertiesChanged, got \(changes.map(\.changed.keys))")
        let changed = try #require(changes.first).changed
        #expect(changed["Title"]?.unwrappedVariant == .string("Draft (edited)"))
        #expect(changed["Keywords"]?.unwrappedVariant == .stringArray(["draft"]))
        #expect(changed["EligibleForSearch"]?.unwrappedVariant == .boolean(true))
        #expect(entries(changed["UserInfo"]) == ["note": .string("n-2"), "line": .int64(2), "column": .uint32(7)])

        // Changes made one by one in quick succession are coalesced too, and always arrive.
        activity.title = "Final"
        activity.contentDescription = "three lines"
        activity.keywords.insert("final")
        await client.waitForPendingRequests()
        let properties = try await h.properties(path)
        #expect(properties["Title"] == .string("Final"))
        #expect(properties["ContentDescription"] == .string("three lines"))
        #expect(properties["Keywords"] == .stringArray(["draft", "final"]))
    }

    @Test("becomeCurrent() inside a batch carries its changes: the service applies them before the activity is current again")
    func becomeCurrentInABatchCarriesTheChanges() async throws {
        let h = try LibraryHarness()
        let client = try h.client()
        let activity = UserActivity(activityType: UA.editNote, client: client)
        activity.title = "Page 1"
        try await activity.becomeCurrent().wait()
        let path = try #require(activity.objectPath)
        let other = UserActivity(activityType: UA.editNote, client: client)
        other.title = "Elsewhere"
        try await other.becomeCurrent().wait()
        #expect(try await h.currentActivity() != path)
        let monitor = try h.monitor([DaemonSignal.rule(path: path, interface: "org.freedesktop.DBus.Properties")])
        defer { monitor.stop() }

        var operation: ActivityOperation?
        activity.performBatchUpdates {
            activity.title = "Page 2"
            activity.keywords = ["two"]
            operation = activity.becomeCurrent()
        }
        try await #require(operation).wait()
        #expect(try await h.currentActivity() == path)
        let properties = try await h.properties(path)
        #expect(properties["Title"] == .string("Page 2"))
        #expect(properties["Keywords"] == .stringArray(["two"]))

        let seen = await monitor.wait { signals in signals.contains { $0.changed["Current"]?.unwrappedVariant == .boolean(true) } }
        #expect(seen, "no PropertiesChanged with Current\n\(h.logTail())")
        let changes = monitor.signals.filter { $0.arguments.first == .string(UA.activityInterface) }
        let titleAt = changes.firstIndex { $0.changed["Title"] != nil }
        let currentAt = changes.firstIndex { $0.changed["Current"]?.unwrappedVariant == .boolean(true) }
        #expect(titleAt != nil && currentAt != nil && titleAt! <= currentAt!,
                "the title changes before (or with) Current: \(changes.map(\.changed.keys))")
        #expect(changes.filter { $0.changed["Title"] != nil }.count == 1, "one Update")
    }

    @Test("resignCurrent() leaves the activity on the bus, not current; invalidate() removes it for good")
    func resignAndInvalidate() async throws {
        let h = try LibraryHarness()
        let client = try h.client()
        let activity = UserActivity(activityType: UA.editNote, client: client)
        activity.title = "To resign"
        try await activity.becomeCurrent().wait()
        let path = try #require(activity.objectPath)

        try await activity.resignCurrent().wait()
        #expect(try await h.currentActivity() == "/")
        #expect(try await h.properties(path)["Current"] == .boolean(false))

        try await activity.becomeCurrent().wait()
        #expect(try await h.currentActivity() == path, "becoming current again reuses the live object")

        try await activity.invalidate().wait()
        #expect(activity.isInvalidated)
        #expect(try await h.currentActivity() == "/")
        #expect(await h.rawErrorName(path, "org.freedesktop.DBus.Properties", "Get",
                                     [.string(UA.activityInterface), .string("Title")]) == "org.freedesktop.DBus.Error.UnknownObject")

        // An invalidated activity cannot become current again.
        let again = activity.becomeCurrent()
        await #expect(throws: UserActivityError.self) { try await again.wait() }
        #expect(again.error?.code == .invalidated)
    }

    @Test("A newer current activity replaces the older one; releasing a published activity invalidates it")
    func currentMovesAndReleaseInvalidates() async throws {
        let h = try LibraryHarness()
        let client = try h.client()
        let first = UserActivity(activityType: UA.editNote, client: client)
        first.title = "First"
        first.becomeCurrent()
        var second: UserActivity? = UserActivity(activityType: UA.showPage, client: client)
        second?.title = "Second"
        // Requests keep their order: the second ends up current.
        try await second?.becomeCurrent().wait()
        let secondPath = try #require(second?.objectPath)
        #expect(try await h.currentActivity() == secondPath)
        let firstPath = try #require(first.objectPath)
        #expect(try await h.properties(firstPath)["Current"] == .boolean(false))

        second = nil
        await client.waitForPendingRequests()
        #expect(await h.rawErrorName(secondPath, "org.freedesktop.DBus.Properties", "Get",
                                     [.string(UA.activityInterface), .string("Title")]) == "org.freedesktop.DBus.Error.UnknownObject")
        #expect(try await h.currentActivity() == "/")
    }

    @Test("The service's refusal reaches the caller: an undeclared type is NotDeclared, with the service's words")
    func notDeclaredError() async throws {
        let h = try LibraryHarness()
        let client = try h.client()
        let errors = Recorder<String>()
        client.onError = { _, request in errors.append(request) }
        let activity = UserActivity(activityType: "com.example.Notes.not-declared", client: client)
        let operation = activity.becomeCurrent()
        do {
            try await operation.wait()
            Issue.record("becomeCurrent of an undeclared type succeeded")
        } catch let error as UserActivityError {
            #expect(error.code == .notDeclared)
            #expect(error.message.contains("com.example.Notes.not-declared"), "\(error.message)")
        }
        #expect(activity.objectPath == nil)
        #expect(errors.values.isEmpty, "an awaited failure is not also reported to onError")

        // Nobody waits for this one: onError hears about it.
        UserActivity(activityType: "com.example.Notes.also-not-declared", client: client).becomeCurrent()
        #expect(await errors.wait { $0.contains { $0.contains("also-not-declared") } }, "\(errors.values)")
    }

    @Test("Without a running service that can be started, requests fail with serviceUnknown and a helpful message")
    func serviceNotInstalled() async throws {
        let session = try SessionEnvironment()
        try session.writeDesktopEntry(appID: UA.notes, types: [UA.editNote])
        let bus = try PrivateBus(environment: session)   // no .service file: nothing to activate
        defer { bus.stop() }
        let client = try UserActivityClient(appID: UA.notes, address: bus.address)
        client.onError = { _, _ in }
        do {
            _ = try await client.search("anything")
            Issue.record("search succeeded without a service")
        } catch let error as UserActivityError {
            #expect(error.code == .serviceUnknown)
            #expect(error.message.contains("useractivityd"), "\(error.message)")
        }
    }
}
