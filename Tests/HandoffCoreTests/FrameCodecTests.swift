// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing
import TypedValues

@Suite struct FrameCodecTests {
    @Test func roundTripsEveryKindWithNestedValues() throws {
        for kind in FrameKind.allCases {
            let frame = Frame(kind, [
                "title": .string("Draft “one”"), "timestamp": .int64(-5),
                "properties": .dictionary(keyType: "s", valueType: "v", [
                    .init(key: .string("user-info"), value: .variant(.array(elementType: "(in)", []))),
                ]),
            ])
            var reader = FrameReader(limit: FrameCodec.pairedLimit)
            reader.append(FrameCodec.encode(frame))
            #expect(try reader.next() == frame)
            #expect(try reader.next() == nil)
            #expect(!reader.isMidFrame)
        }
    }

    @Test func assemblesFramesArrivingByteByByte() throws {
        let frames = [Frame(.hello, ["name": .string("A")]), Frame(.keepalive), Frame(.pairConfirm, ["accepted": .boolean(true)])]
        let bytes = frames.flatMap(FrameCodec.encode)
        var reader = FrameReader(limit: FrameCodec.unpairedLimit)
        var decoded: [Frame] = []
        for byte in bytes {
            reader.append([byte])
            while let frame = try reader.next() { decoded.append(frame) }
        }
        #expect(decoded == frames)
        #expect(!reader.isMidFrame)
    }

    @Test func aPartialFrameIsMidFrame() throws {
        var reader = FrameReader(limit: FrameCodec.unpairedLimit)
        reader.append(FrameCodec.encode(Frame(.hello)).dropLast())
        #expect(try reader.next() == nil)
        #expect(reader.isMidFrame)
    }

    @Test func refusesAFrameOverTheLimitFromItsLengthAlone() {
        var reader = FrameReader(limit: FrameCodec.unpairedLimit)
        let length = FrameCodec.unpairedLimit + 1
        reader.append([UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff)])
        #expect(throws: FrameDecodingError.tooLarge(length: length, limit: FrameCodec.unpairedLimit)) { try reader.next() }
    }

    @Test func theLimitRisesAfterPairing() throws {
        let big = Frame(.fetchReply, ["blob": .string(String(repeating: "x", count: 10_000))])
        var reader = FrameReader(limit: FrameCodec.unpairedLimit)
        reader.append(FrameCodec.encode(big))
        #expect(throws: FrameDecodingError.self) { try reader.next() }
        var paired = FrameReader(limit: FrameCodec.pairedLimit)
        paired.append(FrameCodec.encode(big))
        #expect(try paired.next() == big)
    }

    @Test func theSenderKnowsWhenAFrameWouldBeRefused() throws {
        let big = Frame(.fetchReply, ["blob": .string(String(repeating: "x", count: FrameCodec.pairedLimit))])
        #expect(FrameCodec.encode(big, limit: FrameCodec.pairedLimit) == nil)
        let small = Frame(.fetchReply, ["blob": .string("x")])
        let bytes = try #require(FrameCodec.encode(small, limit: FrameCodec.pairedLimit))
        var reader = FrameReader(limit: FrameCodec.pairedLimit)
        reader.append(bytes)
        #expect(try reader.next() == small)
    }

    @Test func namesEachDecodingError() {
        #expect(throws: FrameDecodingError.empty) { try FrameCodec.decode([]) }
        #expect(throws: FrameDecodingError.unknownKind(200)) { try FrameCodec.decode([200, 1]) }
        #expect(throws: FrameDecodingError.self) { try FrameCodec.decode([1, 9, 9, 9]) }
        // A valid value that is not a{sv}: version 1, 's', length 1, "x".
        #expect(throws: FrameDecodingError.bodyNotDictionary("s")) { try FrameCodec.decode([1, 1, UInt8(ascii: "s"), 1, UInt8(ascii: "x")]) }
    }

    @Test func garbageNeverCrashes() {
        var state: UInt64 = 0x9e3779b97f4a7c15
        for _ in 0..<2000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int(state % 40) {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                bytes.append(UInt8(truncatingIfNeeded: state >> 33))
            }
            state = state &* 6364136223846793005 &+ 1442695040888963407
            _ = try? FrameCodec.decode(bytes[...])
        }
    }
}

@Suite struct PairingCodeTests {
    let a = SHA256.hash(Array("device a".utf8))
    let b = SHA256.hash(Array("device b".utf8))
    let binding = SHA256.hash(Array("session".utf8))

    @Test func sha256MatchesKnownVectors() {
        #expect(Hex.encode(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Hex.encode(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hex.encode(SHA256.hash(Array(String(repeating: "a", count: 1000).utf8))) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test func bothSidesComputeTheSameSixDigits() {
        let here = PairingCode.derive(localKeyID: a, remoteKeyID: b, channelBinding: binding)
        let there = PairingCode.derive(localKeyID: b, remoteKeyID: a, channelBinding: binding)
        #expect(here == there)
        #expect(here.count == 6)
        #expect(here.allSatisfy { $0.isNumber })
    }

    @Test func anotherSessionOrKeyGivesAnotherCode() {
        let code = PairingCode.derive(localKeyID: a, remoteKeyID: b, channelBinding: binding)
        let otherSession = PairingCode.derive(localKeyID: a, remoteKeyID: b, channelBinding: SHA256.hash([1]))
        let otherKey = PairingCode.derive(localKeyID: a, remoteKeyID: SHA256.hash([2]), channelBinding: binding)
        #expect(code != otherSession)
        #expect(code != otherKey)
    }

    @Test func deviceIDsAreLowercaseSHA256Hex() {
        #expect(Hex.isDeviceID(Hex.encode(a)))
        #expect(!Hex.isDeviceID(Hex.encode(a).uppercased()))
        #expect(!Hex.isDeviceID("abc"))
        #expect(Hex.decode(Hex.encode(a)) == a)
    }
}
