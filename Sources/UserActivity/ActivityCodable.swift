// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A type that travels in an activity's user info: it encodes itself into
/// user info and is rebuilt from it, with the keys it needs checked first
/// (the idea of Flint's `ActivityCodable`).
///
/// Any `Codable` struct qualifies; its stored properties become user-info
/// keys (see ``UserInfoEncoder`` for the types). The keys it needs are, by
/// default, every key a value encodes; list them in ``requiredUserInfoKeys``
/// to be explicit (optional properties, say, are then not required).
///
/// ```swift
/// struct DocumentRef: ActivityCodable, Equatable {
///     var path: String
///     var page: Int
///     var zoom: Double?
///     static let requiredUserInfoKeys: Set<String>? = ["path", "page"]
/// }
///
/// activity.setUserInfo(from: DocumentRef(path: "/home/me/Report.odt", page: 3))
/// // … continued in another process …
/// let document = try activity.userInfo(as: DocumentRef.self)
/// ```
///
/// Rebuilding from user info that lacks a required key throws
/// ``UserInfoError/missingRequiredKey(_:type:present:)`` naming the key.
public protocol ActivityCodable: Codable, Sendable {
    /// The keys that must be present to rebuild a value; nil (the default)
    /// means every key the value encodes. They become the activity's
    /// ``UserActivity/requiredUserInfoKeys``, so the service enforces them
    /// too and keeps only them in saved copies.
    static var requiredUserInfoKeys: Set<String>? { get }
}

extension ActivityCodable {
    public static var requiredUserInfoKeys: Set<String>? { nil }

    /// The value as user info.
    public func encodedUserInfo() throws -> [String: UserInfoValue] {
        do {
            return try UserInfoEncoder().encode(self)
        } catch let error as EncodingError {
            throw UserInfoError(encoding: error, type: Self.self)
        }
    }

    /// Rebuilds a value from user info, checking the required keys first.
    public init(userInfo: [String: UserInfoValue]) throws {
        let present = Set(userInfo.keys)
        if let required = Self.requiredUserInfoKeys,
           let missing = required.sorted().first(where: { !present.contains($0) }) {
            throw UserInfoError.missingRequiredKey(missing, type: "\(Self.self)", present: present.sorted())
        }
        do {
            self = try UserInfoDecoder().decode(Self.self, from: userInfo)
        } catch let error as DecodingError {
            throw UserInfoError(decoding: error, type: Self.self, present: present.sorted())
        }
    }
}

/// Why a value could not be written to or rebuilt from user info.
public enum UserInfoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A key the type needs is not in the user info.
    case missingRequiredKey(_ key: String, type: String, present: [String])
    /// A key the type needs to decode is missing, and it is not among the
    /// type's ``ActivityCodable/requiredUserInfoKeys``: saved copies keep only
    /// those, so list it there or make the property optional.
    case missingUnlistedKey(_ key: String, type: String, present: [String])
    /// A key holds a value of the wrong type.
    case wrongType(_ keyPath: String, type: String, detail: String)
    /// The value cannot be represented as user info.
    case notEncodable(type: String, detail: String)

    public var description: String {
        switch self {
        case .missingRequiredKey(let key, let type, let present):
            let keys = present.isEmpty ? "none" : present.map { "'\($0)'" }.joined(separator: ", ")
            return "\(type) cannot be rebuilt from the activity's user info: the required key '\(key)' is missing (keys present: \(keys))"
        case .missingUnlistedKey(let key, let type, let present):
            let keys = present.isEmpty ? "none" : present.map { "'\($0)'" }.joined(separator: ", ")
            return "\(type) cannot be rebuilt from the activity's user info: the key '\(key)' is missing (keys present: \(keys)). "
                + "'\(key)' is not in \(type).requiredUserInfoKeys, and saved copies keep only those keys: add it there, or make the property optional"
        case .wrongType(let keyPath, let type, let detail):
            return "\(type) cannot be rebuilt from the activity's user info: '\(keyPath)' has the wrong type: \(detail)"
        case .notEncodable(let type, let detail):
            return "\(type) cannot be written to user info: \(detail)"
        }
    }

    init<T>(encoding error: EncodingError, type: T.Type) {
        switch error {
        case .invalidValue(_, let context):
            self = .notEncodable(type: "\(type)", detail: "\(Self.path(context.codingPath)): \(context.debugDescription)")
        @unknown default:
            self = .notEncodable(type: "\(type)", detail: "\(error)")
        }
    }

    init<T: ActivityCodable>(decoding error: DecodingError, type: T.Type, present: [String]) {
        switch error {
        case .keyNotFound(let key, let context):
            let path = (context.codingPath + [key]).map(\.stringValue).joined(separator: ".")
            if context.codingPath.isEmpty, let listed = T.requiredUserInfoKeys, !listed.contains(key.stringValue) {
                self = .missingUnlistedKey(path, type: "\(type)", present: present)
            } else {
                self = .missingRequiredKey(path, type: "\(type)", present: present)
            }
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            self = .wrongType(Self.path(context.codingPath), type: "\(type)", detail: context.debugDescription)
        @unknown default:
            self = .wrongType("?", type: "\(type)", detail: "\(error)")
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "(top level)" : codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}

extension UserActivity {
    /// Replaces ``userInfo`` with `input` encoded, and sets
    /// ``requiredUserInfoKeys`` to the keys the type needs.
    public func setUserInfo<Input: ActivityCodable>(from input: Input) throws {
        let encoded = try input.encodedUserInfo()
        let required = Input.requiredUserInfoKeys ?? Set(encoded.keys)
        write(.userInfo, .requiredUserInfoKeys) {
            $0.userInfo = encoded
            $0.requiredUserInfoKeys = required
        }
    }

    /// Rebuilds an `Input` from ``userInfo``; throws ``UserInfoError`` naming
    /// a missing key or a value of the wrong type.
    public func userInfo<Input: ActivityCodable>(as type: Input.Type) throws -> Input {
        try Input(userInfo: userInfo)
    }
}
