// SPDX-License-Identifier: Apache-2.0
import Testing
import TypedValues
@testable import UserActivityCore

private let web = SystemActivityType.browsingWeb
private let doc = SystemActivityType.openDocument

private func app(_ id: String, mime: [String] = [], takesURIs: Bool = true) -> InstalledApp {
    InstalledApp(id: id, desktopFilePath: "/apps/\(id).desktop", team: AppCatalog.implicitTeam(of: id),
                 mimeTypes: mime, execTakesURIs: takesURIs)
}

private func properties(url: String = "", uri: TypedValue? = nil, mime: String? = nil) -> ActivityProperties {
    var p = ActivityProperties()
    p.webpageURL = url
    if let uri { p.userInfo.append((key: "uri", value: uri)) }
    if let mime { p.userInfo.append((key: "mime-type", value: .string(mime))) }
    return p
}

private func kind(_ body: () throws -> Any) -> UserActivityError.Kind? {
    do { _ = try body() } catch let error as UserActivityError { return error.kind } catch { return nil }
    return nil
}

@Suite struct SystemTypePlan {
    let catalog = AppCatalog(apps: [
        app("com.example.Browser", mime: ["x-scheme-handler/https", "x-scheme-handler/http"]),
        app("com.example.NoCode", mime: ["x-scheme-handler/https"], takesURIs: false),
        app("com.example.Docs"),
        app("com.example.Plain", takesURIs: false),
    ])

    func plan(_ type: String, _ p: ActivityProperties, publisher: String?, target: String? = nil,
              exists: Bool = true) throws -> ContinuationTarget {
        try ContinuationPlanner.plan(type: type, publisher: publisher, properties: p, targetAppID: target, catalog: catalog,
                                     hasHandler: { _ in true }, fileExists: { _ in exists })
    }

    @Test func browsingWebGoesToThePublishingBrowserElseTheDefault() throws {
        let url = "https://example.com/x"
        #expect(try plan(web, properties(url: url), publisher: "com.example.Browser")
                == .launchWithURI(id: "com.example.Browser", desktopFilePath: "/apps/com.example.Browser.desktop", uri: url))
        #expect(try plan(web, properties(url: url), publisher: "com.example.Docs") == .webpage(url: url),
                "an app that does not handle https is not a browser")
        #expect(try plan(web, properties(url: url), publisher: "com.example.NoCode") == .webpage(url: url),
                "an Exec without %u could not be given the URL")
        #expect(try plan(web, properties(url: url), publisher: nil) == .webpage(url: url))
        #expect(try plan(web, properties(url: url), publisher: "com.example.NotInstalled") == .webpage(url: url))
        #expect(kind { try plan(web, properties(), publisher: "com.example.Browser") } == .invalidArgument)
    }

    @Test func browsingWebOfALegacyDesktopIDGoesToThatBrowserWhenInstalled() throws {
        let url = "https://example.com/x"
        let catalog = AppCatalog(apps: [app("chromium", mime: ["x-scheme-handler/https"]), app("firefox-esr", mime: ["x-scheme-handler/https"])])
        func plan(publisher: String?, target: String? = nil) throws -> ContinuationTarget {
            try ContinuationPlanner.plan(type: web, publisher: publisher, properties: properties(url: url), targetAppID: target,
                                         catalog: catalog, hasHandler: { _ in false }, fileExists: { _ in true })
        }
        #expect(try plan(publisher: "chromium") == .launchWithURI(id: "chromium", desktopFilePath: "/apps/chromium.desktop", uri: url))
        #expect(try plan(publisher: "chromium", target: "firefox-esr")
                == .launchWithURI(id: "firefox-esr", desktopFilePath: "/apps/firefox-esr.desktop", uri: url))
        #expect(try plan(publisher: "epiphany") == .webpage(url: url), "a browser not installed here: the default browser")
        #expect(kind { try plan(publisher: "chromium", target: "epiphany") } == .unknownApplication)
    }

    @Test func openDocumentGoesToThePublisherTakingURIsElseTheTypesDefault() throws {
        let uri = "file:///home/u/a%20b.txt"
        let p = properties(uri: .string(uri), mime: "text/plain")
        #expect(try plan(doc, p, publisher: "com.example.Docs")
                == .launchWithURI(id: "com.example.Docs", desktopFilePath: "/apps/com.example.Docs.desktop", uri: uri))
        #expect(try plan(doc, p, publisher: "com.example.Plain") == .document(uri: uri, mimeType: "text/plain"))
        #expect(try plan(doc, properties(uri: .string(uri)), publisher: nil) == .document(uri: uri, mimeType: ""))
    }

    @Test func openDocumentErrors() throws {
        var checked: [String] = []
        let p = properties(uri: .string("file:///home/u/a%20b.txt"))
        #expect(throws: UserActivityError.self) {
            try ContinuationPlanner.plan(type: doc, publisher: nil, properties: p, targetAppID: nil, catalog: catalog,
                                         hasHandler: { _ in false }, fileExists: { checked.append($0); return false })
        }
        #expect(checked == ["/home/u/a b.txt"], "the decoded path is what is checked")
        #expect(kind { try plan(doc, p, publisher: nil, exists: false) } == .notFound)
        #expect(kind { try plan(doc, properties(uri: .string("sftp://h/x")), publisher: nil, exists: false) } == nil,
                "only file: URIs are checked here")
        #expect(kind { try plan(doc, properties(), publisher: nil) } == .invalidArgument)
        #expect(kind { try plan(doc, properties(uri: .int32(1)), publisher: nil) } == .invalidArgument)
        #expect(kind { try plan(doc, properties(uri: .string("no-scheme")), publisher: nil) } == .invalidArgument)
        #expect(kind { try plan(doc, p, publisher: nil, target: "com.example.Plain") } == .noHandler)
        #expect(kind { try plan(doc, p, publisher: nil, target: "com.example.Missing") } == .unknownApplication)
        #expect(try plan(doc, p, publisher: "com.example.Plain", target: "com.example.Docs")
                == .launchWithURI(id: "com.example.Docs", desktopFilePath: "/apps/com.example.Docs.desktop", uri: "file:///home/u/a%20b.txt"))
    }

    @Test func systemTypesNeedNoDeclarationButAppTypesStillDo() throws {
        let registry = ActivityRegistry(isDeclared: { _, _ in false })
        try registry.requireDeclared(app: "com.example.Plain", type: web)
        try registry.requireDeclared(app: "com.example.Plain", type: doc)
        #expect(kind { try registry.requireDeclared(app: "com.example.Plain", type: "com.example.Plain.view") } == .notDeclared)
        var patch = try ActivityPatch.parse([("title", .string("t"))], allowsAppIDClaim: false)
        #expect(kind { try registry.create(type: web, properties: patch, app: "com.example.Plain", connection: ":1.1", now: 0) } == .invalidArgument)
        patch = try ActivityPatch.parse([("webpage-url", .string("https://e.com/"))], allowsAppIDClaim: false)
        let (created, _) = try registry.create(type: web, properties: patch, app: "com.example.Plain", connection: ":1.1", now: 0)
        let clear = try ActivityPatch.parse([("webpage-url", .string(""))], allowsAppIDClaim: false)
        #expect(kind { try registry.update(created.id, with: clear, now: 0) } == .invalidArgument)
    }

    @Test func execFieldCodesAndFileURIs() {
        #expect(InstalledApp.execTakesURIs("foo %U"))
        #expect(InstalledApp.execTakesURIs("foo --x %f"))
        #expect(!InstalledApp.execTakesURIs("foo %i %c"))
        #expect(!InstalledApp.execTakesURIs("foo 100%%u"), "%% is a literal percent sign")
        #expect(SystemActivityType.localPath(ofFileURI: "file:///a%20b/c") == "/a b/c")
        #expect(SystemActivityType.localPath(ofFileURI: "file://localhost/x") == "/x")
        #expect(SystemActivityType.localPath(ofFileURI: "file://other/x") == nil)
        #expect(SystemActivityType.localPath(ofFileURI: "file:///x%00y") == nil)
        #expect(SystemActivityType.localPath(ofFileURI: "https://e.com/") == nil)
    }
}
