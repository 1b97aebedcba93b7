// SPDX-License-Identifier: Apache-2.0
import Foundation
import UserActivity

// The example's two actions. With the app ID com.example.UserActivityExample
// their activity types are com.example.UserActivityExample.open-document and
// com.example.UserActivityExample.show-page, which the desktop entry
// desktop/share/applications/com.example.UserActivityExample.desktop declares.

/// What `OpenDocument` works on; it travels in the activity's user info.
struct DocumentRef: ActivityCodable, Equatable {
    var path: String
    var page: Int
    /// Optional: not required to rebuild the value.
    var zoom: Double?

    static let requiredUserInfoKeys: Set<String>? = ["path", "page"]
}

/// Opens a document: searchable, suggested, and continuable elsewhere.
struct OpenDocument: ActivityAction {
    typealias Input = DocumentRef

    static let eligibility: ActivityEligibility = [.handoff, .search, .prediction]

    static func describe(_ input: DocumentRef, in activity: UserActivity) {
        let name = URL(fileURLWithPath: input.path).lastPathComponent
        activity.title = "Open \(name)"
        activity.contentDescription = "Page \(input.page) of \(input.path)"
        activity.keywords = ["document", name]
        activity.persistentIdentifier = input.path
        activity.suggestedInvocationPhrase = "Open \(name)"
    }

    static func perform(_ input: DocumentRef, context: ActionContext) async throws {
        Output.line("▶ open-document: \(input.path), page \(input.page)\(input.zoom.map { ", zoom \($0)" } ?? "") (\(context.sourceDescription))")
    }
}

/// What `ShowPage` works on.
struct PageRef: ActivityCodable, Equatable {
    var url: URL
    var title: String
}

/// Shows a web page: searchable, with the page as the browser fallback.
struct ShowPage: ActivityAction {
    typealias Input = PageRef

    static let eligibility: ActivityEligibility = [.handoff, .search]

    static func describe(_ input: PageRef, in activity: UserActivity) {
        activity.title = input.title
        activity.webpageURL = input.url
        activity.keywords = ["page"]
        activity.persistentIdentifier = input.url.absoluteString
    }

    static func perform(_ input: PageRef, context: ActionContext) async throws {
        Output.line("▶ show-page: \(input.title) <\(input.url.absoluteString)> (\(context.sourceDescription))")
    }
}

extension ActionContext {
    var sourceDescription: String {
        guard let activity = continuedActivity else { return "run by the app" }
        return "continued, published by \(activity.publisherAppID ?? "an unknown app")"
    }
}

/// Line-buffered output, so that a pipe (a test, `| tee`) sees every line at once.
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
