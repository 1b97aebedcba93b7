// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// Parses an options `a{sv}`: each known key with its one type; anything else is `InvalidArgument`.
struct OptionsReader {
    /// A handful of options: a list searched in order costs less than hashing.
    private var values: [(key: String, value: TypedValue)] = []

    init(_ entries: [(String, TypedValue)], method: String, known: KeyValuePairs<String, String>) throws(UserActivityError) {
        values.reserveCapacity(entries.count)
        for (key, value) in entries {
            guard let type = known.first(where: { $0.key == key })?.value else {
                throw .invalidArgument("unknown option '\(key.prefix(200))' for \(method); known options: \(known.map(\.key).sorted().joined(separator: ", "))")
            }
            guard value.hasSignature(type) else {
                throw .invalidArgument("option '\(key)' of \(method) must have type '\(type)' but has '\(value.signature)'")
            }
            if let index = values.firstIndex(where: { $0.key == key }) {
                values[index].value = value
            } else {
                values.append((key, value))
            }
        }
    }

    subscript(_ key: String) -> TypedValue? { values.first { $0.key == key }?.value }
}

/// `Search` options: `limit` (u), `app-id` (s), `activity-types` (as).
public struct SearchOptions: Sendable, Equatable {
    public static let defaultLimit = 20
    public static let maximumLimit = 200
    public var limit = defaultLimit
    public var appID: String?
    public var activityTypes: [String] = []

    public init() {}

    public static func parse(_ entries: [(String, TypedValue)]) throws(UserActivityError) -> SearchOptions {
        let reader = try OptionsReader(entries, method: "Search", known: ["limit": "u", "app-id": "s", "activity-types": "as"])
        var options = SearchOptions()
        options.limit = clamp(reader["limit"]?.uint32Value, default: defaultLimit, maximum: maximumLimit)
        if let app = reader["app-id"]?.stringValue {
            try AppIDName.validate(app, as: "app-id option")
            options.appID = app
        }
        options.activityTypes = reader["activity-types"]?.stringArrayValue ?? []
        return options
    }
}

/// `GetSuggestions` options: `limit` (u), `app-id` (s).
public struct SuggestionOptions: Sendable, Equatable {
    public static let defaultLimit = 10
    public static let maximumLimit = 200
    public var limit = defaultLimit
    public var appID: String?

    public init() {}

    public static func parse(_ entries: [(String, TypedValue)]) throws(UserActivityError) -> SuggestionOptions {
        let reader = try OptionsReader(entries, method: "GetSuggestions", known: ["limit": "u", "app-id": "s"])
        var options = SuggestionOptions()
        options.limit = clamp(reader["limit"]?.uint32Value, default: defaultLimit, maximum: maximumLimit)
        if let app = reader["app-id"]?.stringValue {
            try AppIDName.validate(app, as: "app-id option")
            options.appID = app
        }
        return options
    }
}

/// 0 or absent means the default; above the maximum is clamped (the spec's rule).
func clamp(_ requested: UInt32?, default defaultValue: Int, maximum: Int) -> Int {
    guard let requested, requested > 0 else { return defaultValue }
    return min(Int(requested), maximum)
}
