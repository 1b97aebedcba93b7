// SPDX-License-Identifier: Apache-2.0

/// The WebExtension native-messaging framing: each message is a 32-bit
/// length in the machine's byte order, then that many bytes of UTF-8 JSON.
public enum NativeMessaging {
    /// The largest message a host may send: Chromium and Firefox both refuse
    /// (and disconnect on) anything over 1 MiB from the host.
    public static let maximumOutgoingBytes = 1 << 20
    /// The largest message this host reads. The browsers allow up to 4 GiB
    /// towards the host (Chromium caps it at 64 MiB), but a page's URL and
    /// title need far less; bigger messages are skipped, not buffered.
    public static let maximumIncomingBytes = 1 << 20

    /// `payload` with its length prefix; nil when it is over the browsers' limit.
    public static func frame(_ payload: [UInt8]) -> [UInt8]? {
        guard payload.count <= maximumOutgoingBytes else { return nil }
        let length = UInt32(payload.count)
        return withUnsafeBytes(of: length) { Array($0) } + payload
    }
}

/// What the reader found next in the byte stream.
public enum NativeMessageFrame: Equatable, Sendable {
    /// A whole message's payload.
    case message([UInt8])
    /// A message over ``NativeMessaging/maximumIncomingBytes`` was announced;
    /// its bytes are skipped as they arrive.
    case tooLong(UInt32)
}

/// Splits the bytes read from the browser into messages, however the reads
/// happen to cut them. Memory stays bounded: at most one message of the
/// allowed size is buffered; a longer one is counted off, never stored.
public struct NativeMessageReader: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    private var skipping = 0
    private let limit: Int

    public init(maximumMessageBytes: Int = NativeMessaging.maximumIncomingBytes) {
        limit = maximumMessageBytes
    }

    /// Bytes waiting for the rest of their message.
    public var bufferedCount: Int { buffer.count - start }

    /// Adds bytes read from the browser.
    public mutating func append<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        var remaining = bytes[...]
        if skipping > 0 {
            let dropped = min(skipping, remaining.count)
            skipping -= dropped
            remaining = remaining.dropFirst(dropped)
        }
        buffer.append(contentsOf: remaining)
    }

    /// The next complete frame, or nil until more bytes arrive.
    public mutating func next() -> NativeMessageFrame? {
        guard skipping == 0, bufferedCount >= 4 else { return nil }
        let length = buffer.withUnsafeBytes { raw in raw.loadUnaligned(fromByteOffset: start, as: UInt32.self) }
        if Int(length) > limit {
            start += 4
            let available = min(bufferedCount, Int(length))
            start += available
            skipping = Int(length) - available
            compact()
            return .tooLong(length)
        }
        guard bufferedCount >= 4 + Int(length) else { return nil }
        let payload = Array(buffer[(start + 4)..<(start + 4 + Int(length))])
        start += 4 + Int(length)
        compact()
        return .message(payload)
    }

    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            start = 0
        } else if start > 64 * 1024 {
            buffer.removeFirst(start)
            start = 0
        }
    }
}
