// SPDX-License-Identifier: Apache-2.0

/// Everything that can go wrong in the service, as the core sees it.
///
/// The D-Bus layer maps each ``Kind`` to one error name (one table, in
/// `UserActivityService`); ``message`` is what a script author reads.
public struct UserActivityError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        case invalidArgument
        case notDeclared
        case unknownApplication
        case accessDenied
        case notEligible
        case expired
        case userInfoTooLarge
        case missingRequiredUserInfoKeys
        case limitExceeded
        case notFound
        case noHandler
        case remoteApplicationTimedOut
        case continuationFailed
        /// The saved-activity store could not be written (disk full, read-only).
        case storageFailed
        /// A property that cannot be written.
        case propertyReadOnly
        /// No such property on the interface.
        case unknownProperty
        /// No such object (an invalidated activity).
        case unknownObject
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.rawValue): \(message)" }

    public static func invalidArgument(_ message: String) -> Self { .init(.invalidArgument, message) }
    public static func accessDenied(_ message: String) -> Self { .init(.accessDenied, message) }
    public static func unknownApplication(_ message: String) -> Self { .init(.unknownApplication, message) }
    public static func notDeclared(_ message: String) -> Self { .init(.notDeclared, message) }
    public static func notFound(_ message: String) -> Self { .init(.notFound, message) }
    public static func limitExceeded(_ message: String) -> Self { .init(.limitExceeded, message) }
    public static func expired(_ message: String) -> Self { .init(.expired, message) }
}
