// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// Bounds of continuation streams relayed between two devices.
public enum StreamLimits {
    /// The most bytes one ``FrameKind/streamData`` frame carries: small enough
    /// that an advert or a fetch queued behind it waits for little.
    public static let chunk = 16 * 1024
    /// How many bytes a sender may have in flight on one stream before the
    /// receiver credits them back: it bounds what a slow app makes the two
    /// daemons hold for it.
    public static let window = 256 * 1024
    /// Streams open at once over one link; more are refused (`LimitExceeded`).
    public static let maximumPerLink = 16
    /// Stream-data frames a link queues before the relays stop reading their
    /// apps: control frames overtake them, but a deep queue would still delay
    /// the streams of the same link behind one busy stream.
    public static let queuedDataFrames = 4
}

/// One stream as a daemon knows it: its number and which side opened it
/// (each side numbers the streams it opens, so the pair is unique per link).
public struct StreamKey: Hashable, Sendable, CustomStringConvertible {
    public var id: UInt32
    /// This device's continuing app opened it (the other device is the origin).
    public var openedHere: Bool
    public init(id: UInt32, openedHere: Bool) {
        self.id = id
        self.openedHere = openedHere
    }
    public var description: String { "\(openedHere ? "out" : "in")-\(id)" }
}

/// A failure that ended a stream, as a D-Bus error name and a message.
public struct StreamFailure: Sendable, Equatable {
    public var name: String
    public var message: String
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }
}

/// The stream frames, typed. Keys are the receiver's view: a frame's
/// `opener` says whether its sender opened the stream, which the receiver
/// turns into ``StreamKey/openedHere`` (and back when it answers).
public enum StreamMessage: Sendable, Equatable {
    /// A stream for the continuation of the fetch answered with `handoff` (its random id, ``Frame``'s `handoff`).
    case open(stream: UInt32, handoff: String)
    case data(StreamKey, [UInt8])
    case credit(StreamKey, UInt32)
    case close(StreamKey, StreamFailure?)

    /// The stream message a frame carries; nil for other kinds and for a
    /// stream frame that lacks its fields or exceeds its bounds (a peer that
    /// sends one is broken or hostile: the link is dropped).
    public static func parse(_ frame: Frame) -> StreamMessage? {
        guard let stream = frame.uint32("stream") else { return nil }
        if frame.kind == .streamOpen {
            guard let handoff = frame.string("handoff"), !handoff.isEmpty else { return nil }
            return .open(stream: stream, handoff: handoff)
        }
        guard let opener = frame.bool("opener") else { return nil }
        let key = StreamKey(id: stream, openedHere: !opener)
        switch frame.kind {
        case .streamData:
            guard !frame.data.isEmpty, frame.data.count <= StreamLimits.chunk else { return nil }
            return .data(key, frame.data)
        case .streamCredit:
            guard let bytes = frame.uint32("bytes"), bytes > 0, bytes <= UInt32(StreamLimits.window) else { return nil }
            return .credit(key, bytes)
        case .streamClose:
            guard let name = frame.string("name") else { return .close(key, nil) }
            return .close(key, StreamFailure(name: name, message: frame.string("message") ?? ""))
        default:
            return nil
        }
    }

    /// The frame that says this to the other device.
    public var frame: Frame {
        func body(_ key: StreamKey, _ extra: [String: TypedValue] = [:]) -> [String: TypedValue] {
            extra.merging(["stream": .uint32(key.id), "opener": .boolean(key.openedHere)]) { $1 }
        }
        switch self {
        case .open(let stream, let handoff): return Frame(.streamOpen, ["stream": .uint32(stream), "handoff": .string(handoff)])
        case .data(let key, let bytes): return Frame(.streamData, body(key), data: bytes)
        case .credit(let key, let bytes): return Frame(.streamCredit, body(key, ["bytes": .uint32(bytes)]))
        case .close(let key, let failure):
            guard let failure else { return Frame(.streamClose, body(key)) }
            return Frame(.streamClose, body(key, ["name": .string(failure.name), "message": .string(failure.message)]))
        }
    }
}

/// Credit-based flow control of one stream, both directions.
///
/// The sender may have ``StreamLimits/window`` bytes in flight; the receiver
/// credits bytes back once its app has them, in batches of a quarter window
/// so that a byte-at-a-time reader does not cost a frame per byte.
public struct StreamFlow: Sendable, Equatable {
    /// Bytes this side may still send before the peer credits some back.
    public private(set) var sendCredit = StreamLimits.window
    /// Bytes received and not yet credited back.
    public private(set) var receivedInFlight = 0
    private var deliveredUncredited = 0

    public init() {}

    /// This side sent `count` bytes (at most ``sendCredit``).
    public mutating func sent(_ count: Int) {
        sendCredit -= min(count, sendCredit)
    }

    /// The peer credited `bytes`; false when that would exceed the window (a broken peer).
    public mutating func granted(_ bytes: UInt32) -> Bool {
        guard sendCredit + Int(bytes) <= StreamLimits.window else { return false }
        sendCredit += Int(bytes)
        return true
    }

    /// `count` bytes arrived; false when the peer sent beyond its credit.
    public mutating func received(_ count: Int) -> Bool {
        guard receivedInFlight + count <= StreamLimits.window else { return false }
        receivedInFlight += count
        return true
    }

    /// This side's app took `count` received bytes: the credit to send back
    /// now, nil while it is too little to be worth a frame.
    public mutating func delivered(_ count: Int) -> UInt32? {
        deliveredUncredited += count
        guard deliveredUncredited >= StreamLimits.window / 4 else { return nil }
        let credit = deliveredUncredited
        deliveredUncredited = 0
        receivedInFlight -= credit
        return credit > 0 ? UInt32(credit) : nil
    }
}
