// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

// Installed desktop entries whose IDs are not reverse-DNS (Debian's
// `chromium`, `firefox-esr`) are app IDs: named with app-id, registered,
// owning live and saved activities, continued into. One that is not
// installed is UnknownApplication.

@Suite("Legacy desktop IDs", .serialized)
struct LegacyDesktopIDTests {
    static let chromium = "chromium"
    static let firefox = "firefox-esr"

    @Test("An installed legacy ID publishes, owns and saves activities, and its page is continued in that browser")
    func installedLegacyBrowser() throws {
        let h = try ContinuationHarness(apps: [])
        let apps = try ArgvApps(h)
        try apps.install(Self.chromium, fieldCode: "%U", mimeTypes: ["x-scheme-handler/https", "x-scheme-handler/http", "text/html"])
        try apps.install(Self.firefox, fieldCode: "%u", mimeTypes: ["x-scheme-handler/https", "x-scheme-handler/http"])
        try apps.defaults([("x-scheme-handler/https", Self.firefox), ("x-scheme-handler/http", Self.firefox)])

        let browser = try h.connect()
        let url = "https://example.com/article?id=7"
        let path = try #require(try browser.call(UA.managerPath, UA.managerInterface, "BecomeCurrent", [
            .string(browsingWeb), .stringVariantDictionary([
                ("app-id", .string(Self.chromium)), ("webpage-url", .string(url)), ("title", .string("An article")),
                ("eligible-for-handoff", .boolean(true)),
            ]),
        ]).first?.objectPathValue, "\(h.logTail())")
        let observer = try h.connect()
        #expect(try observer.property(UA.managerPath, "CurrentActivity", interface: UA.managerInterface) == .objectPath(path))
        #expect(try observer.property(path, "AppId") == .string(Self.chromium))
        // The owner updates in place; another app may not.
        try browser.call(path, UA.activityInterface, "Update", [.stringVariantDictionary([
            ("app-id", .string(Self.chromium)), ("title", .string("An article, read")),
        ])])
        #expect(try observer.property(path, "Title") == .string("An article, read"))
        try observer.registerApplication(Self.firefox)
        let hijack = dbusError { try observer.call(path, UA.activityInterface, "Update", [.stringVariantDictionary([("title", .string("x"))])]) }
        #expect(hijack?.name == UA.error("AccessDenied"), "\(String(describing: hijack))")

        // A saved entry under the legacy ID, found by the app-id option.
        let donated = try browser.call(UA.managerPath, UA.managerInterface, "Donate", [.string(browsingWeb), .stringVariantDictionary([
            ("app-id", .string(Self.chromium)), ("webpage-url", .string("https://example.com/saved")),
            ("title", .string("Pangolin facts")), ("eligible-for-search", .boolean(true)),
        ])])
        #expect(donated.first?.stringValue?.isEmpty == false)
        let found = try waitUntil(timeout: 30, interval: 0.05) {
            let reply = try observer.call(UA.managerPath, UA.managerInterface, "Search", [
                .string("pangolin"), .stringVariantDictionary([("app-id", .string(Self.chromium))])])
            guard case .array(_, let results)? = reply.first else { return false }
            return results.count == 1
        }
        #expect(found, "\(h.logTail())")

        // Continued (as from another device) into the same browser, which is not the default.
        let continued = try observer.continueActivity(browsingWeb, [("webpage-url", .string(url)), ("app-id", .string(Self.chromium))])
        #expect(continued == Self.chromium, "\(h.logTail())")
        #expect(apps.arguments(Self.chromium) == [url])
        #expect(!apps.wasLaunched(Self.firefox))
    }

    @Test("A legacy ID that is not installed is UnknownApplication; a malformed one is InvalidArgument")
    func notInstalledOrMalformed() throws {
        let h = try ContinuationHarness(apps: [])
        let client = try h.connect()
        let notInstalled = dbusError { try client.call(UA.managerPath, UA.managerInterface, "RegisterApplication", [.string("vlc")]) }
        #expect(notInstalled?.name == UA.error("UnknownApplication"), "\(String(describing: notInstalled))")
        let claimed = dbusError { try client.call(UA.managerPath, UA.managerInterface, "CreateActivity", [.string(browsingWeb), .stringVariantDictionary([
            ("app-id", .string("chromium")), ("webpage-url", .string("https://example.com/"))])]) }
        #expect(claimed?.name == UA.error("UnknownApplication"), "\(String(describing: claimed))")
        let malformed = dbusError { try client.call(UA.managerPath, UA.managerInterface, "RegisterApplication", [.string("firefox esr")]) }
        #expect(malformed?.name == UA.error("InvalidArgument"), "\(String(describing: malformed))")
        // The daemon goes on serving.
        #expect(try client.ping() >= 0)
    }
}
