// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// What is continued: an activity's type, data and publisher, checked and
/// turned into the `a{sv}` an app receives.
///
/// Every delivery path (a handler's `ContinueActivity`, `ActivateAction`'s
/// `(sa{sv})` parameter) sends the same dictionary: `app-id` naming the
/// publisher when it is known, `title` and `user-info` always, and every other
/// property whose value differs from its documented default (an absent key
/// means the default). Why not every key: the dictionary is marshalled for
/// each continuation, and libdbus's per-entry cost made it a quarter of the
/// daemon's work per call. `activity-type` is the separate argument, and
/// `Current` is no property of the data.
public struct ContinuationPayload: Sendable {
    /// The activity type (the separate `activity_type` argument of every delivery).
    public var activityType: String
    /// The activity's data.
    public var properties: ActivityProperties
    /// The app that published the activity, when known.
    public var publisher: String?

    /// A payload from data already validated (a live activity's).
    public init(activityType: String, properties: ActivityProperties, publisher: String?) {
        self.activityType = activityType
        self.properties = properties
        self.publisher = publisher
    }

    /// The data of an activity from outside (`ContinueActivity`): the
    /// properties argument validated exactly as `CreateActivity` validates it
    /// (unknown keys, types, limits, URLs, required keys), its `app-id` taken
    /// as the publisher.
    public static func fromOutside(type: String, entries: [(String, TypedValue)],
                                   limits: ActivityLimits) throws(UserActivityError) -> ContinuationPayload {
        try ReverseDNSName.validate(type, as: "activity type")
        let patch = try ActivityPatch.parse(entries, allowsAppIDClaim: true)
        if let claim = patch.appIDClaim { try AppIDName.validate(claim, as: "app-id (the publishing app)") }
        let properties = try patch.applied(to: ActivityProperties(), limits: limits)
        return ContinuationPayload(activityType: type, properties: properties, publisher: patch.appIDClaim)
    }

    /// The data of a saved copy (its stored `a{sv}`), published by `app`.
    ///
    /// Saved copies were validated when written; a key this version no
    /// longer knows is skipped rather than making the entry impossible to
    /// continue.
    public static func fromSaved(type: String, app: String, stored: TypedValue,
                                 limits: ActivityLimits) throws(UserActivityError) -> ContinuationPayload {
        let known = (stored.stringVariantEntries ?? []).filter { key, _ in
            guard let field = ActivityField(key: key) else { return false }
            return field != .activityType && field != .appID
        }
        let properties = try ActivityPatch.parse(known, allowsAppIDClaim: false).applied(to: ActivityProperties(), limits: limits)
        return ContinuationPayload(activityType: type, properties: properties, publisher: app)
    }

    /// `Expired` when the expiration date has come; `MissingRequiredUserInfoKeys`
    /// when a required key is absent.
    public func checkContinuable(now: Int64) throws(UserActivityError) {
        if properties.expirationDate != 0 && properties.expirationDate <= now {
            throw .expired("the activity \(activityType) expired at \(properties.expirationDate) µs since the epoch (now is \(now)); it can no longer be continued")
        }
        try ActivityPatch.checkRequiredKeys(properties)
    }

    /// The `a{sv}` an app receives.
    public var dictionary: TypedValue {
        var pairs: [(String, TypedValue)] = []
        if let publisher { pairs.append(("app-id", .string(publisher))) }
        for field in ActivityField.allCases {
            guard let key = field.key, field != .activityType, field != .appID else { continue }
            if field != .title && field != .userInfo && properties.hasDefaultValue(field) { continue }
            pairs.append((key, properties.value(of: field)))
        }
        return .stringVariantDictionary(pairs)
    }
}
