// SPDX-License-Identifier: Apache-2.0
@testable import DBusKit
import Testing
import TypedValues

/// The daemon builds most messages it sends itself (`WireEncoder`) and lets
/// `dbus_message_demarshal` validate them. They must be the very bytes
/// libdbus's own iterators produce, or apps would receive something else.
@Suite("Messages built by the wire encoder")
struct WireEncoderTests {
    private static func viaIterators(_ header: WireHeader, _ arguments: [TypedValue]) throws -> Message {
        let message: Message
        switch header.type {
        case .signal:
            message = Message.signal(path: header.path!, interface: header.interface!, member: header.member!)
        default:
            message = Message.methodCall(destination: header.destination, path: header.path!,
                                         interface: header.interface, member: header.member!)
        }
        try message.append(arguments)
        return message
    }

    /// 600 argument lists of one to four random values each, every type included.
    private static func randomArgumentLists(seed: UInt64) -> [[TypedValue]] {
        var configuration = ValueGenerator.Configuration()
        configuration.maximumDepth = 8
        configuration.maximumElements = 4
        configuration.maximumSignatureLength = 60
        let values = ValueGenerator(configuration)
        return (0..<600).map { i in
            var input = FuzzInput(seed: UInt64(i) &+ seed)
            return (0..<input.int(1...4)).map { _ in values.value(&input) }
        }
    }

    @Test("Byte for byte what libdbus's iterators write, for random arguments of every type")
    func sameBytesAsLibdbus() throws {
        var encoded = 0
        for (i, arguments) in Self.randomArgumentLists(seed: 4242).enumerated() {
            let header = i % 2 == 0
                ? WireHeader(type: .signal, expectsReply: false, path: "/org/example/UserActivity/activity/a\(i)",
                             interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
                : WireHeader(type: .methodCall, expectsReply: true, path: "/com/example/App/Handler",
                             interface: i % 3 == 0 ? nil : "org.example.UserActivity.Handler",
                             member: "ContinueActivity", destination: i % 5 == 0 ? nil : ":1.\(i)")
            let expected = try Self.viaIterators(header, arguments).marshalled()
            guard let message = header.message(arguments: arguments) else {
                Issue.record("the encoder refused \(arguments.map(\.signature).joined())")
                continue
            }
            encoded += 1
            let actual = try message.marshalled()
            #expect(actual == expected, "\(arguments.map(\.signature).joined()): \(actual.count) vs \(expected.count) bytes")
            // And libdbus reads back the same values (bit for bit: NaN payloads included).
            let readBack = try message.arguments()
            #expect(readBack.count == arguments.count && zip(readBack, arguments).allSatisfy { $0.isIdentical(to: $1) },
                    "\(arguments.map(\.signature).joined())")
        }
        #expect(encoded == 600)
    }

    @Test("Signatures checked and measured without building them agree with the built ones, for random values")
    func signatureWithoutStrings() {
        var containers = 0
        let lists = Self.randomArgumentLists(seed: 515)
        for (i, arguments) in lists.enumerated() {
            for value in arguments {
                let signature = value.signature
                #expect(value.signatureLength == signature.utf8.count, "\(signature)")
                #expect(value.hasSignature(signature), "\(signature)")
                // Another value's signature matches only when it is the same text.
                let other = lists[(i + 1) % lists.count][0].signature
                #expect(value.hasSignature(other) == (other == signature), "\(signature) vs \(other)")
                // A prefix, an extension and a one-byte change never match.
                #expect(!value.hasSignature(String(signature.dropLast())))
                #expect(!value.hasSignature(signature + "y"))
                if signature.count > 1 { containers += 1 }
                for (index, code) in signature.utf8.enumerated() where code == UInt8(ascii: "s") || code == UInt8(ascii: "u") {
                    var changed = Array(signature.utf8)
                    changed[index] = code == UInt8(ascii: "s") ? UInt8(ascii: "u") : UInt8(ascii: "s")
                    #expect(!value.hasSignature(String(decoding: changed, as: UTF8.self)), "\(signature)")
                }
            }
        }
        #expect(containers > 100, "the random values should include containers")
    }

    @Test("Replies carry the reply serial and the caller as destination; one basic value stays on the iterator path")
    func replies() throws {
        let header = WireHeader(type: .methodReturn, expectsReply: false, replySerial: 77, destination: ":1.9")
        let reply = try #require(header.message(arguments: [.objectPath("/a"), .stringVariantDictionary([("k", .uint32(1))])]))
        #expect(reply.kind == .methodReturn && reply.replySerial == 77 && reply.destination == ":1.9")
        #expect(reply.signature == "oa{sv}" && !reply.expectsReply && reply.serial == 0)
        #expect(WireHeader.isCheaperThroughIterators([.string("x")]))
        #expect(!WireHeader.isCheaperThroughIterators([.stringVariantDictionary([])]))
        #expect(!WireHeader.isCheaperThroughIterators([.string("x"), .string("y")]))
    }

    @Test("What the encoder cannot carry is refused, and the public constructors fall back to libdbus")
    func refusals() throws {
        let header = WireHeader(type: .signal, expectsReply: false, path: "/a", interface: "a.b", member: "C")
        #expect(header.message(arguments: [.unixFD(0), .string("x")]) == nil, "descriptors travel beside the bytes")
        #expect(header.message(arguments: [.string("nul\u{0}inside"), .string("x")]) == nil, "validation refuses NUL")
        #expect(header.message(arguments: [.objectPath("not a path"), .string("x")]) == nil)
        // (The public constructors then fall back to libdbus's iterators, which abort the
        // process on an invalid path, as they always did: the service validates paths first.)
        let fallback = try Message.signal(path: "/a", interface: "a.b", member: "C", arguments: [.unixFD(0), .string("x")])
        #expect(fallback.signature == "hs")
    }
}

/// An `ay` is decoded into the compact `.bytes` on both decoding paths, and
/// both spellings go on the wire as the same bytes.
@Suite("Byte arrays on the wire")
struct ByteArrayWireTests {
    static let content: [UInt8] = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    static let arguments: [TypedValue] = [
        .string("x"), .bytes(content), .variant(.bytes([])),
        .array(elementType: "ay", [.bytes([1, 2, 3]), .bytes([])]),
        .stringVariantDictionary([("blob", .bytes(content))]),
    ]
    static let spelledOut: [TypedValue] = [
        .string("x"), .array(elementType: "y", content.map(TypedValue.byte)), .variant(.array(elementType: "y", [])),
        .array(elementType: "ay", [.array(elementType: "y", [.byte(1), .byte(2), .byte(3)]), .array(elementType: "y", [])]),
        .stringVariantDictionary([("blob", .array(elementType: "y", content.map(TypedValue.byte)))]),
    ]

    @Test("Both spellings marshal identically, through libdbus's iterators and through the wire encoder")
    func sameBytes() throws {
        let header = WireHeader(type: .signal, expectsReply: false, path: "/org/example/UserActivity",
                                interface: "org.example.UserActivity", member: "Changed")
        let compact = Message.signal(path: "/org/example/UserActivity", interface: "org.example.UserActivity", member: "Changed")
        try compact.append(Self.arguments)
        let expanded = Message.signal(path: "/org/example/UserActivity", interface: "org.example.UserActivity", member: "Changed")
        try expanded.append(Self.spelledOut)
        let viaIterators = try compact.marshalled()
        #expect(viaIterators == (try expanded.marshalled()))
        let encoded = try #require(header.message(arguments: Self.arguments))
        #expect(try encoded.marshalled() == viaIterators)
        #expect(Self.arguments.map(\.signature) == Self.spelledOut.map(\.signature))
        #expect(Self.arguments.map(\.marshalledSize) == Self.spelledOut.map(\.marshalledSize))
    }

    @Test("Reading arguments (libdbus's iterators) gives back .bytes, equal to the spelled-out array")
    func decodedCompactly() throws {
        let message = Message.signal(path: "/org/example/UserActivity", interface: "org.example.UserActivity", member: "Changed")
        try message.append(Self.spelledOut)
        let decoded = try message.arguments()
        #expect(decoded == Self.spelledOut && decoded == Self.arguments)
        try #require(decoded.count == 5, "\(decoded.count) arguments")
        guard case .bytes(let bytes) = decoded[1] else { Issue.record("ay decoded as \(decoded[1].signature) in another form"); return }
        #expect(bytes == Self.content)
        guard case .variant(.bytes([])) = decoded[2],
              case .array("ay", let inner) = decoded[3], case .bytes([1, 2, 3]) = inner[0],
              case .bytes = decoded[4].stringVariantEntries?.first?.1 else {
            Issue.record("a nested ay did not come back compact: \(decoded)")
            return
        }
    }
}
