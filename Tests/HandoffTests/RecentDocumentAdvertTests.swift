// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

@Suite("Handoff of the document just opened (recent-files bridge)", .serialized)
struct RecentDocumentAdvertTests {
    static let editorApps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]

    func value(_ activity: TypedValue?, _ key: String) -> TypedValue? {
        activity?.stringVariantEntries?.first { $0.0 == key }?.1.unwrappedVariant
    }

    @Test("A GTK-style entry written on A makes the document A's current activity, shown on B's Device.CurrentActivity")
    func documentJustOpenedOnAIsOfferedToB() throws {
        let stacks = try TwoStacks(appsA: Self.editorApps, appsB: Self.editorApps)
        let (_, onB) = try stacks.pair()
        // A's useractivityd is started by D-Bus activation on its first call (handoffd waits for it).
        _ = try stacks.a.call("org.example.UserActivity", "/org/example/UserActivity", "org.freedesktop.DBus.Properties", "Get",
                              [.string("org.example.UserActivity"), .string("Version")])
        // Outside /tmp, which the bridge skips.
        let documents = try TemporaryDirectory(prefix: "uat-docs-", base: "/var/tmp")
        try writeFileAtomically(stacks.a.session.dataHome + "/recently-used.xbel", contents: xbel([
            XBELEntry(uri: "file://\(documents.path)/Report.odt", title: "Report.odt", app: UA.editor, exec: "'com.example.Editor %u'",
                      modified: Date(), mimeType: "application/vnd.oasis.opendocument.text"),
        ]))
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { value($0, "title") == .string("Report.odt") }), "\(stacks.logs)\n--- A useractivityd ---\n\(stacks.a.bus.log.suffix(4000))")
        let seen = try stacks.b.deviceProperties(onB)["CurrentActivity"]
        #expect(value(seen, "activity-type") == .string("org.example.UserActivity.open-document"))
        #expect(value(seen, "app-id") == .string(UA.editor))
        #expect(value(seen, "timestamp") != nil)

        // The setting off on A ends it there, and B hears that.
        try stacks.a.setPrivacy("RecentDocumentsBecomeCurrent", .boolean(false))
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", { $0?.stringVariantEntries?.isEmpty == true }), "\(stacks.logs)")
    }
}
