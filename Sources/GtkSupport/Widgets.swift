// SPDX-License-Identifier: Apache-2.0
import CGtk

// Small constructors the pages share; everything else is the C API itself.

public func label(_ text: String, cssClasses: [String] = [], xalign: Float = 0, wrap: Bool = false) -> GPointer {
    let label = gtk_label_new(text)!
    gtk_label_set_xalign(label.raw.as(), xalign)
    if wrap {
        gtk_label_set_wrap(label.raw.as(), CGTK_TRUE)
    } else {
        gtk_label_set_ellipsize(label.raw.as(), PANGO_ELLIPSIZE_END)
    }
    for name in cssClasses { gtk_widget_add_css_class(label, name) }
    return label.raw
}

public func setLabel(_ label: GPointer, _ text: String) {
    gtk_label_set_text(label.as(), text)
}

/// A button with a mnemonic label (`_Pair`), so Alt+letter reaches it.
public func button(_ mnemonic: String, cssClasses: [String] = [], _ action: @escaping () -> Void) -> GPointer {
    let button = gtk_button_new_with_mnemonic(mnemonic)!
    gtk_widget_set_valign(button, GTK_ALIGN_CENTER)
    for name in cssClasses { gtk_widget_add_css_class(button, name) }
    onSignal(button.raw, "clicked", action)
    return button.raw
}

/// An icon-only button; `tooltip` is also its accessible name.
public func iconButton(_ iconName: String, tooltip: String, _ action: @escaping () -> Void) -> GPointer {
    let button = gtk_button_new_from_icon_name(iconName)!
    gtk_widget_set_valign(button, GTK_ALIGN_CENTER)
    gtk_widget_add_css_class(button, "flat")
    gtk_widget_set_tooltip_text(button, tooltip)
    cgtk_accessible_label(button, tooltip)
    onSignal(button.raw, "clicked", action)
    return button.raw
}

/// A preferences row (`AdwActionRow`) with a title and an optional subtitle.
public func actionRow(_ title: String, subtitle: String? = nil) -> GPointer {
    let row = adw_action_row_new()!
    adw_preferences_row_set_title(row.raw.as(), title)
    adw_preferences_row_set_use_underline(row.raw.as(), CGTK_TRUE)
    if let subtitle { adw_action_row_set_subtitle(row.raw.as(), subtitle) }
    return row.raw
}

/// A row with a switch as its activatable suffix; the switch's accessible
/// name is the row's title. Returns the row and the switch.
public func switchRow(_ title: String, subtitle: String? = nil) -> (row: GPointer, toggle: GPointer) {
    let row = actionRow(title, subtitle: subtitle)
    let toggle = gtk_switch_new()!
    gtk_widget_set_valign(toggle, GTK_ALIGN_CENTER)
    adw_action_row_add_suffix(row.as(), toggle)
    adw_action_row_set_activatable_widget(row.as(), toggle)
    return (row, toggle.raw)
}

/// A row with a text entry and an Apply button; `apply` runs on Enter or
/// the button. A plain `GtkEntry` rather than libadwaita 1.2's
/// `AdwEntryRow`, whose text GTK 4.8 does not expose to assistive
/// technologies. The row (its activatable widget) names the entry for assistive technologies.
public func entryRow(_ title: String, apply: @escaping (GPointer) -> Void) -> (row: GPointer, entry: GPointer) {
    let row = actionRow(title)
    let entry = gtk_entry_new()!.raw
    gtk_widget_set_valign(entry.widget, GTK_ALIGN_CENTER)
    gtk_widget_set_hexpand(entry.widget, CGTK_TRUE)
    adw_action_row_add_suffix(row.as(), entry.widget)
    adw_action_row_set_activatable_widget(row.as(), entry.widget)
    let applyButton = iconButton("object-select-symbolic", tooltip: localized("Apply")) { apply(entry) }
    adw_action_row_add_suffix(row.as(), applyButton.widget)
    onSignal(entry, "activate") { apply(entry) }
    return (row, entry)
}

public func preferencesGroup(_ title: String, description: String? = nil) -> GPointer {
    let group = adw_preferences_group_new()!
    adw_preferences_group_set_title(group.raw.as(), title)
    if let description { adw_preferences_group_set_description(group.raw.as(), description) }
    return group.raw
}

public func addToGroup(_ group: GPointer, _ child: GPointer) {
    adw_preferences_group_add(group.as(), child.widget)
}

public func removeFromGroup(_ group: GPointer, _ child: GPointer) {
    adw_preferences_group_remove(group.as(), child.widget)
}

public func setVisible(_ widget: GPointer, _ visible: Bool) {
    gtk_widget_set_visible(widget.widget, visible ? CGTK_TRUE : CGTK_FALSE)
}

public func setSensitive(_ widget: GPointer, _ sensitive: Bool) {
    gtk_widget_set_sensitive(widget.widget, sensitive ? CGTK_TRUE : CGTK_FALSE)
}

public func switchIsOn(_ toggle: GPointer) -> Bool {
    gtk_switch_get_active(toggle.as()) != 0
}

public func setSwitch(_ toggle: GPointer, _ on: Bool) {
    gtk_switch_set_active(toggle.as(), on ? CGTK_TRUE : CGTK_FALSE)
}

public func editableText(_ editable: GPointer) -> String {
    gtk_editable_get_text(OpaquePointer(editable)).map { String(cString: $0) } ?? ""
}

public func setEditableText(_ editable: GPointer, _ text: String) {
    gtk_editable_set_text(OpaquePointer(editable), text)
}

/// Asks a question in a libadwaita message dialog; `answer` gets the id of
/// the response chosen (`cancel` when closed).
public func ask(parent: GPointer, heading: String, body: String,
                responses: [(id: String, label: String, destructive: Bool)], answer: @escaping (String) -> Void) {
    let dialog = cgtk_message_dialog(parent.as(), heading, body)!
    for response in responses {
        adw_message_dialog_add_response(dialog.raw.as(), response.id, response.label)
        if response.destructive {
            adw_message_dialog_set_response_appearance(dialog.raw.as(), response.id, ADW_RESPONSE_DESTRUCTIVE)
        }
    }
    adw_message_dialog_set_close_response(dialog.raw.as(), "cancel")
    adw_message_dialog_set_default_response(dialog.raw.as(), "cancel")
    onSignal(dialog.raw, "response") { id in
        answer(id.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "cancel")
    }
    gtk_window_present(dialog.raw.as())
}
