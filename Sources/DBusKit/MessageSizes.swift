// SPDX-License-Identifier: Apache-2.0
import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// Sizes read from a received message without decoding it: libdbus's
/// iterators step over a container by its marshalled length, so these cost
/// the same for a 60 MiB array as for an empty one. They let a service refuse
/// a call whose arguments could never be valid before building Swift values
/// out of it (which takes memory and time in proportion to the message).
extension Message {
    /// The marshalled length in bytes of the array at top-level argument
    /// `index` (the content, without its 4-byte length), looking through a
    /// variant; the length of a string argument; nil for anything else.
    public func marshalledLength(ofArgument index: Int) -> Int? {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0 else { return nil }
        for _ in 0..<index {
            guard dbus_message_iter_next(&iterator) != 0 else { return nil }
        }
        return Self.marshalledLength(&iterator)
    }

    /// For a top-level `a{sv}` argument `index`: the marshalled length of each
    /// entry's value (as ``marshalledLength(ofArgument:)`` measures it), by key.
    /// Keys are read in place; values are stepped over, never decoded.
    public func marshalledLengths(ofEntriesIn index: Int) -> [(key: String, length: Int)] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0 else { return [] }
        for _ in 0..<index {
            guard dbus_message_iter_next(&iterator) != 0 else { return [] }
        }
        guard dbus_message_iter_get_arg_type(&iterator) == CDBUS_TYPE_ARRAY,
              dbus_message_iter_get_element_type(&iterator) == CDBUS_TYPE_DICT_ENTRY else { return [] }
        var entries = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &entries)
        var lengths: [(key: String, length: Int)] = []
        while dbus_message_iter_get_arg_type(&entries) == CDBUS_TYPE_DICT_ENTRY {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&entries, &entry)
            if dbus_message_iter_get_arg_type(&entry) == CDBUS_TYPE_STRING {
                var raw: UnsafePointer<CChar>?
                dbus_message_iter_get_basic(&entry, &raw)
                if let raw, dbus_message_iter_next(&entry) != 0 {
                    lengths.append((String(cString: raw), Self.marshalledLength(&entry) ?? 0))
                }
            }
            guard dbus_message_iter_next(&entries) != 0 else { break }
        }
        return lengths
    }

    private static func marshalledLength(_ iterator: inout DBusMessageIter) -> Int? {
        switch dbus_message_iter_get_arg_type(&iterator) {
        case CDBUS_TYPE_ARRAY:
            return Int(cdbus_message_iter_array_byte_length(&iterator))
        case CDBUS_TYPE_STRING, CDBUS_TYPE_OBJECT_PATH, CDBUS_TYPE_SIGNATURE:
            var raw: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&iterator, &raw)
            return raw.map { strlen($0) }
        case CDBUS_TYPE_VARIANT:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return marshalledLength(&inner)
        default:
            return nil
        }
    }
}
