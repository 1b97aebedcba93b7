// SPDX-License-Identifier: Apache-2.0
// Bytes from a peer → HandoffCore's FrameReader / FrameCodec.decode: what a
// device on the network (paired or not) can send useractivity-handoffd.
// Properties: no crash; no frame over the reader's limit comes out; every
// frame decoded re-encodes to bytes that decode to the same encoding; the
// same stream read in other chunk sizes gives the same frames; a stream frame
// that parses is within its bounds and round-trips.
import FuzzDriver
import HandoffCore

/// Frames (as their encodings) and the error that ended the stream, reading
/// `bytes` in chunks of `chunk` bytes.
func read(_ bytes: [UInt8], limit: Int, chunk: Int) -> (frames: [[UInt8]], error: String?, violations: [String]) {
    var reader = FrameReader(limit: limit)
    var frames: [[UInt8]] = []
    var violations: [String] = []
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + chunk)
        reader.append(bytes[offset..<end])
        offset = end
        do {
            while let frame = try reader.next() {
                let encoded = FrameCodec.encode(frame)
                if encoded.count - 4 > limit {
                    violations.append("a frame of \(encoded.count - 4) bytes passed a reader limited to \(limit)")
                }
                do {
                    let again = try FrameCodec.decode(encoded[4...])
                    if FrameCodec.encode(again) != encoded {
                        violations.append("re-encoding a decoded \(frame.kind) frame is not stable")
                    }
                } catch {
                    violations.append("a re-encoded \(frame.kind) frame does not decode: \(error)")
                }
                frames.append(encoded)
            }
        } catch {
            return (frames, "\(error)", violations)
        }
    }
    return (frames, nil, violations)
}

FuzzDriver.run { bytes in
    guard !bytes.isEmpty else { return [] }
    // The first byte picks a chunk size; the rest is the stream.
    let chunk = Int(bytes[0] % 16) + 1
    let stream = Array(bytes.dropFirst())
    var violations: [String] = []
    for limit in [FrameCodec.unpairedLimit, FrameCodec.pairedLimit] {
        let whole = read(stream, limit: limit, chunk: max(1, stream.count))
        let pieces = read(stream, limit: limit, chunk: chunk)
        violations += whole.violations + pieces.violations
        if whole.frames != pieces.frames || whole.error != pieces.error {
            violations.append("reading in chunks of \(chunk) gave other frames than reading at once (limit \(limit))")
        }
    }
    // A single frame's bytes, as decode gets them after the length prefix.
    if let frame = try? FrameCodec.decode(stream[...]) {
        if (try? FrameCodec.decode(FrameCodec.encode(frame)[4...])) == nil {
            violations.append("decode accepted bytes whose re-encoding it refuses")
        }
        violations += streamViolations(frame)
    }
    return violations
}

/// A stream frame the daemon accepts stays within its bounds, and says the
/// same after the answer's round trip (which turns the key to the other side's view).
func streamViolations(_ frame: Frame) -> [String] {
    guard let message = StreamMessage.parse(frame) else { return [] }
    var violations: [String] = []
    if case .data(_, let bytes) = message, bytes.isEmpty || bytes.count > StreamLimits.chunk {
        violations.append("a stream-data frame of \(bytes.count) bytes was accepted")
    }
    if case .credit(_, let bytes) = message, bytes == 0 || bytes > UInt32(StreamLimits.window) {
        violations.append("a credit of \(bytes) bytes was accepted")
    }
    let reply = StreamMessage.parse(message.frame)
    if reply.flatMap({ StreamMessage.parse($0.frame) }) != message {
        violations.append("a \(frame.kind) message does not survive two round trips")
    }
    return violations
}
