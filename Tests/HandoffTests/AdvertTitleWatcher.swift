// SPDX-License-Identifier: Apache-2.0
import DBusKit
import TestSupport
import TypedValues

/// Follows the title of a device's `CurrentActivity` on the other stack's
/// bus: what the advert-latency measurements wait for.
final class AdvertTitleWatcher {
    private let connection: Connection
    private(set) var lastTitle = ""
    /// The titles the PropertiesChanged signals that carried CurrentActivity showed so far ("" for none).
    private(set) var titlesShown: [String] = []
    var currentActivitySignals: Int { titlesShown.count }

    init(busAddress: String, devicePath: String) throws {
        connection = try Connection.bus(address: busAddress)
        try connection.addMatch("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='\(devicePath)'")
        try connection.addFilter { [unowned self] message in
            guard message.member == "PropertiesChanged", let arguments = try? message.arguments(), arguments.count >= 2,
                  let activity = arguments[1].stringVariantEntries?.first(where: { $0.0 == "CurrentActivity" })?.1 else { return false }
            titlesShown.append(activity.stringVariantEntries?.first(where: { $0.0 == "title" })?.1.stringValue ?? "")
            if let title = activity.stringVariantEntries?.first(where: { $0.0 == "title" })?.1.stringValue {
                lastTitle = title
            }
            return false
        }
    }

    /// Whether the device showed `title` within `timeout` seconds.
    func waitForTitle(_ title: String, timeout: Double = 10) -> Bool {
        waitUntil(timeout: timeout, interval: 0) {
            connection.readWriteDispatch(timeoutMilliseconds: 5)
            return lastTitle == title
        }
    }

    func close() { connection.close() }
}
