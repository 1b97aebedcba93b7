// SPDX-License-Identifier: Apache-2.0
import CDBus
import TypedValues

/// What libdbus would refuse to marshal, checked before it is asked to.
///
/// libdbus treats an invalid object path, signature, error or member name,
/// or a value that does not match its container's signature, as a bug of
/// the caller: it prints a warning and aborts the process. Values that come
/// from outside (another device's frames, a file) can carry any of these, so
/// every value is checked here, at the boundary, and refused with
/// `InvalidArgs` instead.
public enum DBusValueCheck {
    public static func isValidObjectPath(_ path: String) -> Bool {
        !path.utf8.contains(0) && dbus_validate_path(path, nil) != 0
    }

    public static func isValidErrorName(_ name: String) -> Bool {
        !name.utf8.contains(0) && dbus_validate_error_name(name, nil) != 0
    }

    public static func isValidInterfaceName(_ name: String) -> Bool {
        !name.utf8.contains(0) && dbus_validate_interface(name, nil) != 0
    }

    public static func isValidMemberName(_ name: String) -> Bool {
        !name.utf8.contains(0) && dbus_validate_member(name, nil) != 0
    }

    /// A single complete type (`s`, `a{sv}`, `(ii)`), as an array's element or a variant's content.
    public static func isSingleCompleteType(_ signature: String) -> Bool {
        !signature.isEmpty && !signature.utf8.contains(0) && dbus_signature_validate_single(signature, nil) != 0
    }

    /// Throws `InvalidArgs` naming the first part of `value` libdbus would
    /// abort on. One pass over the value; element types are compared without
    /// building signatures.
    public static func check(_ value: TypedValue) throws(DBusFailure) {
        switch value {
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .unixFD, .bytes:
            return
        case .string(let text):
            guard !text.utf8.contains(0) else { throw refuse("a string with a NUL byte") }
        case .objectPath(let path):
            guard isValidObjectPath(path) else { throw refuse("object path '\(path.prefix(80))'") }
        case .signature(let text):
            guard !text.utf8.contains(0), dbus_signature_validate(text, nil) != 0 else { throw refuse("signature '\(text.prefix(80))'") }
        case .variant(let inner):
            // A value whose parts passed is one complete type by construction;
            // D-Bus still caps a signature at 255 bytes.
            try check(inner)
            guard inner.signatureLength <= 255 else { throw refuse("a variant whose type is over 255 bytes") }
        case .structure(let fields):
            guard !fields.isEmpty else { throw refuse("an empty structure") }
            for field in fields { try check(field) }
        case .array(let elementType, let elements):
            guard isSingleCompleteType(elementType) else { throw refuse("array of '\(elementType.prefix(80))'") }
            for element in elements {
                try check(element)
                guard element.hasSignature(elementType) else { throw refuse("a \(element.signature.prefix(80)) in an array of \(elementType.prefix(80))") }
            }
        case .dictionary(let keyType, let valueType, let entries):
            guard keyType.utf8.count == 1, let code = keyType.utf8.first, dbus_type_is_basic(Int32(code)) != 0,
                  isSingleCompleteType(valueType) else { throw refuse("dictionary of '\(keyType.prefix(20))' to '\(valueType.prefix(80))'") }
            for entry in entries {
                try check(entry.key)
                try check(entry.value)
                guard entry.key.hasSignature(keyType), entry.value.hasSignature(valueType) else {
                    throw refuse("an entry \(entry.key.signature.prefix(20)) → \(entry.value.signature.prefix(80)) in a dictionary of \(keyType) → \(valueType.prefix(80))")
                }
            }
        }
    }

    private static func refuse(_ what: String) -> DBusFailure {
        DBusFailure(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "not a valid D-Bus value: \(what)")
    }
}
