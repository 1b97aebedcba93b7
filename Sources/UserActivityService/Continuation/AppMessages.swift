// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import DBusKit
import TypedValues
import UserActivityCore

/// The calls the service makes to apps, and how their failures are read.
enum AppMessages {
    static let applicationInterface = "org.freedesktop.Application"
    /// The GAction apps export for continuations (`(sa{sv})`: type, activity).
    static let continueAction = "continue-activity"

    /// `org.example.UserActivity.Handler.<member>` on a registered handler.
    static func handlerCall(_ handler: RegisteredHandler, _ member: String, _ arguments: [TypedValue]) throws -> Message {
        try Message.methodCall(destination: handler.connection, path: handler.path,
                               interface: Interfaces.handlerName, member: member, arguments: arguments)
    }

    /// `org.freedesktop.Application` object path of an app: `/` + app ID
    /// with `.` → `/` and `-` → `_` (`org.gnome.Text-Editor` → `/org/gnome/Text_Editor`).
    static func applicationPath(of app: String) -> String {
        "/" + String(app.map { $0 == "." ? "/" : $0 == "-" ? "_" : $0 })
    }

    /// `ActivateAction('continue-activity', [<(sa{sv})>], platform_data)` on
    /// the app's well-known name, auto-start allowed so that D-Bus activation
    /// starts it.
    ///
    /// GApplication takes the action's parameter as the `av`'s first element
    /// holding the value itself: exactly one variant around the structure.
    static func activateAction(app: String, activityType: String, activity: TypedValue,
                               platformData: TypedValue) throws -> Message {
        let message = Message.methodCall(destination: app, path: applicationPath(of: app),
                                         interface: applicationInterface, member: "ActivateAction")
        message.allowsAutoStart = true
        try message.append([
            .string(continueAction),
            .array(elementType: "v", [.variant(.structure([.string(activityType), activity]))]),
            platformData,
        ])
        return message
    }

    /// Error names that mean the app was never reached or never answered,
    /// as opposed to an answer of its own: those become
    /// `RemoteApplicationTimedOut` (and `FailedToContinue` when the app can
    /// still be told).
    static func isUnreachable(_ errorName: String) -> Bool {
        let prefix = "org.freedesktop.DBus.Error."
        guard errorName.hasPrefix(prefix) else { return false }
        let name = errorName.dropFirst(prefix.count)
        return name.hasPrefix("Spawn.") || [
            "NoReply", "ServiceUnknown", "NameHasNoOwner", "Disconnected", "TimedOut", "Timeout",
            "NoServer", "NoNetwork", "LimitsExceeded", "NoMemory",
        ].contains(String(name))
    }

    /// Errors a D-Bus library answers for an object, interface, method or
    /// signature the app does not have (GApplication: no suitable action).
    static func meansNoAction(_ errorName: String) -> Bool {
        [
            "org.freedesktop.DBus.Error.InvalidArgs", "org.freedesktop.DBus.Error.UnknownMethod",
            "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownInterface",
        ].contains(errorName)
    }
}
