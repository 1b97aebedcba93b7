// SPDX-License-Identifier: Apache-2.0

/// D-Bus type signatures: splitting into single complete types and measuring
/// marshalled sizes, without any transport.
public enum Signature {
    /// Splits a signature into its single complete types, or `nil` when it is malformed.
    ///
    /// ```swift
    /// Signature.completeTypes(of: "sa{sv}") // ["s", "a{sv}"]
    /// ```
    public static func completeTypes(of signature: String) -> [String]? {
        let characters = Array(signature.utf8)
        var index = 0
        var types: [String] = []
        while index < characters.count {
            let start = index
            guard skipCompleteType(characters, &index, depth: 0) else { return nil }
            types.append(String(decoding: characters[start..<index], as: UTF8.self))
        }
        return types
    }

    /// Whether `signature` is exactly one complete type.
    public static func isSingleCompleteType(_ signature: String) -> Bool {
        completeTypes(of: signature)?.count == 1
    }

    private static let basicCodes = Set("ybnqiuxtdsogh".utf8)

    private static func skipCompleteType(_ c: [UInt8], _ i: inout Int, depth: Int) -> Bool {
        guard i < c.count, depth < 64 else { return false }
        let code = c[i]
        i += 1
        if basicCodes.contains(code) || code == UInt8(ascii: "v") { return true }
        switch code {
        case UInt8(ascii: "a"):
            if i < c.count, c[i] == UInt8(ascii: "{") {
                i += 1
                guard i < c.count, basicCodes.contains(c[i]) else { return false }
                i += 1
                guard skipCompleteType(c, &i, depth: depth + 1) else { return false }
                guard i < c.count, c[i] == UInt8(ascii: "}") else { return false }
                i += 1
                return true
            }
            return skipCompleteType(c, &i, depth: depth + 1)
        case UInt8(ascii: "("):
            var fields = 0
            while i < c.count, c[i] != UInt8(ascii: ")") {
                guard skipCompleteType(c, &i, depth: depth + 1) else { return false }
                fields += 1
            }
            guard i < c.count, fields > 0 else { return false }
            i += 1
            return true
        default:
            return false
        }
    }
}

extension TypedValue {
    /// The number of bytes libdbus writes for this value when it starts at
    /// `offset` in a message body (alignment padding included).
    public func marshalledEnd(startingAt offset: Int) -> Int {
        func align(_ n: Int, _ a: Int) -> Int { (n + a - 1) / a * a }
        switch self {
        case .byte: return offset + 1
        case .boolean, .int32, .uint32, .unixFD: return align(offset, 4) + 4
        case .int16, .uint16: return align(offset, 2) + 2
        case .int64, .uint64, .double: return align(offset, 8) + 8
        case .string(let s), .objectPath(let s): return align(offset, 4) + 4 + s.utf8.count + 1
        case .signature(let s): return offset + 1 + s.utf8.count + 1
        case .variant(let inner):
            let afterSignature = offset + 1 + inner.signatureLength + 1
            return inner.marshalledEnd(startingAt: afterSignature)
        case .structure(let fields):
            var position = align(offset, 8)
            for field in fields { position = field.marshalledEnd(startingAt: position) }
            return position
        case .bytes(let bytes): return align(offset, 4) + 4 + bytes.count
        case .array(let elementType, let elements):
            var position = align(align(offset, 4) + 4, TypedValue.alignment(ofType: elementType))
            for element in elements { position = element.marshalledEnd(startingAt: position) }
            return position
        case .dictionary(_, _, let entries):
            var position = align(align(offset, 4) + 4, 8)
            for entry in entries {
                position = align(position, 8)
                position = entry.key.marshalledEnd(startingAt: position)
                position = entry.value.marshalledEnd(startingAt: position)
            }
            return position
        }
    }

    /// The size of this value marshalled alone at the start of a message body.
    public var marshalledSize: Int { marshalledEnd(startingAt: 0) }

    /// The ``marshalledSize`` of `.stringVariantDictionary(entries)`, counted
    /// without building that value: activities keep their user-info as a list
    /// of pairs, and its size is checked on every Donate.
    public static func stringVariantDictionarySize(_ entries: [(key: String, value: TypedValue)]) -> Int {
        func align(_ n: Int, _ a: Int) -> Int { (n + a - 1) / a * a }
        var position = 8
        for (key, value) in entries {
            position = align(align(position, 8), 4) + 4 + key.utf8.count + 1
            position = value.marshalledEnd(startingAt: position + 1 + value.signatureLength + 1)
        }
        return position
    }

    /// By the first byte: `Character` would run grapheme breaking for every array.
    static func alignment(ofType signature: String) -> Int {
        alignment(ofTypeCode: signature.utf8.first)
    }

    /// The alignment of the type whose signature starts with `code`.
    public static func alignment(ofTypeCode code: UInt8?) -> Int {
        switch code {
        case UInt8(ascii: "n"), UInt8(ascii: "q"): return 2
        case UInt8(ascii: "b"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "h"),
             UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "a"): return 4
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): return 8
        default: return 1
        }
    }
}
