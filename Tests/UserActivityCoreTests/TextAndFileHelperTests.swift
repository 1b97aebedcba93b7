// SPDX-License-Identifier: Apache-2.0
import Foundation
import GLibSupport
import Testing
@testable import UserActivityCore

@Suite("Text folding for exact-title matches")
struct TextFoldingTests {
    @Test("Case, accents, width and surrounding space do not count", arguments: [
        ("  Crème BRÛLÉE \n", "creme brulee"),
        ("Ｒｅｐｏｒｔ", "report"),           // full-width letters
        ("Straße", "strasse"),               // case folding expands ß
        ("ﬁle", "file"),                     // ligature decomposed
        ("Ångström", "angstrom"),
    ])
    func equalAfterFolding(original: String, plain: String) {
        #expect(foldedForComparison(original) == foldedForComparison(plain))
    }

    @Test("Different words stay different; inner space is kept")
    func differencesSurvive() {
        #expect(foldedForComparison("résumé") != foldedForComparison("resumes"))
        #expect(foldedForComparison("a b") == "a b")
        #expect(foldedForComparison("a b") != foldedForComparison("ab"))
        #expect(foldedForComparison("") == "")
    }
}

@Suite("libc file helpers")
struct FileHelperTests {
    private func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "fs-helpers-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("Kinds, listing, symlink resolution and reading agree with Foundation")
    func agreeWithFoundation() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        let text = "línea 1\nline 2\n" + String(repeating: "x", count: 40_000)  // longer than one read chunk
        try text.write(toFile: root + "/file.desktop", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: root + "/sub")

        #expect(fileKind(atPath: root + "/sub") == .directory)
        #expect(fileKind(atPath: root + "/link") == .directory)  // followed
        #expect(fileKind(atPath: root + "/file.desktop") == .other)
        #expect(fileKind(atPath: root + "/missing") == nil)

        #expect(directoryEntries(atPath: root)?.sorted() == ["file.desktop", "link", "sub"])
        #expect(directoryEntries(atPath: root + "/missing") == nil)

        let realRoot = URL(fileURLWithPath: root).resolvingSymlinksInPath().path
        #expect(resolvingSymlinks(root + "/link") == realRoot + "/sub")
        #expect(resolvingSymlinks(root + "/missing") == root + "/missing")

        #expect(readTextFile(atPath: root + "/file.desktop") == text)
        #expect(readTextFile(atPath: root + "/missing") == nil)
    }

    @Test("procfs files (size 0 in stat) are read whole")
    func readsProcFiles() throws {
        let cgroup = try #require(readTextFile(atPath: "/proc/self/cgroup"))
        #expect(cgroup == (try String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)))
        #expect(!cgroup.isEmpty)
    }
}

@Suite("URL syntax of webpage-url and referrer-url")
struct URLSyntaxTests {
    @Test("Accepted", arguments: [
        ("https://example.com/page?q=1#top", true), ("HTTP://Example.com", true), ("https://user@host:8080/x", true),
        ("https://[::1]/", true), ("mailto:someone@example.com", false), ("file:///home/u/doc.odt", false),
        ("x-app+v1.2:open", false), ("https://例え.jp/パス", true),
    ])
    func accepted(url: String, webOnly: Bool) {
        #expect(URLSyntax.isValid(url, webOnly: webOnly))
        if webOnly { #expect(URLSyntax.isValid(url, webOnly: false)) }
    }

    @Test("Refused", arguments: [
        ("example.com", false), ("://x", false), ("1http://x", false), ("ht tp://x", false), ("https://exa mple.com", false),
        ("https://example.com/\u{7F}", false), ("https://example.com/\u{00A0}x", false), ("https://x/\u{2003}", false),
        ("https:", false), ("ftp://example.com", true), ("https:/example.com", true), ("https://", true),
        ("https://user@/path", true), ("https://:443/", true), ("mailto:", false),
    ])
    func refused(url: String, webOnly: Bool) {
        #expect(!URLSyntax.isValid(url, webOnly: webOnly))
    }
}

/// The service's URL check: GLib's strict RFC 3986 parser, plus a host-name check.
@Suite("URLs as GLib's g_uri_parse reads them")
struct GLibURITests {
    @Test("Accepted", arguments: [
        ("https://example.com/page?q=1#top", true), ("HTTP://Example.com", true), ("https://user@host:8080/x", true),
        ("https://[::1]/", true), ("https://example.com.", true), ("https://my_host.local/", true),
        ("mailto:someone@example.com", false), ("file:///home/u/doc.odt", false),
        ("x-app+v1.2:open", false), ("https://例え.jp/", true), ("https://192.0.2.1:8443/a", true),
        ("hTTpS://a-b.c_d.e/", true), ("https://\(String(repeating: "a", count: 63)).example/", true),
    ])
    func accepted(url: String, webOnly: Bool) {
        #expect(GLibURI.isValid(url, webOnly: webOnly))
        if webOnly { #expect(GLibURI.isValid(url, webOnly: false)) }
    }

    @Test("Refused", arguments: [
        // A host GLib parses but no resolver would: backslashes, spaces, other punctuation.
        ("https://\\\\evil/", true), ("https://\\evil/", true), ("https://ev\\il.com/", true), ("http://a%20b/", true),
        ("https://exa<mple.com/", true), ("https://a..b/", true),
        ("https://./", true), ("https://.example.com/", true), ("https://example.com../", true),
        ("https://\(String(repeating: "a", count: 64)).example/", true), ("httpss://example.com/", true),
        ("htt://example.com/", true),
        // No host at all.
        ("https://", true), ("https:///path", true), ("https://:443/", true), ("https://user@/path", true),
        ("https://@/", true), ("https:example.com", true), ("https:/example.com", true),
        // Not http(s).
        ("ftp://example.com", true), ("javascript:alert(1)", true), ("file:///etc/passwd", true),
        // Not a URL, or not absolute.
        ("example.com", false), ("://x", false), ("1http://x", false), ("//example.com/x", false),
        ("https:", false), ("mailto:", false), ("https://host:99999/", false),
        // White space and control characters, which GLib would keep.
        ("https://exa mple.com", false), ("https://ex\tample.com/", false), ("https://example.com/\u{7F}", false),
        ("https://example.com/\u{00A0}x", false), ("https://x/\u{2003}", false),
    ])
    func refused(url: String, webOnly: Bool) {
        #expect(!GLibURI.isValid(url, webOnly: webOnly))
    }

    @Test("The service's limits use it; the core's default stays the built-in check")
    func limits() {
        #expect(ActivityLimits().isValidURL("https://\\evil/", true), "the built-in check takes any non-empty host")
        #expect(!GLibURI.isValid("https://\\evil/", webOnly: true))
    }
}
