// SPDX-License-Identifier: Apache-2.0
import Testing
import TypedValues
@testable import UserActivityCore

@Suite struct RecentFilesRules {
    let catalog = AppCatalog(apps: [
        InstalledApp(id: "org.gnome.TextEditor", desktopFilePath: "/a/org.gnome.TextEditor.desktop", name: "Text Editor",
                     team: "org.gnome", execProgram: "gnome-text-editor"),
        InstalledApp(id: "org.gnome.gedit", desktopFilePath: "/a/org.gnome.gedit.desktop", name: "gedit",
                     team: "org.gnome", execProgram: "gedit"),
        InstalledApp(id: "org.kde.kate", desktopFilePath: "/a/org.kde.kate.desktop", name: "Kate", team: "org.kde", execProgram: "kate"),
    ])

    @Test func matchesByIDThenExecThenName() {
        let matcher = RecentAppMatcher(catalog: catalog)
        #expect(matcher.match(name: "org.gnome.TextEditor", exec: "'whatever %u'") == "org.gnome.TextEditor")
        #expect(matcher.match(name: "Org.Gnome.TextEditor.desktop", exec: "") == "org.gnome.TextEditor")
        #expect(matcher.match(name: "Some Name", exec: "'/usr/bin/gedit %u'") == "org.gnome.gedit", "by the exec's program")
        #expect(matcher.match(name: "kate", exec: "") == "org.kde.kate", "by the ID's last element")
        #expect(matcher.match(name: "Text Editor", exec: "") == "org.gnome.TextEditor", "by Name=")
        #expect(matcher.match(name: "Unknown", exec: "'unknown %u'") == nil)
        #expect(InstalledApp.execProgram("env FOO=1 /usr/bin/kate -b %U") == "kate")
        #expect(InstalledApp.execProgram("/usr/bin/flatpak run --branch=stable org.gnome.gedit @@u %U @@") == "org.gnome.gedit")
        #expect(InstalledApp.execProgram("\"/opt/My App/app\" %f") == "app")
    }

    @Test func skipsPrivateHiddenAndTmp() {
        #expect(RecentFiles.skipReason(RecentFileEntry(uri: "file:///home/u/a.txt", isPrivate: true)) == "private")
        #expect(RecentFiles.skipReason(RecentFileEntry(uri: "file:///home/u/.config/a.txt")) == "hidden")
        #expect(RecentFiles.skipReason(RecentFileEntry(uri: "file:///home/u/.a.txt")) == "hidden")
        #expect(RecentFiles.skipReason(RecentFileEntry(uri: "file:///tmp/a.txt")) == "temporary")
        #expect(RecentFiles.skipReason(RecentFileEntry(uri: "file:///tmpfiles/a.txt")) == nil)
        #expect(RecentFiles.skipReason(RecentFileEntry(uri: "file:///home/u/a.txt")) == nil)
        #expect(RecentFiles.skipReason(RecentFileEntry(uri: "sftp://host/home/u/a.txt")) == nil)
    }

    @Test func documentsTakeTheLatestRecorderAndCapByAge() throws {
        let day: Int64 = 86_400_000_000
        let now = 100 * day
        let entries = [
            RecentFileEntry(uri: "file:///home/u/Docs/plan%20b.txt", mimeType: "text/plain", modified: now - 2 * day, applications: [
                .init(name: "gedit", exec: "'gedit %u'", count: 2, stamp: now - 5 * day),
                .init(name: "kate", exec: "'kate %u'", count: 7, stamp: now - day),
            ]),
            RecentFileEntry(uri: "file:///home/u/old.txt", title: "Old", modified: now - 40 * day,
                            applications: [.init(name: "x", exec: "", count: 1, stamp: now - 40 * day)]),
        ]
        let matcher = RecentAppMatcher(catalog: catalog)
        let all = RecentFiles.documents(entries, matcher: matcher, home: "/home/u", now: now, maxAgeDays: -1)
        #expect(all.count == 2)
        #expect(all[0] == RecentDocument(uri: "file:///home/u/Docs/plan%20b.txt", appID: "org.kde.kate", title: "plan b.txt",
                                         folder: "~/Docs", mimeType: "text/plain", lastUsed: now - day, useCount: 7,
                                         recordedAt: now - day))
        #expect(all[1].appID == RecentFiles.unmatchedAppID)
        #expect(all[1].folder == "~")
        #expect(RecentFiles.documents(entries, matcher: matcher, home: "/home/u", now: now, maxAgeDays: 30).map(\.title) == ["plan b.txt"])
        #expect(RecentFiles.documents(entries, matcher: matcher, home: "/home/u", now: now, maxAgeDays: 0).isEmpty)
        let properties = RecentFiles.properties(of: all[0], limits: .standard)
        #expect(properties.persistentIdentifier == all[0].uri)
        #expect(properties.eligibleForSearch && properties.eligibleForPrediction)
        #expect(try SystemActivityType.document(in: properties) == .init(uri: all[0].uri, mimeType: "text/plain"))
    }
}

@Suite struct RecentFilesLimits {
    @Test func overlongAndEmptyURIsAreSkipped() {
        let long = "file:///home/u/" + String(repeating: "a", count: RecentFiles.maximumURIBytes)
        #expect(RecentFiles.skipReason(RecentFileEntry(uri: long)) != nil)
        #expect(RecentFiles.skipReason(RecentFileEntry(uri: "")) != nil)
    }
}
