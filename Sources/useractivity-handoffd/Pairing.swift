// SPDX-License-Identifier: Apache-2.0
import DBusKit
import HandoffCore
import UserActivityInterfaces

/// Pairing with another device: a person's `Device.Pair` and a request from
/// the other device, the code derived from the link, the person asked
/// through the registered Agent (else a notification), and the end of it
/// (paired, refused, timed out, cancelled, went away). The rules and
/// deadlines are ``PairingMachine``'s (HandoffCore); this is its glue to the
/// links, the Agent and the device objects. Unpairing too.
final class Pairing {
    let context: HandoffContext
    var machine = PairingMachine()
    /// The Agent registered with `RegisterAgent`: its unique name and object path.
    var agent: (sender: String, path: String)?

    init(context: HandoffContext) {
        self.context = context
    }

    /// The device a pairing is in progress with, if any.
    var peer: String? { machine.current?.peer }
    /// When the pairing in progress gives up.
    var deadline: Int64? { machine.current?.deadline }

    // MARK: The Agent

    func registerAgent(sender: String, path: String) {
        agent = (sender, path)
    }

    func unregisterAgent(sender: String, path: String?) {
        if agent?.sender == sender && agent?.path == path { agent = nil }
    }

    /// A bus name left: an Agent it registered is forgotten.
    func nameLeft(_ name: String) {
        if agent?.sender == name { agent = nil }
    }

    // MARK: Starting

    /// Device.Pair: `completion` runs when the pairing ends (``finish(_:reason:)``).
    func start(_ device: DeviceObject, completion: @escaping DeviceCompletion) {
        guard let link = device.link, device.reachable else {
            return completion(.failure(HandoffError("ConnectionUnavailable", "\(device.name) is not reachable")))
        }
        guard agent != nil || context.notifier?.isAvailable == true else {
            return completion(.failure(HandoffError("NoAgent", "no pairing agent is registered and no notification server is running")))
        }
        let code = pairingCode(link)
        do {
            _ = try machine.start(peer: device.id, code: code, initiatedLocally: true, discoverable: context.discoverable, now: context.now)
        } catch {
            return completion(.failure(HandoffError("PairingRefused", "\(error)")))
        }
        device.pairCompletion = completion
        link.send(Frame(.pairRequest, ["name": .string(context.state.deviceName)]))
        askPerson(device, code: code)
    }

    func receivedPairRequest(on link: PeerLink) {
        guard let device = context.devices[link.peerDeviceID] else { return }
        if device.paired {
            // It forgot us: only a fresh pairing helps; refuse so it says so.
            link.send(Frame(.pairConfirm, ["accepted": .boolean(false), "reason": .string("already paired")]))
            return
        }
        guard agent != nil || context.notifier?.isAvailable == true else {
            link.send(Frame(.pairConfirm, ["accepted": .boolean(false), "reason": .string("nobody can confirm pairing on that device")]))
            return
        }
        let code = pairingCode(link)
        do {
            _ = try machine.start(peer: device.id, code: code, initiatedLocally: false, discoverable: context.discoverable, now: context.now)
        } catch {
            context.log.info("pairing request from \(device.name) refused: \(error)")
            link.send(Frame(.pairConfirm, ["accepted": .boolean(false), "reason": .string("\(error)")]))
            return
        }
        askPerson(device, code: code)
    }

    func receivedPairConfirm(_ frame: Frame, on link: PeerLink) {
        let accepted = frame.bool("accepted") ?? false
        if let event = machine.answerRemotely(peer: link.peerDeviceID, accepted: accepted, now: context.now) {
            finish(event, reason: frame.string("reason"))
        }
    }

    func receivedPairCancel(on link: PeerLink) {
        if let event = machine.cancel(peer: link.peerDeviceID) { finish(event) }
    }

    private func pairingCode(_ link: PeerLink) -> String {
        PairingCode.derive(localKeyID: context.identity?.keyID ?? [], remoteKeyID: Array(Hex.decode(link.peerDeviceID) ?? []),
                           channelBinding: link.channelBinding)
    }

    private func askPerson(_ device: DeviceObject, code: String) {
        device.agentAsked = true
        let answer: (Bool) -> Void = { [weak self, weak device] accepted in
            guard let self, let device else { return }
            device.agentAsked = false
            guard self.machine.current?.peer == device.id else { return }
            device.link?.send(Frame(.pairConfirm, ["accepted": .boolean(accepted)]))
            if let event = self.machine.answerLocally(peer: device.id, accepted: accepted, now: self.context.now) {
                self.finish(event)
            }
        }
        if let agent {
            do {
                let message = try Message.methodCall(destination: agent.sender, path: agent.path, interface: HandoffInterfaces.agentName,
                                                     member: "RequestConfirmation", arguments: [.objectPath(device.path), .string(code)])
                context.bus.callAsync(message, timeoutMilliseconds: 60_000) { result in
                    if case .failure(let error) = result { self.context.log.info("agent refused pairing with \(device.name): \(error.name)") }
                    if case .success = result { answer(true) } else { answer(false) }
                }
            } catch {
                answer(false)
            }
        } else if let notifier = context.notifier {
            notifier.askPairing(deviceID: device.id, deviceName: device.name, code: code, answer: answer)
        } else {
            answer(false)
        }
    }

    // MARK: Ending

    /// The pairing in progress ran out of time.
    func expire(now: Int64) {
        if let event = machine.expire(now: now) { finish(event) }
    }

    /// The link to `id` closed: a pairing with it ends (ConnectionUnavailable).
    func peerWentAway(_ id: String, reason: String) {
        if let event = machine.peerWentAway(id) { finish(event, reason: reason) }
    }

    func finish(_ event: PairingEvent, reason: String? = nil) {
        let peer: String
        switch event {
        case .paired(let id), .refused(let id), .timedOut(let id), .cancelled(let id), .wentAway(let id): peer = id
        }
        guard let device = context.devices[peer] else { return }
        if device.agentAsked, let agent {
            device.agentAsked = false
            if let message = try? Message.methodCall(destination: agent.sender, path: agent.path, interface: HandoffInterfaces.agentName, member: "Cancel", arguments: []) {
                message.expectsReply = false
                context.bus.send(message)
            }
        }
        if case .cancelled = event { device.link?.send(Frame(.pairCancel)) }
        if case .timedOut = event { device.link?.send(Frame(.pairCancel)) }
        // The person's Pair call is answered with the change; a pairing the peer started emits it directly.
        let completion = device.pairCompletion ?? { [weak self, weak device] outcome in
            guard let self, let device, case .success(let changes) = outcome, !changes.changed.isEmpty else { return }
            self.context.emitDeviceChanged(device, changes.changed)
        }
        device.pairCompletion = nil
        let because = reason.map { ": \($0)" } ?? ""
        switch event {
        case .paired:
            device.paired = true
            device.link?.isPaired = true
            context.persistDevice(device)
            if let link = device.link { context.sendPairKeys(on: link, derive: true) }
            context.log.info("paired with \(device.name) (\(device.id))")
            completion(.success(DeviceChanges(changed: [.paired])))
            device.link?.send(Advert.frame(for: context.advertised))
        case .refused:   completion(.failure(HandoffError("PairingRefused", "pairing with \(device.name) was refused\(because)")))
        case .timedOut:  completion(.failure(HandoffError("PairingRefused", "nobody confirmed the pairing with \(device.name) in time")))
        case .cancelled: completion(.failure(HandoffError("PairingRefused", "the pairing with \(device.name) was cancelled")))
        case .wentAway:  completion(.failure(HandoffError("ConnectionUnavailable", "\(device.name) went away during the pairing\(because)")))
        }
    }

    /// Device.CancelPairing.
    func cancel(with device: DeviceObject) {
        if let event = machine.cancel(peer: device.id) { finish(event) }
    }

    // MARK: Unpairing

    /// Device.Unpair; returns what changed.
    func unpair(_ device: DeviceObject) -> [HandoffInterfaces.DeviceProperty] {
        if device.reachable {
            device.link?.send(Frame(.unpair))
        } else if !device.address.isEmpty {
            device.tellUnpair = true
        }
        return forget(device)
    }

    func receivedUnpair(on link: PeerLink) {
        guard let device = context.devices[link.peerDeviceID], device.paired else { return }
        context.log.info("\(device.name) unpaired this device")
        context.emitDeviceChanged(device, forget(device))
    }

    private func forget(_ device: DeviceObject) -> [HandoffInterfaces.DeviceProperty] {
        device.paired = false
        device.forgetAdvert()
        context.notifier?.withdraw(device.id)
        if device.tellUnpair { context.persistDevice(device) } else { context.state.devices[device.id] = nil; context.save() }
        device.link?.close(reason: "unpaired")
        // It still holds this device's resolving key: a new one, so it cannot follow the tokens from now on.
        context.replaceResolvingKey()
        return [.paired, .currentActivity]
    }
}
