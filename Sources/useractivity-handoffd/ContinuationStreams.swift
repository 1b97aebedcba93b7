// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import DBusKit
import HandoffCore
import TypedValues
import UserActivityInterfaces

/// Continuation streams with paired devices, and failed continuations told
/// back to the origin: the glue between the links, useractivityd and
/// ``StreamRelay``.
extension ActivityExchange {
    /// A relay path for the continuation of a fetched activity that supports
    /// continuation streams, nil for one that does not.
    func streamRelayPath(for properties: TypedValue, from device: DeviceObject, activityID: String) -> String? {
        guard case .boolean(true)? = properties.stringVariantEntries?.first(where: { $0.0 == "supports-continuation-streams" })?.1 else {
            return nil
        }
        return streams.register(device: device.id, activityID: activityID, now: now)
    }

    /// The other device fetched the activity but could not continue it: it
    /// stays uncontinued here (no `Continued`), and the journal says why.
    func receivedContinueFailed(_ frame: Frame, from device: DeviceObject) {
        let id = frame.string("id") ?? ""
        streams.revoke(device: device.id, activityID: id)
        log.info("\(device.name) could not continue activity \(id): \(frame.string("name") ?? "?"): \(frame.string("message") ?? "")")
    }

    func receivedStream(_ frame: Frame, on link: PeerLink) {
        guard let device = devices[link.peerDeviceID], device.paired, device.link === link else { return }
        guard let message = StreamMessage.parse(frame) else {
            link.close(reason: "\(link.address) sent a malformed \(frame.kind) frame: disconnected")
            return
        }
        let valid = streams.received(message, on: link, device: device.id, now: now) { [weak self] activityID, completion in
            guard let source = self?.activitySource else {
                return completion(.failure(HandoffError("ContinuationFailed", "useractivityd is not reachable")))
            }
            source.openHandoffStream(activityID: activityID, completion: completion)
        }
        if !valid { link.close(reason: "\(link.address) broke the stream protocol (\(frame.kind)): disconnected") }
    }

    /// `Handler.ContinuationStreamOpened(o, h)` from useractivityd at a relay
    /// path: a continuing app here opened its stream.
    func routeRelay(_ message: Message) -> Bool {
        guard message.kind == .methodCall, let path = message.path, path.hasPrefix(StreamRelay.relayPathPrefix) else { return false }
        let arguments = (try? message.arguments()) ?? []
        guard message.interface == Interfaces.handlerName, message.member == "ContinuationStreamOpened",
              arguments.count == 2, case .unixFD(let fd) = arguments[1], fd >= 0 else {
            TypedValue.closeFileDescriptors(in: arguments)
            context.reply(message, error: HandoffError("org.freedesktop.DBus.Error.UnknownMethod", "a relay path only takes Handler.ContinuationStreamOpened(o, h)"))
            return true
        }
        let failure = streams.opened(relayPath: path, fd: fd, link: { [weak self] id in
            guard let device = self?.devices[id], device.paired, device.reachable else { return nil }
            return device.link
        }, now: now)
        if let failure { context.reply(message, error: failure) } else { context.reply(message) }
        return true
    }
}
