// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Where an activity may show up (the eligibility flags of an activity).
public struct ActivityEligibility: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Can be continued elsewhere (Handoff).
    public static let handoff = ActivityEligibility(rawValue: 1 << 0)
    /// Saved for desktop search when it becomes current.
    public static let search = ActivityEligibility(rawValue: 1 << 1)
    /// Saved for suggestions when it becomes current.
    public static let prediction = ActivityEligibility(rawValue: 1 << 2)
    /// Stored and reported; no public index exists.
    public static let publicIndexing = ActivityEligibility(rawValue: 1 << 3)

    /// Everywhere.
    public static let all: ActivityEligibility = [.handoff, .search, .prediction, .publicIndexing]
}

/// One thing the user can do in your app, declared once (Flint's `Action`):
/// the library derives its activity type, publishes an activity when it is
/// performed, and routes continuations of that type back to it.
///
/// ```swift
/// struct OpenDocument: ActivityAction {
///     struct Input: ActivityCodable { var path: String; var page: Int }
///
///     static let eligibility: ActivityEligibility = [.handoff, .search, .prediction]
///
///     static func describe(_ input: Input, in activity: UserActivity) {
///         activity.title = "Open \(URL(fileURLWithPath: input.path).lastPathComponent)"
///         activity.keywords = ["document"]
///         activity.persistentIdentifier = input.path
///     }
///
///     static func perform(_ input: Input, context: ActionContext) async throws {
///         try await Editor.shared.open(input.path, page: input.page)
///     }
/// }
/// ```
///
/// With the app ID `com.example.Editor` its activity type is
/// `com.example.Editor.open-document` (``name``, derived from the type name
/// in kebab case without an `Action` suffix).
public protocol ActivityAction: Sendable {
    /// What the action works on; it travels in the activity's user info.
    associatedtype Input: ActivityCodable

    /// The last component of the activity type; default: the type's name in
    /// kebab case without an `Action` suffix (`OpenDocumentAction` → `open-document`).
    static var name: String { get }

    /// Where its activities may show up; default `[.handoff]`.
    static var eligibility: ActivityEligibility { get }

    /// Fills in the activity published for `input`: title, keywords,
    /// persistent identifier, webpage URL… (user info is already set). Optional.
    static func describe(_ input: Input, in activity: UserActivity)

    /// Does the action, when the app runs it or a continuation asks for it.
    static func perform(_ input: Input, context: ActionContext) async throws
}

extension ActivityAction {
    public static var name: String { ActivityNames.kebabCase(String(describing: Self.self)) }
    public static var eligibility: ActivityEligibility { [.handoff] }
    public static func describe(_ input: Input, in activity: UserActivity) {}
}

/// Why and where an action runs.
public struct ActionContext: Sendable {
    /// Why the action runs.
    public enum Source: Sendable {
        /// The app called ``ActivityApp/perform(_:with:)``.
        case app
        /// A continuation: the activity the service delivered.
        case continuation(UserActivity)
    }

    /// Why the action runs.
    public var source: Source
    /// The app the action belongs to.
    public var app: ActivityApp

    /// The delivered activity, for a continuation.
    public var continuedActivity: UserActivity? {
        if case .continuation(let activity) = source { return activity }
        return nil
    }
}

enum ActivityNames {
    /// `OpenDocumentAction` → `open-document`, `ShowURLAction` → `show-url`,
    /// `Share2Action` → `share2`.
    static func kebabCase(_ typeName: String) -> String {
        var name = typeName
        // Generic or nested names: keep the innermost identifier.
        if let angle = name.firstIndex(of: "<") { name = String(name[..<angle]) }
        if let dot = name.lastIndex(of: ".") { name = String(name[name.index(after: dot)...]) }
        if name.hasSuffix("Action"), name.count > "Action".count { name.removeLast("Action".count) }
        let characters = Array(name)
        var result = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                    result.append("-")
                }
            }
            result.append(character == "_" ? "-" : Character(character.lowercased()))
        }
        return result
    }

    /// Whether `name` can be the last component of an activity type.
    static func isValidComponent(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_") }
    }
}
