// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// The README's Handoff walk-through, with the shipped example app on both
/// desktops: open a document at a page on A, the notification on B, its
/// Continue action, and the example app launched on B at the same page.
@Suite("Handoff walk-through with the example app", .serialized)
struct WalkthroughTests {
    static let exampleID = "com.example.UserActivityExample"
    static let exampleTypes = ["\(exampleID).open-document", "\(exampleID).show-page"]

    /// The repository's desktop entry, with Exec's program made absolute (its arguments stay as shipped).
    func installExampleEntry(on stack: Stack, example: String) throws {
        let source = "\(repositoryRoot())/desktop/share/applications/\(Self.exampleID).desktop"
        let entry = try String(contentsOfFile: source, encoding: .utf8)
            .replacingOccurrences(of: "\nExec=UserActivityExample ", with: "\nExec=\(example) ")
        try #require(entry.contains("\nExec=\(example) --handle-continuations\n"), "\(entry)")
        try writeFileAtomically("\(stack.session.applicationsDirectory())/\(Self.exampleID).desktop", contents: entry)
    }

    @Test func aDocumentOpenedOnOneDesktopIsContinuedAtTheSamePageOnTheOther() throws {
        let example = try BuiltProducts.executable(named: "UserActivityExample")
        // Both desktops have the app installed; handoffd reads the types when it starts.
        let apps = [(id: Self.exampleID, types: Self.exampleTypes)]
        let stacks = try TwoStacks(appsA: apps, appsB: apps)
        try installExampleEntry(on: stacks.a, example: example)
        try installExampleEntry(on: stacks.b, example: example)
        // B's notification server: the person clicks "Continue".
        let notifications = try stacks.b.spawnScript(notificationServerScript, "notifications.py", ["continue"])
        _ = try stacks.pair()

        // On A the person opens a document at page 12.
        let onA = try stacks.a.bus.spawn(example, ["--open", "/home/user/Report.odt", "--page", "12"])
        defer { onA.terminate(grace: 1) }
        let opened = try #require(try onA.readLine(timeout: 30), "\(onA.stderrText)")
        #expect(opened.hasPrefix("UserActivityExample "), "\(opened)")

        // On B the notification offers it; its Continue action launches the example app there.
        let offer = try #require(try notifications.readLine(timeout: 30), "\(stacks.logs)")
        #expect(offer.contains("Continue “Open Report.odt” from Stack A") && offer.contains("continue Continue"), "\(offer)")
        let continuedOnB = waitUntil(timeout: 30) {
            stacks.b.bus.log.contains("▶ open-document: /home/user/Report.odt, page 12 (continued, published by \(Self.exampleID))")
        }
        #expect(continuedOnB, "\(stacks.b.bus.log.suffix(3000))\n\(stacks.logs)")

        // A's app learns where its document went.
        let wasContinued = waitUntil(timeout: 30) {
            onA.stdoutText.contains("✓ \(Self.exampleID).open-document was continued by \(Self.exampleID)")
        }
        #expect(wasContinued, "\(onA.stdoutText)\n\(stacks.logs)")
    }
}
