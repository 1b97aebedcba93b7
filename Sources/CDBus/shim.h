// SPDX-License-Identifier: Apache-2.0
// What Swift cannot take from <dbus/dbus.h> directly.
#pragma once
#include <dbus/dbus.h>

// DBUS_TYPE_* are macros of character literals, which Swift does not import.
static const int CDBUS_TYPE_INVALID = DBUS_TYPE_INVALID;
static const int CDBUS_TYPE_BYTE = DBUS_TYPE_BYTE;
static const int CDBUS_TYPE_BOOLEAN = DBUS_TYPE_BOOLEAN;
static const int CDBUS_TYPE_INT16 = DBUS_TYPE_INT16;
static const int CDBUS_TYPE_UINT16 = DBUS_TYPE_UINT16;
static const int CDBUS_TYPE_INT32 = DBUS_TYPE_INT32;
static const int CDBUS_TYPE_UINT32 = DBUS_TYPE_UINT32;
static const int CDBUS_TYPE_INT64 = DBUS_TYPE_INT64;
static const int CDBUS_TYPE_UINT64 = DBUS_TYPE_UINT64;
static const int CDBUS_TYPE_DOUBLE = DBUS_TYPE_DOUBLE;
static const int CDBUS_TYPE_STRING = DBUS_TYPE_STRING;
static const int CDBUS_TYPE_OBJECT_PATH = DBUS_TYPE_OBJECT_PATH;
static const int CDBUS_TYPE_SIGNATURE = DBUS_TYPE_SIGNATURE;
static const int CDBUS_TYPE_UNIX_FD = DBUS_TYPE_UNIX_FD;
static const int CDBUS_TYPE_ARRAY = DBUS_TYPE_ARRAY;
static const int CDBUS_TYPE_VARIANT = DBUS_TYPE_VARIANT;
static const int CDBUS_TYPE_STRUCT = DBUS_TYPE_STRUCT;
static const int CDBUS_TYPE_DICT_ENTRY = DBUS_TYPE_DICT_ENTRY;

// TRUE/FALSE are macros too.
static const dbus_bool_t CDBUS_TRUE = TRUE;
static const dbus_bool_t CDBUS_FALSE = FALSE;

// The introspection DOCTYPE is a string-concatenation macro.
static const char *const CDBUS_INTROSPECT_DOCTYPE = DBUS_INTROSPECT_1_0_XML_DOCTYPE_DECL_NODE;

// The marshalled byte length of an array, read from the wire in O(1); the
// iterator must be the one dbus_message_iter_recurse made for the array. libdbus marks it deprecated only because it counts bytes, not
// elements; bytes are what a size limit needs.
static inline int cdbus_message_iter_array_byte_length(DBusMessageIter *iter) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return dbus_message_iter_get_array_len(iter);
#pragma GCC diagnostic pop
}
