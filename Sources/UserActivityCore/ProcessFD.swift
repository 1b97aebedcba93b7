// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// Identity through a pidfd, where the bus offers one (`ProcessFD` from
/// `GetConnectionCredentials`: dbus-daemon ≥ 1.15.7, dbus-broker ≥ 34, on a
/// kernel with `SO_PEERPIDFD`, 6.5 and later).
///
/// A PID names whichever process has it now; the bus took the caller's PID
/// when it connected, and that process may have exited and its PID been
/// reused since. A pidfd pins the process that connected: it stays that
/// process, and shows it as exited rather than naming another one.
extension ProcessIdentityProbe {
    /// The PID in this process's PID namespace of the process `fd` refers
    /// to, from the `Pid:` line of `/proc/self/fdinfo/<fd>`: nil when `fd` is
    /// not a pidfd, -1 when its process has exited and been reaped.
    public static func pid(ofProcessFD fd: Int32) -> Int32? {
        guard fd >= 0, let info = readTextFile(atPath: "/proc/self/fdinfo/\(fd)") else { return nil }
        for line in info.split(separator: "\n") where line.hasPrefix("Pid:") {
            return Int32(line.dropFirst(4).trimmingCharacters(in: " \t"))
        }
        return nil
    }

    /// Identifies the process a pidfd refers to: ``identify(pid:catalog:connectedAtTicks:)``
    /// on its PID, with no start-time check against the connection (the pidfd
    /// is the connecting process itself), then a second look at the pidfd:
    /// if the process exited meanwhile, what was read may belong to a new
    /// process with its PID, and the caller is treated as confined with no app.
    public func identify(processFD fd: Int32, catalog: AppCatalog) -> ProcessIdentity {
        func failClosed(_ why: String) -> ProcessIdentity {
            ProcessIdentity(confinement: .flatpak, appID: nil, source: "\(why); treated as confined with no app")
        }
        guard let pid = Self.pid(ofProcessFD: fd) else { return failClosed("the bus's ProcessFD is not a pidfd") }
        guard pid > 0 else { return failClosed("the process of the bus's ProcessFD has exited") }
        var identity = identify(pid: UInt32(pid), catalog: catalog, connectedAtTicks: nil)
        guard Self.pid(ofProcessFD: fd) == pid else {
            return failClosed("process \(pid) (from the bus's ProcessFD) exited while it was inspected")
        }
        identity.source += " (by pidfd)"
        return identity
    }
}

private extension Substring {
    func trimmingCharacters(in set: String) -> Substring {
        var text = self
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return text
    }
}
