// SPDX-License-Identifier: Apache-2.0
// The floor for bench/settings/startup.py: the least a GTK 4 app does to
// show a window with one control (a switch in a box), no libadwaita, no D-Bus.
#include <gtk/gtk.h>

static void activate(GtkApplication *app, gpointer data) {
    (void)data;
    GtkWidget *window = gtk_application_window_new(app);
    gtk_window_set_title(GTK_WINDOW(window), "Minimal");
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12);
    GtkWidget *label = gtk_label_new("Handoff");
    GtkWidget *toggle = gtk_switch_new();
    gtk_accessible_update_relation(GTK_ACCESSIBLE(toggle), GTK_ACCESSIBLE_RELATION_LABELLED_BY, label, NULL, -1);
    gtk_box_append(GTK_BOX(box), label);
    gtk_box_append(GTK_BOX(box), toggle);
    gtk_window_set_child(GTK_WINDOW(window), box);
    gtk_window_present(GTK_WINDOW(window));
}

int main(int argc, char **argv) {
    GtkApplication *app = gtk_application_new("org.example.UserActivity.MinimalWindow", G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(activate), NULL);
    int status = g_application_run(G_APPLICATION(app), argc, argv);
    g_object_unref(app);
    return status;
}
