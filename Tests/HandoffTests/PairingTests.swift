// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

@Suite("Handoff pairing between two stacks", .serialized)
struct PairingTests {
    @Test func addPeerShowsTheDeviceOnBothSides() throws {
        let stacks = try TwoStacks()
        let path = try stacks.link()
        #expect(path == stacks.a.devicePath(of: stacks.b))
        let onA = try stacks.a.deviceProperties(path)
        #expect(onA["Name"] == .string("Stack B"), "\(stacks.logs)")
        #expect(onA["DeviceId"] == .string(stacks.b.deviceID))
        #expect(onA["Reachable"] == .boolean(true))
        #expect(onA["Paired"] == .boolean(false))
        #expect(stacks.b.waitForDevice(stacks.b.devicePath(of: stacks.a), "Name", { $0 == .string("Stack A") }), "\(stacks.logs)")
        #expect(stacks.a.deviceID.count == 64)
        // No system bus here, so no Avahi: one line says so, and AddPeer (above) is the way in.
        let lines = stacks.a.handoffLog.split(separator: "\n").filter { $0.contains("discovery is off") }
        #expect(lines.count == 1 && lines.first?.contains("AddPeer") == true, "\(stacks.logs)")
    }

    @Test func pairsWhenBothAgentsConfirmTheSameCode() throws {
        let stacks = try TwoStacks()
        let agentA = try stacks.a.startAgent(accept: true)
        let agentB = try stacks.b.startAgent(accept: true)
        let path = try stacks.link()
        _ = try stacks.a.call(HO.busName, path, HO.device, "Pair")
        #expect(try stacks.a.deviceProperties(path)["Paired"] == .boolean(true))
        #expect(stacks.b.waitForDevice(stacks.b.devicePath(of: stacks.a), "Paired", { $0 == .boolean(true) }), "\(stacks.logs)")
        let lineA = try #require(try agentA.readLine(timeout: 30))
        let lineB = try #require(try agentB.readLine(timeout: 30))
        let codeA = lineA.split(separator: " ").last.map(String.init) ?? ""
        let codeB = lineB.split(separator: " ").last.map(String.init) ?? ""
        #expect(codeA.count == 6 && codeA == codeB, "\(lineA) / \(lineB)")
        #expect(lineA.contains(stacks.a.devicePath(of: stacks.b)))
        // The pin survives a restart of B's daemon, and the link comes back.
        stacks.b.killHandoffd()
        #expect(stacks.a.waitForDevice(path, "Reachable", { $0 == .boolean(false) }), "\(stacks.logs)")
        try stacks.b.startHandoffd()
        #expect(try stacks.b.deviceProperties(stacks.b.devicePath(of: stacks.a))["Paired"] == .boolean(true))
        #expect(stacks.b.waitForDevice(stacks.b.devicePath(of: stacks.a), "Reachable", timeout: 30, { $0 == .boolean(true) }), "\(stacks.logs)")
    }

    @Test func aRefusingAgentRefusesThePairingOnBothSides() throws {
        let stacks = try TwoStacks()
        _ = try stacks.a.startAgent(accept: true)
        _ = try stacks.b.startAgent(accept: false)
        let path = try stacks.link()
        #expect(dbusErrorName { try stacks.a.call(HO.busName, path, HO.device, "Pair") } == "org.example.UserActivity.Error.PairingRefused")
        #expect(try stacks.a.deviceProperties(path)["Paired"] == .boolean(false))
        #expect(try stacks.b.deviceProperties(stacks.b.devicePath(of: stacks.a))["Paired"] == .boolean(false))
    }

    @Test func withoutAgentOrNotificationServerPairIsNoAgent() throws {
        let stacks = try TwoStacks()
        let path = try stacks.link()
        #expect(dbusErrorName { try stacks.a.call(HO.busName, path, HO.device, "Pair") } == "org.example.UserActivity.Error.NoAgent")
    }

    @Test func anUnpairedPeerIsRefusedWhenNotDiscoverable() throws {
        let stacks = try TwoStacks()
        // B is not discoverable: A's AddPeer learns nothing it may pair with.
        let result = dbusErrorName { try stacks.a.handoff("AddPeer", [.string("127.0.0.1:\(stacks.b.port)")]) }
        #expect(result == "org.example.UserActivity.Error.ConnectionUnavailable", "\(stacks.logs)")
        #expect(try stacks.b.devicePaths().isEmpty)
    }

    @Test func unpairForgetsTheKeyOnBothSides() throws {
        let stacks = try TwoStacks()
        let (onA, onB) = try stacks.pair()
        _ = try stacks.a.call(HO.busName, onA, HO.device, "Unpair")
        #expect(try stacks.a.deviceProperties(onA)["Paired"] == .boolean(false))
        #expect(stacks.b.waitForDevice(onB, "Paired", { $0 == .boolean(false) }), "\(stacks.logs)")
        #expect(dbusErrorName { try stacks.a.call(HO.busName, onA, HO.device, "Unpair") } == "org.example.UserActivity.Error.NotPaired")
        let state = try String(contentsOfFile: stacks.a.session.stateHome + "/useractivity/handoff/peers.ini", encoding: .utf8)
        #expect(!state.contains("Paired=true"))
    }

    @Test func aDeviceUnpairedWhileAwayIsToldWhenItComesBack() throws {
        let stacks = try TwoStacks()
        let (onA, onB) = try stacks.pair()
        stacks.b.killHandoffd()
        #expect(stacks.a.waitForDevice(onA, "Reachable", { $0 == .boolean(false) }), "\(stacks.logs)")
        _ = try stacks.a.call(HO.busName, onA, HO.device, "Unpair")
        #expect(try stacks.a.deviceProperties(onA)["Paired"] == .boolean(false))
        try stacks.b.startHandoffd()
        // B still trusts A until A reaches it and says so.
        #expect(stacks.b.waitForDevice(onB, "Paired", timeout: 30, { $0 == .boolean(false) }), "\(stacks.logs)")
        #expect(stacks.a.logEventually(contains: "telling Stack B it was unpaired"))
        let state = try String(contentsOfFile: stacks.a.session.stateHome + "/useractivity/handoff/peers.ini", encoding: .utf8)
        #expect(!state.contains("TellUnpair=true") && !state.contains("Paired=true"), "\(state)")
    }

    @Test func aNewKeyAtAPairedAddressIsNotAccepted() throws {
        let stacks = try TwoStacks()
        let (onA, onB) = try stacks.pair()
        // B gets a new identity: A must not take the new key for the pinned device.
        _ = try stacks.b.handoff("ResetIdentity")
        // B forgot every device with its old key.
        #expect((try? stacks.b.deviceProperties(onB))?["Paired"] != .boolean(true))
        let stateOfB = (try? String(contentsOfFile: stacks.b.session.stateHome + "/useractivity/handoff/peers.ini", encoding: .utf8)) ?? ""
        #expect(!stateOfB.contains("Paired=true"), "\(stateOfB)")
        #expect(stacks.a.waitForDevice(onA, "Reachable", { $0 == .boolean(false) }), "\(stacks.logs)")
        let newPath = stacks.a.devicePath(of: stacks.b)
        #expect(newPath != onA)
        #expect(try stacks.a.deviceProperties(onA)["Paired"] == .boolean(true))
        #expect((try? stacks.a.deviceProperties(newPath))?["Paired"] != .boolean(true))
    }

    @Test func aDamagedKeyKeepsHandoffOffUntilResetIdentity() throws {
        let stacks = try TwoStacks()
        let oldID = stacks.a.deviceID
        stacks.a.killHandoffd()
        try "garbage".write(toFile: stacks.a.session.stateHome + "/useractivity/handoff/key.pem", atomically: true, encoding: .utf8)
        try stacks.a.startHandoffd()
        #expect(try stacks.a.managerProperty("Enabled") == .boolean(false))
        #expect((try stacks.a.managerProperty("IdentityError")?.stringValue ?? "").contains("ResetIdentity"))
        #expect(dbusErrorName { try stacks.a.set("Enabled", .boolean(true)) } != nil)
        let newID = try stacks.a.handoff("ResetIdentity").first?.stringValue ?? ""
        #expect(newID.count == 64 && newID != oldID)
        try stacks.a.set("Enabled", .boolean(true))
        #expect(try stacks.a.managerProperty("DeviceId") == .string(newID))
    }

    @Test func cancelPairingEndsItOnBothSidesAndCancelsTheAgents() throws {
        let stacks = try TwoStacks()
        let agentA = try stacks.a.startSilentAgent()
        let agentB = try stacks.b.startSilentAgent()
        let path = try stacks.link()
        let outcome = try stacks.a.callInBackground(path, HO.device, "Pair")
        #expect(try agentA.readLine(timeout: 30)?.hasPrefix("REQUEST ") == true)
        #expect(try agentB.readLine(timeout: 30)?.hasPrefix("REQUEST ") == true)
        _ = try stacks.a.call(HO.busName, path, HO.device, "CancelPairing")
        #expect(waitUntil(timeout: 20) { outcome.value != nil })
        #expect(outcome.value == "org.example.UserActivity.Error.PairingRefused")
        #expect(try agentA.readLine(timeout: 30) == "CANCEL")
        #expect(try agentB.readLine(timeout: 30) == "CANCEL", "\(stacks.logs)")
        #expect(try stacks.a.deviceProperties(path)["Paired"] == .boolean(false))
    }

    @Test func aDeviceThatGoesAwayDuringPairIsConnectionUnavailable() throws {
        let stacks = try TwoStacks()
        _ = try stacks.a.startAgent(accept: true)
        let agentB = try stacks.b.startSilentAgent()
        let path = try stacks.link()
        let outcome = try stacks.a.callInBackground(path, HO.device, "Pair")
        #expect(try agentB.readLine(timeout: 30)?.hasPrefix("REQUEST ") == true)
        // Nobody answered on B; its daemon is killed: the device went away.
        stacks.b.killHandoffd()
        #expect(waitUntil(timeout: 30) { outcome.value != nil })
        #expect(outcome.value == "org.example.UserActivity.Error.ConnectionUnavailable", "\(stacks.logs)")
        #expect(try stacks.a.deviceProperties(path)["Paired"] == .boolean(false))
    }

    @Test func theObjectOfAnUnknownDeviceGoesWithItsLink() throws {
        let stacks = try TwoStacks()
        _ = try stacks.link()
        let onB = stacks.b.devicePath(of: stacks.a)
        #expect(try stacks.b.devicePaths() == [onB])
        // A's key was neither paired nor added on B: its object goes when A does.
        stacks.a.killHandoffd()
        #expect(waitUntil(timeout: 30) { (try? stacks.b.devicePaths()) == [] }, "\(stacks.logs)")
    }

    @Test func aNewDeviceNameReachesThePairedDevice() throws {
        let stacks = try TwoStacks()
        let (onA, _) = try stacks.pair()
        try stacks.b.set("DeviceName", .string("Renamed B"))
        #expect(stacks.a.waitForDevice(onA, "Name", { $0 == .string("Renamed B") }), "\(stacks.logs)")
    }

    @Test func discoverableTurnsItselfOff() throws {
        let stacks = try TwoStacks()
        try stacks.b.set("DiscoverableTimeout", .uint32(1))
        try stacks.b.set("Discoverable", .boolean(true))
        #expect(try stacks.b.managerProperty("Discoverable") == .boolean(true))
        #expect(waitUntil(timeout: 20) { (try? stacks.b.managerProperty("Discoverable")) == .boolean(false) })
        // No longer discoverable: a new device cannot reach B for pairing.
        let result = dbusErrorName { try stacks.a.handoff("AddPeer", [.string("127.0.0.1:\(stacks.b.port)")]) }
        #expect(result == "org.example.UserActivity.Error.ConnectionUnavailable")
    }

    @Test func badInputOnTheBusIsRefusedByName() throws {
        let stacks = try TwoStacks()
        #expect(dbusErrorName { try stacks.a.handoff("AddPeer", [.string("no port here")]) } == "org.example.UserActivity.Error.InvalidArgument")
        #expect(dbusErrorName { try stacks.a.set("DeviceId", .string("x")) } == "org.freedesktop.DBus.Error.PropertyReadOnly")
        #expect(dbusErrorName { try stacks.a.set("Enabled", .string("yes")) } == "org.example.UserActivity.Error.InvalidArgument")
        #expect(dbusErrorName { try stacks.a.handoff("AddPeer", [.uint32(1)]) } == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(dbusErrorName { try stacks.a.call(HO.busName, HO.devicePrefix + String(repeating: "0", count: 64), HO.device, "Pair") } == "org.freedesktop.DBus.Error.UnknownObject")
        let xml = try stacks.a.call(HO.busName, HO.managerPath, "org.freedesktop.DBus.Introspectable", "Introspect").first?.stringValue ?? ""
        #expect(xml.contains("<interface name=\"org.example.UserActivity.Handoff\">") && xml.contains("ResetIdentity")
                && xml.contains("org.freedesktop.DBus.ObjectManager"))
    }

    @Test func keyAndStateFilesArePrivate() throws {
        let stacks = try TwoStacks()
        let directory = stacks.a.session.stateHome + "/useractivity/handoff"
        let attributes = try FileManager.default.attributesOfItem(atPath: directory)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        for file in ["key.pem", "peers.ini"] {
            let mode = try FileManager.default.attributesOfItem(atPath: directory + "/" + file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file)")
        }
    }

    @Test func aKeyLeftReadableByOthersIsMadePrivateAtStart() throws {
        let stack = try HandoffStack("A")
        try stack.set("Enabled", .boolean(true))
        let directory = stack.session.stateHome + "/useractivity/handoff"
        stack.killHandoffd()
        chmod(directory, 0o755)
        chmod(directory + "/key.pem", 0o644)
        try stack.startHandoffd()
        for (path, wanted) in [(directory, 0o700), (directory + "/key.pem", 0o600)] {
            #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == wanted, "\(path)")
        }
        #expect(stack.logEventually(contains: "key.pem was readable by others"), "\(stack.handoffLog)")
        #expect(try stack.managerProperty("Enabled") == .boolean(true))
    }
}
