// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Two network namespaces joined by a veth pair, each with its own system
/// bus and its own `avahi-daemon` restricted to its end of the pair: two
/// desktops on one private link, inside this machine.
///
/// Addresses are `10.231.<n>.1/24` (first) and `.2` (second), with `<n>`
/// random per link, only inside the namespaces created here. Each namespace
/// has a holder process (its own mount namespace, with private directories
/// bind-mounted over `/run/dbus` and `/run/avahi-daemon`) that runs
/// `dbus-daemon` and `avahi-daemon`; ``run(in:_:_:environment:timeout:)``
/// and ``spawn(in:_:_:environment:)`` run further commands inside a
/// namespace (another stack, a CLI) with the environment given.
///
/// Needs root (CI runs as root); ``skipReason`` says why not otherwise.
/// ``tearDown()`` (also from deinit) ends the holders and deletes the
/// namespaces on every path; namespaces left behind by a killed test run are
/// deleted the next time (their names carry the creating process's PID).
final class TwoDesktopLink: @unchecked Sendable {
    struct Desktop {
        var namespace: String
        var interface: String
        var address: String
        var holder: ChildProcess
        var directory: String
    }

    private(set) var desktops: [Desktop] = []
    let directory: TemporaryDirectory
    private static let prefix = "uadisc-"

    /// Why the test cannot run here (nil: it can). Only the lack of root
    /// skips: as root (CI) a missing tool fails the test instead.
    static var skipReason: String? {
        geteuid() != 0 ? "needs root to create network namespaces (CI runs the tests as root)" : nil
    }

    struct MissingTool: Error, CustomStringConvertible {
        var tool: String
        var description: String { "\(tool) is not installed: scripts/install-deps.sh installs it (avahi-daemon avahi-utils iproute2 util-linux dbus-bin)" }
    }

    init() throws {
        for tool in ["ip", "unshare", "nsenter", "mount", "dbus-daemon", "dbus-send", "avahi-daemon", "avahi-browse"] {
            if (try? resolveExecutable(tool, environment: ["PATH": standardSearchPath])) == nil { throw MissingTool(tool: tool) }
        }
        directory = try TemporaryDirectory(prefix: "uadisc-")
        Self.deleteStaleNamespaces()
        let tag = "\(getpid())-\(UInt32.random(in: 0..<0xFFFF))"
        let subnet = Int.random(in: 1...254)
        let names = [Self.prefix + tag + "-a", Self.prefix + tag + "-b"]
        let interfaces = ["uav\(tag.suffix(4))a", "uav\(tag.suffix(4))b"].map { String($0.suffix(15)) }
        do {
            for name in names { try Self.ip(["netns", "add", name]) }
            try Self.ip(["link", "add", interfaces[0], "netns", names[0], "type", "veth",
                         "peer", "name", interfaces[1], "netns", names[1]])
            for index in 0..<2 {
                let address = "10.231.\(subnet).\(index + 1)"
                try Self.ip(["-n", names[index], "addr", "add", address + "/24", "dev", interfaces[index]])
                try Self.ip(["-n", names[index], "link", "set", "lo", "up"])
                try Self.ip(["-n", names[index], "link", "set", interfaces[index], "up"])
                desktops.append(try startDesktop(index: index, namespace: names[index], interface: interfaces[index],
                                                 address: address))
            }
        } catch {
            tearDown()
            for name in names { _ = try? Self.ip(["netns", "del", name]) }
            throw error
        }
    }

    deinit { tearDown() }

    private func startDesktop(index: Int, namespace: String, interface: String, address: String) throws -> Desktop {
        let dir = try directory.makeDirectory("\(index)")
        _ = try directory.makeDirectory("\(index)/run-dbus")
        _ = try directory.makeDirectory("\(index)/run-avahi")
        try writeFileAtomically("\(dir)/system-bus.conf", contents: """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <auth>EXTERNAL</auth>
          <listen>unix:path=/run/dbus/system_bus_socket</listen>
          <policy context="default">
            <allow user="*"/>
            <deny own="*"/>
            <deny send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_requested_reply="true" send_type="method_return"/>
            <allow send_requested_reply="true" send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
            <allow receive_type="signal"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
          </policy>
          <include ignore_missing="yes">/usr/share/dbus-1/system.d/avahi-dbus.conf</include>
        </busconfig>
        """)
        // A host name of its own: both namespaces share this machine's name.
        try writeFileAtomically("\(dir)/avahi.conf", contents: """
        [server]
        host-name=uadisc-\(index == 0 ? "a" : "b")
        use-ipv4=yes
        use-ipv6=no
        allow-interfaces=\(interface)
        enable-dbus=yes
        [wide-area]
        enable-wide-area=no
        [publish]
        publish-hinfo=no
        publish-workstation=no

        """)
        try writeFileAtomically("\(dir)/holder.sh", contents: """
        set -e
        mount --bind \(dir)/run-dbus /run/dbus
        mkdir -p /run/avahi-daemon
        mount --bind \(dir)/run-avahi /run/avahi-daemon
        dbus-daemon --config-file=\(dir)/system-bus.conf --nofork --nopidfile &
        i=0
        while [ ! -S /run/dbus/system_bus_socket ]; do i=$((i+1)); [ $i -lt 300 ] || exit 1; sleep 0.05; done
        avahi-daemon --no-chroot --no-drop-root --no-rlimits -f \(dir)/avahi.conf &
        wait

        """)
        // `ip netns exec` and `unshare` exec in turn: the holder's PID is the shell's.
        let holder = try ChildProcess(
            executable: "ip", arguments: ["netns", "exec", namespace, "unshare", "--mount", "--propagation", "private",
                                          "sh", "\(dir)/holder.sh"],
            environment: ["PATH": standardSearchPath], stdout: .file("\(dir)/holder.log"), stderr: .mergeWithStdout,
            newProcessGroup: true)
        return Desktop(namespace: namespace, interface: interface, address: address, holder: holder, directory: dir)
    }

    /// The command line that runs `executable` inside desktop `index`'s
    /// network and mount namespaces (its system bus, its Avahi).
    func commandLine(in index: Int, _ executable: String, _ arguments: [String]) -> (String, [String]) {
        ("nsenter", ["--target", "\(desktops[index].holder.pid)", "--net", "--mount", "--", executable] + arguments)
    }

    /// Runs a command to completion inside desktop `index`.
    func run(in index: Int, _ executable: String, _ arguments: [String], environment: [String: String] = [:],
             timeout: Double = 30) throws -> CommandResult {
        let (tool, all) = commandLine(in: index, executable, arguments)
        return try runCommand(tool, all, environment: ["PATH": standardSearchPath].merging(environment) { $1 }, timeout: timeout)
    }

    /// Starts a long-running command inside desktop `index` (its own process group).
    func spawn(in index: Int, _ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
        let (tool, all) = commandLine(in: index, executable, arguments)
        return try ChildProcess(executable: tool, arguments: all,
                                environment: ["PATH": standardSearchPath].merging(environment) { $1 },
                                stdout: .capture, stderr: .capture, newProcessGroup: true)
    }

    /// Waits until Avahi is on desktop `index`'s system bus.
    func waitForAvahi(_ index: Int, timeout: Double = 20) throws -> Bool {
        try waitUntil(timeout: timeout, interval: 0.1) {
            let result = try run(in: index, "dbus-send", [
                "--system", "--print-reply", "--dest=org.freedesktop.Avahi", "/", "org.freedesktop.Avahi.Server.GetState",
            ], timeout: 10)
            return result.succeeded && result.stdout.contains("int32 2")
        }
    }

    /// The holders' logs (dbus-daemon and avahi-daemon), for failure messages.
    var logs: String {
        desktops.map { desktop in
            "--- \(desktop.namespace) ---\n" + ((try? String(contentsOfFile: desktop.directory + "/holder.log", encoding: .utf8)) ?? "")
        }.joined(separator: "\n")
    }

    /// Ends the daemons and deletes the namespaces (idempotent).
    func tearDown() {
        for desktop in desktops {
            desktop.holder.terminate(grace: 2)
            _ = try? Self.ip(["netns", "del", desktop.namespace])
        }
        desktops = []
    }

    @discardableResult
    private static func ip(_ arguments: [String]) throws -> CommandResult {
        try NetworkNamespaceTools.ip(arguments)
    }

    /// Deletes `uadisc-<pid>-…` namespaces whose creating process is gone.
    private static func deleteStaleNamespaces() {
        NetworkNamespaceTools.deleteStale(prefix: prefix)
    }
}
