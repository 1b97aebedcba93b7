// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing
import TypedValues

@Suite struct StreamFrameTests {
    private func roundTrip(_ frame: Frame) throws -> Frame? {
        var reader = FrameReader(limit: FrameCodec.pairedLimit)
        reader.append(FrameCodec.encode(frame))
        return try reader.next()
    }

    @Test func everyStreamMessageCrossesTheWireWithTheKeyTurnedToTheReceiversView() throws {
        let sent = StreamKey(id: 7, openedHere: true)
        let seen = StreamKey(id: 7, openedHere: false)
        let bytes = (0..<StreamLimits.chunk).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let cases: [(StreamMessage, StreamMessage)] = [
            (.open(stream: 7, handoff: "a1"), .open(stream: 7, handoff: "a1")),
            (.data(sent, bytes), .data(seen, bytes)),
            (.data(sent, [0]), .data(seen, [0])),
            (.credit(sent, 65_536), .credit(seen, 65_536)),
            (.close(sent, nil), .close(seen, nil)),
            (.close(sent, StreamFailure(name: "org.example.UserActivity.Error.ConnectionUnavailable", message: "gone")),
             .close(seen, StreamFailure(name: "org.example.UserActivity.Error.ConnectionUnavailable", message: "gone"))),
        ]
        for (message, expected) in cases {
            let frame = try #require(try roundTrip(message.frame))
            #expect(frame == message.frame)
            #expect(StreamMessage.parse(frame) == expected)
        }
    }

    @Test func dataBytesTravelRawAfterTheBody() {
        let frame = StreamMessage.data(StreamKey(id: 1, openedHere: false), Array(repeating: 0xAB, count: 1000)).frame
        let encoded = FrameCodec.encode(frame)
        // Not a typed value per byte: the frame is barely larger than its data.
        #expect(encoded.count < 1100)
        #expect(encoded.suffix(1000).allSatisfy { $0 == 0xAB })
        #expect(Frame(.advert, data: [1, 2]).data.isEmpty)
    }

    @Test func aDataFrameWhoseBodyLengthOverrunsTheFrameIsRefused() {
        var bytes = FrameCodec.encode(StreamMessage.data(StreamKey(id: 1, openedHere: true), [9, 9]).frame)
        bytes[5] = 0xFF  // high byte of the body length
        var reader = FrameReader(limit: FrameCodec.pairedLimit)
        reader.append(bytes)
        #expect(throws: FrameDecodingError.badDataLayout) { try reader.next() }
        #expect(throws: FrameDecodingError.badDataLayout) { try FrameCodec.decode([FrameKind.streamData.rawValue, 0, 0][...]) }
    }

    @Test func malformedStreamFramesAreNotMessages() {
        let key = ["stream": TypedValue.uint32(1), "opener": .boolean(true)]
        #expect(StreamMessage.parse(Frame(.streamOpen, ["stream": .uint32(1)])) == nil)
        #expect(StreamMessage.parse(Frame(.streamOpen, ["stream": .uint32(1), "handoff": .string("")])) == nil)
        #expect(StreamMessage.parse(Frame(.streamData, ["stream": .uint32(1)], data: [1])) == nil)
        #expect(StreamMessage.parse(Frame(.streamData, key)) == nil)
        #expect(StreamMessage.parse(Frame(.streamData, key, data: Array(repeating: 0, count: StreamLimits.chunk + 1))) == nil)
        #expect(StreamMessage.parse(Frame(.streamCredit, key)) == nil)
        #expect(StreamMessage.parse(Frame(.streamCredit, key.merging(["bytes": .uint32(0)]) { $1 })) == nil)
        #expect(StreamMessage.parse(Frame(.streamCredit, key.merging(["bytes": .uint32(UInt32(StreamLimits.window) + 1)]) { $1 })) == nil)
        #expect(StreamMessage.parse(Frame(.advert, key)) == nil)
    }

    @Test func streamAndFailureFramesNeedPairing() {
        for kind in [FrameKind.streamOpen, .streamData, .streamCredit, .streamClose, .continueFailed] {
            #expect(!kind.isPairing)
        }
    }

    @Test func aSenderStopsAtTheWindowUntilCredited() {
        var flow = StreamFlow()
        flow.sent(StreamLimits.window - 10)
        #expect(flow.sendCredit == 10)
        flow.sent(10)
        #expect(flow.sendCredit == 0)
        let creditedWindow = flow.granted(UInt32(StreamLimits.window))
        #expect(creditedWindow)
        #expect(flow.sendCredit == StreamLimits.window)
        // More credit than was ever in flight is a broken peer.
        let creditedMore = flow.granted(1)
        #expect(!creditedMore)
    }

    @Test func aReceiverRefusesBytesBeyondTheWindowAndCreditsInBatches() {
        var flow = StreamFlow()
        let window = flow.received(StreamLimits.window)
        let overWindow = flow.received(1)
        #expect(window && !overWindow)
        let tooLittle = flow.delivered(1)
        #expect(tooLittle == nil)
        let quarter = StreamLimits.window / 4
        let batch = flow.delivered(quarter - 1)
        #expect(batch == UInt32(quarter))
        #expect(flow.receivedInFlight == StreamLimits.window - quarter)
        let refilled = flow.received(quarter)
        let overAgain = flow.received(1)
        #expect(refilled && !overAgain)
    }
}
