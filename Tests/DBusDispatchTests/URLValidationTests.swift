// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// webpage-url and referrer-url are judged by GLib's URI parser (plus a host
/// check) wherever the service takes activity properties.
@Suite struct URLValidationTests {
    @Test(arguments: ["https://\\evil/", "https://\\\\evil/x", "https:///path", "https://", "ftp://example.com/", "http://a%20b/"])
    func malformedWebpageURLsAreInvalidArguments(url: String) throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        try client.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)])
        let type = "com.example.Editor.edit-document"
        #expect(dbusErrorName { _ = try client.createActivity(type, [("webpage-url", .string(url))]) }
                == "org.example.UserActivity.Error.InvalidArgument")
        let path = try client.createActivity(type, [("webpage-url", .string("https://example.com/ok"))])
        #expect(dbusErrorName {
            try client.callService(on: path, "org.example.UserActivity.Activity", "Update",
                                   [.stringVariantDictionary([("webpage-url", .string(url))])])
        } == "org.example.UserActivity.Error.InvalidArgument")
        #expect(dbusErrorName {
            try client.callService(managerInterface, "ContinueActivity",
                                   [.string(type), .stringVariantDictionary([("webpage-url", .string(url))]), .stringVariantDictionary([])])
        } == "org.example.UserActivity.Error.InvalidArgument")
        #expect(try client.property(path, "org.example.UserActivity.Activity", "WebpageURL") == .string("https://example.com/ok"))
    }

    @Test func referrerURLMustBeAnAbsoluteURL() throws {
        let harness = try ServiceHarness()
        let client = try harness.client()
        try client.callService(managerInterface, "RegisterApplication", [.string(ServiceHarness.editor)])
        let type = "com.example.Editor.edit-document"
        #expect(dbusErrorName { _ = try client.createActivity(type, [("referrer-url", .string("https:"))]) }
                == "org.example.UserActivity.Error.InvalidArgument")
        #expect(dbusErrorName { _ = try client.createActivity(type, [("referrer-url", .string("https://a b/"))]) }
                == "org.example.UserActivity.Error.InvalidArgument")
        _ = try client.createActivity(type, [("referrer-url", .string("mailto:someone@example.com"))])
    }
}
