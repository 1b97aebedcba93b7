// SPDX-License-Identifier: Apache-2.0
import TypedValues

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

    // MARK: What another device may have continued here

    /// The service's own limits on what an advert shows (title 1 KiB, other
    /// texts 64 KiB, reverse-DNS names 255 bytes).
    public static let maximumTitleBytes = 1024
    public static let maximumURLBytes = 64 * 1024
    public static let maximumNameBytes = 255

    /// The system type whose URI names a file: from another device it would
    /// name a path or share on that machine, which is never opened here.
    public static let openDocumentType = "org.example.UserActivity.open-document"

    /// An advert within the limits, its title cut to ``maximumTitleBytes`` on
    /// a character boundary; nil when a field is over its limit or holds a
    /// NUL byte, which no D-Bus string may (a protocol error: shown, it would
    /// make the device's properties, and every device in
    /// `GetManagedObjects`, unreadable).
    public static func bounded(_ activity: LocalActivity) -> LocalActivity? {
        guard activity.id.utf8.count <= 64, activity.activityType.utf8.count <= maximumNameBytes, activity.appID.utf8.count <= maximumNameBytes,
              activity.webpageURL.utf8.count <= maximumURLBytes,
              ![activity.id, activity.activityType, activity.appID, activity.title, activity.webpageURL].contains(where: { $0.utf8.contains(0) })
        else { return nil }
        var bounded = activity
        if bounded.title.utf8.count > maximumTitleBytes {
            var title = ""
            for character in bounded.title {
                guard title.utf8.count + character.utf8.count <= maximumTitleBytes else { break }
                title.append(character)
            }
            bounded.title = title
        }
        return bounded
    }

    /// Why an activity from another device is not continued here as it
    /// came, or nil: only `http(s)` web pages are opened from another device,
    /// and an open-document is not (its URI names the other machine's file:
    /// handoffd brings that file first and continues with the copy).
    public static func refusalFromAnotherDevice(activityType: String, webpageURL: String) -> String? {
        if activityType == openDocumentType { return "a document on another device is not opened here" }
        guard !webpageURL.isEmpty else { return nil }
        let scheme = webpageURL.prefix { $0 != ":" }.lowercased()
        guard webpageURL.contains(":"), scheme == "http" || scheme == "https" else {
            return "only http and https web pages are opened from another device"
        }
        return nil
    }

    /// Whether what a fetch returned is what the advert showed: the same
    /// type, app and web page, which decide what opens here (a device that
    /// shows one thing and hands over another is refused). The title is not
    /// compared: the owner's SaveActivity (NeedsSave), asked just before the
    /// activity leaves, may rename it.
    public static func matches(_ advert: LocalActivity, activityType: String, properties: [String: TypedValue]) -> Bool {
        func text(_ key: String) -> String { properties[key]?.stringValue ?? "" }
        return activityType == advert.activityType && text("app-id") == advert.appID && text("webpage-url") == advert.webpageURL
    }
}
