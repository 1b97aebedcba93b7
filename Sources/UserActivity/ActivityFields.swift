// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues
internal import UserActivityCore

/// The data of one activity as Swift values, and their `a{sv}` form
/// (the spec's kebab-case keys, from the core's ``ActivityField`` table).
struct ActivityFields: Sendable {
    var title: String?
    var userInfo: [String: UserInfoValue] = [:]
    var requiredUserInfoKeys: Set<String> = []
    var keywords: Set<String> = []
    var contentDescription: String?
    var contentAttributes: [String: UserInfoValue] = [:]
    var webpageURL: URL?
    var referrerURL: URL?
    var targetContentIdentifier: String?
    var persistentIdentifier: String?
    var expirationDate: Date?
    var isEligibleForHandoff = true
    var isEligibleForSearch = false
    var isEligibleForPublicIndexing = false
    var isEligibleForPrediction = false
    var suggestedInvocationPhrase: String?
    var needsSave = false
    var supportsContinuationStreams = false

    /// The value sent for `field`.
    func value(of field: ActivityField) -> TypedValue {
        switch field {
        case .title: return .string(title ?? "")
        case .userInfo: return UserInfoCoding.typedValue(userInfo)
        case .requiredUserInfoKeys: return .stringArray(requiredUserInfoKeys.sorted())
        case .keywords: return .stringArray(keywords.sorted())
        case .contentDescription: return .string(contentDescription ?? "")
        case .contentAttributes: return UserInfoCoding.typedValue(contentAttributes)
        case .webpageURL: return .string(webpageURL?.absoluteString ?? "")
        case .referrerURL: return .string(referrerURL?.absoluteString ?? "")
        case .targetContentIdentifier: return .string(targetContentIdentifier ?? "")
        case .persistentIdentifier: return .string(persistentIdentifier ?? "")
        case .expirationDate: return .int64(expirationDate.map(unixMicroseconds) ?? 0)
        case .eligibleForHandoff: return .boolean(isEligibleForHandoff)
        case .eligibleForSearch: return .boolean(isEligibleForSearch)
        case .eligibleForPublicIndexing: return .boolean(isEligibleForPublicIndexing)
        case .eligibleForPrediction: return .boolean(isEligibleForPrediction)
        case .suggestedInvocationPhrase: return .string(suggestedInvocationPhrase ?? "")
        case .needsSave: return .boolean(needsSave)
        case .supportsContinuationStreams: return .boolean(supportsContinuationStreams)
        case .activityType, .appID, .current: return .string("")
        }
    }

    /// Takes a value from an `a{sv}` the service sent (a continuation);
    /// false when the key is not an activity property this library keeps.
    mutating func set(_ field: ActivityField, from value: TypedValue) -> Bool {
        func text(_ value: TypedValue) -> String? { value.stringValue.flatMap { $0.isEmpty ? nil : $0 } }
        switch (field, value) {
        case (.title, _): title = text(value)
        case (.userInfo, _): userInfo = UserInfoCoding.userInfo(value)
        case (.requiredUserInfoKeys, _): requiredUserInfoKeys = Set(value.stringArrayValue ?? [])
        case (.keywords, _): keywords = Set(value.stringArrayValue ?? [])
        case (.contentDescription, _): contentDescription = text(value)
        case (.contentAttributes, _): contentAttributes = UserInfoCoding.userInfo(value)
        case (.webpageURL, _): webpageURL = text(value).flatMap { URL(string: $0) }
        case (.referrerURL, _): referrerURL = text(value).flatMap { URL(string: $0) }
        case (.targetContentIdentifier, _): targetContentIdentifier = text(value)
        case (.persistentIdentifier, _): persistentIdentifier = text(value)
        case (.expirationDate, .int64(let micros)): expirationDate = micros == 0 ? nil : dateFromUnixMicroseconds(micros)
        case (.eligibleForHandoff, .boolean(let flag)): isEligibleForHandoff = flag
        case (.eligibleForSearch, .boolean(let flag)): isEligibleForSearch = flag
        case (.eligibleForPublicIndexing, .boolean(let flag)): isEligibleForPublicIndexing = flag
        case (.eligibleForPrediction, .boolean(let flag)): isEligibleForPrediction = flag
        case (.suggestedInvocationPhrase, _): suggestedInvocationPhrase = text(value)
        case (.needsSave, .boolean(let flag)): needsSave = flag
        case (.supportsContinuationStreams, .boolean(let flag)): supportsContinuationStreams = flag
        default: return false
        }
        return true
    }

    /// `a{sv}` entries for `fields`, in the spec's table order.
    func entries(_ fields: Set<ActivityField>) -> [(String, TypedValue)] {
        ActivityField.allCases.compactMap { field in
            guard fields.contains(field), let key = field.key, field.isWritable else { return nil }
            return (key, value(of: field))
        }
    }
}
