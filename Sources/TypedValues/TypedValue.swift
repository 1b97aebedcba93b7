// SPDX-License-Identifier: Apache-2.0

/// A value of the D-Bus/GVariant type system, kept with its exact type so that
/// it comes back the same way it arrived (`user-info` must round-trip exactly).
///
/// ```swift
/// let info: TypedValue = .dictionary(keyType: "s", valueType: "v", [
///     .init(key: .string("page"), value: .variant(.uint32(3))),
/// ])
/// info.signature // "a{sv}"
/// ```
///
/// Only `variant` is boxed: an `indirect` enum put every value, each string
/// and integer included, in a heap allocation of its own.
public enum TypedValue: Sendable, Equatable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor owned by whoever holds the value.
    case unixFD(Int32)
    /// An array whose elements all have `elementType` (kept so that empty arrays keep their type).
    case array(elementType: String, [TypedValue])
    /// A dictionary in wire order (D-Bus allows any order; keeping it makes round trips exact).
    case dictionary(keyType: String, valueType: String, [DictionaryEntry])
    case structure([TypedValue])
    indirect case variant(TypedValue)

    public struct DictionaryEntry: Sendable, Equatable {
        public var key: TypedValue
        public var value: TypedValue
        public init(key: TypedValue, value: TypedValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value's D-Bus type signature, e.g. `a{sv}`.
    public var signature: String {
        switch self {
        case .byte: return "y"
        case .boolean: return "b"
        case .int16: return "n"
        case .uint16: return "q"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .unixFD: return "h"
        case .array(let elementType, _): return "a" + elementType
        case .dictionary(let keyType, let valueType, _): return "a{" + keyType + valueType + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        case .variant: return "v"
        }
    }

    /// Exact equality that also tells NaNs and ±0 apart, as a byte-level round trip would.
    public func isIdentical(to other: TypedValue) -> Bool {
        switch (self, other) {
        case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern
        case (.array(let ta, let a), .array(let tb, let b)):
            return ta == tb && a.count == b.count && zip(a, b).allSatisfy { $0.isIdentical(to: $1) }
        case (.dictionary(let ka, let va, let a), .dictionary(let kb, let vb, let b)):
            return ka == kb && va == vb && a.count == b.count
                && zip(a, b).allSatisfy { $0.key.isIdentical(to: $1.key) && $0.value.isIdentical(to: $1.value) }
        case (.structure(let a), .structure(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isIdentical(to: $1) }
        case (.variant(let a), .variant(let b)): return a.isIdentical(to: b)
        default: return self == other
        }
    }

    /// Whether any value in the tree has one of the given single-character
    /// types, given as their ASCII codes (`Array("h".utf8)`).
    public func contains(anyOf typeCodes: [UInt8]) -> Bool {
        // Type codes are ASCII: bytes, not Characters, so no grapheme breaking.
        func names(_ type: String) -> Bool { type.utf8.contains(where: typeCodes.contains) }
        switch self {
        case .array(let elementType, let elements):
            return names(elementType) || elements.contains { $0.contains(anyOf: typeCodes) }
        case .dictionary(let keyType, let valueType, let entries):
            return names(keyType) || names(valueType)
                || entries.contains { $0.key.contains(anyOf: typeCodes) || $0.value.contains(anyOf: typeCodes) }
        case .structure(let fields): return fields.contains { $0.contains(anyOf: typeCodes) }
        case .variant(let inner): return inner.contains(anyOf: typeCodes)
        default: return leafTypeCode.map(typeCodes.contains) ?? false
        }
    }

    /// The type code of a basic value or a variant; nil for a container.
    var leafTypeCode: UInt8? {
        switch self {
        case .byte: UInt8(ascii: "y")
        case .boolean: UInt8(ascii: "b")
        case .int16: UInt8(ascii: "n")
        case .uint16: UInt8(ascii: "q")
        case .int32: UInt8(ascii: "i")
        case .uint32: UInt8(ascii: "u")
        case .int64: UInt8(ascii: "x")
        case .uint64: UInt8(ascii: "t")
        case .double: UInt8(ascii: "d")
        case .string: UInt8(ascii: "s")
        case .objectPath: UInt8(ascii: "o")
        case .signature: UInt8(ascii: "g")
        case .unixFD: UInt8(ascii: "h")
        case .variant: UInt8(ascii: "v")
        case .array, .dictionary, .structure: nil
        }
    }

    /// `signature.utf8.count`, without building the signature.
    public var signatureLength: Int {
        switch self {
        case .array(let elementType, _): 1 + elementType.utf8.count
        case .dictionary(let keyType, let valueType, _): 3 + keyType.utf8.count + valueType.utf8.count
        case .structure(let fields): fields.reduce(2) { $0 + $1.signatureLength }
        default: 1
        }
    }

    /// `signature == expected`, without building the signature (every
    /// property of every call is checked this way).
    public func hasSignature(_ expected: String) -> Bool {
        let matched: Bool? = expected.utf8.withContiguousStorageIfAvailable { bytes in
            var position = 0
            return matchSignature(bytes, &position) && position == bytes.count
        }
        return matched ?? (signature == expected)
    }

    private func matchSignature(_ bytes: UnsafeBufferPointer<UInt8>, _ position: inout Int) -> Bool {
        func take(_ code: UInt8) -> Bool {
            guard position < bytes.count, bytes[position] == code else { return false }
            position += 1
            return true
        }
        func take(_ text: String) -> Bool {
            for code in text.utf8 where !take(code) { return false }
            return true
        }
        switch self {
        case .array(let elementType, _): return take(UInt8(ascii: "a")) && take(elementType)
        case .dictionary(let keyType, let valueType, _):
            return take(UInt8(ascii: "a")) && take(UInt8(ascii: "{")) && take(keyType) && take(valueType) && take(UInt8(ascii: "}"))
        case .structure(let fields):
            guard take(UInt8(ascii: "(")) else { return false }
            for field in fields where !field.matchSignature(bytes, &position) { return false }
            return take(UInt8(ascii: ")"))
        default: return take(leafTypeCode!)
        }
    }
}

// MARK: - Convenience accessors

extension TypedValue {
    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var boolValue: Bool? { if case .boolean(let b) = self { return b }; return nil }
    public var uint32Value: UInt32? { if case .uint32(let v) = self { return v }; return nil }
    public var int64Value: Int64? { if case .int64(let v) = self { return v }; return nil }
    public var objectPathValue: String? { if case .objectPath(let s) = self { return s }; return nil }
    /// The content of a variant, or the value itself.
    public var unwrappedVariant: TypedValue { if case .variant(let inner) = self { return inner.unwrappedVariant }; return self }

    /// An `as` array's strings.
    public var stringArrayValue: [String]? {
        guard case .array(let elementType, let elements) = self, elementType == "s" else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for case .string(let string) in elements { strings.append(string) }
        return strings
    }

    /// Entries of an `a{sv}` as (key, content-of-variant) pairs in wire order.
    public var stringVariantEntries: [(String, TypedValue)]? {
        guard case .dictionary("s", "v", let entries) = self else { return nil }
        // Sized up front: compactMap would grow the array as it goes (every call's properties pass here).
        var pairs: [(String, TypedValue)] = []
        pairs.reserveCapacity(entries.count)
        for entry in entries {
            if let key = entry.key.stringValue, case .variant(let value) = entry.value { pairs.append((key, value)) }
        }
        return pairs
    }

    public static func stringArray(_ strings: [String]) -> TypedValue {
        .array(elementType: "s", strings.map(TypedValue.string))
    }

    /// An `a{sv}` built from (key, value) pairs; each value is wrapped in a variant.
    public static func stringVariantDictionary(_ pairs: [(String, TypedValue)]) -> TypedValue {
        .dictionary(keyType: "s", valueType: "v",
                    pairs.map { DictionaryEntry(key: .string($0.0), value: .variant($0.1)) })
    }
}
