// SPDX-License-Identifier: Apache-2.0
import CGLib

/// A one-shot timer that is armed again and again without a new `GSource`
/// each time: one source stays attached, and its `prepare` and `check`
/// compare the loop's time with a due time kept in the source's own memory.
///
/// `loop.after(milliseconds:)` creates, attaches and destroys a timeout
/// source per use: allocations, the context's lock and a list insert each
/// time. `g_source_set_ready_time` would avoid those but writes the context's
/// wake-up descriptor on every change, even from the loop's own thread.
/// Arming this timer only stores a number. For a timer armed after nearly
/// every call (``DBusMainLoopBridge``'s pause before signals).
///
/// On the loop's thread only: nothing wakes a loop blocked in `poll()`.
///
/// ```swift
/// let timer = loop.readyTimer { flushSignals() }
/// timer.arm(milliseconds: 1)   // fires once, about 1 ms from now
/// ```
public final class ReadyTimer {
    private let source: UnsafeMutablePointer<GSource>

    /// The monotonic time (µs) it fires at, or -1 when disarmed; stored right
    /// behind the `GSource` header, so it lives exactly as long as the source.
    private static func dueTime(of source: UnsafeMutablePointer<GSource>) -> UnsafeMutablePointer<gint64> {
        (UnsafeMutableRawPointer(source) + MemoryLayout<GSource>.stride).assumingMemoryBound(to: gint64.self)
    }

    /// Written once, then only read by GLib.
    nonisolated(unsafe) private static let functions: UnsafeMutablePointer<GSourceFuncs> = {
        let functions = UnsafeMutablePointer<GSourceFuncs>.allocate(capacity: 1)
        var table = GSourceFuncs()
        table.prepare = { source, timeout in
            let due = ReadyTimer.dueTime(of: source!).pointee
            guard due >= 0 else {
                timeout?.pointee = -1
                return CGLIB_FALSE
            }
            let remaining = due - g_source_get_time(source)
            if remaining <= 0 { return CGLIB_TRUE }
            timeout?.pointee = gint((remaining + 999) / 1000)
            return CGLIB_FALSE
        }
        table.check = { source in
            let due = ReadyTimer.dueTime(of: source!).pointee
            return due >= 0 && g_source_get_time(source) >= due ? CGLIB_TRUE : CGLIB_FALSE
        }
        table.dispatch = { source, _, userData in
            // Disarmed before the action runs, so that the action can arm it again.
            ReadyTimer.dueTime(of: source!).pointee = -1
            _ = Unmanaged<CallbackBox>.fromOpaque(userData!).takeUnretainedValue().action()
            return CGLIB_SOURCE_CONTINUE
        }
        functions.initialize(to: table)
        return functions
    }()

    init(context: OpaquePointer, action: @escaping () -> Void) {
        source = g_source_new(Self.functions, guint(MemoryLayout<GSource>.stride + MemoryLayout<gint64>.stride))
        Self.dueTime(of: source).initialize(to: -1)
        let box = Unmanaged.passRetained(CallbackBox { action(); return true }).toOpaque()
        // GLib only hands the function and data back to `dispatch`, which uses the data alone.
        g_source_set_callback(source, { _ in CGLIB_SOURCE_CONTINUE }, box) { raw in
            if let raw { Unmanaged<CallbackBox>.fromOpaque(raw).release() }
        }
        g_source_attach(source, context)
    }

    /// Fires once, `milliseconds` from now; replaces an earlier arming.
    public func arm(milliseconds: UInt32) {
        Self.dueTime(of: source).pointee = g_get_monotonic_time() + gint64(milliseconds) * 1000
    }

    /// Whether it will fire.
    public var isArmed: Bool { Self.dueTime(of: source).pointee >= 0 }

    public func disarm() { Self.dueTime(of: source).pointee = -1 }

    deinit {
        g_source_destroy(source)
        g_source_unref(source)
    }
}

extension MainLoop {
    /// A timer on this loop, not armed yet (see ``ReadyTimer``).
    public func readyTimer(_ action: @escaping () -> Void) -> ReadyTimer {
        ReadyTimer(context: context, action: action)
    }
}
