/* SPDX-License-Identifier: Apache-2.0
 *
 * A minimal libdbus service for bench/report.sh: the same (s, a{sv}) -> o call
 * as useractivityd's CreateActivity, done the plainest way libdbus allows, so
 * the report can tell what our daemon costs on top of the library itself.
 *
 * CreateActivity(s activity_type, a{sv} properties) -> (o activity)
 *   checks the type is a reverse-DNS name, walks the whole dictionary (every
 *   key must be a known activity key with the right type; nested values are
 *   visited too), keeps the call (and so the dictionary) in memory under a
 *   counter, registers an object for it and replies with its path.
 * Activity.Invalidate() on that path unregisters the object and frees it.
 * org.freedesktop.DBus.Peer.Ping is answered by libdbus itself.
 *
 * With --object-manager-signals it also emits what the contract requires of
 * useractivityd for the same calls, the plain C way (right after each reply):
 * ObjectManager.InterfacesAdded with the call's properties after a create,
 * InterfacesRemoved after an Invalidate. The report runs it as a third service
 * to show what those signals cost a C service; the targets stay against the
 * plain one.
 *
 * With --glib the connection is driven by a GLib main loop (its watches and
 * timeouts as GLib sources, dispatched until libdbus has nothing left), as
 * useractivityd's is: the report's baseline for what our daemon adds on top
 * of libdbus and GLib. Without it, the plainest loop libdbus offers.
 *
 * Usage: libdbus-peer [--object-manager-signals] [--glib] [BUS_NAME]
 *        (default bus name org.example.BenchPeer.LibDBus)
 * Connects to the session bus (DBUS_SESSION_BUS_ADDRESS), as a D-Bus
 * activated service does, and serves until the bus goes away.
 */
#include <dbus/dbus.h>
#include <glib-unix.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activity-keys.h"

#define MANAGER_PATH "/org/example/BenchPeer"
#define MANAGER_INTERFACE "org.example.BenchPeer"
#define ACTIVITY_INTERFACE "org.example.BenchPeer.Activity"
#define OBJECT_MANAGER_INTERFACE "org.freedesktop.DBus.ObjectManager"
#define ACTIVITY_PATH_PREFIX "/org/example/BenchPeer/activity/"
#define ERROR_INVALID_ARGUMENT "org.example.BenchPeer.Error.InvalidArgument"
#define MAX_TEXT_BYTES 1024
#define MAX_DEPTH 32


struct activity {
    uint64_t id;
    DBusMessage *call; /* holds the marshalled type and properties */
    char path[sizeof ACTIVITY_PATH_PREFIX + 24];
};

static uint64_t next_id = 1;
static size_t live = 0;
static int emits_object_manager_signals = 0;

/* A reverse-DNS name: two or more dot-separated elements of [A-Za-z0-9_-],
 * none empty or starting with a digit, at most 255 bytes. */
static int valid_reverse_dns(const char *name)
{
    size_t length = strlen(name);
    if (length == 0 || length > 255)
        return 0;
    int elements = 1;
    int at_start = 1;
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (c == '.') {
            if (at_start)
                return 0;
            elements++;
            at_start = 1;
            continue;
        }
        int letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '-';
        int digit = c >= '0' && c <= '9';
        if (!letter && !digit)
            return 0;
        if (at_start && digit)
            return 0;
        at_start = 0;
    }
    return !at_start && elements >= 2;
}

/* Visits every value under the iterator; counts them. Returns 0 when
 * something is out of bounds (too deep, a text over the limit). */
static int walk(DBusMessageIter *iter, int depth, size_t *values)
{
    if (depth > MAX_DEPTH)
        return 0;
    int type;
    while ((type = dbus_message_iter_get_arg_type(iter)) != DBUS_TYPE_INVALID) {
        (*values)++;
        if (dbus_type_is_container(type)) {
            DBusMessageIter sub;
            dbus_message_iter_recurse(iter, &sub);
            if (!walk(&sub, depth + 1, values))
                return 0;
        } else if (type == DBUS_TYPE_STRING || type == DBUS_TYPE_OBJECT_PATH || type == DBUS_TYPE_SIGNATURE) {
            const char *text;
            dbus_message_iter_get_basic(iter, &text);
            if (strlen(text) > 64 * 1024)
                return 0;
        }
        dbus_message_iter_next(iter);
    }
    return 1;
}

/* Checks one properties dictionary; on failure fills `why`. */
static int validate_properties(DBusMessageIter *dict, char *why, size_t why_size)
{
    DBusMessageIter entry;
    dbus_message_iter_recurse(dict, &entry);
    size_t values = 0;
    while (dbus_message_iter_get_arg_type(&entry) == DBUS_TYPE_DICT_ENTRY) {
        DBusMessageIter pair, variant;
        const char *key;
        dbus_message_iter_recurse(&entry, &pair);
        dbus_message_iter_get_basic(&pair, &key);
        dbus_message_iter_next(&pair);
        dbus_message_iter_recurse(&pair, &variant);
        char *signature = dbus_message_iter_get_signature(&variant);
        int known = 0;
        for (size_t i = 0; i < sizeof known_keys / sizeof known_keys[0]; i++) {
            if (strcmp(known_keys[i].key, key) == 0) {
                known = 1;
                if (strcmp(known_keys[i].signature, signature) != 0) {
                    snprintf(why, why_size, "'%s' must be of type %s, not %s", key, known_keys[i].signature, signature);
                    dbus_free(signature);
                    return 0;
                }
                break;
            }
        }
        dbus_free(signature);
        if (!known) {
            snprintf(why, why_size, "unknown key '%s'", key);
            return 0;
        }
        if (strcmp(key, "title") == 0) {
            const char *title;
            dbus_message_iter_get_basic(&variant, &title);
            if (strlen(title) > MAX_TEXT_BYTES) {
                snprintf(why, why_size, "the title is longer than %d bytes", MAX_TEXT_BYTES);
                return 0;
            }
        }
        if (!walk(&variant, 1, &values)) {
            snprintf(why, why_size, "the value of '%s' is too deep or too large", key);
            return 0;
        }
        dbus_message_iter_next(&entry);
    }
    return 1;
}

static DBusHandlerResult activity_message(DBusConnection *connection, DBusMessage *message, void *data);

static void activity_unregistered(DBusConnection *connection, void *data)
{
    (void)connection;
    struct activity *activity = data;
    dbus_message_unref(activity->call);
    free(activity);
    live--;
}

static const DBusObjectPathVTable activity_vtable = {
    .unregister_function = activity_unregistered,
    .message_function = activity_message,
};

/* Appends copies of the values under `from` to `to`. */
static int copy_values(DBusMessageIter *from, DBusMessageIter *to)
{
    int type;
    while ((type = dbus_message_iter_get_arg_type(from)) != DBUS_TYPE_INVALID) {
        if (dbus_type_is_container(type)) {
            DBusMessageIter inner_from, inner_to;
            dbus_message_iter_recurse(from, &inner_from);
            /* Arrays and variants name their content's type; structs and entries do not. */
            char *whole = NULL, *content = NULL;
            if (type == DBUS_TYPE_ARRAY) {
                whole = dbus_message_iter_get_signature(from);
                content = whole + 1;
            } else if (type == DBUS_TYPE_VARIANT) {
                whole = dbus_message_iter_get_signature(&inner_from);
                content = whole;
            }
            int ok = dbus_message_iter_open_container(to, type, content, &inner_to);
            dbus_free(whole);
            if (!ok || !copy_values(&inner_from, &inner_to) || !dbus_message_iter_close_container(to, &inner_to))
                return 0;
        } else {
            DBusBasicValue value;
            dbus_message_iter_get_basic(from, &value);
            if (!dbus_message_iter_append_basic(to, type, &value))
                return 0;
        }
        dbus_message_iter_next(from);
    }
    return 1;
}

/* InterfacesAdded(o, a{sa{sv}}): the new object with the properties it was created with. */
static void emit_interfaces_added(DBusConnection *connection, const char *path, DBusMessage *call)
{
    DBusMessage *signal = dbus_message_new_signal(MANAGER_PATH, OBJECT_MANAGER_INTERFACE, "InterfacesAdded");
    if (!signal)
        return;
    DBusMessageIter arguments, interfaces, entry, call_arguments, properties_from, properties_to;
    const char *interface = ACTIVITY_INTERFACE;
    dbus_message_iter_init(call, &call_arguments);
    dbus_message_iter_next(&call_arguments);
    dbus_message_iter_recurse(&call_arguments, &properties_from);
    dbus_message_iter_init_append(signal, &arguments);
    if (dbus_message_iter_append_basic(&arguments, DBUS_TYPE_OBJECT_PATH, &path)
        && dbus_message_iter_open_container(&arguments, DBUS_TYPE_ARRAY, "{sa{sv}}", &interfaces)
        && dbus_message_iter_open_container(&interfaces, DBUS_TYPE_DICT_ENTRY, NULL, &entry)
        && dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &interface)
        && dbus_message_iter_open_container(&entry, DBUS_TYPE_ARRAY, "{sv}", &properties_to)
        && copy_values(&properties_from, &properties_to)
        && dbus_message_iter_close_container(&entry, &properties_to)
        && dbus_message_iter_close_container(&interfaces, &entry)
        && dbus_message_iter_close_container(&arguments, &interfaces))
        dbus_connection_send(connection, signal, NULL);
    dbus_message_unref(signal);
}

/* InterfacesRemoved(o, as): the object and its one interface. */
static void emit_interfaces_removed(DBusConnection *connection, const char *path)
{
    DBusMessage *signal = dbus_message_new_signal(MANAGER_PATH, OBJECT_MANAGER_INTERFACE, "InterfacesRemoved");
    if (!signal)
        return;
    DBusMessageIter arguments, names;
    const char *interface = ACTIVITY_INTERFACE;
    dbus_message_iter_init_append(signal, &arguments);
    if (dbus_message_iter_append_basic(&arguments, DBUS_TYPE_OBJECT_PATH, &path)
        && dbus_message_iter_open_container(&arguments, DBUS_TYPE_ARRAY, "s", &names)
        && dbus_message_iter_append_basic(&names, DBUS_TYPE_STRING, &interface)
        && dbus_message_iter_close_container(&arguments, &names))
        dbus_connection_send(connection, signal, NULL);
    dbus_message_unref(signal);
}

static void reply_error(DBusConnection *connection, DBusMessage *call, const char *name, const char *text)
{
    DBusMessage *error = dbus_message_new_error(call, name, text);
    if (error) {
        dbus_connection_send(connection, error, NULL);
        dbus_message_unref(error);
    }
}

static DBusHandlerResult create_activity(DBusConnection *connection, DBusMessage *call)
{
    if (!dbus_message_has_signature(call, "sa{sv}")) {
        reply_error(connection, call, DBUS_ERROR_INVALID_ARGS, "CreateActivity takes (s, a{sv})");
        return DBUS_HANDLER_RESULT_HANDLED;
    }
    DBusMessageIter args;
    const char *type;
    char why[256];
    dbus_message_iter_init(call, &args);
    dbus_message_iter_get_basic(&args, &type);
    if (!valid_reverse_dns(type)) {
        snprintf(why, sizeof why, "'%.200s' is not a reverse-DNS activity type", type);
        reply_error(connection, call, ERROR_INVALID_ARGUMENT, why);
        return DBUS_HANDLER_RESULT_HANDLED;
    }
    dbus_message_iter_next(&args);
    if (!validate_properties(&args, why, sizeof why)) {
        reply_error(connection, call, ERROR_INVALID_ARGUMENT, why);
        return DBUS_HANDLER_RESULT_HANDLED;
    }

    struct activity *activity = calloc(1, sizeof *activity);
    if (!activity)
        return DBUS_HANDLER_RESULT_NEED_MEMORY;
    activity->id = next_id++;
    activity->call = dbus_message_ref(call);
    snprintf(activity->path, sizeof activity->path, ACTIVITY_PATH_PREFIX "%" PRIu64, activity->id);
    DBusError error = DBUS_ERROR_INIT;
    if (!dbus_connection_try_register_object_path(connection, activity->path, &activity_vtable, activity, &error)) {
        reply_error(connection, call, DBUS_ERROR_FAILED, error.message);
        dbus_error_free(&error);
        dbus_message_unref(activity->call);
        free(activity);
        return DBUS_HANDLER_RESULT_HANDLED;
    }
    live++;

    DBusMessage *reply = dbus_message_new_method_return(call);
    const char *path = activity->path;
    if (!reply || !dbus_message_append_args(reply, DBUS_TYPE_OBJECT_PATH, &path, DBUS_TYPE_INVALID))
        return DBUS_HANDLER_RESULT_NEED_MEMORY;
    dbus_connection_send(connection, reply, NULL);
    dbus_message_unref(reply);
    if (emits_object_manager_signals)
        emit_interfaces_added(connection, activity->path, call);
    return DBUS_HANDLER_RESULT_HANDLED;
}

static DBusHandlerResult manager_message(DBusConnection *connection, DBusMessage *message, void *data)
{
    (void)data;
    if (dbus_message_is_method_call(message, MANAGER_INTERFACE, "CreateActivity"))
        return create_activity(connection, message);
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static DBusHandlerResult activity_message(DBusConnection *connection, DBusMessage *message, void *data)
{
    struct activity *activity = data;
    if (!dbus_message_is_method_call(message, ACTIVITY_INTERFACE, "Invalidate"))
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    DBusMessage *reply = dbus_message_new_method_return(message);
    if (!reply)
        return DBUS_HANDLER_RESULT_NEED_MEMORY;
    char path[sizeof activity->path];
    memcpy(path, activity->path, sizeof path);
    /* Frees `activity` through activity_unregistered. */
    dbus_connection_unregister_object_path(connection, activity->path);
    dbus_connection_send(connection, reply, NULL);
    dbus_message_unref(reply);
    if (emits_object_manager_signals)
        emit_interfaces_removed(connection, path);
    return DBUS_HANDLER_RESULT_HANDLED;
}

static const DBusObjectPathVTable manager_vtable = {
    .message_function = manager_message,
};

/* --glib: libdbus's watches and timeouts as GLib sources. */

static void dispatch_all(DBusConnection *connection)
{
    while (dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS)
        ;
}

static gboolean watch_ready(gint fd, GIOCondition condition, gpointer data)
{
    (void) fd;
    DBusWatch *watch = data;
    unsigned int flags = 0;
    if (condition & G_IO_IN) flags |= DBUS_WATCH_READABLE;
    if (condition & G_IO_OUT) flags |= DBUS_WATCH_WRITABLE;
    if (condition & G_IO_ERR) flags |= DBUS_WATCH_ERROR;
    if (condition & G_IO_HUP) flags |= DBUS_WATCH_HANGUP;
    dbus_watch_handle(watch, flags);
    return G_SOURCE_CONTINUE;
}

static void watch_toggled(DBusWatch *watch, void *data)
{
    (void) data;
    guint id = GPOINTER_TO_UINT(dbus_watch_get_data(watch));
    if (id != 0) g_source_remove(id);
    id = 0;
    if (dbus_watch_get_enabled(watch)) {
        unsigned int flags = dbus_watch_get_flags(watch);
        GIOCondition condition = G_IO_ERR | G_IO_HUP;
        if (flags & DBUS_WATCH_READABLE) condition |= G_IO_IN;
        if (flags & DBUS_WATCH_WRITABLE) condition |= G_IO_OUT;
        id = g_unix_fd_add(dbus_watch_get_unix_fd(watch), condition, watch_ready, watch);
    }
    dbus_watch_set_data(watch, GUINT_TO_POINTER(id), NULL);
}

static dbus_bool_t watch_added(DBusWatch *watch, void *data)
{
    dbus_watch_set_data(watch, NULL, NULL);
    watch_toggled(watch, data);
    return TRUE;
}

static void watch_removed(DBusWatch *watch, void *data)
{
    (void) data;
    guint id = GPOINTER_TO_UINT(dbus_watch_get_data(watch));
    if (id != 0) g_source_remove(id);
    dbus_watch_set_data(watch, NULL, NULL);
}

static gboolean timeout_fired(gpointer data)
{
    dbus_timeout_handle(data);
    return G_SOURCE_CONTINUE;
}

static void timeout_toggled(DBusTimeout *timeout, void *data)
{
    (void) data;
    guint id = GPOINTER_TO_UINT(dbus_timeout_get_data(timeout));
    if (id != 0) g_source_remove(id);
    id = dbus_timeout_get_enabled(timeout)
        ? g_timeout_add((guint) dbus_timeout_get_interval(timeout), timeout_fired, timeout) : 0;
    dbus_timeout_set_data(timeout, GUINT_TO_POINTER(id), NULL);
}

static dbus_bool_t timeout_added(DBusTimeout *timeout, void *data)
{
    dbus_timeout_set_data(timeout, NULL, NULL);
    timeout_toggled(timeout, data);
    return TRUE;
}

static void timeout_removed(DBusTimeout *timeout, void *data)
{
    (void) data;
    guint id = GPOINTER_TO_UINT(dbus_timeout_get_data(timeout));
    if (id != 0) g_source_remove(id);
    dbus_timeout_set_data(timeout, NULL, NULL);
}

/* Messages read while handling a watch are dispatched from an idle source. */
static gboolean dispatch_idle(gpointer data)
{
    dispatch_all(data);
    return G_SOURCE_REMOVE;
}

static void dispatch_status_changed(DBusConnection *connection, DBusDispatchStatus status, void *data)
{
    (void) data;
    if (status == DBUS_DISPATCH_DATA_REMAINS)
        g_idle_add_full(G_PRIORITY_DEFAULT, dispatch_idle, connection, NULL);
}

static gboolean bus_gone(gpointer data)
{
    g_main_loop_quit(data);
    return G_SOURCE_REMOVE;
}

static DBusHandlerResult local_filter(DBusConnection *connection, DBusMessage *message, void *data)
{
    (void) connection;
    if (dbus_message_is_signal(message, DBUS_INTERFACE_LOCAL, "Disconnected"))
        g_idle_add(bus_gone, data);
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static void run_glib_loop(DBusConnection *connection)
{
    GMainLoop *loop = g_main_loop_new(NULL, FALSE);
    dbus_connection_set_exit_on_disconnect(connection, FALSE);
    dbus_connection_add_filter(connection, local_filter, loop, NULL);
    dbus_connection_set_watch_functions(connection, watch_added, watch_removed, watch_toggled, NULL, NULL);
    dbus_connection_set_timeout_functions(connection, timeout_added, timeout_removed, timeout_toggled, NULL, NULL);
    dbus_connection_set_dispatch_status_function(connection, dispatch_status_changed, NULL, NULL);
    dispatch_all(connection);
    g_main_loop_run(loop);
    g_main_loop_unref(loop);
}

int main(int argc, char **argv)
{
    const char *name = "org.example.BenchPeer.LibDBus";
    int glib = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--object-manager-signals") == 0)
            emits_object_manager_signals = 1;
        else if (strcmp(argv[i], "--glib") == 0)
            glib = 1;
        else
            name = argv[i];
    }
    DBusError error = DBUS_ERROR_INIT;
    DBusConnection *connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
    if (!connection) {
        fprintf(stderr, "libdbus-peer: cannot connect to the session bus: %s\n", error.message);
        return 1;
    }
    if (!dbus_connection_try_register_object_path(connection, MANAGER_PATH, &manager_vtable, NULL, &error)) {
        fprintf(stderr, "libdbus-peer: cannot register %s: %s\n", MANAGER_PATH, error.message);
        return 1;
    }
    int owned = dbus_bus_request_name(connection, name, DBUS_NAME_FLAG_DO_NOT_QUEUE, &error);
    if (owned != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
        fprintf(stderr, "libdbus-peer: cannot own %s: %s\n", name, error.message ? error.message : "taken");
        return 1;
    }
    if (glib) {
        run_glib_loop(connection);
    } else {
        /* The plainest loop libdbus offers: block, read, dispatch, repeat. */
        while (dbus_connection_read_write_dispatch(connection, -1))
            ;
    }
    fprintf(stderr, "libdbus-peer: bus gone, %zu activities were live\n", live);
    return 0;
}
