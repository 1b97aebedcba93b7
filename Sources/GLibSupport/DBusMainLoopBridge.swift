// SPDX-License-Identifier: Apache-2.0
import CGLib
import DBusKit

/// Drives a libdbus ``Connection`` from a ``MainLoop``: each enabled watch is
/// a GLib fd source (`g_unix_fd_source_new`), made when libdbus enables the
/// watch and destroyed when it disables it; each timeout a timeout source.
/// Messages read while handling a watch are dispatched right after libdbus
/// returns; messages queued any other way (a blocking call on another thread)
/// are dispatched from an idle source. Never from inside libdbus's own
/// callbacks, and never from a loop nested inside a message handler: libdbus
/// cannot dispatch while it is dispatching, so what arrives meanwhile waits
/// until the handler returns.
///
/// ```swift
/// let bus = try Connection.session()
/// try DBusMainLoopBridge.attach(bus, to: loop)
/// loop.run()
/// ```
public final class DBusMainLoopBridge: MainLoopIntegration {
    private let loop: MainLoop
    private weak var connection: Connection?
    private var dispatchSource: GLibSource?
    /// Watches being handled on the loop's thread (only touched there).
    private var watchesInProgress = 0
    /// Whether messages are being dispatched on the loop's thread (only
    /// touched there). A handler may run a loop of its own on the same
    /// context (an app's modal dialog); a watch or idle source that runs in
    /// it must not dispatch again: `dbus_connection_dispatch` would wait for
    /// itself. The outer dispatch goes on with what arrived once the handler
    /// returns.
    private var isDispatching = false
    /// The timer for the connection's earliest reply deadline (armed from any thread).
    private var replyTimer: GLibSource?
    private let replyTimerLock = ThreadLock()

    private init(loop: MainLoop, connection: Connection) {
        self.loop = loop
        self.connection = connection
    }

    /// Attaches `connection` to `loop` for as long as the connection lives.
    public static func attach(_ connection: Connection, to loop: MainLoop) throws {
        try connection.attach(to: DBusMainLoopBridge(loop: loop, connection: connection))
    }

    // MARK: Watches

    public func add(_ watch: Watch) { toggled(watch) }

    public func remove(_ watch: Watch) {
        (watch.attachment as? GLibSource)?.cancel()
        watch.attachment = nil
    }

    /// A source per enabled spell of the watch. It may recurse: a loop
    /// nested in a message handler (an app's modal dialog on the same
    /// context) lets libdbus read and write, and `handle` does not dispatch
    /// from inside a dispatch, so what arrives waits for the handler to
    /// return. Blocking the source instead would cost GLib two wake-ups of
    /// its own loop per message read (see `MainLoop.NestedDispatch`).
    public func toggled(_ watch: Watch) {
        remove(watch)
        guard watch.isEnabled else { return }
        // The source holds the watch unowned: libdbus removes the watch (and so the source) before freeing it.
        watch.attachment = loop.onFileDescriptor(watch.fileDescriptor, condition: Self.condition(of: watch),
                                                 nested: .allowed) {
            [unowned self, unowned watch] fired in
            handle(watch, fired)
            return true
        }
    }

    private static func condition(of watch: Watch) -> GIOCondition {
        var condition = G_IO_ERR.rawValue | G_IO_HUP.rawValue
        if watch.wantsReadable { condition |= G_IO_IN.rawValue }
        if watch.wantsWritable { condition |= G_IO_OUT.rawValue }
        return GIOCondition(rawValue: condition)
    }

    /// Lets libdbus read or write, then dispatches what it read at once,
    /// instead of from the idle source, which would cost another loop
    /// iteration (and `poll()`) per incoming message.
    private func handle(_ watch: Watch, _ fired: GIOCondition) {
        watchesInProgress += 1
        watch.handle(readable: fired.rawValue & G_IO_IN.rawValue != 0,
                     writable: fired.rawValue & G_IO_OUT.rawValue != 0,
                     error: fired.rawValue & G_IO_ERR.rawValue != 0,
                     hangup: fired.rawValue & G_IO_HUP.rawValue != 0)
        watchesInProgress -= 1
        if watchesInProgress == 0 { dispatchPending() }
    }

    private func dispatchPending() {
        guard !isDispatching else { return }
        isDispatching = true
        connection?.dispatchPending()
        isDispatching = false
    }

    // MARK: Timeouts

    public func add(_ timeout: Timeout) { arm(timeout) }
    public func remove(_ timeout: Timeout) { disarm(timeout) }
    public func toggled(_ timeout: Timeout) {
        disarm(timeout)
        arm(timeout)
    }

    private func arm(_ timeout: Timeout) {
        guard timeout.isEnabled else { return }
        let interval = UInt32(max(0, timeout.intervalMilliseconds))
        timeout.attachment = loop.every(milliseconds: interval) { [unowned timeout] in
            timeout.handle()
            return true
        }
    }

    private func disarm(_ timeout: Timeout) {
        (timeout.attachment as? GLibSource)?.cancel()
        timeout.attachment = nil
    }

    public func after(milliseconds: Int32, _ fire: @escaping () -> Void) {
        let timer = loop.after(milliseconds: UInt32(max(0, milliseconds)), fire)
        // The connection only asks again for an earlier deadline, and asks
        // anew after each one passes, so the timer this replaces can go.
        replyTimerLock.withLock { replyTimer = timer }
    }

    // MARK: Dispatch

    public func dispatchStatusChanged(dataRemains: Bool) {
        guard dataRemains else { return }
        // Inside a watch on the loop's thread: handle(_:_:) dispatches right
        // after; inside a dispatch, its own loop goes on with what remains.
        if loop.isOwnedByCurrentThread && (watchesInProgress > 0 || isDispatching) { return }
        guard dispatchSource?.isActive != true else { return }
        dispatchSource = loop.idle { [weak self] in
            self?.dispatchSource = nil
            self?.dispatchPending()
        }
    }
}
