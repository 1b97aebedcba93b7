// SPDX-License-Identifier: Apache-2.0
import CGLib
import DBusKit

/// A `GMainLoop` on a `GMainContext`, with Swift closures as sources.
///
/// Everything attached to one loop runs on the thread that runs it, so the
/// service needs no locks: handlers, timers and signal callbacks take turns.
///
/// ```swift
/// let loop = MainLoop()
/// let stop = loop.onUnixSignal(SIGTERM) { loop.quit() }
/// loop.run()
/// ```
public final class MainLoop {
    /// The `GMainContext*` the loop runs (never nil: the global default is used explicitly).
    public let context: OpaquePointer
    private let loop: OpaquePointer

    /// A loop on `context`, or on the global default context.
    public init(context: OpaquePointer? = nil) {
        let chosen = context ?? g_main_context_default()!
        self.context = g_main_context_ref(chosen)
        self.loop = g_main_loop_new(chosen, CGLIB_FALSE)
    }

    /// A loop on a new context of its own (for a loop on another thread, or a test).
    public static func withNewContext() -> MainLoop {
        let context = g_main_context_new()!
        defer { g_main_context_unref(context) }
        return MainLoop(context: context)
    }

    deinit {
        g_main_loop_unref(loop)
        g_main_context_unref(context)
    }

    public func run() { g_main_loop_run(loop) }
    public func quit() { g_main_loop_quit(loop) }
    public var isRunning: Bool { g_main_loop_is_running(loop) != 0 }

    /// Whether the calling thread is the one running (owning) this loop's context.
    public var isOwnedByCurrentThread: Bool { g_main_context_is_owner(context) != 0 }

    /// Runs one iteration; returns whether anything was dispatched.
    @discardableResult
    public func iterate(mayBlock: Bool) -> Bool {
        g_main_context_iteration(context, mayBlock ? CGLIB_TRUE : CGLIB_FALSE) != 0
    }

    /// Makes this loop's context the thread-default while `body` runs (GIO
    /// objects created inside attach their sources to it).
    public func withThreadDefault<T>(_ body: () throws -> T) rethrows -> T {
        g_main_context_push_thread_default(context)
        defer { g_main_context_pop_thread_default(context) }
        return try body()
    }

    /// Calls `action` once after `milliseconds`.
    @discardableResult
    public func after(milliseconds: UInt32, _ action: @escaping () -> Void) -> GLibSource {
        attach(g_timeout_source_new(milliseconds)) { action(); return false }
    }

    /// Calls `action` every `milliseconds` until it returns false or the source is cancelled.
    @discardableResult
    public func every(milliseconds: UInt32, _ action: @escaping () -> Bool) -> GLibSource {
        attach(g_timeout_source_new(milliseconds), action)
    }

    /// Calls `action` once when the loop is idle.
    @discardableResult
    public func idle(priority: Int32 = G_PRIORITY_DEFAULT, _ action: @escaping () -> Void) -> GLibSource {
        let source = g_idle_source_new()!
        g_source_set_priority(source, priority)
        return attach(source) { action(); return false }
    }

    /// Calls `action` once, when no descriptor, timer or other source of
    /// default priority is ready: after the loop has read everything waiting.
    @discardableResult
    public func whenNothingElseIsReady(_ action: @escaping () -> Void) -> GLibSource {
        idle(priority: G_PRIORITY_DEFAULT_IDLE, action)
    }

    /// Calls `action` on the loop's thread whenever `signal` arrives (SIGTERM, SIGINT, SIGHUP…).
    @discardableResult
    public func onUnixSignal(_ signal: Int32, _ action: @escaping () -> Void) -> GLibSource {
        attach(g_unix_signal_source_new(signal)) { action(); return true }
    }

    /// What a loop nested inside an fd source's action does with that source.
    ///
    /// GLib blocks a source while its action runs unless it may recurse, and
    /// blocking and unblocking it each wake the loop (an `eventfd` write,
    /// even from the loop's own thread): two writes, a read and one more
    /// `poll` each time the descriptor fires. Both other cases avoid that.
    public enum NestedDispatch {
        /// GLib's default: the source is blocked while the action runs.
        case blocked
        /// A nested loop may call the action again, inside itself.
        case allowed
        /// The source is not blocked, but a nested loop leaves the action
        /// alone until it returns (for actions that are not reentrant).
        case skipped
    }

    /// Calls `action` when `fd` has one of `condition` (G_IO_IN etc.); return false to stop.
    ///
    /// ```swift
    /// let watch = loop.onFileDescriptor(fd, condition: G_IO_IN, nested: .skipped) { _ in
    ///     readWhatIsThere()   // true: keep watching
    /// }
    /// ```
    /// `priority`: GLib's (`G_PRIORITY_DEFAULT` is 0; larger runs later, only
    /// when no source of a smaller one is ready).
    @discardableResult
    public func onFileDescriptor(_ fd: Int32, condition: GIOCondition, nested: NestedDispatch = .blocked,
                                 priority: Int32 = G_PRIORITY_DEFAULT,
                                 _ action: @escaping (GIOCondition) -> Bool) -> GLibSource {
        let source = g_unix_fd_source_new(fd, condition)!
        if nested != .blocked { g_source_set_can_recurse(source, CGLIB_TRUE) }
        if priority != G_PRIORITY_DEFAULT { g_source_set_priority(source, priority) }
        let box = Unmanaged.passRetained(FDCallbackBox(action, skipsNestedCalls: nested == .skipped)).toOpaque()
        let callback: GUnixFDSourceFunc = { _, condition, data in
            Unmanaged<FDCallbackBox>.fromOpaque(data!).takeUnretainedValue().run(condition)
                ? CGLIB_SOURCE_CONTINUE : CGLIB_SOURCE_REMOVE
        }
        g_source_set_callback(source, unsafeBitCast(callback, to: GSourceFunc.self), box) { raw in
            if let raw { Unmanaged<FDCallbackBox>.fromOpaque(raw).release() }
        }
        return GLibSource(attaching: source, to: context)
    }

    /// The same watch for callers that do not import GLib: `events` in
    /// Swift's terms instead of a `GIOCondition`.
    @discardableResult
    public func onFileDescriptor(_ fd: Int32, events: DescriptorEvents, nested: NestedDispatch = .blocked,
                                 _ action: @escaping () -> Bool) -> GLibSource {
        onFileDescriptor(fd, condition: GIOCondition(events.rawValue), nested: nested) { _ in action() }
    }

    private func attach(_ source: UnsafeMutablePointer<GSource>, _ action: @escaping () -> Bool) -> GLibSource {
        let box = Unmanaged.passRetained(CallbackBox(action)).toOpaque()
        g_source_set_callback(source, { data in
            Unmanaged<CallbackBox>.fromOpaque(data!).takeUnretainedValue().action()
                ? CGLIB_SOURCE_CONTINUE : CGLIB_SOURCE_REMOVE
        }, box) { raw in
            if let raw { Unmanaged<CallbackBox>.fromOpaque(raw).release() }
        }
        return GLibSource(attaching: source, to: context)
    }
}

/// An attached `GSource`; cancelled when cancelled explicitly or released.
/// Sendable: `g_source_destroy`, `g_source_is_destroyed` and `g_source_unref`
/// may be called from any thread.
public final class GLibSource: @unchecked Sendable {
    private let source: UnsafeMutablePointer<GSource>

    /// Takes over the caller's reference to `source` and attaches it.
    init(attaching source: UnsafeMutablePointer<GSource>, to context: OpaquePointer) {
        self.source = source
        g_source_attach(source, context)
    }

    /// Stops the source; further callbacks never run.
    public func cancel() {
        if g_source_is_destroyed(source) == 0 { g_source_destroy(source) }
    }

    public var isActive: Bool { g_source_is_destroyed(source) == 0 }

    deinit {
        cancel()
        g_source_unref(source)
    }
}

/// Orders a callback's creation on one thread before its run on the loop's.
///
/// GLib's own locking already does (a source may be attached from any
/// thread), but its `GMutex` is a bare futex that ThreadSanitizer cannot see,
/// so it would report the closure's capture and its first read as a race.
/// Taking a `pthread` mutex, which it does see, on both sides states the
/// order it cannot find; uncontended, that is two atomic operations.
let crossThreadHandoff = ThreadLock()

final class CallbackBox {
    private let stored: () -> Bool
    init(_ action: @escaping () -> Bool) {
        stored = action
        crossThreadHandoff.withLock {}
    }
    var action: () -> Bool { crossThreadHandoff.withLock { stored } }
}

final class FDCallbackBox {
    private let stored: (GIOCondition) -> Bool
    private let skipsNestedCalls: Bool
    /// Only touched on the loop's thread.
    private var isRunning = false
    init(_ action: @escaping (GIOCondition) -> Bool, skipsNestedCalls: Bool) {
        stored = action
        self.skipsNestedCalls = skipsNestedCalls
        crossThreadHandoff.withLock {}
    }

    /// A skipped nested call keeps the source: the descriptor is still ready when the action returns.
    func run(_ condition: GIOCondition) -> Bool {
        if skipsNestedCalls && isRunning { return true }
        let action = crossThreadHandoff.withLock { stored }
        isRunning = true
        defer { isRunning = false }
        return action(condition)
    }
}

/// Wall-clock time in microseconds since the Unix epoch (`g_get_real_time`).
public func currentTimeMicroseconds() -> Int64 { Int64(g_get_real_time()) }

/// What a descriptor watch waits for (GLib's `GIOCondition` bits).
public struct DescriptorEvents: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let readable = DescriptorEvents(rawValue: G_IO_IN.rawValue)
    public static let writable = DescriptorEvents(rawValue: G_IO_OUT.rawValue)
    public static let hangUp = DescriptorEvents(rawValue: G_IO_HUP.rawValue)
    public static let error = DescriptorEvents(rawValue: G_IO_ERR.rawValue)
}
