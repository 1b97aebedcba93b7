// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import DBusKit
import TypedValues
import UserActivityCore

/// `OpenContinuationStream`: a socket pair between the continuing app and
/// the origin's owner (`supportsContinuationStreams`), or the handoff
/// daemon's relay when the origin is on another device.
extension ContinuationService {
    /// `OpenContinuationStream(s continuation_token) → (h stream)`.
    ///
    /// The caller gets its end in the reply at once; the origin's handler
    /// gets the other end through `ContinuationStreamOpened` right after,
    /// asynchronously. Replying first matters: the continuing app may be the
    /// origin app itself, blocked in this very call.
    func openContinuationStream(_ invocation: Invocation) {
        let value = invocation.string(0)
        context.withCaller(invocation) { [unowned self] identity in
            let identified = (try? identity.actingApp(claim: nil, catalog: context.catalog)) != nil || !identity.claimedApps.isEmpty
            let caller = identity
            let token = try tokens.redeem(
                value, callerIsIdentified: identified, callerMayActFor: { caller.mayActFor(app: $0) },
                originIsAlive: { token in
                    // A relay's tokens go with its connection (connectionClosed).
                    if token.relayPath != nil { return true }
                    guard let origin = registry.activity(token.originActivityID) else { return false }
                    return origin.connection == token.originConnection && handlers.hasHandler(origin.appID)
                },
                now: now())
            if let relay = token.relayPath {
                let handler = RegisteredHandler(app: "", connection: token.originConnection, path: relay)
                try connect(reply: invocation, to: handler, origin: relay, app: "the relay \(token.originConnection)")
                return
            }
            // Both checked by originIsAlive just now, on this same turn of the loop.
            let origin = registry.activity(token.originActivityID)!
            let handler = handlers.handler(for: origin.appID)!
            do {
                try connect(reply: invocation, to: handler, origin: UserActivityService.path(of: origin.id), app: origin.appID)
            } catch {
                tokens.revoke(token.value)
                throw error
            }
        }
    }

    /// `OpenHandoffStream(o activity) → (h stream)`: useractivity-handoffd,
    /// for an app on another device that continued this live activity, gets
    /// one end of a stream whose other end goes to the owner's handler.
    func openHandoffStream(_ invocation: Invocation) {
        context.withCaller(invocation) { [unowned self] identity in
            let (id, origin) = try handoffOrigin(invocation, identity)
            let path = UserActivityService.path(of: id)
            guard origin.properties.supportsContinuationStreams else {
                throw UserActivityError(.continuationFailed, "the activity \(origin.activityType) does not support continuation streams")
            }
            guard let handler = handlers.handler(for: origin.appID) else {
                throw UserActivityError(.continuationFailed, "\(origin.appID) has no registered handler to receive the stream")
            }
            try connect(reply: invocation, to: handler, origin: path, app: origin.appID)
        }
    }

    /// Answers `invocation` with one end of a new socket pair and hands the
    /// other to `handler` through `ContinuationStreamOpened(origin, h)`.
    ///
    /// The reply goes first: the continuing app may be the origin app
    /// itself, blocked in this very call.
    private func connect(reply invocation: Invocation, to handler: RegisteredHandler, origin: String, app: String) throws {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            let code = errno
            throw UserActivityError(.continuationFailed, "could not create the stream's socket pair: \(String(cString: strerror(code)))")
        }
        // libdbus duplicates a file descriptor it marshals: our copies are closed once both messages are built.
        defer {
            close(ends[0])
            close(ends[1])
        }
        let message = try AppMessages.handlerCall(handler, "ContinuationStreamOpened", [.objectPath(origin), .unixFD(ends[1])])
        try finish(invocation, Changes(), reply: [.unixFD(ends[0])])
        log.debug("continuation stream opened", metadata: ["origin": "\(origin)", "to": "\(app)"])
        bus.callAsync(message, timeoutMilliseconds: 25_000) { [weak self] result in
            if case .failure(let failure) = result {
                self?.log.warning("the origin's handler did not take its end of a continuation stream", metadata: [
                    "app": "\(app)", "error": "\(failure.name): \(failure.message)",
                ])
            }
        }
    }
}
