// SPDX-License-Identifier: Apache-2.0
import CGLib
#if canImport(Glibc)
import Glibc
#endif

/// A GLib/GIO call that failed, with GLib's message.
struct GIOFailure: Error, CustomStringConvertible {
    let function: String
    let message: String
    let code: Int32
    var domain: GQuark = 0
    var description: String { "\(function): \(message)" }
    var isCancelled: Bool { message == "Operation was cancelled" || code == Int32(G_IO_ERROR_CANCELLED.rawValue) }
    /// A non-blocking read or write found nothing to read or no room.
    var wouldBlock: Bool { domain == g_io_error_quark() && code == Int32(G_IO_ERROR_WOULD_BLOCK.rawValue) }
}

/// Every GIO call that reports a GError goes through here.
func gioCall<T>(_ function: String, _ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T?) throws(GIOFailure) -> T {
    var error: UnsafeMutablePointer<GError>?
    let result = body(&error)
    if let error {
        let failure = GIOFailure(function: function, message: String(cString: error.pointee.message), code: error.pointee.code,
                                 domain: error.pointee.domain)
        g_error_free(error)
        throw failure
    }
    guard let result else { throw GIOFailure(function: function, message: "failed", code: -1) }
    return result
}

/// Pointer casts between GObject types (C's G_IO_STREAM() and friends).
@inline(__always) func gcast<T>(_ pointer: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<T>? {
    pointer?.assumingMemoryBound(to: T.self)
}
@inline(__always) func graw<T>(_ pointer: UnsafeMutablePointer<T>?) -> UnsafeMutableRawPointer? {
    pointer.map { UnsafeMutableRawPointer($0) }
}

/// Owns one GObject reference.
final class GObjectRef {
    let raw: UnsafeMutableRawPointer
    init(taking raw: UnsafeMutableRawPointer) { self.raw = raw }
    init(retaining raw: UnsafeMutableRawPointer) { self.raw = g_object_ref(raw)! }
    deinit { g_object_unref(raw) }
    func `as`<T>(_: T.Type) -> UnsafeMutablePointer<T> { raw.assumingMemoryBound(to: T.self) }
}

/// This device's certificate and key as GIO uses them.
func tlsCertificate(pem: String) throws(GIOFailure) -> GObjectRef {
    let raw = try gioCall("g_tls_certificate_new_from_pem") { g_tls_certificate_new_from_pem(pem, -1, $0) }
    return GObjectRef(taking: UnsafeMutableRawPointer(raw))
}

/// The DER of a GTlsCertificate.
func certificateDER(_ certificate: UnsafeMutableRawPointer) -> [UInt8] {
    guard let array = cglib_tls_certificate_der(gcast(certificate)) else { return [] }
    defer { g_byte_array_unref(array) }
    return Array(UnsafeBufferPointer(start: array.pointee.data, count: Int(array.pointee.len)))
}

/// A closure run when a GAsyncResult is ready; retained until then.
final class AsyncCompletion {
    let body: (UnsafeMutablePointer<GObject>?, OpaquePointer?) -> Void
    init(_ body: @escaping (UnsafeMutablePointer<GObject>?, OpaquePointer?) -> Void) { self.body = body }

    /// The C callback and its data: the completion runs once, then is released.
    static func callback(_ body: @escaping (UnsafeMutablePointer<GObject>?, OpaquePointer?) -> Void)
        -> (GAsyncReadyCallback, gpointer) {
        let data = Unmanaged.passRetained(AsyncCompletion(body)).toOpaque()
        return ({ source, result, data in
            let completion = Unmanaged<AsyncCompletion>.fromOpaque(data!).takeRetainedValue()
            completion.body(source, result)
        }, data)
    }
}

/// A closure behind a GObject signal; disconnected and released with its owner.
final class SignalHandler {
    let body: ([UnsafeMutableRawPointer?]) -> Int32
    var instance: UnsafeMutableRawPointer?
    var id: gulong = 0
    init(_ body: @escaping ([UnsafeMutableRawPointer?]) -> Int32) { self.body = body }
    deinit {
        if let instance, id != 0 { g_signal_handler_disconnect(instance, id) }
    }
}

/// "accept-certificate" on a GTlsConnection: (connection, peer_cert, errors) → accept.
func connectAcceptCertificate(_ connection: UnsafeMutableRawPointer, _ body: @escaping (UnsafeMutableRawPointer?) -> Bool) -> SignalHandler {
    let handler = SignalHandler { arguments in body(arguments[0]) ? CGLIB_TRUE : CGLIB_FALSE }
    let callback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UInt32, UnsafeMutableRawPointer?) -> gboolean = { _, certificate, _, data in
        Unmanaged<SignalHandler>.fromOpaque(data!).takeUnretainedValue().body([certificate])
    }
    handler.instance = connection
    handler.id = cglib_signal_connect(connection, "accept-certificate", unsafeBitCast(callback, to: GCallback.self),
                                      Unmanaged.passUnretained(handler).toOpaque(), nil)
    return handler
}

extension Error {
    /// GLib's message for a GIOFailure, the description otherwise.
    var gioMessage: String { (self as? GIOFailure)?.message ?? "\(self)" }
    var isCancelledIO: Bool { (self as? GIOFailure)?.isCancelled ?? false }
}
