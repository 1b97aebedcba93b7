// SPDX-License-Identifier: Apache-2.0
// What Swift cannot take from GTK 4 / libadwaita 1.2 directly.
#pragma once
#include <adwaita.h>
#include <libintl.h>
#include <locale.h>

static const gboolean CGTK_TRUE = TRUE;
static const gboolean CGTK_FALSE = FALSE;

// g_signal_connect is a macro; the handler's C type differs per signal, so
// the two shapes the app uses are named here.
typedef void (*cgtk_handler0)(gpointer instance, gpointer data);
typedef void (*cgtk_handler1)(gpointer instance, gpointer argument, gpointer data);
static inline gulong cgtk_connect0(gpointer instance, const gchar *signal, cgtk_handler0 handler,
                                   gpointer data, GClosureNotify destroy) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(handler), data, destroy, (GConnectFlags)0);
}
static inline gulong cgtk_connect1(gpointer instance, const gchar *signal, cgtk_handler1 handler,
                                   gpointer data, GClosureNotify destroy) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(handler), data, destroy, (GConnectFlags)0);
}

// Type-checking casts are macros too.
static inline GtkWidget *cgtk_widget(gpointer p) { return GTK_WIDGET(p); }
static inline GObject *cgtk_object(gpointer p) { return G_OBJECT(p); }

// g_object_set is variadic: the few properties set by name.
static inline void cgtk_set_bool(gpointer object, const char *name, gboolean value) {
    g_object_set(object, name, value, NULL);
}
static inline void cgtk_set_string(gpointer object, const char *name, const char *value) {
    g_object_set(object, name, value, NULL);
}
static inline void cgtk_set_int(gpointer object, const char *name, gint value) {
    g_object_set(object, name, value, NULL);
}

// adw_message_dialog_new takes a printf format.
static inline GtkWidget *cgtk_message_dialog(GtkWindow *parent, const char *heading, const char *body) {
    GtkWidget *dialog = adw_message_dialog_new(parent, heading, NULL);
    adw_message_dialog_set_body(ADW_MESSAGE_DIALOG(dialog), body);
    return dialog;
}

// The accessible role GTK 4.8 derives from a widget is fixed at class init;
// labels of controls are set through the accessible property API (variadic).
static inline void cgtk_accessible_label(gpointer widget, const char *label) {
    gtk_accessible_update_property(GTK_ACCESSIBLE(widget), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
}

// gettext's domain binding with the codeset fixed to UTF-8 (GTK needs it).
static inline void cgtk_textdomain(const char *domain, const char *directory) {
    setlocale(LC_ALL, "");
    bindtextdomain(domain, directory);
    bind_textdomain_codeset(domain, "UTF-8");
    textdomain(domain);
}
