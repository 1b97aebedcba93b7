// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// The two halves together: a document an app records in A's
/// recently-used.xbel becomes A's current activity, and continuing it on B
/// brings the file along — unless A's privacy controls keep it on A.
extension FileTransferTests {
    /// Paired stacks whose A keeps its documents outside /tmp (the recent-files
    /// bridge skips /tmp): A's handoffd takes that folder as the person's home,
    /// the only place it sends files from.
    func setUpWithRecentDocuments() throws -> (setup: Setup, homeA: TemporaryDirectory) {
        let setup = try setUp(appsA: [(UA.editor, [UA.editType])])
        let stacks = setup.stacks
        let home = try TemporaryDirectory(prefix: "uat-home-", base: "/var/tmp")
        stacks.a.killHandoffd()
        stacks.a.extraEnvironment["HOME"] = home.path
        try stacks.a.startHandoffd()
        #expect(stacks.a.waitForDevice(stacks.a.devicePath(of: stacks.b), "Reachable", timeout: 60, { $0 == .boolean(true) }), "\(stacks.logs)")
        // A's useractivityd is started by D-Bus activation on its first call.
        _ = try stacks.a.call("org.example.UserActivity", "/org/example/UserActivity", "org.freedesktop.DBus.Properties", "Get",
                              [.string("org.example.UserActivity"), .string("Version")])
        return (setup, home)
    }

    /// Records on A, as a GTK app does, that the editor just opened `path`.
    func recordUse(_ setup: Setup, path: String, title: String) throws {
        try writeFileAtomically(setup.stacks.a.session.dataHome + "/recently-used.xbel", contents: xbel([
            XBELEntry(uri: fileURI(path), title: title, app: UA.editor, exec: "'com.example.Editor %u'",
                      modified: Date(), mimeType: "application/vnd.oasis.opendocument.text"),
        ]))
    }

    func currentActivityOnA(_ setup: Setup) throws -> TypedValue? {
        let value = try setup.stacks.a.call("org.example.UserActivity", "/org/example/UserActivity", "org.freedesktop.DBus.Properties", "Get",
                                            [.string("org.example.UserActivity"), .string("CurrentActivity")]).first
        if case .variant(let inner)? = value { return inner }
        return value
    }

    @Test("A GTK-style entry in A's recently-used.xbel: B continues the document, it arrives intact in B's downloads folder and B's app opens it")
    func documentRecordedOnAOpensOnB() throws {
        let (setup, homeA) = try setUpWithRecentDocuments()
        let stacks = setup.stacks
        let path = homeA.path + "/Report.odt"
        let bytes = try randomFile(path, bytes: (3 << 20) + 4321)
        try recordUse(setup, path: path, title: "Report.odt")
        #expect(stacks.b.waitForDevice(setup.onB, "CurrentActivity", timeout: 60, { title($0) == "Report.odt" }),
                "\(stacks.logs)\n--- A useractivityd ---\n\(stacks.a.bus.log.suffix(4000))")
        #expect(try currentActivityOnA(setup) != .objectPath("/"))
        let outcome = continueOnB(setup)
        #expect(outcome.error == nil && outcome.appID == UA.editor, "\(outcome) \(stacks.logs)")
        let arrived = setup.downloads + "/Report.odt"
        #expect(FileManager.default.contents(atPath: arrived) == bytes, "\(stacks.logs)")
        #expect(waitUntil(timeout: 30) { (LaunchRecorder.read(setup.record) ?? []).contains("ARG \(arrived)") },
                "\(LaunchRecorder.read(setup.record) ?? [])")
        #expect(filesUnder(setup.downloads) == ["Report.odt"], "no temporary file stays")
        #expect(stacks.b.handoffLog.contains("received "), "\(stacks.logs)")
    }

    @Test("Paused, the recording app blocked, or RecentDocumentsBecomeCurrent off on A: the document is not current on A and B gets nothing (HandoffFailed, no file)")
    func privacyControlsKeepTheDocumentOnA() throws {
        let (setup, homeA) = try setUpWithRecentDocuments()
        let stacks = setup.stacks
        let a = stacks.a
        let controls: [(name: String, on: () throws -> Void, off: () throws -> Void)] = [
            ("Paused", { try a.setPrivacy("Paused", .boolean(true)) }, { try a.setPrivacy("Paused", .boolean(false)) }),
            ("BlockedApplications", { try a.setPrivacy("BlockedApplications", .stringArray([UA.editor])) },
             { try a.setPrivacy("BlockedApplications", .stringArray([])) }),
            ("RecentDocumentsBecomeCurrent", { try a.setPrivacy("RecentDocumentsBecomeCurrent", .boolean(false)) },
             { try a.setPrivacy("RecentDocumentsBecomeCurrent", .boolean(true)) }),
        ]
        let refusal = "a new use not made current"
        func refusals() -> Int { a.bus.log.components(separatedBy: refusal).count - 1 }
        for control in controls {
            try control.on()
            let before = refusals()
            // Each control gets its own document: a new use the bridge has not seen.
            let path = homeA.path + "/\(control.name).odt"
            _ = try randomFile(path, bytes: 64 << 10)
            try recordUse(setup, path: path, title: "\(control.name).odt")
            // The bridge has read the use and declined it.
            #expect(waitUntil(timeout: 60) { refusals() > before }, "\(control.name): \(a.bus.log.suffix(4000))")
            #expect(try currentActivityOnA(setup) == .objectPath("/"), "\(control.name)")
            #expect(title(try stacks.b.deviceProperties(setup.onB)["CurrentActivity"]) == nil, "\(control.name)")
            let outcome = continueOnB(setup)
            #expect(outcome.error == UA.error("HandoffFailed"), "\(control.name): \(outcome) \(stacks.logs)")
            #expect(filesUnder(setup.homeB).filter { $0.contains("Downloads") }.isEmpty, "\(control.name)")
            try control.off()
        }
        #expect(!stacks.b.handoffLog.contains("received "), "nothing was sent: \(stacks.logs)")
    }
}
