// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

@Suite("Limits")
struct LimitsTests {
    @Test("The 257th live activity of one connection is LimitExceeded; everyone else is still served")
    func liveActivitiesPerConnection() throws {
        let h = try DaemonHarness()
        let app = try h.connect()
        var paths: [String] = []
        for i in 0..<256 {
            paths.append(try app.create(UA.editType, app: UA.editor, [("title", .string("Document \(i)"))]))
        }
        #expect(Set(paths).count == 256)
        #expect(dbusErrorName { try app.create(UA.editType, app: UA.editor) } == UA.error("LimitExceeded"))
        #expect(dbusErrorName { try app.create(UA.editType, app: UA.editor, becomeCurrent: true) } == UA.error("LimitExceeded"))

        // The daemon still answers everyone else.
        #expect(try !h.activate().isEmpty)
        let other = try h.connect()
        let otherPath = try other.create(UA.viewType, app: UA.viewer, [("title", .string("Picture"))], becomeCurrent: true)
        #expect(try h.currentActivity() == otherPath)
        #expect(try h.managedObjects().count == 257)

        // Invalidating one frees a slot on that connection.
        try app.activity(paths[0], "Invalidate")
        paths[0] = try app.create(UA.editType, app: UA.editor)

        // Closing the connection ends all of its activities, and only those.
        app.close()
        let cleaned = try waitUntil(timeout: 30, interval: 0.1) { try h.managedObjects().count == 1 }
        let left = try h.managedObjects().count
        #expect(cleaned, "\(left) objects left after the 256-activity connection closed")
        #expect(try h.managedObjects()[otherPath] != nil)
        #expect(try h.currentActivity() == otherPath)
    }

    @Test("A 70 KiB user-info is UserInfoTooLarge; the daemon keeps serving")
    func userInfoTooLarge() throws {
        let h = try DaemonHarness()
        let app = try h.connect()
        let big: TypedValue = .stringVariantDictionary([("blob", .string(String(repeating: "x", count: 70 * 1024)))])
        #expect(dbusErrorName { try app.create(UA.editType, app: UA.editor, [("user-info", big)]) }
            == UA.error("UserInfoTooLarge"))

        // The same from a script: gdbus with a generated 70 KiB argument.
        let blob = String(repeating: "x", count: 70 * 1024)
        let gdbus = try h.gdbusManager("CreateActivity", [
            UA.editType, "{'app-id': <'com.example.Editor'>, 'user-info': <{'blob': <'\(blob)'>}>}",
        ])
        #expect(gdbus.gdbusErrorName == UA.error("UserInfoTooLarge"), "\(gdbus.stderr.prefix(400))")

        // Within the limit: accepted, and it round-trips with the same types.
        let fits: TypedValue = .stringVariantDictionary([
            ("blob", .string(String(repeating: "y", count: 60 * 1024))),
            ("page", .uint32(3)),
            ("nested", .stringVariantDictionary([("list", .array(elementType: "x", [.int64(-1), .int64(1 << 40)]))])),
        ])
        let path = try app.create(UA.editType, app: UA.editor, [("title", .string("Fits")), ("user-info", fits)])
        #expect(try app.property(path, "UserInfo") == fits)

        // An Update over the limit changes nothing (not even the title in the same call).
        #expect(dbusErrorName {
            try app.activity(path, "Update", [.stringVariantDictionary([("title", .string("Changed")), ("user-info", big)])])
        } == UA.error("UserInfoTooLarge"))
        #expect(try app.property(path, "Title") == .string("Fits"))
        #expect(dbusErrorName {
            try app.activity(path, "AddUserInfoEntries", [.stringVariantDictionary([("more", .string(String(repeating: "z", count: 8 * 1024)))])])
        } == UA.error("UserInfoTooLarge"), "60 KiB + 8 KiB merged is over 64 KiB")
        #expect(try app.property(path, "UserInfo") == fits)

        // Still serving everyone.
        #expect(try !h.activate().isEmpty)
        let other = try h.connect()
        _ = try other.create(UA.viewType, app: UA.viewer, becomeCurrent: true)
    }
}
