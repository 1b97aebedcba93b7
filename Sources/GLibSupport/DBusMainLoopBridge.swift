// SPDX-License-Identifier: Apache-2.0
import CGLib
import DBusKit

/// Drives a libdbus ``Connection`` from a ``MainLoop``: each watch becomes a
/// unix-fd source, each timeout a timeout source, and queued messages are
/// dispatched from an idle source (never from inside libdbus's own callbacks).
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

    private init(loop: MainLoop, connection: Connection) {
        self.loop = loop
        self.connection = connection
    }

    /// Attaches `connection` to `loop` for as long as the connection lives.
    public static func attach(_ connection: Connection, to loop: MainLoop) throws {
        try connection.attach(to: DBusMainLoopBridge(loop: loop, connection: connection))
    }

    // MARK: Watches

    public func add(_ watch: Watch) { arm(watch) }
    public func remove(_ watch: Watch) { disarm(watch) }
    public func toggled(_ watch: Watch) {
        disarm(watch)
        arm(watch)
    }

    private func arm(_ watch: Watch) {
        guard watch.isEnabled else { return }
        var condition = G_IO_ERR.rawValue | G_IO_HUP.rawValue
        if watch.wantsReadable { condition |= G_IO_IN.rawValue }
        if watch.wantsWritable { condition |= G_IO_OUT.rawValue }
        // The source holds the watch unowned: libdbus removes the watch (and so the source) before freeing it.
        watch.attachment = loop.onFileDescriptor(watch.fileDescriptor, condition: GIOCondition(rawValue: condition)) {
            [unowned watch] fired in
            watch.handle(readable: fired.rawValue & G_IO_IN.rawValue != 0,
                         writable: fired.rawValue & G_IO_OUT.rawValue != 0,
                         error: fired.rawValue & G_IO_ERR.rawValue != 0,
                         hangup: fired.rawValue & G_IO_HUP.rawValue != 0)
            return true
        }
    }

    private func disarm(_ watch: Watch) {
        (watch.attachment as? GLibSource)?.cancel()
        watch.attachment = nil
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

    // MARK: Dispatch

    public func dispatchStatusChanged(dataRemains: Bool) {
        guard dataRemains, dispatchSource?.isActive != true else { return }
        dispatchSource = loop.idle { [weak self] in
            self?.dispatchSource = nil
            self?.connection?.dispatchPending()
        }
    }
}
