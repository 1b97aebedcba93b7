// SPDX-License-Identifier: Apache-2.0
import CDBus
#if canImport(Glibc)
import Glibc
#endif
import TypedValues

/// One D-Bus message; owns a libdbus reference and drops it in `deinit`.
///
/// ```swift
/// let call = Message.methodCall(destination: "org.example.UserActivity",
///                               path: "/org/example/UserActivity",
///                               interface: "org.example.UserActivity", member: "CreateActivity")
/// try call.append([.string("com.example.Editor.edit"), .stringVariantDictionary([])])
/// ```
public final class Message: @unchecked Sendable {
    public enum Kind: Sendable, Equatable {
        case methodCall, methodReturn, error, signal, invalid
    }

    let pointer: OpaquePointer

    /// Takes over a reference the caller owns.
    init(takingOwnershipOf pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Adds a reference of its own.
    init(retaining pointer: OpaquePointer) {
        self.pointer = dbus_message_ref(pointer)
    }

    deinit { dbus_message_unref(pointer) }

    // MARK: Constructors

    public static func methodCall(destination: String?, path: String, interface: String?, member: String) -> Message {
        Message(takingOwnershipOf: dbus_message_new_method_call(destination, path, interface, member))
    }

    public static func signal(path: String, interface: String, member: String) -> Message {
        Message(takingOwnershipOf: dbus_message_new_signal(path, interface, member))
    }

    /// A method return for `call`, optionally with arguments.
    public static func methodReturn(to call: Message, _ values: [TypedValue] = []) throws(DBusFailure) -> Message {
        let reply = Message(takingOwnershipOf: dbus_message_new_method_return(call.pointer))
        try reply.append(values)
        return reply
    }

    /// A method call with its arguments.
    public static func methodCall(destination: String?, path: String, interface: String?, member: String,
                                  arguments: [TypedValue]) throws(DBusFailure) -> Message {
        let message = methodCall(destination: destination, path: path, interface: interface, member: member)
        try message.append(arguments)
        return message
    }

    /// A signal with its arguments.
    public static func signal(path: String, interface: String, member: String,
                              arguments: [TypedValue]) throws(DBusFailure) -> Message {
        let message = signal(path: path, interface: interface, member: member)
        try message.append(arguments)
        return message
    }

    /// A copy of this message (sent or not) addressed to `destination`:
    /// one signal sent as unicast copies to several connections is built once.
    public func copy(addressedTo destination: String) -> Message? {
        guard let raw = dbus_message_copy(pointer) else { return nil }
        let copy = Message(takingOwnershipOf: raw)
        guard dbus_message_set_destination(raw, destination) != 0 else { return nil }
        return copy
    }

    /// An error reply for `call`.
    /// A name libdbus would abort on (one from another device, say) becomes
    /// `org.freedesktop.DBus.Error.Failed`, the name kept in the text.
    public static func error(to call: Message, name: String, message: String) -> Message {
        guard DBusValueCheck.isValidErrorName(name) else {
            let text = "\(name.prefix(255).map { $0.isASCII && !$0.isWhitespace ? String($0) : "?" }.joined()): \(message)"
            return Message(takingOwnershipOf: dbus_message_new_error(call.pointer, DBusFailure.failed, text))
        }
        return Message(takingOwnershipOf: dbus_message_new_error(call.pointer, name, message))
    }

    // MARK: Header fields

    public var kind: Kind {
        switch dbus_message_get_type(pointer) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL: return .methodCall
        case DBUS_MESSAGE_TYPE_METHOD_RETURN: return .methodReturn
        case DBUS_MESSAGE_TYPE_ERROR: return .error
        case DBUS_MESSAGE_TYPE_SIGNAL: return .signal
        default: return .invalid
        }
    }

    public var path: String? { dbus_message_get_path(pointer).map { String(cString: $0) } }
    public var interface: String? { dbus_message_get_interface(pointer).map { String(cString: $0) } }
    public var member: String? { dbus_message_get_member(pointer).map { String(cString: $0) } }
    public var errorName: String? { dbus_message_get_error_name(pointer).map { String(cString: $0) } }
    public var sender: String? { dbus_message_get_sender(pointer).map { String(cString: $0) } }
    public var destination: String? { dbus_message_get_destination(pointer).map { String(cString: $0) } }
    public var signature: String { dbus_message_get_signature(pointer).map { String(cString: $0) } ?? "" }
    public var serial: UInt32 { dbus_message_get_serial(pointer) }
    public var replySerial: UInt32 { dbus_message_get_reply_serial(pointer) }

    /// Whether the message carries Unix file descriptors (its values then hold duplicates to close).
    public var carriesFileDescriptors: Bool { dbus_message_contains_unix_fds(pointer) != 0 }

    public var expectsReply: Bool {
        get { dbus_message_get_no_reply(pointer) == 0 }
        set { dbus_message_set_no_reply(pointer, newValue ? 0 : 1) }
    }

    public var allowsAutoStart: Bool {
        get { dbus_message_get_auto_start(pointer) != 0 }
        set { dbus_message_set_auto_start(pointer, newValue ? 1 : 0) }
    }

    // MARK: Body

    /// The text of an error reply: its first argument when that is a string,
    /// read in place and cut to `maximumErrorTextBytes`. Nothing else in
    /// the body is decoded, so the file descriptors and the bulk an error
    /// reply may carry are never duplicated or copied (libdbus closes the
    /// message's own descriptors when the message is freed).
    public var errorText: String {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0,
              dbus_message_iter_get_arg_type(&iterator) == CDBUS_TYPE_STRING else { return "" }
        var raw: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iterator, &raw)
        guard let raw else { return "" }
        let length = strnlen(raw, Message.maximumErrorTextBytes + 1)
        let bytes = UnsafeRawBufferPointer(start: raw, count: min(length, Message.maximumErrorTextBytes))
        return String(decoding: bytes, as: UTF8.self) + (length > Message.maximumErrorTextBytes ? "…" : "")
    }

    /// How much of an error reply's text is kept (bytes of UTF-8).
    public static let maximumErrorTextBytes = 4096

    /// Every argument of the body with each Unix file descriptor in it, at
    /// any depth, closed (and given as -1): for code that takes no descriptor
    /// from this message. libdbus hands out a `dup()` of each one it reads.
    public func argumentsClosingFileDescriptors() throws(DBusFailure) -> [TypedValue] {
        let values = try arguments()
        guard carriesFileDescriptors else { return values }
        TypedValue.closeFileDescriptors(in: values)
        return values.map { $0.replacingFileDescriptors() }
    }

    /// Decodes every argument of the body, with libdbus's iterators.
    public func arguments() throws(DBusFailure) -> [TypedValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0 else { return [] }
        return try MessageReader.readAll(&iterator)
    }

    /// Appends arguments to the body.
    public func append(_ values: [TypedValue]) throws(DBusFailure) {
        guard !values.isEmpty else { return }
        var iterator = DBusMessageIter()
        for value in values { try DBusValueCheck.check(value) }
        dbus_message_iter_init_append(pointer, &iterator)
        for value in values { try MessageWriter.write(value, to: &iterator) }
    }

    /// The message as it would go on the wire (header and body; serial 0 until sent).
    public func marshalled() throws(DBusFailure) -> [UInt8] {
        var bytes: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        try dbusRequireMemory(dbus_message_marshal(pointer, &bytes, &length), "dbus_message_marshal")
        defer { dbus_free(bytes) }
        guard let bytes else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: Int(length)))
    }

    /// The number of body bytes libdbus marshalled (from the fixed header).
    public func marshalledBodyLength() throws(DBusFailure) -> Int {
        var bytes: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        try dbusRequireMemory(dbus_message_marshal(pointer, &bytes, &length), "dbus_message_marshal")
        defer { dbus_free(bytes) }
        guard let bytes, length >= 8 else { return 0 }
        let raw = UnsafeRawPointer(bytes)
        let littleEndian = raw.load(as: UInt8.self) == UInt8(ascii: "l")
        let stored = raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
        return Int(littleEndian ? UInt32(littleEndian: stored) : UInt32(bigEndian: stored))
    }
}
