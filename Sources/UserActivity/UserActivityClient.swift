// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import GLibSupport
import TypedValues
internal import UserActivityCore
internal import UserActivityInterfaces

/// A connection to the user-activity service (`org.example.UserActivity` on
/// the session bus), and the app it speaks for.
///
/// The client drives libdbus through GLib. An app without a GLib main loop
/// gets a loop on a thread of the library's own; a GTK (or any GLib) app
/// attaches the client to the loop it already runs, and the library's
/// callbacks then run on that loop's thread. Either way every method can be
/// called from any thread, and results come back through `async`/`await`.
///
/// ```swift
/// // A command-line tool or a server: the library runs its own loop thread.
/// let client = try UserActivityClient(appID: "com.example.Editor")
///
/// // A GTK app: attach to the default GMainContext that gtk_main / g_application_run drive.
/// let client = try UserActivityClient(appID: "com.example.Editor", mainContext: nil)
///
/// // Or a loop of your own:
/// let loop = MainLoop.withNewContext()
/// let client = try UserActivityClient(appID: "com.example.Editor", mainLoop: loop)
/// ```
///
/// Create the client before running the loop you attach it to, or on the
/// thread that runs it; don't block that thread waiting for the client
/// (`await` from a task instead): the answer is handled on that thread.
///
/// `appID` is the app's desktop-file ID without `.desktop`. Sandboxed apps
/// (Flatpak, Snap) and apps started as systemd `app-…` units are identified
/// by the service without it; a plain host process must name itself, and the
/// desktop entry must be installed.
public final class UserActivityClient: @unchecked Sendable {
    static let busName = Interfaces.busName
    static let managerPath = Interfaces.managerPath
    static let managerInterface = Interfaces.managerName
    static let activityInterface = Interfaces.activityName
    static let handlerInterface = Interfaces.handlerName
    /// How long after the service went away the client starts it again.
    static let restartDelayMilliseconds: UInt32 = 500
    /// How long property changes from other threads are collected into one Update.
    static let updateCoalescingMilliseconds: UInt32 = 10

    /// The app this client speaks for (sent with `RegisterApplication`), if given.
    public let appID: String?
    /// The client's unique bus name (`:1.42`).
    public let uniqueName: String
    /// Where the client serves `org.example.UserActivity.Handler`.
    public let handlerPath: String

    let runner: LoopRunner
    let connection: Connection

    private let lock = NSLock()
    private var _onError: (@Sendable (UserActivityError, String) -> Void)?
    private var _onDisconnected: (@Sendable () -> Void)?
    private var _continuationHandler: (any ContinuationHandler)?
    private var closed = false

    // Loop-thread state: only touched by jobs on the loop thread.
    private var serviceOwner: String?
    private var serviceWasLost = false
    private var handlerWanted = false
    private var handlerRegistered = false
    private var handlerWaiters: [(UserActivityError?) -> Void] = []
    private var registrationFailure: UserActivityError?
    var published: [String: WeakActivity] = [:]
    weak var currentActivity: UserActivity?
    private var steps: [@Sendable (@escaping @Sendable () -> Void) -> Void] = []
    private var stepRunning = false

    // MARK: Creating

    /// A client on a loop thread of the library's own.
    ///
    /// - Parameters:
    ///   - appID: The app's desktop-file ID (`com.example.Editor`); nil lets
    ///     the service identify the app from the process.
    ///   - address: A bus address; default the session bus (`DBUS_SESSION_BUS_ADDRESS`).
    /// - Throws: ``UserActivityError`` when the bus cannot be reached or `appID` is malformed.
    public convenience init(appID: String? = nil, address: String? = nil) throws {
        try self.init(appID: appID, address: address, runner: { .ownThread() })
    }

    /// A client attached to a GLib main loop the app runs itself (a GTK app's).
    ///
    /// ```swift
    /// let loop = MainLoop()                       // the default GMainContext
    /// let client = try UserActivityClient(appID: "com.example.Editor", mainLoop: loop)
    /// loop.run()
    /// ```
    public convenience init(appID: String? = nil, address: String? = nil, mainLoop: MainLoop) throws {
        try self.init(appID: appID, address: address, runner: { .attached(to: mainLoop) })
    }

    /// A client attached to a `GMainContext*` (nil: the global default
    /// context, the one `gtk_main` and `g_application_run` iterate).
    public convenience init(appID: String? = nil, address: String? = nil, mainContext: OpaquePointer?) throws {
        let loop = MainLoop(context: mainContext)
        try self.init(appID: appID, address: address, runner: { .attached(to: loop) })
    }

    private init(appID: String?, address: String?, runner makeRunner: () -> LoopRunner) throws {
        if let appID, !AppIDName.isWellFormed(appID) {
            throw UserActivityError(.invalidArgument,
                "'\(appID)' is not an app ID: use the desktop-file ID without .desktop, a reverse-DNS name such as com.example.Editor or an installed legacy ID such as firefox-esr")
        }
        self.appID = appID
        // Everything that blocks happens here, before the connection is attached to a loop.
        do throws(DBusFailure) {
            if let address {
                connection = try Connection.bus(address: address)
            } else {
                connection = try Connection.session()
            }
            try connection.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.busName)'")
            try connection.addMatch("type='signal',sender='\(Self.busName)',interface='\(Self.activityInterface)',member='Continued'")
        } catch {
            throw UserActivityError(.disconnected, "could not connect to \(address ?? "the session bus"): \(error.message)")
        }
        uniqueName = connection.uniqueName
        handlerPath = appID.map { "/" + $0.replacingOccurrences(of: ".", with: "/").replacingOccurrences(of: "-", with: "_") + "/UserActivityHandler" }
            ?? "/org/example/UserActivity/Handler"
        serviceOwner = (try? connection.callBus("GetNameOwner", [.string(Self.busName)], timeoutMilliseconds: 5000))?
            .first?.stringValue
        runner = makeRunner()

        try connection.addFilter { [weak self] message in self?.filter(message) ?? false }
        try connection.registerFallback(path: handlerPath) { [weak self] message in self?.handlerCall(message) ?? false }
        let connection = self.connection
        runner.enqueue { [weak self] in
            do {
                try DBusMainLoopBridge.attach(connection, to: self?.runner.loop ?? MainLoop())
            } catch {
                self?.report(UserActivityError(.disconnected, "could not attach the bus connection to the main loop: \(error)"),
                             "connecting")
            }
            self?.registerApplication()
        }
    }

    deinit {
        let connection = self.connection
        runner.stop { connection.close() }
    }

    /// Closes the connection: the service invalidates this client's live
    /// activities (their saved copies stay). A loop of the library's own stops.
    public func close() {
        let first: Bool = lock.withLock {
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        let connection = self.connection
        runner.stop { connection.close() }
    }

    // MARK: The shared client

    private final class Shared: @unchecked Sendable {
        let lock = NSLock()
        var client: UserActivityClient?
    }
    private static let sharedState = Shared()

    /// The client used by activities created without one: the session bus,
    /// the app identified by the service, on a loop thread of the library's
    /// own; created on first use. Replace it with ``useAsShared()``.
    public static func shared() throws(UserActivityError) -> UserActivityClient {
        sharedState.lock.lock()
        defer { sharedState.lock.unlock() }
        if let client = sharedState.client { return client }
        do {
            let client = try UserActivityClient()
            sharedState.client = client
            return client
        } catch let error as UserActivityError {
            throw error
        } catch {
            throw UserActivityError(.disconnected, "\(error)")
        }
    }

    /// Makes this client the one ``UserActivity/init(activityType:client:)`` uses by default.
    ///
    /// ```swift
    /// try UserActivityClient(appID: "com.example.Editor").useAsShared()
    /// let activity = UserActivity(activityType: "com.example.Editor.edit-document")
    /// ```
    public func useAsShared() {
        Self.sharedState.lock.withLock { Self.sharedState.client = self }
    }

    // MARK: Errors

    /// Receives failures of requests nobody awaited (``ActivityOperation``,
    /// batched updates) with a summary of the request. Default: a line on
    /// standard error.
    public var onError: (@Sendable (_ error: UserActivityError, _ request: String) -> Void)? {
        get { lock.withLock { _onError } }
        set { lock.withLock { _onError = newValue } }
    }

    /// Called once, on the library's loop thread, when the bus connection is
    /// lost: the session ended or its bus went away. Not called by ``close()``,
    /// nor when only the service restarts (the client registers again with the
    /// new instance by itself).
    ///
    /// An app that only serves continuations usually ends with its session:
    ///
    /// ```swift
    /// let (session, endSession) = AsyncStream<Void>.makeStream()
    /// client.onDisconnected = { endSession.finish() }
    /// try await app.start()
    /// for await _ in session {}   // serve continuations until the bus goes away
    /// ```
    public var onDisconnected: (@Sendable () -> Void)? {
        get { lock.withLock { _onDisconnected } }
        set { lock.withLock { _onDisconnected = newValue } }
    }

    func report(_ error: UserActivityError, _ request: String) {
        if let handler = onError {
            handler(error, request)
        } else {
            FileHandle.standardError.write(Data("UserActivity: \(request) failed: \(error)\n".utf8))
        }
    }

    var reporter: @Sendable (UserActivityError, String) -> Void {
        { [weak self] error, request in
            if let self { self.report(error, request) }
        }
    }

    // MARK: Calls (loop thread)

    /// Calls the service and hands the reply's arguments to `completion` on the loop thread.
    func callOnLoop(path: String = managerPath, interface: String = managerInterface, _ member: String,
                    _ arguments: [TypedValue], timeoutMilliseconds: Int32 = 25_000,
                    completion: @escaping (Result<[TypedValue], UserActivityError>) -> Void) {
        let message: Message
        do {
            message = try Message.methodCall(destination: Self.busName, path: path, interface: interface,
                                             member: member, arguments: arguments)
        } catch {
            completion(.failure(UserActivityError(.invalidArgument, "\(member): the arguments could not be marshalled: \(error.message)")))
            return
        }
        connection.callAsync(message, timeoutMilliseconds: timeoutMilliseconds,
                             acceptingReplyFrom: { [weak self] sender in self?.mayAnswerForService(sender) ?? false }) { [weak self] result in
            switch result {
            case .success(let reply):
                do throws(DBusFailure) {
                    completion(.success(try reply.arguments()))
                } catch {
                    completion(.failure(UserActivityError(.invalidArgument, "\(member): the reply could not be read: \(error.message)")))
                }
            case .failure(let failure):
                var error = UserActivityError(failure)
                if error.code == .unknownApplication, let registration = self?.registrationFailure {
                    error.message += " (RegisterApplication failed earlier: \(registration.message))"
                }
                completion(.failure(error))
            }
        }
    }

    /// Calls the service from any thread.
    func call(path: String = managerPath, interface: String = managerInterface, _ member: String,
              _ arguments: [TypedValue], timeoutMilliseconds: Int32 = 25_000) async throws(UserActivityError) -> [TypedValue] {
        let result: Result<[TypedValue], UserActivityError> = await withCheckedContinuation { continuation in
            let queued = runner.enqueue { [self] in
                callOnLoop(path: path, interface: interface, member, arguments, timeoutMilliseconds: timeoutMilliseconds) {
                    continuation.resume(returning: $0)
                }
            }
            if !queued { continuation.resume(returning: .failure(closedError)) }
        }
        return try result.get()
    }

    var closedError: UserActivityError { UserActivityError(.disconnected, "the UserActivityClient was closed") }

    /// Replies to a call the service made to this app's handler.
    func reply(to call: Message, _ values: [TypedValue] = []) {
        guard call.expectsReply else { return }
        do {
            connection.send(try Message.methodReturn(to: call, values))
        } catch {
            connection.send(Message.error(to: call, name: "org.freedesktop.DBus.Error.Failed", message: "\(error)"))
        }
    }

    func reply(to call: Message, error name: String, _ text: String) {
        guard call.expectsReply else { return }
        connection.send(Message.error(to: call, name: name, message: text))
    }

    // MARK: Ordered activity requests (loop thread)

    /// Queues a step that runs after every step queued before it has
    /// finished (called `done`, on the loop thread). Activity requests go
    /// through here so that they reach the service in the order they were
    /// made, even when one waits for an answer (an object path) first.
    func enqueueStep(_ step: @escaping @Sendable (_ done: @escaping @Sendable () -> Void) -> Void) -> Bool {
        runner.enqueue { [self] in
            steps.append(step)
            pumpSteps()
        }
    }

    private final class StepState: @unchecked Sendable {
        var inside = true
    }

    private func pumpSteps() {
        while !stepRunning, !steps.isEmpty {
            let step = steps.removeFirst()
            stepRunning = true
            let state = StepState()
            step { [self] in
                stepRunning = false
                if !state.inside { pumpSteps() }
            }
            state.inside = false
        }
    }

    /// Waits until every activity request made so far (``UserActivity/becomeCurrent()``,
    /// batched property updates, …) has been answered.
    ///
    /// ```swift
    /// activity.title = "Page 4"
    /// await client.waitForPendingRequests()   // the Update has been applied
    /// ```
    public func waitForPendingRequests() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queued = enqueueStep { done in
                continuation.resume()
                done()
            }
            if !queued { continuation.resume() }
        }
    }

    // MARK: Registration (loop thread)

    private func registerApplication() {
        guard let appID else { return }
        callOnLoop("RegisterApplication", [.string(appID)]) { [weak self] result in
            if case .failure(let error) = result {
                self?.registrationFailure = error
                self?.report(error, "RegisterApplication(\(appID))")
            } else {
                self?.registrationFailure = nil
            }
        }
    }

    /// Registers the handler object with the service once (`RegisterHandler`).
    func ensureHandlerRegistered(_ completion: @escaping (UserActivityError?) -> Void) {
        handlerWanted = true
        if handlerRegistered {
            completion(nil)
            return
        }
        handlerWaiters.append(completion)
        guard handlerWaiters.count == 1 else { return }
        callOnLoop("RegisterHandler", [.objectPath(handlerPath)]) { [weak self] result in
            guard let self else { return }
            let waiters = handlerWaiters
            handlerWaiters = []
            switch result {
            case .success:
                handlerRegistered = true
                for waiter in waiters { waiter(nil) }
            case .failure(let error):
                for waiter in waiters { waiter(error) }
            }
        }
    }

    /// Serves continuations with `handler` and registers this app's handler
    /// with the service (`RegisterApplication` + `RegisterHandler`): from now
    /// on the service delivers this app's continuations here, while the
    /// client is open. A later call replaces the handler.
    ///
    /// Registering is also what lets the service ask for fresh data
    /// (``UserActivity/needsSave``) and hand over continuation streams; the
    /// library does it by itself when an activity needs that, and until a
    /// handler is given, continuations are answered as not handled.
    public func register(continuationHandler handler: any ContinuationHandler) async throws {
        lock.withLock { _continuationHandler = handler }
        let error: UserActivityError? = await withCheckedContinuation { continuation in
            let queued = runner.enqueue { [self] in
                ensureHandlerRegistered { continuation.resume(returning: $0) }
            }
            if !queued { continuation.resume(returning: closedError) }
        }
        if let error { throw error }
    }

    /// The handler given to ``register(continuationHandler:)``.
    public var continuationHandler: (any ContinuationHandler)? {
        lock.withLock { _continuationHandler }
    }

    // MARK: Incoming signals (loop thread)

    private func filter(_ message: Message) -> Bool {
        guard message.kind == .signal else { return false }
        switch (message.interface, message.member) {
        case ("org.freedesktop.DBus", "NameOwnerChanged"):
            guard message.sender == "org.freedesktop.DBus", let arguments = try? message.arguments(), arguments.count == 3,
                  arguments[0].stringValue == Self.busName, let newOwner = arguments[2].stringValue else { return false }
            serviceOwnerChanged(to: newOwner)
        case (Self.activityInterface, "Continued"):
            guard let path = message.path, message.sender == serviceOwner || serviceOwner == nil,
                  let activity = published[path]?.activity,
                  let app = (try? message.arguments())?.first?.stringValue else { return false }
            activity.wasContinued?(app)
        case ("org.freedesktop.DBus.Local", "Disconnected"):
            let wasOpen = lock.withLock {
                defer { closed = true }
                return !closed
            }
            if wasOpen { onDisconnected?() }
        default:
            break
        }
        return false
    }

    /// The service went away or came (back): a new instance knows nothing
    /// of this app, so the registrations are made again and the activity
    /// that was current is published again.
    private func serviceOwnerChanged(to newOwner: String) {
        if newOwner.isEmpty {
            serviceOwner = nil
            serviceWasLost = true
            handlerRegistered = false
            for entry in published.values { entry.activity?.serviceLost() }
            published = [:]
            // An app that receives continuations or has a current activity
            // starts the service again (D-Bus activation) after a moment, so
            // that it is registered before anyone continues its activities.
            if handlerWanted || currentActivity != nil {
                runner.after(milliseconds: Self.restartDelayMilliseconds) { [weak self] in
                    guard let self, serviceOwner == nil else { return }
                    callOnLoop(interface: "org.freedesktop.DBus.Peer", "Ping", []) { _ in }
                }
            }
            return
        }
        serviceOwner = newOwner
        guard serviceWasLost else { return }
        serviceWasLost = false
        registerApplication()
        if handlerWanted { ensureHandlerRegistered { _ in } }
        if let current = currentActivity, !current.isInvalidated {
            _ = current.becomeCurrent()
        }
    }

    // MARK: The handler object (loop thread)

    private func handlerCall(_ message: Message) -> Bool {
        guard message.kind == .methodCall else { return false }
        if message.interface == "org.freedesktop.DBus.Introspectable" || (message.interface == nil && message.member == "Introspect") {
            reply(to: message, [.string(Self.handlerIntrospection)])
            return true
        }
        guard message.interface == Self.handlerInterface || message.interface == nil else {
            reply(to: message, error: "org.freedesktop.DBus.Error.UnknownInterface",
                  "\(handlerPath) serves only \(Self.handlerInterface)")
            return true
        }
        var arguments: [TypedValue]
        do {
            arguments = try message.arguments()
        } catch {
            reply(to: message, error: "org.freedesktop.DBus.Error.InvalidArgs", "the arguments could not be read: \(error.message)")
            return true
        }
        // libdbus gave us a dup() of every descriptor in the message, however
        // deep: only a continuation stream's own end is kept, the rest closed now.
        if message.carriesFileDescriptors {
            let keepsStream = Interfaces.Handler(named: message.member ?? "") == .continuationStreamOpened && message.signature == "oh"
            for index in arguments.indices where !(keepsStream && index == 1) {
                arguments[index].closeFileDescriptors()
                arguments[index] = arguments[index].replacingFileDescriptors()
            }
        }
        // Only the service may hand this app activities and ask for its data.
        verifyCaller(message) { [self] isService in
            guard isService else {
                closeFileDescriptors(in: arguments)
                reply(to: message, error: "org.freedesktop.DBus.Error.AccessDenied",
                      "only \(Self.busName) may call \(Self.handlerInterface)")
                return
            }
            dispatchHandlerCall(message, arguments)
        }
        return true
    }

    /// Whether a reply to a call to the service may come from `sender`: the
    /// name's owner as this client tracks it (NameOwnerChanged for the name
    /// reaches it before the reply of a service the call activated), or the
    /// bus itself (activation and delivery errors). Anyone else on the bus
    /// could otherwise answer in the service's place by guessing the serial.
    private func mayAnswerForService(_ sender: String) -> Bool {
        sender == Connection.busDriverName || sender == serviceOwner
    }

    /// Whether `message` comes from the service's current owner (asked of
    /// the bus when the sender is not the owner known so far).
    private func verifyCaller(_ message: Message, _ completion: @escaping (Bool) -> Void) {
        guard let sender = message.sender else { return completion(false) }
        if sender == serviceOwner { return completion(true) }
        let query = Message.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                       interface: "org.freedesktop.DBus", member: "GetNameOwner")
        guard (try? query.append([.string(Self.busName)])) != nil else { return completion(false) }
        connection.callAsync(query, timeoutMilliseconds: 5000) { [weak self] result in
            let owner = (try? result.get().arguments())?.first?.stringValue
            if let owner { self?.serviceOwner = owner }
            completion(owner == sender)
        }
    }

    private func dispatchHandlerCall(_ message: Message, _ arguments: [TypedValue]) {
        guard let method = Interfaces.Handler(named: message.member ?? "") else {
            closeFileDescriptors(in: arguments)
            reply(to: message, error: "org.freedesktop.DBus.Error.UnknownMethod",
                  "\(Self.handlerInterface) has no method \(message.member ?? "")")
            return
        }
        guard message.signature == method.method.inputSignature else {
            closeFileDescriptors(in: arguments)
            reply(to: message, error: "org.freedesktop.DBus.Error.InvalidArgs",
                  "\(message.member ?? "") does not take (\(message.signature))")
            return
        }
        switch method {
        case .continueActivity:
            continueActivity(message, type: arguments[0].stringValue ?? "", data: arguments[1], platformData: arguments[2])
        case .saveActivity:
            saveActivity(message, path: arguments[0].objectPathValue ?? "")
        case .continuationStreamOpened:
            guard case .unixFD(let fd) = arguments[1] else { return }
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            if let activity = published[arguments[0].objectPathValue ?? ""]?.activity,
               let callback = activity.didReceiveContinuationStream {
                callback(handle)
                reply(to: message)
            } else {
                reply(to: message, error: UserActivityError.Code.notFound.rawValue,
                      "no live activity of this app at \(arguments[0].objectPathValue ?? "?") takes continuation streams")
            }
        case .failedToContinue:
            let type = arguments[0].stringValue ?? ""
            let error = UserActivityError(.init(rawValue: arguments[1].stringValue ?? ""), arguments[2].stringValue ?? "")
            continuationHandler?.didFailToContinue(activityType: type, error: error)
            reply(to: message)
        }
    }

    private func continueActivity(_ message: Message, type: String, data: TypedValue, platformData: TypedValue) {
        guard let handler = continuationHandler else {
            reply(to: message, [.boolean(false)])
            return
        }
        let activity = UserActivity(incoming: type, data: data, platformData: platformData, client: self)
        handler.willContinue(activityType: type)
        Task.detached { [self] in
            let outcome: Result<Bool, any Error>
            do { outcome = .success(try await handler.continue(activity)) } catch { outcome = .failure(error) }
            runner.enqueue { [self] in
                switch outcome {
                case .success(let handled):
                    reply(to: message, [.boolean(handled)])
                case .failure(let error as UserActivityError):
                    reply(to: message, error: error.name, error.message)
                case .failure(let error):
                    reply(to: message, error: UserActivityError.Code.continuationFailed.rawValue,
                          "\(appID ?? "the app") could not continue \(type): \(error)")
                }
            }
        }
    }

    private func saveActivity(_ message: Message, path: String) {
        guard let activity = published[path]?.activity else {
            reply(to: message, error: UserActivityError.Code.unknownObject.rawValue, "this app has no live activity at \(path)")
            return
        }
        let willSave = activity.willSave
        activity.beginSaving()
        Task.detached { [self] in
            await willSave?(activity)
            runner.enqueue { [self] in
                reply(to: message, [.stringVariantDictionary(activity.finishSaving())])
            }
        }
    }

    private func closeFileDescriptors(in values: [TypedValue]) {
        TypedValue.closeFileDescriptors(in: values)
    }

    /// What the handler object answers to `Introspect`: the documented
    /// Handler interface, generated from the same table as the daemon's.
    static let handlerIntrospection = StandardInterfacesXML.doctype + "<node>\n" + Interfaces.handler.xml()
        + StandardInterfacesXML.introspectable + "</node>\n"
}

/// A published activity, held weakly: an activity the app let go of is not kept alive by the client.
struct WeakActivity {
    weak var activity: UserActivity?
}
