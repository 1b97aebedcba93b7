// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport
import HandoffCore
import TypedValues
import UserActivityCore
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
    /// When its adverts arrived and the one waiting to be shown (``ActivityExchange``'s pacing).
    var advertPace = AdvertPace()
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
    /// The fetches this device made from here and that are not reported yet,
    /// by the random handoff id each reply gave: the activity fetched. Each
    /// may be reported continued (or failed) once, and nothing else may; the
    /// activity's own id is never enough.
    var handoffs: [String: String] = [:]

    /// A fetch of the activity `id` is answered: its handoff id, which one
    /// `continued` or `continue-failed` (and a stream) may name.
    func recordHandoff(of id: String) -> String {
        if handoffs.count >= HandoffLimits.maximumFetchesAwaitingAnswer { handoffs.removeAll() }
        let handoff = ContinuationTokenBook.randomValue()
        handoffs[handoff] = id
        return handoff
    }

    /// The activity a report naming `handoff` is about, if it answers a fetch (which then counts as answered).
    func takeHandoff(_ handoff: String) -> String? {
        handoffs.removeValue(forKey: handoff)
    }
    /// Its advert is no longer shown (unpaired, or its link closed): none waits to be shown either.
    func forgetAdvert() {
        advert = nil
        currentActivity = [:]
        advertPace.reset()
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

/// One device's adverts over time: when the last was shown, the latest
/// that arrived since and waits for the interval to end (with the timer
/// armed for it, only while one waits), and the recent arrivals that tell
/// a flood.
struct AdvertPace {
    var shownAt = Int64.min
    /// An advert waits (its activity, nil for "none").
    var isHolding = false
    var held: Advert?
    var timer: ScheduledWork?
    /// The last ``HandoffLimits/maximumAdvertsPerWindow`` arrival times, oldest at `oldest`.
    private var arrivals: [Int64] = []
    private var oldest = 0

    /// Records an arrival at `now`; whether it makes more than the limit within the window.
    mutating func arrivalFloods(at now: Int64) -> Bool {
        if arrivals.count < HandoffLimits.maximumAdvertsPerWindow {
            arrivals.append(now)
            return false
        }
        let floods = now - arrivals[oldest] < HandoffLimits.advertFloodWindowMicroseconds
        arrivals[oldest] = now
        oldest = (oldest + 1) % arrivals.count
        return floods
    }

    mutating func reset() {
        timer?.cancel()
        self = AdvertPace()
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
