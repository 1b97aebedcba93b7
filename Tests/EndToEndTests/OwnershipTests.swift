// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

@Suite("Ownership of live activities")
struct OwnershipTests {
    @Test("Another app (or nobody) cannot change an app's activity; any connection of the owning app can")
    func onlyTheOwningAppMayChangeAnActivity() throws {
        let h = try DaemonHarness()
        // App A: an in-process connection that claims com.example.Editor and holds the activity.
        let editor = try h.connect()
        let path = try editor.create(UA.editType, app: UA.editor, [("title", .string("Draft"))])
        #expect(path.hasPrefix(UA.activityPathPrefix))

        // busctl from an unidentified host process (Invalidate has no a{sv} to claim an app with).
        // busctl --user call org.example.UserActivity <path> org.example.UserActivity.Activity Invalidate
        let invalidate = try h.busctl(["call", UA.busName, path, UA.activityInterface, "Invalidate"], debug: true)
        #expect(!invalidate.succeeded)
        #expect(invalidate.busctlErrorName == UA.error("AccessDenied"), "\(invalidate.stderr.suffix(600))")

        // busctl claiming app B per call: Update with app-id com.example.Viewer.
        let hijack = try h.busctl(["call", UA.busName, path, UA.activityInterface, "Update",
                                   "a{sv}", "2", "app-id", "s", UA.viewer, "title", "s", "Hijacked"], debug: true)
        #expect(hijack.busctlErrorName == UA.error("AccessDenied"), "\(hijack.stderr.suffix(600))")

        // gdbus Properties.Set on Title from an unidentified process.
        let set = try h.gdbusCall(path: path, "org.freedesktop.DBus.Properties.Set",
                                  [UA.activityInterface, "Title", "<'Hijacked'>"])
        #expect(set.gdbusErrorName == UA.error("AccessDenied"), "\(set)")

        for method in ["BecomeCurrent", "ResignCurrent", "Invalidate"] {
            let r = try h.gdbusCall(path: path, "\(UA.activityInterface).\(method)")
            #expect(r.gdbusErrorName == UA.error("AccessDenied"), "\(method): \(r)")
        }
        let addInfo = try h.gdbusCall(path: path, "\(UA.activityInterface).AddUserInfoEntries", ["{'page': <uint32 2>}"])
        #expect(addInfo.gdbusErrorName == UA.error("AccessDenied"), "\(addInfo)")

        // App B as an in-process connection registered with RegisterApplication.
        let viewer = try h.connect()
        try viewer.manager("RegisterApplication", [.string(UA.viewer)])
        #expect(dbusErrorName { try viewer.activity(path, "Invalidate") } == UA.error("AccessDenied"))
        #expect(dbusErrorName { try viewer.setProperty(path, "Title", .string("Hijacked")) } == UA.error("AccessDenied"))
        #expect(dbusErrorName {
            try viewer.activity(path, "Update", [.stringVariantDictionary([("title", .string("Hijacked"))])])
        } == UA.error("AccessDenied"))
        #expect(dbusErrorName { try viewer.activity(path, "BecomeCurrent") } == UA.error("AccessDenied"))
        // Reading is allowed to unconfined callers.
        #expect(try viewer.property(path, "AppId") == .string(UA.editor))

        // Nothing changed.
        #expect(try h.activityProperty(path, "Title") as? String == "Draft")
        #expect(try h.managedObjects()[path] != nil)
        #expect(try h.currentActivity() == "/")

        // The owner: Properties.Set and Update.
        try editor.setProperty(path, "Title", .string("Renamed"))
        #expect(try h.activityProperty(path, "Title") as? String == "Renamed")
        try editor.activity(path, "Update", [.stringVariantDictionary([
            ("title", .string("Chapter 2")), ("keywords", .stringArray(["draft", "novel"])),
        ])])
        #expect(try h.activityProperty(path, "Title") as? String == "Chapter 2")
        #expect(try h.activityProperty(path, "Keywords") as? [String] == ["draft", "novel"])

        // Ownership is by app: a script claiming com.example.Editor per call may change it too.
        // gdbus call --session --dest org.example.UserActivity --object-path <path> --method org.example.UserActivity.Activity.Update "{'app-id': <'com.example.Editor'>, 'title': <'From a script'>}"
        let sameApp = try h.gdbusCall(path: path, "\(UA.activityInterface).Update",
                                      ["{'app-id': <'com.example.Editor'>, 'title': <'From a script'>}"])
        #expect(sameApp.succeeded, "\(sameApp)")
        #expect(try h.activityProperty(path, "Title") as? String == "From a script")

        // The owner invalidates it: the object leaves the bus.
        try editor.activity(path, "Invalidate")
        let gone = try h.gdbusCall(path: path, "\(UA.activityInterface).BecomeCurrent")
        #expect(gone.gdbusErrorName == UA.unknownObject, "\(gone)")
        #expect(dbusErrorName { try editor.activity(path, "Invalidate") } == UA.unknownObject)
    }
}
