/* SPDX-License-Identifier: Apache-2.0
 *
 * A GDBus service for bench/report.sh, written the idiomatic GLib way
 * (introspection data, g_dbus_connection_register_object, a GMainLoop), doing
 * the same (s, a{sv}) -> o call as useractivityd's CreateActivity.
 *
 * CreateActivity(s activity_type, a{sv} properties) -> (o activity)
 *   checks the type is a reverse-DNS name, walks the whole dictionary (every
 *   key must be a known activity key with the right type; nested values are
 *   visited too), keeps the dictionary in memory under a counter, registers an
 *   object for it and replies with its path.
 * Activity.Invalidate() on that path unregisters the object and frees it.
 * org.freedesktop.DBus.Peer.Ping is answered by GDBus itself.
 *
 * Usage: gdbus-peer [BUS_NAME]   (default org.example.BenchPeer.GDBus)
 */
#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

#include "activity-keys.h"

#define MANAGER_PATH "/org/example/BenchPeer"
#define ACTIVITY_PATH_PREFIX "/org/example/BenchPeer/activity/"
#define ERROR_INVALID_ARGUMENT "org.example.BenchPeer.Error.InvalidArgument"
#define MAX_TEXT_BYTES 1024
#define MAX_DEPTH 32

static const gchar introspection_xml[] =
    "<node>"
    "  <interface name='org.example.BenchPeer'>"
    "    <method name='CreateActivity'>"
    "      <arg type='s' name='activity_type' direction='in'/>"
    "      <arg type='a{sv}' name='properties' direction='in'/>"
    "      <arg type='o' name='activity' direction='out'/>"
    "    </method>"
    "  </interface>"
    "  <interface name='org.example.BenchPeer.Activity'>"
    "    <method name='Invalidate'/>"
    "  </interface>"
    "</node>";


typedef struct {
    guint64 id;
    guint registration;
    gchar *type;
    GVariant *properties;
} Activity;

static GDBusNodeInfo *introspection;
static guint64 next_id = 1;
static gsize live = 0;

static gboolean valid_reverse_dns(const gchar *name)
{
    gsize length = strlen(name);
    if (length == 0 || length > 255)
        return FALSE;
    int elements = 1;
    gboolean at_start = TRUE;
    for (const gchar *p = name; *p; p++) {
        gchar c = *p;
        if (c == '.') {
            if (at_start)
                return FALSE;
            elements++;
            at_start = TRUE;
            continue;
        }
        gboolean letter = g_ascii_isalpha(c) || c == '_' || c == '-';
        gboolean digit = g_ascii_isdigit(c);
        if (!letter && !digit)
            return FALSE;
        if (at_start && digit)
            return FALSE;
        at_start = FALSE;
    }
    return !at_start && elements >= 2;
}

/* Visits every value below `value`; FALSE when too deep or a text too large. */
static gboolean walk(GVariant *value, int depth, gsize *values)
{
    if (depth > MAX_DEPTH)
        return FALSE;
    (*values)++;
    if (g_variant_is_container(value)) {
        GVariantIter iter;
        GVariant *child;
        g_variant_iter_init(&iter, value);
        while ((child = g_variant_iter_next_value(&iter)) != NULL) {
            gboolean ok = walk(child, depth + 1, values);
            g_variant_unref(child);
            if (!ok)
                return FALSE;
        }
    } else if (g_variant_is_of_type(value, G_VARIANT_TYPE_STRING)) {
        gsize length;
        g_variant_get_string(value, &length);
        if (length > 64 * 1024)
            return FALSE;
    }
    return TRUE;
}

static gboolean validate_properties(GVariant *properties, GError **error)
{
    GVariantIter iter;
    const gchar *key;
    GVariant *value;
    gsize values = 0;
    g_variant_iter_init(&iter, properties);
    while (g_variant_iter_next(&iter, "{&sv}", &key, &value)) {
        gboolean known = FALSE;
        for (gsize i = 0; i < G_N_ELEMENTS(known_keys); i++) {
            if (strcmp(known_keys[i].key, key) == 0) {
                known = TRUE;
                if (!g_variant_is_of_type(value, G_VARIANT_TYPE(known_keys[i].signature))) {
                    g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS, "'%s' must be of type %s, not %s", key,
                                known_keys[i].signature, g_variant_get_type_string(value));
                    g_variant_unref(value);
                    return FALSE;
                }
                break;
            }
        }
        if (!known) {
            g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS, "unknown key '%s'", key);
            g_variant_unref(value);
            return FALSE;
        }
        if (strcmp(key, "title") == 0 && strlen(g_variant_get_string(value, NULL)) > MAX_TEXT_BYTES) {
            g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS, "the title is longer than %d bytes",
                        MAX_TEXT_BYTES);
            g_variant_unref(value);
            return FALSE;
        }
        gboolean ok = walk(value, 1, &values);
        g_variant_unref(value);
        if (!ok) {
            g_set_error(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS, "the value of '%s' is too deep or too large",
                        key);
            return FALSE;
        }
    }
    return TRUE;
}

static void activity_free(gpointer data)
{
    Activity *activity = data;
    g_free(activity->type);
    g_variant_unref(activity->properties);
    g_free(activity);
    live--;
}

static void activity_method_call(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                                 const gchar *interface_name, const gchar *method_name, GVariant *parameters,
                                 GDBusMethodInvocation *invocation, gpointer user_data)
{
    (void)sender;
    (void)object_path;
    (void)interface_name;
    (void)parameters;
    Activity *activity = user_data;
    if (g_strcmp0(method_name, "Invalidate") == 0) {
        /* Frees `activity` through activity_free. */
        g_dbus_connection_unregister_object(connection, activity->registration);
        g_dbus_method_invocation_return_value(invocation, NULL);
    }
}

static const GDBusInterfaceVTable activity_vtable = {.method_call = activity_method_call};

static void manager_method_call(GDBusConnection *connection, const gchar *sender, const gchar *object_path,
                                const gchar *interface_name, const gchar *method_name, GVariant *parameters,
                                GDBusMethodInvocation *invocation, gpointer user_data)
{
    (void)sender;
    (void)object_path;
    (void)interface_name;
    (void)user_data;
    if (g_strcmp0(method_name, "CreateActivity") != 0)
        return;
    const gchar *type;
    GVariant *properties;
    g_variant_get(parameters, "(&s@a{sv})", &type, &properties);
    if (!valid_reverse_dns(type)) {
        g_dbus_method_invocation_return_dbus_error(invocation, ERROR_INVALID_ARGUMENT,
                                                   "the activity type is not a reverse-DNS name");
        g_variant_unref(properties);
        return;
    }
    GError *error = NULL;
    if (!validate_properties(properties, &error)) {
        g_dbus_method_invocation_return_dbus_error(invocation, ERROR_INVALID_ARGUMENT, error->message);
        g_error_free(error);
        g_variant_unref(properties);
        return;
    }

    Activity *activity = g_new0(Activity, 1);
    activity->id = next_id++;
    activity->type = g_strdup(type);
    activity->properties = properties; /* the reference g_variant_get gave us */
    gchar *path = g_strdup_printf(ACTIVITY_PATH_PREFIX "%" G_GUINT64_FORMAT, activity->id);
    activity->registration = g_dbus_connection_register_object(connection, path, introspection->interfaces[1],
                                                               &activity_vtable, activity, activity_free, &error);
    if (activity->registration == 0) {
        g_dbus_method_invocation_return_gerror(invocation, error);
        g_error_free(error);
        g_free(activity->type);
        g_variant_unref(activity->properties);
        g_free(activity);
        g_free(path);
        return;
    }
    live++;
    g_dbus_method_invocation_return_value(invocation, g_variant_new("(o)", path));
    g_free(path);
}

static const GDBusInterfaceVTable manager_vtable = {.method_call = manager_method_call};

static void on_bus_acquired(GDBusConnection *connection, const gchar *name, gpointer user_data)
{
    (void)name;
    (void)user_data;
    GError *error = NULL;
    if (g_dbus_connection_register_object(connection, MANAGER_PATH, introspection->interfaces[0], &manager_vtable,
                                          NULL, NULL, &error) == 0) {
        g_printerr("gdbus-peer: cannot register %s: %s\n", MANAGER_PATH, error->message);
        exit(1);
    }
}

static void on_name_lost(GDBusConnection *connection, const gchar *name, gpointer user_data)
{
    (void)connection;
    GMainLoop *loop = user_data;
    g_printerr("gdbus-peer: lost or could not own %s (%" G_GSIZE_FORMAT " activities live)\n", name, live);
    g_main_loop_quit(loop);
}

int main(int argc, char **argv)
{
    const gchar *name = argc > 1 ? argv[1] : "org.example.BenchPeer.GDBus";
    introspection = g_dbus_node_info_new_for_xml(introspection_xml, NULL);
    g_assert(introspection != NULL);
    GMainLoop *loop = g_main_loop_new(NULL, FALSE);
    guint owner = g_bus_own_name(G_BUS_TYPE_SESSION, name, G_BUS_NAME_OWNER_FLAGS_NONE, on_bus_acquired, NULL,
                                 on_name_lost, loop, NULL);
    g_main_loop_run(loop);
    g_bus_unown_name(owner);
    g_main_loop_unref(loop);
    g_dbus_node_info_unref(introspection);
    return 0;
}
