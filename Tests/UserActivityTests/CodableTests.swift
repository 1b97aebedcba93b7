// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity

struct Bookmark: ActivityCodable, Equatable {
    enum Kind: String, Codable { case note, page }
    struct Position: Codable, Equatable { var line: Int; var column: UInt32 }

    var id: String
    var kind: Kind
    var position: Position
    var tags: [String]
    var opened: Date
    var source: URL
    var thumbnail: Data
    var zoom: Double?
    var revision: Int32

    /// Everything but the optional zoom: saved copies keep only these keys.
    static let requiredUserInfoKeys: Set<String>? = ["id", "kind", "position", "tags", "opened", "source", "thumbnail", "revision"]

    static let sample = Bookmark(
        id: "bm-7", kind: .page, position: Position(line: 12, column: 4), tags: ["a", "b"],
        opened: Date(timeIntervalSince1970: 1_700_000_000.123456), source: URL(string: "https://example.com/x?y=1")!,
        thumbnail: Data([0, 1, 2, 255]), zoom: 1.5, revision: -3)
}

/// Lists fewer keys than it needs to decode.
struct Underlisted: ActivityCodable, Equatable {
    var name: String
    var count: Int
    static let requiredUserInfoKeys: Set<String>? = ["name"]
}

/// Every key is required (the default).
struct PlainRef: ActivityCodable, Equatable {
    var path: String
    var page: Int
}

@Suite("Typed user info through Codable", .serialized)
struct CodableTests {
    @Test("Encoding picks D-Bus types from Swift types; decoding rebuilds the value")
    func encodeDecode() throws {
        let info = try Bookmark.sample.encodedUserInfo()
        #expect(info["id"]?.typedValue == .string("bm-7"))
        #expect(info["kind"]?.typedValue == .string("page"))
        #expect(info["position"]?.typedValue == .stringVariantDictionary([("line", .int64(12)), ("column", .uint32(4))]))
        #expect(info["tags"]?.typedValue == .stringArray(["a", "b"]))
        #expect(info["opened"]?.typedValue == .int64(1_700_000_000_123_456))
        #expect(info["source"]?.typedValue == .string("https://example.com/x?y=1"))
        #expect(info["thumbnail"]?.typedValue == .array(elementType: "y", [.byte(0), .byte(1), .byte(2), .byte(255)]))
        #expect(info["zoom"]?.typedValue == .double(1.5))
        #expect(info["revision"]?.typedValue == .int32(-3))
        #expect(try Bookmark(userInfo: info) == Bookmark.sample)

        var noZoom = Bookmark.sample
        noZoom.zoom = nil
        let withoutZoom = try noZoom.encodedUserInfo()
        #expect(withoutZoom["zoom"] == nil, "nil optionals are left out")
        #expect(try Bookmark(userInfo: withoutZoom) == noZoom)

        // Numbers written with other integer types (another language, say) still decode.
        var loose = info
        loose["revision"] = .int(-3)
        loose["position"] = ["line": .uint32(12), "column": 4]
        #expect(try Bookmark(userInfo: loose) == Bookmark.sample)
    }

    @Test("A missing required key is a clear error naming the key; a wrong type names the key and both types")
    func missingKey() throws {
        var info = try Bookmark.sample.encodedUserInfo()
        info["position"] = nil
        #expect(throws: UserInfoError.missingRequiredKey("position", type: "Bookmark", present: info.keys.sorted())) {
            try Bookmark(userInfo: info)
        }
        let description = catchError { try Bookmark(userInfo: info) }
        #expect(description.contains("the required key 'position' is missing"), "\(description)")

        // Without an explicit list every key is required; the decoder names the missing one.
        #expect(throws: UserInfoError.missingRequiredKey("page", type: "PlainRef", present: ["path"])) {
            try PlainRef(userInfo: ["path": "/tmp/a"])
        }

        // A key the type needs but does not list: saved copies would drop it; the error says what to do.
        let unlisted = catchError { try Underlisted(userInfo: ["name": "x"]) }
        #expect(unlisted.contains("the key 'count' is missing"), "\(unlisted)")
        #expect(unlisted.contains("'count' is not in Underlisted.requiredUserInfoKeys, and saved copies keep only those keys"), "\(unlisted)")

        let wrong = catchError { try PlainRef(userInfo: ["path": "/tmp/a", "page": "three"]) }
        #expect(wrong.contains("'page' has the wrong type"), "\(wrong)")
        #expect(wrong.contains("found a value of D-Bus type 's'"), "\(wrong)")
    }

    @Test("setUserInfo(from:) sets the required keys; the value survives the service (live activity read back)")
    func liveRoundTrip() async throws {
        let h = try LibraryHarness()
        let client = try h.client()
        let activity = UserActivity(activityType: UA.openDocument, client: client)
        try activity.setUserInfo(from: Bookmark.sample)
        #expect(activity.requiredUserInfoKeys == Bookmark.requiredUserInfoKeys)
        try await activity.becomeCurrent().wait()
        let path = try #require(activity.objectPath)

        let properties = try await h.properties(path)
        #expect(properties["RequiredUserInfoKeys"] == .stringArray(Bookmark.requiredUserInfoKeys!.sorted()))
        let stored = UserInfoCoding.userInfo(try #require(properties["UserInfo"]?.unwrappedVariant))
        #expect(try Bookmark(userInfo: stored) == Bookmark.sample)
        #expect(try activity.userInfo(as: Bookmark.self) == Bookmark.sample)

        // The service enforces the required keys too.
        let refusals = Recorder<UserActivityError>()
        client.onError = { error, _ in refusals.append(error) }
        activity.userInfo = ["id": "only"]
        await client.waitForPendingRequests()
        #expect(refusals.values.map(\.code) == [.missingRequiredUserInfoKeys], "the batched Update's refusal reaches onError")
        #expect(entries(try await h.properties(path)["UserInfo"])["kind"] != nil,
                "the Update without required keys was refused (MissingRequiredUserInfoKeys); the stored data stay")
    }

    @Test("Donated, then continued from the saved copy: the handler rebuilds the value (saved copies keep the required keys only)")
    func savedRoundTrip() async throws {
        let h = try LibraryHarness()
        let client = try h.client()
        let received = Recorder<Bookmark>()
        let shortcut = UserActivity(activityType: UA.openDocument, client: client)
        shortcut.title = "Bookmark seven"
        shortcut.isEligibleForSearch = true
        try shortcut.setUserInfo(from: Bookmark.sample)
        try await shortcut.donate()
        let savedID = try #require(try await client.search("bookmark seven").first?.savedID)

        do {
            try await client.register(continuationHandler: ContinuationClosures { activity in
                received.append(try activity.userInfo(as: Bookmark.self))
                return true
            })
            let app = try await client.continueSavedActivity(savedID, options: .init(targetAppID: UA.notes, timeout: 60))
            #expect(app == UA.notes)
            #expect(await received.wait())
            var expected = Bookmark.sample
            expected.zoom = nil   // optional and not required: not kept in the saved copy
            #expect(received.values.first == expected)
        }
    }
}

/// The description of the error `body` throws ("" when it does not throw).
func catchError(_ body: () throws -> Any) -> String {
    do {
        _ = try body()
        return ""
    } catch {
        return "\(error)"
    }
}
