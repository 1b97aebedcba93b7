// SPDX-License-Identifier: Apache-2.0
import Testing
import TypedValues
@testable import UserActivityCore

/// The registry with a declared-types double: apps declare `<app>.*` types.
private func makeRegistry(limits: ActivityLimits = .standard) -> ActivityRegistry {
    ActivityRegistry(limits: limits) { app, type in type.hasPrefix(app + ".") }
}

private func patch(_ pairs: [(String, TypedValue)], claim: Bool = true) throws -> ActivityPatch {
    try ActivityPatch.parse(pairs, allowsAppIDClaim: claim)
}

/// The kind of `UserActivityError` thrown by `body`, or nil.
private func errorKind(_ body: () throws -> Void) -> UserActivityError.Kind? {
    do { try body() } catch let error as UserActivityError { return error.kind } catch { return nil }
    return nil
}

private let editor = "com.example.Editor"
private let viewer = "com.example.Viewer"

@Suite struct CurrentActivityRule {
    @Test func onlyOneActivityIsCurrentAcrossApps() throws {
        let registry = makeRegistry()
        let (a, _) = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.1", now: 1)
        let (b, _) = try registry.create(type: "\(viewer).view", properties: ActivityPatch(), app: viewer, connection: ":1.2", now: 1)
        #expect(registry.currentID == nil)
        #expect(try registry.becomeCurrent(a.id, now: 2) == [.currentChanged(from: nil, to: a.id)])
        #expect(try registry.becomeCurrent(b.id, now: 3) == [.currentChanged(from: a.id, to: b.id)])
        #expect(registry.currentID == b.id)
        #expect(try registry.resignCurrent(a.id).isEmpty, "resigning a non-current activity is a no-op")
        #expect(try registry.resignCurrent(b.id) == [.currentChanged(from: b.id, to: nil)])
        #expect(registry.currentID == nil)
    }

    @Test func aTypeNoLongerDeclaredCannotBecomeCurrent() throws {
        var declared = true
        let registry = ActivityRegistry { app, type in declared && type.hasPrefix(app + ".") }
        let (a, _) = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.1", now: 1)
        declared = false   // the desktop entry no longer lists it
        #expect(errorKind { _ = try registry.becomeCurrent(a.id, now: 2) } == .notDeclared)
        #expect(registry.currentID == nil)
        declared = true
        #expect(try registry.becomeCurrent(a.id, now: 3) == [.currentChanged(from: nil, to: a.id)])
    }

    @Test func invalidatingTheCurrentActivityClearsCurrent() throws {
        let registry = makeRegistry()
        let (a, _) = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.1", now: 1)
        _ = try registry.becomeCurrent(a.id, now: 1)
        #expect(try registry.invalidate(a.id) == [.currentChanged(from: a.id, to: nil), .removed(id: a.id, app: a.appID)])
        #expect(registry.activity(a.id) == nil)
        #expect(throws: UserActivityError.self) { try registry.becomeCurrent(a.id, now: 2) }
    }

    @Test func closingAConnectionInvalidatesOnlyItsActivities() throws {
        let registry = makeRegistry()
        let (a, _) = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.1", now: 1)
        let (b, _) = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.2", now: 1)
        _ = try registry.becomeCurrent(a.id, now: 1)
        let events = registry.connectionClosed(":1.1")
        #expect(events.contains(.removed(id: a.id, app: a.appID)))
        #expect(events.contains(.currentChanged(from: a.id, to: nil)))
        #expect(registry.activity(b.id) != nil)
        #expect(registry.liveCount(connection: ":1.1") == 0)
    }

    @Test func becomingCurrentWhileEligibleRequestsASaveThatCountsAUse() throws {
        let registry = makeRegistry()
        let (a, _) = try registry.create(type: "\(editor).edit", properties: try patch([("eligible-for-search", .boolean(true))]),
                                         app: editor, connection: ":1.1", now: 1)
        let events = try registry.becomeCurrent(a.id, now: 2)
        #expect(events.contains(.saveRequested(id: a.id, countsAsUse: true)))
        let update = try registry.update(a.id, with: try patch([("title", .string("New"))]), now: 3)
        #expect(update.contains(.saveRequested(id: a.id, countsAsUse: false)))
    }
}

@Suite struct ExpiryRule {
    @Test func expiredActivityStopsBeingCurrentAndCannotBecomeCurrent() throws {
        let registry = makeRegistry()
        let (a, _) = try registry.create(type: "\(editor).edit", properties: try patch([("expiration-date", .int64(100))]),
                                         app: editor, connection: ":1.1", now: 10)
        _ = try registry.becomeCurrent(a.id, now: 20)
        #expect(registry.nextExpiration() == 100)
        #expect(registry.expireDue(now: 99).isEmpty)
        #expect(registry.expireDue(now: 100) == [.currentChanged(from: a.id, to: nil)])
        #expect(registry.activity(a.id) != nil, "an expired activity stays on the bus until invalidated")
        #expect(errorKind { _ = try registry.becomeCurrent(a.id, now: 101) } == .expired, "expected Expired")
        #expect(registry.nextExpiration() == nil)
    }

    @Test func creatingWithAPastExpirationIsExpired() throws {
        let registry = makeRegistry()
        #expect(errorKind {
            _ = try registry.create(type: "\(editor).edit", properties: try patch([("expiration-date", .int64(5))]),
                                    app: editor, connection: ":1.1", now: 10)
        } == .expired)
    }
}

@Suite struct Limits {
    @Test func the257thLiveActivityOnAConnectionIsRefused() throws {
        let registry = makeRegistry()
        for _ in 0..<256 {
            _ = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.1", now: 1)
        }
        #expect(errorKind { _ = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.1", now: 1) } == .limitExceeded, "expected LimitExceeded")
        // Another connection is unaffected.
        _ = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.2", now: 1)
    }

    @Test func theSessionWideCapApplies() throws {
        var limits = ActivityLimits()
        limits.maximumLiveActivities = 3
        let registry = makeRegistry(limits: limits)
        for n in 0..<3 {
            _ = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.\(n)", now: 1)
        }
        #expect(errorKind { _ = try registry.create(type: "\(editor).edit", properties: ActivityPatch(), app: editor, connection: ":1.9", now: 1) } == .limitExceeded, "expected LimitExceeded")
    }

    @Test func userInfoOver64KiBIsTooLargeAndNothingIsApplied() throws {
        let registry = makeRegistry()
        let (a, _) = try registry.create(type: "\(editor).edit", properties: try patch([("title", .string("Before"))]),
                                         app: editor, connection: ":1.1", now: 1)
        let big = TypedValue.stringVariantDictionary([("blob", .string(String(repeating: "x", count: 70 * 1024)))])
        #expect(errorKind { _ = try registry.update(a.id, with: try patch([("title", .string("After")), ("user-info", big)]), now: 2) } == .userInfoTooLarge, "expected UserInfoTooLarge")
        #expect(registry.activity(a.id)?.properties.title == "Before", "nothing is half-applied")
    }

    @Test func userInfoSizeIsTheMarshalledSizeOfTheDictionary() throws {
        // 4 (length) + 4 (pad to 8) + key "k": 4+1+1 = 6 → 14, variant sig "s": 3 → 17, pad to 20, string: 4+n+1
        let value = TypedValue.stringVariantDictionary([("k", .string("abc"))])
        #expect(value.marshalledSize == 28)
        let limit = ActivityLimits.standard.maximumUserInfoBytes
        let fits = TypedValue.stringVariantDictionary([("k", .string(String(repeating: "a", count: limit - 25)))])
        #expect(fits.marshalledSize == limit)
        _ = try ActivityPatch.parse([("user-info", fits)], allowsAppIDClaim: false).applied(to: ActivityProperties(), limits: .standard)
    }

    @Test func textLimits() throws {
        let tooLongTitle = String(repeating: "é", count: 513) // 1026 bytes
        for pairs in [[("title", TypedValue.string(tooLongTitle))],
                      [("keywords", .stringArray(Array(repeating: "k", count: 65)))],
                      [("keywords", .stringArray([String(repeating: "k", count: 1025)]))]] {
            #expect(errorKind { _ = try patch(pairs).applied(to: ActivityProperties(), limits: .standard) } == .limitExceeded, "expected LimitExceeded for \(pairs[0].0)")
        }
    }
}

@Suite struct PropertyValidation {
    private func expectInvalid(_ pairs: [(String, TypedValue)], claim: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(errorKind { _ = try patch(pairs, claim: claim).applied(to: ActivityProperties(), limits: .standard) } == .invalidArgument,
                "expected InvalidArgument", sourceLocation: sourceLocation)
    }

    @Test func unknownKeysWrongTypesAndActivityTypeAreInvalid() {
        expectInvalid([("colour", .string("red"))])
        expectInvalid([("title", .int32(3))])
        expectInvalid([("activity-type", .string("com.example.Editor.x"))])
        expectInvalid([("title", .string("a")), ("title", .string("b"))])
        expectInvalid([("app-id", .string("com.example.Editor"))], claim: false)
        expectInvalid([("expiration-date", .int64(-1))])
    }

    @Test func userInfoRefusesFileDescriptorsPathsAndSignaturesAtAnyDepth() {
        expectInvalid([("user-info", .stringVariantDictionary([("fd", .unixFD(3))]))])
        expectInvalid([("user-info", .stringVariantDictionary([("p", .objectPath("/a"))]))])
        expectInvalid([("user-info", .stringVariantDictionary([("nested", .array(elementType: "g", [.signature("s")]))]))])
        expectInvalid([("user-info", .stringVariantDictionary([("deep", .variant(.variant(.objectPath("/x"))))]))])
        // Found by type even where there is no value: empty containers.
        expectInvalid([("user-info", .stringVariantDictionary([("none", .array(elementType: "o", []))]))])
        expectInvalid([("user-info", .stringVariantDictionary([("map", .dictionary(keyType: "s", valueType: "h", []))]))])
    }

    @Test func urlsAreChecked() throws {
        expectInvalid([("webpage-url", .string("ftp://example.com/"))])
        expectInvalid([("webpage-url", .string("https://"))])
        expectInvalid([("webpage-url", .string("not a url"))])
        expectInvalid([("referrer-url", .string("no-scheme"))])
        let ok = try patch([("webpage-url", .string("https://example.com/a?b#c")), ("referrer-url", .string("mailto:a@b.c"))])
            .applied(to: ActivityProperties(), limits: .standard)
        #expect(ok.webpageURL == "https://example.com/a?b#c")
    }

    @Test func requiredKeysMustBePresentAfterEveryWrite() throws {
        let info = TypedValue.stringVariantDictionary([("doc", .string("a.txt")), ("scroll", .int32(5))])
        let props = try patch([("user-info", info), ("required-user-info-keys", .stringArray(["doc"]))])
            .applied(to: ActivityProperties(), limits: .standard)
        #expect(props.savedUserInfo.map(\.key) == ["doc"], "only required keys are kept in saved copies")
        #expect(errorKind { _ = try patch([("user-info", .stringVariantDictionary([("scroll", .int32(1))]))]).applied(to: props, limits: .standard) } == .missingRequiredUserInfoKeys, "expected MissingRequiredUserInfoKeys")
    }

    @Test func addUserInfoEntriesMergesAndKeepsOrder() throws {
        var props = ActivityProperties()
        props.userInfo = [("a", .int32(1)), ("b", .int32(2))]
        let merged = try ActivityPatch.mergingUserInfo([("b", .string("two")), ("c", .boolean(true))], into: props)
            .applied(to: props, limits: .standard)
        #expect(merged.userInfo.map(\.key) == ["a", "b", "c"])
        #expect(merged.userInfoValue("b") == .string("two"))
    }

    @Test func everyValueTypeRoundTripsThroughProperties() throws {
        let nan = Double(bitPattern: 0x7ff8_0000_0000_0001)
        let info = TypedValue.stringVariantDictionary([
            ("y", .byte(7)), ("b", .boolean(true)), ("n", .int16(-3)), ("q", .uint16(3)), ("i", .int32(-1)),
            ("u", .uint32(1)), ("x", .int64(.min)), ("t", .uint64(.max)), ("d", .double(nan)), ("s", .string("ünï")),
            ("as", .stringArray([])), ("aay", .array(elementType: "ay", [.array(elementType: "y", [.byte(1)])])),
            ("dict", .dictionary(keyType: "i", valueType: "s", [.init(key: .int32(1), value: .string("one"))])),
            ("struct", .structure([.string("a"), .variant(.double(-0.0))])),
        ])
        let props = try patch([("user-info", info)]).applied(to: ActivityProperties(), limits: .standard)
        #expect(props.value(of: .userInfo).isIdentical(to: info))
    }

    @Test func setRefusesReadOnlyAndUnknownProperties() {
        for (name, kind) in [("AppId", UserActivityError.Kind.propertyReadOnly), ("ActivityType", .propertyReadOnly),
                             ("Current", .propertyReadOnly), ("Colour", .unknownProperty)] {
            #expect(errorKind { _ = try ActivityPatch.setting(propertyName: name, to: .string("x")) } == kind, "expected \(kind)")
        }
    }
}

@Suite struct NameValidation {
    @Test(arguments: ["com.example", "com.example.Editor.edit-document", "a_b.c-d", "org.gnome.Text-Editor"])
    func validNames(_ name: String) { #expect(ReverseDNSName.isValid(name)) }

    @Test(arguments: ["", "com", "com.", ".com", "com..example", "com.1example", "com.exa mple", "com.exämple",
                      String(repeating: "a.", count: 128) + "b"])
    func invalidNames(_ name: String) { #expect(!ReverseDNSName.isValid(name)) }

    @Test func declaredTypeIsRequired() throws {
        let registry = makeRegistry()
        #expect(errorKind { _ = try registry.create(type: "com.other.App.edit", properties: ActivityPatch(), app: editor, connection: ":1.1", now: 1) } == .notDeclared, "expected NotDeclared")
    }

    @Test func optionsAreParsedAndClamped() throws {
        #expect(try SearchOptions.parse([]).limit == 20)
        #expect(try SearchOptions.parse([("limit", .uint32(0))]).limit == 20)
        #expect(try SearchOptions.parse([("limit", .uint32(5000))]).limit == 200)
        #expect(try SuggestionOptions.parse([]).limit == 10)
        #expect(throws: UserActivityError.self) { try SearchOptions.parse([("limit", .int32(3))]) }
        #expect(throws: UserActivityError.self) { try SearchOptions.parse([("sort", .string("x"))]) }
    }
}

@Suite struct DefaultValues {
    /// A value for every field that differs from its default.
    private static let everyFieldSet: [(String, TypedValue)] = [
        ("title", .string("T")), ("user-info", .stringVariantDictionary([("k", .uint32(1))])),
        ("required-user-info-keys", .stringArray(["k"])), ("keywords", .stringArray(["w"])),
        ("content-description", .string("d")), ("content-attributes", .stringVariantDictionary([("a", .boolean(true))])),
        ("webpage-url", .string("https://example.com")), ("referrer-url", .string("https://example.org")),
        ("target-content-identifier", .string("t")), ("persistent-identifier", .string("p")),
        ("expiration-date", .int64(4_000_000_000_000_000)), ("eligible-for-handoff", .boolean(false)),
        ("eligible-for-search", .boolean(true)), ("eligible-for-public-indexing", .boolean(true)),
        ("eligible-for-prediction", .boolean(true)), ("suggested-invocation-phrase", .string("s")),
        ("needs-save", .boolean(true)), ("supports-continuation-streams", .boolean(true)),
    ]

    @Test("hasDefaultValue agrees with comparing value(of:) to a fresh ActivityProperties, field by field")
    func agreesWithValueComparison() throws {
        let defaults = ActivityProperties()
        let changed = try ActivityPatch.parse(Self.everyFieldSet, allowsAppIDClaim: false)
            .applied(to: defaults, limits: .standard)
        for field in ActivityField.allCases where field.key != nil && field != .activityType && field != .appID {
            #expect(defaults.hasDefaultValue(field), "\(field)")
            #expect(!changed.hasDefaultValue(field), "\(field) was set but counts as default")
            #expect(changed.hasDefaultValue(field) == changed.value(of: field).isIdentical(to: defaults.value(of: field)), "\(field)")
        }
    }
}
