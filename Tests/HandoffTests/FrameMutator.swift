// SPDX-License-Identifier: Apache-2.0
import Foundation
import FuzzGenerators
import HandoffCore
import TestSupport
import TypedValues

/// A sequence of frames a paired device sends: after the hellos (`sends`),
/// and in answer to the daemon's fetch (`replies`, whose `request` is
/// ``FuzzSequence/requestPlaceholder`` until the peer puts the fetch's in).
/// Stored as text, one chunk of bytes a line: `send <hex>` or `reply <hex>`,
/// `#` comments.
struct FuzzSequence: Equatable {
    var sends: [[UInt8]]
    var replies: [[UInt8]]

    /// The request number of a reply, replaced by the daemon's on the wire.
    static let requestPlaceholder: UInt32 = 0xDEAD_BEEF
    /// Stands for the id of the daemon's current activity in the corpus.
    static let activityPlaceholder = "@activity@"
    /// Stands for the handoff id of the fetch a report names; the peer puts
    /// in the one the daemon's fetch reply gave (32 bytes too, so lengths stay right).
    static let handoffPlaceholder = "@handoff" + String(repeating: "@", count: 24)

    init(sends: [[UInt8]], replies: [[UInt8]] = []) {
        self.sends = sends
        self.replies = replies
    }

    init(frames sends: [Frame], replies: [Frame] = []) {
        self.init(sends: sends.map(FrameCodec.encode), replies: replies.map(FrameCodec.encode))
    }

    init(text: String) throws {
        self.init(sends: [])
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.isEmpty {
            let words = line.split(separator: " ")
            guard words.count == 2, let bytes = Hex.decode(String(words[1])) else { throw HandoffTestFailure("not a corpus line: \(line.prefix(80))") }
            switch words[0] {
            case "send": sends.append(bytes)
            case "reply": replies.append(bytes)
            default: throw HandoffTestFailure("not a corpus line: \(line.prefix(80))")
            }
        }
    }

    func text(comment: String) -> String {
        comment.split(separator: "\n", omittingEmptySubsequences: false).map { "# " + $0 + "\n" }.joined()
            + sends.map { "send " + Hex.encode($0) + "\n" }.joined() + replies.map { "reply " + Hex.encode($0) + "\n" }.joined()
    }

    /// The chunks as frames, when each is one well-formed frame.
    func frames(_ chunks: [[UInt8]]) throws -> [Frame] {
        try chunks.map { chunk in
            guard chunk.count >= 4 else { throw HandoffTestFailure("a chunk shorter than a length prefix") }
            let length = Int(chunk[0]) << 24 | Int(chunk[1]) << 16 | Int(chunk[2]) << 8 | Int(chunk[3])
            guard length == chunk.count - 4 else { throw HandoffTestFailure("length prefix \(length) for \(chunk.count - 4) bytes") }
            return try FrameCodec.decode(chunk[4...])
        }
    }
}

/// The committed seeds of the fuzzer: valid sequences a paired device may
/// send, built with HandoffCore's encoders (`HANDOFF_FUZZ_WRITE_CORPUS=1`
/// writes them to `FuzzCorpus/`).
enum FuzzSeeds {
    static let directory = repositoryRoot() + "/Tests/HandoffTests/FuzzCorpus"

    static func all() -> [(name: String, comment: String, sequence: FuzzSequence)] {
        let activity = FuzzSequence.activityPlaceholder
        let handoff = FuzzSequence.handoffPlaceholder
        let advert = Advert.frame(for: Advert(id: "7", activityType: UA.editType, appID: UA.editor, title: "Quarterly report",
                                                             webpageURL: "", timestamp: 1_700_000_000_000_000, eligibleForHandoff: true))
        let webAdvert = Advert.frame(for: Advert(id: "8", activityType: "org.example.UserActivity.browsing-web", appID: "org.example.Browser",
                                                                title: "Example", webpageURL: "https://example.com/page", timestamp: 1, eligibleForHandoff: true))
        let fetch = Frame(.fetch, ["request": .uint32(1), "id": .string(activity), "timeout-ms": .uint32(10_000)])
        let request = FuzzSequence.requestPlaceholder
        let properties = TypedValue.stringVariantDictionary([
            ("title", .string("Quarterly report")), ("app-id", .string(UA.editor)),
            ("user-info", .stringVariantDictionary([("page", .int32(3)), ("path", .string("/home/user/Documents/report.odt"))])),
        ])
        return [
            ("advert", "an advert, a keepalive, then no current activity",
             FuzzSequence(frames: [advert, Frame(.keepalive), webAdvert, Frame(.advert)])),
            ("rename", "a later hello: the device was renamed",
             FuzzSequence(frames: [Frame(.hello, ["name": .string("Renamed"), "version": .uint32(1), "port": .uint32(4711)])])),
            ("fetch-continued", "fetch the daemon's current activity, then say it was continued",
             FuzzSequence(frames: [fetch, Frame(.continued, ["handoff": .string(handoff), "app-id": .string(UA.editor)])])),
            ("fetch-continue-failed", "fetch, then say continuing failed",
             FuzzSequence(frames: [fetch, Frame(.continueFailed, ["handoff": .string(handoff), "name": .string("org.example.UserActivity.Error.NoApplication"),
                                                                  "message": .string("no app")])])),
            ("stream", "fetch, then a continuation stream: open, data, credit, close",
             FuzzSequence(frames: [fetch, StreamMessage.open(stream: 1, handoff: handoff).frame,
                                   StreamMessage.data(StreamKey(id: 1, openedHere: false), Array("hello".utf8)).frame,
                                   StreamMessage.credit(StreamKey(id: 1, openedHere: false), 4096).frame,
                                   StreamMessage.close(StreamKey(id: 1, openedHere: false), nil).frame,
                                   StreamMessage.close(StreamKey(id: 1, openedHere: false),
                                                       StreamFailure(name: "org.example.UserActivity.Error.Cancelled", message: "gone")).frame])),
            ("file-asker", "fetch, then ask for a document, credit it, end it",
             FuzzSequence(frames: [fetch, FileTransferMessage.request(request: 2, activityID: activity, uri: "file:///home/user/Documents/report.odt").frame,
                                   FileTransferMessage.credit(request: 2, bytes: 65_536).frame,
                                   FileTransferMessage.end(request: 2, failure: StreamFailure(name: "org.example.UserActivity.Error.Cancelled", message: "x")).frame])),
            ("file-origin", "document frames as an origin sends them, unasked",
             FuzzSequence(frames: [FileTransferMessage.header(request: 3, size: 5, sha256: String(repeating: "ab", count: 32), name: "report.odt").frame,
                                   FileTransferMessage.data(request: 3, Array("hello".utf8)).frame, FileTransferMessage.end(request: 3, failure: nil).frame])),
            ("pairing", "pairing frames from a device already paired",
             FuzzSequence(frames: [Frame(.pairRequest, ["name": .string("Stack B")]), Frame(.pairConfirm, ["accepted": .boolean(true)]), Frame(.pairCancel)])),
            ("unasked-answers", "an error and a fetch reply for requests never made",
             FuzzSequence(frames: [Frame(.error, ["request": .uint32(9), "name": .string("org.example.UserActivity.Error.HandoffFailed"), "message": .string("x")]),
                                   Frame(.fetchReply, ["request": .uint32(9), "activity-type": .string(UA.editType), "properties": properties])])),
            ("answer-fetch", "advertise, then answer the daemon's fetch with the activity (the person pressed Continue)",
             FuzzSequence(frames: [advert], replies: [Frame(.fetchReply, ["request": .uint32(request), "activity-type": .string(UA.editType), "properties": properties])])),
            ("answer-fetch-error", "advertise, then answer the daemon's fetch with an error",
             FuzzSequence(frames: [advert], replies: [Frame(.error, ["request": .uint32(request), "name": .string("org.example.UserActivity.Error.HandoffFailed"),
                                                                     "message": .string("the activity ended")])])),
        ]
    }

    /// The corpus as committed: each file's name and sequence.
    static func load() throws -> [(name: String, sequence: FuzzSequence)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".frames") }.sorted()
        return try names.map { name in
            (name, try FuzzSequence(text: String(contentsOfFile: directory + "/" + name, encoding: .utf8)))
        }
    }

    static func write() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for seed in all() {
            try writeFileAtomically(directory + "/\(seed.name).frames", contents: seed.sequence.text(comment: seed.comment))
        }
    }
}

/// Structure-aware mutations of a valid sequence: frames dropped, repeated,
/// reordered, spliced from other seeds, their kinds changed; body keys
/// removed or added, values retyped, integers at their edges, strings that
/// are not paths, names, UTF-8 or short; values D-Bus would refuse nested in
/// properties; and, less often, the bytes themselves (length prefixes,
/// truncation, invalid UTF-8, flipped bytes).
struct FrameMutator {
    var input: FuzzInput
    /// The id of the daemon's current activity, put where the corpus says ``FuzzSequence/activityPlaceholder``.
    var activityID: String
    /// Each mutation applied, by name (for the coverage summary and reproducers).
    private(set) var applied: [String] = []

    init(seed: UInt64, activityID: String) {
        input = FuzzInput(seed: seed)
        self.activityID = activityID
    }

    /// Kinds a mutation may give a frame: never `unpair`, which ends the
    /// pairing the fuzzer needs (the daemon then forgets the key, as it should).
    static let kinds = FrameKind.allCases.filter { $0 != .unpair }
    static let keys = ["name", "version", "port", "accepted", "id", "activity-type", "app-id", "title", "webpage-url", "timestamp", "request",
                       "timeout-ms", "properties", "message", "stream", "opener", "bytes", "uri", "size", "sha256"]

    mutating func mutate(_ sequence: FuzzSequence, splicing others: [FuzzSequence]) -> FuzzSequence {
        applied = []
        var sends = ((try? sequence.frames(sequence.sends)) ?? []).map(substituted)
        var replies = ((try? sequence.frames(sequence.replies)) ?? []).map(substituted)
        let count = input.int(1...4)
        for _ in 0..<count {
            // Replies (when there are any) are where the daemon decodes what it will hand to useractivityd.
            if !replies.isEmpty && input.chance(60) {
                mutateFrames(&replies, splicing: others)
            } else {
                mutateFrames(&sends, splicing: others)
            }
        }
        var result = FuzzSequence(frames: sends, replies: replies)
        if input.chance(15) { mutateBytes(&result.sends) }
        if !result.replies.isEmpty && input.chance(10) { mutateBytes(&result.replies) }
        return result
    }

    // MARK: Frames

    private mutating func note(_ name: String) { applied.append(name) }

    private mutating func mutateFrames(_ frames: inout [Frame], splicing others: [FuzzSequence]) {
        switch input.int(0...9) {
        case 0 where frames.count > 1:
            frames.remove(at: input.int(0...(frames.count - 1))); note("drop-frame")
        case 1 where !frames.isEmpty:
            let index = input.int(0...(frames.count - 1))
            frames.insert(frames[index], at: index); note("duplicate-frame")
        case 2 where frames.count > 1:
            frames.swapAt(input.int(0...(frames.count - 1)), input.int(0...(frames.count - 1))); note("reorder")
        case 3:
            let other = input.pick(others)
            let pool = ((try? other.frames(other.sends + other.replies)) ?? []).map(substituted)
            guard !pool.isEmpty else { return }
            frames.insert(input.pick(pool), at: input.int(0...frames.count)); note("splice")
        case 4 where !frames.isEmpty:
            let index = input.int(0...(frames.count - 1))
            frames[index].kind = input.pick(Self.kinds)
            if !frames[index].kind.carriesData { frames[index].data = [] }
            note("kind")
        case 5 where !frames.isEmpty && frames.count < 50:
            let index = input.int(0...(frames.count - 1))
            frames.insert(contentsOf: Array(repeating: frames[index], count: input.int(10...120)), at: index); note("flood")
        default:
            guard !frames.isEmpty else { return }
            let index = input.int(0...(frames.count - 1))
            mutateBody(&frames[index])
        }
    }

    private mutating func mutateBody(_ frame: inout Frame) {
        let keys = frame.body.keys.sorted()
        switch input.int(0...9) {
        case 0 where !keys.isEmpty:
            frame.body[input.pick(keys)] = nil; note("drop-key")
        case 1:
            frame.body[input.pick(Self.keys)] = anyValue(); note("add-key")
        case 2 where !keys.isEmpty:
            frame.body[input.pick(keys)] = anyValue(); note("retype")
        case 3 where frame.kind.carriesData:
            frame.data = input.pick([[], [0], Array(repeating: 0x41, count: 16 * 1024 + 1), Array(repeating: 0x42, count: 64 * 1024 + 1),
                                     input.bytes(count: input.int(1...300))])
            note("data-size")
        default:
            guard !keys.isEmpty else { frame.body[input.pick(Self.keys)] = anyValue(); note("add-key"); return }
            let key = input.pick(keys)
            if let value = frame.body[key] { frame.body[key] = mutateValue(value, depth: 0) }
        }
    }

    /// Walks into containers and changes one value in place.
    private mutating func mutateValue(_ value: TypedValue, depth: Int) -> TypedValue {
        switch value {
        case .dictionary(let keyType, let valueType, var entries) where !entries.isEmpty && depth < 6 && input.chance(70):
            if input.chance(20) {
                entries.append(.init(key: input.chance(80) ? .string(input.pick(Self.specialStrings(activityID))) : anyValue(),
                                     value: valueType == "v" ? .variant(illTypedValue()) : illTypedValue()))
                note("nested-add")
            } else {
                let index = input.int(0...(entries.count - 1))
                entries[index].value = mutateValue(entries[index].value, depth: depth + 1)
            }
            return .dictionary(keyType: keyType, valueType: valueType, entries)
        case .variant(let inner) where depth < 6 && input.chance(80):
            return .variant(mutateValue(inner, depth: depth + 1))
        case .array(let elementType, var elements) where !elements.isEmpty && depth < 6 && input.chance(60):
            let index = input.int(0...(elements.count - 1))
            elements[index] = mutateValue(elements[index], depth: depth + 1)
            return .array(elementType: elementType, elements)
        case .string, .objectPath, .signature:
            note("string")
            return specialString(like: value)
        case .uint32, .int32, .int64, .uint64, .int16, .uint16, .byte, .double, .boolean:
            note("integer-edge")
            return edge(of: value)
        default:
            note("ill-typed")
            return illTypedValue()
        }
    }

    /// Integers at and around the edges of their type (the arithmetic that once trapped).
    private mutating func edge(of value: TypedValue) -> TypedValue {
        switch value {
        case .uint32: return .uint32(input.pick([0, 1, 2, 255, 65_535, 65_536, 262_144, 262_145, 0x7fff_ffff, 0x8000_0000, UInt32.max - 1, UInt32.max,
                                                 UInt32(truncatingIfNeeded: input.uint64())]))
        case .int32: return .int32(input.pick([0, -1, 1, Int32.min, Int32.max]))
        case .int64: return .int64(input.pick([0, -1, 1, Int64.min, Int64.max, Int64.max / 1000, Int64(truncatingIfNeeded: input.uint64())]))
        case .uint64: return .uint64(input.pick([0, 1, UInt64(Int64.max), UInt64(Int64.max) + 1, UInt64.max, 1 << 40]))
        case .int16: return .int16(input.pick([0, -1, Int16.min, Int16.max]))
        case .uint16: return .uint16(input.pick([0, 1, UInt16.max]))
        case .byte: return .byte(input.pick([0, 1, 255]))
        case .double: return .double(input.pick([.nan, .infinity, -.infinity, -0.0, .greatestFiniteMagnitude]))
        case .boolean(let flag): return input.chance(50) ? .boolean(!flag) : .uint32(2)
        default: return value
        }
    }

    static func specialStrings(_ activityID: String) -> [String] {
        [
            "", activityID, "0", "1", "4294967295", "-1", "1/../x", "1 2", "../../etc/passwd", "/org/example/UserActivity/activity/1", "/", "//", "/a//b",
            "a\0b", "\0", String(repeating: "x", count: 256), String(repeating: "é", count: 600), String(repeating: "y", count: 4097),
            String(repeating: "z", count: 70_000), "org.example.UserActivity.Error.HandoffFailed", "org.example.UserActivity.Error.not a name!",
            "org..x", ".org.x", "org.x.", "x", "org.0x.y", "org.example.UserActivity.Error." + String(repeating: "n", count: 300),
            "org.freedesktop.DBus.Error.AccessDenied", "com.example.Editor", "com.example.Editor/../x", "-", "a{sv}", "((", "a{", "v",
            "file:///etc/passwd", "smb://203.0.113.9/share/x.txt", "javascript:alert(1)", "https://example.com/", "data:text/html,<b>x</b>",
            "😀", "\u{FFFF}", "\u{202E}txt.exe", "e\u{301}", "%00", "\n\r", "\"'\\",
            "org.example.UserActivity.open-document", "org.example.UserActivity.browsing-web", String(repeating: "ab", count: 32),
        ]
    }

    private mutating func specialString(like value: TypedValue) -> TypedValue {
        let text = input.chance(85) ? input.pick(Self.specialStrings(activityID)) : ValueGenerator(nonBusSafe).string(&input)
        switch input.int(0...9) {
        case 0: return .objectPath(text)
        case 1: return .signature(text)
        default: return .string(text)
        }
    }

    private var nonBusSafe: ValueGenerator.Configuration {
        var configuration = ValueGenerator.Configuration()
        configuration.busSafe = false
        configuration.maximumDepth = 4
        return configuration
    }

    /// A value of any type: mostly valid (the shared generator), sometimes one libdbus would refuse.
    private mutating func anyValue() -> TypedValue {
        input.chance(60) ? ValueGenerator(nonBusSafe).value(&input) : illTypedValue()
    }

    /// Values whose declared and actual types disagree, or that no D-Bus message may carry.
    private mutating func illTypedValue() -> TypedValue {
        var deep = TypedValue.string("deep")
        for _ in 0..<input.int(30...62) { deep = .variant(deep) }
        return input.pick([
            .objectPath("not a path"), .objectPath(""), .objectPath("/a/"), .signature("a{"), .signature("(((("), .signature("z"), .unixFD(0), .unixFD(-1),
            .array(elementType: "s", [.uint32(1)]), .array(elementType: "", []), .array(elementType: "zz", [.string("x")]),
            .array(elementType: "v", [.string("not a variant")]),
            .dictionary(keyType: "s", valueType: "v", [.init(key: .uint32(1), value: .variant(.string("x")))]),
            .dictionary(keyType: "s", valueType: "v", [.init(key: .string("x"), value: .string("not a variant"))]),
            .dictionary(keyType: "v", valueType: "s", []), .dictionary(keyType: "as", valueType: "s", []),
            .structure([]), .variant(.variant(.variant(.structure([])))), deep, .bytes(Array(repeating: 0, count: 70_000)),
            .string("a\0b"), .stringVariantDictionary([("uri", .string("file:///etc/passwd"))]),
        ])
    }

    private func substituted(_ frame: Frame) -> Frame {
        var frame = frame
        for (key, value) in frame.body { frame.body[key] = replacingPlaceholder(value) }
        return frame
    }

    private func replacingPlaceholder(_ value: TypedValue) -> TypedValue {
        switch value {
        case .string(FuzzSequence.activityPlaceholder): return .string(activityID)
        case .variant(let inner): return .variant(replacingPlaceholder(inner))
        default: return value
        }
    }

    // MARK: Bytes

    private mutating func mutateBytes(_ chunks: inout [[UInt8]]) {
        guard !chunks.isEmpty else { return }
        let index = input.int(0...(chunks.count - 1))
        var chunk = chunks[index]
        guard chunk.count > 5 else { return }
        switch input.int(0...5) {
        case 0:
            let length = input.pick([0, 1, UInt32(chunk.count - 5), UInt32(chunk.count - 3), 262_145, UInt32.max])
            chunk.replaceSubrange(0..<4, with: [UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff)])
            note("length-prefix")
        case 1:
            // The frame cut short, its length prefix saying so: the body ends early.
            let keep = input.int(5...(chunk.count - 1))
            chunk = Array(chunk[..<keep])
            let length = UInt32(keep - 4)
            chunk.replaceSubrange(0..<4, with: [UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff)])
            note("truncate")
        case 2:
            // A string's bytes made invalid UTF-8 (`s`, a one-byte length, then its bytes).
            let stringTag = UInt8(ascii: "s")
            let starts = (5..<(chunk.count - 2)).filter { (at: Int) -> Bool in
                let length = Int(chunk[at + 1])
                return chunk[at] == stringTag && length > 0 && length < 0x80 && at + 2 + length <= chunk.count
            }
            guard !starts.isEmpty else { return }
            let start = input.pick(starts)
            let invalid: [UInt8] = [0xff, 0xc0, 0x80, 0xed]
            chunk[start + 2 + input.int(0...(Int(chunk[start + 1]) - 1))] = input.pick(invalid)
            note("invalid-utf8")
        case 3:
            chunk[input.int(5...(chunk.count - 1))] ^= UInt8(1 << input.int(0...7)); note("bit-flip")
        case 4:
            let bytes: [UInt8] = [0, 0x7f, 0x80, 0xff, UInt8(ascii: "a"), UInt8(ascii: "{")]
            chunk[input.int(5...(chunk.count - 1))] = input.pick(bytes); note("byte")
        default:
            chunk[4] = UInt8(truncatingIfNeeded: input.int(0...255)); note("kind-byte")
        }
        // Kind 8 (unpair) would end the pairing the fuzzer needs.
        if chunk.count > 4 && chunk[4] == FrameKind.unpair.rawValue { chunk[4] = FrameKind.keepalive.rawValue }
        chunks[index] = chunk
    }
}
