// SPDX-License-Identifier: Apache-2.0
import CDBus

/// A failed libdbus call or a D-Bus error reply, with the D-Bus error name.
///
/// ```swift
/// do { try connection.requestName("org.example.UserActivity") }
/// catch let failure as DBusFailure { print(failure.name, failure.message) }
/// ```
public struct DBusFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.NoReply`.
    public var name: String
    public var message: String
    /// The libdbus function that failed, when the failure is local.
    public var function: String?

    public init(name: String, message: String, function: String? = nil) {
        self.name = name
        self.message = message
        self.function = function
    }

    public var description: String {
        if let function { return "\(function): \(name): \(message)" }
        return "\(name): \(message)"
    }

    static let noMemory = "org.freedesktop.DBus.Error.NoMemory"
    static let failed = "org.freedesktop.DBus.Error.Failed"
}

/// Every libdbus call that can fail goes through here: it hands the call a
/// fresh `DBusError` and turns a set error, or a nil/false result, into a
/// ``DBusFailure`` naming `function`.
@discardableResult
func dbusCall<Result>(_ function: String, _ body: (UnsafeMutablePointer<CDBus.DBusError>) -> Result?) throws(DBusFailure) -> Result {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    let result = body(&error)
    if dbus_error_is_set(&error) != 0 {
        throw DBusFailure(
            name: error.name.map { String(cString: $0) } ?? DBusFailure.failed,
            message: error.message.map { String(cString: $0) } ?? "",
            function: function)
    }
    guard let result else {
        throw DBusFailure(name: DBusFailure.failed, message: "\(function) failed", function: function)
    }
    return result
}

/// For libdbus calls that only fail when out of memory (they return FALSE).
func dbusRequireMemory(_ ok: dbus_bool_t, _ function: String) throws(DBusFailure) {
    if ok == 0 { throw DBusFailure(name: DBusFailure.noMemory, message: "out of memory", function: function) }
}
