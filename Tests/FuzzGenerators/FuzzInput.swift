// SPDX-License-Identifier: Apache-2.0

/// Where a structure-aware generator takes its decisions from.
///
/// The same generators run under libFuzzer (decisions read from the fuzzer's
/// bytes, so mutations of the bytes become mutations of the structure) and in
/// the deterministic property test of `HardeningTests` (decisions from a
/// seeded generator, so CI repeats exactly the same cases without libFuzzer).
///
/// In byte mode an exhausted input reads as zeros: every loop in the
/// generators also has an explicit bound, so generation always ends.
public struct FuzzInput {
    private let bytes: [UInt8]
    private var index = 0
    private var rng: SplitMix64?

    /// Decisions read from `bytes` (a libFuzzer input).
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Decisions from a seeded pseudo-random sequence.
    public init(seed: UInt64) {
        self.bytes = []
        self.rng = SplitMix64(seed: seed)
    }

    /// Whether a byte-mode input has been read to its end.
    public var isExhausted: Bool { rng == nil && index >= bytes.count }

    public mutating func byte() -> UInt8 {
        if rng != nil { return UInt8(truncatingIfNeeded: rng!.next()) }
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    /// An integer in `range` (uniform enough for fuzzing; reads up to 4 bytes).
    public mutating func int(_ range: ClosedRange<Int>) -> Int {
        let span = UInt64(range.upperBound - range.lowerBound)
        guard span > 0 else { return range.lowerBound }
        var raw: UInt64 = 0
        if rng != nil {
            raw = rng!.next()
        } else {
            var needed = span
            while needed > 0 {
                raw = raw << 8 | UInt64(byte())
                needed >>= 8
            }
        }
        return range.lowerBound + Int(raw % (span + 1))
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    /// True with roughly `percent`% probability.
    public mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    public mutating func pick<T>(_ items: [T]) -> T {
        precondition(!items.isEmpty)
        return items[int(0...(items.count - 1))]
    }

    public mutating func bytes(count: Int) -> [UInt8] {
        (0..<max(0, count)).map { _ in byte() }
    }

    public mutating func uint64() -> UInt64 {
        if rng != nil { return rng!.next() }
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return value
    }
}
