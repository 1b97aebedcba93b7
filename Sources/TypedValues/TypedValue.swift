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
///
/// An `ay` arrives from the decoders as ``bytes(_:)``, one byte of memory per
/// byte of data; as an ``array(elementType:_:)`` of ``byte(_:)`` it would take
/// a whole enum per byte. Both spellings are the same value: they compare
/// equal, have the signature `ay`, and marshal and store identically.
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
    /// An `ay`, held compactly; equal to the `.array(elementType: "y", …)` of the same bytes.
    case bytes([UInt8])
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
        case .bytes: return "ay"
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
        case (.bytes, _), (_, .bytes): return self == other
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
        case .bytes: return typeCodes.contains(UInt8(ascii: "y"))
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
        case .array, .bytes, .dictionary, .structure: nil
        }
    }

    /// `signature.utf8.count`, without building the signature.
    public var signatureLength: Int {
        switch self {
        case .array(let elementType, _): 1 + elementType.utf8.count
        case .bytes: 2
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
        case .bytes: return take(UInt8(ascii: "a")) && take(UInt8(ascii: "y"))
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

// MARK: - Equality across the two spellings of `ay`

extension TypedValue {
    public static func == (lhs: TypedValue, rhs: TypedValue) -> Bool {
        switch (lhs, rhs) {
        case (.byte(let a), .byte(let b)): return a == b
        case (.boolean(let a), .boolean(let b)): return a == b
        case (.int16(let a), .int16(let b)): return a == b
        case (.uint16(let a), .uint16(let b)): return a == b
        case (.int32(let a), .int32(let b)): return a == b
        case (.uint32(let a), .uint32(let b)): return a == b
        case (.int64(let a), .int64(let b)): return a == b
        case (.uint64(let a), .uint64(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.objectPath(let a), .objectPath(let b)): return a == b
        case (.signature(let a), .signature(let b)): return a == b
        case (.unixFD(let a), .unixFD(let b)): return a == b
        case (.array(let ta, let a), .array(let tb, let b)): return ta == tb && a == b
        case (.bytes(let a), .bytes(let b)): return a == b
        case (.bytes(let a), .array(let type, let b)), (.array(let type, let b), .bytes(let a)):
            return type == "y" && a.count == b.count && zip(a, b).allSatisfy { byte, element in
                if case .byte(let value) = element { return value == byte }
                return false
            }
        case (.dictionary(let ka, let va, let a), .dictionary(let kb, let vb, let b)): return ka == kb && va == vb && a == b
        case (.structure(let a), .structure(let b)): return a == b
        case (.variant(let a), .variant(let b)): return a == b
        default: return false
        }
    }

    /// The elements of an array, with an ``bytes(_:)`` spelled out one
    /// ``byte(_:)`` each (for code that walks any array; it costs the
    /// expanded size, so large byte arrays are better matched as `.bytes`).
    public var arrayElements: [TypedValue]? {
        switch self {
        case .array(_, let elements): return elements
        case .bytes(let bytes): return bytes.map(TypedValue.byte)
        default: return nil
        }
    }

    /// The content of an `ay` in either spelling.
    public var bytesValue: [UInt8]? {
        switch self {
        case .bytes(let bytes): return bytes
        case .array("y", let elements):
            var bytes: [UInt8] = []
            bytes.reserveCapacity(elements.count)
            for case .byte(let byte) in elements { bytes.append(byte) }
            return bytes.count == elements.count ? bytes : nil
        default: return nil
        }
    }

    /// An approximation of the memory this value holds, payload and
    /// bookkeeping (enum slots, array and string buffers, variant boxes): what
    /// the daemon's memory shares count, since the wire size of a value says
    /// little about it (a 4-byte empty `ay` inside an `aay` still takes an
    /// enum slot and an array buffer here).
    public var heldBytes: Int { MemoryLayout<TypedValue>.stride + heldOutOfLine }

    /// Heap buffers, on 64-bit Linux: an array or a string longer than 15
    /// UTF-8 bytes has a 32-byte header; a variant's box has 16 bytes of
    /// header. Allocator rounding is covered by rounding up to 16 bytes.
    private var heldOutOfLine: Int {
        func heap(_ bytes: Int) -> Int { (32 + bytes + 15) / 16 * 16 }
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s):
            let count = s.utf8.count
            return count <= 15 ? 0 : heap(count + 1)
        case .array(let elementType, let elements):
            var total = elementType.utf8.count <= 15 ? 0 : heap(elementType.utf8.count)
            if !elements.isEmpty { total += heap(elements.count * MemoryLayout<TypedValue>.stride) }
            for element in elements { total += element.heldOutOfLine }
            return total
        case .bytes(let bytes): return bytes.isEmpty ? 0 : heap(bytes.count)
        case .dictionary(let keyType, let valueType, let entries):
            var total = (keyType.utf8.count <= 15 ? 0 : heap(keyType.utf8.count)) + (valueType.utf8.count <= 15 ? 0 : heap(valueType.utf8.count))
            if !entries.isEmpty { total += heap(entries.count * MemoryLayout<DictionaryEntry>.stride) }
            for entry in entries { total += entry.key.heldOutOfLine + entry.value.heldOutOfLine }
            return total
        case .structure(let fields):
            var total = fields.isEmpty ? 0 : heap(fields.count * MemoryLayout<TypedValue>.stride)
            for field in fields { total += field.heldOutOfLine }
            return total
        case .variant(let inner): return (16 + MemoryLayout<TypedValue>.stride + 15) / 16 * 16 + inner.heldOutOfLine
        default: return 0
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
