// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

/// Nanoseconds on `CLOCK_MONOTONIC`: immune to wall-clock steps (NTP) during a
/// run, and cheap enough (vDSO, tens of ns) not to show in a ~100 µs sample.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Order statistics of one scenario's samples, in microseconds.
struct LatencySummary: Codable {
    var samples: Int
    var minUs: Double
    var p50Us: Double
    var p90Us: Double
    var p99Us: Double
    var p999Us: Double
    var maxUs: Double
    var meanUs: Double

    init(nanoseconds: [UInt64]) {
        precondition(!nanoseconds.isEmpty, "a summary needs samples")
        let sorted = nanoseconds.sorted()
        func us(_ ns: UInt64) -> Double { Double(ns) / 1000 }
        samples = sorted.count
        minUs = us(sorted[0])
        maxUs = us(sorted[sorted.count - 1])
        p50Us = us(Self.percentile(sorted, 0.50))
        p90Us = us(Self.percentile(sorted, 0.90))
        p99Us = us(Self.percentile(sorted, 0.99))
        p999Us = us(Self.percentile(sorted, 0.999))
        // Sum in Double: 20 000 samples of ~1e5 ns cannot overflow, but a
        // pathological stall plus many iterations should not trap either.
        meanUs = sorted.reduce(0.0) { $0 + Double($1) } / Double(sorted.count) / 1000
    }

    /// Nearest-rank percentile: always an observed value, no interpolation
    /// that would invent latencies between two samples.
    static func percentile(_ sorted: [UInt64], _ fraction: Double) -> UInt64 {
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}
