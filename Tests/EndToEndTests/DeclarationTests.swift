// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

@Suite("Declared activity types and teams")
struct DeclarationTests {
    @Test("A type the app does not declare is NotDeclared")
    func undeclaredTypeIsRefused() throws {
        let h = try DaemonHarness()
        // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity --method org.example.UserActivity.BecomeCurrent com.example.Editor.not-declared "{'app-id': <'com.example.Editor'>}"
        let becomeCurrent = try h.gdbusManager("BecomeCurrent",
                                               ["com.example.Editor.not-declared", "{'app-id': <'com.example.Editor'>}"])
        #expect(becomeCurrent.gdbusErrorName == UA.error("NotDeclared"), "\(becomeCurrent)\n\(h.logTail(20))")

        let create = try h.gdbusManager("CreateActivity",
                                        ["com.example.Editor.not-declared", "{'app-id': <'com.example.Editor'>}"])
        #expect(create.gdbusErrorName == UA.error("NotDeclared"), "\(create)")

        // Another app's declared type is not the caller's.
        let foreign = try h.gdbusManager("CreateActivity", [UA.editType, "{'app-id': <'com.example.Viewer'>}"])
        #expect(foreign.gdbusErrorName == UA.error("NotDeclared"), "\(foreign)")

        // The declared one is accepted (the call's connection ends right after, and the activity with it).
        let declared = try h.gdbusManager("BecomeCurrent", [UA.editType, "{'app-id': <'com.example.Editor'>}"])
        #expect(declared.succeeded, "\(declared)\n\(h.logTail(20))")
        #expect(declared.trimmedStdout.hasPrefix("(objectpath '\(UA.activityPathPrefix)"), "\(declared.stdout)")
    }

    @Test("Another vendor's app cannot declare a team's types, not even by naming the team")
    func competitorsCannotDeclareAnotherTeamsTypes() throws {
        let h = try DaemonHarness(apps: FixtureApp.standard + [
            // Ignored by the team rule: the type does not start with com.evil.
            FixtureApp("com.evil.App", types: [UA.editType, "com.evil.App.legit"]),
            // An explicit team that is not an ancestor of the app ID: every declaration is ignored (fail closed).
            FixtureApp("com.evil.Impostor", types: [UA.editType, "com.evil.Impostor.own"], team: "com.example"),
            // A legitimate explicit team: an ancestor of the app ID with at least two components.
            FixtureApp("com.example.suite.Writer", types: ["com.example.shared-draft"], team: "com.example"),
        ])

        for method in ["BecomeCurrent", "CreateActivity"] {
            let evil = try h.gdbusManager(method, [UA.editType, "{'app-id': <'com.evil.App'>}"])
            #expect(evil.gdbusErrorName == UA.error("NotDeclared"), "com.evil.App \(method): \(evil)\n\(h.logTail(20))")

            let impostor = try h.gdbusManager(method, [UA.editType, "{'app-id': <'com.evil.Impostor'>}"])
            #expect(impostor.gdbusErrorName == UA.error("NotDeclared"), "com.evil.Impostor \(method): \(impostor)")

            let impostorOwn = try h.gdbusManager(method, ["com.evil.Impostor.own", "{'app-id': <'com.evil.Impostor'>}"])
            #expect(impostorOwn.gdbusErrorName == UA.error("NotDeclared"),
                    "an app with a disallowed X-UserActivityTeam has all its declarations ignored: \(impostorOwn)")
        }

        // Controls: the catalog itself works.
        let legit = try h.gdbusManager("CreateActivity", ["com.evil.App.legit", "{'app-id': <'com.evil.App'>}"])
        #expect(legit.succeeded, "com.evil.App's own type: \(legit)\n\(h.logTail(20))")
        let writer = try h.gdbusManager("CreateActivity", ["com.example.shared-draft", "{'app-id': <'com.example.suite.Writer'>}"])
        #expect(writer.succeeded, "explicit team com.example for com.example.suite.Writer: \(writer)")
        let owner = try h.gdbusManager("BecomeCurrent", [UA.editType, "{'app-id': <'com.example.Editor'>}"])
        #expect(owner.succeeded, "\(owner)")
    }

    @Test("Desktop entries written while the daemon runs are picked up within seconds")
    func desktopEntriesAreReloaded() throws {
        let h = try DaemonHarness()
        try h.activate()
        let lateArguments = ["com.example.Late.sketch", "{'app-id': <'com.example.Late'>}"]

        let before = try h.gdbusManager("CreateActivity", lateArguments)
        #expect(before.gdbusErrorName == UA.error("UnknownApplication"), "\(before)")

        // A new app in $XDG_DATA_DIRS/applications.
        try h.session.writeDesktopEntry(appID: "com.example.Late", types: ["com.example.Late.sketch"])
        let accepted = try waitUntil(timeout: 30, interval: 0.1) {
            try h.gdbusManager("CreateActivity", lateArguments).succeeded
        }
        #expect(accepted, "com.example.Late.sketch not accepted 30 s after the entry was written\n\(h.logTail(30))")

        // A new type for an installed app, from an entry in $XDG_DATA_HOME/applications (it takes precedence).
        let annotate = ["com.example.Editor.annotate", "{'app-id': <'com.example.Editor'>}"]
        let notYet = try h.gdbusManager("CreateActivity", annotate)
        #expect(notYet.gdbusErrorName == UA.error("NotDeclared"), "\(notYet)")
        try h.session.writeDesktopEntry(appID: UA.editor, types: [UA.editType, "com.example.Editor.annotate"],
                                        inDataHome: true)
        let overridden = try waitUntil(timeout: 30, interval: 0.1) {
            try h.gdbusManager("CreateActivity", annotate).succeeded
        }
        #expect(overridden, "the $XDG_DATA_HOME entry's new type not accepted within 30 s\n\(h.logTail(30))")

        // Removing an entry uninstalls the app.
        try h.session.removeDesktopEntry(appID: "com.example.Late")
        let removed = try waitUntil(timeout: 30, interval: 0.1) {
            try h.gdbusManager("CreateActivity", lateArguments).gdbusErrorName == UA.error("UnknownApplication")
        }
        #expect(removed, "com.example.Late still installed 30 s after its entry was removed")
    }
}
