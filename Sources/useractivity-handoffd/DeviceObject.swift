// SPDX-License-Identifier: Apache-2.0
import DBusKit
import HandoffCore
import TypedValues
import UserActivityInterfaces

/// What a device method's handler did: its reply, and the properties it
/// changed (emitted right after the reply, in the same step).
struct DeviceChanges {
    var reply: [TypedValue] = []
    var changed: [HandoffInterfaces.DeviceProperty] = []
}

/// A handler's outcome, given when the call is answered (at once, or when a
/// pairing or a fetch from the device ends).
typealias DeviceCompletion = (Result<DeviceChanges, HandoffError>) -> Void

/// One nearby or paired device and its D-Bus object
/// (`org.example.UserActivity.Handoff.Device` at `…/device/<DeviceId>`): its
/// state, and its properties as one exhaustive table. Its methods' table is
/// ``HandoffDaemon/handle(_:on:_:completion:)``.
final class DeviceObject {
    let id: String
    var name = ""
    var address = ""
    var paired = false
    /// Unpaired here while unreachable: tell it when it comes back.
    var tellUnpair = false
    var link: PeerLink?
    var currentActivity: [String: TypedValue] = [:]
    /// The device's advert, as it arrived (the one type from the origin's
    /// useractivityd to this object's CurrentActivity).
    var advert: Advert?
    /// The person's Device.Pair call, answered when pairing ends.
    var pairCompletion: DeviceCompletion?
    var agentAsked = false
    var fetches: [UInt32: (Result<Frame, HandoffError>) -> Void] = [:]
    /// When each fetch gives up on an origin that keeps the link up but never answers.
    var fetchDeadlines: [UInt32: Int64] = [:]
    var reconnectAt: Int64 = 0
    /// Paired or kept across restarts at some point (then its object stays
    /// after unpairing); otherwise a transient key whose object goes with its link.
    var wasKept = false
    /// Activities this device fetched from here, with how many fetches are
    /// unanswered: each fetch may be reported continued (or failed) once,
    /// and nothing else may.
    var fetchedFromHere: [String: Int] = [:]

    /// A fetch of `id` was answered: one `continued` or `continue-failed` may follow.
    func recordFetch(_ id: String) {
        if fetchedFromHere[id] == nil && fetchedFromHere.count >= HandoffLimits.maximumFetchesAwaitingAnswer { fetchedFromHere.removeAll() }
        fetchedFromHere[id, default: 0] += 1
    }

    /// Whether a report about `id` answers a fetch (and counts it as answered).
    func takeFetch(_ id: String) -> Bool {
        guard let count = fetchedFromHere[id] else { return false }
        fetchedFromHere[id] = count > 1 ? count - 1 : nil
        return true
    }
    var path: String { HandoffInterfaces.devicePathPrefix + id }
    var reachable: Bool { link?.helloReceived == true && link?.isClosed == false }
    init(id: String) { self.id = id }

    /// The property table.
    func value(of property: HandoffInterfaces.DeviceProperty) -> TypedValue {
        switch property {
        case .name:            .string(name)
        case .deviceID:        .string(id)
        case .address:         .string(address)
        case .paired:          .boolean(paired)
        case .reachable:       .boolean(reachable)
        case .currentActivity: .stringVariantDictionary(currentActivity.sorted { $0.key < $1.key })
        }
    }

    func properties(_ which: [HandoffInterfaces.DeviceProperty] = HandoffInterfaces.DeviceProperty.allCases) -> [(String, TypedValue)] {
        which.map { ($0.name, value(of: $0)) }
    }

    /// Its interface and properties, as ObjectManager gives them.
    func interfacesAndProperties() -> TypedValue {
        .dictionary(keyType: "s", valueType: "a{sv}", [.init(key: .string(HandoffInterfaces.deviceName), value: .stringVariantDictionary(properties()))])
    }
}

extension HandoffDaemon {
    /// The device object's method table: each method of the interface and its
    /// handler (an exhaustive `switch`). Handlers decode, call the core and
    /// say what changed; ``finish(_:on:_:)`` replies and emits.
    func handle(_ method: HandoffInterfaces.Device, on device: DeviceObject, _ arguments: [TypedValue], completion: @escaping DeviceCompletion) {
        switch method {
        case .pair:             device.paired ? completion(.success(DeviceChanges())) : pairing.start(device, completion: completion)
        case .cancelPairing:    pairing.cancel(with: device); completion(.success(DeviceChanges()))
        case .unpair:           completion(device.paired ? .success(DeviceChanges(changed: pairing.unpair(device)))
                                                         : .failure(HandoffError("NotPaired", "\(device.name) is not paired")))
        case .continueActivity: exchange.continueActivity(on: device, options: arguments[0].stringVariantEntries ?? []) { completion($0.map { DeviceChanges(reply: [.string($0)]) }) }
        }
    }

    /// The one step after a device method: the reply, then the signal of what changed.
    func finish(_ call: Message, on device: DeviceObject, _ outcome: Result<DeviceChanges, HandoffError>) {
        switch outcome {
        case .success(let changes):
            context.reply(call, changes.reply)
            if !changes.changed.isEmpty { context.emitDeviceChanged(device, changes.changed) }
        case .failure(let error):
            context.reply(call, error: error)
        }
    }
}
