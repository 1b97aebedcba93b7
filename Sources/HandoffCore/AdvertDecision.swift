// SPDX-License-Identifier: Apache-2.0

/// What the local service says about the current activity, as far as handoff cares.
public struct LocalActivity: Sendable, Equatable {
    public var id: String
    public var activityType: String
    public var appID: String
    public var title: String
    public var webpageURL: String
    public var timestamp: Int64
    public var eligibleForHandoff: Bool

    public init(id: String, activityType: String, appID: String, title: String, webpageURL: String,
                timestamp: Int64, eligibleForHandoff: Bool) {
        self.id = id
        self.activityType = activityType
        self.appID = appID
        self.title = title
        self.webpageURL = webpageURL
        self.timestamp = timestamp
        self.eligibleForHandoff = eligibleForHandoff
    }
}

/// The privacy state the advert depends on.
public struct AdvertConditions: Sendable, Equatable {
    public var paused = false
    public var blockedApplications: [String] = []
    public var blockedActivityTypes: [String] = []
    public var sessionLocked = false
    public init() {}
}

public enum AdvertDecision {
    /// The activity to advertise now, or nil: nothing leaves the machine while
    /// paused or locked, for blocked apps and types, or when the activity is
    /// not eligible for handoff.
    public static func advert(for activity: LocalActivity?, conditions: AdvertConditions) -> LocalActivity? {
        guard let activity, activity.eligibleForHandoff, !conditions.paused, !conditions.sessionLocked,
              !conditions.blockedApplications.contains(activity.appID),
              !conditions.blockedActivityTypes.contains(activity.activityType)
        else { return nil }
        return activity
    }

    /// The advert frame for `activity` (an empty body when nil).
    public static func frame(for activity: LocalActivity?) -> Frame {
        guard let activity else { return Frame(.advert) }
        return Frame(.advert, [
            "id": .string(activity.id), "activity-type": .string(activity.activityType),
            "app-id": .string(activity.appID), "title": .string(activity.title),
            "webpage-url": .string(activity.webpageURL), "timestamp": .int64(activity.timestamp),
        ])
    }

    /// Reads an advert frame; nil for an empty advert (no current activity).
    public static func activity(from frame: Frame) -> LocalActivity? {
        guard let id = frame.string("id"), let type = frame.string("activity-type") else { return nil }
        return LocalActivity(id: id, activityType: type, appID: frame.string("app-id") ?? "",
                             title: frame.string("title") ?? "", webpageURL: frame.string("webpage-url") ?? "",
                             timestamp: frame.int64("timestamp") ?? 0, eligibleForHandoff: true)
    }
}
