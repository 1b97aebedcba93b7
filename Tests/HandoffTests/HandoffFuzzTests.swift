// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import HandoffCore
import TestSupport
import Testing
import TypedValues

/// The handoff fuzzer: a real useractivity-handoffd (A, with useractivityd,
/// on a private bus and XDG dirs) paired with several devices whose daemons
/// are then stopped; their keys connect to A again, one input per link,
/// sending mutations of the committed corpus (`FuzzCorpus/`). After each
/// input A must still run, answer on D-Bus (its properties and every device
/// object) and serve a fresh paired link;
/// an input after which it does not is saved as a reproducer.
///
/// `HANDOFF_FUZZ=1` runs it (scripts/test.sh does, briefly); the knobs:
/// `HANDOFF_FUZZ_SECONDS` (default 45), `HANDOFF_FUZZ_SEED` (default 1: CI
/// repeats the same inputs), `HANDOFF_FUZZ_IDENTITIES` (paired keys, default
/// 2), `HANDOFF_FUZZ_ARTIFACTS` (where reproducers and the summary go,
/// default `.build/handoff-fuzz`), `HANDOFF_FUZZ_REPLAY` (a reproducer file:
/// send only it, unmutated).
@Suite("Handoff fuzzer: a paired link driven with mutated frame sequences", .serialized)
struct HandoffFuzzTests {
    static let environment = ProcessInfo.processInfo.environment
    static let enabled = environment["HANDOFF_FUZZ"] == "1" || environment["HANDOFF_FUZZ_REPLAY"] != nil
    static let apps: [(id: String, types: [String])] = [(UA.editor, [UA.editType])]
    /// The sentinel after each input: a fetch of nothing, which a serving daemon answers with an error for this request.
    static let sentinelRequest: UInt32 = 0xFFFF_FFFE

    @Test func theCorpusIsValidFrameSequences() throws {
        if Self.environment["HANDOFF_FUZZ_WRITE_CORPUS"] == "1" { try FuzzSeeds.write() }
        let corpus = try FuzzSeeds.load()
        #expect(corpus.count == FuzzSeeds.all().count, "\(corpus.map(\.name))")
        for (name, sequence) in corpus {
            let frames = try sequence.frames(sequence.sends) + sequence.frames(sequence.replies)
            #expect(!frames.isEmpty && !frames.contains { $0.kind == .unpair }, "\(name)")
            // The committed text is what the encoder makes of the seeds today.
            let built = FuzzSeeds.all().first { $0.name + ".frames" == name }?.sequence
            #expect(built == sequence, "\(name) differs from FuzzSeeds.all(); HANDOFF_FUZZ_WRITE_CORPUS=1 rewrites it")
        }
    }

    @Test func mutationsAreReproducibleFromTheSeed() throws {
        let corpus = try FuzzSeeds.load().map(\.sequence)
        func run(_ seed: UInt64) -> [FuzzSequence] {
            var mutator = FrameMutator(seed: seed, activityID: "5")
            return (0..<200).map { mutator.mutate(corpus[$0 % corpus.count], splicing: corpus) }
        }
        let first = run(7)
        #expect(first == run(7))
        #expect(first != run(8))
        #expect(Set(first.map { $0.text(comment: "") }).count > 150, "mutations repeat themselves")
    }

    @Test(.enabled(if: enabled)) func aPairedLinkDrivenWithMutatedFramesNeverStopsTheDaemon() throws {
        let seconds = Double(Self.environment["HANDOFF_FUZZ_SECONDS"] ?? "") ?? 45
        let seed = UInt64(Self.environment["HANDOFF_FUZZ_SEED"] ?? "") ?? 1
        let artifacts = Self.environment["HANDOFF_FUZZ_ARTIFACTS"] ?? repositoryRoot() + "/.build/handoff-fuzz"
        try FileManager.default.createDirectory(atPath: artifacts, withIntermediateDirectories: true)
        let fuzzer = try HandoffFuzzer(identities: Int(Self.environment["HANDOFF_FUZZ_IDENTITIES"] ?? "") ?? 2, artifacts: artifacts)
        let report: HandoffFuzzer.Report
        if let replay = Self.environment["HANDOFF_FUZZ_REPLAY"] {
            report = try fuzzer.replay(FuzzSequence(text: String(contentsOfFile: replay, encoding: .utf8)))
        } else {
            report = try fuzzer.run(seconds: seconds, seed: seed, corpus: FuzzSeeds.load().map(\.sequence))
        }
        let summary = report.summary
        print(summary)
        try writeFileAtomically(artifacts + "/summary.txt", contents: summary)
        try writeFileAtomically(artifacts + "/inputs.txt", contents: report.log.joined(separator: "\n") + "\n")
        try writeFileAtomically(artifacts + "/handoffd.log", contents: fuzzer.stacks.a.handoffLog)
        #expect(report.inputs > 0, "\(fuzzer.stacks.logs)")
        #expect(report.failures.isEmpty, "\(report.failures.joined(separator: "\n"))")
    }
}

/// Runs inputs against stack A through `Peers/fuzz_peer.py` and checks A after each.
final class HandoffFuzzer {
    struct Report {
        var inputs = 0
        var probes = 0
        var kinds: [String: Int] = [:]
        var mutations: [String: Int] = [:]
        var outcomes: [String: Int] = [:]
        var answeredKinds: [String: Int] = [:]
        var disconnectReasons: [String: Int] = [:]
        var failures: [String] = []
        var seconds = 0.0
        /// One line per input: its number, seconds taken, what became of the link, the mutations.
        var log: [String] = []

        var summary: String {
            func table(_ counts: [String: Int]) -> String {
                counts.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }.map { "  \($0.key): \($0.value)" }.joined(separator: "\n")
            }
            return """
            handoff fuzzer: \(inputs) inputs, \(probes) probes in \(Int(seconds)) s, \(failures.count) failures
            frame kinds sent (\(kinds.count) distinct):
            \(table(kinds))
            mutations applied (\(mutations.count) distinct):
            \(table(mutations))
            what became of each link:
            \(table(outcomes))
            frame kinds the daemon sent back:
            \(table(answeredKinds))
            the daemon's reasons for dropping a link (\(disconnectReasons.count) distinct):
            \(table(disconnectReasons))
            \(failures.isEmpty ? "" : "failures:\n" + failures.joined(separator: "\n"))
            """
        }
    }

    let stacks: TwoStacks
    /// The paired devices' state directories: each is a key A trusts.
    private(set) var identities: [String] = []
    /// Each identity's device object on A.
    private var devicePaths: [String: String] = [:]
    /// Stacks kept for their buses and state (their daemons stopped).
    private var others: [Stack] = []
    private let artifacts: String
    private var peer: ChildProcess!
    private var handler: ChildProcess?
    private var commands: FileHandle!
    private var activityID = ""
    private var activityPath = ""
    /// ContinueActivity calls on A still running: since when, and for which input.
    private var pendingContinues: [(call: BackgroundCall, since: Date, sequence: FuzzSequence, mutations: [String])] = []

    init(identities count: Int, artifacts: String) throws {
        self.artifacts = artifacts
        // Most inputs break the protocol; the back-off that follows (its own
        // tests hold it) would soon keep every identity out for minutes.
        stacks = try TwoStacks(appsA: HandoffFuzzTests.apps, appsB: HandoffFuzzTests.apps,
                               handoffEnvironment: ["USERACTIVITY_HANDOFF_BACKOFF_SECONDS": "0"])
        let (onA, _) = try stacks.pair()
        identities.append(PeerScripts.identity(of: stacks.b))
        var devices = [onA]
        for index in 1..<max(1, count) {
            let other = try Stack("C\(index)", apps: HandoffFuzzTests.apps)
            try other.set("DeviceName", .string("Stack C\(index)"))
            try other.set("Enabled", .boolean(true))
            try other.set("Discoverable", .boolean(true))
            _ = try other.startAgent(accept: true)
            guard let path = try stacks.a.handoff("AddPeer", [.string("127.0.0.1:\(other.port)")]).first?.objectPathValue else {
                throw HandoffTestFailure("AddPeer returned no path")
            }
            _ = try stacks.a.call(HO.busName, path, HO.device, "Pair")
            guard stacks.a.waitForDevice(path, "Paired", { $0 == .boolean(true) }) else { throw HandoffTestFailure("C\(index) never paired: \(stacks.logs)") }
            others.append(other)
            identities.append(PeerScripts.identity(of: other))
            devices.append(path)
        }
        stacks.b.killHandoffd()
        for other in others { other.killHandoffd() }
        devicePaths = Dictionary(uniqueKeysWithValues: zip(identities, devices))
        for device in devices {
            guard stacks.a.waitForDevice(device, "Reachable", { $0 == .boolean(false) }) else { throw HandoffTestFailure("\(device) stayed reachable") }
        }
        // The editor runs on A: a continuation reaches it at once instead of waiting for an app to start.
        handler = try HandlerFixture.start(app: UA.editor, bus: stacks.a.bus, directory: stacks.a.session.root)
        try refreshActivity()
        try startPeer()
    }

    deinit {
        peer?.terminate(grace: 0.5)
        handler?.terminate(grace: 0.5)
        try? commands?.close()
    }

    private func startPeer() throws {
        peer?.terminate(grace: 0.5)
        try? commands?.close()
        let fifo = stacks.b.session.root + "/fuzz-commands-\(UInt32.random(in: 0...UInt32.max))"
        guard mkfifo(fifo, 0o600) == 0 else { throw HandoffTestFailure("mkfifo \(fifo): \(errno)") }
        let hello = Frame(.hello, ["name": .string("Fuzzed device"), "version": .uint32(1), "port": .uint32(0)])
        let sentinel = Frame(.fetch, ["request": .uint32(HandoffFuzzTests.sentinelRequest), "id": .string(""), "timeout-ms": .uint32(1000)])
        let request = withUnsafeBytes(of: HandoffFuzzTests.sentinelRequest.littleEndian) { [UInt8(ascii: "v"), UInt8(ascii: "u")] + $0 }
        peer = try stacks.b.bus.spawn("/usr/bin/python3", [PeerScripts.path("fuzz_peer.py"), "\(stacks.a.port)", fifo,
                                                          Hex.encode(FrameCodec.encode(hello)), Hex.encode(FrameCodec.encode(sentinel)), Hex.encode(request)])
        // Opening the FIFO for writing waits for the peer to open it for reading.
        commands = FileHandle(forWritingAtPath: fifo)
        guard commands != nil, try peer.readLine(timeout: 30) == "STARTED" else { throw HandoffTestFailure("fuzz peer did not start: \(peer.stderrText)") }
    }

    private func send(_ line: String) {
        commands.write(Data((line + "\n").utf8))
    }

    /// A's current activity, eligible for handoff: what `fetch`, `continued`, stream and file frames name.
    private func refreshActivity() throws {
        // The one before is ended: a connection may hold only so many live activities.
        if !activityPath.isEmpty {
            _ = try? stacks.a.call("org.example.UserActivity", activityPath, "org.example.UserActivity.Activity", "Invalidate")
        }
        activityPath = try stacks.a.becomeCurrent(app: UA.editor, type: UA.editType, [("title", .string("Quarterly report"))])
        activityID = String(activityPath.split(separator: "/").last ?? "")
    }


    func replay(_ sequence: FuzzSequence) throws -> Report {
        var report = Report()
        let started = Date()
        try execute(sequence, mutations: ["replay"], identity: identities[0], into: &report)
        try collectContinues(waitingForAll: true, into: &report)
        report.seconds = Date().timeIntervalSince(started)
        collectDisconnectReasons(into: &report)
        return report
    }

    func run(seconds: Double, seed: UInt64, corpus: [FuzzSequence]) throws -> Report {
        var report = Report()
        var mutator = FrameMutator(seed: seed, activityID: activityID)
        let started = Date()
        var index = 0
        while Date().timeIntervalSince(started) < seconds {
            if index % 25 == 0 { try refreshActivity() }
            mutator.activityID = activityID
            let base = corpus[index % corpus.count]
            // One input in eight is a seed unmutated: the valid paths stay covered.
            let sequence = index % 8 == 0 ? base : mutator.mutate(base, splicing: corpus)
            let mutations = index % 8 == 0 ? ["none"] : mutator.applied
            try execute(sequence, mutations: mutations, identity: identities[index % identities.count], into: &report)
            index += 1
        }
        try collectContinues(waitingForAll: true, into: &report)
        report.seconds = Date().timeIntervalSince(started)
        collectDisconnectReasons(into: &report)
        return report
    }

    private func execute(_ sequence: FuzzSequence, mutations: [String], identity: String, into report: inout Report) throws {
        report.inputs += 1
        let started = Date()
        var outcome = "-"
        defer { report.log.append(String(format: "%d %.2f ", report.inputs, Date().timeIntervalSince(started)) + outcome + " " + mutations.joined(separator: ",")) }
        for mutation in mutations { report.mutations[mutation, default: 0] += 1 }
        for chunk in sequence.sends + sequence.replies where chunk.count > 4 {
            report.kinds[FrameKind(rawValue: chunk[4]).map { "\($0)" } ?? "an unknown kind", default: 0] += 1
        }
        let pid = stacks.a.handoffd?.pid
        func hex(_ chunks: [[UInt8]]) -> String { chunks.isEmpty ? "-" : chunks.map(Hex.encode).joined(separator: ",") }
        send("RUN \(identity) \(hex(sequence.sends)) \(hex(sequence.replies))")
        var problem: String?
        var continuing: BackgroundCall?
        while true {
            guard let line = try? peer.readLine(timeout: 60) else {
                problem = "the fuzz peer gave no answer in 60 s (the daemon neither answered nor closed the link)"
                try startPeer()
                break
            }
            if line == "READY" {
                // The person presses Continue on A for the advert, once A shows it.
                let device = devicePaths[identity] ?? ""
                if stacks.a.waitForDevice(device, "CurrentActivity", timeout: 3, { $0?.stringVariantEntries?.isEmpty == false }) {
                    continuing = try stacks.a.callInBackground(device, HO.device, "ContinueActivity", [.stringVariantDictionary([])])
                    report.outcomes["continue pressed", default: 0] += 1
                } else {
                    send("SKIP")
                    report.outcomes["advert not shown, continue skipped", default: 0] += 1
                }
                continue
            }
            let words = line.split(separator: " ")
            guard words.first == "RESULT", words.count == 3 else { continue }
            report.outcomes[String(words[1]), default: 0] += 1
            outcome = String(words[1])
            for kind in words[2].split(separator: ",") where kind != "-" {
                report.answeredKinds[UInt8(kind).flatMap(FrameKind.init(rawValue:)).map { "\($0)" } ?? String(kind), default: 0] += 1
            }
            break
        }
        // A continued activity waits for its app (which never comes here) as long as a local continuation would:
        // the calls go on in the background and are collected as they end.
        if let continuing { pendingContinues.append((continuing, Date(), sequence, mutations)) }
        try collectContinues(waitingForAll: pendingContinues.count > 8, into: &report)
        if problem == nil { problem = check(pid, after: identity, into: &report) }
        if let problem { try record(problem, sequence, mutations, into: &report) }
    }

    /// Counts the ContinueActivity calls that returned; one that took over 120 s is a failure.
    private func collectContinues(waitingForAll: Bool, into report: inout Report) throws {
        if waitingForAll { _ = waitUntil(timeout: 130) { pendingContinues.allSatisfy { $0.call.value != nil } } }
        var still: [(call: BackgroundCall, since: Date, sequence: FuzzSequence, mutations: [String])] = []
        for pending in pendingContinues {
            if let value = pending.call.value {
                report.outcomes["continue answered \(value)", default: 0] += 1
            } else if Date().timeIntervalSince(pending.since) > 120 {
                try record("ContinueActivity on A did not return in 120 s", pending.sequence, pending.mutations, into: &report)
            } else {
                still.append(pending)
            }
        }
        pendingContinues = still
    }

    /// Nil when A is the same process, answers on D-Bus and serves a fresh paired link.
    private func check(_ pid: pid_t?, after identity: String, into report: inout Report) -> String? {
        guard let daemon = stacks.a.handoffd, daemon.pid == pid, daemon.isRunning else {
            return "handoffd exited: \(stacks.a.handoffd?.termination.map { "\($0)" } ?? "?")"
        }
        do {
            _ = try stacks.a.call(HO.busName, HO.managerPath, "org.freedesktop.DBus.Properties", "GetAll", [.string(HO.manager)], timeout: 20_000)
            // Every device object, the fuzzed ones too, must stay readable: one value D-Bus cannot carry would fail them all.
            _ = try stacks.a.call(HO.busName, HO.managerPath, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", timeout: 20_000)
        } catch {
            return "handoffd did not answer Properties.GetAll and GetManagedObjects in 20 s: \(error)"
        }
        // A fresh link, first from another identity (the one that misbehaved may be held back for a while).
        let order = identities.filter { $0 != identity } + [identity]
        let deadline = Date().addingTimeInterval(60)
        var last = ""
        while Date() < deadline {
            for candidate in order {
                report.probes += 1
                send("PROBE \(candidate)")
                guard let line = try? peer.readLine(timeout: 60) else { return "the fuzz peer gave no probe answer in 60 s" }
                if line.hasPrefix("PROBE ok") { return nil }
                report.outcomes["probe refused: \(line.dropFirst("PROBE failed ".count).prefix(60))", default: 0] += 1
                last = line
            }
            Thread.sleep(forTimeInterval: 1)
        }
        return "no paired identity got a fresh link answered for 60 s: \(last)"
    }

    private func record(_ problem: String, _ sequence: FuzzSequence, _ mutations: [String], into report: inout Report) throws {
        // A problem that stays (a state the daemon kept) is saved once, then only counted.
        let kind = String(problem.prefix(60))
        report.outcomes["failed: " + kind, default: 0] += 1
        if report.outcomes["failed: " + kind, default: 0] > 1 && stacks.a.handoffd?.isRunning == true { return }
        let name = "reproducer-\(report.failures.count + 1).frames"
        let log = stacks.a.handoffLog.suffix(6000)
        try writeFileAtomically(artifacts + "/" + name, contents: sequence.text(comment: "\(problem)\nmutations: \(mutations.joined(separator: " "))\n"
            + "replay: HANDOFF_FUZZ_REPLAY=\(artifacts)/\(name) swift test --filter HandoffFuzzTests"))
        try writeFileAtomically(artifacts + "/" + name + ".log", contents: String(log))
        report.failures.append("\(problem) (input \(report.inputs), \(artifacts)/\(name))")
        // Go on with a daemon that runs: the same state, the same pairings.
        if stacks.a.handoffd?.isRunning != true {
            try stacks.a.startHandoffd()
            guard waitUntil(timeout: 20, { stacks.a.port > 0 }) else { throw HandoffTestFailure("A did not listen again") }
            try refreshActivity()
            try startPeer()
        }
    }

    /// Why A closed links, as it logged them, with numbers and addresses taken out.
    private func collectDisconnectReasons(into report: inout Report) {
        for line in stacks.a.handoffLog.split(separator: "\n") {
            guard let closed = line.range(of: ") closed: ") else { continue }
            let reason = String(line[closed.upperBound...]).replacingOccurrences(of: #"[0-9]+"#, with: "N", options: .regularExpression)
            report.disconnectReasons[String(reason.prefix(100)), default: 0] += 1
        }
    }
}
