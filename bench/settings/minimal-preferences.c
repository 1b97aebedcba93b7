// SPDX-License-Identifier: Apache-2.0
// A second floor for bench/settings/startup.py: libadwaita's own start, an
// AdwPreferencesWindow with one page and one switch row, no D-Bus.
#include <adwaita.h>

static void activate(GtkApplication *app, gpointer data) {
    (void)data;
    GtkWidget *window = adw_preferences_window_new();
    gtk_window_set_application(GTK_WINDOW(window), app);
    GtkWidget *page = adw_preferences_page_new();
    GtkWidget *group = adw_preferences_group_new();
    GtkWidget *row = adw_action_row_new();
    adw_preferences_row_set_title(ADW_PREFERENCES_ROW(row), "Handoff");
    GtkWidget *toggle = gtk_switch_new();
    gtk_widget_set_valign(toggle, GTK_ALIGN_CENTER);
    adw_action_row_add_suffix(ADW_ACTION_ROW(row), toggle);
    adw_action_row_set_activatable_widget(ADW_ACTION_ROW(row), toggle);
    adw_preferences_group_add(ADW_PREFERENCES_GROUP(group), row);
    adw_preferences_page_add(ADW_PREFERENCES_PAGE(page), ADW_PREFERENCES_GROUP(group));
    adw_preferences_window_add(ADW_PREFERENCES_WINDOW(window), ADW_PREFERENCES_PAGE(page));
    gtk_window_present(GTK_WINDOW(window));
}

int main(int argc, char **argv) {
    AdwApplication *app = adw_application_new("org.example.UserActivity.MinimalPreferences", G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(activate), NULL);
    int status = g_application_run(G_APPLICATION(app), argc, argv);
    g_object_unref(app);
    return status;
}
