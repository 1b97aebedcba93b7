// SPDX-License-Identifier: Apache-2.0
import BrowserHostProtocol
import Testing

/// A small deterministic generator, so that a failing case can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func randomString(_ g: inout SplitMix64) -> String {
    let pieces = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{1}", "\u{7f}", "é", "日本", "😀", "\u{2028}", "{", "]", ":"]
    return (0..<Int.random(in: 0...8, using: &g)).map { _ in pieces.randomElement(using: &g)! }.joined()
}

func randomJSON(_ g: inout SplitMix64, depth: Int = 0) -> JSONValue {
    switch Int.random(in: 0...(depth > 3 ? 3 : 5), using: &g) {
    case 0: return .null
    case 1: return .bool(Bool.random(using: &g))
    case 2:
        let choices: [Double] = [0, -1, 42, 1.5, -0.25, 1e300, -123456789012, 3.14159]
        return .number(choices.randomElement(using: &g)!)
    case 3: return .string(randomString(&g))
    case 4: return .array((0..<Int.random(in: 0...4, using: &g)).map { _ in randomJSON(&g, depth: depth + 1) })
    default:
        return .object((0..<Int.random(in: 0...4, using: &g)).map { _ in (randomString(&g), randomJSON(&g, depth: depth + 1)) })
    }
}

@Suite struct JSONTests {
    @Test func writtenValuesReadBackEqual() throws {
        var g = SplitMix64(state: 34)
        for _ in 0..<3_000 {
            let value = randomJSON(&g)
            let bytes = JSONWriter.bytes(value)
            #expect(try JSONReader.parse(bytes) == value, "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test func arbitraryBytesAreReadOrRefusedNeverCrash() throws {
        var g = SplitMix64(state: 7)
        let alphabet = Array(#"{}[]":,-.0123456789eEtrufalsn \u\"#.utf8) + [0x00, 0x0A, 0xC3, 0xA9, 0xFF, 0xED, 0xA0, 0x80]
        var accepted = 0
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...24, using: &g)).map { _ in alphabet.randomElement(using: &g)! }
            if let value = try? JSONReader.parse(bytes) {
                accepted += 1
                // Whatever is read is written as JSON that reads back the same.
                #expect(try JSONReader.parse(JSONWriter.bytes(value)) == value)
            }
        }
        #expect(accepted > 0)
    }

    @Test(arguments: [
        "", " ", "{", "{\"a\"}", "{\"a\":}", "[1,]", "[1 2]", "01", "1.", ".5", "-", "1e", "tru", "nul", "\"abc",
        "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"a\u{1}b\"", "{} {}", "[\"\\u12\"]", "NaN", "Infinity", "1e999", "-82.8E889",
    ])
    func malformedTextIsRefused(text: String) {
        #expect(throws: JSONError.self) { try JSONReader.parse(Array(text.utf8)) }
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: JSONError.self) { try JSONReader.parse([0x22, 0xFF, 0x22]) }
        #expect(throws: JSONError.self) { try JSONReader.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }
    }

    @Test func nestingIsBounded() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONError.self) { try JSONReader.parse(Array(deep.utf8)) }
        let fine = String(repeating: "[", count: JSONReader.maximumDepth) + String(repeating: "]", count: JSONReader.maximumDepth)
        #expect(throws: Never.self) { try JSONReader.parse(Array(fine.utf8)) }
    }

    @Test func escapesAndSurrogates() throws {
        let value = try JSONReader.parse(Array(#"{"t":"a\"b\\c\/d\n\u00e9\ud83d\ude00","n":-1.5e2,"b":[true,false,null]}"#.utf8))
        #expect(value["t"] == .string("a\"b\\c/d\né😀"))
        #expect(value["n"] == .number(-150))
        #expect(value["b"] == .array([.bool(true), .bool(false), .null]))
    }
}

@Suite struct FramingTests {
    @Test func messagesSurviveAnySplitOfTheStream() {
        var g = SplitMix64(state: 99)
        for _ in 0..<300 {
            let messages = (0..<Int.random(in: 1...6, using: &g)).map { _ in
                (0..<Int.random(in: 0...300, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }
            }
            let stream = messages.flatMap { NativeMessaging.frame($0)! }
            var reader = NativeMessageReader()
            var got: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                let cut = min(stream.count, offset + Int.random(in: 1...64, using: &g))
                reader.append(stream[offset..<cut])
                offset = cut
                while case .message(let payload)? = reader.next() { got.append(payload) }
            }
            #expect(got == messages)
            #expect(reader.bufferedCount == 0)
        }
    }

    @Test func lengthIsInTheMachinesByteOrder() {
        let framed = NativeMessaging.frame(Array("{}".utf8))!
        #expect(framed.count == 6)
        #expect(framed.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) } == 2)
    }

    @Test func anOverlongMessageIsSkippedWithoutBeingBuffered() {
        var reader = NativeMessageReader(maximumMessageBytes: 100)
        var stream = withUnsafeBytes(of: UInt32(10_000)) { Array($0) }
        stream += [UInt8](repeating: 0x41, count: 10_000)
        stream += NativeMessaging.frame(Array("{\"type\":\"none\"}".utf8))!
        var frames: [NativeMessageFrame] = []
        var offset = 0
        while offset < stream.count {
            let cut = min(stream.count, offset + 999)
            reader.append(stream[offset..<cut])
            offset = cut
            #expect(reader.bufferedCount <= 1_000)
            while let frame = reader.next() { frames.append(frame) }
        }
        #expect(frames == [.tooLong(10_000), .message(Array("{\"type\":\"none\"}".utf8))])
    }

    @Test func repliesOverTheBrowsersLimitAreNotFramed() {
        #expect(NativeMessaging.frame([UInt8](repeating: 0x20, count: NativeMessaging.maximumOutgoingBytes + 1)) == nil)
        #expect(NativeMessaging.frame([UInt8](repeating: 0x20, count: NativeMessaging.maximumOutgoingBytes)) != nil)
    }
}

@Suite struct BrowserMessageTests {
    func decode(_ text: String) throws(BrowserMessageError) -> BrowserMessage { try BrowserMessage.decode(Array(text.utf8)) }

    @Test func pageAndNone() throws {
        #expect(try decode(#"{"type":"page","url":"https://example.com/a?b#c","title":"A","searchable":true}"#)
                == .page(PageState(url: "https://example.com/a?b#c", title: "A", searchable: true)))
        #expect(try decode(#"{"type":"page","url":"http://127.0.0.1:8080/"}"#) == .page(PageState(url: "http://127.0.0.1:8080/", title: "")))
        #expect(try decode(#"{"type":"none","extra":1}"#) == BrowserMessage.none)
    }

    @Test(arguments: [
        "not json", "[]", "42", #"{"url":"https://e.com/"}"#, #"{"type":5}"#, #"{"type":"page"}"#, #"{"type":"page","url":7}"#,
        #"{"type":"page","url":"https://e.com/","title":5}"#, #"{"type":"page","url":"https://e.com/","searchable":"yes"}"#,
        #"{"type":"page","url":"file:///etc/passwd"}"#, #"{"type":"page","url":"about:blank"}"#, #"{"type":"page","url":"chrome://settings"}"#,
        #"{"type":"page","url":"data:text/html,x"}"#, #"{"type":"page","url":"moz-extension://x/y"}"#,
        #"{"type":"page","url":"https://user:pw@example.com/"}"#, #"{"type":"page","url":"https://user@example.com/"}"#,
        #"{"type":"page","url":"https:///nohost"}"#, #"{"type":"page","url":"https://e.com/a b"}"#, #"{"type":"launch"}"#,
    ])
    func refusedWithAReason(text: String) {
        do {
            _ = try decode(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(!error.message.isEmpty)
        }
    }

    @Test func aLongTitleIsCutAtACharacter() throws {
        let title = String(repeating: "é", count: 1_000)
        guard case .page(let page) = try decode(#"{"type":"page","url":"https://e.com/","title":"\#(title)"}"#) else {
            Issue.record("not a page"); return
        }
        #expect(page.title.utf8.count <= BrowserMessage.maximumTitleBytes)
        #expect(page.title.utf8.count >= BrowserMessage.maximumTitleBytes - 1)
        #expect(title.hasPrefix(page.title))
    }

    @Test func repliesAreJSON() throws {
        #expect(try JSONReader.parse(HostReply.error("bad \"x\"\n"))["error"] == .string("bad \"x\"\n"))
        #expect(try JSONReader.parse(HostReply.ready(appID: "chromium"))["appId"] == .string("chromium"))
    }
}
