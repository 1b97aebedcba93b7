// SPDX-License-Identifier: Apache-2.0

/// Where an app receives continuations: a connection and an object path
/// implementing `org.example.UserActivity.Handler`.
public struct RegisteredHandler: Sendable, Equatable {
    /// The app the registering connection acts for.
    public let app: String
    /// The unique bus name of the registering connection.
    public let connection: String
    /// The object path implementing the Handler interface.
    public let path: String

    /// A handler as `RegisterHandler` recorded it.
    public init(app: String, connection: String, path: String) {
        self.app = app
        self.connection = connection
        self.path = path
    }
}

/// `RegisterHandler`'s bookkeeping: at most one handler per app, the latest
/// registration wins, and a handler lasts as long as its connection.
public struct ContinuationHandlerTable: Sendable {
    private var byApp: [String: RegisteredHandler] = [:]

    /// No handlers.
    public init() {}

    /// Registers a handler; returns the one it replaced, if any.
    @discardableResult
    public mutating func register(_ handler: RegisteredHandler) -> RegisteredHandler? {
        byApp.updateValue(handler, forKey: handler.app)
    }

    /// The handler of `app`, nil when it has none.
    public func handler(for app: String) -> RegisteredHandler? { byApp[app] }

    /// Whether `app` has a handler now.
    public func hasHandler(_ app: String) -> Bool { byApp[app] != nil }

    /// Drops every handler registered by a connection that closed; returns their apps, sorted.
    @discardableResult
    public mutating func connectionClosed(_ connection: String) -> [String] {
        let apps = byApp.values.filter { $0.connection == connection }.map(\.app).sorted()
        for app in apps { byApp[app] = nil }
        return apps
    }

    /// The number of registered handlers.
    public var count: Int { byApp.count }
}
