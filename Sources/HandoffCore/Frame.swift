// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// What one frame between two handoff daemons says.
///
/// On the wire a frame is a 4-byte big-endian length, then that many bytes:
/// one kind byte and the body, an `a{sv}` written with ``TypedValueCodec``
/// (self-describing, lossless for every D-Bus type, bounds-checked when read).
/// A ``FrameKind/streamData`` or ``FrameKind/fileData`` frame puts the
/// body's length (4 bytes, big-endian) before the body and raw bytes after it.
public enum FrameKind: UInt8, Sendable, CaseIterable {
    /// First frame each side sends after the TLS handshake: `name` (s), `version` (u).
    case hello = 1
    /// "Let us pair": `name` (s).
    case pairRequest = 2
    /// A person confirmed (`accepted` b true) or refused (false) the code.
    case pairConfirm = 3
    /// The sender's current activity (`activity-type`, `app-id`, `title`,
    /// `webpage-url`, `timestamp`, `id`) or, empty, that there is none.
    case advert = 4
    /// Asks for the full payload of the advertised activity `id` (s).
    case fetch = 5
    /// The payload: `request` (u), `activity-type`, `properties` (a{sv}), and
    /// `handoff` (s), a random id for this fetch that the continued,
    /// continue-failed and stream-open frames about it name.
    case fetchReply = 6
    /// A request failed: `request` (u), `name` (s, an error name), `message` (s).
    case error = 7
    /// The sender forgot the receiver's key.
    case unpair = 8
    /// Keeps the link alive; answered with nothing.
    case keepalive = 9
    /// The receiver continued the fetched activity in `app-id` (s): the origin
    /// marks it Continued. `handoff` (s) names the fetch: the random id its
    /// fetch reply gave, never the activity's id; each is reported once.
    case continued = 10
    /// Pairing ended before both confirmed.
    case pairCancel = 11
    /// The continuing app on the sender opened a continuation stream for the
    /// activity it fetched (`handoff` (s), as for ``continued``); `stream` (u)
    /// names it from now on.
    case streamOpen = 12
    /// Bytes of a stream: `stream` (u), `opener` (b: the sender opened it),
    /// then the bytes themselves in ``Frame/data``, at most
    /// ``StreamLimits/chunk`` of them.
    case streamData = 13
    /// The sender wrote `bytes` (u) more of the stream to its app: the
    /// receiver may send that many more (`stream`, `opener` as for data).
    case streamCredit = 14
    /// The sender's end of the stream is closed (`stream`, `opener`); with
    /// `name` and `message` (s) when it failed rather than ended.
    case streamClose = 15
    /// The fetched activity (`handoff`, as for ``continued``) could not be continued on the sender:
    /// `name` (s, an error name) and `message` (s). The origin does not mark it Continued.
    case continueFailed = 16
    /// Asks for the document of the fetched activity `id` (s): `request` (u),
    /// `uri` (s). See ``FileTransferMessage``.
    case fileRequest = 17
    /// The document can come: `request`, `size` (t), `name` (s), and
    /// `sha256` (s) only when the asker asked for it first
    /// (``fileHashRequest``); its bytes follow only as the asker credits them.
    case fileHeader = 18
    /// Bytes of the document: `request`, then the bytes in ``Frame/data``.
    case fileData = 19
    /// The asker may take `bytes` (u) more: the origin may send that many more.
    case fileCredit = 20
    /// The transfer `request` is over: complete (from the origin, with the
    /// `sha256` (s) of what it sent), or failed or cancelled (by either
    /// side) with `name` and `message` (s).
    case fileEnd = 21
    /// A connecting device proves it is paired without having shown its
    /// key: `mac` (ay), ``LinkProof/client(linkSecret:channelBinding:)``.
    /// The first frame on such a link; see docs/handoff.md.
    case proof = 22
    /// The listening device found the pair: `mac` (ay),
    /// ``LinkProof/server(linkSecret:channelBinding:)``; its hello follows.
    case proofAccepted = 23
    /// The sender's resolving key (`resolving-key`, ay); with `derive` (b)
    /// true both ends take this link's exporter as their new link secret.
    case pairKeys = 24
    /// The asker has a file of the announced size where the document would
    /// be: `request`; the origin answers with a second ``fileHeader`` that
    /// carries the SHA-256, before any byte is sent.
    case fileHashRequest = 25

    /// Frames an unpaired peer may send; anything else disconnects it.
    public var isPairing: Bool {
        switch self {
        case .hello, .pairRequest, .pairConfirm, .pairCancel, .error, .keepalive, .proof, .proofAccepted: return true
        default: return false
        }
    }

    /// Kinds that carry raw bytes after their body.
    public var carriesData: Bool { self == .streamData || self == .fileData }
}

public struct Frame: Sendable, Equatable {
    public var kind: FrameKind
    public var body: [String: TypedValue]
    /// The raw bytes a ``FrameKind/streamData`` frame carries after its body
    /// (empty for every other kind): bulk data is not worth a typed value per byte.
    public var data: [UInt8]

    public init(_ kind: FrameKind, _ body: [String: TypedValue] = [:], data: [UInt8] = []) {
        self.kind = kind
        self.body = body
        self.data = kind.carriesData ? data : []
    }

    public func string(_ key: String) -> String? { body[key]?.stringValue }
    public func bool(_ key: String) -> Bool? {
        if case .boolean(let value)? = body[key] { return value }
        return nil
    }
    public func int64(_ key: String) -> Int64? {
        if case .int64(let value)? = body[key] { return value }
        return nil
    }
    public func uint32(_ key: String) -> UInt32? { body[key]?.uint32Value }
    public func bytes(_ key: String) -> [UInt8]? {
        if case .bytes(let value)? = body[key] { return value }
        return nil
    }
    public func dictionary(_ key: String) -> [String: TypedValue]? {
        guard let entries = body[key]?.stringVariantEntries else { return nil }
        return Dictionary(entries, uniquingKeysWith: { _, last in last })
    }
}

/// Why bytes from a peer were not a frame. Every case means: drop the link.
public enum FrameDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The length prefix announces more than the link allows now.
    case tooLarge(length: Int, limit: Int)
    /// A frame of zero bytes (no kind byte).
    case empty
    /// The kind byte is not one of ``FrameKind``.
    case unknownKind(UInt8)
    /// The body is not a ``TypedValueCodec`` value.
    case malformedBody(String)
    /// The body is a valid value but not an `a{sv}`.
    case bodyNotDictionary(String)
    /// A stream-data frame whose body length points past the frame.
    case badDataLayout

    public var description: String {
        switch self {
        case .tooLarge(let length, let limit): return "frame of \(length) bytes is over the limit of \(limit)"
        case .empty: return "empty frame"
        case .unknownKind(let kind): return "unknown frame kind \(kind)"
        case .malformedBody(let reason): return "malformed frame body: \(reason)"
        case .bodyNotDictionary(let signature): return "frame body is \(signature), not a{sv}"
        case .badDataLayout: return "stream data frame with a body longer than the frame"
        }
    }
}

public enum FrameCodec {
    /// The largest frame before the peer is paired: pairing needs a few names.
    public static let unpairedLimit = 4 * 1024
    /// The largest frame before a device that showed no known key proved
    /// it is paired: a proof and a hello.
    public static let proofLimit = 512
    /// The largest frame between paired devices: a payload with 64 KiB of
    /// user info plus the other properties' limits, with room to spare.
    public static let pairedLimit = 256 * 1024

    /// The frame with its length prefix, ready to write.
    public static func encode(_ frame: Frame) -> [UInt8] {
        let entries = frame.body.sorted { $0.key < $1.key }.map {
            TypedValue.DictionaryEntry(key: .string($0.key), value: .variant($0.value))
        }
        // A body cannot nest deeper than what D-Bus gave us, so this does not throw in practice.
        let body = (try? TypedValueCodec.encode(.dictionary(keyType: "s", valueType: "v", entries))) ?? [1, UInt8(ascii: "{"), UInt8(ascii: "s"), 1, UInt8(ascii: "v"), 1, 0]
        // Stream data: kind, the body's length (4 bytes), the body, the raw bytes.
        let isData = frame.kind.carriesData
        let length = UInt32(body.count + 1 + (isData ? 4 + frame.data.count : 0))
        var out: [UInt8] = []
        out.reserveCapacity(Int(length) + 4)
        out += bigEndian(length)
        out.append(frame.kind.rawValue)
        if isData { out += bigEndian(UInt32(body.count)) }
        out += body
        if isData { out += frame.data }
        return out
    }

    /// The frame with its length prefix, or nil when the receiver would
    /// refuse it as over `limit` (the sender answers with an error instead).
    public static func encode(_ frame: Frame, limit: Int) -> [UInt8]? {
        let bytes = encode(frame)
        return bytes.count - 4 <= limit ? bytes : nil
    }

    /// Decodes one frame's bytes (after the length prefix).
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(FrameDecodingError) -> Frame {
        guard let first = bytes.first else { throw .empty }
        guard let kind = FrameKind(rawValue: first) else { throw .unknownKind(first) }
        var encodedBody = bytes.dropFirst()
        var data: [UInt8] = []
        if kind.carriesData {
            guard encodedBody.count >= 4 else { throw .badDataLayout }
            let start = encodedBody.startIndex
            let bodyLength = Int(encodedBody[start]) << 24 | Int(encodedBody[start + 1]) << 16
                | Int(encodedBody[start + 2]) << 8 | Int(encodedBody[start + 3])
            guard bodyLength <= encodedBody.count - 4 else { throw .badDataLayout }
            data = Array(encodedBody[(start + 4 + bodyLength)...])
            encodedBody = encodedBody[(start + 4)..<(start + 4 + bodyLength)]
        }
        let value: TypedValue
        do {
            value = try TypedValueCodec.decode(Array(encodedBody))
        } catch {
            throw .malformedBody(error.reason)
        }
        guard case .dictionary("s", "v", let entries) = value else { throw .bodyNotDictionary(value.signature) }
        var body: [String: TypedValue] = [:]
        for entry in entries {
            guard let key = entry.key.stringValue, case .variant(let inner) = entry.value else {
                throw .bodyNotDictionary(value.signature)
            }
            body[key] = inner
        }
        return Frame(kind, body, data: data)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)]
    }
}

/// Collects bytes as they arrive and hands out whole frames.
///
/// ```swift
/// var reader = FrameReader(limit: FrameCodec.unpairedLimit)
/// reader.append(received)
/// while let frame = try reader.next() { handle(frame) }
/// ```
public struct FrameReader: Sendable {
    /// The largest frame accepted now (raise it once the peer is paired).
    public var limit: Int
    private var buffer: [UInt8] = []
    private var start = 0

    public init(limit: Int) { self.limit = limit }

    /// True while part of a frame has arrived and the rest has not (a stalled peer).
    public var isMidFrame: Bool { start < buffer.count }

    public mutating func append<S: Sequence>(_ bytes: S) where S.Element == UInt8 {
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, nil when more bytes are needed.
    public mutating func next() throws(FrameDecodingError) -> Frame? {
        guard buffer.count - start >= 4 else { compact(); return nil }
        let length = Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
        guard length <= limit else { throw .tooLarge(length: length, limit: limit) }
        guard buffer.count - start - 4 >= length else { compact(); return nil }
        let frame = try FrameCodec.decode(buffer[(start + 4)..<(start + 4 + length)])
        start += 4 + length
        return frame
    }

    private mutating func compact() {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
    }
}
