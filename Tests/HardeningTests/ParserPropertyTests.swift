// SPDX-License-Identifier: Apache-2.0
import FuzzGenerators
import ActivityStore
import DBusKit
import Foundation
import GLibSupport
import TestSupport
import Testing
import TypedValues
import UserActivityCore
import UserActivityService

/// The libFuzzer harnesses' generators and properties (Fuzz/Sources/FuzzGenerators,
/// symlinked into Shared/), run from fixed seeds so that CI exercises them
/// without libFuzzer and a failure names the seed that reproduces it.
///
/// `FUZZ_ITERATIONS=<n>` runs each property <n> times instead of its default.
@Suite("Parser properties (deterministic fuzzing)")
struct ParserPropertyTests {
    static func iterations(_ standard: Int) -> Int {
        ProcessInfo.processInfo.environment["FUZZ_ITERATIONS"].flatMap { Int($0) } ?? standard
    }
    static let loader: KeyFileLoader = { GLibKeyFile.load(path: $0) }

    /// Runs `check` for `iterations` seeds; records each violation with its seed.
    private func run(_ name: String, iterations: Int, _ check: (inout FuzzInput, UInt64) -> [String]) {
        var failures = 0
        for i in 0..<Self.iterations(iterations) {
            let seed = UInt64(i) &* 0x9E37_79B9 &+ 0x5EED
            var input = FuzzInput(seed: seed)
            let violations = check(&input, seed)
            if !violations.isEmpty {
                failures += 1
                Issue.record("\(name), seed \(seed): \(violations.joined(separator: "; "))")
                if failures >= 5 { return }
            }
        }
    }

    @Test("cgroup lines: snap names, app units and their app ID candidates, systemd unescaping")
    func cgroupLines() {
        run("cgroup", iterations: 5000) { input, _ in ParserProperties.checkCgroup(&input) }
    }

    @Test(".flatpak-info and /proc trees: a sandbox is never taken for the host, a vanished process has no app")
    func processTrees() throws {
        let scratch = try TemporaryDirectory(prefix: "uahf-")
        run("process tree", iterations: 1500) { input, _ in
            ParserProperties.checkProcessTree(&input, procRoot: scratch.appending("proc"), loadKeyFile: Self.loader)
        }
    }

    @Test("Desktop entries: precedence, the team rule and declared types hold for any file contents")
    func desktopEntries() throws {
        let scratch = try TemporaryDirectory(prefix: "uahd-")
        run("desktop entries", iterations: 1000) { input, _ in
            ParserProperties.checkDesktopEntries(&input, scratch: scratch.appending("apps"), loadKeyFile: Self.loader)
        }
    }

    @Test("Properties and user-info: parse/applied/merge keep every limit, and accepted values round-trip through the store codec")
    func userInfo() {
        run("user info", iterations: 4000) { input, _ in ParserProperties.checkUserInfo(&input) }
    }

    @Test("Store codec: damaged and arbitrary blobs never crash decoding")
    func codecDecode() {
        run("codec", iterations: 5000) { input, _ in
            ParserProperties.checkDecode(input.bytes(count: input.int(0...64)))
                + ParserProperties.checkDecode(ParserProperties.damagedEncoding(&input))
        }
    }

    /// The libFuzzer corpus kept in the repository (Fuzz/Corpus), replayed
    /// through the same properties: CI runs every input the fuzzers found
    /// interesting, without libFuzzer.
    @Test("The fuzzers' corpus in Fuzz/Corpus replays without a violation")
    func corpusReplays() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let corpus = root.appendingPathComponent("Fuzz/Corpus").path
        let scratch = try TemporaryDirectory(prefix: "uahc-")
        let checks: [String: ([UInt8]) -> [String]] = [
            "fuzz-desktop-entries": { bytes in
                var input = FuzzInput(bytes: bytes)
                return ParserProperties.checkDesktopEntries(&input, scratch: scratch.appending("apps"), loadKeyFile: Self.loader)
            },
            "fuzz-cgroup": { bytes in var input = FuzzInput(bytes: bytes); return ParserProperties.checkCgroup(&input) },
            "fuzz-process-tree": { bytes in
                var input = FuzzInput(bytes: bytes)
                return ParserProperties.checkProcessTree(&input, procRoot: scratch.appending("proc"), loadKeyFile: Self.loader)
            },
            "fuzz-user-info": { bytes in var input = FuzzInput(bytes: bytes); return ParserProperties.checkUserInfo(&input) },
            "fuzz-codec-decode": { bytes in
                var input = FuzzInput(bytes: bytes)
                return ParserProperties.checkDecode(bytes) + ParserProperties.checkDecode(ParserProperties.damagedEncoding(&input))
            },
        ]
        var replayed = 0
        for (harness, check) in checks.sorted(by: { $0.key < $1.key }) {
            let directory = corpus + "/" + harness
            let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            #expect(!files.isEmpty, "no corpus for \(harness)")
            for file in files {
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file)))
                let violations = check(bytes)
                if !violations.isEmpty { Issue.record("\(harness)/\(file): \(violations.joined(separator: "; "))") }
                replayed += 1
            }
        }
        print("replayed \(replayed) corpus inputs")
    }

    @Test("Nesting at the codec's limit: 64 containers round-trip, 65 are refused")
    func codecDepthLimit() throws {
        func nested(_ depth: Int) -> TypedValue {
            var value = TypedValue.int32(1)
            for level in 0..<depth {
                switch level % 3 {
                case 0: value = .variant(value)
                case 1: value = .array(elementType: value.signature, [value])
                default: value = .structure([value, .byte(0)])
                }
            }
            return value
        }
        let deepest = nested(TypedValueCodec.maximumDepth)
        #expect(try TypedValueCodec.decode(TypedValueCodec.encode(deepest)).isIdentical(to: deepest))
        #expect(throws: CodecError.self) { try TypedValueCodec.encode(nested(TypedValueCodec.maximumDepth + 1)) }
        // A forged blob nesting deeper is refused, not a stack overflow.
        let forged: [UInt8] = [1] + Array(repeating: UInt8(ascii: "v"), count: 100_000) + [UInt8(ascii: "y"), 0]
        #expect(throws: CodecError.self) { try TypedValueCodec.decode(forged) }
    }

    /// Values of at most five elements per container, nested up to `depth`.
    static func smallValues(depth: Int) -> ValueGenerator {
        var configuration = ValueGenerator.Configuration()
        configuration.maximumDepth = depth
        configuration.maximumElements = 5
        return ValueGenerator(configuration)
    }

    /// The spec defines user-info's size as libdbus's marshalled length; the
    /// daemon computes it without libdbus (`marshalledSize`, and
    /// `stringVariantDictionarySize` for a list of pairs). They must agree
    /// for every value, or the 64 KiB limit is off.
    @Test("marshalledSize equals the length libdbus marshals, for random values")
    func marshalledSizeMatchesLibdbus() throws {
        let values = Self.smallValues(depth: 10)
        var mismatches = 0
        for i in 0..<Self.iterations(3000) {
            var input = FuzzInput(seed: UInt64(i) &+ 77)
            let entries: [(key: String, value: TypedValue)]? = i % 2 == 0
                ? (0..<input.int(0...4)).map { ("k\($0)", values.value(&input)) } : nil
            let value: TypedValue = entries.map { .stringVariantDictionary($0.map { ($0.key, $0.value) }) } ?? values.value(&input)
            let message = Message.methodCall(destination: nil, path: "/", interface: "x.y", member: "Z")
            try message.append([value])
            let libdbus = try message.marshalledBodyLength()
            if let entries, TypedValue.stringVariantDictionarySize(entries) != libdbus {
                mismatches += 1
                Issue.record("\(value.signature): libdbus marshals \(libdbus) bytes, stringVariantDictionarySize says \(TypedValue.stringVariantDictionarySize(entries))")
            }
            if libdbus != value.marshalledSize {
                mismatches += 1
                Issue.record("\(value.signature): libdbus marshals \(libdbus) bytes, marshalledSize says \(value.marshalledSize)")
                if mismatches >= 5 { return }
            }
        }
    }

    /// The reader takes an array's element type, and a dictionary's key and
    /// value types, from type codes when one code is the whole type, and from
    /// libdbus's signature otherwise; empty and nested containers included,
    /// what it reads must be what was sent.
    @Test("values read back from a marshalled message equal the values sent")
    func readingGivesBackWhatWasSent() throws {
        let generator = Self.smallValues(depth: 8)
        let failingSeeds = try (0..<UInt64(Self.iterations(3000))).filter { seed throws in
            var input = FuzzInput(seed: seed &+ 4242)
            let sent = (0..<input.int(1...3)).map { _ in generator.value(&input) }
            let message = Message.methodCall(destination: nil, path: "/", interface: "x.y", member: "Z")
            try message.append(sent)
            // Compared as codec bytes: a NaN is not equal to itself.
            return try TypedValueCodec.encode(.structure(message.arguments())) != TypedValueCodec.encode(.structure(sent))
        }
        #expect(failingSeeds.isEmpty, "seeds (plus 4242) whose values came back different: \(failingSeeds.prefix(5))")
    }

    /// The size check skips its walk when the properties array's wire length
    /// is within the limits, so that length must be the array's real length
    /// and never less than what the walk would measure.
    @Test("an a{sv} argument's wire length is its marshalled length and bounds its entries' sizes")
    func arrayLengthBoundsEntrySizes() throws {
        let values = Self.smallValues(depth: 6)
        var failures = 0
        for i in 0..<Self.iterations(1000) {
            var input = FuzzInput(seed: UInt64(i) &+ 991)
            let dictionary = TypedValue.stringVariantDictionary((0..<input.int(0...5)).map { ("key\($0)", values.value(&input)) })
            let alone = Message.methodCall(destination: nil, path: "/", interface: "x.y", member: "Z")
            try alone.append([dictionary])
            // The length, padding to the 8-byte entries, then the entries.
            let wire = try alone.marshalledBodyLength() - 8
            let donate = Message.methodCall(destination: nil, path: "/", interface: "x.y", member: "Z")
            try donate.append([.string("com.example.Editor.edit-document"), dictionary])
            let measured = donate.marshalledSizes(ofEntriesIn: 1, upTo: Int.max).reduce(0) { $0 + $1.size }
            let length = donate.marshalledArrayLength(ofArgument: 1)
            if alone.marshalledArrayLength(ofArgument: 0) != wire || length != wire || measured > wire
                || donate.marshalledArrayLength(ofArgument: 0) != nil {
                failures += 1
                Issue.record("seed \(i): wire \(wire), alone \(String(describing: alone.marshalledArrayLength(ofArgument: 0))), after a string \(String(describing: length)), entries measured \(measured)")
                if failures >= 5 { return }
            }
        }
    }
}
