// SPDX-License-Identifier: Apache-2.0
import GLibSupport
import HandoffCore
import HandoffDiscovery
import Logging

/// Plugs ``AvahiDiscovery`` into the daemon: publishes what
/// ``HandoffDaemon/republish()`` asks for, and hands every resolved
/// `_useractivity._tcp` instance to ``PeerLinks/peerFound(_:)``.
///
/// AvahiDiscovery owns the `name` TXT entry (it adds it only while
/// discoverable), so the name is passed through ``AvahiDiscovery/setDiscoverable(_:name:)``
/// and never as part of the base TXT record.
final class AvahiPublisher: DiscoveryPublisher {
    private let avahi: AvahiDiscovery
    private let log: Logger
    private weak var daemon: HandoffDaemon?
    private var published: (port: UInt16, txt: [String: String])?
    /// Which device each instance announced, to notice it stop being discoverable or leave.
    private var instances: [String: String] = [:]
    /// The latest sighting of each instance, offered again when handoff is turned on.
    private var sightings: [String: DiscoveryDecision.Found] = [:]
    /// Whether the "no discovery" line was logged since discovery last worked: one line, not one per retry.
    private var reportedUnavailable = false

    init(daemon: HandoffDaemon, loop: MainLoop, log: Logger, systemBusAddress: String) {
        self.daemon = daemon
        self.log = log
        avahi = AvahiDiscovery(loop: loop, systemBusAddress: systemBusAddress)
        avahi.onStateChange = { [weak self] state in self?.stateChanged(state) }
        avahi.browse(onFound: { [weak self] service in self?.found(service) },
                     onLost: { [weak self] instance in self?.lost(instance) })
    }

    func publish(port: UInt16, txt: [String: String]) {
        let name = txt[AvahiDiscovery.nameKey]
        var base = txt
        base[AvahiDiscovery.nameKey] = nil
        // Before start, so that a new publication carries the name from its first commit.
        avahi.setDiscoverable(name != nil, name: name)
        if published?.port != port || published?.txt != base {
            published = (port, base)
            avahi.start(port: port, txt: base)
        }
        // Avahi reports an instance once, so what it said is weighed again
        // whenever this device changes: dialed now that handoff is on, or
        // dropped now that this device stopped being discoverable.
        for found in sightings.values { consider(found) }
    }

    func withdraw() {
        guard published != nil else { return }
        published = nil
        avahi.setDiscoverable(false, name: nil)
        avahi.withdraw()
    }

    private func stateChanged(_ state: AvahiDiscovery.State) {
        switch state {
        case .running:
            reportedUnavailable = false
            log.info("discovery: publishing and browsing \(AvahiDiscovery.serviceType) through Avahi")
        case .unavailable(let reason):
            guard !reportedUnavailable else { return }
            reportedUnavailable = true
            log.notice("discovery is off (\(reason)); other devices are reached only with AddPeer until Avahi is running")
        case .connecting:
            break
        }
    }

    private func found(_ service: AvahiDiscovery.Service) {
        let found = DiscoveryDecision.Found(host: service.address, port: service.port, txt: service.txt)
        guard let id = found.deviceID else { return }
        instances[service.instance] = id
        sightings[service.instance] = found
        consider(found)
    }

    private func consider(_ found: DiscoveryDecision.Found) {
        guard let daemon, let id = found.deviceID, daemon.state.enabled, daemon.links.isListening else { return }
        if found.isDiscoverable {
            daemon.links.peerFound(found)
        } else {
            daemon.discoveredDeviceLeft(id)
            // Paired devices are dialed whether or not they are discoverable.
            daemon.links.peerFound(found)
        }
    }

    private func lost(_ instance: String) {
        sightings[instance] = nil
        guard let id = instances.removeValue(forKey: instance), !instances.values.contains(id) else { return }
        daemon?.discoveredDeviceLeft(id)
    }
}

extension HandoffDaemon {
    /// Starts DNS-SD through Avahi on the system bus; without it the daemon
    /// goes on with AddPeer alone (AvahiPublisher logs why, once).
    func startDiscovery(systemBusAddress: String) {
        discovery = AvahiPublisher(daemon: self, loop: context.loop, log: log, systemBusAddress: systemBusAddress)
        republish()
    }

    /// A device that was shown only because it announced itself as
    /// discoverable stopped doing so (or left the network): an unpaired
    /// device appears only while it is discoverable. Paired devices, devices
    /// added with AddPeer, and one in the middle of pairing stay; so does one
    /// that dialed this device while this device is discoverable (it may
    /// pair with it: the person started pairing there).
    func discoveredDeviceLeft(_ id: String) {
        guard let device = context.devices[id], !device.paired, !device.tellUnpair, state.devices[id] == nil,
              pairing.peer != id, device.pairCompletion == nil,
              device.link == nil || device.link?.role == .client || !context.discoverable
        else { return }
        context.devices[id] = nil
        context.emitInterfacesRemoved(device)
        device.link?.close(reason: "\(device.name) is no longer discoverable")
        device.link = nil
    }
}
