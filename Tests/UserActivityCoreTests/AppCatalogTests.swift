// SPDX-License-Identifier: Apache-2.0
import Foundation
import GLibSupport
import Testing
import UserActivityCore

/// A scratch directory tree for one test, removed when the test lets go of it.
final class FixtureTree {
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.path + "/uac-fixture-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func path(_ relative: String) -> String { root + "/" + relative }

    @discardableResult
    func write(_ relative: String, _ contents: String) throws -> String {
        let full = path(relative)
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try contents.write(toFile: full, atomically: true, encoding: .utf8)
        return full
    }

    func makeDirectory(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: path(relative), withIntermediateDirectories: true)
    }
}

/// A desktop entry with `lines` added to its `[Desktop Entry]` group.
func desktopEntry(_ lines: String..., type: String = "Application") -> String {
    (["[Desktop Entry]", "Type=\(type)", "Exec=true"] + lines).joined(separator: "\n") + "\n"
}

@Suite struct AppCatalogTests {
    // MARK: Directories

    @Test func applicationDirectoriesDefaults() {
        let dirs = AppCatalog.applicationDirectories(environment: ["HOME": "/home/u"])
        #expect(dirs == ["/home/u/.local/share/applications", "/usr/local/share/applications", "/usr/share/applications"])
    }

    @Test func applicationDirectoriesFromEnvironment() {
        let dirs = AppCatalog.applicationDirectories(environment: [
            "HOME": "/home/u", "XDG_DATA_HOME": "/data/home/",
            "XDG_DATA_DIRS": "/a:relative/ignored::/b/:/a",
        ])
        #expect(dirs == ["/data/home/applications", "/a/applications", "/b/applications"])
    }

    @Test func emptyDataDirsFallsBackToDefault() {
        let dirs = AppCatalog.applicationDirectories(environment: ["HOME": "/h", "XDG_DATA_DIRS": "", "XDG_DATA_HOME": ""])
        #expect(dirs == ["/h/.local/share/applications", "/usr/local/share/applications", "/usr/share/applications"])
    }

    // MARK: Precedence

    @Test func dataHomeWinsOverDataDirs() throws {
        let tree = try FixtureTree()
        try tree.write("home/applications/com.example.Editor.desktop", desktopEntry("Name=Mine"))
        try tree.write("sys/applications/com.example.Editor.desktop", desktopEntry("Name=System"))
        let dirs = AppCatalog.applicationDirectories(environment: [
            "XDG_DATA_HOME": tree.path("home"), "XDG_DATA_DIRS": tree.path("sys"),
        ])
        let catalog = AppCatalog.load(applicationDirectories: dirs, loadKeyFile: glibLoader)
        #expect(catalog.app("com.example.Editor")?.name == "Mine")
        #expect(catalog.app("com.example.Editor")?.desktopFilePath == tree.path("home/applications/com.example.Editor.desktop"))
        #expect(catalog.apps.count == 1)
    }

    @Test func firstDataDirWinsOverLater() throws {
        let tree = try FixtureTree()
        try tree.write("one/applications/org.example.A.desktop", desktopEntry("Name=One"))
        try tree.write("two/applications/org.example.A.desktop", desktopEntry("Name=Two"))
        try tree.write("two/applications/org.example.B.desktop", desktopEntry("Name=B"))
        let catalog = AppCatalog.load(
            applicationDirectories: [tree.path("one/applications"), tree.path("two/applications")],
            loadKeyFile: glibLoader)
        #expect(catalog.app("org.example.A")?.name == "One")
        #expect(catalog.app("org.example.B")?.name == "B")
        #expect(catalog.apps.map(\.id) == ["org.example.A", "org.example.B"])
    }

    @Test func hiddenMasksLowerPrecedence() throws {
        let tree = try FixtureTree()
        try tree.write("home/applications/com.example.Editor.desktop", desktopEntry("Hidden=true"))
        try tree.write("sys/applications/com.example.Editor.desktop",
                       desktopEntry("X-UserActivityTypes=com.example.Editor.edit;"))
        let catalog = AppCatalog.load(
            applicationDirectories: [tree.path("home/applications"), tree.path("sys/applications")],
            loadKeyFile: glibLoader)
        #expect(catalog.app("com.example.Editor") == nil)
        #expect(catalog.apps(declaring: "com.example.Editor.edit").isEmpty)
    }

    @Test func subdirectoriesMakeDashedIDs() throws {
        let tree = try FixtureTree()
        try tree.write("apps/vendor/foo.desktop", desktopEntry("Name=Foo"))
        try tree.write("apps/a/b/c.desktop", desktopEntry())
        try tree.write("apps/notes.txt", "not a desktop file")
        let catalog = AppCatalog.load(applicationDirectories: [tree.path("apps")], loadKeyFile: glibLoader)
        #expect(catalog.app("vendor-foo")?.name == "Foo")
        #expect(catalog.app("a-b-c") != nil)
        #expect(catalog.apps.map(\.id) == ["a-b-c", "vendor-foo"])
    }

    @Test func onlyApplicationEntriesCount() throws {
        let tree = try FixtureTree()
        try tree.write("apps/org.example.Link.desktop", desktopEntry(type: "Link"))
        try tree.write("apps/org.example.NoGroup.desktop", "[Something Else]\nType=Application\n")
        try tree.write("apps/org.example.Garbage.desktop", "this is not a key file\n")
        try tree.write("apps/org.example.Good.desktop", desktopEntry())
        let catalog = AppCatalog.load(applicationDirectories: [tree.path("apps"), tree.path("missing")],
                                      loadKeyFile: glibLoader)
        #expect(catalog.apps.map(\.id) == ["org.example.Good"])
    }

    // MARK: Keys

    @Test func keysAreRead() throws {
        let tree = try FixtureTree()
        try tree.write("apps/org.example.App.desktop", desktopEntry(
            "Name=Example", "Icon=org.example.App", "DBusActivatable=true", "X-SnapInstanceName=example"))
        try tree.write("apps/org.example.Plain.desktop", desktopEntry("DBusActivatable=yes please"))
        let catalog = AppCatalog.load(applicationDirectories: [tree.path("apps")], loadKeyFile: glibLoader)
        let app = try #require(catalog.app("org.example.App"))
        #expect(app.name == "Example")
        #expect(app.icon == "org.example.App")
        #expect(app.dbusActivatable)
        #expect(app.snapInstanceName == "example")
        #expect(catalog.app(withSnapInstanceName: "example")?.id == "org.example.App")
        #expect(catalog.app(withSnapInstanceName: "other") == nil)
        #expect(catalog.app("org.example.Plain")?.dbusActivatable == false)
    }

    @Test func escapedSemicolonsStayInOneElement() throws {
        let tree = try FixtureTree()
        let path = try tree.write("apps/com.example.Editor.desktop", desktopEntry(
            #"X-UserActivityTypes=com.example.Editor.a\;b;com.example.Editor.edit;"#))
        let file = try #require(GLibKeyFile.load(path: path))
        #expect(file.stringList(group: "Desktop Entry", key: "X-UserActivityTypes")
            == ["com.example.Editor.a;b", "com.example.Editor.edit"])
        #expect(file.stringList(group: "Desktop Entry", key: "Missing") == nil)
        #expect(file.boolean(group: "Desktop Entry", key: "Missing") == nil)
        #expect(file.string(group: "Nope", key: "Type") == nil)

        let catalog = AppCatalog.load(applicationDirectories: [tree.path("apps")], loadKeyFile: glibLoader)
        #expect(catalog.app("com.example.Editor")?.declaredTypes == ["com.example.Editor.edit"])
        #expect(catalog.warnings.count == 1)
        #expect(catalog.warnings.first?.contains("com.example.Editor.a;b") == true)
    }

    @Test func missingFileDoesNotLoad() {
        #expect(GLibKeyFile.load(path: "/nonexistent/file.desktop") == nil)
    }

    // MARK: Team rule

    private func catalog(_ entries: [String: String]) throws -> (AppCatalog, FixtureTree) {
        let tree = try FixtureTree()
        for (id, entry) in entries { try tree.write("apps/\(id).desktop", entry) }
        return (AppCatalog.load(applicationDirectories: [tree.path("apps")], loadKeyFile: glibLoader), tree)
    }

    @Test func implicitTeamIsParent() throws {
        let (catalog, _) = try catalog(["com.example.Editor": desktopEntry(
            "X-UserActivityTypes=com.example.Editor.edit;com.example.shared.open;com.example.Editor.edit;")])
        let app = try #require(catalog.app("com.example.Editor"))
        #expect(app.team == "com.example")
        #expect(app.declaredTypes == ["com.example.Editor.edit", "com.example.shared.open"])
        #expect(catalog.warnings.isEmpty)
    }

    @Test func explicitAncestorTeamAllowed() throws {
        let (catalog, _) = try catalog(["com.example.suite.Editor": desktopEntry(
            "X-UserActivityTeam=com.example", "X-UserActivityTypes=com.example.open;com.example.suite.Editor.edit")])
        let app = try #require(catalog.app("com.example.suite.Editor"))
        #expect(app.team == "com.example")
        #expect(app.declaredTypes == ["com.example.open", "com.example.suite.Editor.edit"])
        #expect(catalog.warnings.isEmpty)
    }

    @Test func explicitTeamEqualToAppIDAllowed() throws {
        let (catalog, _) = try catalog(["com.example.Editor": desktopEntry(
            "X-UserActivityTeam=com.example.Editor",
            "X-UserActivityTypes=com.example.Editor.edit;com.example.Viewer.view")])
        let app = try #require(catalog.app("com.example.Editor"))
        #expect(app.team == "com.example.Editor")
        #expect(app.declaredTypes == ["com.example.Editor.edit"])
        #expect(catalog.warnings.count == 1)
        #expect(catalog.warnings.first?.contains("com.example.Viewer.view") == true)
    }

    @Test(arguments: ["com", "org.evil", "com.example.Editor.Sub", "com.exam", "not a name"])
    func disallowedExplicitTeamIgnoresEverything(team: String) throws {
        let (catalog, _) = try catalog(["com.example.Editor": desktopEntry(
            "X-UserActivityTeam=\(team)", "X-UserActivityTypes=com.example.Editor.edit;\(team).x;")])
        let app = try #require(catalog.app("com.example.Editor"), "the app stays installed")
        #expect(app.declaredTypes.isEmpty)
        #expect(catalog.apps(declaring: "com.example.Editor.edit").isEmpty)
        #expect(catalog.warnings.count == 1)
        let warning = try #require(catalog.warnings.first)
        #expect(warning.contains("com.example.Editor") && warning.contains("X-UserActivityTeam"))
    }

    @Test func typeOutsideTeamIgnoredWithWarning() throws {
        let (catalog, _) = try catalog(["com.example.Editor": desktopEntry(
            "X-UserActivityTypes=com.example.Editor.edit;org.other.App.steal;bad..type;")])
        #expect(catalog.app("com.example.Editor")?.declaredTypes == ["com.example.Editor.edit"])
        #expect(catalog.warnings.count == 2)
        #expect(catalog.warnings.contains { $0.contains("com.example.Editor") && $0.contains("org.other.App.steal") && $0.contains("team") })
        #expect(catalog.warnings.contains { $0.contains("bad..type") && $0.contains("reverse-DNS") })
    }

    @Test func legacyDesktopIDIsInstalledAsItsOwnTeamAndDeclaresNothing() throws {
        let (catalog, _) = try catalog(["firefox-esr": desktopEntry(
            "Name=Firefox ESR", "MimeType=text/html;x-scheme-handler/https;", "X-UserActivityTypes=firefox-esr.page;")])
        let app = try #require(catalog.app("firefox-esr"))
        #expect(app.team == "firefox-esr")
        #expect(app.handlesScheme("https"))
        #expect(app.declaredTypes.isEmpty, "activity types stay reverse-DNS, under a reverse-DNS team")
        #expect(catalog.warnings.contains { $0.contains("firefox-esr") && $0.contains("not a reverse-DNS name") })
    }

    @Test func liteEditionIsItsOwnTeam() throws {
        let (catalog, _) = try catalog([
            "com.example.Editor.Lite": desktopEntry("X-UserActivityTypes=com.example.Editor.view;com.example.open"),
            "com.example.Editor": desktopEntry("X-UserActivityTypes=com.example.Editor.view"),
        ])
        let lite = try #require(catalog.app("com.example.Editor.Lite"))
        #expect(lite.team == "com.example.Editor")
        #expect(lite.declaredTypes == ["com.example.Editor.view"])
        #expect(catalog.app("com.example.Editor")?.team == "com.example")
        #expect(catalog.apps(declaring: "com.example.Editor.view").map(\.id) == ["com.example.Editor", "com.example.Editor.Lite"])
        #expect(catalog.warnings.count == 1)
    }

    @Test func twoComponentAppIDIsItsOwnTeam() throws {
        let (catalog, _) = try catalog(["org.foo": desktopEntry("X-UserActivityTypes=org.foo.open;org.gnome.Foo.open")])
        let app = try #require(catalog.app("org.foo"))
        #expect(app.team == "org.foo")
        #expect(app.declaredTypes == ["org.foo.open"])
    }

    @Test func nonReverseDNSAppIDCataloguedButDeclaresNothing() throws {
        let (catalog, _) = try catalog(["firefox_firefox": desktopEntry(
            "X-SnapInstanceName=firefox", "X-UserActivityTypes=firefox_firefox.open;")])
        let app = try #require(catalog.app("firefox_firefox"))
        #expect(app.declaredTypes.isEmpty)
        #expect(catalog.app(withSnapInstanceName: "firefox")?.id == "firefox_firefox")
        #expect(catalog.warnings.count == 1)
        #expect(catalog.warnings.first?.contains("firefox_firefox") == true)
    }

    @Test func appsDeclaringAreSortedByID() throws {
        let (catalog, _) = try catalog([
            "org.example.Zed": desktopEntry("X-UserActivityTeam=org.example", "X-UserActivityTypes=org.example.open"),
            "org.example.Alpha": desktopEntry("X-UserActivityTypes=org.example.open"),
            "org.example.Mid": desktopEntry("X-UserActivityTypes=org.example.open"),
        ])
        #expect(catalog.apps(declaring: "org.example.open").map(\.id) == ["org.example.Alpha", "org.example.Mid", "org.example.Zed"])
        #expect(catalog.apps(declaring: "org.example.other").isEmpty)
    }
}
