// SPDX-License-Identifier: Apache-2.0

/// A value that ``TypedValueCodec`` refused to encode or decode.
public struct CodecError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The byte offset in the input where decoding stopped (0 when encoding).
    public let offset: Int
    /// What was wrong, in words.
    public let reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "invalid stored value at byte \(offset): \(reason)" }
}

/// A lossless, self-describing binary form of ``TypedValue`` for storage.
///
/// Saved activities must give back `user-info` with exactly the types and
/// values they were given (an `int16` stays an `int16`, an empty `a(ii)` keeps
/// its element type, a NaN keeps its payload), which neither JSON nor the
/// SQLite value types can do. D-Bus marshalling could, but would tie storage
/// to libdbus; this format is tiny and has no dependency.
///
/// Layout: one format-version byte (`1`), then one value. A value is its
/// D-Bus type code (`y b n q i u x t d s o g h a ( v`, and `{` for a
/// dictionary) followed by:
/// - fixed-size numbers in little-endian order (`d` as its IEEE-754 bit pattern,
///   so NaN payloads and -0 survive; `b` as one byte 0 or 1);
/// - `s`, `o`, `g`: a length (unsigned LEB128) and that many bytes of UTF-8;
/// - `a`: the element type (as a string), a count, then the elements (an
///   `ay` too, as `y` and its byte per element, in either spelling of
///   ``TypedValue``; it decodes to the compact ``TypedValue/bytes(_:)``);
/// - `{`: the key type, the value type, a count, then key, value, key, value…;
/// - `(`: a count, then the fields; `v`: the inner value.
///
/// Decoding is bounds-checked everywhere, validates UTF-8, refuses trailing
/// bytes and nesting deeper than ``maximumDepth``: a damaged blob throws a
/// ``CodecError`` and never crashes or allocates more than its own size.
///
/// ```swift
/// let bytes = try TypedValueCodec.encode(.variant(.int16(-3)))
/// let value = try TypedValueCodec.decode(bytes) // .variant(.int16(-3))
/// ```
public enum TypedValueCodec {
    /// The version byte written first; decoding refuses any other.
    public static let formatVersion: UInt8 = 1
    /// The deepest nesting of containers (arrays, dictionaries, structures,
    /// variants) accepted, as in D-Bus (64 levels).
    public static let maximumDepth = 64

    /// Encodes `value`; throws only when it nests deeper than ``maximumDepth``.
    public static func encode(_ value: TypedValue) throws(CodecError) -> [UInt8] {
        var writer = Writer()
        // A saved activity's properties are a few hundred bytes: growing from
        // empty reallocated and copied the buffer about ten times per Donate.
        writer.bytes.reserveCapacity(1024)
        writer.bytes.append(formatVersion)
        try writer.write(value, depth: 0)
        return writer.bytes
    }

    /// Decodes bytes written by ``encode(_:)``.
    public static func decode(_ bytes: [UInt8]) throws(CodecError) -> TypedValue {
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(CodecError) in try decode(buffer) } }
        return try result.get()
    }

    /// Decodes from raw memory (a SQLite column blob) without copying it first.
    public static func decode(_ buffer: UnsafeRawBufferPointer) throws(CodecError) -> TypedValue {
        var reader = Reader(buffer: buffer)
        let version = try reader.byte()
        guard version == formatVersion else {
            throw CodecError(offset: 0, reason: "unknown format version \(version)")
        }
        let value = try reader.value(depth: 0)
        guard reader.offset == buffer.count else {
            throw CodecError(offset: reader.offset, reason: "\(buffer.count - reader.offset) trailing bytes")
        }
        return value
    }

    // MARK: - Writing

    private struct Writer {
        var bytes: [UInt8] = []

        mutating func fixed<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func varint(_ value: Int) {
            var v = UInt64(value)
            while v >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
                v >>= 7
            }
            bytes.append(UInt8(v))
        }

        mutating func string(_ s: String) {
            varint(s.utf8.count)
            bytes.append(contentsOf: s.utf8)
        }

        mutating func tag(_ scalar: Unicode.Scalar) { bytes.append(UInt8(ascii: scalar)) }

        mutating func write(_ value: TypedValue, depth: Int) throws(CodecError) {
            switch value {
            case .byte(let v): tag("y"); bytes.append(v)
            case .boolean(let v): tag("b"); bytes.append(v ? 1 : 0)
            case .int16(let v): tag("n"); fixed(v)
            case .uint16(let v): tag("q"); fixed(v)
            case .int32(let v): tag("i"); fixed(v)
            case .uint32(let v): tag("u"); fixed(v)
            case .int64(let v): tag("x"); fixed(v)
            case .uint64(let v): tag("t"); fixed(v)
            case .double(let v): tag("d"); fixed(v.bitPattern)
            case .string(let s): tag("s"); string(s)
            case .objectPath(let s): tag("o"); string(s)
            case .signature(let s): tag("g"); string(s)
            case .unixFD(let v): tag("h"); fixed(v)
            case .array(let elementType, let elements):
                try checkDepth(depth)
                tag("a"); string(elementType); varint(elements.count)
                for element in elements { try write(element, depth: depth + 1) }
            case .bytes(let content):
                // The layout of an `a` of `y` values, so that blobs stay readable by every version.
                try checkDepth(depth)
                tag("a"); string("y"); varint(content.count)
                bytes.reserveCapacity(bytes.count + 2 * content.count)
                for byte in content { tag("y"); bytes.append(byte) }
            case .dictionary(let keyType, let valueType, let entries):
                try checkDepth(depth)
                tag("{"); string(keyType); string(valueType); varint(entries.count)
                for entry in entries {
                    try write(entry.key, depth: depth + 1)
                    try write(entry.value, depth: depth + 1)
                }
            case .structure(let fields):
                try checkDepth(depth)
                tag("("); varint(fields.count)
                for field in fields { try write(field, depth: depth + 1) }
            case .variant(let inner):
                try checkDepth(depth)
                tag("v")
                try write(inner, depth: depth + 1)
            }
        }

        /// `depth` is the number of containers around the one being entered.
        func checkDepth(_ depth: Int) throws(CodecError) {
            guard depth < TypedValueCodec.maximumDepth else {
                throw CodecError(offset: 0, reason: "nesting deeper than \(TypedValueCodec.maximumDepth) levels")
            }
        }
    }

    // MARK: - Reading

    private struct Reader {
        let buffer: UnsafeRawBufferPointer
        var offset = 0

        var remaining: Int { buffer.count - offset }

        func fail(_ reason: String) -> CodecError { CodecError(offset: offset, reason: reason) }

        mutating func byte() throws(CodecError) -> UInt8 {
            guard offset < buffer.count else { throw fail("unexpected end of data") }
            defer { offset += 1 }
            return buffer[offset]
        }

        mutating func fixed<T: FixedWidthInteger>(_: T.Type) throws(CodecError) -> T {
            let size = MemoryLayout<T>.size
            guard remaining >= size else { throw fail("unexpected end of data") }
            var value = T.zero
            withUnsafeMutableBytes(of: &value) { destination in
                destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + size]))
            }
            offset += size
            return T(littleEndian: value)
        }

        /// An unsigned LEB128 length or count; never more than the bytes left,
        /// since every element takes at least one byte (this is what keeps a
        /// forged count from allocating gigabytes).
        mutating func length() throws(CodecError) -> Int {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try byte()
                guard shift < 63 || (shift == 63 && b <= 1) else { throw fail("length overflows") }
                result |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { break }
                shift += 7
            }
            guard result <= UInt64(remaining) else { throw fail("length \(result) exceeds the \(remaining) bytes left") }
            return Int(result)
        }

        mutating func string() throws(CodecError) -> String {
            let count = try length()
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
            guard let s = String(validating: bytes.bindMemory(to: UInt8.self), as: UTF8.self) else {
                throw fail("string is not valid UTF-8")
            }
            offset += count
            return s
        }

        mutating func value(depth: Int) throws(CodecError) -> TypedValue {
            let start = offset
            let code = try byte()
            switch Unicode.Scalar(code) {
            case "y": return .byte(try byte())
            case "b":
                switch try byte() {
                case 0: return .boolean(false)
                case 1: return .boolean(true)
                default: offset -= 1; throw fail("boolean is neither 0 nor 1")
                }
            case "n": return .int16(try fixed(Int16.self))
            case "q": return .uint16(try fixed(UInt16.self))
            case "i": return .int32(try fixed(Int32.self))
            case "u": return .uint32(try fixed(UInt32.self))
            case "x": return .int64(try fixed(Int64.self))
            case "t": return .uint64(try fixed(UInt64.self))
            case "d": return .double(Double(bitPattern: try fixed(UInt64.self)))
            case "s": return .string(try string())
            case "o": return .objectPath(try string())
            case "g": return .signature(try string())
            case "h": return .unixFD(try fixed(Int32.self))
            case "a":
                try checkDepth(depth, at: start)
                let elementType = try string()
                let count = try length()
                if elementType == "y" { return .bytes(try byteElements(count)) }
                var elements: [TypedValue] = []
                elements.reserveCapacity(count)
                for _ in 0..<count { elements.append(try value(depth: depth + 1)) }
                return .array(elementType: elementType, elements)
            case "{":
                try checkDepth(depth, at: start)
                let keyType = try string()
                let valueType = try string()
                let count = try length()
                var entries: [TypedValue.DictionaryEntry] = []
                entries.reserveCapacity(count / 2)
                for _ in 0..<count {
                    let key = try value(depth: depth + 1)
                    entries.append(.init(key: key, value: try value(depth: depth + 1)))
                }
                return .dictionary(keyType: keyType, valueType: valueType, entries)
            case "(":
                try checkDepth(depth, at: start)
                let count = try length()
                var fields: [TypedValue] = []
                fields.reserveCapacity(count)
                for _ in 0..<count { fields.append(try value(depth: depth + 1)) }
                return .structure(fields)
            case "v":
                try checkDepth(depth, at: start)
                return .variant(try value(depth: depth + 1))
            default:
                offset = start
                throw fail("unknown type code \(code)")
            }
        }

        /// `count` elements of an `ay`, each a `y` tag and its byte.
        mutating func byteElements(_ count: Int) throws(CodecError) -> [UInt8] {
            var content: [UInt8] = []
            content.reserveCapacity(count)
            for _ in 0..<count {
                guard try byte() == UInt8(ascii: "y") else {
                    offset -= 1
                    throw fail("an element of an array of type y is not a y")
                }
                content.append(try byte())
            }
            return content
        }

        func checkDepth(_ depth: Int, at start: Int) throws(CodecError) {
            guard depth < TypedValueCodec.maximumDepth else {
                throw CodecError(offset: start, reason: "nesting deeper than \(TypedValueCodec.maximumDepth) levels")
            }
        }
    }
}
