// SPDX-License-Identifier: Apache-2.0
import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// Sizes read from a received message without decoding it into Swift
/// values: libdbus's iterators walk the bytes in place, an array of a fixed
/// type (`ay`, `ai`, …) is measured in one step, and every walk stops as soon
/// as it has seen more than the caller's limit. They let a service refuse a
/// call whose arguments could never be valid before building values out of
/// it (which takes memory and time in proportion to the message).
///
/// Sizes are a lower bound of the marshalled size (alignment padding is not
/// counted), so comparing them against a limit on the marshalled size never
/// refuses a value that fits.
extension Message {
    /// The size of top-level argument `index`, measured up to a little past `limit`.
    public func marshalledSize(ofArgument index: Int, upTo limit: Int) -> Int? {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0 else { return nil }
        for _ in 0..<index {
            guard dbus_message_iter_next(&iterator) != 0 else { return nil }
        }
        return Self.measure(&iterator, limit: limit)
    }

    /// The marshalled byte length of array argument `index`, padding
    /// included, read from the message header in one step (no walk); nil
    /// when that argument is not an array.
    ///
    /// Why: it bounds every size ``marshalledSizes(ofEntriesIn:upTo:)``
    /// would report for that argument, so a small one needs no walk at all.
    public func marshalledArrayLength(ofArgument index: Int) -> Int? {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0 else { return nil }
        for _ in 0..<index {
            guard dbus_message_iter_next(&iterator) != 0 else { return nil }
        }
        guard dbus_message_iter_get_arg_type(&iterator) == CDBUS_TYPE_ARRAY else { return nil }
        // libdbus reads the length from inside the array (it asserts that only in debug builds).
        var elements = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &elements)
        return Int(cdbus_message_iter_array_byte_length(&elements))
    }

    /// The size of the whole body (every argument), measured up to a little past `limit`.
    public func marshalledBodySize(upTo limit: Int) -> Int {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0 else { return 0 }
        return Self.measureSequence(&iterator, limit: limit)
    }

    /// For a top-level `a{sv}` argument `index`: each entry's key and the size
    /// of its value, measured up to a little past `limit`. The walk stops
    /// once the entries measured so far exceed `limit` in all.
    public func marshalledSizes(ofEntriesIn index: Int, upTo limit: Int) -> [(key: String, size: Int)] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0 else { return [] }
        for _ in 0..<index {
            guard dbus_message_iter_next(&iterator) != 0 else { return [] }
        }
        guard dbus_message_iter_get_arg_type(&iterator) == CDBUS_TYPE_ARRAY,
              dbus_message_iter_get_element_type(&iterator) == CDBUS_TYPE_DICT_ENTRY else { return [] }
        var entries = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &entries)
        var sizes: [(key: String, size: Int)] = []
        var total = 0
        while dbus_message_iter_get_arg_type(&entries) == CDBUS_TYPE_DICT_ENTRY, total <= limit {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&entries, &entry)
            if dbus_message_iter_get_arg_type(&entry) == CDBUS_TYPE_STRING {
                var raw: UnsafePointer<CChar>?
                dbus_message_iter_get_basic(&entry, &raw)
                if let raw, dbus_message_iter_next(&entry) != 0 {
                    let size = Self.measure(&entry, limit: limit - total)
                    sizes.append((String(cString: raw), size))
                    total += size
                }
            }
            guard dbus_message_iter_next(&entries) != 0 else { break }
        }
        return sizes
    }

    /// Bytes of one fixed-size value of `type`; nil for any other type.
    private static func fixedSize(_ type: Int32) -> Int? {
        switch type {
        case CDBUS_TYPE_BYTE: return 1
        case CDBUS_TYPE_INT16, CDBUS_TYPE_UINT16: return 2
        case CDBUS_TYPE_BOOLEAN, CDBUS_TYPE_INT32, CDBUS_TYPE_UINT32, CDBUS_TYPE_UNIX_FD: return 4
        case CDBUS_TYPE_INT64, CDBUS_TYPE_UINT64, CDBUS_TYPE_DOUBLE: return 8
        default: return nil
        }
    }

    /// The size of the value under `iterator`; once past `limit`, the rest is not walked.
    private static func measure(_ iterator: inout DBusMessageIter, limit: Int) -> Int {
        let type = dbus_message_iter_get_arg_type(&iterator)
        if let size = fixedSize(type) { return size }
        switch type {
        case CDBUS_TYPE_STRING, CDBUS_TYPE_OBJECT_PATH, CDBUS_TYPE_SIGNATURE:
            var raw: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&iterator, &raw)
            return 5 + (raw.map { strlen($0) } ?? 0)
        case CDBUS_TYPE_VARIANT:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return 3 + measure(&inner, limit: limit)
        case CDBUS_TYPE_ARRAY:
            let elementType = dbus_message_iter_get_element_type(&iterator)
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            // A fixed-type array is measured in place in one step (libdbus gives no fixed-array access to fds).
            if let size = fixedSize(elementType), elementType != CDBUS_TYPE_UNIX_FD {
                var elements: UnsafeMutableRawPointer?
                var count: Int32 = 0
                dbus_message_iter_get_fixed_array(&inner, &elements, &count)
                return 4 + Int(count) * size
            }
            return 4 + measureSequence(&inner, limit: limit)
        case CDBUS_TYPE_STRUCT, CDBUS_TYPE_DICT_ENTRY:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return measureSequence(&inner, limit: limit)
        default:
            return 0
        }
    }

    /// The values from `iterator` to the end of its container, until past `limit`.
    private static func measureSequence(_ iterator: inout DBusMessageIter, limit: Int) -> Int {
        var total = 0
        while dbus_message_iter_get_arg_type(&iterator) != CDBUS_TYPE_INVALID, total <= limit {
            total += measure(&iterator, limit: limit - total)
            guard dbus_message_iter_next(&iterator) != 0 else { break }
        }
        return total
    }
}
