// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

extension ContinuationTests {
    @Suite("Live origins (Activity.Continue), NeedsSave, saved activities")
    struct LiveOrigin {
        static let apps = [
            AppEntry(UA.editor, .handler()),
            AppEntry(UA.viewer, .handler()),
        ]

        /// Starts Editor's fixture, which creates a live activity with `props` (GVariant text) on its own connection.
        static func origin(_ h: ContinuationHarness, props: String, _ extra: [String] = []) throws -> (FixtureProcess, String) {
            let fixture = try h.startHandler(UA.editor, answer: "true", ["--create", UA.editType, "--props", props] + extra)
            let created = try #require(h.waitForEvent(UA.editor, "created"))
            return (fixture, try #require(created.string("path")))
        }

        @Test("Activity.Continue delivers the live activity, returns the app, and emits Continued(by_app_id) on it")
        func continuedSignal() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer)
            let (_, path) = try Self.origin(h, props: "{'title': <'Draft'>, 'user-info': <{'page': <3>}>}")
            let recorder = try SignalMonitor(address: h.bus.address,
                                             rules: [DaemonSignal.rule(interface: UA.activityInterface, member: "Continued")])
            let client = try h.connect()
            #expect(try client.continueLive(path, options: [("target-app-id", .string(UA.viewer))]) == UA.viewer, "\(h.logTail())")

            let seen = recorder.wait(timeout: 5) { $0.contains { $0.path == path && $0.member == "Continued" } }
            #expect(seen, "Continued not emitted on \(path)")
            let signal = recorder.signals.first { $0.member == "Continued" }
            #expect(signal?.arguments == [.string(UA.viewer)])

            let event = try #require(h.waitForEvent(UA.viewer, "continue"))
            let activity = event.dictionary("activity")
            #expect(activity["app-id"] as? String == UA.editor, "the owner is the publisher")
            #expect(activity["title"] as? String == "Draft")
            #expect(jsonInt((activity["user-info"] as? [String: Any])?["page"]) == 3)
            #expect(event.dictionary("platform")["continuation-token"] == nil, "the origin does not support streams")

            // Without a target the publisher itself (Editor, with a handler) is preferred.
            #expect(try client.continueLive(path) == UA.editor)
            #expect(recorder.wait(timeout: 5) { $0.filter { $0.member == "Continued" }.count == 2 })
            #expect(recorder.signals.last?.arguments == [.string(UA.editor)])
        }

        @Test("A failed continuation emits no Continued")
        func noContinuedOnFailure() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer, answer: "false")
            let (_, path) = try Self.origin(h, props: "{'title': <'Draft'>}")
            let recorder = try SignalMonitor(address: h.bus.address,
                                             rules: [DaemonSignal.rule(interface: UA.activityInterface, member: "Continued")])
            let client = try h.connect()
            #expect(dbusError { try client.continueLive(path, options: [("target-app-id", .string(UA.viewer))]) }?.name
                    == UA.error("ContinuationFailed"))
            #expect(!recorder.wait(timeout: 0.5) { $0.contains { $0.member == "Continued" } })
        }

        @Test("Activity.Continue checks expiry before eligibility: Expired, NotEligible")
        func liveChecks() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer)
            let soon = nowMicroseconds() + 2_500_000
            let (_, path) = try Self.origin(h, props: "{'title': <'Short-lived'>, 'eligible-for-handoff': <false>, 'expiration-date': <int64 \(soon)>}")
            let client = try h.connect()
            #expect(dbusError { try client.continueLive(path) }?.name == UA.error("NotEligible"))
            _ = waitUntil(timeout: 30) { nowMicroseconds() > soon + 200_000 }
            #expect(dbusError { try client.continueLive(path) }?.name == UA.error("Expired"), "expiry is checked before eligibility")
            #expect(h.events(UA.viewer, "continue").isEmpty)
        }

        @Test("NeedsSave on the origin: the owner's SaveActivity runs first, its answer is applied and delivered, NeedsSave is cleared")
        func needsSaveRoundTrip() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer)
            let (_, path) = try Self.origin(
                h, props: "{'title': <'Stale'>, 'needs-save': <true>, 'user-info': <{'page': <1>}>}",
                ["--save-props", "{'title': <'Fresh'>, 'user-info': <{'page': <42>}>}", "--save-delay", "200"])
            let client = try h.connect()
            #expect(try client.continueLive(path, options: [("target-app-id", .string(UA.viewer))]) == UA.viewer, "\(h.logTail())")

            let save = try #require(h.waitForEvent(UA.editor, "save"), "SaveActivity never reached the owner")
            #expect(save.string("path") == path)
            let event = try #require(h.waitForEvent(UA.viewer, "continue"))
            let activity = event.dictionary("activity")
            #expect(activity["title"] as? String == "Fresh")
            #expect(jsonInt((activity["user-info"] as? [String: Any])?["page"]) == 42)
            // NeedsSave was cleared: false is its default, so the key is absent.
            #expect(activity["needs-save"] == nil)
            #expect(try client.property(path, "NeedsSave") == .boolean(false))
            #expect(try client.property(path, "Title") == .string("Fresh"))

            // NeedsSave is clear now: the next continuation does not ask again.
            #expect(try client.continueLive(path, options: [("target-app-id", .string(UA.viewer))]) == UA.viewer)
            #expect(h.events(UA.editor, "save").count == 1)
        }

        @Test("NeedsSave with an owner slower than timeout-ms: continued with the data as they are")
        func needsSaveSlowOwner() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer)
            let (_, path) = try Self.origin(
                h, props: "{'title': <'As it was'>, 'needs-save': <true>}",
                ["--save-props", "{'title': <'Too late'>}", "--save-delay", "5000"])
            let client = try h.connect()
            let start = Date()
            #expect(try client.continueLive(path, options: [("target-app-id", .string(UA.viewer)), ("timeout-ms", .uint32(700))]) == UA.viewer)
            #expect(Date().timeIntervalSince(start) < 4)
            let event = try #require(h.waitForEvent(UA.viewer, "continue"))
            #expect(event.dictionary("activity")["title"] as? String == "As it was")
        }

        @Test("NeedsSave when saving: BecomeCurrent answers at once; the saved copy is written after SaveActivity answers, with its data")
        func needsSaveWhenSaving() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            let (_, path) = try Self.origin(
                h, props: "{'title': <'Stale pelican'>, 'needs-save': <true>, 'eligible-for-search': <true>, 'persistent-identifier': <'doc-1'>}",
                ["--save-props", "{'title': <'Fresh pelican'>}", "--save-delay", "600"])
            let client = try h.connect()
            try client.registerApplication(UA.editor)
            let start = Date()
            try client.call(path, UA.activityInterface, "BecomeCurrent")
            let replyTime = Date().timeIntervalSince(start)
            #expect(replyTime < 0.5, "BecomeCurrent waited \(replyTime) s for SaveActivity")

            func titles(_ query: String) throws -> [String] {
                let reply = try client.call(UA.managerPath, UA.managerInterface, "Search", [.string(query), .stringVariantDictionary([])])
                guard case .array(_, let results)? = reply.first else { return [] }
                return results.compactMap { result in result.stringVariantEntries?.first { $0.0 == "title" }?.1.stringValue }
            }
            let saved = try waitUntil(timeout: 30, interval: 0.05) { try titles("pelican") == ["Fresh pelican"] }
            let found = (try? titles("pelican")) ?? []
            #expect(saved, "saved copy: \(found)\n\(h.logTail())")
            #expect(try titles("stale").isEmpty, "the stale data were never saved")
            #expect(h.events(UA.editor, "save").count == 1)
            #expect(try client.property(path, "NeedsSave") == .boolean(false))
        }

        @Test("ContinueSavedActivity delivers a saved copy with its owner as publisher; unknown ids are NotFound")
        func continueSaved() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer)
            let client = try h.connect()
            let reply = try client.call(UA.managerPath, UA.managerInterface, "Donate", [
                .string(UA.editType),
                .stringVariantDictionary([("app-id", .string(UA.editor)), ("title", .string("Donated doc")),
                                          ("user-info", .stringVariantDictionary([("doc", .string("d.odt"))]))]),
            ])
            let savedID = try #require(reply.first?.stringValue)
            #expect(try client.call(UA.managerPath, UA.managerInterface, "ContinueSavedActivity", [
                .string(savedID), .stringVariantDictionary([("target-app-id", .string(UA.viewer))]),
            ]).first?.stringValue == UA.viewer, "\(h.logTail())")
            let event = try #require(h.waitForEvent(UA.viewer, "continue"))
            #expect(event.dictionary("activity")["app-id"] as? String == UA.editor)
            #expect(event.dictionary("activity")["title"] as? String == "Donated doc")
            #expect((event.dictionary("activity")["user-info"] as? [String: Any])?["doc"] as? String == "d.odt")

            let missing = dbusError {
                try client.call(UA.managerPath, UA.managerInterface, "ContinueSavedActivity",
                                [.string("0123456789abcdef0123456789abcdef"), .stringVariantDictionary([])])
            }
            #expect(missing?.name == UA.error("NotFound"))
        }
    }
}
