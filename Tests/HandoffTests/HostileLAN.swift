// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// Strangers holding connections to a handoff daemon: `count` connections
/// to `host:port` from the `sources` addresses in turn, a third each idle
/// (nothing sent), slow (a ClientHello one byte a second) and half-done (a
/// whole ClientHello, then silence). A connection the daemon closes is
/// opened again a second later (at most 200 a second in all), so the
/// pressure lasts. Prints `STARTED n`, then every 5 s
/// `STATS open=… opened=… closed=…`.
let strangerFloodScript = #"""
import errno, resource, selectors, socket, ssl, sys, time
host, port, count, sources = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
try:
    context.wrap_bio(incoming, outgoing).do_handshake()
except ssl.SSLWantReadError:
    pass
hello = outgoing.read()
MODES = ("idle", "slow", "half")
selector = selectors.DefaultSelector()
slots = [{"mode": MODES[i % 3], "source": sources[i % len(sources)], "sock": None, "sent": 0, "retry": 0.0} for i in range(count)]
stats = {"opened": 0, "closed": 0}
def connect(slot):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    s.bind((slot["source"], 0))
    code = s.connect_ex((host, port))
    if code not in (0, errno.EINPROGRESS):
        s.close()
        slot["retry"] = time.time() + 1
        return
    slot["sock"], slot["sent"], slot["up"] = s, 0, False
    selector.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, slot)
def drop(slot):
    selector.unregister(slot["sock"])
    slot["sock"].close()
    slot["sock"] = None
    slot["retry"] = time.time() + 1
    stats["closed"] += 1
for slot in slots:
    connect(slot)
print("STARTED %d" % count, flush=True)
budget, budget_time, next_trickle, next_report = 0, time.time(), time.time(), time.time() + 5
while True:
    for key, events in selector.select(timeout=0.2):
        slot = key.data
        s = slot["sock"]
        if s is None:
            continue
        if events & selectors.EVENT_WRITE and not slot["up"]:
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                drop(slot)
                continue
            slot["up"] = True
            stats["opened"] += 1
            selector.modify(s, selectors.EVENT_READ, slot)
            if slot["mode"] == "half":
                try:
                    s.send(hello)
                except OSError:
                    drop(slot)
            continue
        if events & selectors.EVENT_READ:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                drop(slot)
    now = time.time()
    if now >= next_trickle:
        next_trickle = now + 1
        for slot in slots:
            if slot["mode"] == "slow" and slot["sock"] is not None and slot["up"] and slot["sent"] < len(hello) - 1:
                try:
                    slot["sock"].send(hello[slot["sent"]:slot["sent"] + 1])
                    slot["sent"] += 1
                except OSError:
                    drop(slot)
    if now - budget_time >= 1:
        budget, budget_time = 0, now
    for slot in slots:
        if budget >= 200:
            break
        if slot["sock"] is None and slot["retry"] <= now:
            budget += 1
            connect(slot)
    if now >= next_report:
        next_report = now + 5
        live = sum(1 for slot in slots if slot["sock"] is not None and slot["up"])
        print("STATS open=%d opened=%d closed=%d" % (live, stats["opened"], stats["closed"]), flush=True)
"""#

/// Two network namespaces joined by a veth pair: the victim's (`.1`) and the
/// LAN's (`.2`, a paired device's address, and ``strangerAddresses``).
/// Addresses are `10.232.<n>.x/24`, `<n>` random per LAN; namespaces are
/// named `uaflood-<pid>-…` and deleted by ``tearDown()`` (also from deinit)
/// or, when a killed run left them, by the next set-up.
final class HostileLAN: @unchecked Sendable {
    enum Side: Int { case victim = 0, lan = 1 }

    static let prefix = "uaflood-"
    private let pair: VethNamespacePair
    var namespaces: [String] { pair.namespaces }
    var victimAddress: String { pair.addresses[Side.victim.rawValue][0] }
    var deviceAddress: String { pair.addresses[Side.lan.rawValue][0] }
    var strangerAddresses: [String] { Array(pair.addresses[Side.lan.rawValue].dropFirst()) }

    static var skipReason: String? { VethNamespacePair.skipReason }

    init(strangers: Int = 10) throws {
        // The device's address first: the LAN side's connections come from it unless bound elsewhere.
        pair = try VethNamespacePair(prefix: Self.prefix, interfacePrefix: "uaf", sides: ("v", "l"), network: "10.232",
                                     hosts: ([1], [2] + (0..<strangers).map { 10 + $0 }))
    }

    /// Starts `executable` inside a namespace (`ip netns exec` execs it: the PID is its own).
    func spawn(on side: Side, _ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
        try pair.spawn(in: side.rawValue, executable, arguments, environment: environment)
    }

    /// A handoff daemon on `side`, listening on its address there, with the
    /// descriptor limit its systemd unit sets (`LimitNOFILE=1024`).
    func placement(_ side: Side) -> HandoffStack.Placement {
        let address = side == .victim ? victimAddress : deviceAddress
        return HandoffStack.Placement(listen: "\(address):0", systemBusAddress: nil) { [self] executable, arguments, environment in
            try spawn(on: side, "prlimit", ["--nofile=1024:1024", "--", executable] + arguments, environment: environment)
        }
    }

    func tearDown() { pair.tearDown() }
}

/// What /proc says about a process: open descriptors, threads, its descriptor limit.
struct ProcessUsage {
    let pid: pid_t

    var descriptors: Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1 }

    var threads: Int { statusField("Threads") ?? -1 }

    /// How many descriptors of each kind (`socket`, `anon_inode:[eventfd]`, a file…) are open.
    var descriptorKinds: [String: Int] {
        let directory = "/proc/\(pid)/fd"
        var kinds: [String: Int] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + name) else { continue }
            let kind = target.hasPrefix("socket:") ? "socket" : target.hasPrefix("pipe:") ? "pipe" : target.hasPrefix("/") ? "file" : target
            kinds[kind, default: 0] += 1
        }
        return kinds
    }

    var descriptorLimit: Int {
        let limits = (try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)) ?? ""
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") } ?? ""
        return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first.flatMap { Int($0) } ?? -1
    }

    private func statusField(_ name: String) -> Int? {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
        return line.split(separator: "\t", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }
}

/// The highest of a few samples taken while something runs.
final class UsageSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var stopped = false
    private(set) var maximumDescriptors = 0
    private(set) var maximumThreads = 0
    /// The kinds of descriptors open at the peak.
    private(set) var kindsAtPeak: [String: Int] = [:]
    private let finished = DispatchSemaphore(value: 0)

    init(_ usage: ProcessUsage) {
        Thread { [self] in
            while !lock.withLock({ stopped }) {
                let (fds, threads) = (usage.descriptors, usage.threads)
                let kinds = fds > lock.withLock({ maximumDescriptors }) ? usage.descriptorKinds : nil
                lock.withLock {
                    if let kinds { kindsAtPeak = kinds }
                    maximumDescriptors = max(maximumDescriptors, fds)
                    maximumThreads = max(maximumThreads, threads)
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            finished.signal()
        }.start()
    }

    func stop() -> (descriptors: Int, threads: Int, kinds: [String: Int]) {
        lock.withLock { stopped = true }
        finished.wait()
        return lock.withLock { (maximumDescriptors, maximumThreads, kindsAtPeak) }
    }
}
