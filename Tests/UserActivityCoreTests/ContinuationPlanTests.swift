// SPDX-License-Identifier: Apache-2.0
import Testing
import TypedValues
@testable import UserActivityCore

private let type = "com.example.Editor.edit-document"

private func app(_ id: String, team: String? = nil, types: [String] = [type], activatable: Bool = false) -> InstalledApp {
    InstalledApp(id: id, desktopFilePath: "/apps/\(id).desktop", declaredTypes: types,
                 team: team ?? AppCatalog.implicitTeam(of: id), dbusActivatable: activatable)
}

private func kind(_ body: () throws -> Any) -> UserActivityError.Kind? {
    do { _ = try body() } catch let error as UserActivityError { return error.kind } catch { return nil }
    return nil
}

@Suite struct ContinuationCandidates {
    let catalog = AppCatalog(apps: [
        app("com.example.Zeta"),
        app("com.example.Alpha"),
        app("com.example.Beta", activatable: true),
        app("com.example.Editor"),
        app("com.example.Handler"),
        app("com.example.Editor.Lite", team: "com.example.Editor"),
        app("com.example.Viewer", types: ["com.example.Viewer.view"]),
    ])

    @Test func documentedOrderPublisherHandlersActivatableRest() {
        let ids = ContinuationPlanner.candidates(type: type, publisher: "com.example.Zeta", catalog: catalog,
                                                 hasHandler: { $0 == "com.example.Handler" }).map(\.id)
        #expect(ids == ["com.example.Zeta", "com.example.Handler", "com.example.Beta",
                        "com.example.Alpha", "com.example.Editor"])
    }

    @Test func withoutPublisherEveryDeclaringAppOfAnyTeam() {
        let ids = ContinuationPlanner.candidates(type: type, publisher: nil, catalog: catalog, hasHandler: { _ in false }).map(\.id)
        #expect(ids == ["com.example.Beta", "com.example.Alpha", "com.example.Editor", "com.example.Editor.Lite",
                        "com.example.Handler", "com.example.Zeta"])
    }

    @Test func teamRuleKeepsLiteAwayFromEditorsActivities() {
        let fromEditor = ContinuationPlanner.candidates(type: type, publisher: "com.example.Editor", catalog: catalog,
                                                        hasHandler: { _ in true }).map(\.id)
        #expect(!fromEditor.contains("com.example.Editor.Lite"))
        #expect(fromEditor.first == "com.example.Editor")
        let fromLite = ContinuationPlanner.candidates(type: type, publisher: "com.example.Editor.Lite", catalog: catalog,
                                                      hasHandler: { _ in true }).map(\.id)
        #expect(fromLite == ["com.example.Editor.Lite"])
    }

    @Test func publisherNotInstalledUsesTheTeamItsIDImplies() {
        #expect(ContinuationPlanner.team(ofPublisher: "com.example.Remote", catalog: catalog) == "com.example")
        #expect(ContinuationPlanner.team(ofPublisher: "com.example.Editor.Lite", catalog: catalog) == "com.example.Editor")
        let ids = ContinuationPlanner.candidates(type: type, publisher: "org.other.App", catalog: catalog, hasHandler: { _ in false })
        #expect(ids.isEmpty, "another vendor's publisher reaches none of com.example's apps")
    }

    @Test func routes() throws {
        #expect(ContinuationPlanner.route(for: app("com.example.A", activatable: true), hasHandler: { _ in true }) == .handler)
        #expect(ContinuationPlanner.route(for: app("com.example.A", activatable: true), hasHandler: { _ in false }) == .dbusActivation)
        #expect(ContinuationPlanner.route(for: app("com.example.A"), hasHandler: { _ in false })
                == .launch(desktopFilePath: "/apps/com.example.A.desktop"))
    }

    @Test func targetAppID() throws {
        let chosen = try ContinuationPlanner.plan(type: type, publisher: "com.example.Editor", webpageURL: "",
                                                  targetAppID: "com.example.Beta", catalog: catalog, hasHandler: { _ in false })
        #expect(chosen == .app(id: "com.example.Beta", route: .dbusActivation))
        #expect(kind {
            try ContinuationPlanner.plan(type: type, publisher: nil, webpageURL: "", targetAppID: "com.example.Missing",
                                         catalog: catalog, hasHandler: { _ in false })
        } == .unknownApplication)
        #expect(kind {
            try ContinuationPlanner.plan(type: type, publisher: nil, webpageURL: "https://x.example", targetAppID: "com.example.Viewer",
                                         catalog: catalog, hasHandler: { _ in false })
        } == .noHandler, "a target that does not declare the type is refused, not replaced by the webpage")
        #expect(kind {
            try ContinuationPlanner.plan(type: type, publisher: "com.example.Editor", webpageURL: "", targetAppID: "com.example.Editor.Lite",
                                         catalog: catalog, hasHandler: { _ in true })
        } == .noHandler)
    }

    @Test func fallbackAndNoHandler() throws {
        let other = "com.example.Notes.open"
        #expect(try ContinuationPlanner.plan(type: other, publisher: nil, webpageURL: "https://example.com/n/1", targetAppID: nil,
                                             catalog: catalog, hasHandler: { _ in false }) == .webpage(url: "https://example.com/n/1"))
        #expect(kind {
            try ContinuationPlanner.plan(type: other, publisher: nil, webpageURL: "", targetAppID: nil, catalog: catalog, hasHandler: { _ in false })
        } == .noHandler)
        #expect(kind {
            try ContinuationPlanner.plan(type: "bad", publisher: nil, webpageURL: "", targetAppID: nil, catalog: catalog, hasHandler: { _ in false })
        } == .invalidArgument)
        // Declaring apps exist: the first one is chosen even when a webpage URL is there too.
        #expect(try ContinuationPlanner.plan(type: type, publisher: "com.example.Editor", webpageURL: "https://example.com",
                                             targetAppID: nil, catalog: catalog, hasHandler: { _ in false })
                == .app(id: "com.example.Editor", route: .launch(desktopFilePath: "/apps/com.example.Editor.desktop")))
    }

    @Test func savedActivityVisibility() {
        #expect(ContinuationPlanner.mayContinueSaved(of: "com.example.A", visibleApp: nil))
        #expect(ContinuationPlanner.mayContinueSaved(of: "com.example.A", visibleApp: "com.example.A"))
        #expect(!ContinuationPlanner.mayContinueSaved(of: "com.example.A", visibleApp: "com.example.B"))
        #expect(!ContinuationPlanner.mayContinueSaved(of: "com.example.A", visibleApp: ""))
    }
}

@Suite struct ContinuationOptionParsing {
    @Test func defaultsAndClamping() throws {
        let defaults = try ContinuationOptions.parse([], method: "ContinueActivity")
        #expect(defaults.timeoutMilliseconds == 10_000)
        #expect(defaults.targetAppID == nil)
        #expect(defaults.platformData.isEmpty)
        #expect(try ContinuationOptions.parse([("timeout-ms", .uint32(0))], method: "m").timeoutMilliseconds == 10_000)
        #expect(try ContinuationOptions.parse([("timeout-ms", .uint32(250))], method: "m").timeoutMilliseconds == 250)
        #expect(try ContinuationOptions.parse([("timeout-ms", .uint32(.max))], method: "m").timeoutMilliseconds == 600_000)
    }

    @Test func platformDataCarriesTheTokens() throws {
        let options = try ContinuationOptions.parse([("activation-token", .string("a")), ("desktop-startup-id", .string("d")),
                                                     ("target-app-id", .string("com.example.A"))], method: "m")
        #expect(options.targetAppID == "com.example.A")
        #expect(options.platformData.map(\.0) == ["activation-token", "desktop-startup-id"])
        #expect(options.platformData.map(\.1) == [.string("a"), .string("d")])
    }

    @Test func refusals() throws {
        #expect(kind { try ContinuationOptions.parse([("timeout", .uint32(1))], method: "m") } == .invalidArgument)
        #expect(kind { try ContinuationOptions.parse([("timeout-ms", .int32(1))], method: "m") } == .invalidArgument)
        #expect(kind { try ContinuationOptions.parse([("target-app-id", .string("no dots"))], method: "m") } == .invalidArgument)
        #expect(try ContinuationOptions.parse([("target-app-id", .string("chromium"))], method: "m").targetAppID == "chromium",
                "a legacy desktop ID; whether it is installed is the planner's question")
    }

    /// Only an activity from outside (another device) has no live origin here to stream with.
    @Test func streamRelayIsForContinueActivityOnly() throws {
        let relay = "/org/example/UserActivity/Handoff/relay/0123"
        let options = try ContinuationOptions.parse([("stream-relay", .objectPath(relay))], method: "ContinueActivity")
        #expect(options.streamRelay == relay)
        #expect(options.platformData.isEmpty)
        #expect(kind { try ContinuationOptions.parse([("stream-relay", .objectPath(relay))], method: "ContinueSavedActivity") } == .invalidArgument)
        #expect(kind { try ContinuationOptions.parse([("stream-relay", .string(relay))], method: "ContinueActivity") } == .invalidArgument)
    }
}

@Suite struct ContinuationTokenRules {
    private func book() -> ContinuationTokenBook {
        var next = 0
        return ContinuationTokenBook { next += 1; return "token-\(next)" }
    }

    private func redeem(_ book: ContinuationTokenBook, _ value: String, caller: String?, alive: Bool = true,
                        now: Int64) throws -> ContinuationToken {
        try book.redeem(value, callerIsIdentified: caller != nil, callerMayActFor: { $0 == caller },
                        originIsAlive: { _ in alive }, now: now)
    }

    @Test func singleUseByTheReceivingAppOnly() throws {
        let tokens = book()
        let value = tokens.issue(originActivityID: "7", originConnection: ":1.5", receivingApp: "com.example.B", now: 0)
        #expect(kind { try redeem(tokens, value, caller: nil, now: 1) } == .accessDenied, "unidentified")
        #expect(kind { try redeem(tokens, value, caller: "com.example.C", now: 1) } == .accessDenied, "another app")
        let token = try redeem(tokens, value, caller: "com.example.B", now: 2)
        #expect(token.originActivityID == "7" && token.originConnection == ":1.5")
        #expect(kind { try redeem(tokens, value, caller: "com.example.B", now: 3) } == .notFound, "used up")
        #expect(kind { try redeem(tokens, "token-99", caller: "com.example.B", now: 3) } == .notFound)
    }

    @Test func aRelayTokenLeadsToItsRelayAndGoesWithItsConnection() throws {
        let tokens = book()
        let relay = "/org/example/UserActivity/Handoff/relay/ab"
        let value = tokens.issue(originActivityID: "", originConnection: ":1.9", receivingApp: "com.example.B", now: 0, relayPath: relay)
        let other = tokens.issue(originActivityID: "", originConnection: ":1.9", receivingApp: "com.example.B", now: 0, relayPath: relay)
        #expect(try redeem(tokens, value, caller: "com.example.B", now: 1).relayPath == relay)
        tokens.connectionClosed(":1.9")
        #expect(kind { try redeem(tokens, other, caller: "com.example.B", now: 2) } == .notFound)
    }

    /// A flood of continuations from one caller evicts only its own tokens:
    /// past its share, and when the book is full.
    @Test func aFloodEvictsOnlyTheFloodersTokens() throws {
        let tokens = book()
        let innocent = (0..<100).map { n in
            tokens.issue(originActivityID: "1", originConnection: ":1.1", receivingApp: "com.example.B", now: Int64(n), shareKey: "app com.example.Victim")
        }
        for n in 0..<(ContinuationTokenBook.maximumOutstandingPerCaller * 3) {
            _ = tokens.issue(originActivityID: "2", originConnection: ":1.2", receivingApp: "com.example.B", now: 100 + Int64(n), shareKey: "app com.example.Flooder")
        }
        #expect(tokens.count(shareKey: "app com.example.Flooder") == ContinuationTokenBook.maximumOutstandingPerCaller)
        #expect(tokens.count(shareKey: "app com.example.Victim") == 100)
        // Many callers together fill the book: the one holding the most gives way.
        for caller in 0..<7 {
            for n in 0..<ContinuationTokenBook.maximumOutstandingPerCaller {
                _ = tokens.issue(originActivityID: "3", originConnection: ":1.3", receivingApp: "com.example.B",
                                 now: 10_000 + Int64(n), shareKey: "connection :1.\(100 + caller)")
            }
        }
        #expect(tokens.count <= ContinuationTokenBook.maximumOutstanding)
        #expect(tokens.count(shareKey: "app com.example.Victim") == 100, "the victim's tokens survive the flood")
        _ = try redeem(tokens, innocent[0], caller: "com.example.B", now: 20_000)
    }

    @Test func validForSixtySeconds() throws {
        let tokens = book()
        let a = tokens.issue(originActivityID: "1", originConnection: ":1.1", receivingApp: "com.example.B", now: 1_000)
        let b = tokens.issue(originActivityID: "1", originConnection: ":1.1", receivingApp: "com.example.B", now: 1_000)
        #expect(try redeem(tokens, a, caller: "com.example.B", now: 1_000 + 59_999_999).value == a)
        #expect(kind { try redeem(tokens, b, caller: "com.example.B", now: 1_000 + 60_000_000) } == .notFound)
        #expect(tokens.count == 0, "an expired token is dropped")
    }

    @Test func endsWithItsOrigin() throws {
        let tokens = book()
        let a = tokens.issue(originActivityID: "1", originConnection: ":1.1", receivingApp: "com.example.B", now: 0)
        #expect(kind { try redeem(tokens, a, caller: "com.example.B", alive: false, now: 1) } == .notFound)
        let b = tokens.issue(originActivityID: "2", originConnection: ":1.2", receivingApp: "com.example.B", now: 0)
        let c = tokens.issue(originActivityID: "3", originConnection: ":1.3", receivingApp: "com.example.B", now: 0)
        let d = tokens.issue(originActivityID: "4", originConnection: ":1.3", receivingApp: "com.example.B", now: 0)
        tokens.connectionClosed(":1.2")
        tokens.originEnded(activityID: "3")
        tokens.revoke(d)
        for value in [b, c, d] {
            #expect(kind { try redeem(tokens, value, caller: "com.example.B", now: 1) } == .notFound)
        }
    }

    @Test func randomTokensAre128BitHex() {
        let value = ContinuationTokenBook.randomValue()
        #expect(value.count == 32)
        #expect(value.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(value != ContinuationTokenBook.randomValue())
    }
}

@Suite struct ContinuationHandlerRegistration {
    @Test func laterRegistrationReplacesAndConnectionsTakeTheirHandlers() {
        var table = ContinuationHandlerTable()
        #expect(table.register(RegisteredHandler(app: "com.example.A", connection: ":1.1", path: "/a")) == nil)
        table.register(RegisteredHandler(app: "com.example.B", connection: ":1.1", path: "/b"))
        let replaced = table.register(RegisteredHandler(app: "com.example.A", connection: ":1.2", path: "/a2"))
        #expect(replaced?.connection == ":1.1")
        #expect(table.handler(for: "com.example.A")?.path == "/a2")
        #expect(table.connectionClosed(":1.1") == ["com.example.B"], "A's handler is :1.2's now")
        #expect(table.hasHandler("com.example.A") && !table.hasHandler("com.example.B"))
        #expect(table.connectionClosed(":1.2") == ["com.example.A"])
        #expect(table.count == 0)
    }
}

@Suite struct ContinuationPayloads {
    @Test func outsideDataAreValidatedAndCarryThePublisher() throws {
        let payload = try ContinuationPayload.fromOutside(type: type, entries: [
            ("app-id", .string("com.example.Editor")), ("title", .string("T")),
        ], limits: .standard)
        #expect(payload.publisher == "com.example.Editor")
        let entries = try #require(payload.dictionary.stringVariantEntries)
        #expect(entries.first?.0 == "app-id")
        #expect(entries.contains { $0.0 == "title" && $0.1 == .string("T") })
        #expect(!entries.contains { $0.0 == "activity-type" })
        // title and user-info always, then only what differs from its default.
        #expect(Set(entries.map(\.0)) == ["app-id", "title", "user-info"])
        let keyed = try ContinuationPayload.fromOutside(type: type, entries: [
            ("keywords", .stringArray(["k"])), ("eligible-for-handoff", .boolean(false)), ("eligible-for-search", .boolean(false)),
        ], limits: .standard)
        #expect(Set((keyed.dictionary.stringVariantEntries ?? []).map(\.0)) == ["title", "user-info", "keywords", "eligible-for-handoff"])
        #expect(kind { try ContinuationPayload.fromOutside(type: type, entries: [("nope", .string(""))], limits: .standard) } == .invalidArgument)
        #expect(kind { try ContinuationPayload.fromOutside(type: type, entries: [("app-id", .string("x y"))], limits: .standard) } == .invalidArgument)
        // Another device's publisher may be a legacy desktop ID not installed here (its page then opens in the default browser).
        #expect(try ContinuationPayload.fromOutside(type: type, entries: [("app-id", .string("chromium"))], limits: .standard).publisher == "chromium")
        #expect(kind {
            try ContinuationPayload.fromOutside(type: type, entries: [("required-user-info-keys", .stringArray(["k"]))], limits: .standard)
        } == .missingRequiredUserInfoKeys)
    }

    @Test func expiry() throws {
        var properties = ActivityProperties()
        properties.expirationDate = 100
        let payload = ContinuationPayload(activityType: type, properties: properties, publisher: nil)
        #expect(kind { try payload.checkContinuable(now: 100) } == .expired)
        try payload.checkContinuable(now: 99)
        #expect(payload.dictionary.stringVariantEntries?.contains { $0.0 == "app-id" } == false)
    }

    @Test func savedDataSkipKeysThisVersionDoesNotKnow() throws {
        let stored: TypedValue = .stringVariantDictionary([("title", .string("Saved")), ("from-the-future", .boolean(true))])
        let payload = try ContinuationPayload.fromSaved(type: type, app: "com.example.Editor", stored: stored, limits: .standard)
        #expect(payload.publisher == "com.example.Editor")
        #expect(payload.properties.title == "Saved")
    }
}
