// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// The user's privacy controls: off-the-record mode, blocked apps and types,
/// retention. Kept in `$XDG_CONFIG_HOME/useractivity/useractivity.conf` and
/// exposed as writable properties of the manager (unconfined callers only).
///
/// ```ini
/// [Privacy]
/// Paused=false
/// BlockedApplications=com.example.Diary;
/// BlockedActivityTypes=
/// RetentionDays=90
/// MaxSavedPerApplication=1000
/// Bridges=recent-files;
/// RecentDocumentsBecomeCurrent=true
/// ```
public struct PrivacySettings: Sendable, Equatable {
    public var paused = false
    public var blockedApplications: [String] = []
    public var blockedActivityTypes: [String] = []
    /// Saved entries unused for longer are purged; 0 keeps them.
    public var retentionDays: UInt32 = 90
    /// At most this many saved entries per app, the least recently used go first; 0 = no limit.
    public var maxSavedPerApplication: UInt32 = 1000
    /// The bridges that import other desktop histories into saved activities
    /// (``knownBridges``); all on by default, an empty list turns them off.
    public var bridges: [String] = PrivacySettings.knownBridges
    /// Whether a document an app has just recorded in the recent-files list
    /// becomes the session's current activity (eligible for handoff) on that
    /// app's behalf; the recent-files bridge must be on too.
    public var recentDocumentsBecomeCurrent = true

    /// Every bridge this version has: `recent-files` (``RecentFiles``).
    public static let knownBridges = [RecentFiles.source]

    public init() {}

    /// Whether the bridge named `name` is on.
    public func bridgeIsOn(_ name: String) -> Bool { bridges.contains(name) }

    public static let group = "Privacy"

    /// The property names, in the order they are documented.
    public static let propertyNames = ["Paused", "BlockedApplications", "BlockedActivityTypes", "RetentionDays", "MaxSavedPerApplication", "Bridges",
                                       "RecentDocumentsBecomeCurrent"]

    public static func signature(of property: String) -> String? {
        switch property {
        case "Paused", "RecentDocumentsBecomeCurrent": return "b"
        case "BlockedApplications", "BlockedActivityTypes", "Bridges": return "as"
        case "RetentionDays", "MaxSavedPerApplication": return "u"
        default: return nil
        }
    }

    /// Whether a saved copy of `type` by `app` may be written now.
    public func allowsSaving(app: String, type: String) -> Bool {
        !paused && !blockedApplications.contains(app) && !blockedActivityTypes.contains(type)
    }

    public func value(of property: String) -> TypedValue? {
        switch property {
        case "Paused": return .boolean(paused)
        case "BlockedApplications": return .stringArray(blockedApplications)
        case "BlockedActivityTypes": return .stringArray(blockedActivityTypes)
        case "RetentionDays": return .uint32(retentionDays)
        case "MaxSavedPerApplication": return .uint32(maxSavedPerApplication)
        case "Bridges": return .stringArray(bridges)
        case "RecentDocumentsBecomeCurrent": return .boolean(recentDocumentsBecomeCurrent)
        default: return nil
        }
    }

    /// Sets one property from a D-Bus value, validating it.
    public mutating func set(_ property: String, to value: TypedValue) throws(UserActivityError) {
        guard let signature = Self.signature(of: property) else {
            throw UserActivityError(.unknownProperty, "no property '\(property.prefix(200))' on org.example.UserActivity")
        }
        guard value.hasSignature(signature) else {
            throw .invalidArgument("\(property) must have type '\(signature)' but the value has '\(value.signature)'")
        }
        switch property {
        case "Paused": paused = value.boolValue ?? false
        case "BlockedApplications": blockedApplications = try Self.names(value.stringArrayValue ?? [], what: "app ID")
        case "BlockedActivityTypes": blockedActivityTypes = try Self.names(value.stringArrayValue ?? [], what: "activity type")
        case "RetentionDays": retentionDays = value.uint32Value ?? 0
        case "Bridges": bridges = try Self.bridgeNames(value.stringArrayValue ?? [])
        case "RecentDocumentsBecomeCurrent": recentDocumentsBecomeCurrent = value.boolValue ?? true
        default: maxSavedPerApplication = value.uint32Value ?? 0
        }
    }

    private static func bridgeNames(_ names: [String]) throws(UserActivityError) -> [String] {
        var unique: [String] = []
        for name in names {
            guard knownBridges.contains(name) else {
                throw .invalidArgument("'\(name.prefix(200))' is not a bridge; the bridges are: \(knownBridges.joined(separator: ", "))")
            }
            if !unique.contains(name) { unique.append(name) }
        }
        return unique
    }

    private static func names(_ names: [String], what: String) throws(UserActivityError) -> [String] {
        var unique: [String] = []
        for name in names {
            try ReverseDNSName.validate(name, as: what)
            if !unique.contains(name) { unique.append(name) }
        }
        return unique
    }

    /// Reads the settings; an invalid value keeps its default and adds a warning.
    public static func load(from file: any KeyFileReading) -> (settings: PrivacySettings, warnings: [String]) {
        var settings = PrivacySettings()
        var warnings: [String] = []
        if let paused = file.string(group: group, key: "Paused") {
            if let value = file.boolean(group: group, key: "Paused") { settings.paused = value } else {
                warnings.append("Paused=\(paused) is not true or false; using false")
            }
        }
        if let text = file.string(group: group, key: "RecentDocumentsBecomeCurrent") {
            if let value = file.boolean(group: group, key: "RecentDocumentsBecomeCurrent") { settings.recentDocumentsBecomeCurrent = value } else {
                warnings.append("RecentDocumentsBecomeCurrent=\(text) is not true or false; using true")
            }
        }
        for (key, assign) in [("BlockedApplications", { (s: inout PrivacySettings, v: [String]) in s.blockedApplications = v }),
                              ("BlockedActivityTypes", { (s: inout PrivacySettings, v: [String]) in s.blockedActivityTypes = v })] {
            guard let list = file.stringList(group: group, key: key) else { continue }
            let valid = list.filter { !$0.isEmpty && ReverseDNSName.isValid($0) }
            for name in list where !name.isEmpty && !ReverseDNSName.isValid(name) {
                warnings.append("\(key): '\(name)' is not a reverse-DNS name; ignored")
            }
            assign(&settings, valid)
        }
        if let list = file.stringList(group: group, key: "Bridges") {
            settings.bridges = []
            for name in list where !name.isEmpty {
                if knownBridges.contains(name) {
                    if !settings.bridges.contains(name) { settings.bridges.append(name) }
                } else {
                    warnings.append("Bridges: '\(name)' is not a bridge (known: \(knownBridges.joined(separator: ", "))); ignored")
                }
            }
        }
        for key in ["RetentionDays", "MaxSavedPerApplication"] {
            guard let text = file.string(group: group, key: key) else { continue }
            guard let number = UInt32(text.trimmingCharacters(in: .whitespaces)) else {
                warnings.append("\(key)=\(text) is not a whole number ≥ 0; using the default")
                continue
            }
            if key == "RetentionDays" { settings.retentionDays = number } else { settings.maxSavedPerApplication = number }
        }
        return (settings, warnings)
    }

    /// The settings as a key file.
    public func serialized() -> String {
        func list(_ names: [String]) -> String { names.map { $0 + ";" }.joined() }
        return """
        # useractivity privacy settings. Changes apply without a restart; the
        # manager's D-Bus properties of the same names read and write this file.
        [\(Self.group)]
        # Off the record: nothing is saved while true (becoming current and continuing still work).
        Paused=\(paused)
        # Apps and activity types that are never saved or suggested (their saved entries are deleted).
        BlockedApplications=\(list(blockedApplications))
        BlockedActivityTypes=\(list(blockedActivityTypes))
        # Saved entries unused for this many days are purged; 0 keeps them.
        RetentionDays=\(retentionDays)
        # At most this many saved entries per app (least recently used go first); 0 = no limit.
        MaxSavedPerApplication=\(maxSavedPerApplication)
        # Other desktop histories imported as saved activities; empty turns them off.
        # recent-files: the documents GTK and KDE apps record in recently-used.xbel.
        Bridges=\(list(bridges))
        # A document an app has just recorded in the recent-files list becomes the current
        # activity (offered to your other desktops); needs recent-files in Bridges.
        RecentDocumentsBecomeCurrent=\(recentDocumentsBecomeCurrent)

        """
    }
}

private extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}

private extension Set where Element == Character {
    static let whitespaces: Set<Character> = [" ", "\t"]
}
