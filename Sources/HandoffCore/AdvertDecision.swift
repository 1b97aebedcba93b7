// SPDX-License-Identifier: Apache-2.0
import TypedValues
import UserActivityCore

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
    public static func advert(for activity: Advert?, conditions: AdvertConditions) -> Advert? {
        guard let activity, activity.eligibleForHandoff, !conditions.paused, !conditions.sessionLocked,
              !conditions.blockedApplications.contains(activity.appID),
              !conditions.blockedActivityTypes.contains(activity.activityType)
        else { return nil }
        return activity
    }

    // MARK: What another device may have continued here

    /// The service's own limits on what an advert shows (title 1 KiB, other
    /// texts 64 KiB, reverse-DNS names 255 bytes).
    public static let maximumTitleBytes = 1024
    public static let maximumURLBytes = 64 * 1024
    public static let maximumNameBytes = 255

    /// The system type whose URI names a file: from another device it would
    /// name a path or share on that machine, which is never opened here.
    public static let openDocumentType = SystemActivityType.openDocument

    /// An advert within the limits, its title cut to ``maximumTitleBytes`` on
    /// a character boundary; nil when a field is over its limit or holds a
    /// NUL byte, which no D-Bus string may (a protocol error: shown, it would
    /// make the device's properties, and every device in
    /// `GetManagedObjects`, unreadable).
    public static func bounded(_ activity: Advert) -> Advert? {
        guard activity.id.utf8.count <= 64, activity.activityType.utf8.count <= maximumNameBytes, activity.appID.utf8.count <= maximumNameBytes,
              activity.webpageURL.utf8.count <= maximumURLBytes,
              ![activity.id, activity.activityType, activity.appID, activity.title, activity.webpageURL].contains(where: { $0.utf8.contains(0) })
        else { return nil }
        var bounded = activity
        bounded.title = activity.title.prefix(utf8Bytes: maximumTitleBytes)
        return bounded
    }

    /// The most of a device's name (from its hello) that is kept and shown, in UTF-8 bytes.
    public static let maximumDeviceNameBytes = 256

    /// A device's name as kept and shown: cut to ``maximumDeviceNameBytes``
    /// at a character boundary (a count of characters would let combining
    /// marks make it as large as a frame), or nil when it holds a NUL byte.
    public static func deviceName(_ name: String) -> String? {
        name.utf8.contains(0) ? nil : name.prefix(utf8Bytes: maximumDeviceNameBytes)
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
    public static func matches(_ advert: Advert, activityType: String, properties: [String: TypedValue]) -> Bool {
        func text(_ field: ActivityField) -> String { properties[Advert.key(field)]?.stringValue ?? "" }
        return activityType == advert.activityType && text(.appID) == advert.appID && text(.webpageURL) == advert.webpageURL
    }
}
