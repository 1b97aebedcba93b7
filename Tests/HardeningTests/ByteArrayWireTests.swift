// SPDX-License-Identifier: Apache-2.0
@testable import DBusKit
import Testing
import TypedValues

/// An `ay` is decoded into the compact `.bytes`, and both spellings go on
/// the wire as the same bytes.
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

    @Test("Both spellings marshal identically through libdbus's iterators")
    func sameBytes() throws {
        let compact = Message.signal(path: "/org/example/UserActivity", interface: "org.example.UserActivity", member: "Changed")
        try compact.append(Self.arguments)
        let expanded = Message.signal(path: "/org/example/UserActivity", interface: "org.example.UserActivity", member: "Changed")
        try expanded.append(Self.spelledOut)
        let viaIterators = try compact.marshalled()
        #expect(viaIterators == (try expanded.marshalled()))
        let built = try Message.signal(path: "/org/example/UserActivity", interface: "org.example.UserActivity",
                                       member: "Changed", arguments: Self.arguments)
        #expect(try built.marshalled() == viaIterators)
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
