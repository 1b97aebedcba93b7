// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import DBusKit
import GLibSupport
import TypedValues
import UserActivityCore

/// The three ways to reach an app, and the webpage fallback.
extension ContinuationService {
    /// Chooses the target (with the data as they are now) and starts delivery.
    func planAndDeliver(_ continuation: PendingContinuation) {
        let target: ContinuationTarget
        do {
            target = try ContinuationPlanner.plan(
                type: continuation.payload.activityType, publisher: continuation.payload.publisher,
                properties: continuation.payload.properties, targetAppID: continuation.options.targetAppID,
                catalog: context.catalog, hasHandler: { handlers.hasHandler($0) }, fileExists: { pathExists($0) })
        } catch {
            finish(continuation, failure: error)
            return
        }
        switch target {
        case .webpage(let url):
            openWebpage(continuation, url: url)
        case .launchWithURI(let app, let path, let uri):
            openWithApp(continuation, app: app, desktopFile: path, uri: uri)
        case .document(let uri, let mimeType):
            openDocument(continuation, uri: uri, mimeType: mimeType)
        case .app(let app, let route):
            continuation.app = app
            continuation.deadline = now() + Int64(continuation.options.timeoutMilliseconds) * 1000
            log.debug("continuation planned", metadata: ["continuation": "\(continuation.summary)", "route": "\(route)"])
            switch route {
            case .handler: deliverToHandler(continuation)
            case .dbusActivation: activate(continuation, app: app)
            case .launch(let path): launch(continuation, app: app, desktopFile: path)
            }
            // After the first message is on its way: the timer and the answer
            // for success only matter once the app has answered.
            if !continuation.isFinished {
                armDeadline(continuation)
                continuation.invocation.prepareReply([.string(app)])
            }
        }
    }

    // MARK: Deadline

    private func armDeadline(_ continuation: PendingContinuation) {
        let milliseconds = UInt32(clamping: max(0, continuation.deadline - now()) / 1000 + 1)
        continuation.timer = context.scheduler.after(milliseconds: milliseconds) { [unowned self] in
            continuation.timer = nil
            deadlinePassed(continuation)
        }
    }

    /// Milliseconds libdbus should wait for an answer: the time left, plus slack.
    private func replyTimeout(_ continuation: PendingContinuation) -> Int32 {
        let left = max(0, continuation.deadline - now()) / 1000
        return Int32(clamping: left + Self.replySlackMilliseconds)
    }

    private func deadlinePassed(_ continuation: PendingContinuation) {
        guard !continuation.isFinished, let app = continuation.app else { return }
        let milliseconds = continuation.options.timeoutMilliseconds
        let text: String
        if continuation.stage == .awaitingHandler {
            text = "\(app) was launched but did not register a continuation handler (RegisterHandler) within \(milliseconds) ms; raise timeout-ms if it starts slowly"
        } else {
            text = "\(app) did not answer the continuation of \(continuation.payload.activityType) within \(milliseconds) ms"
        }
        let error = UserActivityError(.remoteApplicationTimedOut, text)
        tellFailed(continuation, errorName: ErrorNames.name(for: error.kind), message: text)
        finish(continuation, failure: error)
    }

    /// Delivery failed before the app answered: `RemoteApplicationTimedOut`,
    /// and `FailedToContinue` to the app when it has a handler.
    private func unreachable(_ continuation: PendingContinuation, _ text: String) {
        let error = UserActivityError(.remoteApplicationTimedOut, text)
        tellFailed(continuation, errorName: ErrorNames.name(for: error.kind), message: text)
        finish(continuation, failure: error)
    }

    // MARK: (1) A registered handler

    /// The platform data of a delivery: the options' tokens, and a new
    /// `continuation-token` when a live origin supports streams and its
    /// owner can receive one.
    private func platformData(_ continuation: PendingContinuation, app: String) -> TypedValue {
        var entries = continuation.options.platformData
        if let originID = continuation.originID, let origin = registry.activity(originID),
           origin.properties.supportsContinuationStreams, handlers.hasHandler(origin.appID) {
            if let old = continuation.token { tokens.revoke(old) }
            let token = tokens.issue(originActivityID: originID, originConnection: origin.connection,
                                     receivingApp: app, now: now(), shareKey: launchKey(continuation))
            continuation.token = token
            entries.append(("continuation-token", .string(token)))
        } else if let relay = continuation.options.streamRelay, continuation.payload.properties.supportsContinuationStreams {
            if let old = continuation.token { tokens.revoke(old) }
            let token = tokens.issue(originActivityID: "", originConnection: continuation.invocation.sender,
                                     receivingApp: app, now: now(), shareKey: launchKey(continuation), relayPath: relay)
            continuation.token = token
            entries.append(("continuation-token", .string(token)))
        }
        return .stringVariantDictionary(entries)
    }

    func deliverToHandler(_ continuation: PendingContinuation) {
        guard !continuation.isFinished, let app = continuation.app else { return }
        guard let handler = handlers.handler(for: app) else {
            unreachable(continuation, "\(app)'s continuation handler went away before the activity could be delivered")
            return
        }
        let message: Message
        do {
            message = try AppMessages.handlerCall(handler, "ContinueActivity", [
                .string(continuation.payload.activityType), continuation.payload.dictionary,
                platformData(continuation, app: app),
            ])
        } catch {
            finish(continuation, failure: error)
            return
        }
        continuation.stage = .delivering
        bus.callAsync(message, timeoutMilliseconds: replyTimeout(continuation)) { [unowned self] result in
            handlerAnswered(continuation, app: app, result)
        }
    }

    private func handlerAnswered(_ continuation: PendingContinuation, app: String, _ result: Result<Message, DBusFailure>) {
        guard !continuation.isFinished else { return }
        switch result {
        case .success(let reply):
            let arguments = (try? reply.arguments()) ?? []
            TypedValue.closeFileDescriptors(in: arguments) // an app's reply may carry descriptors; none is used
            if arguments.count == 1, let handled = arguments[0].boolValue {
                if handled {
                    succeed(continuation, app: app)
                } else {
                    finish(continuation, failure: UserActivityError(.continuationFailed,
                        "\(app) answered that it did not handle the activity \(continuation.payload.activityType)"))
                }
            } else {
                finish(continuation, failure: UserActivityError(.continuationFailed,
                    "\(app)'s Handler.ContinueActivity answered (\(reply.signature)) instead of (b)"))
            }
        case .failure(let failure):
            if AppMessages.isUnreachable(failure.name) {
                unreachable(continuation, "\(app) could not be reached: \(failure.name): \(failure.message)")
            } else if AppMessages.meansNoAction(failure.name) {
                // The app's D-Bus library, not the app, refused: passing UnknownMethod
                // or InvalidArgs on would read as if ContinueActivity itself were wrong.
                finish(continuation, failure: UserActivityError(.continuationFailed,
                    "\(app) registered a handler at \(handlers.handler(for: app)?.path ?? "?") that does not implement \(Interfaces.handlerName).ContinueActivity(sa{sv}a{sv}) → b (\(failure.name): \(failure.message))"))
            } else {
                // The app answered with an error: its name and words are the caller's to see.
                finish(continuation, failure: DBusFailure(name: failure.name, message: failure.message))
            }
        }
    }

    /// The app registered a handler: deliver what waited for it.
    func deliverToAwaiting(app: String) {
        let serials = awaitingHandler.removeValue(forKey: app) ?? []
        for serial in serials {
            guard let continuation = pending[serial], continuation.stage == .awaitingHandler else { continue }
            deliverToHandler(continuation)
        }
    }

    // MARK: (2) D-Bus activation

    private func activate(_ continuation: PendingContinuation, app: String) {
        let message: Message
        do {
            message = try AppMessages.activateAction(app: app, activityType: continuation.payload.activityType,
                                                     activity: continuation.payload.dictionary,
                                                     platformData: platformData(continuation, app: app))
        } catch {
            finish(continuation, failure: error)
            return
        }
        continuation.stage = .delivering
        // The call goes to the app's well-known name: only its owner (known
        // from NameOwnerChanged, which comes before the reply of an app the
        // call activated) or the bus may answer.
        bus.callAsync(message, timeoutMilliseconds: replyTimeout(continuation), acceptingReplyFrom: { [unowned self] sender in
            sender == Connection.busDriverName || sender == context.callers.owner(of: app)
        }) { [unowned self] result in
            guard !continuation.isFinished else { return }
            switch result {
            case .success:
                // GApplication replies once the action ran; there is no "handled" flag.
                succeed(continuation, app: app)
            case .failure(let failure) where AppMessages.isUnreachable(failure.name):
                unreachable(continuation, "\(app) could not be started or reached by D-Bus activation: \(failure.name): \(failure.message)")
            case .failure(let failure) where AppMessages.meansNoAction(failure.name):
                finish(continuation, failure: UserActivityError(.continuationFailed,
                    "\(app) is DBusActivatable but refused the action '\(AppMessages.continueAction)' with a (sa{sv}) parameter (\(failure.name): \(failure.message)); it must export that GAction"))
            case .failure(let failure):
                finish(continuation, failure: UserActivityError(.continuationFailed,
                    "\(app) answered ActivateAction('\(AppMessages.continueAction)') with \(failure.name): \(failure.message)"))
            }
        }
    }

    // MARK: (3) Launch, then wait for RegisterHandler

    private func launch(_ continuation: PendingContinuation, app: String, desktopFile: String) {
        let alreadyLaunching = awaitingHandler[app] != nil
        if !alreadyLaunching, let refusal = takeLaunch(continuation, what: "launch \(app)") {
            finish(continuation, failure: refusal)
            return
        }
        continuation.stage = .awaitingHandler
        awaitingHandler[app, default: []].append(continuation.serial)
        guard !alreadyLaunching else { return }
        let environment = LaunchEnvironment(activationToken: continuation.options.activationToken,
                                            desktopStartupID: continuation.options.desktopStartupID)
        do {
            try AppLauncher.launch(desktopFile: desktopFile, environment: environment)
            log.debug("launched an app to continue an activity", metadata: ["app": "\(app)", "entry": "\(desktopFile)"])
        } catch {
            // Everyone waiting for this app waited for this launch.
            let serials = awaitingHandler.removeValue(forKey: app) ?? []
            for serial in serials {
                guard let waiting = pending[serial] else { continue }
                unreachable(waiting, "\(app) could not be launched from \(desktopFile): \(error.message)")
            }
        }
    }

    // MARK: System types: an app launched with the URI

    private func openWithApp(_ continuation: PendingContinuation, app: String, desktopFile: String, uri: String) {
        continuation.app = app
        do {
            try AppLauncher.launch(desktopFile: desktopFile, uris: [uri], environment: launchEnvironment(continuation))
            succeed(continuation, app: app)
        } catch {
            finish(continuation, failure: UserActivityError(.remoteApplicationTimedOut,
                "\(app) could not be launched from \(desktopFile) to open \(uri.prefix(300)): \(error.message)"))
        }
    }

    private func openDocument(_ continuation: PendingContinuation, uri: String, mimeType: String) {
        do {
            let app = try AppLauncher.open(document: uri, mimeType: mimeType, environment: launchEnvironment(continuation))
            succeed(continuation, app: app)
        } catch {
            finish(continuation, failure: UserActivityError(.noHandler,
                "no app of the publisher's takes \(uri.prefix(300)), and the default handler\(mimeType.isEmpty ? "" : " for \(mimeType)") could not open it: \(error.message)"))
        }
    }

    private func launchEnvironment(_ continuation: PendingContinuation) -> LaunchEnvironment {
        LaunchEnvironment(activationToken: continuation.options.activationToken,
                          desktopStartupID: continuation.options.desktopStartupID)
    }

    // MARK: The webpage fallback

    private func openWebpage(_ continuation: PendingContinuation, url: String) {
        if let refusal = takeLaunch(continuation, what: "open its webpage-url in a browser") {
            finish(continuation, failure: refusal)
            return
        }
        let environment = LaunchEnvironment(activationToken: continuation.options.activationToken,
                                            desktopStartupID: continuation.options.desktopStartupID)
        do {
            let browser = try AppLauncher.open(uri: url, environment: environment)
            succeed(continuation, app: browser)
        } catch {
            finish(continuation, failure: UserActivityError(.noHandler,
                "no app declares \(continuation.payload.activityType), and its webpage-url could not be opened: \(error.message)"))
        }
    }

    // MARK: Launch rate

    /// Takes one launch from the budget of whoever asked for the
    /// continuation (a sandboxed caller's app, else its connection); the
    /// error to answer with when that budget is spent.
    private func takeLaunch(_ continuation: PendingContinuation, what: String) -> UserActivityError? {
        context.takeLaunch(launchKey(continuation), what: what)
    }

    /// Whose budget a continuation draws on: a sandboxed caller's app, else its connection.
    private func launchKey(_ continuation: PendingContinuation) -> String {
        continuation.accounted.confinedApp.map { "app " + $0 } ?? "connection " + continuation.accounted.connection
    }
}
