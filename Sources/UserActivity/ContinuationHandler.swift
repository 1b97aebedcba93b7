// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues

/// What an app does when the service hands it an activity to continue: the
/// `application(_:willContinueUserActivityWithType:)`,
/// `application(_:continue:restorationHandler:)` and
/// `application(_:didFailToContinueUserActivityWithType:error:)` of AppKit.
///
/// Register it with ``UserActivityClient/register(continuationHandler:)``;
/// the library then serves `org.example.UserActivity.Handler` on the
/// client's connection and answers the service's calls with it.
///
/// ```swift
/// final class Continuation: ContinuationHandler {
///     func willContinue(activityType: String) { print("about to continue \(activityType)") }
///
///     func `continue`(_ activity: UserActivity) async throws -> Bool {
///         guard activity.activityType == "com.example.Editor.edit-document",
///               let path = activity.userInfo["path"]?.stringValue else { return false }
///         await openDocument(at: path)
///         return true
///     }
///
///     func didFailToContinue(activityType: String, error: UserActivityError) {
///         print("could not continue \(activityType): \(error.message)")
///     }
/// }
/// try await client.register(continuationHandler: Continuation())
/// ```
///
/// ``willContinue(activityType:)`` and ``didFailToContinue(activityType:error:)``
/// run on the client's loop thread (the thread running your `MainLoop` when
/// the client is attached to one) and should return quickly;
/// ``continue(_:)`` runs in a task of its own.
public protocol ContinuationHandler: Sendable {
    /// An activity of this type is about to be continued. Optional.
    func willContinue(activityType: String)

    /// Continues `activity`; return whether it was handled. Throwing answers
    /// the service with an error that is passed on to whoever asked for the
    /// continuation (a ``UserActivityError`` keeps its name; any other error
    /// becomes `ContinuationFailed` with its description).
    ///
    /// The activity is not published: call ``UserActivity/becomeCurrent()``
    /// on it to make it this app's current activity.
    func `continue`(_ activity: UserActivity) async throws -> Bool

    /// A continuation meant for this app failed before the app could answer
    /// (it timed out, or could not be delivered). Optional.
    func didFailToContinue(activityType: String, error: UserActivityError)
}

extension ContinuationHandler {
    public func willContinue(activityType: String) {}
    public func didFailToContinue(activityType: String, error: UserActivityError) {}
}

/// A ``ContinuationHandler`` made of closures.
///
/// ```swift
/// try await client.register(continuationHandler: ContinuationClosures { activity in
///     print("continue \(activity.activityType) with \(activity.userInfo)")
///     return true
/// })
/// ```
public struct ContinuationClosures: ContinuationHandler {
    public var onWillContinue: @Sendable (String) -> Void
    public var onContinue: @Sendable (UserActivity) async throws -> Bool
    public var onFailure: @Sendable (String, UserActivityError) -> Void

    /// A handler whose ``ContinuationHandler/continue(_:)`` is `continue`;
    /// the other two closures are optional.
    public init(willContinue: @escaping @Sendable (_ activityType: String) -> Void = { _ in },
                didFailToContinue: @escaping @Sendable (_ activityType: String, _ error: UserActivityError) -> Void = { _, _ in },
                continue: @escaping @Sendable (UserActivity) async throws -> Bool) {
        self.onWillContinue = willContinue
        self.onContinue = `continue`
        self.onFailure = didFailToContinue
    }

    public func willContinue(activityType: String) { onWillContinue(activityType) }
    public func `continue`(_ activity: UserActivity) async throws -> Bool { try await onContinue(activity) }
    public func didFailToContinue(activityType: String, error: UserActivityError) { onFailure(activityType, error) }
}

/// How a continuation is dispatched (the options of `ContinueActivity`,
/// `ContinueSavedActivity` and `Activity.Continue`).
public struct ContinuationOptions: Sendable, Equatable {
    /// The app to continue in, when several declare the type.
    public var targetAppID: String?
    /// How long the service waits for the app (default 10 s).
    public var timeout: TimeInterval?
    /// An XDG activation token passed on to the app (focus stealing prevention).
    public var activationToken: String?
    /// A startup-notification ID passed on to the app.
    public var desktopStartupID: String?

    /// Options; every one is optional.
    ///
    /// ```swift
    /// try await client.continueSavedActivity(id, options: .init(targetAppID: "com.example.Viewer", timeout: 5))
    /// ```
    public init(targetAppID: String? = nil, timeout: TimeInterval? = nil,
                activationToken: String? = nil, desktopStartupID: String? = nil) {
        self.targetAppID = targetAppID
        self.timeout = timeout
        self.activationToken = activationToken
        self.desktopStartupID = desktopStartupID
    }

    var entries: [(String, TypedValue)] {
        var pairs: [(String, TypedValue)] = []
        if let targetAppID { pairs.append(("target-app-id", .string(targetAppID))) }
        if let timeout { pairs.append(("timeout-ms", .uint32(UInt32(clamping: Int((timeout * 1000).rounded()))))) }
        if let activationToken { pairs.append(("activation-token", .string(activationToken))) }
        if let desktopStartupID { pairs.append(("desktop-startup-id", .string(desktopStartupID))) }
        return pairs
    }

    /// libdbus's wait for the answer: the service's own timeout plus slack,
    /// so that the service's error (with its words) arrives first.
    var callTimeoutMilliseconds: Int32 {
        Int32(clamping: Int(((timeout ?? 10) * 1000).rounded()) + 5000)
    }
}
