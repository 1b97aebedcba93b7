// SPDX-License-Identifier: Apache-2.0
// useractivity-settings: Handoff, pairing, history and privacy for people,
// in GTK 4 and libadwaita on the desktop's GLib main loop.
import CGtk
import GtkSupport

setUpTranslations(domain: SettingsApp.textDomain, directory: SettingsApp.localeDirectory)
exit(SettingsApp().run(arguments: CommandLine.arguments))
