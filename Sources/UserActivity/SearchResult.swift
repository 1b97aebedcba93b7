// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues

/// One saved activity found by ``UserActivityClient/search(_:limit:appID:activityTypes:)``
/// or suggested by ``UserActivityClient/suggestions(limit:appID:)``.
///
/// ```swift
/// for result in try await client.search("quarterly rep") {
///     print(result.title, result.appID, result.savedID)
/// }
/// ```
public struct SearchResult: Sendable, Equatable, Identifiable {
    /// The service's ID for the saved copy: give it to
    /// ``UserActivityClient/continueSavedActivity(_:options:)``.
    public var savedID: String
    /// The app that saved it (desktop-file ID).
    public var appID: String
    public var activityType: String
    public var title: String
    /// The subtitle (``UserActivity/contentDescription``), empty when unset.
    public var contentDescription: String
    public var keywords: [String]
    /// The browser fallback, nil when unset.
    public var webpageURL: URL?
    /// Relevance: higher is better.
    public var score: Double
    /// When it was last used (became current or was donated).
    public var lastUsed: Date
    /// Suggestions only.
    public var suggestedInvocationPhrase: String?
    /// Suggestions only: how often it was used.
    public var useCount: UInt32?

    public var id: String { savedID }

    init(entries: [(String, TypedValue)]) {
        let values = Dictionary(entries, uniquingKeysWith: { first, _ in first })
        savedID = values["saved-id"]?.stringValue ?? ""
        appID = values["app-id"]?.stringValue ?? ""
        activityType = values["activity-type"]?.stringValue ?? ""
        title = values["title"]?.stringValue ?? ""
        contentDescription = values["content-description"]?.stringValue ?? ""
        keywords = values["keywords"]?.stringArrayValue ?? []
        webpageURL = values["webpage-url"]?.stringValue.flatMap { $0.isEmpty ? nil : URL(string: $0) }
        if case .double(let value)? = values["score"] { score = value } else { score = 0 }
        lastUsed = dateFromUnixMicroseconds(values["last-used"]?.int64Value ?? 0)
        suggestedInvocationPhrase = values["suggested-invocation-phrase"]?.stringValue
        useCount = values["use-count"]?.uint32Value
    }

    static func list(_ reply: [TypedValue]) -> [SearchResult] {
        guard case .array(_, let elements)? = reply.first else { return [] }
        return elements.compactMap { $0.stringVariantEntries.map(SearchResult.init(entries:)) }
    }
}
