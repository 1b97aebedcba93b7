// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// One live activity: owned by an app, alive while the connection that created it is.
public struct LiveActivity: Sendable {
    /// The object-path element (`/org/example/UserActivity/activity/<id>`).
    public let id: String
    public let activityType: String
    public let appID: String
    /// The bus connection (unique name) whose lifetime bounds this activity.
    public let connection: String
    public internal(set) var properties: ActivityProperties
    public internal(set) var hasExpired = false
    /// The sandboxed app whose share of the session caps it counts against
    /// (nil: created by an unconfined caller).
    public internal(set) var confinedApp: String? = nil
    /// ``ActivityProperties/heldBytes``, counted against the memory shares.
    public internal(set) var dataBytes = 0
    /// When it last became (or was made again) the current activity, Unix µs; 0: never.
    public internal(set) var becameCurrentAt: Int64 = 0

    public func value(of field: ActivityField, isCurrent: Bool) -> TypedValue {
        switch field {
        case .activityType: return .string(activityType)
        case .appID: return .string(appID)
        case .current: return .boolean(isCurrent)
        default: return properties.value(of: field)
        }
    }
}

/// What changed, for the D-Bus layer to turn into signals and saves.
public enum RegistryEvent: Sendable, Equatable {
    case added(id: String)
    /// `app` owned it (it is no longer in the registry when this is read).
    case removed(id: String, app: String)
    case propertiesChanged(id: String, fields: [ActivityField])
    /// The session's current activity changed (nil: none).
    case currentChanged(from: String?, to: String?)
    /// A saved copy should be written: it became current while eligible (a use),
    /// or the current activity's data changed (not a use).
    case saveRequested(id: String, countsAsUse: Bool)
}

/// The session's live activities and the one-current-activity rule.
///
/// Plain state with no I/O: callers pass in who is calling (an app already
/// resolved) and the time, and get back what changed.
///
/// ```swift
/// let registry = ActivityRegistry(isDeclared: { app, type in type.hasPrefix(app + ".") })
/// let (activity, events) = try registry.create(type: "com.example.Editor.edit",
///     properties: ActivityPatch(), app: "com.example.Editor", connection: ":1.5", now: 0)
/// ```
public final class ActivityRegistry {
    public var limits: ActivityLimits
    /// Whether `app` declares `type` (from the desktop-entry catalog).
    public var isDeclared: (_ app: String, _ type: String) -> Bool

    public private(set) var activities: [String: LiveActivity] = [:]
    public private(set) var currentID: String?
    private var countByConnection: [String: Int] = [:]
    private var countByConfinedApp: [String: Int] = [:]
    private var bytesByApp: [String: Int] = [:]
    /// Bytes of live activity data in the session (``ActivityProperties/heldBytes``).
    public private(set) var totalDataBytes = 0
    private var nextSerial: UInt64 = 1

    public init(limits: ActivityLimits = .standard, isDeclared: @escaping (_ app: String, _ type: String) -> Bool) {
        self.limits = limits
        self.isDeclared = isDeclared
    }

    public func activity(_ id: String) -> LiveActivity? { activities[id] }
    public var current: LiveActivity? { currentID.flatMap { activities[$0] } }
    public func liveCount(connection: String) -> Int { countByConnection[connection, default: 0] }
    public func liveCount(confinedApp app: String) -> Int { countByConfinedApp[app, default: 0] }
    public func dataBytes(app: String) -> Int { bytesByApp[app, default: 0] }

    /// Whether `app` may hold `bytes` more of live activity data (its share and the session's).
    private func checkMemory(app: String, adding bytes: Int) throws(UserActivityError) {
        guard bytes > 0 else { return }
        let held = bytesByApp[app, default: 0]
        guard held + bytes <= limits.maximumLiveActivityBytesPerApp else {
            throw .limitExceeded("the live activities of \(app) already hold \(held) bytes of data; with \(bytes) more they would pass the \(limits.maximumLiveActivityBytesPerApp) bytes an app may hold; invalidate activities you no longer need or make them smaller")
        }
        guard totalDataBytes + bytes <= limits.maximumLiveActivityBytes else {
            throw .limitExceeded("the session's live activities already hold \(totalDataBytes) bytes of data, near the \(limits.maximumLiveActivityBytes) allowed; try again later")
        }
    }

    private func account(app: String, bytes: Int) {
        totalDataBytes += bytes
        let held = bytesByApp[app, default: 0] + bytes
        bytesByApp[app] = held > 0 ? held : nil
    }

    /// Checks that `app` declares `type`; the message says how to declare it.
    /// The ``SystemActivityType``s need no declaration.
    public func requireDeclared(app: String, type: String) throws(UserActivityError) {
        try ReverseDNSName.validate(type, as: "activity type")
        guard SystemActivityType.isSystem(type) || isDeclared(app, type) else {
            throw .notDeclared("the app \(app) does not declare the activity type \(type): add it to X-UserActivityTypes in \(app).desktop (types must start with the app's team, e.g. \(ReverseDNSName.parent(of: app) ?? app).)")
        }
    }

    /// Creates a live activity (not current).
    /// `confinedApp`: the caller's app when it is sandboxed, whose share of
    /// the session caps this counts against (nil for an unconfined caller).
    public func create(type: String, properties patch: ActivityPatch, app: String, connection: String,
                       confinedApp: String? = nil, now: Int64) throws(UserActivityError) -> (LiveActivity, [RegistryEvent]) {
        try requireDeclared(app: app, type: type)
        let properties = try patch.applied(to: ActivityProperties(), limits: limits)
        try SystemActivityType.validate(type: type, properties: properties)
        if properties.expirationDate != 0 && properties.expirationDate <= now {
            throw .expired("expiration-date \(properties.expirationDate) is already past (now is \(now) µs since the epoch); use a future time or 0 for never")
        }
        guard liveCount(connection: connection) < limits.maximumLiveActivitiesPerConnection else {
            throw .limitExceeded("this connection already has \(limits.maximumLiveActivitiesPerConnection) live activities, the most allowed; invalidate ones you no longer need")
        }
        if let confinedApp, liveCount(confinedApp: confinedApp) >= limits.maximumLiveActivitiesPerApp {
            throw .limitExceeded("the app \(confinedApp) already has \(limits.maximumLiveActivitiesPerApp) live activities over all its connections, the most a sandboxed app may have; invalidate ones you no longer need")
        }
        guard activities.count < limits.maximumLiveActivities else {
            throw .limitExceeded("the session already has \(limits.maximumLiveActivities) live activities, the most allowed; try again later")
        }
        let bytes = properties.heldBytes
        try checkMemory(app: app, adding: bytes)
        let id = String(nextSerial)
        nextSerial += 1
        var activity = LiveActivity(id: id, activityType: type, appID: app, connection: connection, properties: properties)
        activity.confinedApp = confinedApp
        activity.dataBytes = bytes
        activities[id] = activity
        countByConnection[connection, default: 0] += 1
        if let confinedApp { countByConfinedApp[confinedApp, default: 0] += 1 }
        account(app: app, bytes: bytes)
        trackExpiry(of: id)
        return (activity, [.added(id: id)])
    }

    /// Applies a validated patch atomically (`Update`, `AddUserInfoEntries`, `Properties.Set`).
    public func update(_ id: String, with patch: ActivityPatch, now: Int64) throws(UserActivityError) -> [RegistryEvent] {
        guard var activity = activities[id] else { throw Self.unknownObject(id) }
        let updated = try patch.applied(to: activity.properties, limits: limits)
        try SystemActivityType.validate(type: activity.activityType, properties: updated)
        let changed = patch.changedFields.filter { activity.properties.value(of: $0) != updated.value(of: $0) }
        let bytes = patch.isEmpty ? activity.dataBytes : updated.heldBytes
        try checkMemory(app: activity.appID, adding: bytes - activity.dataBytes)
        account(app: activity.appID, bytes: bytes - activity.dataBytes)
        activity.dataBytes = bytes
        activity.properties = updated
        activities[id] = activity
        trackExpiry(of: id)
        var events: [RegistryEvent] = []
        var uniqueChanged: [ActivityField] = []
        for field in changed where !uniqueChanged.contains(field) { uniqueChanged.append(field) }
        if !uniqueChanged.isEmpty { events.append(.propertiesChanged(id: id, fields: uniqueChanged)) }
        if uniqueChanged.contains(.expirationDate) {
            events += expireDue(now: now)
        }
        if currentID == id && updated.isSaveEligible && !uniqueChanged.isEmpty {
            // The saved copy follows the current activity's data, without counting another use.
            events.append(.saveRequested(id: id, countsAsUse: false))
        }
        return events
    }

    /// Makes the activity the session's current one.
    public func becomeCurrent(_ id: String, now: Int64) throws(UserActivityError) -> [RegistryEvent] {
        guard let activity = activities[id] else { throw Self.unknownObject(id) }
        if activity.hasExpired || (activity.properties.expirationDate != 0 && activity.properties.expirationDate <= now) {
            throw .expired("the activity \(activity.activityType) expired at \(activity.properties.expirationDate) µs; create a new one")
        }
        // Declarations can be withdrawn (the desktop entry changed) after it was created.
        try requireDeclared(app: activity.appID, type: activity.activityType)
        activities[id]?.becameCurrentAt = now
        var events: [RegistryEvent] = []
        if currentID != id {
            let previous = currentID
            currentID = id
            events.append(.currentChanged(from: previous, to: id))
        }
        if activity.properties.isSaveEligible { events.append(.saveRequested(id: id, countsAsUse: true)) }
        return events
    }

    /// Stops being current; a no-op when it is not current.
    public func resignCurrent(_ id: String) throws(UserActivityError) -> [RegistryEvent] {
        guard activities[id] != nil else { throw Self.unknownObject(id) }
        guard currentID == id else { return [] }
        currentID = nil
        return [.currentChanged(from: id, to: nil)]
    }

    /// Ends the activity; it leaves the bus.
    public func invalidate(_ id: String) throws(UserActivityError) -> [RegistryEvent] {
        guard let activity = activities.removeValue(forKey: id) else { throw Self.unknownObject(id) }
        expiring[id] = nil
        countByConnection[activity.connection, default: 1] -= 1
        if countByConnection[activity.connection] == 0 { countByConnection[activity.connection] = nil }
        if let app = activity.confinedApp {
            countByConfinedApp[app, default: 1] -= 1
            if countByConfinedApp[app] == 0 { countByConfinedApp[app] = nil }
        }
        account(app: activity.appID, bytes: -activity.dataBytes)
        var events: [RegistryEvent] = []
        if currentID == id {
            currentID = nil
            events.append(.currentChanged(from: id, to: nil))
        }
        events.append(.removed(id: id, app: activity.appID))
        return events
    }

    /// Invalidates every activity of a connection that closed.
    public func connectionClosed(_ connection: String) -> [RegistryEvent] {
        guard countByConnection[connection] != nil else { return [] }
        let ids = activities.values.filter { $0.connection == connection }.map(\.id).sorted { $0.count == $1.count ? $0 < $1 : $0.count < $1.count }
        return ids.flatMap { (try? invalidate($0)) ?? [] }
    }

    /// The earliest expiration date still to come, for a one-shot timer.
    /// Only activities with a date are looked at: this runs after every change.
    public func nextExpiration() -> Int64? {
        expiring.values.min()
    }

    /// Activity ID → expiration date, for the live activities that will expire.
    private var expiring: [String: Int64] = [:]

    private func trackExpiry(of id: String) {
        if let activity = activities[id], !activity.hasExpired, activity.properties.expirationDate != 0 {
            expiring[id] = activity.properties.expirationDate
        } else {
            expiring[id] = nil
        }
    }

    /// Marks every activity whose date has come as expired; an expired current one stops being current.
    public func expireDue(now: Int64) -> [RegistryEvent] {
        var events: [RegistryEvent] = []
        for (id, date) in expiring where date <= now {
            activities[id]?.hasExpired = true
            expiring[id] = nil
            if currentID == id {
                currentID = nil
                events.append(.currentChanged(from: id, to: nil))
            }
        }
        return events
    }

    static func unknownObject(_ id: String) -> UserActivityError {
        UserActivityError(.unknownObject, "no activity \(id): it was invalidated or its connection closed")
    }
}
