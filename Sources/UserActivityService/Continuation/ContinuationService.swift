// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import ActivityStore
import DBusKit
import GLibSupport
import Logging
import TypedValues
import UserActivityCore

/// Continuation: `ContinueActivity`, `ContinueSavedActivity`,
/// `Activity.Continue`, `RegisterHandler` and `OpenContinuationStream`, plus
/// NeedsSave before saving.
///
/// Everything runs on the service's loop and nothing blocks it: calls to
/// apps are asynchronous, launches only fork, and each continuation is a
/// ``PendingContinuation`` resumed by replies, registrations and timers.
/// Fifty continuations waiting for slow apps cost fifty pending calls and
/// fifty timers; unrelated calls are served meanwhile.
///
/// Choices where the spec is silent (to be documented in the interface XML):
/// - Candidate order: see ``ContinuationPlanner``.
/// - `timeout-ms` bounds delivery to the chosen app (launch, registration
///   and its answer together). A live origin's SaveActivity before it gets
///   its own `timeout-ms`; when it fails or does not answer in time, the
///   activity is continued with its data as they are.
/// - A D-Bus-activatable app that lacks the `continue-activity` action (or
///   answers ActivateAction with another error) gives `ContinuationFailed`
///   naming the app's error; an app that cannot be started or reached gives
///   `RemoteApplicationTimedOut`.
/// - A webpage-url fallback whose browser cannot be started gives `NoHandler`.
/// - A confined caller of `ContinueActivity` is the publisher: naming another
///   app is `AccessDenied` (as for every other `app-id`), naming none means
///   its own app, so only its own team's apps (or the webpage-url fallback)
///   receive it, `NoHandler` otherwise. Unknown origin (no publisher, every
///   declaring app a candidate) is for unconfined callers only.
final class ContinuationService {
    let context: ServiceContext
    /// The context's table, changed in place.
    var handlers: ContinuationHandlerTable {
        get { context.continuationHandlers }
        _modify { yield &context.continuationHandlers }
    }
    let tokens = ContinuationTokenBook()
    let needsSave: NeedsSaveRequests

    private(set) var pending: [UInt64: PendingContinuation] = [:]
    private var nextSerial: UInt64 = 1
    /// Apps launched for a continuation, with the continuations (in arrival
    /// order) waiting for them to register a handler. One launch per app
    /// while any wait, so fifty continuations do not start fifty copies.
    var awaitingHandler: [String: [UInt64]] = [:]

    /// Extra time libdbus waits for an app's answer past the continuation's
    /// own deadline, so that our timer (with the right error) fires first.
    static let replySlackMilliseconds: Int64 = 1000

    init(context: ServiceContext) {
        self.context = context
        self.needsSave = NeedsSaveRequests(context: context)
    }

    var log: Logger { context.log }
    var bus: Connection { context.bus }
    var registry: ActivityRegistry { context.registry }
    func now() -> Int64 { context.scheduler.now }

    // MARK: Manager methods

    /// `ContinueActivity(s activity_type, a{sv} properties, a{sv} options) → (s app_id)`.
    func continueActivity(_ invocation: Invocation) {
        let type = invocation.string(0)
        let entries = invocation.entries(1)
        let optionEntries = invocation.entries(2)
        context.withCaller(invocation) { [unowned self] identity in
            var payload = try ContinuationPayload.fromOutside(type: type, entries: entries, limits: registry.limits)
            let options = try ContinuationOptions.parse(optionEntries, method: "ContinueActivity")
            if identity.isConfined && options.streamRelay != nil {
                throw UserActivityError.accessDenied("only unconfined callers (useractivity-handoffd) may relay continuation streams")
            }
            if identity.isConfined {
                // A sandboxed app is the publisher of whatever it sends, named or not: the
                // team rule then keeps it to its own vendor's apps (it cannot pass an
                // activity off as one of unknown origin and reach another vendor's app).
                guard let own = identity.process.appID else {
                    throw UserActivityError.unknownApplication(
                        "the calling sandboxed process could not be matched to an installed app (\(identity.process.source)); a sandboxed caller continues activities as its own app, so it must be identified")
                }
                if let publisher = payload.publisher, publisher != own {
                    throw UserActivityError.accessDenied(
                        "a sandboxed caller may name only its own app (\(own)) as the publisher in app-id, not \(publisher); leave app-id out to publish as \(own)")
                }
                payload.publisher = own
            }
            try payload.checkContinuable(now: now())
            try start(invocation: invocation, method: "ContinueActivity", payload: payload, originID: nil, options: options, identity: identity)
        }
    }

    /// `ContinueSavedActivity(s saved_id, a{sv} options) → (s app_id)`.
    func continueSavedActivity(_ invocation: Invocation) {
        let savedID = invocation.string(0)
        let optionEntries = invocation.entries(1)
        context.withCaller(invocation) { [unowned self] identity in
            let options = try ContinuationOptions.parse(optionEntries, method: "ContinueSavedActivity")
            let entry = try context.saved.load(savedID: savedID, now: now())
            // Another app's entry is reported as missing to a confined caller,
            // so that it learns nothing about what other apps saved.
            guard let entry, ContinuationPlanner.mayContinueSaved(of: entry.appID, visibleApp: identity.visibleApp()) else {
                throw UserActivityError.notFound(
                    "no saved activity '\(savedID.prefix(64))': it was deleted or expired, or it is not visible to this caller (use a saved-id from Search or GetSuggestions)")
            }
            let payload = try ContinuationPayload.fromSaved(type: entry.activityType, app: entry.appID,
                                                            stored: entry.record.properties, limits: registry.limits)
            try payload.checkContinuable(now: now())
            try start(invocation: invocation, method: "ContinueSavedActivity", payload: payload, originID: nil, options: options, identity: identity)
        }
    }

    /// `Activity.Continue(a{sv} options) → (s app_id)`: the live activity is the origin.
    func continueLiveActivity(_ invocation: Invocation) {
        let optionEntries = invocation.entries(0)
        context.withCaller(invocation) { [unowned self] identity in
            guard let id = invocation.activityID, let activity = registry.activity(id) else {
                throw UserActivityError(.unknownObject, "no activity at \(invocation.message.path ?? "?"): it was invalidated or its connection closed")
            }
            // The spec's order: access, expiry, eligibility.
            if identity.isConfined && !identity.mayActFor(app: activity.appID) {
                throw UserActivityError.accessDenied(
                    "this activity belongs to another app; only its owning app or an unconfined caller (the shell, the CLI) may continue it")
            }
            let date = activity.properties.expirationDate
            if activity.hasExpired || (date != 0 && date <= now()) {
                throw UserActivityError.expired("the activity \(activity.activityType) expired at \(date) µs since the epoch; it can no longer be continued")
            }
            guard activity.properties.eligibleForHandoff else {
                throw UserActivityError(.notEligible, "the activity \(activity.activityType) is not eligible for handoff: set eligible-for-handoff to true to allow Continue")
            }
            let options = try ContinuationOptions.parse(optionEntries, method: "Activity.Continue")
            let payload = ContinuationPayload(activityType: activity.activityType, properties: activity.properties,
                                              publisher: activity.appID)
            try start(invocation: invocation, method: "Activity.Continue", payload: payload, originID: id, options: options, identity: identity)
        }
    }

    /// The live activity an unconfined caller (useractivity-handoffd) names by path.
    func handoffOrigin(_ invocation: Invocation, _ identity: ConnectionIdentity) throws -> (String, LiveActivity) {
        guard !identity.isConfined else {
            throw UserActivityError.accessDenied("only unconfined callers (useractivity-handoffd, the shell) may read or mark activities for Handoff")
        }
        let path = invocation.arguments[0].objectPathValue ?? "/"
        let id = path.hasPrefix(Interfaces.activityPathPrefix) ? String(path.dropFirst(Interfaces.activityPathPrefix.count)) : ""
        guard let activity = registry.activity(id) else {
            throw UserActivityError.notFound("no live activity at \(path): it was invalidated or its connection closed")
        }
        return (id, activity)
    }

    /// `FetchForHandoff(o activity, a{sv} options) → (s activity_type, a{sv} properties)`:
    /// the payload for another device, after NeedsSave, without continuing here.
    func fetchForHandoff(_ invocation: Invocation) {
        let optionEntries = invocation.entries(1)
        context.withCaller(invocation) { [unowned self] identity in
            let (id, activity) = try handoffOrigin(invocation, identity)
            let date = activity.properties.expirationDate
            if activity.hasExpired || (date != 0 && date <= now()) {
                throw UserActivityError.expired("the activity \(activity.activityType) expired; it can no longer be continued")
            }
            guard activity.properties.eligibleForHandoff else {
                throw UserActivityError(.notEligible, "the activity \(activity.activityType) is not eligible for handoff")
            }
            let options = try ContinuationOptions.parse(optionEntries, method: "FetchForHandoff")
            // Answered now, or (NeedsSave) once the owner's SaveActivity
            // answered or timed out: then no handler frame is left to return
            // to, so the same step runs from the completion. Data the owner
            // failed to bring up to date do not leave the device: the other
            // side would continue something older than what the person sees.
            let answer: (NeedsSaveRequests.Outcome) -> Void = { [unowned self] outcome in
                do {
                    switch outcome {
                    case .failed(let reason):
                        throw UserActivityError(.continuationFailed, "the owner \(activity.appID) failed to save the activity: \(reason)")
                    case .timedOut:
                        throw UserActivityError(.remoteApplicationTimedOut,
                                                "the owner \(activity.appID) did not save the activity within \(options.timeoutMilliseconds) ms")
                    case .saved, .notAsked: break
                    }
                    guard let origin = registry.activity(id) else {
                        throw UserActivityError.notFound("the activity ended while its owner was saving it")
                    }
                    let payload = ContinuationPayload(activityType: origin.activityType, properties: origin.properties, publisher: origin.appID)
                    try finish(invocation, Changes(), reply: [.string(origin.activityType), payload.dictionary])
                } catch {
                    invocation.fail(error)
                }
            }
            if needsSave.mustRefresh(activity) {
                needsSave.refresh(id, timeoutMilliseconds: options.timeoutMilliseconds, completion: answer)
            } else {
                answer(.notAsked)
            }
        }
    }

    /// `MarkContinued(o activity, s by_app_id)`: continued on another device.
    func markContinued(_ invocation: Invocation) {
        let app = invocation.string(1)
        context.withCaller(invocation) { [unowned self] identity in
            let (id, origin) = try handoffOrigin(invocation, identity)
            try AppIDName.validate(app, as: "by_app_id")
            try finish(invocation, Changes(continued: [.init(activityID: id, ownerApp: origin.appID, byApp: app)]))
        }
    }

    /// `RegisterHandler(o handler)`: the caller's app receives continuations there.
    func registerHandler(_ invocation: Invocation) {
        let path = invocation.arguments[0].objectPathValue ?? "/"
        context.withCaller(invocation) { [unowned self] identity in
            let app = try identity.actingApp(claim: nil, catalog: context.catalog)
            let replaced = handlers.register(RegisteredHandler(app: app, connection: invocation.sender, path: path))
            log.debug("continuation handler registered", metadata: [
                "app": "\(app)", "sender": "\(invocation.sender)", "path": "\(path)",
                "replaced": "\(replaced.map { "\($0.connection) \($0.path)" } ?? "-")",
            ])
            try finish(invocation, Changes())
            // Continuations waiting for this app's handler: their own calls, answered when the app answers.
            deliverToAwaiting(app: app)
        }
    }

    // MARK: Bookkeeping

    /// A connection left: its handlers and the tokens of its activities go,
    /// and continuations it asked for that have not reached an app yet are
    /// dropped (nobody is left to answer).
    func connectionClosed(_ name: String) {
        let apps = handlers.connectionClosed(name)
        if !apps.isEmpty {
            log.debug("continuation handlers dropped with their connection", metadata: ["sender": "\(name)", "apps": "\(apps)"])
        }
        tokens.connectionClosed(name)
        for continuation in pending.values where continuation.invocation.sender == name
            && [.refreshingOrigin, .awaitingHandler, .planned].contains(continuation.stage) {
            log.debug("continuation dropped: its caller left", metadata: ["continuation": "\(continuation.summary)"])
            finishSilently(continuation)
        }
    }

    /// Creates and runs a continuation.
    private func start(invocation: Invocation, method: String, payload: ContinuationPayload, originID: String?,
                       options: ContinuationOptions, identity: ConnectionIdentity) throws {
        // Each continuation holds state, a timer and perhaps a launched app
        // until it ends (up to its timeout-ms): bounded per caller, per
        // sandboxed app and in all. One the desktop search objects forward
        // through our own connection counts against the shell or app that
        // asked them, not against the service's connection.
        let limits = registry.limits
        let accounted = context.desktopContinuationCaller(of: invocation)
            ?? AccountedCaller(connection: invocation.sender, confinedApp: identity.isConfined ? identity.process.appID ?? "" : nil)
        let fromCaller = pending.values.lazy.filter { $0.accounted.connection == accounted.connection }.count
        guard fromCaller < limits.maximumPendingContinuationsPerConnection else {
            throw UserActivityError.limitExceeded("this connection already has \(fromCaller) continuations in flight, the most allowed; wait for one to finish")
        }
        if let app = accounted.confinedApp {
            let fromApp = pending.values.lazy.filter { $0.accounted.confinedApp == app }.count
            guard fromApp < limits.maximumPendingContinuationsPerApp else {
                throw UserActivityError.limitExceeded("the app \(app) already has \(fromApp) continuations in flight over all its connections, the most a sandboxed app may have; wait for one to finish")
            }
        }
        guard pending.count < limits.maximumPendingContinuations else {
            throw UserActivityError.limitExceeded("the service already has \(pending.count) continuations in flight, the most allowed; try again later")
        }
        let continuation = PendingContinuation(serial: nextSerial, invocation: invocation, method: method,
                                               payload: payload, originID: originID, options: options, accounted: accounted)
        nextSerial += 1
        pending[continuation.serial] = continuation
        if let originID, let origin = registry.activity(originID), needsSave.mustRefresh(origin) {
            continuation.stage = .refreshingOrigin
            needsSave.refresh(originID, timeoutMilliseconds: options.timeoutMilliseconds) { [unowned self] _ in
                originRefreshed(continuation)
            }
            return
        }
        planAndDeliver(continuation)
    }

    /// The owner answered SaveActivity (or did not in time): read the origin again.
    private func originRefreshed(_ continuation: PendingContinuation) {
        guard !continuation.isFinished else { return }
        if let originID = continuation.originID, let origin = registry.activity(originID) {
            continuation.payload.properties = origin.properties
        }
        do {
            try continuation.payload.checkContinuable(now: now())
        } catch {
            finish(continuation, failure: error)
            return
        }
        continuation.stage = .planned
        planAndDeliver(continuation)
    }

    /// Ends a continuation with its app's ID; a live origin hears `Continued`.
    ///
    /// The call was answered asynchronously (the app was launched, or its
    /// handler answered): the reply goes here, long after the handler
    /// returned, and the signal through the same `afterReply` step.
    func succeed(_ continuation: PendingContinuation, app: String) {
        guard !continuation.isFinished else { return }
        // The caller is waiting: answer first, then tidy up.
        continuation.invocation.reply([.string(app)])
        close(continuation)
        // Debug, not info: a line in the journal for every activity the user
        // continues would be a record of what they did (and a write per call).
        log.debug("activity continued", metadata: ["continuation": "\(continuation.summary)", "by": "\(app)"])
        var changes = Changes()
        if let originID = continuation.originID, let origin = registry.activity(originID) {
            changes.continued.append(.init(activityID: originID, ownerApp: origin.appID, byApp: app))
        }
        context.afterReply(changes)
    }

    /// The service's one effects step, for a continuation call answered now.
    func finish(_ invocation: Invocation, _ changes: Changes, reply: [TypedValue] = []) throws {
        try context.finish(invocation, changes, reply: reply, deferringTo: needsSave)
    }

    /// Ends a continuation with an error for its caller.
    func finish(_ continuation: PendingContinuation, failure error: Error) {
        guard !continuation.isFinished else { return }
        close(continuation)
        if let token = continuation.token { tokens.revoke(token) }
        log.info("continuation failed", metadata: ["continuation": "\(continuation.summary)", "error": "\(error)"])
        continuation.invocation.fail(error)
    }

    private func finishSilently(_ continuation: PendingContinuation) {
        guard !continuation.isFinished else { return }
        close(continuation)
        if let token = continuation.token { tokens.revoke(token) }
    }

    private func close(_ continuation: PendingContinuation) {
        continuation.stage = .finished
        continuation.timer?.cancel()
        continuation.timer = nil
        pending[continuation.serial] = nil
        if let app = continuation.app, var waiting = awaitingHandler[app] {
            waiting.removeAll { $0 == continuation.serial }
            awaitingHandler[app] = waiting.isEmpty ? nil : waiting
        }
    }

    /// Tells the chosen app that a continuation meant for it failed, when it
    /// can be told (it has a handler); fire and forget.
    func tellFailed(_ continuation: PendingContinuation, errorName: String, message text: String) {
        guard let app = continuation.app, let handler = handlers.handler(for: app) else { return }
        do {
            let message = try AppMessages.handlerCall(handler, "FailedToContinue", [
                .string(continuation.payload.activityType), .string(errorName), .string(text),
            ])
            message.expectsReply = false
            bus.send(message)
        } catch {
            log.error("could not build FailedToContinue: \(error)")
        }
    }
}
