// SPDX-License-Identifier: Apache-2.0

/// One datum of an activity, with its `a{sv}` key, its property name and its
/// value type: the spec's "Activity properties" table as data.
public enum ActivityField: String, CaseIterable, Sendable {
    case activityType, appID, title, userInfo, requiredUserInfoKeys, keywords
    case contentDescription, contentAttributes, webpageURL, referrerURL
    case targetContentIdentifier, persistentIdentifier, expirationDate
    case eligibleForHandoff, eligibleForSearch, eligibleForPublicIndexing, eligibleForPrediction
    case suggestedInvocationPhrase, needsSave, supportsContinuationStreams, current

    /// The kebab-case key in an `a{sv}` argument (nil: not settable by key).
    public var key: String? {
        switch self {
        case .activityType: return "activity-type"
        case .appID: return "app-id"
        case .title: return "title"
        case .userInfo: return "user-info"
        case .requiredUserInfoKeys: return "required-user-info-keys"
        case .keywords: return "keywords"
        case .contentDescription: return "content-description"
        case .contentAttributes: return "content-attributes"
        case .webpageURL: return "webpage-url"
        case .referrerURL: return "referrer-url"
        case .targetContentIdentifier: return "target-content-identifier"
        case .persistentIdentifier: return "persistent-identifier"
        case .expirationDate: return "expiration-date"
        case .eligibleForHandoff: return "eligible-for-handoff"
        case .eligibleForSearch: return "eligible-for-search"
        case .eligibleForPublicIndexing: return "eligible-for-public-indexing"
        case .eligibleForPrediction: return "eligible-for-prediction"
        case .suggestedInvocationPhrase: return "suggested-invocation-phrase"
        case .needsSave: return "needs-save"
        case .supportsContinuationStreams: return "supports-continuation-streams"
        case .current: return nil
        }
    }

    /// The CamelCase property name on an Activity object.
    public var propertyName: String {
        switch self {
        case .activityType: return "ActivityType"
        case .appID: return "AppId"
        case .title: return "Title"
        case .userInfo: return "UserInfo"
        case .requiredUserInfoKeys: return "RequiredUserInfoKeys"
        case .keywords: return "Keywords"
        case .contentDescription: return "ContentDescription"
        case .contentAttributes: return "ContentAttributes"
        case .webpageURL: return "WebpageURL"
        case .referrerURL: return "ReferrerURL"
        case .targetContentIdentifier: return "TargetContentIdentifier"
        case .persistentIdentifier: return "PersistentIdentifier"
        case .expirationDate: return "ExpirationDate"
        case .eligibleForHandoff: return "EligibleForHandoff"
        case .eligibleForSearch: return "EligibleForSearch"
        case .eligibleForPublicIndexing: return "EligibleForPublicIndexing"
        case .eligibleForPrediction: return "EligibleForPrediction"
        case .suggestedInvocationPhrase: return "SuggestedInvocationPhrase"
        case .needsSave: return "NeedsSave"
        case .supportsContinuationStreams: return "SupportsContinuationStreams"
        case .current: return "Current"
        }
    }

    /// The value's type signature.
    public var typeSignature: String {
        switch self {
        case .userInfo, .contentAttributes: return "a{sv}"
        case .requiredUserInfoKeys, .keywords: return "as"
        case .expirationDate: return "x"
        case .eligibleForHandoff, .eligibleForSearch, .eligibleForPublicIndexing, .eligibleForPrediction,
             .needsSave, .supportsContinuationStreams, .current:
            return "b"
        default: return "s"
        }
    }

    /// Whether the property can be changed after creation.
    public var isWritable: Bool {
        switch self {
        case .activityType, .appID, .current: return false
        default: return true
        }
    }

    private static let byKey: [String: ActivityField] = Dictionary(
        uniqueKeysWithValues: allCases.compactMap { field in field.key.map { ($0, field) } })
    private static let byPropertyName: [String: ActivityField] = Dictionary(
        uniqueKeysWithValues: allCases.map { ($0.propertyName, $0) })

    public init?(key: String) {
        guard let field = Self.byKey[key] else { return nil }
        self = field
    }

    public init?(propertyName: String) {
        guard let field = Self.byPropertyName[propertyName] else { return nil }
        self = field
    }

    /// Every key a properties argument may carry, for error messages.
    public static let knownKeys: [String] = allCases.compactMap(\.key)
}
