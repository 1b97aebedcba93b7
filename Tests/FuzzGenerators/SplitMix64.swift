// SPDX-License-Identifier: Apache-2.0
//
// The project's one seeded generator: FuzzInput's seeded mode here and, as
// symlinks (they are other targets or packages), HardeningTests,
// ActivityStoreTests and useractivity-bench.

/// SplitMix64: tiny, fast, and the same sequence on every platform, which is
/// all a reproducible test needs (`SystemRandomNumberGenerator` cannot be seeded).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
