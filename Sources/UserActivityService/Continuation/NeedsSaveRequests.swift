// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport
import TypedValues
import UserActivityCore

/// NeedsSave: before a live activity whose NeedsSave is set is read for
/// saving or continuation, its owner's `Handler.SaveActivity` is asked for
/// fresh data (`userActivityWillSave`).
///
/// One SaveActivity call per activity is in flight at a time; everyone who
/// needs the fresh data while it runs waits for the same answer, each with
/// their own time limit (5 s for saving, the continuation's `timeout-ms`).
/// The answer is applied through the registry (one PropertiesChanged) with
/// NeedsSave cleared. A failed call, an answer that is not valid, or a time
/// limit passing leaves the data as they are; NeedsSave then stays set, so
/// the next read asks again.
///
/// Without a registered handler the owner cannot be asked, and the data are
/// read as they are (the spec's fine print).
///
/// Each waiter learns how the request ended (``Outcome``): saving and a
/// local continuation read the data either way; a handoff to another device
/// refuses to send data its owner failed to bring up to date.
final class NeedsSaveRequests {
    enum Outcome: Equatable {
        /// Nobody to ask (no NeedsSave, no handler, the activity ended): the data as they are.
        case notAsked
        /// The owner's answer was applied.
        case saved
        /// The call failed or its answer could not be applied.
        case failed(String)
        /// The waiter's time limit passed first.
        case timedOut
    }

    /// The spec's time limit for SaveActivity when saving.
    static let savingTimeoutMilliseconds: UInt32 = 5000

    private final class Waiter {
        let completion: (Outcome) -> Void
        var timer: ScheduledWork?
        var isDone = false
        init(_ completion: @escaping (Outcome) -> Void) { self.completion = completion }

        func resolve(_ outcome: Outcome) {
            guard !isDone else { return }
            isDone = true
            timer?.cancel()
            timer = nil
            completion(outcome)
        }
    }

    /// A saved copy waiting for fresh data: the uses it counts, and the
    /// activity as it was, for when it is invalidated before the answer.
    private struct DeferredSave {
        var uses: [Bool]
        var snapshot: LiveActivity
    }

    private let context: ServiceContext
    private var inFlight: [String: [Waiter]] = [:]
    private var deferredSaves: [String: DeferredSave] = [:]
    /// Work that will start a deferred save's SaveActivity call on the loop's next turn.
    private var pendingStarts: [String: ScheduledWork] = [:]

    init(context: ServiceContext) {
        self.context = context
    }

    /// Whether reading `activity` must wait for its owner's SaveActivity.
    func mustRefresh(_ activity: LiveActivity) -> Bool {
        activity.properties.needsSave && context.continuationHandlers.hasHandler(activity.appID)
    }

    /// Takes over a saved-copy write that must wait for fresh data; the
    /// service's `persist` calls this for each save it is asked for.
    ///
    /// - Returns: false when the copy can be written now (the caller writes
    ///   it); true when it will be written after SaveActivity answers or 5 s
    ///   pass. The call to the owner starts on the loop's next turn, after the
    ///   caller's reply went out, so a reply never waits for it and an app
    ///   learns its activity's path before it is asked about it.
    func deferSave(of activity: LiveActivity, countsAsUse: Bool) -> Bool {
        guard mustRefresh(activity) else { return false }
        if deferredSaves[activity.id] != nil {
            deferredSaves[activity.id]!.uses.append(countsAsUse)
            deferredSaves[activity.id]!.snapshot = activity
            return true
        }
        deferredSaves[activity.id] = DeferredSave(uses: [countsAsUse], snapshot: activity)
        let id = activity.id
        // Scheduled work is cancelled when released: keep it until it ran.
        // A zero delay, not `whenIdle`: it runs at the bus's own priority,
        // so a stream of calls cannot hold it back the way it holds back idle work.
        pendingStarts[id] = context.scheduler.after(milliseconds: 0) { [weak self] in
            self?.pendingStarts[id] = nil
            self?.refresh(id, timeoutMilliseconds: Self.savingTimeoutMilliseconds) { [weak self] _ in
                self?.writeDeferredSave(id)
            }
        }
        return true
    }

    private func writeDeferredSave(_ id: String) {
        guard let deferred = deferredSaves.removeValue(forKey: id) else { return }
        let activity = context.registry.activity(id) ?? deferred.snapshot
        let uses = deferred.uses.filter { $0 }.count
        do {
            if uses == 0 {
                try context.saved.save(activity, countsAsUse: false, now: context.scheduler.now)
            } else {
                for _ in 0..<uses { try context.saved.save(activity, countsAsUse: true, now: context.scheduler.now) }
            }
            context.log.debug("saved copy written after SaveActivity", metadata: ["activity": "\(id)", "uses": "\(uses)"])
        } catch {
            // Nobody waits for this write (BecomeCurrent already answered): the journal is the only place to say so.
            context.log.error("could not write the saved copy of activity \(id) after SaveActivity: \(error)")
        }
    }

    /// Asks the owner of `activityID` for fresh data; `completion` runs once,
    /// when the answer was applied, the call failed, or the time limit passed
    /// (possibly at once, when there is nobody to ask).
    func refresh(_ activityID: String, timeoutMilliseconds: UInt32, completion: @escaping (Outcome) -> Void) {
        guard let activity = context.registry.activity(activityID), mustRefresh(activity),
              let handler = context.continuationHandlers.handler(for: activity.appID) else {
            completion(.notAsked)
            return
        }
        let waiter = Waiter(completion)
        waiter.timer = context.scheduler.after(milliseconds: timeoutMilliseconds) { [weak waiter] in
            waiter?.timer = nil
            waiter?.resolve(.timedOut)
        }
        if inFlight[activityID] != nil {
            inFlight[activityID]!.append(waiter)
            return
        }
        inFlight[activityID] = [waiter]
        do {
            let message = try AppMessages.handlerCall(handler, "SaveActivity", [.objectPath(UserActivityService.path(of: activityID))])
            context.bus.callAsync(message, timeoutMilliseconds: Int32(clamping: Int64(timeoutMilliseconds))) { [weak self] result in
                self?.answered(activityID, app: activity.appID, result)
            }
        } catch {
            context.log.error("could not build SaveActivity: \(error)")
            answered(activityID, app: activity.appID, .failure(DBusFailure(name: "org.freedesktop.DBus.Error.Failed", message: "\(error)")))
        }
    }

    private func answered(_ activityID: String, app: String, _ result: Result<Message, DBusFailure>) {
        let waiters = inFlight.removeValue(forKey: activityID) ?? []
        let outcome: Outcome
        switch result {
        case .success(let reply):
            outcome = apply(reply, to: activityID, app: app, someoneWaits: waiters.contains { !$0.isDone } || deferredSaves[activityID] != nil)
        case .failure(let failure):
            context.log.warning("SaveActivity failed; the activity is read with its data as they are", metadata: [
                "app": "\(app)", "activity": "\(activityID)", "error": "\(failure.name): \(failure.message)",
            ])
            outcome = .failed("\(failure.name): \(failure.message)")
        }
        for waiter in waiters { waiter.resolve(outcome) }
    }

    /// Applies SaveActivity's answer with NeedsSave cleared.
    ///
    /// `app-id`, `activity-type` and `needs-save` in the answer are ignored
    /// (they are not the owner's to change this way); any other problem with
    /// the answer leaves the data as they are but still clears NeedsSave: the
    /// owner was asked and answered.
    private func apply(_ reply: Message, to activityID: String, app: String, someoneWaits: Bool) -> Outcome {
        guard context.registry.activity(activityID) != nil else { return .notAsked }
        var outcome = Outcome.saved
        let registry = context.registry
        let cleared: (String, TypedValue) = ("needs-save", .boolean(false))
        var events: [RegistryEvent]
        do {
            let arguments = try reply.arguments()
            TypedValue.closeFileDescriptors(in: arguments) // an app's reply may carry descriptors; none is used
            guard arguments.count == 1, let entries = arguments[0].stringVariantEntries else {
                throw UserActivityError.invalidArgument("SaveActivity must answer (a{sv}), not (\(reply.signature))")
            }
            let fresh = entries.filter { !["app-id", "activity-type", "needs-save"].contains($0.0) } + [cleared]
            events = try registry.update(activityID, with: try ActivityPatch.parse(fresh, allowsAppIDClaim: false), now: context.scheduler.now)
        } catch {
            context.log.warning("SaveActivity's answer was not applied; the data stay as they are", metadata: [
                "app": "\(app)", "activity": "\(activityID)", "error": "\(error)",
            ])
            outcome = .failed("its answer was not applied: \(error)")
            events = (try? registry.update(activityID, with: try ActivityPatch.parse([cleared], allowsAppIDClaim: false),
                                           now: context.scheduler.now)) ?? []
        }
        if someoneWaits {
            // The waiters read (and the deferred save writes) the fresh data themselves.
            events.removeAll { if case .saveRequested = $0 { return true } else { return false } }
        } else {
            // A late answer: keep the saved copy of a current activity in step, as any update would.
            do { try context.persist(events, deferringTo: self) } catch {
                context.log.error("could not update the saved copy after a late SaveActivity answer: \(error)")
            }
        }
        context.afterReply(Changes(events))
        return outcome
    }
}
