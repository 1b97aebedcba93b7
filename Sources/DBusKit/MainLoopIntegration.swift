// SPDX-License-Identifier: Apache-2.0
import CDBus

/// What a main loop must do to drive a ``Connection``: watch file descriptors,
/// run timeouts, and dispatch when messages are queued.
///
/// libdbus calls these from inside its own calls; an implementation only
/// (un)schedules work and must not dispatch from ``dispatchStatusChanged(dataRemains:)``.
public protocol MainLoopIntegration: AnyObject {
    func add(_ watch: Watch)
    func remove(_ watch: Watch)
    func toggled(_ watch: Watch)
    func add(_ timeout: Timeout)
    func remove(_ timeout: Timeout)
    func toggled(_ timeout: Timeout)
    func dispatchStatusChanged(dataRemains: Bool)
    /// Calls `fire` once, on the loop's thread, after `milliseconds`: the
    /// deadlines of ``Connection/callAsync(_:timeoutMilliseconds:acceptingReplyFrom:completion:)``.
    /// May be called from any thread.
    func after(milliseconds: Int32, _ fire: @escaping () -> Void)
}

/// A file descriptor libdbus wants watched.
public final class Watch: @unchecked Sendable {
    let pointer: OpaquePointer
    let connection: OpaquePointer
    /// Where the main loop keeps its own state for this watch (its source).
    public var attachment: AnyObject?

    init(pointer: OpaquePointer, connection: OpaquePointer) {
        self.pointer = pointer
        self.connection = connection
    }

    public var fileDescriptor: Int32 { dbus_watch_get_unix_fd(pointer) }
    public var isEnabled: Bool { dbus_watch_get_enabled(pointer) != 0 }
    public var wantsReadable: Bool { dbus_watch_get_flags(pointer) & DBUS_WATCH_READABLE.rawValue != 0 }
    public var wantsWritable: Bool { dbus_watch_get_flags(pointer) & DBUS_WATCH_WRITABLE.rawValue != 0 }

    /// Lets libdbus read or write; holds a connection reference meanwhile,
    /// because handling can drop the last other one (a disconnect).
    public func handle(readable: Bool, writable: Bool, error: Bool, hangup: Bool) {
        var flags: UInt32 = 0
        if readable { flags |= DBUS_WATCH_READABLE.rawValue }
        if writable { flags |= DBUS_WATCH_WRITABLE.rawValue }
        if error { flags |= DBUS_WATCH_ERROR.rawValue }
        if hangup { flags |= DBUS_WATCH_HANGUP.rawValue }
        dbus_connection_ref(connection)
        _ = dbus_watch_handle(pointer, flags)
        dbus_connection_unref(connection)
    }
}

/// A timer libdbus wants run (method-call timeouts, auth timeouts).
public final class Timeout: @unchecked Sendable {
    let pointer: OpaquePointer
    public var attachment: AnyObject?

    init(pointer: OpaquePointer) { self.pointer = pointer }

    public var intervalMilliseconds: Int32 { dbus_timeout_get_interval(pointer) }
    public var isEnabled: Bool { dbus_timeout_get_enabled(pointer) != 0 }
    public func handle() { _ = dbus_timeout_handle(pointer) }
}

/// The context libdbus hands back to the three callback families.
final class IntegrationContext {
    let integration: MainLoopIntegration
    let connection: OpaquePointer
    init(integration: MainLoopIntegration, connection: OpaquePointer) {
        self.integration = integration
        self.connection = connection
    }
}

private func context(_ data: UnsafeMutableRawPointer?) -> IntegrationContext {
    Unmanaged<IntegrationContext>.fromOpaque(data!).takeUnretainedValue()
}

private func watchObject(_ watch: OpaquePointer?) -> Watch? {
    guard let watch, let data = dbus_watch_get_data(watch) else { return nil }
    return Unmanaged<Watch>.fromOpaque(data).takeUnretainedValue()
}

private func timeoutObject(_ timeout: OpaquePointer?) -> Timeout? {
    guard let timeout, let data = dbus_timeout_get_data(timeout) else { return nil }
    return Unmanaged<Timeout>.fromOpaque(data).takeUnretainedValue()
}

extension Connection {
    /// Hands the connection's watches, timeouts and dispatch to a main loop.
    public func attach(to integration: MainLoopIntegration) throws(DBusFailure) {
        let box = IntegrationContext(integration: integration, connection: pointer)
        let watchData = Unmanaged.passRetained(box).toOpaque()
        let watchesSet = dbus_connection_set_watch_functions(
            pointer,
            { watchPointer, data in
                let ctx = context(data)
                let watch = Watch(pointer: watchPointer!, connection: ctx.connection)
                // libdbus owns the Swift object from here; its free function releases it.
                dbus_watch_set_data(watchPointer, Unmanaged.passRetained(watch).toOpaque(), { raw in
                    if let raw { Unmanaged<Watch>.fromOpaque(raw).release() }
                })
                ctx.integration.add(watch)
                return CDBUS_TRUE
            },
            { watchPointer, data in
                if let watch = watchObject(watchPointer) { context(data).integration.remove(watch) }
            },
            { watchPointer, data in
                if let watch = watchObject(watchPointer) { context(data).integration.toggled(watch) }
            },
            watchData,
            { raw in if let raw { Unmanaged<IntegrationContext>.fromOpaque(raw).release() } })
        try dbusRequireMemory(watchesSet, "dbus_connection_set_watch_functions")

        let timeoutData = Unmanaged.passRetained(box).toOpaque()
        let timeoutsSet = dbus_connection_set_timeout_functions(
            pointer,
            { timeoutPointer, data in
                let timeout = Timeout(pointer: timeoutPointer!)
                dbus_timeout_set_data(timeoutPointer, Unmanaged.passRetained(timeout).toOpaque(), { raw in
                    if let raw { Unmanaged<Timeout>.fromOpaque(raw).release() }
                })
                context(data).integration.add(timeout)
                return CDBUS_TRUE
            },
            { timeoutPointer, data in
                if let timeout = timeoutObject(timeoutPointer) { context(data).integration.remove(timeout) }
            },
            { timeoutPointer, data in
                if let timeout = timeoutObject(timeoutPointer) { context(data).integration.toggled(timeout) }
            },
            timeoutData,
            { raw in if let raw { Unmanaged<IntegrationContext>.fromOpaque(raw).release() } })
        try dbusRequireMemory(timeoutsSet, "dbus_connection_set_timeout_functions")

        dbus_connection_set_dispatch_status_function(
            pointer,
            { _, status, data in
                context(data).integration.dispatchStatusChanged(dataRemains: status == DBUS_DISPATCH_DATA_REMAINS)
            },
            Unmanaged.passRetained(box).toOpaque(),
            { raw in if let raw { Unmanaged<IntegrationContext>.fromOpaque(raw).release() } })

        try trackReplies { [weak integration] milliseconds, fire in integration?.after(milliseconds: milliseconds, fire) }

        if dbus_connection_get_dispatch_status(pointer) == DBUS_DISPATCH_DATA_REMAINS {
            integration.dispatchStatusChanged(dataRemains: true)
        }
    }

    /// Whether messages already read from the socket wait to be dispatched.
    /// From inside a handler, these are the calls behind the one being
    /// handled (it has left the queue); messages still in the socket are
    /// not counted.
    public var hasQueuedMessages: Bool {
        dbus_connection_get_dispatch_status(pointer) == DBUS_DISPATCH_DATA_REMAINS
    }

    /// Dispatches queued messages until none remain (from the main loop, outside libdbus callbacks).
    public func dispatchPending() {
        dbus_connection_ref(pointer)
        while dbus_connection_dispatch(pointer) == DBUS_DISPATCH_DATA_REMAINS {}
        dbus_connection_unref(pointer)
    }
}
