// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues

extension UserActivityClient {
    // MARK: Saved activities

    /// Donates `activity` as a shortcut (`Donate`); see ``UserActivity/donate()``.
    @discardableResult
    public func donate(_ activity: UserActivity) async throws -> String {
        let reply = try await call("Donate", [.string(activity.activityType), .stringVariantDictionary(activity.creationEntries())])
        return reply.first?.stringValue ?? ""
    }

    /// Searches saved, search-eligible activities (`Search`): every word
    /// must match (case- and accent-insensitive), the last one also as a
    /// prefix, so it works as the user types.
    ///
    /// ```swift
    /// let results = try await client.search("quarterly rep", limit: 5)
    /// ```
    ///
    /// - Parameters:
    ///   - query: Any text; an empty query finds nothing.
    ///   - limit: At most this many results (default 20, at most 200).
    ///   - appID: Only this app's activities.
    ///   - activityTypes: Only these types.
    public func search(_ query: String, limit: Int? = nil, appID: String? = nil,
                       activityTypes: [String]? = nil) async throws -> [SearchResult] {
        var options: [(String, TypedValue)] = []
        if let limit { options.append(("limit", .uint32(UInt32(clamping: limit)))) }
        if let appID { options.append(("app-id", .string(appID))) }
        if let activityTypes { options.append(("activity-types", .stringArray(activityTypes))) }
        return SearchResult.list(try await call("Search", [.string(query), .stringVariantDictionary(options)]))
    }

    /// Prediction-eligible saved activities, best first (`GetSuggestions`):
    /// ranked by how often, how recently and at what time of day they were used.
    ///
    /// ```swift
    /// for suggestion in try await client.suggestions(limit: 3) {
    ///     print(suggestion.suggestedInvocationPhrase ?? suggestion.title)
    /// }
    /// ```
    public func suggestions(limit: Int? = nil, appID: String? = nil) async throws -> [SearchResult] {
        var options: [(String, TypedValue)] = []
        if let limit { options.append(("limit", .uint32(UInt32(clamping: limit)))) }
        if let appID { options.append(("app-id", .string(appID))) }
        return SearchResult.list(try await call("GetSuggestions", [.stringVariantDictionary(options)]))
    }

    /// Deletes this app's saved activities with these persistent identifiers
    /// (`deleteSavedUserActivities(withPersistentIdentifiers:)`).
    ///
    /// ```swift
    /// try await client.deleteSavedActivities(withPersistentIdentifiers: ["doc-42"])
    /// ```
    public func deleteSavedActivities(withPersistentIdentifiers identifiers: [String]) async throws {
        _ = try await call("DeleteSavedActivities", [.stringArray(identifiers)])
    }

    /// Deletes all this app's saved activities (`deleteAllSavedUserActivities()`).
    public func deleteAllSavedActivities() async throws {
        _ = try await call("DeleteAllSavedActivities", [])
    }

    // MARK: Continuing

    /// Asks the service to continue `activity` in an app that declares its
    /// type (`ContinueActivity`): for an activity that came from outside,
    /// such as a link. The publisher is this client's app unless the
    /// activity came through a continuation from another. Returns the app
    /// that took it.
    ///
    /// ```swift
    /// let link = UserActivity(activityType: "com.example.Editor.open-document", client: client)
    /// link.userInfo = ["path": "/home/me/Report.odt"]
    /// let app = try await client.continueActivity(link)
    /// ```
    @discardableResult
    public func continueActivity(_ activity: UserActivity, options: ContinuationOptions = ContinuationOptions()) async throws -> String {
        var properties = activity.creationEntries()
        if let publisher = activity.publisherAppID ?? appID { properties.insert(("app-id", .string(publisher)), at: 0) }
        let reply = try await call("ContinueActivity",
                                   [.string(activity.activityType), .stringVariantDictionary(properties),
                                    .stringVariantDictionary(options.entries)],
                                   timeoutMilliseconds: options.callTimeoutMilliseconds)
        return reply.first?.stringValue ?? ""
    }

    /// Continues a saved activity (a search result or suggestion) in an app
    /// (`ContinueSavedActivity`). Returns the app that took it.
    ///
    /// ```swift
    /// if let first = try await client.search("report").first {
    ///     try await client.continueSavedActivity(first.savedID)
    /// }
    /// ```
    @discardableResult
    public func continueSavedActivity(_ savedID: String, options: ContinuationOptions = ContinuationOptions()) async throws -> String {
        let reply = try await call("ContinueSavedActivity", [.string(savedID), .stringVariantDictionary(options.entries)],
                                   timeoutMilliseconds: options.callTimeoutMilliseconds)
        return reply.first?.stringValue ?? ""
    }

    // MARK: State

    /// The object path of the session's current activity, nil when there is none.
    public func currentActivityPath() async throws -> String? {
        let path = try await managerProperty("CurrentActivity").objectPathValue ?? "/"
        return path == "/" ? nil : path
    }

    /// The service's version.
    public func serviceVersion() async throws -> String {
        try await managerProperty("Version").stringValue ?? ""
    }

    /// A one-off read. The service takes a property read for a `GDBusProxy`
    /// loading its properties and sends the manager's `PropertiesChanged`
    /// from then on; this connection wants none (an activity's own
    /// `Continued` reaches it anyway), so it unsubscribes again.
    private func managerProperty(_ name: String) async throws -> TypedValue {
        let reply = try await call(interface: "org.freedesktop.DBus.Properties", "Get",
                                   [.string(Self.managerInterface), .string(name)])
        _ = try? await call("Unsubscribe", [])
        return reply.first?.unwrappedVariant ?? .string("")
    }
}
