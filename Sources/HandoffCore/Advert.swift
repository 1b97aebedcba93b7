// SPDX-License-Identifier: Apache-2.0
import TypedValues
import UserActivityCore

/// The current activity as handoff carries it, one type the whole way: read
/// from the origin's useractivityd (the Activity object's properties),
/// decided on (``AdvertDecision``), sent in the advert frame, and shown on
/// the other desktop as the `CurrentActivity` property of the origin's
/// Device object. Each field is named once, by the contract's names
/// (``ActivityField``).
public struct Advert: Sendable, Equatable {
    /// The activity's id on the origin (the last element of its object path).
    public var id: String
    public var activityType: String
    public var appID: String
    public var title: String
    public var webpageURL: String
    /// When it became current on the origin (Unix µs).
    public var timestamp: Int64
    public var eligibleForHandoff: Bool

    public init(id: String, activityType: String, appID: String, title: String, webpageURL: String,
                timestamp: Int64, eligibleForHandoff: Bool = true) {
        self.id = id
        self.activityType = activityType
        self.appID = appID
        self.title = title
        self.webpageURL = webpageURL
        self.timestamp = timestamp
        self.eligibleForHandoff = eligibleForHandoff
    }

    // MARK: Read from useractivityd

    /// The Activity properties an advert is made of; the rest (user info, up
    /// to 64 KiB each) is not kept.
    public static let activityFields: [ActivityField] = [.activityType, .appID, .title, .webpageURL, .eligibleForHandoff]
    public static let propertyNames: Set<String> = Set(activityFields.map(\.propertyName))

    /// The activity at `activityPath` from its properties (as `GetAll` or the
    /// signals give them), current since `since` (Unix µs).
    public init(activityPath: String, properties: [String: TypedValue], since: Int64) {
        func text(_ field: ActivityField) -> String { properties[field.propertyName]?.stringValue ?? "" }
        var eligible = true
        if case .boolean(let value)? = properties[ActivityField.eligibleForHandoff.propertyName] { eligible = value }
        self.init(id: String(activityPath.split(separator: "/").last ?? ""), activityType: text(.activityType), appID: text(.appID),
                  title: text(.title), webpageURL: text(.webpageURL), timestamp: since, eligibleForHandoff: eligible)
    }

    // MARK: The advert frame

    /// The keys of the frame and of `CurrentActivity` that are not activity fields.
    public static let idKey = "id"
    public static let timestampKey = "timestamp"
    public static let continuableKey = "continuable"

    /// A field's key in the frame, in `CurrentActivity` and in a fetched activity's properties.
    public static func key(_ field: ActivityField) -> String { field.key ?? field.rawValue }

    /// The advert frame for `advert` (an empty body when there is none).
    public static func frame(for advert: Advert?) -> Frame {
        guard let advert else { return Frame(.advert) }
        return Frame(.advert, Dictionary([(idKey, .string(advert.id))] + advert.shownFields, uniquingKeysWith: { $1 }))
    }

    /// Reads an advert frame; nil for an empty advert (no current activity).
    public init?(frame: Frame) {
        guard let id = frame.string(Self.idKey), let type = frame.string(Self.key(.activityType)) else { return nil }
        self.init(id: id, activityType: type, appID: frame.string(Self.key(.appID)) ?? "", title: frame.string(Self.key(.title)) ?? "",
                  webpageURL: frame.string(Self.key(.webpageURL)) ?? "", timestamp: frame.int64(Self.timestampKey) ?? 0)
    }

    // MARK: Shown on the other desktop

    /// The value of `Device.CurrentActivity` showing this advert.
    public func currentActivity(continuable: Bool) -> [String: TypedValue] {
        Dictionary(shownFields + [(Self.continuableKey, .boolean(continuable))], uniquingKeysWith: { $1 })
    }

    /// What both the frame and `CurrentActivity` say of it.
    private var shownFields: [(String, TypedValue)] {
        [(Self.key(.activityType), .string(activityType)), (Self.key(.appID), .string(appID)), (Self.key(.title), .string(title)),
         (Self.key(.webpageURL), .string(webpageURL)), (Self.timestampKey, .int64(timestamp))]
    }
}
