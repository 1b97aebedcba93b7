// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues

/// One value of an activity's user info, written with Swift literals and kept
/// with its exact D-Bus type.
///
/// The service returns every user-info value with the type it was given
/// (`u` stays `u`, `a{ss}` stays `a{ss}`), so a `UserInfoValue` is a thin
/// wrapper around a ``TypedValues/TypedValue``: literals pick a natural
/// type, and the `typed(_:)` constructor gives any other.
///
/// | literal | D-Bus type |
/// |---|---|
/// | `"text"` | `s` |
/// | `42` | `x` (Int64) |
/// | `1.5` | `d` |
/// | `true` | `b` |
/// | `["a", "b"]` | `as` (an array of one element type), else `av` |
/// | `["page": 3]` | `a{sv}` |
///
/// ```swift
/// activity.userInfo = [
///     "document": "/home/me/Report.odt",
///     "page": 3,
///     "zoom": 1.25,
///     "tags": ["q3", "finance"],
///     "cursor": ["line": 12, "column": 4],
///     "revision": .uint32(7),
/// ]
/// let page = activity.userInfo["page"]?.intValue   // 3
/// ```
public struct UserInfoValue: Sendable, Equatable, CustomStringConvertible {
    /// The exact D-Bus value.
    public var typedValue: TypedValue

    /// Wraps a value of any D-Bus type except `h`, `o` and `g`, which the
    /// service refuses in user info.
    public init(typed value: TypedValue) {
        self.typedValue = value
    }

    /// Any D-Bus value, e.g. `.typed(.structure([.int32(1), .string("a")]))`.
    public static func typed(_ value: TypedValue) -> UserInfoValue { UserInfoValue(typed: value) }
    public static func string(_ value: String) -> UserInfoValue { .typed(.string(value)) }
    public static func bool(_ value: Bool) -> UserInfoValue { .typed(.boolean(value)) }
    /// An `Int` as `x` (Int64).
    public static func int(_ value: Int) -> UserInfoValue { .typed(.int64(Int64(value))) }
    public static func int32(_ value: Int32) -> UserInfoValue { .typed(.int32(value)) }
    public static func int64(_ value: Int64) -> UserInfoValue { .typed(.int64(value)) }
    public static func uint32(_ value: UInt32) -> UserInfoValue { .typed(.uint32(value)) }
    public static func uint64(_ value: UInt64) -> UserInfoValue { .typed(.uint64(value)) }
    public static func byte(_ value: UInt8) -> UserInfoValue { .typed(.byte(value)) }
    public static func double(_ value: Double) -> UserInfoValue { .typed(.double(value)) }
    /// Bytes as `ay`.
    public static func data(_ value: Data) -> UserInfoValue { .typed(.bytes([UInt8](value))) }
    /// A date as `x`, Unix time in microseconds (the service's own date format).
    public static func date(_ value: Date) -> UserInfoValue { .typed(.int64(unixMicroseconds(value))) }
    /// A URL as its `absoluteString` (`s`).
    public static func url(_ value: URL) -> UserInfoValue { .string(value.absoluteString) }

    /// An array: `a<T>` when every element has the same type `T`, else `av`.
    public static func array(_ values: [UserInfoValue]) -> UserInfoValue {
        let types = Set(values.map(\.typedValue.signature))
        if types.count == 1, let type = types.first {
            return .typed(.array(elementType: type, values.map(\.typedValue)))
        }
        return .typed(.array(elementType: "v", values.map { .variant($0.typedValue) }))
    }

    /// A dictionary as `a{sv}`, keys sorted.
    public static func dictionary(_ values: [String: UserInfoValue]) -> UserInfoValue {
        .typed(.stringVariantDictionary(values.sorted { $0.key < $1.key }.map { ($0.key, $0.value.typedValue) }))
    }

    // MARK: Reading

    private var content: TypedValue { typedValue.unwrappedVariant }

    /// The text of an `s`.
    public var stringValue: String? { content.stringValue }
    public var boolValue: Bool? { content.boolValue }

    /// Any integer type (and a `d` holding a whole number) that fits an `Int`.
    public var intValue: Int? {
        switch content {
        case .byte(let v): return Int(v)
        case .int16(let v): return Int(v)
        case .uint16(let v): return Int(v)
        case .int32(let v): return Int(v)
        case .uint32(let v): return Int(v)
        case .int64(let v): return Int(exactly: v)
        case .uint64(let v): return Int(exactly: v)
        case .double(let v): return Int(exactly: v)
        default: return nil
        }
    }

    /// A `d`, or any integer type.
    public var doubleValue: Double? {
        if case .double(let v) = content { return v }
        return intValue.map(Double.init)
    }

    /// The elements of any array (variants unwrapped); nil for a dictionary.
    public var arrayValue: [UserInfoValue]? {
        guard let elements = content.arrayElements else { return nil }
        return elements.map { UserInfoValue(typed: $0.unwrappedVariant) }
    }

    /// The entries of a dictionary with string keys (`a{sv}`, `a{ss}`, …), variants unwrapped.
    public var dictionaryValue: [String: UserInfoValue]? {
        guard case .dictionary("s", _, let entries) = content else { return nil }
        var result: [String: UserInfoValue] = [:]
        for entry in entries {
            guard let key = entry.key.stringValue else { continue }
            result[key] = UserInfoValue(typed: entry.value.unwrappedVariant)
        }
        return result
    }

    /// The bytes of an `ay`.
    public var dataValue: Data? {
        content.bytesValue.map { Data($0) }
    }

    /// An `x` (or any integer) read as Unix microseconds.
    public var dateValue: Date? {
        switch content {
        case .int64(let v): return dateFromUnixMicroseconds(v)
        case .uint64(let v): return Int64(exactly: v).map(dateFromUnixMicroseconds)
        default: return intValue.map { dateFromUnixMicroseconds(Int64($0)) }
        }
    }

    /// An `s` parsed as a URL.
    public var urlValue: URL? { stringValue.flatMap { URL(string: $0) } }

    public var description: String { Self.describe(content) }

    private static func describe(_ value: TypedValue) -> String {
        switch value {
        case .string(let s): return "\"\(s)\""
        case .boolean(let b): return "\(b)"
        case .byte(let v): return "byte \(v)"
        case .int16(let v): return "int16 \(v)"
        case .uint16(let v): return "uint16 \(v)"
        case .int32(let v): return "int32 \(v)"
        case .uint32(let v): return "uint32 \(v)"
        case .int64(let v): return "\(v)"
        case .uint64(let v): return "uint64 \(v)"
        case .double(let v): return "\(v)"
        case .objectPath(let s): return "objectpath \(s)"
        case .signature(let s): return "signature \(s)"
        case .unixFD(let fd): return "fd \(fd)"
        case .variant(let inner): return "<\(describe(inner))>"
        case .array(_, let elements): return "[" + elements.map(describe).joined(separator: ", ") + "]"
        case .bytes(let bytes): return "[" + bytes.map { "byte \($0)" }.joined(separator: ", ") + "]"
        case .structure(let fields): return "(" + fields.map(describe).joined(separator: ", ") + ")"
        case .dictionary(_, _, let entries):
            return "[" + entries.map { "\(describe($0.key)): \(describe($0.value))" }.joined(separator: ", ") + "]"
        }
    }
}

extension UserInfoValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: UserInfoValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, UserInfoValue)...) {
        self = .typed(.stringVariantDictionary(elements.map { ($0.0, $0.1.typedValue) }))
    }
}

// MARK: - User info as a{sv}

enum UserInfoCoding {
    /// `[String: UserInfoValue]` → `a{sv}`, keys sorted so that the same
    /// user info always marshals the same way.
    static func typedValue(_ userInfo: [String: UserInfoValue]) -> TypedValue {
        .stringVariantDictionary(userInfo.sorted { $0.key < $1.key }.map { ($0.key, $0.value.typedValue) })
    }

    /// `a{sv}` → `[String: UserInfoValue]` (each variant's content kept exactly).
    static func userInfo(_ value: TypedValue) -> [String: UserInfoValue] {
        var result: [String: UserInfoValue] = [:]
        for (key, inner) in value.stringVariantEntries ?? [] { result[key] = UserInfoValue(typed: inner) }
        return result
    }
}

/// Unix time in microseconds (the service's date format), rounded down.
func unixMicroseconds(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1_000_000).rounded(.down))
}

func dateFromUnixMicroseconds(_ value: Int64) -> Date {
    Date(timeIntervalSince1970: Double(value) / 1_000_000)
}
