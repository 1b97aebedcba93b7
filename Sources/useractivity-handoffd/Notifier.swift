// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport
import Logging
import TypedValues

/// Desktop notifications (`org.freedesktop.Notifications`): pairing
/// confirmation when no agent is registered, and "Continue “Title” from
/// DeviceName" offers.
final class Notifier {
    static let name = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"
    private let bus: Connection
    private let log: Logger
    /// The notification server's unique name: only its signals answer for
    /// the person (anyone on the bus may send `ActionInvoked`).
    private var serverOwner = ""
    var isAvailable: Bool { !serverOwner.isEmpty }
    /// Notification id → what its actions do.
    var actions: [UInt32: (String) -> Void] = [:]
    /// Device id → its "Continue" notification.
    private var offers: [String: UInt32] = [:]

    private let scheduler: Scheduler

    init(bus: Connection, log: Logger, scheduler: Scheduler) {
        self.bus = bus
        self.scheduler = scheduler
        self.log = log
    }

    func start() throws {
        try bus.addMatch("type='signal',interface='\(Self.name)'")
        try bus.addMatch("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.name)'")
        serverOwner = (try? bus.callBus("GetNameOwner", [.string(Self.name)]).first?.stringValue) ?? ""
    }

    func handle(_ message: Message) -> Bool {
        guard message.kind == .signal else { return false }
        if message.member == "NameOwnerChanged", message.sender == "org.freedesktop.DBus", let arguments = try? message.arguments(),
           arguments.count == 3, arguments[0].stringValue == Self.name {
            serverOwner = arguments[2].stringValue ?? ""
            return false
        }
        guard message.interface == Self.name, !serverOwner.isEmpty, message.sender == serverOwner, let arguments = try? message.arguments(),
              let id = arguments.first?.uint32Value else { return false }
        if message.member == "ActionInvoked", let key = arguments.dropFirst().first?.stringValue {
            // Answered: the notification has done its work (a server may keep it otherwise).
            guard let action = actions.removeValue(forKey: id) else { return false }
            offers = offers.filter { $0.value != id }
            close(id)
            action(key)
        } else if message.member == "NotificationClosed" {
            actions.removeValue(forKey: id)?("closed")
            offers = offers.filter { $0.value != id }
        }
        return false
    }

    func notify(replacing: UInt32, summary: String, body: String, actionList: [String],
                        completion: @escaping (UInt32?) -> Void) {
        let message = try? Message.methodCall(destination: Self.name, path: Self.path, interface: Self.name, member: "Notify", arguments: [
            .string("Handoff"), .uint32(replacing), .string("computer"), .string(summary), .string(body),
            .array(elementType: "s", actionList.map { .string($0) }), .stringVariantDictionary([]), .int32(-1),
        ])
        guard let message else { return completion(nil) }
        bus.callAsync(message, timeoutMilliseconds: 10_000) { [log] result in
            switch result {
            case .success(let reply): completion((try? reply.arguments())?.first?.uint32Value)
            case .failure(let error):
                log.info("notification failed: \(error.name)")
                completion(nil)
            }
        }
    }

    /// Asks to accept a pairing; `answer(false)` when declined, closed or it could not be shown.
    func askPairing(deviceID: String, deviceName: String, code: String, answer: @escaping (Bool) -> Void) {
        notify(replacing: 0, summary: "Pair with \(deviceName)?",
               body: "Accept only if \(deviceName) shows the code \(code).", actionList: ["accept", "Accept", "decline", "Decline"]) { [weak self] id in
            guard let self, let id else { return answer(false) }
            self.actions[id] = { key in answer(key == "accept") }
        }
    }

    /// An offer waiting to be shown: the latest state of a device wins.
    private struct Offer {
        let title: String
        let deviceName: String
        let action: () -> Void
    }

    /// At most one Notify per device in flight, and this long between two:
    /// a device that advertises a thousand times a second updates its one
    /// notification a few times a second, with its latest activity.
    static let minimumIntervalMicroseconds: Int64 = 250_000
    private var pending: [String: Offer] = [:]
    private var inFlight: Set<String> = []
    private var withdrawnInFlight: Set<String> = []
    private var nextAllowed: [String: Int64] = [:]
    private var timers: [String: ScheduledWork] = [:]

    /// Shows or updates the offer to continue a device's activity (one
    /// notification per device, replaced in place).
    func offerContinue(deviceID: String, title: String, deviceName: String, action: @escaping () -> Void) {
        pending[deviceID] = Offer(title: title, deviceName: deviceName, action: action)
        withdrawnInFlight.remove(deviceID)
        showPending(deviceID)
    }

    private func showPending(_ deviceID: String) {
        guard let offer = pending[deviceID], !inFlight.contains(deviceID) else { return }
        let now = scheduler.monotonic
        if let allowed = nextAllowed[deviceID], now < allowed {
            if timers[deviceID]?.isPending != true {
                timers[deviceID] = scheduler.after(milliseconds: UInt32(clamping: (allowed - now + 999) / 1000)) { [weak self] in
                    self?.timers[deviceID] = nil
                    self?.showPending(deviceID)
                }
            }
            return
        }
        pending[deviceID] = nil
        inFlight.insert(deviceID)
        nextAllowed[deviceID] = now + Self.minimumIntervalMicroseconds
        notify(replacing: offers[deviceID] ?? 0, summary: "Continue “\(offer.title)” from \(offer.deviceName)", body: "",
               actionList: ["default", "Continue", "continue", "Continue"]) { [weak self] id in
            guard let self else { return }
            self.inFlight.remove(deviceID)
            guard let id else { return self.showPending(deviceID) }
            if self.withdrawnInFlight.remove(deviceID) != nil {
                self.close(id)
                return
            }
            self.offers[deviceID] = id
            self.actions[id] = { key in if key == "continue" || key == "default" { offer.action() } }
            self.showPending(deviceID)
        }
    }

    func withdraw(_ deviceID: String) {
        pending[deviceID] = nil
        timers.removeValue(forKey: deviceID)?.cancel()
        if inFlight.contains(deviceID) { withdrawnInFlight.insert(deviceID) }
        guard let id = offers.removeValue(forKey: deviceID) else { return }
        actions[id] = nil
        close(id)
    }

    func close(_ id: UInt32) {
        if let message = try? Message.methodCall(destination: Self.name, path: Self.path, interface: Self.name,
                                                 member: "CloseNotification", arguments: [.uint32(id)]) {
            message.expectsReply = false
            bus.send(message)
        }
    }
}
