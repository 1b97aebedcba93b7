// SPDX-License-Identifier: Apache-2.0
// Bytes from the browser → the host's NativeMessageReader (in chunks the input
// chooses), JSONReader and BrowserMessage.decode.
import BrowserHostProtocol
import FuzzDriver

FuzzDriver.run { bytes in
    var violations: [String] = []
    // The first byte picks the chunk size, so that the reader sees every way a pipe can cut the stream.
    let chunk = Int(bytes.first ?? 1) % 16 + 1
    var whole = NativeMessageReader(maximumMessageBytes: 4096)
    var chunked = NativeMessageReader(maximumMessageBytes: 4096)
    var wholeFrames: [NativeMessageFrame] = []
    var chunkedFrames: [NativeMessageFrame] = []
    let stream = Array(bytes.dropFirst())
    whole.append(stream)
    while let frame = whole.next() { wholeFrames.append(frame) }
    var offset = 0
    while offset < stream.count {
        let end = min(stream.count, offset + chunk)
        chunked.append(stream[offset..<end])
        offset = end
        while let frame = chunked.next() { chunkedFrames.append(frame) }
    }
    if wholeFrames != chunkedFrames { violations.append("chunking changed the frames") }
    if whole.bufferedCount > 4096 + 4 { violations.append("reader buffered \(whole.bufferedCount) bytes") }
    for frame in wholeFrames {
        guard case .message(let payload) = frame else { continue }
        if payload.count > 4096 { violations.append("message over the limit") }
        if let value = try? JSONReader.parse(payload) {
            // What is read is written as JSON that reads back the same.
            if (try? JSONReader.parse(JSONWriter.bytes(value))) != value { violations.append("JSON round trip differs") }
        }
        if case .page(let page)? = try? BrowserMessage.decode(payload) {
            if !WebPageURL.isPublishable(page.url) { violations.append("unpublishable URL accepted: \(page.url)") }
            if page.title.utf8.count > BrowserMessage.maximumTitleBytes { violations.append("title over the limit") }
        }
    }
    // The raw bytes as one payload too.
    _ = try? BrowserMessage.decode(bytes)
    return violations
}
