// SPDX-License-Identifier: Apache-2.0
// What Swift cannot take from GLib/GIO directly.
#pragma once
#include <glib.h>
#include <glib-unix.h>
#include <gio/gio.h>
#include <gio/gdesktopappinfo.h>

// G_SOURCE_CONTINUE/REMOVE and TRUE/FALSE are macros.
static const gboolean CGLIB_SOURCE_CONTINUE = G_SOURCE_CONTINUE;
static const gboolean CGLIB_SOURCE_REMOVE = G_SOURCE_REMOVE;
static const gboolean CGLIB_TRUE = TRUE;
static const gboolean CGLIB_FALSE = FALSE;

// g_signal_connect is a macro over g_signal_connect_data.
static inline gulong cglib_signal_connect(gpointer instance, const gchar *signal,
                                          GCallback handler, gpointer data,
                                          GClosureNotify destroy) {
    return g_signal_connect_data(instance, signal, handler, data, destroy, (GConnectFlags)0);
}

// glibc keeps freed heap pages mapped: malloc_trim gives them back to the
// system after a large free (Glibc's Swift module does not export it).
int malloc_trim(size_t pad);
// mallopt(3) and its M_TRIM_THRESHOLD, for the same reason.
int mallopt(int param, int value);
static const int CGLIB_M_TRIM_THRESHOLD = -1;

// pidfd_open(2) (glibc 2.36 <sys/pidfd.h>, which Glibc's Swift module does
// not export): tests make a pidfd of a child as a bus would hand one over.
int pidfd_open(pid_t pid, unsigned int flags);

// ---- GIO TLS for useractivity-handoffd ----

// The TLS connection constructors are variadic; database NULL so the system
// CA bundle is not parsed per connection (keys are pinned instead).
static inline GIOStream *cglib_tls_server_new(GIOStream *base, GTlsCertificate *certificate, GError **error) {
    GTlsBackend *backend = g_tls_backend_get_default();
    return (GIOStream *)g_initable_new(g_tls_backend_get_server_connection_type(backend), NULL, error,
        "base-io-stream", base, "certificate", certificate, "database", NULL,
        "authentication-mode", G_TLS_AUTHENTICATION_REQUIRED, NULL);
}

// Variadic constructor, as above; server-identity NULL: the pin is the check.
static inline GIOStream *cglib_tls_client_new(GIOStream *base, GTlsCertificate *certificate, GError **error) {
    GTlsBackend *backend = g_tls_backend_get_default();
    return (GIOStream *)g_initable_new(g_tls_backend_get_client_connection_type(backend), NULL, error,
        "base-io-stream", base, "certificate", certificate, "database", NULL, NULL);
}

// g_object_get is variadic: a certificate's DER bytes (caller unrefs).
static inline GByteArray *cglib_tls_certificate_der(GTlsCertificate *certificate) {
    GByteArray *der = NULL;
    g_object_get(certificate, "certificate", &der, NULL);
    return der;
}
