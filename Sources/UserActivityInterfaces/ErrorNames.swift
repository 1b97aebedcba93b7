// SPDX-License-Identifier: Apache-2.0
import UserActivityCore

/// The one table from error cases to D-Bus error names.
public enum ErrorNames {
    public static let prefix = "org.example.UserActivity.Error."

    public static func name(for kind: UserActivityError.Kind) -> String {
        switch kind {
        case .invalidArgument: return prefix + "InvalidArgument"
        case .notDeclared: return prefix + "NotDeclared"
        case .unknownApplication: return prefix + "UnknownApplication"
        case .accessDenied: return prefix + "AccessDenied"
        case .notEligible: return prefix + "NotEligible"
        case .expired: return prefix + "Expired"
        case .userInfoTooLarge: return prefix + "UserInfoTooLarge"
        case .missingRequiredUserInfoKeys: return prefix + "MissingRequiredUserInfoKeys"
        case .limitExceeded: return prefix + "LimitExceeded"
        case .notFound: return prefix + "NotFound"
        case .noHandler: return prefix + "NoHandler"
        case .remoteApplicationTimedOut: return prefix + "RemoteApplicationTimedOut"
        case .continuationFailed: return prefix + "ContinuationFailed"
        case .storageFailed: return prefix + "StorageFailed"
        case .propertyReadOnly: return "org.freedesktop.DBus.Error.PropertyReadOnly"
        case .unknownProperty: return "org.freedesktop.DBus.Error.UnknownProperty"
        case .unknownObject: return "org.freedesktop.DBus.Error.UnknownObject"
        }
    }

    /// When each of our own errors is returned, for the interface documentation.
    static let documentation: [(UserActivityError.Kind, String)] = [
        (.invalidArgument, "bad type string or app ID, unknown key, wrong value type, malformed URL, a key given twice"),
        (.notDeclared, "the caller's app does not declare this activity type in X-UserActivityTypes"),
        (.unknownApplication, "the caller's app cannot be identified, or the named app is not installed"),
        (.accessDenied, "not the owner; a confined caller naming another app or reading another app's data"),
        (.notEligible, "the activity is not eligible for what was asked (Continue without handoff eligibility)"),
        (.expired, "past its expiration date"),
        (.userInfoTooLarge, "UserInfo over 64 KiB as marshalled, or nested more than 48 levels deep"),
        (.missingRequiredUserInfoKeys, "a key of RequiredUserInfoKeys is absent from UserInfo"),
        (.limitExceeded, "too many live activities on one connection (256) or in the session, or too many continuations in flight (64 per connection, 1024 in the session); title, a keyword (1 KiB), keywords (64), ContentAttributes (64 KiB, 48 levels deep) or another text (64 KiB) over its limit"),
        (.notFound, "no such saved activity or continuation token"),
        (.noHandler, "no app can continue this type and there is no webpage URL"),
        (.remoteApplicationTimedOut, "the target app did not answer in time"),
        (.continuationFailed, "the target app answered that it did not handle it, or failed"),
        (.storageFailed, "(addition) the saved-activity store could not be written, e.g. the disk is full or another process kept its write lock; nothing was saved"),
    ]
}
