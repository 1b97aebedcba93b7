// SPDX-License-Identifier: Apache-2.0
import CGtk
import DBusKit
import GLibSupport
import GtkSupport
import TypedValues

enum HandoffNames {
    static let service = "org.example.UserActivity.Handoff"
    static let managerPath = "/org/example/UserActivity/Handoff"
    static let manager = "org.example.UserActivity.Handoff"
    static let device = "org.example.UserActivity.Handoff.Device"
    static let devicePathPrefix = "/org/example/UserActivity/Handoff/device/"
    static let agent = "org.example.UserActivity.Handoff.Agent"
    static let agentPath = "/org/example/UserActivity/Settings/PairingAgent"
}

/// Handoff on/off, this device's name and visibility, and the nearby and
/// paired devices with what each is doing.
final class HandoffPage {
    let page: GPointer
    private let link: ServiceLink
    private let window: GPointer
    private let toaster: Toaster
    private var notice: UnavailableNotice!

    private let enabledRow: (row: GPointer, toggle: GPointer)
    private var enabledHandler: UInt = 0
    private let nameRow: GPointer
    private let nameEntry: GPointer
    private let discoverableRow: (row: GPointer, toggle: GPointer)
    private var discoverableHandler: UInt = 0
    private let notifyRow: (row: GPointer, toggle: GPointer)
    private var notifyHandler: UInt = 0
    private let devicesGroup: GPointer
    private let noDevicesRow: GPointer
    private var devices: [String: DeviceRow] = [:]
    private var properties: [String: TypedValue] = [:]
    private var discoverableUntil: Int64?
    private var countdown: GLibSource?
    private var agent: PairingAgent!

    let apps: InstalledApps

    init(link: ServiceLink, window: GPointer, toaster: Toaster, apps: InstalledApps) {
        self.apps = apps
        self.link = link
        self.window = window
        self.toaster = toaster
        page = preferencesPage(localized("_Handoff"), iconName: "preferences-system-sharing-symbolic")

        let general = preferencesGroup(localized("Handoff"),
                                       description: localized("Continue on this computer what you were doing on your other computers, and the reverse."))
        // TRANSLATORS: the page tab is "_Handoff" too; the switch takes another letter.
        enabledRow = switchRow(localized("Han_doff"), subtitle: localized("Share what you are doing with your paired devices"))
        var apply: (String, TypedValue) -> Void = { _, _ in }
        let name = entryRow(localized("Device _name")) { entry in apply("DeviceName", .string(editableText(entry))) }
        nameRow = name.row
        nameEntry = name.entry
        discoverableRow = switchRow(localized("_Visible to nearby devices"), subtitle: localized("Lets a nearby device ask to pair"))
        notifyRow = switchRow(localized("Notify _when an activity can be continued"))
        for row in [enabledRow.row, nameRow, discoverableRow.row, notifyRow.row] { addToGroup(general, row) }

        devicesGroup = preferencesGroup(localized("Devices"),
                                        description: localized("Nearby and paired computers. Pairing shows a code on both; confirm it only when they match."))
        noDevicesRow = actionRow(localized("No devices found"), subtitle: localized("Turn Handoff on here and on your other computer."))
        addToGroup(devicesGroup, noDevicesRow)
        var connect: (GPointer) -> Void = { _ in }
        let addressRow = entryRow(localized("Connect by _address")) { entry in connect(entry) }.row
        let advanced = preferencesGroup(localized("Other networks"),
                                        description: localized("Where devices cannot find each other, connect to one by its address."))
        addToGroup(advanced, addressRow)

        notice = UnavailableNotice { [unowned self] in load() }
        for group in [notice.group, general, devicesGroup, advanced] { addGroup(page, group) }

        enabledHandler = onSignal(enabledRow.toggle, "notify::active") { [unowned self] _ in
            set("Enabled", .boolean(switchIsOn(enabledRow.toggle)))
        }
        discoverableHandler = onSignal(discoverableRow.toggle, "notify::active") { [unowned self] _ in
            set("Discoverable", .boolean(switchIsOn(discoverableRow.toggle)))
        }
        notifyHandler = onSignal(notifyRow.toggle, "notify::active") { [unowned self] _ in
            set("NotifyContinuable", .boolean(switchIsOn(notifyRow.toggle)))
        }
        apply = { [unowned self] property, value in set(property, value) }
        connect = { [unowned self] addressEntry in
            let address = editableText(addressEntry)
            link.call(HandoffNames.service, HandoffNames.managerPath, HandoffNames.manager, "AddPeer", [.string(address)],
                      timeoutMilliseconds: 60_000) { [weak self] result in
                switch result {
                case .success: setEditableText(addressEntry, "")
                case .failure(let failure): self?.toaster.show(localizedFormat("Could not connect to %s: %s", address, failure.explanation))
                }
            }
        }

        agent = PairingAgent(link: link, window: window, toaster: toaster) { [unowned self] path in
            devices[path]?.name ?? localized("another device")
        }
        link.follow(HandoffNames.service, signals: { [weak self] message in self?.handle(message) },
                    ownerChanged: { [weak self] running in
                        // A restarted service knows nobody: read everything again and register again.
                        if running { self?.load() } else { self?.notice.show(localized("The Handoff service stopped.")) }
                    })
        load()
    }

    private func set(_ property: String, _ value: TypedValue) {
        link.set(HandoffNames.service, HandoffNames.managerPath, HandoffNames.manager, property, value) { [weak self] failure in
            guard let self, let failure else { return }
            toaster.show(localized("Could not change the setting:") + " " + failure.explanation)
            load()
        }
    }

    private func load() {
        link.getAll(HandoffNames.service, HandoffNames.managerPath, HandoffNames.manager) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let values):
                notice.show(nil)
                setSensitive(page, true)
                apply(values)
                agent.register()
                loadDevices()
            case .failure(let failure):
                notice.show(localized("Handoff is not available.") + " " + failure.explanation)
            }
        }
    }

    private func loadDevices() {
        link.call(HandoffNames.service, HandoffNames.managerPath, ServiceLink.objectManagerInterface, "GetManagedObjects") { [weak self] result in
            guard let self, case .success(let values) = result, case .dictionary(_, _, let entries)? = values.first else { return }
            var seen = Set<String>()
            for entry in entries {
                guard let path = entry.key.objectPathValue, path.hasPrefix(HandoffNames.devicePathPrefix),
                      let interfaces = entry.value.stringVariantEntries ?? dictionaryEntries(entry.value),
                      let device = interfaces.first(where: { $0.0 == HandoffNames.device }) else { continue }
                seen.insert(path)
                updateDevice(path, dictionaryEntries(device.1) ?? [])
            }
            for path in devices.keys where !seen.contains(path) { removeDevice(path) }
        }
    }

    private func apply(_ values: [String: TypedValue]) {
        properties.merge(values) { $1 }
        if let on = values["Enabled"]?.boolValue {
            withSignalBlocked(enabledRow.toggle, enabledHandler) { setSwitch(enabledRow.toggle, on) }
            for row in [nameRow, discoverableRow.row, notifyRow.row] { setSensitive(row, on) }
        }
        if let name = values["DeviceName"]?.stringValue, name != editableText(nameEntry) {
            setEditableText(nameEntry, name)
        }
        if let on = values["NotifyContinuable"]?.boolValue {
            withSignalBlocked(notifyRow.toggle, notifyHandler) { setSwitch(notifyRow.toggle, on) }
        }
        if let on = values["Discoverable"]?.boolValue {
            withSignalBlocked(discoverableRow.toggle, discoverableHandler) { setSwitch(discoverableRow.toggle, on) }
            let timeout = Int64(properties["DiscoverableTimeout"]?.uint32Value ?? 0)
            discoverableUntil = on && timeout > 0 ? currentTimeMicroseconds() + timeout * 1_000_000 : nil
            showTimeLeft()
        }
        if let reason = values["IdentityError"]?.stringValue, !reason.isEmpty {
            toaster.show(localized("This device's key cannot be used:") + " " + reason)
        }
    }

    /// "Visible for 1:45 more", counting down once a second while visible.
    private func showTimeLeft() {
        countdown?.cancel()
        countdown = nil
        guard let until = discoverableUntil else {
            adw_action_row_set_subtitle(discoverableRow.row.as(),
                                        switchIsOn(discoverableRow.toggle) ? localized("Visible until turned off")
                                                                          : localized("Lets a nearby device ask to pair"))
            return
        }
        let tick = { [unowned self] () -> Bool in
            let left = max(0, (until - currentTimeMicroseconds()) / 1_000_000)
            let text = localizedFormat("Visible for %s more", "\(left / 60):" + (left % 60 < 10 ? "0" : "") + "\(left % 60)")
            adw_action_row_set_subtitle(discoverableRow.row.as(), text)
            return left > 0
        }
        if tick() { countdown = link.loop.every(milliseconds: 1000, tick) }
    }

    private func handle(_ message: Message) {
        if let change = message.changedProperties {
            if message.path == HandoffNames.managerPath, change.interface == HandoffNames.manager {
                apply(change.values)
            } else if let path = message.path, path.hasPrefix(HandoffNames.devicePathPrefix), change.interface == HandoffNames.device {
                updateDevice(path, change.values.map { ($0.key, $0.value) })
            }
            return
        }
        guard message.interface == ServiceLink.objectManagerInterface,
              let values = try? message.argumentsClosingFileDescriptors(),
              let path = values.first?.objectPathValue, path.hasPrefix(HandoffNames.devicePathPrefix) else { return }
        switch message.member {
        case "InterfacesAdded":
            if values.count == 2, let interfaces = dictionaryEntries(values[1]),
               let device = interfaces.first(where: { $0.0 == HandoffNames.device }) {
                updateDevice(path, dictionaryEntries(device.1) ?? [])
            }
        case "InterfacesRemoved":
            removeDevice(path)
        default:
            break
        }
    }

    private func updateDevice(_ path: String, _ values: [(String, TypedValue)]) {
        let row: DeviceRow
        if let existing = devices[path] {
            row = existing
        } else {
            row = DeviceRow(path: path, page: self)
            devices[path] = row
            addToGroup(devicesGroup, row.row)
        }
        row.update(Dictionary(values.map { ($0.0, $0.1.unwrappedVariant) }, uniquingKeysWith: { $1 }))
        setVisible(noDevicesRow, devices.isEmpty)
    }

    private func removeDevice(_ path: String) {
        guard let row = devices.removeValue(forKey: path) else { return }
        removeFromGroup(devicesGroup, row.row)
        setVisible(noDevicesRow, devices.isEmpty)
    }

    // MARK: What a device row asks for

    func pair(_ row: DeviceRow) {
        toaster.show(localizedFormat("Pairing with %s…", row.name))
        link.call(HandoffNames.service, row.path, HandoffNames.device, "Pair", timeoutMilliseconds: 120_000) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success: toaster.show(localizedFormat("Paired with %s", row.name))
            case .failure(let failure): toaster.show(pairingFailure(failure, device: row.name))
            }
        }
    }

    func forget(_ row: DeviceRow) {
        ask(parent: window, heading: localizedFormat("Forget %s?", row.name),
            body: localized("The devices will have to pair again to hand off activities."),
            responses: [("cancel", localized("_Cancel"), false), ("forget", localized("_Forget"), true)]) { [weak self] answer in
            guard answer == "forget", let self else { return }
            link.call(HandoffNames.service, row.path, HandoffNames.device, "Unpair") { [weak self] result in
                if case .failure(let failure) = result { self?.toaster.show(localized("Could not forget the device:") + " " + failure.explanation) }
            }
        }
    }

    func continueActivity(_ row: DeviceRow) {
        link.call(HandoffNames.service, row.path, HandoffNames.device, "ContinueActivity",
                  [.stringVariantDictionary([])], timeoutMilliseconds: 60_000) { [weak self] result in
            switch result {
            case .success(let values):
                let app = values.first?.stringValue ?? ""
                self?.toaster.show(app.isEmpty ? localized("Continued") : localizedFormat("Continued in %s", app))
            case .failure(let failure):
                self?.toaster.show(localized("Could not continue:") + " " + failure.explanation)
            }
        }
    }

    private func pairingFailure(_ failure: DBusFailure, device: String) -> String {
        let reason: String
        switch failure.name {
        case "org.example.UserActivity.Error.PairingRefused": reason = localized("it was refused or cancelled")
        case "org.example.UserActivity.Error.ConnectionUnavailable": reason = localized("the device cannot be reached")
        case "org.example.UserActivity.Error.NoAgent": reason = localized("nobody could confirm the code")
        default: reason = failure.explanation
        }
        let detail = failure.message.isEmpty || failure.explanation != failure.message ? "" : " (\(failure.message))"
        return localizedFormat("Pairing with %s failed: %s", device, reason + detail)
    }
}

/// One device: its name, whether it is paired and reachable, what it is doing.
final class DeviceRow {
    let path: String
    let row: GPointer
    private(set) var name = ""
    private var values: [String: TypedValue] = [:]
    private let continueButton: GPointer
    private let pairButton: GPointer
    private let forgetButton: GPointer
    private unowned let page: HandoffPage

    init(path: String, page: HandoffPage) {
        self.path = path
        self.page = page
        row = actionRow(localized("Device"))
        // The title is the name the device gives itself: its underscores are text.
        adw_preferences_row_set_use_underline(row.as(), CGTK_FALSE)
        adw_action_row_add_prefix(row.as(), gtk_image_new_from_icon_name("computer-symbolic"))
        continueButton = button(localized("C_ontinue"), cssClasses: ["suggested-action"]) {}
        pairButton = button(localized("Pa_ir")) {}
        forgetButton = button(localized("_Forget")) {}
        for widget in [continueButton, pairButton, forgetButton] { adw_action_row_add_suffix(row.as(), widget.widget) }
        onSignal(continueButton, "clicked") { [unowned self, unowned page] in page.continueActivity(self) }
        onSignal(pairButton, "clicked") { [unowned self, unowned page] in page.pair(self) }
        onSignal(forgetButton, "clicked") { [unowned self, unowned page] in page.forget(self) }
    }

    func update(_ changed: [String: TypedValue]) {
        values.merge(changed) { $1 }
        name = values["Name"]?.stringValue ?? ""
        if name.isEmpty { name = String((values["DeviceId"]?.stringValue ?? "").prefix(12)) }
        let paired = values["Paired"]?.boolValue ?? false
        let reachable = values["Reachable"]?.boolValue ?? false
        adw_preferences_row_set_title(row.as(), name)
        var lines = [(paired ? localized("Paired") : localized("Not paired")) + " · "
                     + (reachable ? localized("Reachable") : localized("Not reachable"))]
        let activity = Dictionary((values["CurrentActivity"].flatMap(dictionaryEntries) ?? []).map { ($0.0, $0.1.unwrappedVariant) },
                                  uniquingKeysWith: { $1 })
        let title = activity["title"]?.stringValue ?? ""
        let appID = activity["app-id"]?.stringValue ?? ""
        let app = appID.isEmpty ? "" : page.apps.app(appID).name
        if !title.isEmpty || !app.isEmpty {
            lines.append(localizedFormat("Now: %s", (title.isEmpty ? localized("Untitled") : title) + (app.isEmpty ? "" : " — \(app)")))
        }
        adw_action_row_set_subtitle(row.as(), lines.joined(separator: "\n"))
        adw_action_row_set_subtitle_lines(row.as(), 3)
        setVisible(continueButton, paired && reachable && (activity["continuable"]?.boolValue ?? false))
        if !title.isEmpty { cgtk_accessible_label(continueButton, localizedFormat("Continue %s", title)) }
        setVisible(pairButton, !paired)
        setVisible(forgetButton, paired)
    }
}

/// The entries of an `a{sv}` or `a{sa{sv}}` value, variants unwrapped.
func dictionaryEntries(_ value: TypedValue) -> [(String, TypedValue)]? {
    guard case .dictionary(_, _, let entries) = value.unwrappedVariant else { return nil }
    return entries.compactMap { entry in entry.key.stringValue.map { ($0, entry.value.unwrappedVariant) } }
}
