// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import DBusKit
import HandoffCore
import GLibSupport
import TypedValues
import UserActivityCore
import UserActivityInterfaces

/// The D-Bus side of the daemon: routing, properties, signals. Glue only.
extension HandoffDaemon {
    /// Every message passes here first (the service's and the notification server's signals).
    func filter(_ message: Message) -> Bool {
        if message.kind == .signal, message.interface == "org.freedesktop.DBus.Local", message.member == "Disconnected" {
            // The session is ending: nobody is left to serve, and the other devices must see this one go.
            log.notice("the session bus went away; stopping")
            for link in links.links { link.close(reason: "this device lost its session bus") }
            context.loop.quit()
            return false
        }
        if message.kind == .signal, message.member == "NameOwnerChanged", message.sender == "org.freedesktop.DBus",
           let arguments = try? message.arguments(),
           arguments.count == 3, let name = arguments[0].stringValue, name.hasPrefix(":"), arguments[2].stringValue == "" {
            context.confinedCallers[name] = nil
            pairing.nameLeft(name)
        }
        if context.activitySource?.handle(message) == true { return true }
        if context.notifier?.handle(message) == true { return true }
        return false
    }

    /// A confined (Flatpak, Snap) caller, found as useractivityd finds it
    /// (UserActivityCore's ProcessIdentityProbe: /.flatpak-info in its root,
    /// a snap cgroup; a process that cannot be inspected fails closed).
    func isConfined(_ sender: String) -> Bool {
        if let known = context.confinedCallers[sender] { return known }
        let connectedAt = ProcessIdentityProbe.ticksSinceBoot()
        var confined = true
        if let pid = try? context.bus.callBus("GetConnectionUnixProcessID", [.string(sender)]).first?.uint32Value {
            let probe = ProcessIdentityProbe(loadKeyFile: { path -> (any KeyFileReading)? in GLibKeyFile.load(path: path) })
            let identity = probe.identify(pid: pid, catalog: context.catalog, connectedAtTicks: connectedAt)
            confined = identity.isConfined
            if confined { log.info("confined caller \(sender): \(identity.source)") }
        }
        context.confinedCallers[sender] = confined
        return confined
    }

    func route(_ message: Message) -> Bool {
        guard message.kind == .methodCall, let path = message.path, let member = message.member else { return false }
        let interface = message.interface ?? ""
        if interface == "org.freedesktop.DBus.Peer" { return false }
        if exchange.routeRelay(message) { return true }
        let device: DeviceObject?
        if path == HandoffInterfaces.managerPath {
            device = nil
        } else if path.hasPrefix(HandoffInterfaces.devicePathPrefix), let found = context.devices[String(path.dropFirst(HandoffInterfaces.devicePathPrefix.count))] {
            device = found
        } else {
            if interface == "org.freedesktop.DBus.Introspectable" && member == "Introspect" && path == String(HandoffInterfaces.devicePathPrefix.dropLast()) {
                context.reply(message, [.string(StandardInterfacesXML.doctype + "<node>\n" + context.devices.keys.sorted().map { "  <node name=\"\($0)\"/>\n" }.joined() + "</node>\n")])
                return true
            }
            context.bus.send(Message.error(to: message, name: "org.freedesktop.DBus.Error.UnknownObject", message: "no object at \(path)"))
            return true
        }
        if interface == "org.freedesktop.DBus.Introspectable" {
            let children = device == nil ? ["device"] : []
            context.reply(message, [.string(HandoffInterfaces.servedXML(for: path, children: children))])
            return true
        }
        guard let sender = message.sender, !isConfined(sender) else {
            context.reply(message, error: HandoffError("AccessDenied", "only unconfined callers (the shell, settings, the CLI) may use Handoff"))
            return true
        }
        let arguments = (try? message.arguments()) ?? []
        let description = device == nil ? HandoffInterfaces.manager : HandoffInterfaces.device
        if interface == description.name || interface.isEmpty, let method = description.method(member) {
            guard message.signature == method.inputSignature else {
                context.bus.send(Message.error(to: message, name: "org.freedesktop.DBus.Error.InvalidArgs",
                                       message: "\(member) takes (\(method.inputSignature)), not (\(message.signature))"))
                return true
            }
            if let device, let method = HandoffInterfaces.Device(named: member) {
                handle(method, on: device, arguments) { [weak self, weak device] outcome in
                    guard let self, let device else { return }
                    self.finish(message, on: device, outcome)
                }
            } else if let method = HandoffInterfaces.Manager(named: member) {
                handle(method, arguments, message, sender)
            }
            return true
        }
        switch (interface, member) {
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard let name = arguments.dropFirst().first?.stringValue, let value = properties(of: device).first(where: { $0.0 == name })?.1 else {
                context.reply(message, error: HandoffError("org.freedesktop.DBus.Error.UnknownProperty", "no such property"))
                return true
            }
            context.reply(message, [.variant(value)])
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            context.reply(message, [.stringVariantDictionary(properties(of: device))])
        case ("org.freedesktop.DBus.Properties", "Set"):
            guard device == nil, arguments.count == 3, let name = arguments[1].stringValue, case .variant(let value) = arguments[2] else {
                context.reply(message, error: HandoffError("org.freedesktop.DBus.Error.PropertyReadOnly", "device properties are read-only"))
                return true
            }
            // The one step after the handler: the reply, then the signal of what changed.
            do {
                let changed = try setManagerProperty(name, value)
                context.reply(message)
                if !changed.isEmpty { emitManagerChanged(changed) }
            } catch let error as HandoffError {
                context.reply(message, error: error)
            } catch {
                context.reply(message, error: HandoffError("HandoffFailed", "\(error)"))
            }
        case ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects") where device == nil:
            let objects: [TypedValue.DictionaryEntry] = context.devices.values.sorted { $0.id < $1.id }.map { device in
                .init(key: .objectPath(device.path), value: device.interfacesAndProperties())
            }
            context.reply(message, [.dictionary(keyType: "o", valueType: "a{sa{sv}}", objects)])
        default:
            context.bus.send(Message.error(to: message, name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(interface).\(member) at \(path)"))
        }
        return true
    }

    func properties(of device: DeviceObject?) -> [(String, TypedValue)] {
        if let device { return device.properties() }
        return [("Enabled", .boolean(state.enabled)), ("DeviceName", .string(state.deviceName)),
                ("DeviceId", .string(context.identity?.deviceID ?? state.deviceID)), ("Discoverable", .boolean(context.discoverable)),
                ("DiscoverableTimeout", .uint32(state.discoverableTimeout)), ("NotifyContinuable", .boolean(state.notifyContinuable)),
                ("MaximumFileSize", .uint64(state.maximumFileSize)),
                ("ListenPort", .uint16(links.boundPort)), ("IdentityError", .string(context.identityError))]
    }

    /// The manager's property table for `Set`: sets one, says which properties changed.
    private func setManagerProperty(_ name: String, _ value: TypedValue) throws -> [String] {
        switch (name, value) {
        case ("Enabled", .boolean(let on)):
            guard on != state.enabled else { return [] }
            if on {
                do { try enable() } catch {
                    emitManagerChanged(["IdentityError"])
                    throw error
                }
            } else {
                disable()
            }
            context.state.enabled = on
            context.save()
            republish()
            return ["Enabled", "DeviceId", "ListenPort", "IdentityError", "Discoverable"]
        case ("DeviceName", .string(let text)):
            guard !text.isEmpty, text.utf8.count <= 255 else { throw HandoffError("InvalidArgument", "DeviceName must be 1 to 255 bytes") }
            context.state.deviceName = text
            context.save()
            republish()
            for device in context.devices.values where device.reachable { if let link = device.link { links.sendHello(on: link) } }
            return ["DeviceName"]
        case ("Discoverable", .boolean(let on)):
            context.discoverableWindow.set(on, now: context.now)
            republish()
            return ["Discoverable"]
        case ("DiscoverableTimeout", .uint32(let seconds)):
            context.state.discoverableTimeout = seconds
            context.save()
            return ["DiscoverableTimeout"]
        case ("NotifyContinuable", .boolean(let on)):
            context.state.notifyContinuable = on
            context.save()
            if !on { for device in context.devices.values { context.notifier?.withdraw(device.id) } }
            return ["NotifyContinuable"]
        case ("MaximumFileSize", .uint64(let bytes)):
            context.state.maximumFileSize = bytes
            context.save()
            return ["MaximumFileSize"]
        case ("DeviceId", _), ("ListenPort", _), ("IdentityError", _):
            throw HandoffError("org.freedesktop.DBus.Error.PropertyReadOnly", "\(name) is read-only")
        default:
            if properties(of: nil).contains(where: { $0.0 == name }) {
                throw HandoffError("InvalidArgument", "\(name) takes \(HandoffInterfaces.manager.property(name)?.signature ?? "?"), not \(value.signature)")
            }
            throw HandoffError("org.freedesktop.DBus.Error.UnknownProperty", "no property \(name)")
        }
    }

    /// The manager's method table (an exhaustive `switch`).
    private func handle(_ method: HandoffInterfaces.Manager, _ arguments: [TypedValue], _ message: Message, _ sender: String) {
        switch method {
        case .registerAgent:
            pairing.registerAgent(sender: sender, path: arguments[0].objectPathValue ?? "/")
            context.reply(message)
            // Discoverable devices nearby may be dialed now that someone could pair.
            republish()
        case .unregisterAgent:
            pairing.unregisterAgent(sender: sender, path: arguments[0].objectPathValue)
            context.reply(message)
        case .addPeer:
            let address = arguments[0].stringValue ?? ""
            guard isValidAddress(address) else {
                return context.reply(message, error: HandoffError("InvalidArgument", "'\(address.prefix(100))' is not host:port"))
            }
            guard state.enabled, links.socketClient != nil else {
                return context.reply(message, error: HandoffError("ConnectionUnavailable", "Handoff is not enabled"))
            }
            if let known = context.devices.values.first(where: { $0.address == address && $0.reachable }) {
                return context.reply(message, [.objectPath(known.path)])
            }
            if !state.pendingPeers.contains(address) {
                context.state.pendingPeers.append(address)
                context.save()
            }
            // Answered when the link is up (or closed): a connect never completes synchronously.
            // A paired device last seen there is dialed as that device (proving the pair's secret).
            let pairedThere = context.devices.values.first { $0.address == address && ($0.paired || $0.tellUnpair) }
            guard let link = links.dial(address, device: pairedThere) else { return }
            links.pendingAddPeer.append((link, message))
        case .resetIdentity:
            // The one step after the handler: the reply, then the signals of what changed.
            let (result, forgotten) = resetIdentity()
            switch result {
            case .success(let deviceID): context.reply(message, [.string(deviceID)])
            case .failure(let error): context.reply(message, error: error)
            }
            for device in forgotten { context.emitInterfacesRemoved(device) }
            emitManagerChanged(["DeviceId", "IdentityError", "ListenPort"])
        }
    }

    /// Forgets every device and this device's key, makes a new one and listens
    /// again if Handoff is on. Returns the new DeviceId (or why there is none)
    /// and the device objects that are gone.
    private func resetIdentity() -> (Result<String, HandoffError>, [DeviceObject]) {
        disable()
        let forgotten = Array(context.devices.values)
        context.devices.removeAll()
        context.state.devices.removeAll()
        // Devices paired before must not recognise the new identity's tokens either.
        context.state.resolvingKey = []
        context.state.deviceID = ""
        context.identity = nil
        context.directory.remove(IdentityStore.keyFile)
        context.directory.remove(IdentityStore.certificateFile)
        do {
            let made = try IdentityStore.create(in: context.directory, name: state.deviceName)
            context.identity = made
            context.identityError = ""
            context.state.deviceID = made.deviceID
            context.save()
            if state.enabled { try enable() }
            return (.success(made.deviceID), forgotten)
        } catch {
            // The devices are forgotten whether or not a new key could be made.
            context.save()
            return (.failure(HandoffError("HandoffFailed", "cannot make a new identity: \(error)")), forgotten)
        }
    }

    private func isValidAddress(_ address: String) -> Bool {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]), port > 0 else { return false }
        let host = address[..<colon]
        return !host.isEmpty && host.utf8.count <= 253 && !host.contains(where: { $0.isWhitespace || $0 == "/" })
    }

    // MARK: Signals

    func emitManagerChanged(_ names: [String]) {
        let all = properties(of: nil)
        let changed = names.compactMap { name in all.first { $0.0 == name } }
        context.signal(HandoffInterfaces.managerPath, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                       [.string(HandoffInterfaces.managerName), .stringVariantDictionary(changed), .array(elementType: "s", [])])
    }
}
