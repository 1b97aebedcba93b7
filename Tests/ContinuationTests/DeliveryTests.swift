// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// Every continuation test, one at a time: each starts a bus, the daemon and
/// Python fixture apps, and the latency check must not share two cores with
/// a dozen Python start-ups.
@Suite("Continuation", .serialized)
struct ContinuationTests {}

extension ContinuationTests {
    @Suite("Delivery paths and answers")
    struct Delivery {
        /// Editor (the usual publisher) never registers a handler; Viewer is a handler fixture.
        static let apps = [
            AppEntry(UA.editor, .exec("/bin/true")),
            AppEntry(UA.viewer, .handler()),
        ]

        @Test("(1) A registered handler gets Handler.ContinueActivity with the data and platform data; the call returns its app")
        func registeredHandler() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            let viewer = try h.startHandler(UA.viewer)
            let client = try h.connect()

            let userInfo: TypedValue = .stringVariantDictionary([("doc", .string("report.odt")), ("page", .uint32(7))])
            let app = try client.continueActivity(UA.editType, [("title", .string("Quarterly report")), ("user-info", userInfo)],
                                                  options: [("activation-token", .string("token-42")),
                                                            ("desktop-startup-id", .string("startup-42"))])
            #expect(app == UA.viewer, "\(h.logTail())")

            let event = try #require(h.waitForEvent(UA.viewer, "continue"))
            #expect(event.string("type") == UA.editType)
            #expect(event.string("sender") != nil)
            let activity = event.dictionary("activity")
            #expect(activity["title"] as? String == "Quarterly report")
            #expect((activity["user-info"] as? [String: Any])?["doc"] as? String == "report.odt")
            #expect(jsonInt((activity["user-info"] as? [String: Any])?["page"]) == 7)
            #expect(activity["app-id"] == nil, "no publisher was named, so none is made up")
            let platform = event.dictionary("platform")
            #expect(platform["activation-token"] as? String == "token-42")
            #expect(platform["desktop-startup-id"] as? String == "startup-42")
            #expect(platform["continuation-token"] == nil, "no live origin, so no stream")
            #expect(viewer.process.isRunning)
        }

        @Test("A handler answering false gives ContinuationFailed, and no FailedToContinue (the app answered)")
        func handlerAnswersFalse() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer, answer: "false")
            let client = try h.connect()
            let error = dbusError { try client.continueActivity() }
            #expect(error?.name == UA.error("ContinuationFailed"), "\(String(describing: error))")
            #expect(error?.message.contains(UA.viewer) == true)
            #expect(h.waitForEvent(UA.viewer, "continue") != nil)
            #expect(h.waitForEvent(UA.viewer, "failed", timeout: 0.5) == nil)
        }

        @Test("A handler's error reply is passed on with its name and message")
        func handlerAnswersError() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer, answer: "error:com.example.Viewer.Error.DocumentLocked:the document is locked by another user")
            let client = try h.connect()
            let error = dbusError { try client.continueActivity() }
            #expect(error?.name == "com.example.Viewer.Error.DocumentLocked", "\(String(describing: error))")
            #expect(error?.message == "the document is locked by another user")
            #expect(h.waitForEvent(UA.viewer, "failed", timeout: 0.5) == nil, "an answer is not a failure to deliver")
        }

        @Test("A handler path where the app exports nothing: ContinuationFailed naming the path, not the app's UnknownMethod")
        func handlerPathNotExported() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer, answer: "true", ["--register-path", "/org/example/Fixture/Nothing"])
            let client = try h.connect()
            let error = dbusError { try client.continueActivity() }
            #expect(error?.name == UA.error("ContinuationFailed"), "\(String(describing: error))")
            #expect(error?.message.contains("/org/example/Fixture/Nothing") == true, "\(String(describing: error))")
        }

        @Test("A handler that does not answer within timeout-ms: RemoteApplicationTimedOut, and FailedToContinue reaches it")
        func handlerTimesOut() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer, answer: "never")
            let client = try h.connect()
            let start = Date()
            let error = dbusError { try client.continueActivity(options: [("timeout-ms", .uint32(800))]) }
            let elapsed = Date().timeIntervalSince(start)
            #expect(error?.name == UA.error("RemoteApplicationTimedOut"), "\(String(describing: error))")
            #expect(elapsed >= 0.7 && elapsed < 5, "answered after \(elapsed) s for timeout-ms 800")
            let failed = try #require(h.waitForEvent(UA.viewer, "failed"), "FailedToContinue not received\n\(h.logTail())")
            #expect(failed.string("type") == UA.editType)
            #expect(failed.string("error") == UA.error("RemoteApplicationTimedOut"))
            #expect(failed.string("message")?.isEmpty == false)
        }

        @Test("(2) A DBusActivatable app is started by D-Bus activation and gets ActivateAction('continue-activity', [<(sa{sv})>], platform_data)")
        func dbusActivatable() throws {
            let h = try ContinuationHarness(apps: Self.apps + [AppEntry(UA.activatable, .activatable)])
            let client = try h.connect()
            let app = try client.continueActivity(UA.editType, [("title", .string("Shared sketch")), ("app-id", .string(UA.editor))],
                                                  options: [("target-app-id", .string(UA.activatable)),
                                                            ("activation-token", .string("xdg-token-1"))])
            #expect(app == UA.activatable, "\(h.logTail())")
            let started = try #require(h.waitForEvent(UA.activatable, "started"))
            #expect(started["service"] as? Bool == true, "started as a D-Bus service (--gapplication-service)")
            let action = try #require(h.waitForEvent(UA.activatable, "action"), "\(h.logTail())")
            #expect(action.string("type") == UA.editType)
            #expect(action.dictionary("activity")["title"] as? String == "Shared sketch")
            #expect(action.dictionary("activity")["app-id"] as? String == UA.editor, "the publisher is in the data")
            #expect(action.dictionary("platform")["activation-token"] as? String == "xdg-token-1")
            #expect(h.events(UA.activatable, "activate").isEmpty, "D-Bus activation opens no main window first")
        }

        @Test("(3) A plain app is launched from its Exec line; the continuation waits for its RegisterHandler")
        func launchedApp() throws {
            let h = try ContinuationHarness(apps: Self.apps + [AppEntry(UA.plain, .handler(extraArguments: ["--register-delay", "300"]))])
            let client = try h.connect()
            let start = Date()
            let app = try client.continueActivity(UA.editType, [("title", .string("Launched"))],
                                                  options: [("target-app-id", .string(UA.plain)),
                                                            ("activation-token", .string("launch-token")),
                                                            ("desktop-startup-id", .string("launch-startup"))])
            #expect(app == UA.plain, "\(h.logTail())")
            #expect(Date().timeIntervalSince(start) >= 0.3, "answered before the launched app registered")
            let ready = try #require(h.waitForEvent(UA.plain, "ready"))
            #expect(ready.string("activation_token") == "launch-token", "XDG_ACTIVATION_TOKEN in the launched app's environment")
            #expect(ready.string("startup_id") == "launch-startup", "DESKTOP_STARTUP_ID in the launched app's environment")
            let event = try #require(h.waitForEvent(UA.plain, "continue"))
            #expect(event.dictionary("activity")["title"] as? String == "Launched")
            #expect(event.dictionary("platform")["activation-token"] as? String == "launch-token")

            // Now it has a handler: the next continuation goes straight to the same process.
            #expect(try client.continueActivity(UA.editType, options: [("target-app-id", .string(UA.plain))]) == UA.plain)
            let second = try #require(h.waitForEvent(UA.plain, "continue", count: 2))
            #expect(jsonInt(second["pid"]) == jsonInt(event["pid"]), "launched once, not twice")
            #expect(h.events(UA.plain, "ready").count == 1)
        }

        @Test("Several continuations for an app being launched start it once and all reach it")
        func concurrentContinuationsLaunchOnce() throws {
            let h = try ContinuationHarness(apps: Self.apps + [AppEntry(UA.plain, .handler(extraArguments: ["--register-delay", "500"]))])
            let client = try h.connect()
            final class Replies: @unchecked Sendable { var apps: [String] = [] }
            let replies = Replies()
            for index in 0..<5 {
                let message = Message.methodCall(destination: UA.busName, path: UA.managerPath,
                                                 interface: UA.managerInterface, member: "ContinueActivity")
                try message.append([.string(UA.editType), .stringVariantDictionary([("title", .string("doc \(index)"))]),
                                    .stringVariantDictionary([("target-app-id", .string(UA.plain))])])
                client.connection.callAsync(message, timeoutMilliseconds: 20_000) { result in
                    replies.apps.append((try? result.get().arguments().first?.stringValue) ?? "error: \(result)")
                }
            }
            let done = waitUntil(timeout: 30, interval: 0) {
                client.connection.readWriteDispatch(timeoutMilliseconds: 20)
                return replies.apps.count == 5
            }
            #expect(done, "\(replies.apps)\n\(h.logTail())")
            #expect(replies.apps == Array(repeating: UA.plain, count: 5))
            #expect(h.events(UA.plain, "ready").count == 1, "one launch for all waiting continuations")
            let titles = Set(h.events(UA.plain, "continue").compactMap { $0.dictionary("activity")["title"] as? String })
            #expect(titles == Set((0..<5).map { "doc \($0)" }))
        }

        @Test("A launched app that never registers a handler: RemoteApplicationTimedOut after timeout-ms")
        func launchedAppNeverRegisters() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            let client = try h.connect()
            let start = Date()
            let error = dbusError {
                try client.continueActivity(UA.editType, [("webpage-url", .string("https://example.com/not-a-fallback"))],
                                            options: [("target-app-id", .string(UA.editor)), ("timeout-ms", .uint32(1000))])
            }
            let elapsed = Date().timeIntervalSince(start)
            #expect(error?.name == UA.error("RemoteApplicationTimedOut"), "\(String(describing: error))\n\(h.logTail())")
            #expect(error?.message.contains("RegisterHandler") == true, "\(String(describing: error))")
            #expect(elapsed >= 0.9 && elapsed < 5, "answered after \(elapsed) s")
        }

        @Test("No declaring app but a webpage-url: the default https handler (mimeapps.list) opens it, and its app ID is returned")
        func webpageFallback() throws {
            let h = try ContinuationHarness(apps: Self.apps + [AppEntry(UA.browser, types: [], .browser)])
            let client = try h.connect()
            let url = "https://example.com/docs/42?view=full"
            let app = try client.continueActivity("com.example.Notes.open-note", [("webpage-url", .string(url))])
            #expect(app == UA.browser, "\(h.logTail())")
            let opened = try #require(h.waitForEvent(UA.browser, "opened"), "\(h.logTail())")
            #expect(opened["urls"] as? [String] == [url])
        }

        @Test("No declaring app and no webpage-url: NoHandler")
        func noHandler() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            let client = try h.connect()
            let error = dbusError { try client.continueActivity("com.example.Notes.open-note", [("title", .string("x"))]) }
            #expect(error?.name == UA.error("NoHandler"), "\(String(describing: error))")
        }

        @Test("Checks before delivery: expiry, required keys, options, an uninstalled target; nothing reaches the app")
        func checksBeforeDelivery() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer)
            let client = try h.connect()
            let past = nowMicroseconds() - 1_000_000
            #expect(dbusError { try client.continueActivity(UA.editType, [("expiration-date", .int64(past))]) }?.name == UA.error("Expired"))
            #expect(dbusError {
                try client.continueActivity(UA.editType, [("required-user-info-keys", .stringArray(["doc"])),
                                                          ("user-info", .stringVariantDictionary([("page", .uint32(1))]))])
            }?.name == UA.error("MissingRequiredUserInfoKeys"))
            #expect(dbusError { try client.continueActivity(options: [("timeout", .uint32(5))]) }?.name == UA.error("InvalidArgument"))
            #expect(dbusError { try client.continueActivity(options: [("timeout-ms", .int32(5))]) }?.name == UA.error("InvalidArgument"))
            #expect(dbusError { try client.continueActivity("not a type") }?.name == UA.error("InvalidArgument"))
            #expect(dbusError {
                try client.continueActivity(options: [("target-app-id", .string("com.example.NotInstalled"))])
            }?.name == UA.error("UnknownApplication"))
            // The required keys present: it goes through.
            #expect(try client.continueActivity(UA.editType, [("required-user-info-keys", .stringArray(["doc"])),
                                                              ("user-info", .stringVariantDictionary([("doc", .string("a"))]))]) == UA.viewer)
            #expect(h.events(UA.viewer, "continue").count == 1)
        }

        @Test("RegisterHandler: a later registration of the app replaces the earlier one; a handler goes with its connection")
        func handlerReplacementAndDisconnect() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            let first = try h.startHandler(UA.viewer)
            let second = try h.startHandler(UA.viewer)
            let client = try h.connect()
            #expect(try client.continueActivity() == UA.viewer)
            let delivered = try #require(h.waitForEvent(UA.viewer, "continue"))
            #expect(jsonInt(delivered["pid"]) == Int(second.process.pid), "the later registration wins")
            #expect(jsonInt(delivered["pid"]) != Int(first.process.pid))

            // The second instance quits: its handler is dropped (not the first's
            // replaced one), so the daemon launches Viewer from its Exec line.
            second.process.terminate(grace: 0.5)
            #expect(try client.continueActivity(options: [("target-app-id", .string(UA.viewer))]) == UA.viewer, "\(h.logTail())")
            let again = try #require(h.waitForEvent(UA.viewer, "continue", count: 2))
            let launchedPID = jsonInt(again["pid"])
            #expect(launchedPID != Int(first.process.pid) && launchedPID != Int(second.process.pid),
                    "delivered to a newly launched instance, pid \(String(describing: launchedPID))")
        }
    }
}
