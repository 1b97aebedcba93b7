// SPDX-License-Identifier: Apache-2.0
import CGtk
import GLibSupport
import GtkSupport

/// The application: one preferences window with the Handoff, History and
/// Privacy pages, and the toasts that report what went wrong.
final class SettingsApp {
    static let applicationID = "org.example.UserActivity.Settings"
    static let textDomain = "useractivity-settings"
    static var localeDirectory: String {
        getenv("USERACTIVITY_SETTINGS_LOCALEDIR").map { String(cString: $0) } ?? "/usr/share/locale"
    }

    private let application: GPointer
    private var window: GPointer?
    private var link: ServiceLink?
    private var pages: [AnyObject] = []
    private var laterPages: GLibSource?

    init() {
        // NON_UNIQUE: a second instance is a second window, each following the
        // services' signals (and the latest one serving as pairing agent).
        application = adw_application_new(Self.applicationID, G_APPLICATION_NON_UNIQUE)!.raw
        onSignal(application, "activate") { [unowned self] in activate() }
    }

    func run(arguments: [String]) -> Int32 {
        var cArguments = arguments.map { strdup($0) }
        defer { cArguments.forEach { free($0) } }
        return g_application_run(application.as(), Int32(cArguments.count), &cArguments)
    }

    private func activate() {
        if let window {
            gtk_window_present(window.as())
            return
        }
        gtk_window_set_default_icon_name(Self.applicationID)
        let window = adw_preferences_window_new()!.raw
        self.window = window
        gtk_window_set_application(window.as(), application.as())
        gtk_window_set_title(window.as(), localized("Handoff and History"))
        gtk_window_set_default_size(window.as(), 720, 760)
        let toaster = Toaster(window: window)
        do {
            let link = try ServiceLink()
            self.link = link
            let apps = InstalledApps()
            let handoff = HandoffPage(link: link, window: window, toaster: toaster, apps: apps)
            pages = [handoff]
            adw_preferences_window_add(window.as(), handoff.page.as())
            // The other pages once the first has been drawn: the window shows
            // sooner, and they are there (also for the window's search) a
            // frame later.
            laterPages = link.loop.whenNothingElseIsReady { [unowned self] in
                laterPages = nil
                let history = HistoryPage(link: link, window: window, toaster: toaster, apps: apps)
                let privacy = PrivacyPage(link: link, window: window, toaster: toaster, apps: apps)
                pages += [history, privacy]
                adw_preferences_window_add(window.as(), history.page.as())
                adw_preferences_window_add(window.as(), privacy.page.as())
            }
        } catch {
            let page = adw_preferences_page_new()!.raw
            adw_preferences_page_set_title(page.as(), localized("Unavailable"))
            let group = preferencesGroup(localized("No session bus"),
                                         description: localized("The session bus could not be reached:") + " \(error)")
            adw_preferences_page_add(page.as(), group.as())
            adw_preferences_window_add(window.as(), page.as())
        }
        gtk_window_present(window.as())
    }
}

/// Shows short messages at the bottom of the window (`AdwToast`).
final class Toaster {
    let window: GPointer
    init(window: GPointer) { self.window = window }

    func show(_ text: String) {
        let toast = adw_toast_new(text)!
        adw_toast_set_timeout(toast, 6)
        adw_preferences_window_add_toast(window.as(), toast)
    }
}

/// Shown on a page whose service cannot be reached, with a way to try again.
final class UnavailableNotice {
    let group: GPointer
    private let row: GPointer

    init(retry: @escaping () -> Void) {
        group = preferencesGroup("")
        row = actionRow(localized("Not available"))
        adw_action_row_add_suffix(row.as(), button(localized("Try A_gain"), retry).widget)
        addToGroup(group, row)
        setVisible(group, false)
    }

    func show(_ reason: String?) {
        if let reason {
            adw_action_row_set_subtitle(row.as(), reason)
        }
        setVisible(group, reason != nil)
    }
}

func preferencesPage(_ title: String, iconName: String) -> GPointer {
    let page = adw_preferences_page_new()!.raw
    adw_preferences_page_set_title(page.as(), title)
    adw_preferences_page_set_icon_name(page.as(), iconName)
    adw_preferences_page_set_use_underline(page.as(), CGTK_TRUE)
    return page
}

func addGroup(_ page: GPointer, _ group: GPointer) {
    adw_preferences_page_add(page.as(), group.as())
}
