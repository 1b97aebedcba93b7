// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity

/// What the fixture actions did, per test (each test uses its own app ID suffix… and its own recorder).
final class ActionLog: @unchecked Sendable {
    static let shared = Recorder<String>()
}

struct NoteRef: ActivityCodable, Equatable {
    var note: String
    var line: Int
}

struct OpenDocumentAction: ActivityAction {
    typealias Input = PlainRef
    static let eligibility: ActivityEligibility = [.handoff, .search, .prediction]

    static func describe(_ input: PlainRef, in activity: UserActivity) {
        activity.title = "Open \(input.path)"
        activity.persistentIdentifier = input.path
    }

    static func perform(_ input: PlainRef, context: ActionContext) async throws {
        let source = context.continuedActivity == nil ? "app" : "continuation"
        ActionLog.shared.append("open-document \(input.path) page \(input.page) via \(source) [\(context.app.appID)]")
    }
}

struct ShowPage: ActivityAction {
    struct Input: ActivityCodable, Equatable { var url: URL }

    static func describe(_ input: Input, in activity: UserActivity) {
        activity.title = "Page"
        activity.webpageURL = input.url
    }

    static func perform(_ input: Input, context: ActionContext) async throws {
        ActionLog.shared.append("show-page \(input.url.absoluteString) [\(context.app.appID)]")
    }
}

struct EditNote: ActivityAction {
    typealias Input = NoteRef
    static let name = "edit-note"
    static func perform(_ input: NoteRef, context: ActionContext) async throws {
        ActionLog.shared.append("edit-note \(input.note):\(input.line) [\(context.app.appID)]")
    }
}

@Suite("Declarative actions: derived types, publishing, routing, the startup check", .serialized)
struct DeclarativeTests {
    @Test("Activity types are <appID>.<kebab-case action name>")
    func derivedNames() throws {
        #expect(ActivityNames.kebabCase("OpenDocumentAction") == "open-document")
        #expect(ActivityNames.kebabCase("ShowPage") == "show-page")
        #expect(ActivityNames.kebabCase("ShowURLAction") == "show-url")
        #expect(ActivityNames.kebabCase("ExportPDFFile") == "export-pdf-file")
        #expect(ActivityNames.kebabCase("Share2Action") == "share2")
        #expect(ActivityNames.kebabCase("MyApp.Actions.Open_thing") == "open-thing")
        #expect(ActivityNames.kebabCase("Action") == "action")
        #expect(ActivityApp.activityType(of: OpenDocumentAction.self, appID: UA.notes) == UA.openDocument)
        #expect(ActivityApp.activityType(of: ShowPage.self, appID: UA.notes) == UA.showPage)
        #expect(ActivityApp.activityType(of: EditNote.self, appID: UA.notes) == UA.editNote)
        #expect(ActivityNames.isValidComponent("open-document"))
        #expect(!ActivityNames.isValidComponent("2nd"))
        #expect(!ActivityNames.isValidComponent("with space"))
    }

    @Test("perform() runs the action, then publishes its activity as current with the derived type and eligibility")
    func performPublishes() async throws {
        let h = try LibraryHarness()
        let client = try h.client(UA.notes)
        let app = try ActivityApp(appID: UA.notes, client: client, actions: [OpenDocumentAction.self, ShowPage.self, EditNote.self])
        #expect(app.activityTypes == [UA.openDocument, UA.showPage, UA.editNote])
        try app.checkDeclarations(environment: h.session.environment)

        let activity = try await app.perform(OpenDocumentAction.self, with: PlainRef(path: "/tmp/perform.odt", page: 2))
        #expect(ActionLog.shared.values.contains("open-document /tmp/perform.odt page 2 via app [\(UA.notes)]"))
        let path = try #require(activity.objectPath)
        #expect(try await h.currentActivity() == path)
        let properties = try await h.properties(path)
        #expect(properties["ActivityType"] == .string(UA.openDocument))
        #expect(properties["Title"] == .string("Open /tmp/perform.odt"))
        #expect(properties["EligibleForHandoff"] == .boolean(true))
        #expect(properties["EligibleForSearch"] == .boolean(true))
        #expect(properties["EligibleForPrediction"] == .boolean(true))
        #expect(properties["RequiredUserInfoKeys"] == .stringArray(["page", "path"]))
        #expect(entries(properties["UserInfo"]) == ["path": .string("/tmp/perform.odt"), "page": .int64(2)])
        #expect(try await client.search("perform").first?.activityType == UA.openDocument)

        // The next action's activity replaces it (the earlier one is invalidated).
        let page = try await app.perform(ShowPage.self, with: .init(url: URL(string: "https://example.com/p")!))
        #expect(try await h.currentActivity() == page.objectPath)
        #expect(await h.rawErrorName(path, "org.freedesktop.DBus.Properties", "Get",
                                     [.string(UA.activityInterface), .string("Title")]) == "org.freedesktop.DBus.Error.UnknownObject")
        #expect(app.currentActivity === page)
    }

    @Test("A continuation of an action's type is routed to that action with its input rebuilt; a missing key is a clear error")
    func routing() async throws {
        let h = try LibraryHarness()
        let app = try ActivityApp(appID: UA.notes, client: try h.client(UA.notes),
                                  actions: [OpenDocumentAction.self, EditNote.self])
        let caller = try h.client(UA.reader)
        let fallback = Recorder<String>()
        app.fallbackHandler = ContinuationClosures { activity in
            fallback.append(activity.activityType)
            return true
        }
        let willContinue = Recorder<String>()
        app.onWillContinue = { willContinue.append($0) }

        do {
            try await app.start(environment: h.session.environment)

            let link = UserActivity(activityType: UA.editNote, client: caller)
            try link.setUserInfo(from: NoteRef(note: "n-77", line: 5))
            #expect(try await caller.continueActivity(link, options: .init(targetAppID: UA.notes, timeout: 60)) == UA.notes)
            #expect(ActionLog.shared.values.contains("edit-note n-77:5 [\(UA.notes)]"), "\(ActionLog.shared.values)")
            #expect(willContinue.values.contains(UA.editNote))
            // Continuing performed the action, which published its activity.
            let current = try #require(app.currentActivity)
            #expect(current.activityType == UA.editNote)
            #expect(try await h.currentActivity() == current.objectPath)

            // Input missing a required key: the caller learns which one.
            let broken = UserActivity(activityType: UA.openDocument, client: caller)
            broken.userInfo = ["path": "/tmp/x.odt"]
            do {
                try await caller.continueActivity(broken, options: .init(targetAppID: UA.notes, timeout: 60))
                Issue.record("a continuation without the 'page' key succeeded")
            } catch let error as UserActivityError {
                #expect(error.code == .continuationFailed)
                #expect(error.message.contains("the required key 'page' is missing"), "\(error.message)")
            }
            #expect(!ActionLog.shared.values.contains { $0.contains("/tmp/x.odt") })

            // A declared type no action owns goes to the fallback handler.
            let page = UserActivity(activityType: UA.showPage, client: caller)
            page.webpageURL = URL(string: "https://example.com/fallback")
            #expect(try await caller.continueActivity(page, options: .init(targetAppID: UA.notes, timeout: 60)) == UA.notes)
            #expect(fallback.values == [UA.showPage])
        }
    }

    @Test("Startup check: an undeclared type fails loudly with the exact X-UserActivityTypes line to add")
    func missingDeclaration() async throws {
        let h = try LibraryHarness()
        let partial = "com.example.Partial"
        let app = try ActivityApp(appID: partial, client: try h.client(partial), actions: [OpenDocumentAction.self, ShowPage.self])
        let desktopFile = "\(h.session.applicationsDirectory())/\(partial).desktop"
        do {
            try await app.start(environment: h.session.environment)
            Issue.record("start() accepted an undeclared type")
        } catch let error as DeclarationError {
            #expect(error.missingTypes == ["com.example.Partial.show-page"])
            #expect(error.desktopFile == desktopFile)
            #expect(error.lineToAdd == "X-UserActivityTypes=com.example.Partial.open-document;com.example.Partial.show-page;")
            let text = error.description
            #expect(text.contains("com.example.Partial would publish activity types its desktop entry does not declare:\n  com.example.Partial.show-page\n"), "\(text)")
            #expect(text.contains("Fix: in \(desktopFile), under [Desktop Entry], set:\n\n    X-UserActivityTypes=com.example.Partial.open-document;com.example.Partial.show-page;\n"), "\(text)")
            #expect(text.contains("org.example.UserActivity.Error.NotDeclared"))
        }

        // With the line in place, the check passes.
        try h.session.writeDesktopEntry(appID: partial, types: ["com.example.Partial.open-document", "com.example.Partial.show-page"])
        try app.checkDeclarations(environment: h.session.environment)
    }

    @Test("Startup check: an app with no desktop entry is told where to install one, and with what")
    func missingDesktopEntry() async throws {
        let h = try LibraryHarness()
        let client = try h.client("com.example.Nowhere")
        client.onError = { _, _ in }   // RegisterApplication fails too: not installed
        let app = try ActivityApp(appID: "com.example.Nowhere", client: client, actions: [OpenDocumentAction.self])
        await #expect { try await app.start(environment: h.session.environment) } throws: { error in
            guard let error = error as? DeclarationError else { return false }
            let text = error.description
            return error.desktopFile == nil
                && text.contains("no desktop entry com.example.Nowhere.desktop is installed")
                && text.contains("  \(h.session.dataHome)/applications\n  \(h.session.sharedDataDir)/applications\n")
                && text.contains("    [Desktop Entry]\n    Type=Application\n")
                && text.contains("    X-UserActivityTypes=com.example.Nowhere.open-document;\n")
        }
    }

    @Test("Action names that cannot end a type, and two actions with one name, are refused up front")
    func invalidActions() async throws {
        let h = try LibraryHarness()
        let client = try h.client(UA.notes)
        struct Second: ActivityAction {
            typealias Input = PlainRef
            static let name = "2nd"
            static func perform(_ input: PlainRef, context: ActionContext) async throws {}
        }
        struct Duplicate: ActivityAction {
            typealias Input = PlainRef
            static let name = "open-document"
            static func perform(_ input: PlainRef, context: ActionContext) async throws {}
        }
        #expect(throws: UserActivityError.self) { try ActivityApp(appID: UA.notes, client: client, actions: [Second.self]) }
        #expect(throws: UserActivityError.self) {
            try ActivityApp(appID: UA.notes, client: client, actions: [OpenDocumentAction.self, Duplicate.self])
        }
        #expect(throws: UserActivityError.self) { try ActivityApp(appID: "not an id", client: client, actions: []) }
    }
}
