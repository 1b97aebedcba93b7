// SPDX-License-Identifier: Apache-2.0
import CGtk

/// A GObject, GTK widget or libadwaita object, as the C API hands it out.
/// GTK's headers declare some types (derivable ones) and leave others opaque,
/// so the wrapper keeps one raw pointer and casts at the call.
public typealias GPointer = UnsafeMutableRawPointer

extension UnsafeMutableRawPointer {
    /// The same object as the C type a GTK function takes.
    @inline(__always) public func `as`<T>(_: T.Type = T.self) -> UnsafeMutablePointer<T> {
        assumingMemoryBound(to: T.self)
    }
    /// The same object as a C type GTK's headers leave opaque.
    @inline(__always) public func `as`() -> OpaquePointer { OpaquePointer(self) }
    @inline(__always) public var widget: UnsafeMutablePointer<GtkWidget> { cgtk_widget(self) }
    @inline(__always) public var opaque: OpaquePointer { OpaquePointer(self) }
}

extension UnsafeMutablePointer {
    /// Any GTK pointer as the wrapper's raw form.
    @inline(__always) public var raw: GPointer { UnsafeMutableRawPointer(self) }
}

extension OpaquePointer {
    @inline(__always) public var raw: GPointer { UnsafeMutableRawPointer(self) }
}

private final class Handler0 {
    let action: () -> Void
    init(_ action: @escaping () -> Void) { self.action = action }
}

private final class Handler1 {
    let action: (GPointer?) -> Void
    init(_ action: @escaping (GPointer?) -> Void) { self.action = action }
}

/// Connects `action` to a signal whose handler takes only the instance
/// (`clicked`, `activate`, `changed`, `apply`, `search-changed`). The closure
/// lives as long as the connection.
@discardableResult
public func onSignal(_ instance: GPointer, _ signal: String, _ action: @escaping () -> Void) -> UInt {
    let box = Unmanaged.passRetained(Handler0(action)).toOpaque()
    return cgtk_connect0(instance, signal, { _, data in
        Unmanaged<Handler0>.fromOpaque(data!).takeUnretainedValue().action()
    }, box, { data, _ in
        if let data { Unmanaged<Handler0>.fromOpaque(data).release() }
    })
}

/// Connects `action` to a signal with one argument after the instance
/// (`notify::…` gets the GParamSpec, `response` the response id, a list
/// item factory's `setup`/`bind` the list item).
@discardableResult
public func onSignal(_ instance: GPointer, _ signal: String, _ action: @escaping (GPointer?) -> Void) -> UInt {
    let box = Unmanaged.passRetained(Handler1(action)).toOpaque()
    return cgtk_connect1(instance, signal, { _, argument, data in
        Unmanaged<Handler1>.fromOpaque(data!).takeUnretainedValue().action(argument)
    }, box, { data, _ in
        if let data { Unmanaged<Handler1>.fromOpaque(data).release() }
    })
}

/// Runs `body` while the handler `id` of `instance` is blocked: the app sets
/// a switch to what a service said without sending it back.
public func withSignalBlocked(_ instance: GPointer, _ id: UInt, _ body: () -> Void) {
    g_signal_handler_block(instance, gulong(id))
    body()
    g_signal_handler_unblock(instance, gulong(id))
}

/// Runs `action` each time the frame clock of `widget` has painted a frame
/// (GdkFrameClock `after-paint`). The widget must be realized: without a
/// frame clock nothing is connected and the answer is false.
@discardableResult
public func onFramePainted(_ widget: GPointer, _ action: @escaping () -> Void) -> Bool {
    guard let clock = gtk_widget_get_frame_clock(widget.as()) else { return false }
    onSignal(UnsafeMutableRawPointer(clock), "after-paint", action)
    return true
}
