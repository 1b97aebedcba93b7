// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

extension ContinuationTests {
    @Suite("Choosing the target: team, target-app-id, order")
    struct TargetChoice {
        @Test("Only apps of the publisher's team receive its activities (com.example.Editor.Lite, team com.example.Editor, does not get com.example.Editor's)")
        func teamRestriction() throws {
            let h = try ContinuationHarness(apps: [
                AppEntry(UA.editor, .exec("/bin/true")),
                AppEntry(UA.lite, team: "com.example.Editor", .handler()),
            ])
            try h.startHandler(UA.lite)
            let client = try h.connect()
            let fromEditor: [(String, TypedValue)] = [("app-id", .string(UA.editor)), ("title", .string("secret"))]

            // Naming the other team's app is refused outright.
            let named = dbusError { try client.continueActivity(UA.editType, fromEditor, options: [("target-app-id", .string(UA.lite))]) }
            #expect(named?.name == UA.error("NoHandler"), "\(String(describing: named))")
            #expect(named?.message.contains("team") == true, "\(String(describing: named))")

            // Without a target the only candidate of Editor's team is Editor itself
            // (launched, never registers): it times out; Lite, registered and
            // willing, never sees the activity.
            let unnamed = dbusError { try client.continueActivity(UA.editType, fromEditor, options: [("timeout-ms", .uint32(800))]) }
            #expect(unnamed?.name == UA.error("RemoteApplicationTimedOut"), "\(String(describing: unnamed))\n\(h.logTail())")
            #expect(h.events(UA.lite, "continue").isEmpty, "an app of another team received the activity")

            // With no known publisher every declaring app is a candidate, and the one with a handler is preferred.
            #expect(try client.continueActivity(UA.editType, [("title", .string("public link"))]) == UA.lite)
            // Lite's own activities go to Lite.
            #expect(try client.continueActivity(UA.editType, [("app-id", .string(UA.lite))]) == UA.lite)
            let received = h.events(UA.lite, "continue").compactMap { $0.dictionary("activity")["title"] as? String }
            #expect(!received.contains("secret"))
        }

        @Test("Order: the publisher itself first, then an app with a handler; target-app-id picks another candidate")
        func publisherFirstThenHandlers() throws {
            let h = try ContinuationHarness(apps: [
                AppEntry(UA.editor, .handler()),
                AppEntry(UA.viewer, .handler()),
                AppEntry(UA.activatable, .activatable),
            ])
            try h.startHandler(UA.editor)
            try h.startHandler(UA.viewer)
            let client = try h.connect()
            // Publisher Editor: back to Editor (a Handoff to the same app), though Viewer has a handler too.
            #expect(try client.continueActivity(UA.editType, [("app-id", .string(UA.editor))]) == UA.editor)
            // No publisher: a handler app (by app ID, so Editor before Viewer) before the D-Bus-activatable one.
            #expect(try client.continueActivity(UA.editType) == UA.editor)
            // target-app-id chooses among the candidates.
            #expect(try client.continueActivity(UA.editType, [("app-id", .string(UA.editor))],
                                                options: [("target-app-id", .string(UA.viewer))]) == UA.viewer)
            #expect(h.events(UA.viewer, "continue").count == 1)
            #expect(h.events(UA.editor, "continue").count == 2)
            #expect(h.events(UA.activatable).isEmpty, "the activatable app was not started")
            // A target that does not declare the type is refused.
            let error = dbusError {
                try client.continueActivity("com.example.Viewer.only", options: [("target-app-id", .string(UA.viewer))])
            }
            #expect(error?.name == UA.error("NoHandler"), "\(String(describing: error))")
        }
    }
}
