// SPDX-License-Identifier: Apache-2.0
import HandoffCore

/// What this device shows on the network while it is not Discoverable: a
/// rotating token in DNS-SD and a throwaway certificate in TLS, both
/// replaced at each start and every ``PrivacyRotation/intervalSeconds``.
final class NetworkDisguise {
    /// The certificate shown to a connection whose peer has not proved it is paired.
    private(set) var certificate: GObjectRef?
    private(set) var keyID: [UInt8] = []
    /// The `r` TXT value.
    private(set) var token = ""
    var rotation = PrivacyRotation()

    func rotate(resolvingKey: [UInt8], now: Int64) throws {
        let ephemeral = try DeviceIdentity.generateEphemeral()
        certificate = try tlsCertificate(pem: ephemeral.certificatePEM + ephemeral.keyPEM)
        keyID = ephemeral.keyID
        token = ResolvableToken.make(resolvingKey: resolvingKey)
        rotation.rotated(now: now)
    }

    func stop() {
        rotation.stop()
        certificate = nil
        keyID = []
        token = ""
    }
}

/// The pairing secrets (docs/handoff.md, "Privacy on the network").
extension HandoffContext {
    /// The hello's `version`: 2 knows ``FrameKind/pairKeys`` and the proof;
    /// a device of version 1 would drop the link on a frame kind it does not know.
    static let protocolVersion: UInt32 = 2

    /// Makes this device's resolving key on first use.
    func ensureResolvingKey() {
        guard state.resolvingKey.count != LinkProof.secretBytes else { return }
        state.resolvingKey = SecureRandom.bytes(LinkProof.secretBytes)
        save()
    }

    /// The pair's secret, when there is one.
    func linkSecret(of id: String) -> [UInt8]? {
        guard let secret = state.devices[id]?.linkSecret, secret.count == LinkProof.secretBytes else { return nil }
        return secret
    }

    /// Devices whose token or proof this device may recognise: paired, or
    /// to be told they were unpaired.
    var recognisable: [KnownDevice] {
        state.devices.values.filter { $0.paired || $0.tellUnpair }
    }

    /// The device a DNS-SD token belongs to (this one's own included), or nil.
    func resolveToken(of found: DiscoveryDecision.Found) -> String? {
        guard let token = found.token else { return nil }
        var candidates = recognisable.filter { !$0.resolvingKey.isEmpty }.map { (id: $0.id, resolvingKey: $0.resolvingKey) }
        if let own = identity?.deviceID { candidates.append((own, state.resolvingKey)) }
        return ResolvableToken.resolve(token, candidates: candidates)
    }

    /// Gives the paired device on `link` this device's resolving key; with
    /// `derive`, both ends take this link's exporter as the pair's secret.
    func sendPairKeys(on link: PeerLink, derive: Bool) {
        let id = link.peerDeviceID
        guard link.peerVersion >= 2, var known = state.devices[id], state.resolvingKey.count == LinkProof.secretBytes,
              let key = Hex.decode(id) else { return }
        if derive {
            known.linkSecret = LinkProof.linkSecret(channelBinding: link.channelBinding, localKeyID: identity?.keyID ?? [], remoteKeyID: key)
            state.devices[id] = known
            save()
        }
        link.sentPairKeys = true
        link.send(Frame(.pairKeys, ["resolving-key": .bytes(state.resolvingKey), "derive": .boolean(derive)]))
    }

    func receivedPairKeys(_ frame: Frame, on link: PeerLink) {
        let id = link.peerDeviceID
        guard let device = devices[id], device.paired, var known = state.devices[id], let key = Hex.decode(id) else { return }
        guard let resolvingKey = frame.bytes("resolving-key"), resolvingKey.count == LinkProof.secretBytes else {
            return link.close(reason: "\(link.address) sent a malformed resolving key: disconnected")
        }
        let before = known
        known.resolvingKey = resolvingKey
        if frame.bool("derive") == true {
            known.linkSecret = LinkProof.linkSecret(channelBinding: link.channelBinding, localKeyID: identity?.keyID ?? [], remoteKeyID: key)
        }
        // Sent at every link-up: written only when it says something new.
        if known != before {
            state.devices[id] = known
            save()
        }
        if !link.sentPairKeys { sendPairKeys(on: link, derive: false) }
    }

    /// After the hellos on a link to a paired device: it is given this
    /// device's resolving key (which changes when a device is unpaired); a
    /// pair from before secrets were exchanged gets them now, over its pinned keys.
    func exchangeSecrets(on link: PeerLink) {
        guard devices[link.peerDeviceID]?.paired == true, !link.sentPairKeys, link.peerVersion >= 2 else { return }
        let missing = linkSecret(of: link.peerDeviceID) == nil
        if missing { log.info("giving \(link.address) the secrets that let paired devices find each other without showing their keys") }
        sendPairKeys(on: link, derive: missing)
    }

    /// A device was unpaired: it keeps the resolving key it was given, so
    /// this device takes a new one, gives it to the paired devices it is
    /// linked with (the others get it at their next link), and publishes a
    /// token made with it.
    func replaceResolvingKey() {
        state.resolvingKey = SecureRandom.bytes(LinkProof.secretBytes)
        save()
        for device in devices.values where device.paired {
            guard let link = device.link, link.helloReceived else { continue }
            sendPairKeys(on: link, derive: false)
        }
        onResolvingKeyReplaced()
    }
}

/// The proof on links where neither end showed its long-lived key.
extension PeerLinks {
    /// Makes this device's resolving key on first use and a new disguise.
    func startDisguise() throws {
        context.ensureResolvingKey()
        try disguise.rotate(resolvingKey: context.state.resolvingKey, now: context.now)
    }

    /// Called from the timer: a new token and certificate once the interval
    /// is over; true when the token changed (to be published).
    func rotateDisguiseIfDue() -> Bool {
        guard disguise.rotation.isDue(now: context.now) else { return false }
        do {
            try disguise.rotate(resolvingKey: context.state.resolvingKey, now: context.now)
            return true
        } catch {
            // The old ones stay until the next try: better than showing the long-lived key.
            context.log.error("cannot make a new certificate for strangers: \(error)")
            disguise.rotation.rotated(now: context.now, intervalSeconds: 60)
            return false
        }
    }

    /// What an incoming connection is shown: the long-lived certificate only
    /// while Discoverable (pairing needs it), the disguise otherwise.
    var certificateForStrangers: (certificate: GObjectRef, ephemeral: Bool)? {
        if !context.discoverable, let ephemeral = disguise.certificate { return (ephemeral, true) }
        return certificate.map { ($0, false) }
    }

    /// How to dial a known device: proving the pair's secret behind the
    /// disguise when there is one, else with the long-lived key, accepting
    /// only the device's own.
    func prepareDial(_ link: PeerLink, to device: DeviceObject?) -> GObjectRef? {
        guard let device, device.paired || device.tellUnpair else { return certificate }
        if context.linkSecret(of: device.id) != nil, let ephemeral = disguise.certificate {
            link.provingTo = device.id
            return ephemeral
        }
        link.expectedKeyID = Hex.decode(device.id)
        return certificate
    }

    /// Right after the TLS handshake. True when the link is in a proof
    /// phase and must say nothing else yet; false for the pinned-key path.
    func beginProofPhase(_ link: PeerLink) -> Bool {
        switch link.role {
        case .client:
            guard let target = link.provingTo, let secret = context.linkSecret(of: target) else { return false }
            link.awaitingProof = true
            context.log.info("proving to \(link.address) that this is a device it paired with")
            link.send(Frame(.proof, ["mac": .bytes(LinkProof.client(linkSecret: secret, channelBinding: link.channelBinding))]))
            return true
        case .server:
            let id = link.peerDeviceID
            if context.devices[id]?.paired == true || context.devices[id]?.tellUnpair == true { return false }
            // Shown the disguise: nothing, not even a hello, before a proof.
            guard link.showedEphemeralCertificate else { return false }
            link.awaitingProof = true
            return true
        }
    }

    /// A frame on a link still in its proof phase: only the proof steps pass.
    func receivedDuringProof(_ frame: Frame, on link: PeerLink) {
        switch (link.role, frame.kind) {
        case (.server, .proof): receivedProof(frame, on: link)
        case (.client, .proofAccepted): receivedProofAccepted(frame, on: link)
        // A Discoverable device says hello before it knows who connected; it says it again after the proof.
        case (.client, .hello): break
        default: link.close(reason: "\(link.address) sent a \(frame.kind) frame before proving it is paired: disconnected")
        }
    }

    /// Server side: the client's proof, as its first frame.
    func receivedProof(_ frame: Frame, on link: PeerLink) {
        guard link.role == .server, !link.helloReceived, !link.isProven, context.devices[link.peerDeviceID]?.paired != true else {
            return link.close(reason: "\(link.address) sent a proof out of turn: disconnected")
        }
        let candidates = context.recognisable.compactMap { device in context.linkSecret(of: device.id).map { (id: device.id, linkSecret: $0) } }
        guard let mac = frame.bytes("mac"),
              let id = LinkProof.identifyClient(proof: mac, channelBinding: link.channelBinding, candidates: candidates),
              let secret = context.linkSecret(of: id), let key = Hex.decode(id)
        else {
            // It learns nothing: no answer, no hello.
            return link.close(reason: "\(link.address) did not prove it is a paired device: disconnected")
        }
        link.identify(as: key)
        link.isPaired = context.devices[id]?.paired == true
        context.log.info("\(link.address) proved it is \(context.devices[id]?.name ?? id)")
        link.send(Frame(.proofAccepted, ["mac": .bytes(LinkProof.server(linkSecret: secret, channelBinding: link.channelBinding))]))
        sendHello(on: link)
    }

    /// Client side: the device answered; it is the one dialed only if it knows the pair's secret.
    private func receivedProofAccepted(_ frame: Frame, on link: PeerLink) {
        guard let target = link.provingTo, let secret = context.linkSecret(of: target), let key = Hex.decode(target),
              let mac = frame.bytes("mac"), LinkProof.verifyServer(proof: mac, linkSecret: secret, channelBinding: link.channelBinding)
        else {
            return link.close(reason: "\(link.address) is not the paired device it was dialed as: disconnected")
        }
        link.identify(as: key)
        link.isPaired = context.devices[target]?.paired == true
        context.log.info("\(link.address) proved it is \(context.devices[target]?.name ?? target)")
    }
}
