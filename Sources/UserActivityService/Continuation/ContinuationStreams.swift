// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import DBusKit
import TypedValues
import UserActivityCore

/// `OpenContinuationStream`: a socket pair between the continuing app and
/// the origin's owner (`supportsContinuationStreams`).
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
                    guard let origin = registry.activity(token.originActivityID) else { return false }
                    return origin.connection == token.originConnection && handlers.hasHandler(origin.appID)
                },
                now: now())
            // Both checked by originIsAlive just now, on this same turn of the loop.
            let origin = registry.activity(token.originActivityID)!
            let handler = handlers.handler(for: origin.appID)!

            var ends: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
                let code = errno
                tokens.revoke(token.value)
                throw UserActivityError(.continuationFailed, "could not create the stream's socket pair: \(String(cString: strerror(code)))")
            }
            // libdbus duplicates a file descriptor it marshals: our copies are closed once both messages are built.
            defer {
                close(ends[0])
                close(ends[1])
            }
            invocation.reply([.unixFD(ends[0])])
            let originPath = UserActivityService.path(of: origin.id)
            let message = try AppMessages.handlerCall(handler, "ContinuationStreamOpened", [.objectPath(originPath), .unixFD(ends[1])])
            log.debug("continuation stream opened", metadata: [
                "origin": "\(originPath)", "from": "\(token.receivingApp)", "to": "\(origin.appID)",
            ])
            bus.callAsync(message, timeoutMilliseconds: 25_000) { [weak self] result in
                if case .failure(let failure) = result {
                    self?.log.warning("the origin's handler did not take its end of a continuation stream", metadata: [
                        "app": "\(origin.appID)", "error": "\(failure.name): \(failure.message)",
                    ])
                }
            }
        }
    }
}
