// SPDX-License-Identifier: Apache-2.0
import CDBus
import TypedValues

/// Reads `TypedValue`s out of a `DBusMessageIter`.
enum MessageReader {
    static func readAll(_ iterator: inout DBusMessageIter) throws(DBusFailure) -> [TypedValue] {
        var values: [TypedValue] = []
        while dbus_message_iter_get_arg_type(&iterator) != CDBUS_TYPE_INVALID {
            values.append(try read(&iterator))
            dbus_message_iter_next(&iterator)
        }
        return values
    }

    private static func basic<T: BitwiseCopyable>(_ iterator: inout DBusMessageIter, _ initial: T) -> T {
        var value = initial
        dbus_message_iter_get_basic(&iterator, &value)
        return value
    }

    private static func string(_ iterator: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iterator, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    /// The signature of the value under the iterator, e.g. `a{sv}`.
    private static func signature(_ iterator: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    /// The signature of a value whose type code is `code`, when that code is
    /// the whole signature (a basic type or a variant); `nil` for containers.
    ///
    /// Why: `dbus_message_iter_get_signature` allocates and copies a string,
    /// and nearly every array a client sends (`as`, `a{sv}`) has elements or
    /// values of such types.
    private static func singleCodeSignature(_ code: Int32) -> String? {
        switch code {
        case CDBUS_TYPE_ARRAY, CDBUS_TYPE_STRUCT, CDBUS_TYPE_DICT_ENTRY, CDBUS_TYPE_INVALID: return nil
        default: return String(UnicodeScalar(UInt8(truncatingIfNeeded: code)))
        }
    }

    /// The key and value types of the dictionary under `iterator`, read from
    /// its first entry's type codes when the value's code is its whole type,
    /// else from the array's signature (`a{kv}`: one basic code, then the rest).
    private static func dictionaryTypes(_ iterator: inout DBusMessageIter,
                                        _ elements: DBusMessageIter) -> (key: String, value: String) {
        var elements = elements
        if dbus_message_iter_get_arg_type(&elements) == CDBUS_TYPE_DICT_ENTRY {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&elements, &entry)
            let keyCode = dbus_message_iter_get_arg_type(&entry)
            dbus_message_iter_next(&entry)
            if let key = singleCodeSignature(keyCode), let value = singleCodeSignature(dbus_message_iter_get_arg_type(&entry)) {
                return (key, value)
            }
        }
        let body = signature(&iterator).dropFirst(2).dropLast()
        return (String(body.prefix(1)), String(body.dropFirst()))
    }

    static func read(_ iterator: inout DBusMessageIter) throws(DBusFailure) -> TypedValue {
        let type = dbus_message_iter_get_arg_type(&iterator)
        switch type {
        case CDBUS_TYPE_BYTE: return .byte(basic(&iterator, UInt8(0)))
        case CDBUS_TYPE_BOOLEAN: return .boolean(basic(&iterator, dbus_bool_t(0)) != 0)
        case CDBUS_TYPE_INT16: return .int16(basic(&iterator, Int16(0)))
        case CDBUS_TYPE_UINT16: return .uint16(basic(&iterator, UInt16(0)))
        case CDBUS_TYPE_INT32: return .int32(basic(&iterator, Int32(0)))
        case CDBUS_TYPE_UINT32: return .uint32(basic(&iterator, UInt32(0)))
        case CDBUS_TYPE_INT64: return .int64(basic(&iterator, Int64(0)))
        case CDBUS_TYPE_UINT64: return .uint64(basic(&iterator, UInt64(0)))
        case CDBUS_TYPE_DOUBLE: return .double(basic(&iterator, Double(0)))
        case CDBUS_TYPE_UNIX_FD: return .unixFD(basic(&iterator, Int32(-1)))
        case CDBUS_TYPE_STRING: return .string(string(&iterator))
        case CDBUS_TYPE_OBJECT_PATH: return .objectPath(string(&iterator))
        case CDBUS_TYPE_SIGNATURE: return .signature(string(&iterator))
        case CDBUS_TYPE_VARIANT:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return .variant(try read(&inner))
        case CDBUS_TYPE_STRUCT:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return .structure(try readAll(&inner))
        case CDBUS_TYPE_ARRAY:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            let elementCode = dbus_message_iter_get_element_type(&iterator)
            if elementCode == CDBUS_TYPE_DICT_ENTRY {
                let (keyType, valueType) = dictionaryTypes(&iterator, inner)
                var entries: [TypedValue.DictionaryEntry] = []
                while dbus_message_iter_get_arg_type(&inner) == CDBUS_TYPE_DICT_ENTRY {
                    var entry = DBusMessageIter()
                    dbus_message_iter_recurse(&inner, &entry)
                    let key = try read(&entry)
                    dbus_message_iter_next(&entry)
                    let value = try read(&entry)
                    entries.append(.init(key: key, value: value))
                    dbus_message_iter_next(&inner)
                }
                return .dictionary(keyType: keyType, valueType: valueType, entries)
            }
            if elementCode == CDBUS_TYPE_BYTE {
                // One byte of memory per byte of data, not an enum per byte.
                var pointer: UnsafeMutableRawPointer?
                var count: Int32 = 0
                dbus_message_iter_get_fixed_array(&inner, &pointer, &count)
                guard let pointer, count > 0 else { return .bytes([]) }
                return .bytes([UInt8](UnsafeRawBufferPointer(start: pointer, count: Int(count))))
            }
            var elements: [TypedValue] = []
            while dbus_message_iter_get_arg_type(&inner) != CDBUS_TYPE_INVALID {
                elements.append(try read(&inner))
                dbus_message_iter_next(&inner)
            }
            return .array(elementType: singleCodeSignature(elementCode) ?? String(signature(&iterator).dropFirst()), elements)
        default:
            throw DBusFailure(name: "org.freedesktop.DBus.Error.InvalidArgs",
                              message: "unsupported D-Bus type code \(type)", function: "dbus_message_iter_get_arg_type")
        }
    }
}

/// Writes `TypedValue`s into a `DBusMessageIter`.
enum MessageWriter {
    private static func basic<T: BitwiseCopyable>(_ iterator: inout DBusMessageIter, _ type: Int32, _ value: T) throws(DBusFailure) {
        var copy = value
        try dbusRequireMemory(dbus_message_iter_append_basic(&iterator, type, &copy), "dbus_message_iter_append_basic")
    }

    private static func string(_ iterator: inout DBusMessageIter, _ type: Int32, _ value: String) throws(DBusFailure) {
        let ok = value.withCString { pointer -> dbus_bool_t in
            var cString: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iterator, type, &cString)
        }
        if ok == 0 {
            throw DBusFailure(name: "org.freedesktop.DBus.Error.InvalidArgs",
                              message: "libdbus refused a string, object path or signature value",
                              function: "dbus_message_iter_append_basic")
        }
    }

    private static func container(_ iterator: inout DBusMessageIter, _ type: Int32, _ signature: String?,
                                  _ body: (inout DBusMessageIter) throws(DBusFailure) -> Void) throws(DBusFailure) {
        var inner = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iterator, type, $0, &inner) }
        } else {
            opened = dbus_message_iter_open_container(&iterator, type, nil, &inner)
        }
        try dbusRequireMemory(opened, "dbus_message_iter_open_container")
        do {
            try body(&inner)
        } catch {
            dbus_message_iter_abandon_container(&iterator, &inner)
            throw error
        }
        try dbusRequireMemory(dbus_message_iter_close_container(&iterator, &inner), "dbus_message_iter_close_container")
    }

    static func write(_ value: TypedValue, to iterator: inout DBusMessageIter) throws(DBusFailure) {
        switch value {
        case .byte(let v): try basic(&iterator, CDBUS_TYPE_BYTE, v)
        case .boolean(let v): try basic(&iterator, CDBUS_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): try basic(&iterator, CDBUS_TYPE_INT16, v)
        case .uint16(let v): try basic(&iterator, CDBUS_TYPE_UINT16, v)
        case .int32(let v): try basic(&iterator, CDBUS_TYPE_INT32, v)
        case .uint32(let v): try basic(&iterator, CDBUS_TYPE_UINT32, v)
        case .int64(let v): try basic(&iterator, CDBUS_TYPE_INT64, v)
        case .uint64(let v): try basic(&iterator, CDBUS_TYPE_UINT64, v)
        case .double(let v): try basic(&iterator, CDBUS_TYPE_DOUBLE, v)
        case .unixFD(let v): try basic(&iterator, CDBUS_TYPE_UNIX_FD, v)
        case .string(let v): try string(&iterator, CDBUS_TYPE_STRING, v)
        case .objectPath(let v): try string(&iterator, CDBUS_TYPE_OBJECT_PATH, v)
        case .signature(let v): try string(&iterator, CDBUS_TYPE_SIGNATURE, v)
        case .variant(let inner):
            try container(&iterator, CDBUS_TYPE_VARIANT, inner.signature) { (sub) throws(DBusFailure) in
                try write(inner, to: &sub)
            }
        case .structure(let fields):
            try container(&iterator, CDBUS_TYPE_STRUCT, nil) { (sub) throws(DBusFailure) in
                for field in fields { try write(field, to: &sub) }
            }
        case .array(let elementType, let elements):
            try container(&iterator, CDBUS_TYPE_ARRAY, elementType) { (sub) throws(DBusFailure) in
                for element in elements { try write(element, to: &sub) }
            }
        case .bytes(let content):
            try container(&iterator, CDBUS_TYPE_ARRAY, "y") { (sub) throws(DBusFailure) in
                let appended = content.withUnsafeBufferPointer { buffer -> dbus_bool_t in
                    var start = buffer.baseAddress
                    return dbus_message_iter_append_fixed_array(&sub, CDBUS_TYPE_BYTE, &start, Int32(buffer.count))
                }
                try dbusRequireMemory(appended, "dbus_message_iter_append_fixed_array")
            }
        case .dictionary(let keyType, let valueType, let entries):
            try container(&iterator, CDBUS_TYPE_ARRAY, "{" + keyType + valueType + "}") { (sub) throws(DBusFailure) in
                for entry in entries {
                    try container(&sub, CDBUS_TYPE_DICT_ENTRY, nil) { (pair) throws(DBusFailure) in
                        try write(entry.key, to: &pair)
                        try write(entry.value, to: &pair)
                    }
                }
            }
        }
    }
}
