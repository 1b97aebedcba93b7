// SPDX-License-Identifier: Apache-2.0
import CGtk
import DBusKit
import GtkSupport
import TypedValues

/// While the app is open it confirms pairings: useractivity-handoffd calls
/// `RequestConfirmation(device, code)` here and the reply waits for the
/// person's answer in a dialog that shows the code.
final class PairingAgent {
    private let link: ServiceLink
    private let window: GPointer
    private let toaster: Toaster
    private let deviceName: (String) -> String
    private var pending: (call: Message, dialog: GPointer)?
    private var served = false

    init(link: ServiceLink, window: GPointer, toaster: Toaster, deviceName: @escaping (String) -> String) {
        self.link = link
        self.window = window
        self.toaster = toaster
        self.deviceName = deviceName
    }

    /// Serves the agent object (once) and registers it with the service
    /// (again after each restart of the service).
    func register() {
        if !served {
            do {
                try link.bus.registerFallback(path: HandoffNames.agentPath) { [weak self] message in
                    self?.handle(message) ?? false
                }
                served = true
            } catch {
                toaster.show(localized("Pairing requests cannot be shown:") + " \(error)")
                return
            }
        }
        link.call(HandoffNames.service, HandoffNames.managerPath, HandoffNames.manager, "RegisterAgent",
                  [.objectPath(HandoffNames.agentPath)]) { [weak self] result in
            if case .failure(let failure) = result {
                self?.toaster.show(localized("Pairing requests cannot be shown:") + " " + failure.explanation)
            }
        }
    }

    private func handle(_ message: Message) -> Bool {
        guard message.kind == .methodCall else { return false }
        // Only the Handoff service may ask; anyone else is told no.
        guard link.isOwner(message.sender, of: HandoffNames.service),
              message.path == HandoffNames.agentPath, message.interface == HandoffNames.agent || message.interface == nil else {
            link.bus.send(Message.error(to: message, name: "org.freedesktop.DBus.Error.AccessDenied",
                                        message: "only \(HandoffNames.service) may use this agent"))
            return true
        }
        switch message.member {
        case "RequestConfirmation":
            guard let values = try? message.argumentsClosingFileDescriptors(), values.count == 2,
                  let device = values[0].objectPathValue, let code = values[1].stringValue,
                  code.count == 6, code.allSatisfy(\.isASCII), code.allSatisfy(\.isNumber) else {
                link.bus.send(Message.error(to: message, name: "org.freedesktop.DBus.Error.InvalidArgs",
                                            message: "expected (o device, s six-digit code)"))
                return true
            }
            confirm(message, device: device, code: code)
        case "Cancel":
            if let pending {
                gtk_window_destroy(pending.dialog.as())
                self.pending = nil
                toaster.show(localized("The pairing request was cancelled or timed out."))
            }
            if let reply = try? Message.methodReturn(to: message) { link.bus.send(reply) }
        default:
            link.bus.send(Message.error(to: message, name: "org.freedesktop.DBus.Error.UnknownMethod",
                                        message: "no method \(message.member ?? "") here"))
        }
        return true
    }

    private func confirm(_ call: Message, device: String, code: String) {
        if let pending {
            // One request at a time: a newer one replaces the older, which is refused.
            refuse(pending.call, because: "another pairing request arrived")
            gtk_window_destroy(pending.dialog.as())
            self.pending = nil
        }
        let spaced = String(code.prefix(3)) + " " + String(code.suffix(3))
        let name = deviceName(device)
        let dialog = cgtk_message_dialog(window.as(), localizedFormat("Pair with %s?", name),
                                         localizedFormat("Confirm only if %s shows the same code:", name) + "\n\n\(spaced)")!.raw
        adw_message_dialog_set_body_use_markup(dialog.as(), CGTK_FALSE)
        adw_message_dialog_add_response(dialog.as(), "cancel", localized("_Cancel"))
        adw_message_dialog_add_response(dialog.as(), "confirm", localized("C_onfirm"))
        adw_message_dialog_set_response_appearance(dialog.as(), "confirm", ADW_RESPONSE_SUGGESTED)
        adw_message_dialog_set_default_response(dialog.as(), "cancel")
        adw_message_dialog_set_close_response(dialog.as(), "cancel")
        pending = (call, dialog)
        onSignal(dialog, "response") { [weak self] response in
            guard let self, let pending, pending.dialog == dialog else { return }
            self.pending = nil
            let answer = response.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "cancel"
            if answer == "confirm" {
                if let reply = try? Message.methodReturn(to: pending.call) { link.bus.send(reply) }
            } else {
                refuse(pending.call, because: "the person cancelled")
            }
        }
        gtk_window_present(dialog.as())
    }

    private func refuse(_ call: Message, because reason: String) {
        link.bus.send(Message.error(to: call, name: "org.example.UserActivity.Error.PairingRefused", message: reason))
    }
}
