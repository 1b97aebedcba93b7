// SPDX-License-Identifier: Apache-2.0
import BrowserHostProtocol

/// One browser profile's conversation: bytes from the extension in, pages
/// to the coalescer, framed replies out. Never waits for anything.
public final class HostSession {
    private var reader = NativeMessageReader()
    private let coalescer: PageCoalescer
    private let reply: ([UInt8]) -> Void

    /// - Parameter reply: takes a framed message for the browser; must not block.
    public init(coalescer: PageCoalescer, reply: @escaping ([UInt8]) -> Void) {
        self.coalescer = coalescer
        self.reply = reply
    }

    /// Bytes read from the browser.
    public func received<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        reader.append(bytes)
        while let frame = reader.next() {
            switch frame {
            case .tooLong(let length):
                send(HostReply.error("message of \(length) bytes dropped: the most this host reads is \(NativeMessaging.maximumIncomingBytes) bytes"))
            case .message(let payload):
                do throws(BrowserMessageError) {
                    coalescer.submit(try BrowserMessage.decode(payload))
                } catch {
                    send(HostReply.error(error.message))
                }
            }
        }
    }

    /// Sends a reply payload (framed here).
    public func send(_ payload: [UInt8]) {
        if let framed = NativeMessaging.frame(payload) { reply(framed) }
    }
}
