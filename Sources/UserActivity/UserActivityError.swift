// SPDX-License-Identifier: Apache-2.0
import DBusKit
internal import UserActivityInterfaces

/// An error from the user-activity service, or from the library on its way
/// there, with the D-Bus error name and the service's own words.
///
/// Compare ``code`` to tell errors apart; ``message`` says what was wrong in
/// words a user can act on.
///
/// ```swift
/// do {
///     try await activity.becomeCurrent().wait()
/// } catch let error as UserActivityError where error.code == .notDeclared {
///     print("add the type to X-UserActivityTypes: \(error.message)")
/// }
/// ```
public struct UserActivityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The D-Bus error name, e.g. `org.example.UserActivity.Error.NotDeclared`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The D-Bus error name.
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        private static func service(_ name: String) -> Code { Code(rawValue: ErrorNames.prefix + name) }

        // The service's errors (the spec's table).
        /// A bad type string, an unknown key, a value of the wrong type, a malformed URL.
        public static let invalidArgument = service("InvalidArgument")
        /// The app's desktop entry does not declare this activity type (`X-UserActivityTypes`).
        public static let notDeclared = service("NotDeclared")
        /// The app cannot be identified, or the named app is not installed (no desktop entry).
        public static let unknownApplication = service("UnknownApplication")
        /// Not the owner of the activity; a sandboxed caller naming another app.
        public static let accessDenied = service("AccessDenied")
        /// The activity is not eligible for what was asked (handoff without `isEligibleForHandoff`).
        public static let notEligible = service("NotEligible")
        /// Past its expiration date.
        public static let expired = service("Expired")
        /// User info over 64 KiB marshalled.
        public static let userInfoTooLarge = service("UserInfoTooLarge")
        /// A key of `requiredUserInfoKeys` is absent from user info.
        public static let missingRequiredUserInfoKeys = service("MissingRequiredUserInfoKeys")
        /// Too many live activities on one connection, or a text over its limit.
        public static let limitExceeded = service("LimitExceeded")
        /// No such saved activity or continuation token.
        public static let notFound = service("NotFound")
        /// No app can continue this type and there is no webpage URL.
        public static let noHandler = service("NoHandler")
        /// The target app did not answer in time.
        public static let remoteApplicationTimedOut = service("RemoteApplicationTimedOut")
        /// The target app answered that it did not handle the activity, or failed.
        public static let continuationFailed = service("ContinuationFailed")
        /// The service could not write its store (disk full, read-only); nothing was saved.
        public static let storageFailed = service("StorageFailed")

        // Errors of the bus and of this library.
        /// The service answered that the member exists but is not built in this version.
        public static let notSupported = Code(rawValue: "org.freedesktop.DBus.Error.NotSupported")
        /// The activity's object is gone from the bus (invalidated, or the service restarted).
        public static let unknownObject = Code(rawValue: "org.freedesktop.DBus.Error.UnknownObject")
        /// The service is not running and could not be started.
        public static let serviceUnknown = Code(rawValue: "org.freedesktop.DBus.Error.ServiceUnknown")
        /// No answer in time.
        public static let noReply = Code(rawValue: "org.freedesktop.DBus.Error.NoReply")
        /// The client's bus connection is closed.
        public static let disconnected = Code(rawValue: "org.freedesktop.DBus.Error.Disconnected")
        /// The activity was invalidated; it cannot become current again.
        public static let invalidated = Code(rawValue: "org.example.UserActivity.Client.Error.Invalidated")
        /// The activity has no continuation token (see ``UserActivity/getContinuationStream()``).
        public static let noContinuationStream = Code(rawValue: "org.example.UserActivity.Client.Error.NoContinuationStream")
    }

    /// Which error it is: compare with the constants, e.g. `.notDeclared`.
    public var code: Code
    /// What was wrong, in the service's words.
    public var message: String

    /// An error with a code and a message; a continuation handler can throw
    /// one to answer the service with that D-Bus error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The D-Bus error name (``Code/rawValue``).
    public var name: String { code.rawValue }

    public var description: String { "\(code.rawValue): \(message)" }

    /// A failed call, with a friendlier message when the service cannot be reached.
    init(_ failure: DBusFailure) {
        let code = Code(rawValue: failure.name)
        switch code {
        case .serviceUnknown, Code(rawValue: "org.freedesktop.DBus.Error.NameHasNoOwner"):
            self.init(.serviceUnknown,
                      "the user-activity service (org.example.UserActivity) is not running and could not be started by D-Bus activation: is useractivityd installed with its D-Bus service file? (\(failure.message))")
        case _ where failure.name.hasPrefix("org.freedesktop.DBus.Error.Spawn."):
            self.init(.serviceUnknown,
                      "the user-activity service (org.example.UserActivity) could not be started: \(failure.name): \(failure.message)")
        default:
            self.init(code, failure.message)
        }
    }
}
