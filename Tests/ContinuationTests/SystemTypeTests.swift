// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

// The system activity types end to end: fake apps whose Exec runs a shell
// script that writes its arguments and launch environment to a file in the
// test's temporary directory (TestSupport's LaunchRecorder); default handlers
// set in mimeapps.list.

let browsingWeb = "org.example.UserActivity.browsing-web"
private let openDocument = "org.example.UserActivity.open-document"

/// Desktop entries whose Exec runs TestSupport's `LaunchRecorder`.
struct ArgvApps {
    let h: ContinuationHarness
    let recorder: LaunchRecorder

    init(_ h: ContinuationHarness) throws {
        self.h = h
        recorder = try LaunchRecorder(directory: h.session.root)
    }

    func argvPath(_ app: String) -> String { h.logDirectory + "/\(app).argv" }

    /// An app whose Exec records its arguments; `fieldCode` is appended ("" for none).
    func install(_ app: String, fieldCode: String, mimeTypes: [String] = []) throws {
        var extra: [String] = []
        if !mimeTypes.isEmpty { extra.append("MimeType=" + mimeTypes.map { "\($0);" }.joined()) }
        let exec = recorder.command(recordingTo: argvPath(app)).map(desktopQuote).joined(separator: " ") + (fieldCode.isEmpty ? "" : " " + fieldCode)
        try h.session.writeDesktopEntry(appID: app, types: [], exec: exec, extraLines: extra)
    }

    func defaults(_ pairs: [(String, String)]) throws {
        try writeFileAtomically(h.session.configHome + "/mimeapps.list",
                                contents: "[Default Applications]\n" + pairs.map { "\($0.0)=\($0.1).desktop\n" }.joined())
    }

    /// The recorded lines of `app`'s launch; nil when it was not launched in time.
    func recorded(_ app: String, timeout: Double = 10) -> [String]? { LaunchRecorder.read(argvPath(app), timeout: timeout) }

    func arguments(_ app: String) -> [String]? {
        recorded(app)?.filter { $0.hasPrefix("ARG ") }.map { String($0.dropFirst(4)) }
    }

    /// Waits a moment to be sure an app was NOT launched.
    func wasLaunched(_ app: String) -> Bool { recorded(app, timeout: 0.5) != nil }
}

@Suite("System activity types", .serialized)
struct SystemTypeTests {
    static let browser = "com.example.Browser"
    static let otherBrowser = "com.example.OtherBrowser"
    static let docs = "com.example.Docs"
    static let viewer = "com.example.Viewer"
    static let plain = "com.example.Plain"
    static let files = "com.example.Files"

    /// Two browsers (the other is the default), a document app taking %U, a
    /// viewer that is the default for text/x-uatest, a plain app taking nothing.
    private func setUp() throws -> (ContinuationHarness, ArgvApps) {
        let h = try ContinuationHarness(apps: [])
        let apps = try ArgvApps(h)
        try apps.install(Self.browser, fieldCode: "%u", mimeTypes: ["x-scheme-handler/https", "x-scheme-handler/http", "text/html"])
        try apps.install(Self.otherBrowser, fieldCode: "%u", mimeTypes: ["x-scheme-handler/https", "x-scheme-handler/http"])
        try apps.install(Self.docs, fieldCode: "%U", mimeTypes: ["text/x-uatest"])
        try apps.install(Self.viewer, fieldCode: "%F", mimeTypes: ["text/x-uatest", "text/plain"])
        try apps.install(Self.files, fieldCode: "%f")
        try apps.install(Self.plain, fieldCode: "")
        try apps.defaults([("x-scheme-handler/https", Self.otherBrowser), ("x-scheme-handler/http", Self.otherBrowser),
                           ("text/x-uatest", Self.viewer), ("text/plain", Self.viewer)])
        return (h, apps)
    }

    @Test("Any app may make a system type current and donate it without declaring it; what it needs is checked")
    func noDeclarationNeeded() throws {
        let (h, _) = try setUp()
        let client = try h.connect()
        try client.registerApplication(Self.plain)
        let path = try client.call(UA.managerPath, UA.managerInterface, "BecomeCurrent", [.string(browsingWeb), .stringVariantDictionary([
            ("webpage-url", .string("https://example.com/a")), ("title", .string("A page"))])]).first?.objectPathValue
        #expect(path?.hasPrefix(UA.activityPathPrefix) == true, "\(h.logTail())")
        let saved = try client.call(UA.managerPath, UA.managerInterface, "Donate", [.string(openDocument), .stringVariantDictionary([
            ("user-info", .stringVariantDictionary([("uri", .string("file:///x/report.txt")), ("mime-type", .string("text/plain"))]))])])
        #expect(saved.first?.stringValue?.isEmpty == false)

        let noURL = dbusError { try client.call(UA.managerPath, UA.managerInterface, "CreateActivity", [.string(browsingWeb), .stringVariantDictionary([("title", .string("t"))])]) }
        #expect(noURL?.name == UA.error("InvalidArgument"), "\(String(describing: noURL))")
        #expect(noURL?.message.contains("webpage-url") == true)
        let noURI = dbusError { try client.call(UA.managerPath, UA.managerInterface, "Donate", [.string(openDocument), .stringVariantDictionary([("title", .string("t"))])]) }
        #expect(noURI?.name == UA.error("InvalidArgument"), "\(String(describing: noURI))")
        let badURI = dbusError { try client.call(UA.managerPath, UA.managerInterface, "Donate", [.string(openDocument), .stringVariantDictionary([
            ("user-info", .stringVariantDictionary([("uri", .uint32(4))]))])]) }
        #expect(badURI?.name == UA.error("InvalidArgument"), "\(String(describing: badURI))")
        // Clearing the URL of a live browsing-web activity is refused too.
        let cleared = dbusError { try client.call(try #require(path), UA.activityInterface, "Update", [.stringVariantDictionary([("webpage-url", .string(""))])]) }
        #expect(cleared?.name == UA.error("InvalidArgument"), "\(String(describing: cleared))")
        // An app-defined type still needs its declaration.
        let undeclared = dbusError { try client.call(UA.managerPath, UA.managerInterface, "Donate", [.string("com.example.Plain.view"), .stringVariantDictionary([])]) }
        #expect(undeclared?.name == UA.error("NotDeclared"), "\(String(describing: undeclared))")
    }

    @Test("browsing-web: the publishing browser gets the URL with the activation token; another publisher's goes to the default browser")
    func browsingWebRouting() throws {
        let (h, apps) = try setUp()
        let client = try h.connect()
        let url = "https://example.com/docs/42?view=full"
        let byBrowser = try client.continueActivity(browsingWeb, [("webpage-url", .string(url)), ("app-id", .string(Self.browser))],
                                                    options: [("activation-token", .string("tok-123"))])
        #expect(byBrowser == Self.browser, "\(h.logTail())")
        let recorded = try #require(apps.recorded(Self.browser), "\(h.logTail())")
        #expect(recorded.contains("ARG \(url)"))
        #expect(recorded.contains("XDG_ACTIVATION_TOKEN=tok-123"))
        #expect(!apps.wasLaunched(Self.otherBrowser))

        let url2 = "https://example.com/from-plain"
        let byDefault = try client.continueActivity(browsingWeb, [("webpage-url", .string(url2)), ("app-id", .string(Self.plain))],
                                                    options: [("activation-token", .string("tok-456"))])
        #expect(byDefault == Self.otherBrowser, "\(h.logTail())")
        #expect(apps.arguments(Self.otherBrowser) == [url2])
        #expect(apps.recorded(Self.otherBrowser)?.contains("XDG_ACTIVATION_TOKEN=tok-456") == true, "the default browser gets the token too")
        #expect(!apps.wasLaunched(Self.plain))
    }

    @Test("open-document: the publisher taking %U is launched with the URI; one taking nothing leaves it to the MIME type's default")
    func openDocumentRouting() throws {
        let (h, apps) = try setUp()
        let client = try h.connect()
        let file = h.session.root + "/my report.uatest"
        try writeFileAtomically(file, contents: "hello\n")
        let uri = "file://" + file.replacingOccurrences(of: " ", with: "%20")
        let info: [(String, TypedValue)] = [("uri", .string(uri)), ("mime-type", .string("text/x-uatest"))]

        let byDocs = try client.continueActivity(openDocument, [("user-info", .stringVariantDictionary(info)), ("app-id", .string(Self.docs))],
                                                 options: [("desktop-startup-id", .string("sn-9"))])
        #expect(byDocs == Self.docs, "\(h.logTail())")
        let recorded = try #require(apps.recorded(Self.docs), "\(h.logTail())")
        // GIO hands a local file:// URI over as its path, for %u/%U as for %f/%F.
        #expect(recorded.contains("ARG \(file)"), "\(recorded)")
        #expect(recorded.contains("DESKTOP_STARTUP_ID=sn-9"), "\(recorded)")

        let byDefault = try client.continueActivity(openDocument, [("user-info", .stringVariantDictionary(info)), ("app-id", .string(Self.plain))])
        #expect(byDefault == Self.viewer, "\(h.logTail())")
        // %F: GIO hands the viewer the local path.
        #expect(apps.arguments(Self.viewer) == [file], "\(h.logTail())")
        #expect(!apps.wasLaunched(Self.plain))
    }

    @Test("open-document: a publisher taking %f gets the path with the activation token; without mime-type the file's type picks the default")
    func openDocumentFileFieldAndGuessedType() throws {
        let (h, apps) = try setUp()
        let client = try h.connect()
        let file = h.session.root + "/plain notes"
        try writeFileAtomically(file, contents: "just some text\n")
        let uri = "file://" + file.replacingOccurrences(of: " ", with: "%20")
        let info: TypedValue = .stringVariantDictionary([("uri", .string(uri))])

        let byFiles = try client.continueActivity(openDocument, [("user-info", info), ("app-id", .string(Self.files))],
                                                  options: [("activation-token", .string("tok-f"))])
        #expect(byFiles == Self.files, "\(h.logTail())")
        let recorded = try #require(apps.recorded(Self.files), "\(h.logTail())")
        #expect(recorded.filter { $0.hasPrefix("ARG ") } == ["ARG \(file)"], "\(recorded)")
        #expect(recorded.contains("XDG_ACTIVATION_TOKEN=tok-f"), "\(recorded)")

        // No mime-type and a publisher that takes no files: GIO reads the file's type (text) and its default opens it.
        let byDefault = try client.continueActivity(openDocument, [("user-info", info), ("app-id", .string(Self.plain))])
        #expect(byDefault == Self.viewer, "\(h.logTail())")
        #expect(apps.arguments(Self.viewer) == [file], "\(h.logTail())")
        #expect(!apps.wasLaunched(Self.plain))
    }

    @Test("open-document: a file:// URI that does not exist here is NotFound naming the path; target-app-id must take URIs")
    func openDocumentErrors() throws {
        let (h, apps) = try setUp()
        let client = try h.connect()
        let missing = h.session.root + "/gone.uatest"
        let notFound = dbusError {
            try client.continueActivity(openDocument, [("user-info", .stringVariantDictionary([("uri", .string("file://" + missing))])),
                                                       ("app-id", .string(Self.docs))])
        }
        #expect(notFound?.name == UA.error("NotFound"), "\(String(describing: notFound))")
        #expect(notFound?.message.contains(missing) == true, "\(String(describing: notFound))")
        #expect(!apps.wasLaunched(Self.docs))

        let file = h.session.root + "/here.uatest"
        try writeFileAtomically(file, contents: "x")
        let noURIs = dbusError {
            try client.continueActivity(openDocument, [("user-info", .stringVariantDictionary([("uri", .string("file://" + file))]))],
                                        options: [("target-app-id", .string(Self.plain))])
        }
        #expect(noURIs?.name == UA.error("NoHandler"), "\(String(describing: noURIs))")
        // A saved copy keeps uri and mime-type even when required-user-info-keys names others.
        try client.registerApplication(Self.docs)
        let saved = try client.call(UA.managerPath, UA.managerInterface, "Donate", [.string(openDocument), .stringVariantDictionary([
            ("user-info", .stringVariantDictionary([("uri", .string("file://" + file)), ("mime-type", .string("text/x-uatest")), ("page", .uint32(3))])),
            ("required-user-info-keys", .stringArray(["page"]))])]).first?.stringValue ?? ""
        let bySaved = try client.call(UA.managerPath, UA.managerInterface, "ContinueSavedActivity", [.string(saved), .stringVariantDictionary([])])
        #expect(bySaved.first?.stringValue == Self.docs, "\(h.logTail())")
        #expect(apps.arguments(Self.docs) == [file])
        try FileManager.default.removeItem(atPath: apps.argvPath(Self.docs))

        let chosen = try client.continueActivity(openDocument, [("user-info", .stringVariantDictionary([("uri", .string("file://" + file))]))],
                                                 options: [("target-app-id", .string(Self.docs))])
        #expect(chosen == Self.docs)
        #expect(apps.arguments(Self.docs) == [file])
    }
}
