// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import HandoffCore
import Testing

@Suite struct StateStoreTests {
    func temporaryDirectory() -> String {
        var template = Array("/tmp/handoff-state-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        return path
    }

    func mode(_ path: String) -> mode_t {
        var info = stat()
        stat(path, &info)
        return info.st_mode & 0o777
    }

    @Test func roundTripsSettingsAndPins() throws {
        var state = HandoffState()
        state.enabled = true
        state.deviceName = "Desk [2]\nsecond line \\ end"
        state.discoverableTimeout = 0
        state.notifyContinuable = false
        state.pendingPeers = ["127.0.0.1:4000"]
        let id = Hex.encode(SHA256.hash([1]))
        state.resolvingKey = SecureRandom.bytes(32)
        state.devices[id] = KnownDevice(id: id, name: "Laptop", address: "[::1]:5000", paired: true,
                                        linkSecret: SecureRandom.bytes(32), resolvingKey: SecureRandom.bytes(32))
        let gone = Hex.encode(SHA256.hash([2]))
        state.devices[gone] = KnownDevice(id: gone, name: "Old", address: "192.0.2.1:4000", paired: false, tellUnpair: true)
        let parsed = HandoffState.parse(state.serialized())
        #expect(parsed.state == state)
        #expect(parsed.warnings.isEmpty)
    }

    @Test func aDamagedSecretIsDroppedWithAWarning() {
        let id = Hex.encode(SHA256.hash([1]))
        let parsed = HandoffState.parse("[Handoff]\nResolvingKey=abcd\n[Device \(id)]\nPaired=true\nLinkSecret=zz\n")
        #expect(parsed.state.resolvingKey.isEmpty && parsed.state.devices[id]?.linkSecret == [])
        #expect(parsed.state.devices[id]?.paired == true)
        #expect(parsed.warnings.count == 2)
    }

    @Test func skipsMalformedDevicesWithAWarning() {
        let parsed = HandoffState.parse("[Handoff]\nEnabled=true\n[Device NOTHEX]\nPaired=true\ngarbage\n")
        #expect(parsed.state.enabled)
        #expect(parsed.state.devices.isEmpty)
        #expect(parsed.warnings.count == 2)
    }

    @Test func writesAtomicallyIntoAPrivateDirectory() throws {
        let root = temporaryDirectory()
        let directory = StateDirectory.resolve(environment: ["XDG_STATE_HOME": root])!
        #expect(directory.path == root + "/useractivity/handoff")
        var state = HandoffState()
        state.deviceName = "A"
        try directory.save(state)
        #expect(mode(directory.path) == 0o700)
        #expect(mode(directory.file("peers.ini")) == 0o600)
        #expect(!directory.exists("peers.ini.tmp"))
        #expect(try directory.loadState().state == state)
        state.deviceName = "B"
        try directory.save(state)
        #expect(try directory.loadState().state.deviceName == "B")
    }

    @Test func aMissingFileIsTheDefaultState() throws {
        let directory = StateDirectory(path: temporaryDirectory() + "/none")
        #expect(try directory.loadState().state == HandoffState())
    }

    @Test func looseModesAreMadePrivateWithAWarning() throws {
        let root = temporaryDirectory()
        let directory = StateDirectory(path: root + "/handoff")
        try directory.write("key.pem", Array("secret".utf8))
        #expect(directory.tightenModes(files: ["key.pem"]).isEmpty, "already private")
        chmod(directory.path, 0o755)
        chmod(directory.file("key.pem"), 0o644)
        let warnings = directory.tightenModes(files: ["key.pem", "missing.ini"])
        #expect(warnings.count == 2, "\(warnings)")
        #expect(mode(directory.path) == 0o700)
        #expect(mode(directory.file("key.pem")) == 0o600)
        #expect(directory.tightenModes(files: ["key.pem"]).isEmpty)
    }
}

@Suite struct MachineInfoTests {
    @Test func readsThePrettyHostName() {
        #expect(MachineInfo.prettyHostName(fromMachineInfo: "CHASSIS=laptop\nPRETTY_HOSTNAME=\"Ann's \\\"Laptop\\\"\"\n") == "Ann's \"Laptop\"")
        #expect(MachineInfo.prettyHostName(fromMachineInfo: "PRETTY_HOSTNAME='Desk'") == "Desk")
        #expect(MachineInfo.prettyHostName(fromMachineInfo: "PRETTY_HOSTNAME=Plain name") == "Plain name")
        #expect(MachineInfo.prettyHostName(fromMachineInfo: "PRETTY_HOSTNAME=\"\"\n") == nil)
        #expect(MachineInfo.prettyHostName(fromMachineInfo: "ICON_NAME=computer") == nil)
    }
}
