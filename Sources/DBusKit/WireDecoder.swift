// SPDX-License-Identifier: Apache-2.0
import CDBus
import TypedValues

/// Reads a received message's arguments straight from its bytes (a copy made
/// by `dbus_message_marshal`), walking the signature once.
///
/// libdbus has already validated every message it hands out, so this only
/// has to be right, not suspicious; it still checks every bound and gives up
/// (nil) on anything unexpected, and `Message.arguments()` then reads with
/// libdbus's iterators. Those cost several times more per value, because each
/// step re-derives the type from the signature.
///
/// Not used for big-endian messages or Unix file descriptors (which libdbus
/// duplicates out of the message): both take the iterator path.
struct WireDecoder {
    private struct Malformed: Error {}

    private let body: UnsafeRawBufferPointer
    /// The signature being walked: the caller's, or a variant's inside `body`.
    private var signature: UnsafeRawBufferPointer
    private var position = 0
    private var signatureIndex = 0
    /// Where the elements of the arrays being read collect until each array
    /// is complete and copied out at its exact size: D-Bus gives an array's
    /// length in bytes, not elements, and growing each array as it is read
    /// reallocated it several times.
    private var pendingElements: [TypedValue] = []
    private var pendingEntries: [TypedValue.DictionaryEntry] = []

    private init(body: UnsafeRawBufferPointer, signature: UnsafeRawBufferPointer) {
        self.body = body
        self.signature = signature
    }

    /// The arguments of the little-endian message `bytes` (header and body)
    /// whose body signature is `signature`; nil to leave it to libdbus.
    static func arguments(ofMarshalled bytes: UnsafeRawBufferPointer, signature: String) -> [TypedValue]? {
        guard bytes.count >= 16, bytes[0] == UInt8(ascii: "l") else { return nil }
        let fieldsLength = Int(bytes.loadUnaligned(fromByteOffset: 12, as: UInt32.self).littleEndian)
        let bodyStart = (16 + fieldsLength + 7) & ~7
        let bodyLength = Int(bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian)
        guard bodyStart + bodyLength <= bytes.count else { return nil }
        var signature = signature
        return signature.withUTF8 { signatureBytes -> [TypedValue]? in
            guard !signatureBytes.contains(UInt8(ascii: "h")) else { return nil }
            var decoder = WireDecoder(body: UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<(bodyStart + bodyLength)]),
                                      signature: UnsafeRawBufferPointer(signatureBytes))
            decoder.pendingElements.reserveCapacity(8)
            decoder.pendingEntries.reserveCapacity(8)
            do {
                while decoder.signatureIndex < signatureBytes.count {
                    decoder.pendingElements.append(try decoder.value())
                }
            } catch {
                return nil
            }
            return decoder.pendingElements
        }
    }

    // MARK: Primitives

    private mutating func align(_ alignment: Int) throws(Malformed) {
        let aligned = (position + alignment - 1) & ~(alignment - 1)
        guard aligned <= body.count else { throw Malformed() }
        position = aligned
    }

    private mutating func fixed<T: FixedWidthInteger>(_: T.Type) throws(Malformed) -> T {
        try align(MemoryLayout<T>.size)
        guard position + MemoryLayout<T>.size <= body.count else { throw Malformed() }
        let value = T(littleEndian: body.loadUnaligned(fromByteOffset: position, as: T.self))
        position += MemoryLayout<T>.size
        return value
    }

    private mutating func text(length: Int) throws(Malformed) -> String {
        guard length >= 0, position + length < body.count else { throw Malformed() }
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: body[position..<(position + length)]), as: UTF8.self)
        position += length + 1  // and the NUL
        return value
    }

    private mutating func string() throws(Malformed) -> String {
        try text(length: Int(try fixed(UInt32.self)))
    }

    /// A signature value: its bytes, in place in the body.
    private mutating func signatureValue() throws(Malformed) -> UnsafeRawBufferPointer {
        guard position < body.count else { throw Malformed() }
        let length = Int(body[position])
        position += 1
        guard position + length < body.count else { throw Malformed() }
        let value = UnsafeRawBufferPointer(rebasing: body[position..<(position + length)])
        position += length + 1
        return value
    }

    /// The index just past the complete type starting at `index` in `codes`.
    private static func endOfCompleteType(_ codes: UnsafeRawBufferPointer, from index: Int) throws(Malformed) -> Int {
        guard index < codes.count else { throw Malformed() }
        switch codes[index] {
        case UInt8(ascii: "a"):
            return try endOfCompleteType(codes, from: index + 1)
        case UInt8(ascii: "("), UInt8(ascii: "{"):
            let close = codes[index] == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "}")
            var next = index + 1
            while next < codes.count && codes[next] != close {
                next = try endOfCompleteType(codes, from: next)
            }
            guard next < codes.count else { throw Malformed() }
            return next + 1
        default:
            return index + 1
        }
    }

    // MARK: Values

    /// The value of the complete type at `signatureIndex`, which it moves past.
    private mutating func value() throws(Malformed) -> TypedValue {
        guard signatureIndex < signature.count else { throw Malformed() }
        let code = signature[signatureIndex]
        signatureIndex += 1
        switch code {
        case UInt8(ascii: "y"):
            guard position < body.count else { throw Malformed() }
            defer { position += 1 }
            return .byte(body[position])
        case UInt8(ascii: "b"): return .boolean(try fixed(UInt32.self) != 0)
        case UInt8(ascii: "n"): return .int16(try fixed(Int16.self))
        case UInt8(ascii: "q"): return .uint16(try fixed(UInt16.self))
        case UInt8(ascii: "i"): return .int32(try fixed(Int32.self))
        case UInt8(ascii: "u"): return .uint32(try fixed(UInt32.self))
        case UInt8(ascii: "x"): return .int64(try fixed(Int64.self))
        case UInt8(ascii: "t"): return .uint64(try fixed(UInt64.self))
        case UInt8(ascii: "d"): return .double(Double(bitPattern: try fixed(UInt64.self)))
        case UInt8(ascii: "s"): return .string(try string())
        case UInt8(ascii: "o"): return .objectPath(try string())
        case UInt8(ascii: "g"): return .signature(String(decoding: try signatureValue(), as: UTF8.self))
        case UInt8(ascii: "v"):
            // The content is read with the variant's own signature, then the walk goes on with ours.
            let inner = try signatureValue()
            let (outer, outerIndex) = (signature, signatureIndex)
            (signature, signatureIndex) = (inner, 0)
            let value = try value()
            guard signatureIndex == inner.count else { throw Malformed() }
            (signature, signatureIndex) = (outer, outerIndex)
            return .variant(value)
        case UInt8(ascii: "("):
            try align(8)
            let start = pendingElements.count
            while signatureIndex < signature.count && signature[signatureIndex] != UInt8(ascii: ")") {
                pendingElements.append(try value())
            }
            guard signatureIndex < signature.count else { throw Malformed() }
            signatureIndex += 1
            return .structure(takePendingElements(from: start))
        case UInt8(ascii: "a"):
            return try array()
        default:
            throw Malformed()
        }
    }

    private mutating func array() throws(Malformed) -> TypedValue {
        let length = Int(try fixed(UInt32.self))
        let elementStart = signatureIndex
        let elementEnd = try Self.endOfCompleteType(signature, from: elementStart)
        let elementCodes = signature[elementStart..<elementEnd]
        let isDictionary = elementCodes.first == UInt8(ascii: "{")
        try align(isDictionary ? 8 : TypedValue.alignment(ofTypeCode: elementCodes.first))
        let end = position + length
        guard end <= body.count else { throw Malformed() }
        if isDictionary {
            let start = pendingEntries.count
            while position < end {
                try align(8)
                signatureIndex = elementStart + 1
                let key = try value()
                let entryValue = try value()
                pendingEntries.append(.init(key: key, value: entryValue))
            }
            guard position == end else { throw Malformed() }
            let entries = pendingEntries.moveOut(from: start, leaving: Self.noEntry)
            signatureIndex = elementEnd
            let inner = signature[(elementStart + 1)..<(elementEnd - 1)]
            return .dictionary(keyType: String(decoding: inner.prefix(1), as: UTF8.self),
                               valueType: String(decoding: inner.dropFirst(), as: UTF8.self), entries)
        }
        if elementEnd - elementStart == 1 && elementCodes.first == UInt8(ascii: "y") {
            // One byte of memory per byte of data, not an enum per byte.
            let content = [UInt8](UnsafeRawBufferPointer(rebasing: body[position..<end]))
            position = end
            signatureIndex = elementEnd
            return .bytes(content)
        }
        let start = pendingElements.count
        while position < end {
            signatureIndex = elementStart
            pendingElements.append(try value())
        }
        guard position == end else { throw Malformed() }
        signatureIndex = elementEnd
        return .array(elementType: String(decoding: elementCodes, as: UTF8.self), takePendingElements(from: start))
    }

    /// The elements collected since `start`, in an array of their own.
    private mutating func takePendingElements(from start: Int) -> [TypedValue] {
        pendingElements.moveOut(from: start, leaving: .byte(0))
    }

    private static let noEntry = TypedValue.DictionaryEntry(key: .byte(0), value: .byte(0))
}

extension Array {
    /// Moves the elements from `start` on into an array of their own and
    /// removes them here. Moved, not copied: a copy would retain every
    /// string and container in them once more, and removing the originals
    /// release them again. `filler`, a value that holds no reference, takes
    /// their slots for the moment between.
    mutating func moveOut(from start: Int, leaving filler: Element) -> [Element] {
        let count = self.count - start
        guard count > 0 else { return [] }
        let moved = withUnsafeMutableBufferPointer { pending in
            let source = pending.baseAddress! + start
            return [Element](unsafeUninitializedCapacity: count) { buffer, initialized in
                buffer.baseAddress!.moveInitialize(from: source, count: count)
                source.initialize(repeating: filler, count: count)
                initialized = count
            }
        }
        removeLast(count)
        return moved
    }
}
