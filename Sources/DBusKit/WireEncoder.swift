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
struct WireEncoder {
    /// Why a message is left to the iterator path.
    struct Refusal: Error {}

    private(set) var bytes: [UInt8]

    init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Zero bytes up to the next multiple of `alignment` (offsets count from
    /// the start of the buffer, which starts 8-aligned in the message).
    mutating func pad(to alignment: Int) {
        let remainder = bytes.count % alignment
        if remainder != 0 { bytes.append(contentsOf: repeatElement(0, count: alignment - remainder)) }
    }

    mutating func appendByte(_ value: UInt8) { bytes.append(value) }

    mutating func append<T: FixedWidthInteger>(_ value: T) {
        pad(to: MemoryLayout<T>.size)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A string, object path: u32 length, the bytes, NUL.
    mutating func appendString(_ value: String) throws(Refusal) {
        let count = value.utf8.count
        guard count < 1 << 27 else { throw Refusal() }
        append(UInt32(count))
        bytes.append(contentsOf: value.utf8)
        bytes.append(0)
    }

    /// A signature: one length byte, the characters, NUL.
    mutating func appendSignature(_ value: String) throws(Refusal) {
        let utf8 = Array(value.utf8)
        guard utf8.count <= 255 else { throw Refusal() }
        bytes.append(UInt8(utf8.count))
        bytes.append(contentsOf: utf8)
        bytes.append(0)
    }

    /// Overwrites the u32 at `offset` (a length known only afterwards).
    mutating func patch(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for index in 0..<4 { bytes[offset + index] = raw[index] }
        }
    }

    /// An array: u32 byte length (patched afterwards), padding to the element
    /// alignment (not counted), then the elements.
    private mutating func appendArray(elementAlignment: Int, _ body: (inout WireEncoder) throws(Refusal) -> Void) throws(Refusal) {
        append(UInt32(0))
        let lengthOffset = bytes.count - 4
        pad(to: elementAlignment)
        let start = bytes.count
        try body(&self)
        let length = bytes.count - start
        guard length < 1 << 26 else { throw Refusal() }
        patch(UInt32(length), at: lengthOffset)
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
            let lengthOffset = bytes.count
            bytes.append(0)
            Self.appendSignature(of: inner, to: &bytes)
            let length = bytes.count - lengthOffset - 1
            guard length <= 255 else { throw Refusal() }
            bytes[lengthOffset] = UInt8(length)
            bytes.append(0)
            try append(inner)
        case .structure(let fields):
            pad(to: 8)
            for field in fields { try append(field) }
        case .array(let elementType, let elements):
            try appendArray(elementAlignment: Self.alignment(ofType: elementType)) { (encoder) throws(Refusal) in
                for element in elements { try encoder.append(element) }
            }
        case .dictionary(_, _, let entries):
            try appendArray(elementAlignment: 8) { (encoder) throws(Refusal) in
                for entry in entries {
                    encoder.pad(to: 8)
                    try encoder.append(entry.key)
                    try encoder.append(entry.value)
                }
            }
        }
    }

    /// Writes `value`'s type signature (`TypedValue.signature`) without
    /// building intermediate strings.
    static func appendSignature(of value: TypedValue, to bytes: inout [UInt8]) {
        switch value {
        case .byte: bytes.append(UInt8(ascii: "y"))
        case .boolean: bytes.append(UInt8(ascii: "b"))
        case .int16: bytes.append(UInt8(ascii: "n"))
        case .uint16: bytes.append(UInt8(ascii: "q"))
        case .int32: bytes.append(UInt8(ascii: "i"))
        case .uint32: bytes.append(UInt8(ascii: "u"))
        case .int64: bytes.append(UInt8(ascii: "x"))
        case .uint64: bytes.append(UInt8(ascii: "t"))
        case .double: bytes.append(UInt8(ascii: "d"))
        case .string: bytes.append(UInt8(ascii: "s"))
        case .objectPath: bytes.append(UInt8(ascii: "o"))
        case .signature: bytes.append(UInt8(ascii: "g"))
        case .unixFD: bytes.append(UInt8(ascii: "h"))
        case .variant: bytes.append(UInt8(ascii: "v"))
        case .array(let elementType, _):
            bytes.append(UInt8(ascii: "a"))
            bytes.append(contentsOf: elementType.utf8)
        case .dictionary(let keyType, let valueType, _):
            bytes.append(contentsOf: [UInt8(ascii: "a"), UInt8(ascii: "{")])
            bytes.append(contentsOf: keyType.utf8)
            bytes.append(contentsOf: valueType.utf8)
            bytes.append(UInt8(ascii: "}"))
        case .structure(let fields):
            bytes.append(UInt8(ascii: "("))
            for field in fields { appendSignature(of: field, to: &bytes) }
            bytes.append(UInt8(ascii: ")"))
        }
    }

    /// A header field: padding to 8, its code, then a variant of `typeCode`.
    mutating func appendHeaderField(_ code: UInt8, typeCode: UInt8, _ write: (inout WireEncoder) throws(Refusal) -> Void) throws(Refusal) {
        pad(to: 8)
        bytes.append(contentsOf: [code, 1, typeCode, 0])
        try write(&self)
    }

    static func alignment(ofType signature: String) -> Int {
        alignment(ofTypeCode: signature.utf8.first)
    }

    /// The alignment of the type whose signature starts with `code`.
    static func alignment(ofTypeCode code: UInt8?) -> Int {
        switch code {
        case UInt8(ascii: "n"), UInt8(ascii: "q"): return 2
        case UInt8(ascii: "b"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "h"),
             UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "a"): return 4
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): return 8
        default: return 1
        }
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
        case .array, .dictionary, .structure, .variant: return false
        default: return true
        }
    }

    /// The complete message, or nil when the encoder cannot build it. Its
    /// serial is 0, so libdbus numbers it when it is sent.
    func message(arguments: [TypedValue]) -> Message? {
        var signature: [UInt8] = []
        for argument in arguments { WireEncoder.appendSignature(of: argument, to: &signature) }
        guard signature.count <= 255 else { return nil }
        do {
            // One buffer: the header, then the body right behind it. The body
            // starts 8-aligned, so aligning to the buffer aligns to the body.
            var message = try header(signature: signature)
            let bodyStart = message.bytes.count
            for argument in arguments { try message.append(argument) }
            message.patch(UInt32(message.bytes.count - bodyStart), at: Self.bodyLengthOffset)
            return Self.demarshal(message.bytes)
        } catch {
            return nil
        }
    }

    /// Where the header keeps the body's length.
    private static let bodyLengthOffset = 4

    /// The header up to and including the padding before the body; its body
    /// length is patched once the body is written.
    private func header(signature: [UInt8]) throws(WireEncoder.Refusal) -> WireEncoder {
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
        let lengthOffset = message.bytes.count - 4
        message.pad(to: 8)
        let fieldsStart = message.bytes.count
        func string(_ code: UInt8, _ typeCode: UInt8, _ value: String?) throws(WireEncoder.Refusal) {
            guard let value else { return }
            try message.appendHeaderField(code, typeCode: typeCode) { (encoder) throws(WireEncoder.Refusal) in
                try encoder.appendString(value)
            }
        }
        try string(1, UInt8(ascii: "o"), path)
        try string(6, UInt8(ascii: "s"), destination)
        try string(2, UInt8(ascii: "s"), interface)
        try string(3, UInt8(ascii: "s"), member)
        try string(4, UInt8(ascii: "s"), errorName)
        if let replySerial {
            try message.appendHeaderField(5, typeCode: UInt8(ascii: "u")) { encoder in encoder.append(replySerial) }
        }
        if !signature.isEmpty {
            try message.appendHeaderField(8, typeCode: UInt8(ascii: "g")) { encoder in
                encoder.appendByte(UInt8(signature.count))
                for byte in signature { encoder.appendByte(byte) }
                encoder.appendByte(0)
            }
        }
        message.patch(UInt32(message.bytes.count - fieldsStart), at: lengthOffset)
        message.pad(to: 8)
        return message
    }

    private static func demarshal(_ bytes: [UInt8]) -> Message? {
        var error = DBusError()
        dbus_error_init(&error)
        let pointer = bytes.withUnsafeBytes { raw in
            dbus_message_demarshal(raw.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(raw.count), &error)
        }
        guard let pointer else {
            dbus_error_free(&error)
            return nil
        }
        dbus_message_set_serial(pointer, 0)
        return Message(takingOwnershipOf: pointer)
    }
}
