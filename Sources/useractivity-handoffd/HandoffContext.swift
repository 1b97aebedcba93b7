// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import DBusKit
import GLibSupport
import HandoffCore
import Logging
import TypedValues
import UserActivityCore
import UserActivityInterfaces

/// A D-Bus error a handler answers with.
struct HandoffError: Error {
    let name: String
    let message: String
    init(_ short: String, _ message: String) {
        name = short.contains(".") ? short : HandoffInterfaces.errorPrefix + short
        self.message = message
    }
}

extension TypedValue {
    static func stringVariantDictionary(_ pairs: [(String, TypedValue)]) -> TypedValue {
        .dictionary(keyType: "s", valueType: "v", pairs.map { .init(key: .string($0.0), value: .variant($0.1)) })
    }
}

/// Where DNS-SD publishing plugs in (Avahi, in HandoffDiscovery): the daemon
/// publishes its port and TXT (``DiscoveryDecision/txt(deviceID:name:discoverable:)``)
/// while Enabled and withdraws it when turned off; a browser hands what it
/// finds to ``PeerLinks/peerFound(_:)``.
protocol DiscoveryPublisher: AnyObject {
    func publish(port: UInt16, txt: [String: String])
    func withdraw()
}

/// What handoffd's parts share, handed to each explicitly (``Pairing``,
/// ``PeerLinks``, ``ActivityExchange``, the D-Bus objects): the bus, time,
/// the saved state and identity, the app catalog, the notifier, the device
/// objects, and the effects that follow a change (the state file, signals,
/// re-arming the timer). No part holds the daemon itself.
final class HandoffContext {
    let bus: Connection
    let loop: MainLoop
    let log: Logger
    /// The one clock and timer source (GLib's on the loop unless given).
    let scheduler: Scheduler
    let directory: StateDirectory
    let environment: [String: String]
    var state: HandoffState
    var identity: DeviceIdentity?
    var identityError = ""
    /// The device objects, by DeviceId.
    var devices: [String: DeviceObject] = [:]
    var catalog = AppCatalog()
    var notifier: Notifier?
    var activitySource: ActivitySource?
    /// What this device advertises to its paired devices now.
    var advertised: Advert?
    var discoverableWindow = DiscoverableWindow()
    var discoverable: Bool { discoverableWindow.isOn }
    /// Callers found confined (or not), until they leave the bus.
    var confinedCallers: [String: Bool] = [:]
    var requestSerial: UInt32 = 0
    /// Re-arms the daemon's one timer; called after anything that may add a deadline.
    var onWorkAdded: () -> Void = {}

    /// Monotonic microseconds, for every interval and deadline here.
    var now: Int64 { scheduler.monotonic }

    /// Loads the state (and the device objects it keeps) from `directory`.
    init(bus: Connection, loop: MainLoop, log: Logger, scheduler: Scheduler, directory: StateDirectory, environment: [String: String]) throws {
        self.bus = bus
        self.loop = loop
        self.log = log
        self.scheduler = scheduler
        self.directory = directory
        self.environment = environment
        for warning in directory.tightenModes(files: [IdentityStore.keyFile, IdentityStore.certificateFile, "peers.ini"]) {
            log.warning("\(warning)")
        }
        let loaded = try directory.loadState()
        state = loaded.state
        for warning in loaded.warnings { log.warning("\(directory.file("peers.ini")): \(warning)") }
        if state.deviceName.isEmpty { state.deviceName = prettyHostName() }
        for known in state.devices.values {
            let device = DeviceObject(id: known.id)
            device.name = known.name
            device.address = known.address
            device.paired = known.paired
            device.tellUnpair = known.tellUnpair
            device.wasKept = true
            devices[known.id] = device
        }
        catalog = Self.loadCatalog(environment: environment)
    }

    static func loadCatalog(environment: [String: String]) -> AppCatalog {
        AppCatalog.load(applicationDirectories: AppCatalog.applicationDirectories(environment: environment),
                        loadKeyFile: { path -> (any KeyFileReading)? in GLibKeyFile.load(path: path) })
    }

    func rescheduleTick() { onWorkAdded() }

    func nextRequest() -> UInt32 {
        requestSerial &+= 1
        return requestSerial
    }

    // MARK: The state file

    func persistDevice(_ device: DeviceObject) {
        device.wasKept = true
        state.devices[device.id] = KnownDevice(id: device.id, name: device.name, address: device.address, paired: device.paired,
                                               tellUnpair: device.tellUnpair)
        save()
    }

    func save() {
        do { try directory.save(state) } catch { log.error("cannot save state: \(error)") }
    }

    /// Device objects of keys nobody paired or added, at most this many at once.
    static let maximumTransientDevices = 32

    func isTransient(_ device: DeviceObject) -> Bool {
        !device.wasKept && !device.paired && !device.tellUnpair && state.devices[device.id] == nil
    }

    // MARK: Replies and signals

    func reply(_ call: Message, _ values: [TypedValue] = []) {
        guard call.expectsReply else { return }
        if let message = try? Message.methodReturn(to: call, values) { bus.send(message) }
    }

    func reply(_ call: Message, error: HandoffError) {
        guard call.expectsReply else { return }
        bus.send(Message.error(to: call, name: error.name, message: error.message))
    }

    func emitDeviceChanged(_ device: DeviceObject, _ properties: [HandoffInterfaces.DeviceProperty]) {
        guard devices[device.id] === device else { return }
        let changed = device.properties(properties)
        signal(device.path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
               [.string(HandoffInterfaces.deviceName), .stringVariantDictionary(changed), .array(elementType: "s", [])])
    }

    func emitInterfacesAdded(_ device: DeviceObject) {
        signal(HandoffInterfaces.managerPath, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded",
               [.objectPath(device.path), device.interfacesAndProperties()])
    }

    func emitInterfacesRemoved(_ device: DeviceObject) {
        signal(HandoffInterfaces.managerPath, "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved",
               [.objectPath(device.path), .array(elementType: "s", [.string(HandoffInterfaces.deviceName)])])
    }

    func signal(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue]) {
        do {
            bus.send(try Message.signal(path: path, interface: interface, member: member, arguments: arguments))
        } catch {
            log.error("cannot build \(member): \(error)")
        }
    }
}

/// The machine's pretty host name (/etc/machine-info), else its host name.
func prettyHostName() -> String {
    if let text = try? StateDirectory(path: "/etc").read("machine-info"),
       let pretty = MachineInfo.prettyHostName(fromMachineInfo: String(decoding: text, as: UTF8.self)) {
        return pretty
    }
    var buffer = [CChar](repeating: 0, count: 256)
    gethostname(&buffer, 255)
    return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

extension GLibKeyFile: KeyFileReading {}
