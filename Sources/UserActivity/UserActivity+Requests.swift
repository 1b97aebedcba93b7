// SPDX-License-Identifier: Apache-2.0
import Foundation
import TypedValues
internal import UserActivityCore

extension UserActivity {
    // MARK: Lifecycle

    /// Makes this the session's current activity (`becomeCurrent()`); the
    /// previous current activity, of any app, stops being current.
    ///
    /// The first call publishes the activity (`BecomeCurrent` with every
    /// property set so far); later calls send pending changes and make it
    /// current again (the `Update` and `BecomeCurrent` leave together;
    /// called inside ``performBatchUpdates(_:)``, it carries the batch's
    /// changes). When the activity is eligible for search or prediction, the
    /// service saves a copy.
    ///
    /// ```swift
    /// activity.becomeCurrent()                     // returns at once
    /// try await activity.becomeCurrent().wait()    // or wait for the service
    /// ```
    @discardableResult
    public func becomeCurrent() -> ActivityOperation {
        request("becomeCurrent()") { activity, client, operation, done in
            activity.publish(client, makeCurrent: true, retryIfGone: true) { result in
                if case .success = result { client.currentActivity = activity }
                operation.finish(result)
                done()
            }
        }
    }

    /// Stops being current without being invalidated (`resignCurrent()`); a
    /// no-op when it is not current.
    @discardableResult
    public func resignCurrent() -> ActivityOperation {
        request("resignCurrent()", allowedWhenInvalidated: true) { activity, client, operation, done in
            guard let path = activity.objectPath else {
                operation.finish(.success(()))
                return done()
            }
            if client.currentActivity === activity { client.currentActivity = nil }
            client.callOnLoop(path: path, interface: UserActivityClient.activityInterface, "ResignCurrent", []) { result in
                switch result {
                case .failure(let error) where error.code == .unknownObject:
                    operation.finish(.success(()))   // gone: certainly not current
                default:
                    operation.finish(result.map { _ in () })
                }
                done()
            }
        }
    }

    /// Ends the activity for good (`invalidate()`): it stops being current
    /// and leaves the bus. Its saved copy, if any, stays. Releasing the last
    /// reference to a published activity invalidates it too.
    @discardableResult
    public func invalidate() -> ActivityOperation {
        lock.withLock { invalidated = true }
        return request("invalidate()", allowedWhenInvalidated: true) { activity, client, operation, done in
            guard let path = activity.objectPath else {
                operation.finish(.success(()))
                return done()
            }
            client.published[path] = nil
            if client.currentActivity === activity { client.currentActivity = nil }
            client.callOnLoop(path: path, interface: UserActivityClient.activityInterface, "Invalidate", []) { result in
                switch result {
                case .failure(let error) where error.code == .unknownObject:
                    operation.finish(.success(()))
                default:
                    operation.finish(result.map { _ in () })
                }
                done()
            }
        }
    }

    /// Runs `body` as an ordered step on the client's loop thread.
    func request(_ name: String, allowedWhenInvalidated: Bool = false,
                 _ body: @escaping @Sendable (UserActivity, UserActivityClient, ActivityOperation, @escaping @Sendable () -> Void) -> Void)
        -> ActivityOperation {
        let summary = "\(name) of \(activityType)"
        let client: UserActivityClient
        do {
            client = try resolvedClient
        } catch {
            return .failed(error, summary: summary, report: { error, request in
                FileHandle.standardError.write(Data("UserActivity: \(request) failed: \(error)\n".utf8))
            })
        }
        let operation = ActivityOperation(summary: summary, report: client.reporter)
        if !allowedWhenInvalidated && isInvalidated {
            operation.finish(.failure(UserActivityError(.invalidated, "the activity \(activityType) was invalidated; create a new UserActivity")))
            return operation
        }
        let queued = client.enqueueStep { [self] done in
            body(self, client, operation, done)
        }
        if !queued { operation.finish(.failure(client.closedError)) }
        return operation
    }

    // MARK: Publishing (loop thread)

    /// Creates the activity on the bus, or sends its pending changes and
    /// (with `makeCurrent`) makes it current.
    func publish(_ client: UserActivityClient, makeCurrent: Bool, retryIfGone: Bool,
                 _ completion: @escaping (Result<Void, UserActivityError>) -> Void) {
        let (existingPath, needsHandler): (String?, Bool) = lock.withLock {
            publishRequested = true
            return (path, needsHandlerLocked)
        }
        let proceed: () -> Void = { [self] in
            if let existingPath {
                // BecomeCurrent follows the Update at once, without waiting for
                // its reply: one connection keeps the order, so the service
                // applies the changes first. The step ends with both replies.
                var updateResult: Result<Void, UserActivityError>?
                var currentResult: Result<Void, UserActivityError>?
                let finish: () -> Void = { [self] in
                    guard let updated = updateResult, !makeCurrent || currentResult != nil else { return }
                    let result = makeCurrent ? currentResult! : updated
                    for case .failure(let error) in [updated, result] where error.code == .unknownObject && retryIfGone {
                        // The service lost it (restarted): publish it anew.
                        serviceLost()
                        return publish(client, makeCurrent: makeCurrent, retryIfGone: false, completion)
                    }
                    completion(result)
                }
                flushChanges(client, sent: {
                    guard makeCurrent else { return }
                    client.callOnLoop(path: existingPath, interface: UserActivityClient.activityInterface, "BecomeCurrent", []) { result in
                        currentResult = result.map { _ in () }
                        finish()
                    }
                }) { result in
                    updateResult = result
                    finish()
                }
                return
            }
            let entries: [(String, TypedValue)] = lock.withLock {
                dirty = []
                return fields.entries(explicitlySet)
            }
            client.callOnLoop(makeCurrent ? "BecomeCurrent" : "CreateActivity",
                              [.string(activityType), .stringVariantDictionary(entries)]) { [self] result in
                switch result {
                case .success(let reply):
                    guard let newPath = reply.first?.objectPathValue else {
                        return completion(.failure(UserActivityError(.invalidArgument, "the service answered without an object path")))
                    }
                    let stillWanted = lock.withLock {
                        path = newPath
                        return !invalidated
                    }
                    client.published[newPath] = WeakActivity(activity: self)
                    if !stillWanted {
                        // Invalidated while the creation was on its way: the queued Invalidate saw no path.
                        client.callOnLoop(path: newPath, interface: UserActivityClient.activityInterface, "Invalidate", []) { _ in }
                        client.published[newPath] = nil
                    }
                    completion(.success(()))
                case .failure(let error):
                    lock.withLock { dirty.formUnion(explicitlySet) }
                    completion(.failure(error))
                }
            }
        }
        if needsHandler {
            client.ensureHandlerRegistered { error in
                if let error {
                    client.report(error, "RegisterHandler (needed for needsSave and continuation streams)")
                }
                proceed()
            }
        } else {
            proceed()
        }
    }

    /// Whether the service must be able to call this app back for this activity.
    var needsHandlerLocked: Bool {
        fields.needsSave || fields.supportsContinuationStreams
    }

    /// Sends the fields changed since they were last sent, as one `Update`;
    /// `sent` runs once the Update is queued on the connection (or at once
    /// when there is nothing to send), so a request sent from it follows it.
    func flushChanges(_ client: UserActivityClient, sent: @escaping () -> Void = {},
                      _ completion: @escaping (Result<Void, UserActivityError>) -> Void) {
        let (currentPath, entries, needsHandler): (String?, [(String, TypedValue)], Bool) = lock.withLock {
            flushScheduled = false
            guard let path, !dirty.isEmpty else { return (path, [], false) }
            defer { dirty = [] }
            return (path, fields.entries(dirty), dirty.contains(.needsSave) && fields.needsSave || dirty.contains(.supportsContinuationStreams))
        }
        guard let currentPath, !entries.isEmpty else {
            sent()
            return completion(.success(()))
        }
        let send = {
            client.callOnLoop(path: currentPath, interface: UserActivityClient.activityInterface, "Update",
                              [.stringVariantDictionary(entries)]) { result in
                completion(result.map { _ in () })
            }
        }
        if needsHandler {
            // The Update waits for the registration; what follows it waits too.
            client.ensureHandlerRegistered { _ in
                send()
                sent()
            }
        } else {
            send()
            sent()
        }
    }

    /// Queues one batched `Update` (property setters call this). Its place
    /// in the request order is taken now; the changes are collected when it
    /// is sent, a few milliseconds later when they come from another thread,
    /// so that a run of property changes goes out as one Update.
    func scheduleUpdate() {
        guard let client = try? resolvedClient else { return }
        let summary = "updating the properties of \(activityType)"
        let delay: UInt32 = client.runner.isOnLoopThread ? 0 : UserActivityClient.updateCoalescingMilliseconds
        let queued = client.enqueueStep { [self] done in
            let flush = { [self] in
                flushChanges(client) { result in
                    if case .failure(let error) = result { client.report(error, summary) }
                    done()
                }
            }
            if delay == 0 { flush() } else { client.runner.after(milliseconds: delay, flush) }
        }
        if !queued { lock.withLock { flushScheduled = false } }
    }

    /// The service forgot the activity (it restarted, or it answered
    /// UnknownObject): the next request publishes it again with everything set.
    func serviceLost() {
        lock.withLock {
            path = nil
            dirty = explicitlySet
        }
    }

    // MARK: SaveActivity (loop thread and the willSave task)

    func beginSaving() {
        lock.withLock { savingDepth += 1 }
    }

    /// The SaveActivity answer: every property as it is now. NeedsSave is
    /// cleared, as the service clears it.
    func finishSaving() -> [(String, TypedValue)] {
        lock.withLock {
            savingDepth -= 1
            fields.needsSave = false
            dirty.remove(.needsSave)
            var answer = explicitlySet
            answer.remove(.needsSave)
            let entries = fields.entries(answer)
            dirty.subtract(answer)
            return entries
        }
    }

    // MARK: Service calls that need no live activity

    /// Donates the activity as a shortcut (`Donate`): the service saves it
    /// for suggestions and search without making anything current, and
    /// counts one use (Siri shortcut donation). Returns the saved copy's ID
    /// (empty while the service is paused or blocks the app).
    ///
    /// ```swift
    /// let shortcut = UserActivity(activityType: "com.example.Editor.new-document")
    /// shortcut.title = "New report"
    /// shortcut.suggestedInvocationPhrase = "Start a report"
    /// let savedID = try await shortcut.donate()
    /// ```
    @discardableResult
    public func donate() async throws -> String {
        let client = try resolvedClient
        let reply = try await client.call("Donate", [.string(activityType), .stringVariantDictionary(creationEntries())])
        return reply.first?.stringValue ?? ""
    }

    /// Continues this live activity in another app, as Handoff does
    /// (`Activity.Continue`); publishes it first when needed. The activity
    /// must be eligible for handoff. Returns the app that took it;
    /// ``wasContinued`` is called too.
    ///
    /// ```swift
    /// let app = try await activity.handOff(options: .init(targetAppID: "com.example.Viewer"))
    /// ```
    @discardableResult
    public func handOff(options: ContinuationOptions = ContinuationOptions()) async throws -> String {
        let client = try resolvedClient
        let optionEntries = options.entries
        let timeout = options.callTimeoutMilliseconds
        let result: Result<[TypedValue], UserActivityError> = await withCheckedContinuation { continuation in
            let queued = client.enqueueStep { [self] done in
                let live = objectPath != nil
                let ready: (Result<Void, UserActivityError>) -> Void = { [self] published in
                    guard case .success = published, let path = objectPath else {
                        continuation.resume(returning: .failure(published.failureValue ?? UserActivityError(.unknownObject, "the activity is not on the bus")))
                        return done()
                    }
                    client.callOnLoop(path: path, interface: UserActivityClient.activityInterface, "Continue",
                                      [.stringVariantDictionary(optionEntries)], timeoutMilliseconds: timeout) {
                        continuation.resume(returning: $0)
                    }
                    // The answer may need this very app (continuing into itself): don't hold up the queue.
                    done()
                }
                if isInvalidated {
                    ready(.failure(UserActivityError(.invalidated, "the activity \(activityType) was invalidated")))
                } else if live {
                    flushChanges(client, ready)
                } else {
                    publish(client, makeCurrent: false, retryIfGone: true, ready)
                }
            }
            if !queued { continuation.resume(returning: .failure(client.closedError)) }
        }
        return try result.get().first?.stringValue ?? ""
    }

    /// For an activity received through a continuation whose origin
    /// supports streams: opens a stream to the originating app
    /// (`getContinuationStreams(completionHandler:)`). The returned handle is a
    /// connected socket, for reading and writing; the origin's
    /// ``didReceiveContinuationStream`` gets the other end.
    ///
    /// ```swift
    /// func `continue`(_ activity: UserActivity) async throws -> Bool {
    ///     if activity.hasContinuationStream {
    ///         let stream = try await activity.getContinuationStream()
    ///         let draft = stream.readDataToEndOfFile()
    ///     }
    ///     return true
    /// }
    /// ```
    public func getContinuationStream() async throws -> FileHandle {
        guard let token = lock.withLock({ continuationToken }) else {
            throw UserActivityError(.noContinuationStream,
                "the activity \(activityType) came without a continuation token: its origin must set supportsContinuationStreams and be continued as a live activity")
        }
        let client = try resolvedClient
        let reply = try await client.call("OpenContinuationStream", [.string(token)])
        guard case .unixFD(let fd)? = reply.first else {
            throw UserActivityError(.noContinuationStream, "OpenContinuationStream answered without a file descriptor")
        }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    // MARK: Deleting saved copies (the shared client)

    /// Deletes the app's saved activities with these persistent identifiers
    /// (`deleteSavedUserActivities(withPersistentIdentifiers:)`), through the shared client.
    public static func deleteSavedActivities(withPersistentIdentifiers identifiers: [String]) async throws {
        try await UserActivityClient.shared().deleteSavedActivities(withPersistentIdentifiers: identifiers)
    }

    /// Deletes all the app's saved activities (`deleteAllSavedUserActivities()`), through the shared client.
    public static func deleteAllSavedActivities() async throws {
        try await UserActivityClient.shared().deleteAllSavedActivities()
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
