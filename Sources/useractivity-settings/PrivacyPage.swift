// SPDX-License-Identifier: Apache-2.0
import CGtk
import DBusKit
import GtkSupport
import TypedValues

/// Pause history, blocked apps and activity types, how long history is kept,
/// and the recent-files bridge: the manager's privacy properties.
final class PrivacyPage {
    static let recentFilesBridge = "recent-files"

    let page: GPointer
    private let link: ServiceLink
    private let window: GPointer
    private let toaster: Toaster
    private let apps: InstalledApps
    private var notice: UnavailableNotice!
    private let pausedRow: (row: GPointer, toggle: GPointer)
    private var pausedHandler: UInt = 0
    private let bridgeRow: (row: GPointer, toggle: GPointer)
    private var bridgeHandler: UInt = 0
    private let retention: GPointer
    private var retentionHandler: UInt = 0
    private let appsGroup: GPointer
    private var appRows: [GPointer] = []
    private let typesGroup: GPointer
    private var typeRows: [GPointer] = []
    private var values: [String: TypedValue] = [:]

    init(link: ServiceLink, window: GPointer, toaster: Toaster, apps: InstalledApps) {
        self.link = link
        self.window = window
        self.toaster = toaster
        self.apps = apps
        page = preferencesPage(localized("_Privacy"), iconName: "preferences-system-privacy-symbolic")

        let history = preferencesGroup(localized("History"))
        pausedRow = switchRow(localized("P_ause history"), subtitle: localized("Nothing new is saved; continuing still works"))
        let retentionRow = actionRow(localized("_Keep history for (days)"), subtitle: localized("0 keeps it until you forget it"))
        retention = gtk_spin_button_new_with_range(0, 3650, 1)!.raw
        gtk_widget_set_valign(retention.widget, GTK_ALIGN_CENTER)
        adw_action_row_add_suffix(retentionRow.as(), retention.widget)
        adw_action_row_set_activatable_widget(retentionRow.as(), retention.widget)
        bridgeRow = switchRow(localized("Include _recent files"),
                              subtitle: localized("Documents that apps record as recently used become saved activities"))
        for row in [pausedRow.row, retentionRow, bridgeRow.row] { addToGroup(history, row) }

        appsGroup = preferencesGroup(localized("Blocked apps"),
                                     description: localized("Their activities are never saved or suggested; blocking an app deletes what it saved."))
        let addApp = button(localized("_Block an App…"), cssClasses: ["flat"]) {}
        adw_preferences_group_set_header_suffix(appsGroup.as(), addApp.widget)

        typesGroup = preferencesGroup(localized("Blocked activity types"),
                                      description: localized("Activities of these types are never saved or suggested."))
        var blockType: (GPointer) -> Void = { _ in }
        let typeRow = entryRow(localized("Block a _type")) { entry in blockType(entry) }
        gtk_entry_set_placeholder_text(typeRow.entry.as(), "com.example.Editor.edit")
        addToGroup(typesGroup, typeRow.row)

        notice = UnavailableNotice { [unowned self] in load() }
        for group in [notice.group, history, appsGroup, typesGroup] { addGroup(page, group) }

        pausedHandler = onSignal(pausedRow.toggle, "notify::active") { [unowned self] _ in
            set("Paused", .boolean(switchIsOn(pausedRow.toggle)))
        }
        bridgeHandler = onSignal(bridgeRow.toggle, "notify::active") { [unowned self] _ in
            var bridges = (values["Bridges"]?.stringArrayValue ?? []).filter { $0 != Self.recentFilesBridge }
            if switchIsOn(bridgeRow.toggle) { bridges.append(Self.recentFilesBridge) }
            set("Bridges", .stringArray(bridges))
        }
        retentionHandler = onSignal(retention, "value-changed") { [unowned self] in
            set("RetentionDays", .uint32(UInt32(max(0, gtk_spin_button_get_value_as_int(retention.as())))))
        }
        onSignal(addApp, "clicked") { [unowned self] in chooseApp() }
        blockType = { [unowned self] typeEntry in
            let type = editableText(typeEntry).filter { !$0.isWhitespace }
            guard !type.isEmpty else { return }
            let blocked = values["BlockedActivityTypes"]?.stringArrayValue ?? []
            if !blocked.contains(type) { set("BlockedActivityTypes", .stringArray(blocked + [type])) }
            setEditableText(typeEntry, "")
        }
        link.follow(ActivityNames.service, signals: { [weak self] message in
            guard let self, message.path == ActivityNames.managerPath, let change = message.changedProperties,
                  change.interface == ActivityNames.manager else { return }
            apply(change.values)
        }, ownerChanged: { [weak self] running in
            if running { self?.load() } else { self?.notice.show(localized("The activity service stopped.")) }
        })
        load()
    }

    private func load() {
        // GetAll also makes this connection one the service sends its privacy changes to.
        link.getAll(ActivityNames.service, ActivityNames.managerPath, ActivityNames.manager) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let all):
                notice.show(nil)
                apply(all)
            case .failure(let failure):
                notice.show(localized("Privacy settings are not available.") + " " + failure.explanation)
            }
        }
    }

    private func set(_ property: String, _ value: TypedValue) {
        link.set(ActivityNames.service, ActivityNames.managerPath, ActivityNames.manager, property, value) { [weak self] failure in
            guard let self, let failure else { return }
            toaster.show(localized("Could not change the setting:") + " " + failure.explanation)
            load()
        }
    }

    private func apply(_ changed: [String: TypedValue]) {
        values.merge(changed) { $1 }
        if let paused = changed["Paused"]?.boolValue {
            withSignalBlocked(pausedRow.toggle, pausedHandler) { setSwitch(pausedRow.toggle, paused) }
        }
        if let bridges = changed["Bridges"]?.stringArrayValue {
            withSignalBlocked(bridgeRow.toggle, bridgeHandler) { setSwitch(bridgeRow.toggle, bridges.contains(Self.recentFilesBridge)) }
        }
        if let days = changed["RetentionDays"]?.uint32Value, Int32(clamping: days) != gtk_spin_button_get_value_as_int(retention.as()) {
            withSignalBlocked(retention, retentionHandler) { gtk_spin_button_set_value(retention.as(), Double(days)) }
        }
        if let blocked = changed["BlockedApplications"]?.stringArrayValue { showBlockedApps(blocked) }
        if let blocked = changed["BlockedActivityTypes"]?.stringArrayValue { showBlockedTypes(blocked) }
    }

    private func showBlockedApps(_ blocked: [String]) {
        appRows.forEach { removeFromGroup(appsGroup, $0) }
        appRows = blocked.map { id in
            let app = apps.app(id)
            let row = actionRow(app.name, subtitle: app.name == id ? nil : id)
            adw_preferences_row_set_use_underline(row.as(), CGTK_FALSE)
            adw_action_row_add_prefix(row.as(), apps.image(id).widget)
            adw_action_row_add_suffix(row.as(), iconButton("list-remove-symbolic", tooltip: localizedFormat("Unblock %s", app.name)) { [unowned self] in
                set("BlockedApplications", .stringArray((values["BlockedApplications"]?.stringArrayValue ?? []).filter { $0 != id }))
            }.widget)
            return row
        }
        if appRows.isEmpty { appRows = [actionRow(localized("No app is blocked"))] }
        appRows.forEach { addToGroup(appsGroup, $0) }
    }

    private func showBlockedTypes(_ blocked: [String]) {
        typeRows.forEach { removeFromGroup(typesGroup, $0) }
        typeRows = blocked.map { type in
            let row = actionRow(type)
            adw_preferences_row_set_use_underline(row.as(), CGTK_FALSE)
            adw_action_row_add_suffix(row.as(), iconButton("list-remove-symbolic", tooltip: localizedFormat("Unblock %s", type)) { [unowned self] in
                set("BlockedActivityTypes", .stringArray((values["BlockedActivityTypes"]?.stringArrayValue ?? []).filter { $0 != type }))
            }.widget)
            return row
        }
        typeRows.forEach { addToGroup(typesGroup, $0) }
    }

    /// A window listing the installed apps; choosing one blocks it.
    private func chooseApp() {
        let chooser = adw_window_new()!.raw
        gtk_window_set_transient_for(chooser.as(), window.as())
        gtk_window_set_modal(chooser.as(), CGTK_TRUE)
        gtk_window_set_title(chooser.as(), localized("Block an App"))
        gtk_window_set_default_size(chooser.as(), 420, 560)
        let content = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0)!
        gtk_box_append(content.raw.as(), adw_header_bar_new())
        let list = gtk_list_box_new()!
        gtk_widget_add_css_class(list, "boxed-list")
        gtk_widget_set_margin_start(list, 12); gtk_widget_set_margin_end(list, 12)
        gtk_widget_set_margin_top(list, 12); gtk_widget_set_margin_bottom(list, 12)
        let blocked = Set(values["BlockedApplications"]?.stringArrayValue ?? [])
        for app in apps.all() where !blocked.contains(app.id) {
            let row = actionRow(app.name, subtitle: app.id)
            adw_preferences_row_set_use_underline(row.as(), CGTK_FALSE)
            adw_action_row_add_prefix(row.as(), apps.image(app.id).widget)
            let block = { [unowned self] in
                set("BlockedApplications", .stringArray((values["BlockedApplications"]?.stringArrayValue ?? []) + [app.id]))
                gtk_window_destroy(chooser.as())
            }
            let blockButton = button(localized("Block"), block)
            cgtk_accessible_label(blockButton, localizedFormat("Block %s", app.name))
            adw_action_row_add_suffix(row.as(), blockButton.widget)
            adw_action_row_set_activatable_widget(row.as(), blockButton.widget)
            gtk_list_box_append(list.raw.as(), row.widget)
        }
        let scroller = gtk_scrolled_window_new()!
        gtk_widget_set_vexpand(scroller, CGTK_TRUE)
        gtk_scrolled_window_set_child(scroller.raw.as(), list)
        gtk_box_append(content.raw.as(), scroller)
        adw_window_set_content(chooser.as(), content)
        gtk_window_present(chooser.as())
    }
}
