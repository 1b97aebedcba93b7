// SPDX-License-Identifier: Apache-2.0
import CGtk
import GtkSupport

/// Installed apps as the desktop knows them (GIO's desktop entries): name and icon by app ID.
final class InstalledApps {
    struct App {
        let id: String
        let name: String
        let icon: OpaquePointer?
        let shown: Bool
    }
    /// Every installed app by ID, read once (GIO's list of desktop entries).
    private lazy var byID: [String: App] = {
        var apps: [String: App] = [:]
        var node = g_app_info_get_all()
        let head = node
        while let current = node {
            if let info = current.pointee.data, let rawID = g_app_info_get_id(OpaquePointer(info)) {
                var id = String(cString: rawID)
                if id.hasSuffix(".desktop") { id.removeLast(8) }
                let name = g_app_info_get_display_name(OpaquePointer(info)).map { String(cString: $0) } ?? id
                let icon = g_app_info_get_icon(OpaquePointer(info)).map { OpaquePointer(g_object_ref($0.raw)!) }
                apps[id] = App(id: id, name: name, icon: icon, shown: g_app_info_should_show(OpaquePointer(info)) != 0)
            }
            node = current.pointee.next
        }
        g_list_free_full(head) { g_object_unref($0) }
        return apps
    }()

    /// The app's name and icon; its ID and no icon when it is not installed.
    func app(_ id: String) -> App {
        byID[id] ?? App(id: id, name: id, icon: nil, shown: false)
    }

    /// Every app shown in menus, by name.
    func all() -> [App] {
        byID.values.filter(\.shown).sorted { $0.name.lowercased() < $1.name.lowercased() }
    }

    /// An image of the app's icon (a generic one when it has none).
    func image(_ id: String, pixelSize: Int32 = 32) -> GPointer {
        let image: UnsafeMutablePointer<GtkWidget>
        if let icon = app(id).icon {
            image = gtk_image_new_from_gicon(icon)
        } else {
            image = gtk_image_new_from_icon_name("application-x-executable")
        }
        gtk_image_set_pixel_size(image.raw.as(), pixelSize)
        return image.raw
    }

    func setImage(_ image: GPointer, _ id: String) {
        if let icon = app(id).icon {
            gtk_image_set_from_gicon(image.as(), icon)
        } else {
            gtk_image_set_from_icon_name(image.as(), "application-x-executable")
        }
    }
}

/// "Today 14:05", "Yesterday 09:12" or the date, in local time.
func whenText(microseconds: Int64) -> String {
    guard let time = g_date_time_new_from_unix_local(Int(microseconds / 1_000_000)) else { return "" }
    defer { g_date_time_unref(time) }
    let now = g_date_time_new_now_local()!
    defer { g_date_time_unref(now) }
    let days = (g_date_time_get_year(now) == g_date_time_get_year(time))
        ? Int(g_date_time_get_day_of_year(now) - g_date_time_get_day_of_year(time)) : 99
    let format: String
    switch days {
    case 0: format = localized("Today") + " %H:%M"
    case 1: format = localized("Yesterday") + " %H:%M"
    default: format = "%x %H:%M"
    }
    guard let text = g_date_time_format(time, format) else { return "" }
    defer { g_free(text) }
    return String(cString: text)
}
