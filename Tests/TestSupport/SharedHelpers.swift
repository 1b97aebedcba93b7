// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TypedValues

/// The repository root: the directory holding Package.swift above the
/// calling file (`#filePath` is the caller's), else the current directory.
public func repositoryRoot(filePath: String = #filePath) -> String {
    var dir = (filePath as NSString).deletingLastPathComponent
    while dir != "/" && !dir.isEmpty {
        if FileManager.default.fileExists(atPath: "\(dir)/Package.swift") { return dir }
        dir = (dir as NSString).deletingLastPathComponent
    }
    return FileManager.default.currentDirectoryPath
}

/// The wall clock in Unix microseconds, the daemon's unit for dates.
public func nowMicroseconds() -> Int64 {
    Int64(Date().timeIntervalSince1970 * 1_000_000)
}

/// Hands a value that is not `Sendable` to another thread (a closure of
/// `Thread`, a callback's recorder), where it is the only user from then on.
public struct UncheckedSendable<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}

/// The first line where two texts differ, for readable failures.
public func firstDifference(_ expected: String, _ actual: String) -> String {
    let a = expected.split(separator: "\n", omittingEmptySubsequences: false)
    let b = actual.split(separator: "\n", omittingEmptySubsequences: false)
    for i in 0..<max(a.count, b.count) {
        let x = i < a.count ? String(a[i]) : "<end>"
        let y = i < b.count ? String(b[i]) : "<end>"
        if x != y { return "line \(i + 1):\n  expected: \(x)\n  actual:   \(y)" }
    }
    return "no difference"
}

/// The D-Bus error name `body` failed with; nil when it succeeded; the
/// description of any other error.
public func dbusErrorName<T>(_ body: () throws -> T) -> String? {
    do {
        _ = try body()
        return nil
    } catch let failure as DBusFailure {
        return failure.name
    } catch {
        return "not a D-Bus error: \(error)"
    }
}

/// An in-process libdbus connection acting as an app, with blocking calls:
/// it keeps the activities it creates alive until it is closed or released.
/// Suites add their own conveniences with `extension BusClient`.
public final class BusClient: @unchecked Sendable {
    public let connection: Connection

    public init(address: String) throws {
        connection = try Connection.bus(address: address)
    }

    deinit { connection.close() }

    public var uniqueName: String { connection.uniqueName }

    public func close() { connection.close() }

    /// Calls a method of the daemon and returns the reply's arguments; an
    /// error reply is thrown as its `DBusFailure`.
    @discardableResult
    public func call(_ path: String = UA.managerPath, _ interface: String? = UA.managerInterface, _ member: String,
                     _ arguments: [TypedValue] = [], timeoutMilliseconds: Int32 = 25_000,
                     destination: String = UA.busName) throws -> [TypedValue] {
        let message = Message.methodCall(destination: destination, path: path, interface: interface, member: member)
        try message.append(arguments)
        return try connection.call(message, timeoutMilliseconds: timeoutMilliseconds).arguments()
    }

    /// ``call(_:_:_:_:timeoutMilliseconds:destination:)`` as a value, for
    /// tests that tabulate or compare outcomes: an error reply, or an
    /// argument libdbus refuses to send, is a `.failure` carrying its name.
    public func attempt(_ path: String, _ interface: String?, _ member: String, _ arguments: [TypedValue] = [],
                        timeoutMilliseconds: Int32 = 25_000,
                        destination: String = UA.busName) -> Result<[TypedValue], DBusFailure> {
        Result { () throws(DBusFailure) -> [TypedValue] in
            let message = Message.methodCall(destination: destination, path: path, interface: interface, member: member)
            try message.append(arguments)
            return try connection.call(message, timeoutMilliseconds: timeoutMilliseconds).arguments()
        }
    }

    /// `org.freedesktop.DBus.Properties.Get`, the variant's content.
    public func property(_ path: String, _ name: String, interface: String = UA.activityInterface) throws -> TypedValue {
        let reply = try call(path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)])
        return reply.first?.unwrappedVariant ?? .string("")
    }
}
