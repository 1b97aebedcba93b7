// SPDX-License-Identifier: Apache-2.0
import CGLib
import DBusKit
import GLibSupport

/// The hand-written fd source the libdbus bridge used before GLib's own fd
/// sources replaced it, kept here only so that `--poll pollsource` can count
/// it against them in the same run (bench/callgrind-libcompare.sh).
///
/// The `GPollFD` it polls lives in the source's own memory, so switching the
/// watch on and off rewrites a field instead of making and destroying a
/// source; it may recurse, so GLib does not take its descriptor out of the
/// poll set around each dispatch, and blocks itself only when a loop nests
/// inside its action.
final class RetiredPollSource {
    private let source: UnsafeMutablePointer<GSource>
    private let context: OpaquePointer
    private let fileDescriptor: Int32
    private var isPolled = true

    /// A change asked for by a thread that does not run the loop; the loop's
    /// thread applies it in `prepare`, so only that thread ever touches the
    /// record GLib polls.
    private final class Handoff: @unchecked Sendable {
        private let lock = ThreadLock()
        private var pending: GPollFD?
        /// Loop thread only: the action is running (a nested loop may be iterating).
        var isDispatching = false
        /// Loop thread only: the record was taken out of the poll set for a nested loop.
        var isSetAside = false

        func hand(_ change: GPollFD?) { lock.withLock { pending = change } }
        func take() -> GPollFD? {
            lock.withLock {
                defer { pending = nil }
                return pending
            }
        }
    }

    /// The `GPollFD` stored right behind the `GSource` header, so it lives
    /// exactly as long as the source.
    private static func pollRecord(of source: UnsafeMutablePointer<GSource>) -> UnsafeMutablePointer<GPollFD> {
        (UnsafeMutableRawPointer(source) + MemoryLayout<GSource>.stride).assumingMemoryBound(to: GPollFD.self)
    }

    /// The retained ``Handoff`` stored behind the record (released in `finalize`).
    private static func handoffSlot(of source: UnsafeMutablePointer<GSource>) -> UnsafeMutablePointer<UnsafeMutableRawPointer> {
        (UnsafeMutableRawPointer(source) + MemoryLayout<GSource>.stride + MemoryLayout<GPollFD>.stride)
            .assumingMemoryBound(to: UnsafeMutableRawPointer.self)
    }

    private static func handoff(of source: UnsafeMutablePointer<GSource>) -> Handoff {
        Unmanaged<Handoff>.fromOpaque(handoffSlot(of: source).pointee).takeUnretainedValue()
    }

    /// Written once, then only read by GLib.
    nonisolated(unsafe) private static let functions: UnsafeMutablePointer<GSourceFuncs> = {
        let functions = UnsafeMutablePointer<GSourceFuncs>.allocate(capacity: 1)
        var table = GSourceFuncs()
        table.prepare = { source, timeout in
            timeout?.pointee = -1
            let handoff = RetiredPollSource.handoff(of: source!)
            // GLib reads the record after every source has prepared (query).
            if let change = handoff.take() {
                RetiredPollSource.pollRecord(of: source!).pointee = change
            }
            // A nested loop, run from inside the action (an app's modal
            // dialog, say): the descriptor must not wake it while the action
            // has not finished, nor may the action run again inside itself.
            // Only then is the record taken out of the poll set; `dispatch`
            // puts it back.
            if handoff.isDispatching && !handoff.isSetAside {
                handoff.isSetAside = true
                g_source_remove_poll(source, RetiredPollSource.pollRecord(of: source!))
            }
            return CGLIB_FALSE
        }
        table.check = { source in
            guard !RetiredPollSource.handoff(of: source!).isDispatching else { return CGLIB_FALSE }
            let record = RetiredPollSource.pollRecord(of: source!).pointee
            // A disabled record asks for nothing, but poll() still reports errors and hang-ups on it.
            guard record.events != 0 else { return CGLIB_FALSE }
            let wanted = UInt16(record.events) | UInt16(G_IO_ERR.rawValue | G_IO_HUP.rawValue | G_IO_NVAL.rawValue)
            return (record.revents & wanted) != 0 ? CGLIB_TRUE : CGLIB_FALSE
        }
        table.dispatch = { source, _, userData in
            let record = RetiredPollSource.pollRecord(of: source!).pointee
            let box = Unmanaged<ActionBox>.fromOpaque(userData!).takeUnretainedValue()
            let handoff = RetiredPollSource.handoff(of: source!)
            handoff.isDispatching = true
            let keep = box.action(GIOCondition(rawValue: UInt32(record.revents)))
            handoff.isDispatching = false
            if handoff.isSetAside {
                handoff.isSetAside = false
                if g_source_is_destroyed(source) == 0 { g_source_add_poll(source, RetiredPollSource.pollRecord(of: source!)) }
            }
            return keep ? CGLIB_SOURCE_CONTINUE : CGLIB_SOURCE_REMOVE
        }
        table.finalize = { source in
            Unmanaged<Handoff>.fromOpaque(RetiredPollSource.handoffSlot(of: source!).pointee).release()
        }
        functions.initialize(to: table)
        return functions
    }()

    init(fileDescriptor: Int32, condition: GIOCondition, enabled: Bool = true, loop: MainLoop,
         action: @escaping (GIOCondition) -> Bool) {
        let context = loop.context
        let size = MemoryLayout<GSource>.stride + MemoryLayout<GPollFD>.stride + MemoryLayout<UnsafeMutableRawPointer>.stride
        source = g_source_new(Self.functions, guint(size))
        Self.handoffSlot(of: source).initialize(to: Unmanaged.passRetained(Handoff()).toOpaque())
        self.context = context
        self.fileDescriptor = fileDescriptor
        let record = Self.pollRecord(of: source)
        record.initialize(to: Self.record(fileDescriptor, enabled: enabled, condition: condition))
        g_source_add_poll(source, record)
        let box = Unmanaged.passRetained(ActionBox(action)).toOpaque()
        // GLib only hands the function and data back to `dispatch`, which uses the data alone.
        g_source_set_callback(source, { _ in CGLIB_SOURCE_CONTINUE }, box) { raw in
            if let raw { Unmanaged<ActionBox>.fromOpaque(raw).release() }
        }
        // GLib otherwise "blocks" a source while it dispatches: it removes the
        // descriptor from the poll set and adds it back, writing the context's
        // wake-up eventfd twice and costing an extra poll() per message. The
        // source blocks itself instead, and only when a loop nests inside its
        // action (the client library runs on an app's context, and apps run
        // nested loops): `check` refuses while the action runs, and `prepare`
        // takes the record out of the nested loop's poll set.
        g_source_set_can_recurse(source, CGLIB_TRUE)
        g_source_attach(source, context)
    }

    /// Starts or stops polling, or changes what is polled for.
    ///
    /// On the thread running the context this only rewrites the record (GLib
    /// reads it before its next `poll()`). Any other thread hands the change
    /// to the loop's thread, which applies it before its next `poll()`, and
    /// wakes a `poll()` in progress so the change is not missed.
    func update(enabled: Bool, condition: GIOCondition) {
        guard isPolled else { return }
        let wanted = Self.record(fileDescriptor, enabled: enabled, condition: condition)
        let handoff = Self.handoff(of: source)
        if g_main_context_is_owner(context) != 0 {
            // A change handed over earlier is older than this one.
            handoff.hand(nil)
            let record = Self.pollRecord(of: source)
            if record.pointee.events != wanted.events { record.pointee.events = wanted.events }
        } else {
            handoff.hand(wanted)
            g_main_context_wakeup(context)
        }
    }

    /// What GLib polls for this source. The descriptor never changes, only the
    /// events: GLib keeps a context's records sorted by descriptor when they
    /// are added and relies on that order when it hands poll() results back
    /// (`g_main_context_check` asserts it), so a record switched off by
    /// writing fd -1 and on again would land out of order. A disabled record
    /// asks for no events; poll() can still report an error or hang-up on it,
    /// which `check` ignores. (For a libdbus connection that only lasts until
    /// the enabled read watch on the same descriptor sees the hang-up.)
    private static func record(_ fileDescriptor: Int32, enabled: Bool, condition: GIOCondition) -> GPollFD {
        GPollFD(fd: fileDescriptor, events: enabled ? gushort(condition.rawValue) : 0, revents: 0)
    }

    /// Stops the source; its action never runs again.
    func cancel() {
        if g_source_is_destroyed(source) == 0 { g_source_destroy(source) }
        isPolled = false
    }

    deinit {
        cancel()
        g_source_unref(source)
    }
}

private final class ActionBox {
    let action: (GIOCondition) -> Bool
    init(_ action: @escaping (GIOCondition) -> Bool) { self.action = action }
}
