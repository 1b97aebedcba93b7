// SPDX-License-Identifier: Apache-2.0
import CDBus
import TypedValues

/// Builds whole messages in the D-Bus wire format (little-endian) and hands
/// them to libdbus with `dbus_message_demarshal`, which validates them like
/// any message read from a socket.
///
/// Why not `dbus_message_iter_append_*`: libdbus rewrites the message header's
/// SIGNATURE field after every top-level argument, re-walking the header with
/// its generic type reader each time. A `PropertiesChanged` signal costs
/// ~60 000 instructions that way and ~10 000 built here and validated by
/// `dbus_message_demarshal`; replies, signals and the calls to apps are most
/// of what the daemon sends.
///
/// Values it cannot carry (Unix file descriptors, which travel beside the
/// bytes) and anything `dbus_message_demarshal` refuses are left to the
/// iterator path, so callers see libdbus's own errors exactly as before.
struct WireEncoder: ~Copyable {
    /// Why a message is left to the iterator path.
    struct Refusal: Error {}

    /// A buffer of its own rather than `[UInt8]`: every `Array.append` checks
    /// capacity and uniqueness, and an `InterfacesAdded` signal is a few
    /// hundred appends.
    private var start: UnsafeMutableRawPointer
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        start = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
    }

    deinit { start.deallocate() }

    /// The bytes written so far (valid while the encoder lives and is not changed).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: start, count: count))
    }

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(toHold: count + extra) }
    }

    private mutating func grow(toHold needed: Int) {
        var grown = capacity * 2
        while grown < needed { grown *= 2 }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 8)
        buffer.copyMemory(from: start, byteCount: count)
        start.deallocate()
        start = buffer
        capacity = grown
    }

    /// Zero bytes up to the next multiple of `alignment` (1, 2, 4 or 8;
    /// offsets count from the start of the buffer, which starts 8-aligned in
    /// the message).
    @inline(__always)
    mutating func pad(to alignment: Int) {
        let remainder = count & (alignment - 1)
        guard remainder != 0 else { return }
        let padding = alignment - remainder
        reserve(padding)
        (start + count).initializeMemory(as: UInt8.self, repeating: 0, count: padding)
        count += padding
    }

    @inline(__always)
    mutating func appendByte(_ value: UInt8) {
        reserve(1)
        start.storeBytes(of: value, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    mutating func append<T: FixedWidthInteger>(_ value: T) {
        pad(to: MemoryLayout<T>.size)
        reserve(MemoryLayout<T>.size)
        start.storeBytes(of: value.littleEndian, toByteOffset: count, as: T.self)
        count += MemoryLayout<T>.size
    }

    private mutating func append(_ raw: UnsafeRawBufferPointer) {
        guard let base = raw.baseAddress, raw.count > 0 else { return }
        reserve(raw.count)
        (start + count).copyMemory(from: base, byteCount: raw.count)
        count += raw.count
    }

    private mutating func appendUTF8(_ value: String) {
        let copied: Void? = value.utf8.withContiguousStorageIfAvailable { append(UnsafeRawBufferPointer($0)) }
        if copied == nil { Array(value.utf8).withUnsafeBytes { append($0) } }
    }

    /// A string, object path: u32 length, the bytes, NUL.
    mutating func appendString(_ value: String) throws(Refusal) {
        let length = value.utf8.count
        guard length < 1 << 27 else { throw Refusal() }
        append(UInt32(length))
        appendUTF8(value)
        appendByte(0)
    }

    /// A signature: one length byte, the characters, NUL.
    mutating func appendSignature(_ value: String) throws(Refusal) {
        let length = value.utf8.count
        guard length <= 255 else { throw Refusal() }
        appendByte(UInt8(length))
        appendUTF8(value)
        appendByte(0)
    }

    /// Overwrites the u32 at `offset` (a length known only afterwards).
    mutating func patch(_ value: UInt32, at offset: Int) {
        start.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt32.self)
    }

    private mutating func patchByte(_ value: UInt8, at offset: Int) {
        start.storeBytes(of: value, toByteOffset: offset, as: UInt8.self)
    }

    /// An array: u32 byte length (patched by `endArray`), padding to the
    /// element alignment (not counted), then the elements.
    private mutating func beginArray(elementAlignment: Int) -> (lengthOffset: Int, elementsStart: Int) {
        append(UInt32(0))
        let lengthOffset = count - 4
        pad(to: elementAlignment)
        return (lengthOffset, count)
    }

    private mutating func endArray(_ array: (lengthOffset: Int, elementsStart: Int)) throws(Refusal) {
        let length = count - array.elementsStart
        guard length < 1 << 26 else { throw Refusal() }
        patch(UInt32(length), at: array.lengthOffset)
    }

    mutating func append(_ value: TypedValue) throws(Refusal) {
        switch value {
        case .byte(let v): appendByte(v)
        case .boolean(let v): append(UInt32(v ? 1 : 0))
        case .int16(let v): append(v)
        case .uint16(let v): append(v)
        case .int32(let v): append(v)
        case .uint32(let v): append(v)
        case .int64(let v): append(v)
        case .uint64(let v): append(v)
        case .double(let v): append(v.bitPattern)
        case .string(let v), .objectPath(let v): try appendString(v)
        case .signature(let v): try appendSignature(v)
        case .unixFD: throw Refusal()
        case .variant(let inner):
            let lengthOffset = count
            appendByte(0)
            appendSignature(of: inner)
            let length = count - lengthOffset - 1
            guard length <= 255 else { throw Refusal() }
            patchByte(UInt8(length), at: lengthOffset)
            appendByte(0)
            try append(inner)
        case .structure(let fields):
            pad(to: 8)
            for field in fields { try append(field) }
        case .array(let elementType, let elements):
            let array = beginArray(elementAlignment: Self.alignment(ofType: elementType))
            for element in elements { try append(element) }
            try endArray(array)
        case .bytes(let content):
            let array = beginArray(elementAlignment: 1)
            content.withUnsafeBytes { append($0) }
            try endArray(array)
        case .dictionary(_, _, let entries):
            let array = beginArray(elementAlignment: 8)
            for entry in entries {
                pad(to: 8)
                try append(entry.key)
                try append(entry.value)
            }
            try endArray(array)
        }
    }

    /// Writes `value`'s type signature (`TypedValue.signature`) without
    /// building intermediate strings.
    mutating func appendSignature(of value: TypedValue) {
        switch value {
        case .byte: appendByte(UInt8(ascii: "y"))
        case .boolean: appendByte(UInt8(ascii: "b"))
        case .int16: appendByte(UInt8(ascii: "n"))
        case .uint16: appendByte(UInt8(ascii: "q"))
        case .int32: appendByte(UInt8(ascii: "i"))
        case .uint32: appendByte(UInt8(ascii: "u"))
        case .int64: appendByte(UInt8(ascii: "x"))
        case .uint64: appendByte(UInt8(ascii: "t"))
        case .double: appendByte(UInt8(ascii: "d"))
        case .string: appendByte(UInt8(ascii: "s"))
        case .objectPath: appendByte(UInt8(ascii: "o"))
        case .signature: appendByte(UInt8(ascii: "g"))
        case .unixFD: appendByte(UInt8(ascii: "h"))
        case .variant: appendByte(UInt8(ascii: "v"))
        case .array(let elementType, _):
            appendByte(UInt8(ascii: "a"))
            appendUTF8(elementType)
        case .bytes:
            appendByte(UInt8(ascii: "a"))
            appendByte(UInt8(ascii: "y"))
        case .dictionary(let keyType, let valueType, _):
            appendByte(UInt8(ascii: "a"))
            appendByte(UInt8(ascii: "{"))
            appendUTF8(keyType)
            appendUTF8(valueType)
            appendByte(UInt8(ascii: "}"))
        case .structure(let fields):
            appendByte(UInt8(ascii: "("))
            for field in fields { appendSignature(of: field) }
            appendByte(UInt8(ascii: ")"))
        }
    }

    /// A header field: padding to 8, its code, then a variant of `typeCode`.
    mutating func appendHeaderField(_ code: UInt8, typeCode: UInt8) {
        pad(to: 8)
        appendByte(code)
        appendByte(1)
        appendByte(typeCode)
        appendByte(0)
    }

    /// A string or object path header field, when there is a value.
    mutating func appendHeaderField(_ code: UInt8, typeCode: UInt8, string value: String?) throws(Refusal) {
        guard let value else { return }
        appendHeaderField(code, typeCode: typeCode)
        try appendString(value)
    }

    static func alignment(ofType signature: String) -> Int {
        TypedValue.alignment(ofTypeCode: signature.utf8.first)
    }
}

/// The parts of a message header this encoder writes.
struct WireHeader {
    enum MessageType: UInt8 {
        case methodCall = 1, methodReturn = 2, error = 3, signal = 4
    }

    var type: MessageType
    var expectsReply: Bool
    var allowsAutoStart = true
    var path: String?
    var interface: String?
    var member: String?
    var errorName: String?
    var replySerial: UInt32?
    var destination: String?

    /// One basic value costs libdbus a single header rewrite, less than
    /// `dbus_message_demarshal`'s fixed cost (its loader and a full validation).
    static func isCheaperThroughIterators(_ arguments: [TypedValue]) -> Bool {
        guard arguments.count == 1 else { return false }
        switch arguments[0] {
        case .array, .bytes, .dictionary, .structure, .variant: return false
        default: return true
        }
    }

    /// The complete message, or nil when the encoder cannot build it. Its
    /// serial is 0, so libdbus numbers it when it is sent.
    func message(arguments: [TypedValue]) -> Message? {
        var signature = WireEncoder(capacity: 64)
        for argument in arguments { signature.appendSignature(of: argument) }
        guard signature.count <= 255 else { return nil }
        do {
            // One buffer: the header, then the body right behind it. The body
            // starts 8-aligned, so aligning to the buffer aligns to the body.
            var message = try header(signature: signature)
            let bodyStart = message.count
            for argument in arguments { try message.append(argument) }
            message.patch(UInt32(message.count - bodyStart), at: Self.bodyLengthOffset)
            return message.withBytes { Self.demarshal($0) }
        } catch {
            return nil
        }
    }

    /// Where the header keeps the body's length.
    private static let bodyLengthOffset = 4

    /// The header up to and including the padding before the body; its body
    /// length is patched once the body is written.
    private func header(signature: borrowing WireEncoder) throws(WireEncoder.Refusal) -> WireEncoder {
        var message = WireEncoder(capacity: 512)
        message.appendByte(UInt8(ascii: "l"))
        message.appendByte(type.rawValue)
        var flags: UInt8 = 0
        if !expectsReply { flags |= 0x1 }
        if !allowsAutoStart { flags |= 0x2 }
        message.appendByte(flags)
        message.appendByte(1)  // protocol version
        message.append(UInt32(0))  // the body's length, patched afterwards
        // Validation refuses serial 0; the real one is set when it is sent.
        message.append(UInt32(1))
        // Header fields: a(yv), in the order libdbus itself writes them.
        message.append(UInt32(0))
        let lengthOffset = message.count - 4
        message.pad(to: 8)
        let fieldsStart = message.count
        try message.appendHeaderField(1, typeCode: UInt8(ascii: "o"), string: path)
        try message.appendHeaderField(6, typeCode: UInt8(ascii: "s"), string: destination)
        try message.appendHeaderField(2, typeCode: UInt8(ascii: "s"), string: interface)
        try message.appendHeaderField(3, typeCode: UInt8(ascii: "s"), string: member)
        try message.appendHeaderField(4, typeCode: UInt8(ascii: "s"), string: errorName)
        if let replySerial {
            message.appendHeaderField(5, typeCode: UInt8(ascii: "u"))
            message.append(replySerial)
        }
        if signature.count > 0 {
            message.appendHeaderField(8, typeCode: UInt8(ascii: "g"))
            message.appendByte(UInt8(signature.count))
            signature.withBytes { for byte in $0 { message.appendByte(byte) } }
            message.appendByte(0)
        }
        message.patch(UInt32(message.count - fieldsStart), at: lengthOffset)
        message.pad(to: 8)
        return message
    }

    private static func demarshal(_ raw: UnsafeRawBufferPointer) -> Message? {
        var error = DBusError()
        dbus_error_init(&error)
        let pointer = dbus_message_demarshal(raw.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(raw.count), &error)
        guard let pointer else {
            dbus_error_free(&error)
            return nil
        }
        dbus_message_set_serial(pointer, 0)
        return Message(takingOwnershipOf: pointer)
    }
}
