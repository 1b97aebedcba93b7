// SPDX-License-Identifier: Apache-2.0
import FuzzGenerators
import ActivityStore
import Testing
import TypedValues

@Suite struct TypedValueCodecTests {
    func roundTrip(_ value: TypedValue, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let bytes = try TypedValueCodec.encode(value)
        let decoded = try TypedValueCodec.decode(bytes)
        #expect(decoded.isIdentical(to: value), "\(value) came back as \(decoded)", sourceLocation: sourceLocation)
        #expect(decoded.signature == value.signature, sourceLocation: sourceLocation)
    }

    @Test func basicTypesAtTheirLimits() throws {
        let values: [TypedValue] = [
            .byte(0), .byte(255), .boolean(true), .boolean(false),
            .int16(.min), .int16(.max), .uint16(.max), .int32(.min), .int32(-1), .uint32(.max),
            .int64(.min), .int64(.max), .uint64(.max), .uint64(0),
            .double(0), .double(-0.0), .double(.infinity), .double(-.infinity),
            .double(.greatestFiniteMagnitude), .double(.leastNonzeroMagnitude), .double(3.141592653589793),
            .string(""), .string("plain"), .objectPath("/org/example/UserActivity"), .signature("a{sv}"),
            .unixFD(3), .unixFD(-1),
        ]
        for value in values { try roundTrip(value) }
    }

    @Test func nanKeepsItsBitPatternAndNegativeZeroItsSign() throws {
        let payloads: [UInt64] = [0x7FF8_0000_0000_0001, 0xFFF0_0000_0000_0ABC, 0x7FF4_0000_0000_0000]
        for bits in payloads {
            let decoded = try TypedValueCodec.decode(TypedValueCodec.encode(.double(Double(bitPattern: bits))))
            guard case .double(let d) = decoded else { Issue.record("not a double"); continue }
            #expect(d.bitPattern == bits)
        }
        guard case .double(let zero) = try TypedValueCodec.decode(TypedValueCodec.encode(.double(-0.0))) else {
            Issue.record("not a double"); return
        }
        #expect(zero.sign == .minus)
    }

    @Test func stringsWithAnyUnicode() throws {
        let strings = [
            "café", "cafe\u{301}", "日本語のテキスト", "emoji 👩‍👩‍👧‍👦🏳️‍🌈", "עברית ومرحبا", "nul\u{0}inside",
            "\u{FEFF}bom", "\u{10FFFF}", String(repeating: "ß€𝄞", count: 100_000),
        ]
        for s in strings {
            try roundTrip(.string(s))
            try roundTrip(.variant(.string(s)))
        }
    }

    @Test func nestedContainersAndEmptyArraysKeepTheirTypes() throws {
        let userInfo: TypedValue = .stringVariantDictionary([
            ("page", .uint32(3)),
            ("ratio", .double(.nan)),
            ("tags", .stringArray(["a", "b"])),
            ("empty-structs", .array(elementType: "(ii)", [])),
            ("empty-dict", .dictionary(keyType: "s", valueType: "v", [])),
            ("empty-nested", .array(elementType: "aa{sv}", [])),
            ("matrix", .array(elementType: "ai", [
                .array(elementType: "i", [.int32(1), .int32(2)]),
                .array(elementType: "i", []),
            ])),
            ("point", .structure([.int16(-5), .string("x"), .variant(.variant(.byte(7)))])),
            ("by-id", .dictionary(keyType: "t", valueType: "(sb)", [
                .init(key: .uint64(1), value: .structure([.string("one"), .boolean(true)])),
                .init(key: .uint64(2), value: .structure([.string("two"), .boolean(false)])),
            ])),
            ("inner", .stringVariantDictionary([("deep", .stringVariantDictionary([("deeper", .int64(-9))]))])),
        ])
        try roundTrip(userInfo)
        try roundTrip(.array(elementType: "y", (0...255).map { .byte(UInt8($0)) }))
        try roundTrip(.structure([]))
    }

    @Test func sixtyFourLevelsAreAcceptedAndSixtyFiveAreNot() throws {
        var value: TypedValue = .byte(1)
        for _ in 0..<64 { value = .variant(value) }
        try roundTrip(value)
        #expect(throws: CodecError.self) { try TypedValueCodec.encode(.variant(value)) }

        // A hand-made blob 65 levels deep is refused when decoding too.
        let deep: [UInt8] = [1] + [UInt8](repeating: UInt8(ascii: "v"), count: 65) + [UInt8(ascii: "y"), 1]
        #expect(throws: CodecError.self) { try TypedValueCodec.decode(deep) }
        // And 100 000 levels do not overflow the stack.
        let deeper: [UInt8] = [1] + [UInt8](repeating: UInt8(ascii: "a"), count: 100_000)
        #expect(throws: CodecError.self) { try TypedValueCodec.decode(deeper) }
    }

    @Test func malformedInputThrows() throws {
        let cases: [[UInt8]] = [
            [],                                   // nothing
            [2, UInt8(ascii: "y"), 0],            // unknown version
            [1],                                  // no value
            [1, UInt8(ascii: "z")],               // unknown type code
            [1, UInt8(ascii: "b"), 2],            // boolean that is neither 0 nor 1
            [1, UInt8(ascii: "i"), 1, 2],         // truncated int32
            [1, UInt8(ascii: "s"), 5, 0x61],      // string longer than the data
            [1, UInt8(ascii: "s"), 2, 0xC3, 0x28], // invalid UTF-8
            [1, UInt8(ascii: "s"), 1, 0x80],      // lone continuation byte
            [1, UInt8(ascii: "y"), 1, 0],         // trailing byte
            [1, UInt8(ascii: "a"), 1, UInt8(ascii: "y"), 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], // count far beyond the data
            [1, UInt8(ascii: "s")] + [UInt8](repeating: 0xFF, count: 11), // varint overflow
            [1, UInt8(ascii: "(")],               // count missing
        ]
        for bytes in cases {
            #expect(throws: CodecError.self, "\(bytes)") { try TypedValueCodec.decode(bytes) }
        }
    }

    @Test func everyTruncationAndRandomDamageIsRejectedOrDecodedWithoutCrashing() throws {
        let value: TypedValue = .stringVariantDictionary([
            ("a", .array(elementType: "(sd)", [.structure([.string("x"), .double(1.5)])])),
            ("b", .dictionary(keyType: "s", valueType: "v", [.init(key: .string("k"), value: .variant(.int64(7)))])),
            ("c", .string("été")),
        ])
        let bytes = try TypedValueCodec.encode(value)
        for length in 0..<bytes.count {
            #expect(throws: CodecError.self) { try TypedValueCodec.decode(Array(bytes[..<length])) }
        }
        var generator = SplitMix64(seed: 42)
        for _ in 0..<20_000 {
            var damaged = bytes
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                damaged[Int.random(in: 0..<damaged.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            _ = try? TypedValueCodec.decode(damaged)
        }
        for _ in 0..<20_000 {
            let noise = (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? TypedValueCodec.decode([1] + noise)
        }
    }
}

/// `.bytes`, the compact form of an `ay`, against the spelled-out array of `.byte`.
@Suite struct CompactByteArrayTests {
    static let content: [UInt8] = [0, 1, 0x79, 0xFF, 0x80]
    static let compact = TypedValue.bytes(content)
    static let spelledOut = TypedValue.array(elementType: "y", content.map(TypedValue.byte))

    @Test func equalToTheSpelledOutArrayAndNothingElse() {
        #expect(Self.compact == Self.spelledOut && Self.spelledOut == Self.compact)
        #expect(Self.compact.isIdentical(to: Self.spelledOut) && Self.spelledOut.isIdentical(to: Self.compact))
        #expect(TypedValue.bytes([]) == .array(elementType: "y", []))
        #expect(TypedValue.bytes([]) != .array(elementType: "n", []))
        #expect(Self.compact != .bytes(Array(Self.content.dropLast())))
        #expect(Self.compact != .array(elementType: "y", Self.content.dropLast().map(TypedValue.byte) + [.byte(0)]))
        #expect(Self.compact != .array(elementType: "q", Self.content.map { .uint16(UInt16($0)) }))
        #expect(TypedValue.variant(Self.compact) == .variant(Self.spelledOut))
        #expect(TypedValue.stringVariantDictionary([("k", Self.compact)]) == .stringVariantDictionary([("k", Self.spelledOut)]))
        #expect(Self.compact.signature == "ay" && Self.compact.hasSignature("ay") && !Self.compact.hasSignature("ab"))
        #expect(Self.compact.signatureLength == 2)
        #expect(Self.compact.marshalledSize == Self.spelledOut.marshalledSize)
        #expect(Self.compact.bytesValue == Self.content && Self.spelledOut.bytesValue == Self.content)
        #expect(Self.compact.arrayElements == Self.spelledOut.arrayElements)
        #expect(Self.compact.contains(anyOf: Array("y".utf8)) && !Self.compact.contains(anyOf: Array("h".utf8)))
    }

    @Test func storedAsTheArrayOfBytesAlwaysWas() throws {
        let encoded = try TypedValueCodec.encode(Self.compact)
        #expect(encoded == (try TypedValueCodec.encode(Self.spelledOut)))
        // Written by the codec before `.bytes` existed: version 1, `a`, element
        // type "y", count 5, then a `y` and its byte per element.
        let previousFormat: [UInt8] = [1, 0x61, 1, 0x79, 5, 0x79, 0, 0x79, 1, 0x79, 0x79, 0x79, 0xFF, 0x79, 0x80]
        #expect(encoded == previousFormat)
        let decoded = try TypedValueCodec.decode(previousFormat)
        guard case .bytes(let bytes) = decoded else { Issue.record("decoded as \(decoded)"); return }
        #expect(bytes == Self.content)
        let nested = TypedValue.stringVariantDictionary([("blob", Self.spelledOut), ("list", .array(elementType: "ay", [Self.compact, .bytes([])]))])
        let roundTripped = try TypedValueCodec.decode(TypedValueCodec.encode(nested))
        #expect(roundTripped == nested && roundTripped.isIdentical(to: nested))
    }

    @Test func aDamagedByteArrayIsRefused() {
        // An element that is not a `y`, and a count that runs past the end.
        #expect(throws: CodecError.self) { try TypedValueCodec.decode([1, 0x61, 1, 0x79, 2, 0x79, 0, 0x6E, 0, 0]) }
        #expect(throws: CodecError.self) { try TypedValueCodec.decode([1, 0x61, 1, 0x79, 3, 0x79, 0, 0x79]) }
    }

    @Test func heldBytesFollowWhatIsHeld() {
        let blob = [UInt8](repeating: 7, count: 65_000)
        let compact = TypedValue.bytes(blob)
        let spelledOut = TypedValue.array(elementType: "y", blob.map(TypedValue.byte))
        #expect(compact.heldBytes >= 65_000 && compact.heldBytes < 65_000 + 256)
        #expect(spelledOut.heldBytes >= 65_000 * MemoryLayout<TypedValue>.stride)
        // 16,000 empty `ay`s are 64 KB on the wire but an enum and no buffer each here;
        // 16,000 small variants a box each.
        let manyEmpty = TypedValue.array(elementType: "ay", Array(repeating: .bytes([]), count: 16_000))
        #expect(manyEmpty.heldBytes >= 16_000 * MemoryLayout<TypedValue>.stride)
        let manySmall = TypedValue.stringVariantDictionary((0..<4_000).map { ("\($0)", .byte(1)) })
        #expect(manySmall.heldBytes > 2 * manySmall.marshalledSize)
    }
}
