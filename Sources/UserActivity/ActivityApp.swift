// SPDX-License-Identifier: Apache-2.0
import Foundation
internal import UserActivityCore

/// An app's actions, declared once (Flint's spirit): activity types are
/// derived from the app ID and each action's name, performing an action
/// publishes its activity, continuations are routed back to the action, and
/// ``start(environment:)`` checks that the desktop entry declares every type.
///
/// ```swift
/// let app = try ActivityApp(appID: "com.example.Editor",
///                           actions: [OpenDocument.self, ShowPage.self])
/// try await app.start()          // DeclarationError says which line the desktop entry lacks
///
/// // When the user opens a document: performs it, then publishes
/// // com.example.Editor.open-document as the current activity.
/// try await app.perform(OpenDocument.self, with: .init(path: "/home/me/Report.odt", page: 1))
/// ```
///
/// The desktop entry then needs:
///
/// ```ini
/// X-UserActivityTypes=com.example.Editor.open-document;com.example.Editor.show-page;
/// ```
public final class ActivityApp: @unchecked Sendable {
    /// The app ID (desktop-file ID without `.desktop`).
    public let appID: String
    /// The client the app's activities go through.
    public let client: UserActivityClient

    private struct Route: Sendable {
        let name: String
        let eligibility: ActivityEligibility
        /// Rebuilds the input from a delivered activity and performs the action.
        let continueActivity: @Sendable (UserActivity, ActivityApp) async throws -> Void
    }

    private let routes: [String: Route]
    /// The activity types, in the order the actions were given.
    public let activityTypes: [String]

    private let lock = NSLock()
    private var _current: UserActivity?
    private var _fallback: (any ContinuationHandler)?
    private var _onWillContinue: (@Sendable (String) -> Void)?
    private var _onFailure: (@Sendable (String, UserActivityError) -> Void)?

    /// Declares the app's actions.
    ///
    /// - Parameters:
    ///   - appID: The app's desktop-file ID; every activity type is `<appID>.<action name>`.
    ///   - client: The connection to use; default a new one for `appID` on a
    ///     loop thread of the library's own.
    ///   - actions: The actions, each with a distinct name.
    /// - Throws: ``UserActivityError`` (`invalidArgument`) for a malformed app
    ///   ID, an action name that cannot be part of a type, or two actions with one name.
    public init(appID: String, client: UserActivityClient? = nil, actions: [any ActivityAction.Type]) throws {
        guard ReverseDNSName.isValid(appID) else {
            throw UserActivityError(.invalidArgument, "'\(appID)' is not an app ID: use the desktop-file ID without .desktop, such as com.example.Editor")
        }
        self.appID = appID
        self.client = try client ?? UserActivityClient(appID: appID)
        var routes: [String: Route] = [:]
        var types: [String] = []
        for action in actions {
            let route = Self.route(for: action)
            guard ActivityNames.isValidComponent(route.name) else {
                throw UserActivityError(.invalidArgument,
                    "the action \(action) is named '\(route.name)', which cannot end an activity type: use letters, digits, '-' and '_', not starting with a digit")
            }
            let type = "\(appID).\(route.name)"
            guard routes[type] == nil else {
                throw UserActivityError(.invalidArgument, "two actions are named '\(route.name)'; give one of them another static name")
            }
            guard ReverseDNSName.isValid(type) else {
                throw UserActivityError(.invalidArgument, "'\(type)' is not a valid activity type (at most \(ReverseDNSName.maximumLength) bytes)")
            }
            routes[type] = route
            types.append(type)
        }
        self.routes = routes
        self.activityTypes = types
    }

    private static func route<A: ActivityAction>(for action: A.Type) -> Route {
        Route(name: A.name, eligibility: A.eligibility) { activity, app in
            let input = try activity.userInfo(as: A.Input.self)
            try await A.perform(input, context: ActionContext(source: .continuation(activity), app: app))
            try await app.publish(A.self, input)
        }
    }

    /// The activity type of `action` for an app: `<appID>.<name>`.
    public static func activityType<A: ActivityAction>(of action: A.Type, appID: String) -> String {
        "\(appID).\(A.name)"
    }

    /// This app's activity type for `action`.
    public func activityType<A: ActivityAction>(of action: A.Type) -> String {
        Self.activityType(of: action, appID: appID)
    }

    // MARK: Starting

    /// Throws ``DeclarationError`` unless the app's desktop entry, found in
    /// the XDG data directories of `environment`, declares every activity type.
    public func checkDeclarations(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try DeclarationCheck.check(appID: appID, types: activityTypes, environment: environment)
    }

    /// Checks the declarations, then registers the app with the service so
    /// that continuations of its types are routed to its actions.
    ///
    /// ```swift
    /// do {
    ///     try await app.start()
    /// } catch let error as DeclarationError {
    ///     FileHandle.standardError.write(Data("\(error)".utf8))
    ///     exit(78)   // EX_CONFIG
    /// }
    /// ```
    public func start(environment: [String: String] = ProcessInfo.processInfo.environment) async throws {
        try checkDeclarations(environment: environment)
        try await client.register(continuationHandler: Router(app: self))
    }

    // MARK: Performing

    /// Performs `action` with `input`, then publishes its activity as the
    /// current one (the previous activity published here is invalidated).
    ///
    /// ```swift
    /// let activity = try await app.perform(OpenDocument.self, with: .init(path: path, page: 1))
    /// activity.wasContinued = { app in print("continued in \(app)") }
    /// ```
    ///
    /// - Returns: The published activity.
    /// - Throws: What the action throws (nothing is published then), or the
    ///   service's refusal to publish (``UserActivityError``; the action has run).
    @discardableResult
    public func perform<A: ActivityAction>(_ action: A.Type, with input: A.Input) async throws -> UserActivity {
        try await A.perform(input, context: ActionContext(source: .app, app: self))
        return try await publish(action, input)
    }

    /// The activity `action` publishes for `input`, not yet published.
    public func makeActivity<A: ActivityAction>(for action: A.Type, with input: A.Input) throws -> UserActivity {
        let activity = UserActivity(activityType: activityType(of: action), client: client)
        let eligibility = A.eligibility
        activity.isEligibleForHandoff = eligibility.contains(.handoff)
        activity.isEligibleForSearch = eligibility.contains(.search)
        activity.isEligibleForPrediction = eligibility.contains(.prediction)
        activity.isEligibleForPublicIndexing = eligibility.contains(.publicIndexing)
        try activity.setUserInfo(from: input)
        A.describe(input, in: activity)
        return activity
    }

    @discardableResult
    func publish<A: ActivityAction>(_ action: A.Type, _ input: A.Input) async throws -> UserActivity {
        let activity = try makeActivity(for: action, with: input)
        let previous: UserActivity? = lock.withLock {
            defer { _current = activity }
            return _current
        }
        previous?.invalidate()
        try await activity.becomeCurrent().wait()
        return activity
    }

    /// The activity the last action published.
    public var currentActivity: UserActivity? { lock.withLock { _current } }

    // MARK: Continuation hooks

    /// Handles continuations of types no action owns (default: not handled).
    public var fallbackHandler: (any ContinuationHandler)? {
        get { lock.withLock { _fallback } }
        set { lock.withLock { _fallback = newValue } }
    }

    /// Called with the activity type before a continuation is routed.
    public var onWillContinue: (@Sendable (_ activityType: String) -> Void)? {
        get { lock.withLock { _onWillContinue } }
        set { lock.withLock { _onWillContinue = newValue } }
    }

    /// Called when a continuation meant for this app failed before it could answer.
    public var onContinuationFailure: (@Sendable (_ activityType: String, _ error: UserActivityError) -> Void)? {
        get { lock.withLock { _onFailure } }
        set { lock.withLock { _onFailure = newValue } }
    }

    /// Routes a delivered activity to its action; false when no action owns its type.
    func route(_ activity: UserActivity) async throws -> Bool {
        guard let route = routes[activity.activityType] else {
            return try await fallbackHandler?.continue(activity) ?? false
        }
        do {
            try await route.continueActivity(activity, self)
        } catch let error as UserInfoError {
            // A clear answer for whoever asked for the continuation.
            throw UserActivityError(.continuationFailed, "\(appID) could not continue \(activity.activityType): \(error)")
        }
        return true
    }

    /// The client's continuation handler: routes to the app's actions.
    private final class Router: ContinuationHandler, @unchecked Sendable {
        weak var app: ActivityApp?
        init(app: ActivityApp) { self.app = app }

        func willContinue(activityType: String) {
            guard let app else { return }
            app.onWillContinue?(activityType)
            if app.routes[activityType] == nil { app.fallbackHandler?.willContinue(activityType: activityType) }
        }

        func `continue`(_ activity: UserActivity) async throws -> Bool {
            guard let app else { return false }
            return try await app.route(activity)
        }

        func didFailToContinue(activityType: String, error: UserActivityError) {
            guard let app else { return }
            app.onContinuationFailure?(activityType, error)
            if app.routes[activityType] == nil { app.fallbackHandler?.didFailToContinue(activityType: activityType, error: error) }
        }
    }
}
