// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// A D-Bus client that speaks the wire protocol itself, without libdbus.
///
/// libdbus refuses to build what the specification forbids (invalid UTF-8,
/// bad signatures, nesting past the limits) and aborts the sender, so those
/// messages can only be sent by hand. It also sends what libdbus cannot
/// address through DBusKit: unicast signals and unrequested replies. The
/// tests use it to show which of these reach the daemon (the bus daemon
/// validates every message and drops the sender of a malformed one).
final class RawBusConnection {
    private let fd: Int32
    private var serial: UInt32 = 0
    private var buffer: [UInt8] = []
    private(set) var uniqueName = ""

    struct Received {
        var type: UInt8
        var serial: UInt32
        var replySerial: UInt32?
        var errorName: String?
        var member: String?
        var signature: String?
        var body: [UInt8]
    }

    /// Connects to `address` (`unix:path=…`), authenticates and says Hello.
    init(address: String) throws {
        guard let pathPart = address.split(separator: ",").first(where: { $0.hasPrefix("unix:path=") }) else {
            throw HardeningFailure("not a unix:path address: \(address)")
        }
        let path = String(pathPart.dropFirst("unix:path=".count))
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HardeningFailure("socket: \(errno)") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            let bytes = Array(path.utf8)
            for (i, b) in bytes.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { close(fd); throw HardeningFailure("connect \(path): \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        let uidHex = String(getuid()).utf8.map { String(format: "%02x", $0) }.joined()
        try write([0] + Array("AUTH EXTERNAL \(uidHex)\r\n".utf8))
        let line = try readLine()
        guard line.hasPrefix("OK ") else { throw HardeningFailure("authentication refused: \(line)") }
        try write(Array("BEGIN\r\n".utf8))
        let hello = try call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                             interface: "org.freedesktop.DBus", member: "Hello")
        guard let reply = hello, reply.errorName == nil else { throw HardeningFailure("Hello failed") }
        uniqueName = Self.firstString(reply.body) ?? ""
    }

    deinit { close(fd) }

    // MARK: Sending

    enum Kind: UInt8 { case methodCall = 1, methodReturn = 2, error = 3, signal = 4 }

    /// Sends a message whose body is `values` marshalled; `patch` may then
    /// damage the body bytes (invalid UTF-8 and the like). Returns its serial.
    @discardableResult
    func send(_ kind: Kind, destination: String?, path: String?, interface: String?, member: String?,
              replySerial: UInt32? = nil, errorName: String? = nil, signature: String? = nil,
              values: [TypedValue] = [], noReply: Bool = false, patch: (inout [UInt8]) -> Void = { _ in }) throws -> UInt32 {
        let bytes = encode(kind, destination: destination, path: path, interface: interface, member: member,
                           replySerial: replySerial, errorName: errorName, signature: signature, values: values,
                           noReply: noReply, patch: patch)
        try write(bytes)
        return serial
    }

    /// Writes bytes as they are (half a message, say).
    func sendRaw(_ bytes: [UInt8]) throws { try write(bytes) }

    /// A whole message, marshalled (see ``send``).
    func encode(_ kind: Kind, destination: String?, path: String?, interface: String?, member: String?,
                replySerial: UInt32? = nil, errorName: String? = nil, signature: String? = nil,
                values: [TypedValue] = [], noReply: Bool = false, patch: (inout [UInt8]) -> Void = { _ in }) -> [UInt8] {
        serial += 1
        var body = Marshaller()
        for value in values { body.write(value) }
        patch(&body.bytes)
        var fields: [TypedValue] = []
        func field(_ code: UInt8, _ value: TypedValue) { fields.append(.structure([.byte(code), .variant(value)])) }
        if let path { field(1, .objectPath(path)) }
        if let interface { field(2, .string(interface)) }
        if let member { field(3, .string(member)) }
        if let errorName { field(4, .string(errorName)) }
        if let replySerial { field(5, .uint32(replySerial)) }
        if let destination { field(6, .string(destination)) }
        let bodySignature = signature ?? values.map(\.signature).joined()
        if !bodySignature.isEmpty { field(8, .signature(bodySignature)) }
        var header = Marshaller()
        header.bytes = [UInt8(ascii: "l"), kind.rawValue, noReply ? 1 : 0, 1]
        header.fixed(UInt32(body.bytes.count))
        header.fixed(serial)
        header.write(.array(elementType: "(yv)", fields))
        header.pad(to: 8)
        return header.bytes + body.bytes
    }

    /// A method call and its reply (nil when the bus closed the connection).
    func call(destination: String, path: String, interface: String?, member: String, values: [TypedValue] = [],
              timeout: Double = 10, patch: (inout [UInt8]) -> Void = { _ in }) throws -> Received? {
        let sent = try send(.methodCall, destination: destination, path: path, interface: interface, member: member,
                            values: values, patch: patch)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard let message = try receive() else { return nil }
            if message.replySerial == sent { return message }
        }
        throw HardeningFailure("no reply to \(member) within \(timeout) s")
    }

    // MARK: Receiving

    /// The next message; nil when the peer closed the connection.
    func receive() throws -> Received? {
        guard try fill(16) else { return nil }
        let little = buffer[0] == UInt8(ascii: "l")
        func u32(_ at: Int) -> UInt32 {
            let v = UInt32(buffer[at]) | UInt32(buffer[at + 1]) << 8 | UInt32(buffer[at + 2]) << 16 | UInt32(buffer[at + 3]) << 24
            return little ? v : v.byteSwapped
        }
        let bodyLength = Int(u32(4))
        let fieldsLength = Int(u32(12))
        let headerEnd = (16 + fieldsLength + 7) / 8 * 8
        guard try fill(headerEnd + bodyLength) else { return nil }
        var message = Received(type: buffer[1], serial: u32(8), body: Array(buffer[headerEnd..<headerEnd + bodyLength]))
        // Header fields: (yv) structures, 8-aligned, each with a basic variant.
        var i = 16
        while i < 16 + fieldsLength {
            i = (i + 7) / 8 * 8
            let code = buffer[i]
            let sigLength = Int(buffer[i + 1])
            let sig = buffer[i + 2]
            i += 3 + sigLength
            switch sig {
            case UInt8(ascii: "u"):
                i = (i + 3) / 4 * 4
                if code == 5 { message.replySerial = u32(i) }
                i += 4
            case UInt8(ascii: "s"), UInt8(ascii: "o"):
                i = (i + 3) / 4 * 4
                let length = Int(u32(i))
                let text = String(decoding: buffer[(i + 4)..<(i + 4 + length)], as: UTF8.self)
                if code == 4 { message.errorName = text }
                if code == 3 { message.member = text }
                i += 4 + length + 1
            case UInt8(ascii: "g"):
                let length = Int(buffer[i])
                if code == 8 { message.signature = String(decoding: buffer[(i + 1)..<(i + 1 + length)], as: UTF8.self) }
                i += 1 + length + 1
            default:
                i = 16 + fieldsLength
            }
        }
        buffer.removeFirst(headerEnd + bodyLength)
        return message
    }

    /// Whether the peer closed the connection within `timeout` seconds
    /// (messages that arrive meanwhile are skipped).
    func waitForDisconnect(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            do {
                if try receive() == nil { return true }
            } catch {
                return true
            }
        }
        return false
    }

    /// The first `s` of a little-endian body.
    static func firstString(_ body: [UInt8]) -> String? {
        guard body.count >= 4 else { return nil }
        let length = Int(body[0]) | Int(body[1]) << 8 | Int(body[2]) << 16 | Int(body[3]) << 24
        guard body.count >= 4 + length else { return nil }
        return String(decoding: body[4..<(4 + length)], as: UTF8.self)
    }

    // MARK: Socket

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw HardeningFailure("send failed: errno \(errno)") }
            offset += n
        }
    }

    /// Reads until `count` bytes are buffered; false at end of stream.
    private func fill(_ count: Int) throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while buffer.count < count {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw HardeningFailure("receive timed out") }
            if n <= 0 { return false }
            buffer += chunk[0..<n]
        }
        return true
    }

    private func readLine() throws -> String {
        while !buffer.contains(UInt8(ascii: "\n")) {
            guard try fill(buffer.count + 1) else { throw HardeningFailure("closed during authentication") }
        }
        let end = buffer.firstIndex(of: UInt8(ascii: "\n"))!
        let line = String(decoding: buffer[..<end], as: UTF8.self)
        buffer.removeFirst(end + 1)
        return line
    }
}

/// Little-endian D-Bus marshalling of a ``TypedValue`` tree (no validation:
/// that is the point).
struct Marshaller {
    var bytes: [UInt8] = []

    mutating func pad(to alignment: Int) {
        while bytes.count % alignment != 0 { bytes.append(0) }
    }

    mutating func fixed<T: FixedWidthInteger>(_ value: T) {
        pad(to: MemoryLayout<T>.size)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private mutating func string(_ text: String) {
        fixed(UInt32(text.utf8.count))
        bytes += text.utf8
        bytes.append(0)
    }

    private mutating func signature(_ text: String) {
        bytes.append(UInt8(truncatingIfNeeded: text.utf8.count))
        bytes += text.utf8
        bytes.append(0)
    }

    private static func alignment(of type: String) -> Int {
        switch type.first {
        case "n", "q": return 2
        case "b", "i", "u", "h", "s", "o", "a": return 4
        case "x", "t", "d", "(", "{": return 8
        default: return 1
        }
    }

    mutating func write(_ value: TypedValue) {
        switch value {
        case .byte(let v): bytes.append(v)
        case .boolean(let v): fixed(UInt32(v ? 1 : 0))
        case .int16(let v): fixed(v)
        case .uint16(let v): fixed(v)
        case .int32(let v): fixed(v)
        case .uint32(let v): fixed(v)
        case .int64(let v): fixed(v)
        case .uint64(let v): fixed(v)
        case .double(let v): fixed(v.bitPattern)
        case .unixFD(let v): fixed(UInt32(bitPattern: v))
        case .string(let s), .objectPath(let s): string(s)
        case .signature(let s): signature(s)
        case .variant(let inner):
            signature(inner.signature)
            write(inner)
        case .structure(let fields):
            pad(to: 8)
            for field in fields { write(field) }
        case .array(let elementType, let elements):
            fixed(UInt32(0))
            let lengthAt = bytes.count - 4
            pad(to: Self.alignment(of: elementType))
            let start = bytes.count
            for element in elements { write(element) }
            setLength(at: lengthAt, bytes.count - start)
        case .bytes(let content):
            fixed(UInt32(content.count))
            bytes.append(contentsOf: content)
        case .dictionary(_, _, let entries):
            fixed(UInt32(0))
            let lengthAt = bytes.count - 4
            pad(to: 8)
            let start = bytes.count
            for entry in entries {
                pad(to: 8)
                write(entry.key)
                write(entry.value)
            }
            setLength(at: lengthAt, bytes.count - start)
        }
    }

    private mutating func setLength(at index: Int, _ length: Int) {
        let value = UInt32(length).littleEndian
        withUnsafeBytes(of: value) { raw in for i in 0..<4 { bytes[index + i] = raw[i] } }
    }
}
