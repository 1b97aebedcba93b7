// SPDX-License-Identifier: Apache-2.0
import CDBus
import TypedValues

/// A private libdbus connection; closed and released in `deinit`.
///
/// Private connections are used throughout because a shared one would let
/// another library in the process change how it is dispatched.
///
/// ```swift
/// let bus = try Connection.session()
/// let reply = try bus.call(.methodCall(destination: "org.freedesktop.DBus",
///     path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetId"))
/// ```
public final class Connection: @unchecked Sendable {
    let pointer: OpaquePointer
    private var handlerBoxes: [AnyObject] = []
    /// Replies awaited by `callAsync`, once a main loop drives the connection
    /// (set by `attach(to:)`, before any call is made through it).
    private var replyTable: ReplyTable?
    private init(pointer: OpaquePointer) {
        self.pointer = pointer
        // A lost bus must not take the process down (tests, benchmarks); callers decide.
        dbus_connection_set_exit_on_disconnect(pointer, CDBUS_FALSE)
    }

    deinit {
        if dbus_connection_get_is_connected(pointer) != 0 { dbus_connection_close(pointer) }
        dbus_connection_unref(pointer)
    }

    /// The session bus named by `DBUS_SESSION_BUS_ADDRESS`.
    public static func session() throws(DBusFailure) -> Connection {
        let raw = try dbusCall("dbus_bus_get_private") { dbus_bus_get_private(DBUS_BUS_SESSION, $0) }
        return Connection(pointer: raw)
    }

    /// A bus at `address`, registered with the bus daemon (`Hello`).
    public static func bus(address: String) throws(DBusFailure) -> Connection {
        let raw = try dbusCall("dbus_connection_open_private") { dbus_connection_open_private(address, $0) }
        let connection = Connection(pointer: raw)
        try dbusCall("dbus_bus_register") { error -> Bool? in dbus_bus_register(raw, error) != 0 ? true : nil }
        return connection
    }

    public var uniqueName: String {
        dbus_bus_get_unique_name(pointer).map { String(cString: $0) } ?? ""
    }

    public var isConnected: Bool { dbus_connection_get_is_connected(pointer) != 0 }

    /// The socket the connection reads and writes, or nil when it has none
    /// (disconnected). Only for watching it: reading or writing it would take
    /// bytes from libdbus.
    public var socketDescriptor: Int32? {
        var fd: Int32 = -1
        return dbus_connection_get_socket(pointer, &fd) != 0 ? fd : nil
    }

    public func close() { dbus_connection_close(pointer) }

    // MARK: Names and matches

    public enum RequestNameReply: Sendable, Equatable {
        case primaryOwner, inQueue, exists, alreadyOwner
    }

    /// Requests a well-known name; `replace` takes it from an owner that allows it.
    public func requestName(_ name: String, allowReplacement: Bool = true, replace: Bool = false,
                            queue: Bool = false) throws(DBusFailure) -> RequestNameReply {
        var flags: UInt32 = 0
        if allowReplacement { flags |= UInt32(DBUS_NAME_FLAG_ALLOW_REPLACEMENT) }
        if replace { flags |= UInt32(DBUS_NAME_FLAG_REPLACE_EXISTING) }
        if !queue { flags |= UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE) }
        // Through callBus rather than dbus_bus_request_name, so that the
        // answer is checked to come from the bus.
        let result = try callBus("RequestName", [.string(name), .uint32(flags)]).first?.uint32Value
        switch result.map(Int32.init(bitPattern:)) {
        case DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER: return .primaryOwner
        case DBUS_REQUEST_NAME_REPLY_IN_QUEUE: return .inQueue
        case DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER: return .alreadyOwner
        default: return .exists
        }
    }

    /// Calls a method of the bus itself (`org.freedesktop.DBus`) and returns
    /// the reply's arguments; a reply from anyone but the bus is refused.
    public func callBus(_ member: String, _ arguments: [TypedValue] = [],
                        timeoutMilliseconds: Int32 = 25_000) throws(DBusFailure) -> [TypedValue] {
        let message = Message.methodCall(destination: Self.busDriverName, path: "/org/freedesktop/DBus",
                                         interface: Self.busDriverName, member: member)
        try message.append(arguments)
        return try call(message, timeoutMilliseconds: timeoutMilliseconds).arguments()
    }

    /// Asks the bus to route the signals `rule` matches to this connection.
    public func addMatch(_ rule: String) throws(DBusFailure) {
        _ = try callBus("AddMatch", [.string(rule)])
    }

    // MARK: Sending

    /// Queues a message; returns false when libdbus is out of memory.
    @discardableResult
    public func send(_ message: Message) -> Bool {
        dbus_connection_send(pointer, message.pointer, nil) != 0
    }

    /// Writes everything queued.
    public func flush() {
        dbus_connection_flush(pointer)
    }

    /// Sends and waits for the reply, reading the connection meanwhile.
    /// For clients, tests and benchmarks; the daemon uses ``callAsync(_:timeoutMilliseconds:acceptingReplyFrom:completion:)``.
    ///
    /// libdbus takes the first reply with the call's serial, whoever sent it.
    /// When the call went to a unique name or to the bus, a reply from anyone
    /// else is a forgery that got there first: the call fails rather than
    /// return it (the genuine reply is lost with it). For a call to a
    /// well-known name, `replyMustComeFromOwner` asks the bus afterwards who
    /// owns the name (one more round trip) and applies the same rule.
    public func call(_ message: Message, timeoutMilliseconds: Int32 = 25_000,
                     replyMustComeFromOwner: Bool = false) throws(DBusFailure) -> Message {
        let raw = try dbusCall("dbus_connection_send_with_reply_and_block") {
            dbus_connection_send_with_reply_and_block(pointer, message.pointer, timeoutMilliseconds, $0)
        }
        let reply = Message(takingOwnershipOf: raw)
        guard let destination = message.destination else { return reply }
        var rightful = destination
        if !destination.hasPrefix(":") && destination != Self.busDriverName {
            // The bus itself answers for a name nobody owns (activation errors).
            guard replyMustComeFromOwner, reply.sender != Self.busDriverName else { return reply }
            rightful = try callBus("GetNameOwner", [.string(destination)], timeoutMilliseconds: timeoutMilliseconds)
                .first?.stringValue ?? ""
        }
        if reply.sender != rightful {
            throw DBusFailure(name: DBusFailure.failed,
                              message: "the reply to \(message.member ?? "the call") came from \(reply.sender ?? "nobody"), not from \(rightful == destination ? destination : "\(rightful), the owner of \(destination)"): ignored as forged",
                              function: "dbus_connection_send_with_reply_and_block")
        }
        return reply
    }

    /// The bus daemon's own name: the sender of everything the bus itself says.
    public static let busDriverName = "org.freedesktop.DBus"

    /// Sends and calls `completion` from the dispatching loop with the reply
    /// (an error reply arrives as a failure).
    ///
    /// A reply counts only when it comes from whom the call went to. For a
    /// unique name or the bus that is checked here; for a well-known name
    /// only the caller knows the owner: `acceptingReplyFrom` then decides
    /// (nil: any sender, as libdbus would). Checked on connections driven by
    /// a main loop; without one, libdbus's pending calls match the serial only.
    public func callAsync(_ message: Message, timeoutMilliseconds: Int32,
                          acceptingReplyFrom acceptsSender: ((String) -> Bool)? = nil,
                          completion: @escaping (Result<Message, DBusFailure>) -> Void) {
        if let replyTable {
            guard isConnected else {
                completion(.failure(DBusFailure(name: "org.freedesktop.DBus.Error.Disconnected",
                                                message: "the connection is closed", function: "dbus_connection_send")))
                return
            }
            if !replyTable.send(message, on: pointer, timeoutMilliseconds: timeoutMilliseconds,
                                acceptingReplyFrom: acceptsSender, completion: completion) {
                completion(.failure(DBusFailure(name: DBusFailure.noMemory, message: "out of memory",
                                                function: "dbus_connection_send")))
            }
            return
        }
        // Without a main loop nothing would run a deadline: libdbus keeps the pending call.
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(pointer, message.pointer, &pending, timeoutMilliseconds) != 0,
              let pending
        else {
            completion(.failure(DBusFailure(name: "org.freedesktop.DBus.Error.Disconnected",
                                            message: "the connection is closed", function: "dbus_connection_send_with_reply")))
            return
        }
        let box = Unmanaged.passRetained(PendingCompletion(completion)).toOpaque()
        let set = dbus_pending_call_set_notify(pending, { pendingCall, data in
            let completion = Unmanaged<PendingCompletion>.fromOpaque(data!).takeUnretainedValue()
            guard let raw = dbus_pending_call_steal_reply(pendingCall) else {
                completion.run(.failure(DBusFailure(name: "org.freedesktop.DBus.Error.NoReply", message: "no reply")))
                return
            }
            let reply = Message(takingOwnershipOf: raw)
            if reply.kind == .error {
                let text = reply.errorText
                completion.run(.failure(DBusFailure(name: reply.errorName ?? DBusFailure.failed, message: text)))
            } else {
                completion.run(.success(reply))
            }
        }, box, { raw in if let raw { Unmanaged<PendingCompletion>.fromOpaque(raw).release() } })
        if set == 0 {
            Unmanaged<PendingCompletion>.fromOpaque(box).release()
            completion(.failure(DBusFailure(name: DBusFailure.noMemory, message: "out of memory",
                                            function: "dbus_pending_call_set_notify")))
        }
        dbus_pending_call_unref(pending)
    }

    /// Reads, writes and dispatches once; false when disconnected. For simple clients.
    @discardableResult
    public func readWriteDispatch(timeoutMilliseconds: Int32) -> Bool {
        dbus_connection_read_write_dispatch(pointer, timeoutMilliseconds) != 0
    }

    /// From `attach(to:)`: replies to `callAsync` are matched here from now on;
    /// `armTimer` runs a function once on the main loop after a delay.
    func trackReplies(armTimer: @escaping (_ milliseconds: Int32, _ fire: @escaping () -> Void) -> Void) throws(DBusFailure) {
        guard replyTable == nil else { return }
        let table = ReplyTable(armTimer: armTimer)
        let added = dbus_connection_add_filter(pointer, { _, raw, data in
            let table = Unmanaged<ReplyTable>.fromOpaque(data!).takeUnretainedValue()
            switch dbus_message_get_type(raw) {
            case DBUS_MESSAGE_TYPE_METHOD_RETURN, DBUS_MESSAGE_TYPE_ERROR:
                return table.complete(with: Message(retaining: raw!)) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            case DBUS_MESSAGE_TYPE_SIGNAL where dbus_message_is_signal(raw, "org.freedesktop.DBus.Local", "Disconnected") != 0:
                table.failAll(DBusFailure(name: "org.freedesktop.DBus.Error.Disconnected",
                                          message: "the connection to the bus was closed before the reply arrived"))
                return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            default:
                return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            }
        }, Unmanaged.passRetained(table).toOpaque(), { raw in
            if let raw { Unmanaged<ReplyTable>.fromOpaque(raw).release() }
        })
        try dbusRequireMemory(added, "dbus_connection_add_filter")
        replyTable = table
    }

    // MARK: Receiving

    /// Every incoming message passes `filter` first; return true when it was handled.
    public func addFilter(_ filter: @escaping (Message) -> Bool) throws(DBusFailure) {
        let box = MessageHandlerBox(filter)
        handlerBoxes.append(box)
        let added = dbus_connection_add_filter(pointer, { _, message, data in
            let handler = Unmanaged<MessageHandlerBox>.fromOpaque(data!).takeUnretainedValue()
            return handler.handle(message!) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }, Unmanaged.passUnretained(box).toOpaque(), nil)
        try dbusRequireMemory(added, "dbus_connection_add_filter")
    }

    /// Routes method calls on `path` and below to `handler`; libdbus answers
    /// `Introspect` on the parent nodes itself, so `busctl tree` works.
    public func registerFallback(path: String, handler: @escaping (Message) -> Bool) throws(DBusFailure) {
        let box = MessageHandlerBox(handler)
        var vtable = DBusObjectPathVTable()
        vtable.message_function = { _, message, data in
            let handler = Unmanaged<MessageHandlerBox>.fromOpaque(data!).takeUnretainedValue()
            return handler.handle(message!) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
        vtable.unregister_function = { _, data in
            if let data { Unmanaged<MessageHandlerBox>.fromOpaque(data).release() }
        }
        let retained = Unmanaged.passRetained(box).toOpaque()
        do {
            try dbusCall("dbus_connection_try_register_fallback") { error -> Bool? in
                dbus_connection_try_register_fallback(pointer, path, &vtable, retained, error) != 0 ? true : nil
            }
        } catch {
            Unmanaged<MessageHandlerBox>.fromOpaque(retained).release()
            throw error
        }
    }

    /// Sets how many file descriptors an incoming message may carry. libdbus
    /// accepts 16 and drops the whole connection for a message with more, so a
    /// bus configured to pass more (`max_message_unix_fds`) would let any
    /// client knock the receiver off the bus.
    public func setMaximumMessageUnixFDs(_ count: Int) {
        dbus_connection_set_max_message_unix_fds(pointer, count)
    }
}

final class PendingCompletion {
    private let completion: (Result<Message, DBusFailure>) -> Void
    init(_ completion: @escaping (Result<Message, DBusFailure>) -> Void) { self.completion = completion }
    func run(_ result: Result<Message, DBusFailure>) { completion(result) }
}

final class MessageHandlerBox {
    private let handler: (Message) -> Bool
    init(_ handler: @escaping (Message) -> Bool) { self.handler = handler }
    func handle(_ raw: OpaquePointer) -> Bool { handler(Message(retaining: raw)) }
}
