// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The command line of `useractivity-bench`.
///
/// Parsed by hand: swift-argument-parser is not a dependency of this target,
/// and a handful of options does not justify one.
struct BenchOptions {
    /// The `useractivityd` executable; nil: `BuiltProducts.useractivityd()`
    /// (which honours `USERACTIVITYD_PATH`).
    var daemonPath: String?
    /// Timed rounds; every selected scenario is sampled once per round.
    var iterations = 20_000
    /// Untimed rounds first, so caches, allocators and the CPU frequency settle.
    var warmup = 2_000
    /// Calls per scenario in the separate CPU-cost pass (0: skip it).
    var cpuSamples = 2_000
    /// An untimed Ping to the daemon after every sample, so the work a call
    /// does after its reply (signals, routed by the bus) is not billed to
    /// whichever sample comes next.
    var fence = true
    /// Case-insensitive scenario names; empty: all of them.
    var scenarios: [String] = []
    var json = false
    /// `--store`: Donate throughput and Search latency at these store sizes instead of the scenarios.
    var store = false
    var storeSizes = [10_000, 100_000]
    var storeSamples = 300
    /// `--report`: the comparison with the peers and Zeitgeist (`--peers` and `--zeitgeist` together).
    var peers = false
    var zeitgeist = false
    /// The C libdbus and GDBus peers built from `bench/peers/` (bench/report.sh builds them).
    var libdbusPeerPath: String?
    var gdbusPeerPath: String?
    /// nil: `zeitgeist-daemon` on PATH; `/usr/lib/zeitgeist/zeitgeist-fts` when it exists.
    var zeitgeistDaemonPath: String?
    var zeitgeistFtsPath: String?
    /// Fewer rounds and samples, and only the first store size (minutes, not ten).
    var quick = false
    /// Set by `--iterations`; the comparison has its own default when not.
    var iterationsGiven = false
    var storeSizesGiven = false
    var storeSamplesGiven = false
    var pipelineDepth = 64
    var pipelineCalls: Int?
    var insertSamples: Int?
    var zeitgeistBatch = 1000
    var listScenarios = false
    /// Unconfined connections that follow the service's signals while the scenarios run.
    var subscribers = 0
    /// `--resilience`: a hostile app's flood and RSS, another client during a 60 MiB message, daemon CPU per Donate.
    var resilience = false
    var help = false

    static let usage = """
        usage: useractivity-bench [--daemon PATH] [--iterations N] [--warmup N]
                                  [--cpu-samples N] [--no-fence]
                                  [--scenario NAME[,NAME...]]...
                                  [--json] [--list-scenarios] [--subscribers N]
               useractivity-bench --store [--store-sizes N,N] [--store-samples N]
               useractivity-bench --report|--peers|--zeitgeist [--quick] [--json]
                                  [--libdbus-peer PATH] [--gdbus-peer PATH] …

        Starts a private session bus, lets it D-Bus-activate useractivityd, and measures
        sequential round trips of one client connection: every scenario is sampled once
        per round (interleaved, so machine noise hits all of them alike) and compared with
        Peer.Ping to the same daemon, measured in the same run.

          --daemon PATH       useractivityd to benchmark (default: the built product;
                              USERACTIVITYD_PATH overrides the search)
          --iterations N      timed rounds (default 20000)
          --warmup N          untimed rounds first (default 2000)
          --resilience        instead: the daemon's RSS before, during and after one app's
                              flood, another client's Get(Version) during a 60 MiB call,
                              and the daemon's CPU per durable Donate (with --quick: shorter)
          --cpu-samples N     calls per scenario in a separate pass that measures the
                              CPU time useractivityd and dbus-daemon spend per call
                              (default 2000; 0 skips it)
          --no-fence          don't send the untimed Ping after each sample that lets the
                              previous call's after-reply work (signals) finish first
          --scenario NAMES    only these scenarios (repeatable or comma-separated;
                              the Ping baseline always runs)
          --json              print one JSON object instead of the table
          --store             instead: durable Donate throughput (sequential, 16 in flight) and
                              Search latency (4 query kinds, next to Ping) at each store size,
                              with the daemon's RSS and the store's size on disk
          --store-sizes N,N   store sizes for --store (default 10000,100000)
          --store-samples N   samples per query kind and size (default 300)
          --report            instead: the comparison with peers (bench/report.sh runs this):
                              --peers and --zeitgeist together, ratios to targets first
          --peers             our CreateActivity and Ping against a C libdbus and a GDBus
                              service (round trips interleaved, then pipelined throughput),
                              and the C one again emitting the contract's ObjectManager signals
          --zeitgeist         durable Donate and Search against Zeitgeist's InsertEvents and
                              full-text search, both filled with the same corpus, at each
                              store size (default 10000,100000)
          --libdbus-peer PATH, --gdbus-peer PATH
                              the peers built from bench/peers/ (needed by --peers)
          --zeitgeist-daemon PATH, --zeitgeist-fts PATH
                              default: zeitgeist-daemon on PATH and
                              /usr/lib/zeitgeist/zeitgeist-fts (apt-get install zeitgeist-core)
          --pipeline-depth N  calls in flight for the throughput pass (default 64)
          --pipeline-calls N  CreateActivity calls per service in that pass (default 20000)
          --insert-samples N  one-entry inserts timed per side and size (default 1000)
          --zeitgeist-batch N events per InsertEvents when filling Zeitgeist (default 1000)
          --quick             fewer rounds and samples, store size 10000 only
                              (with --report/--peers/--zeitgeist the defaults are
                              --iterations 10000, --pipeline-calls 20000,
                              --insert-samples 1000, --store-samples 300; with --quick
                              2000, 4000, 200 and 60)
          --subscribers N     N more unconfined connections that called Subscribe
                              and follow all its signals (each gets a unicast copy of
                              every activity signal; the peers' ObjectManager broadcasts
                              reach them too), to measure what they cost
          --list-scenarios    print the scenario names and exit
          -h, --help          this text
        """

    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ arguments: [String]) throws -> BenchOptions {
        var options = BenchOptions()
        var remaining = arguments[...]

        func value(for option: String, inline: String?) throws -> String {
            if let inline { return inline }
            guard let next = remaining.popFirst() else { throw UsageError(description: "\(option) needs a value") }
            return next
        }
        func count(_ text: String, for option: String, minimum: Int) throws -> Int {
            guard let number = Int(text), number >= minimum else {
                throw UsageError(description: "\(option) wants a whole number ≥ \(minimum), got '\(text)'")
            }
            return number
        }

        while let argument = remaining.popFirst() {
            // Accept both `--option value` and `--option=value`.
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            switch name {
            case "--daemon":
                options.daemonPath = try value(for: name, inline: inline)
            case "--iterations", "-n":
                options.iterations = try count(value(for: name, inline: inline), for: name, minimum: 1)
                options.iterationsGiven = true
            case "--warmup":
                options.warmup = try count(value(for: name, inline: inline), for: name, minimum: 0)
            case "--resilience":
                options.resilience = true
            case "--cpu-samples":
                options.cpuSamples = try count(value(for: name, inline: inline), for: name, minimum: 0)
            case "--scenario", "--scenarios":
                options.scenarios += try value(for: name, inline: inline)
                    .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            case "--no-fence":
                options.fence = false
            case "--subscribers":
                options.subscribers = try count(value(for: name, inline: inline), for: name, minimum: 0)
            case "--json":
                options.json = true
            case "--store":
                options.store = true
            case "--store-sizes":
                options.storeSizes = try value(for: name, inline: inline).split(separator: ",")
                    .map { try count(String($0), for: name, minimum: 5000) }
                options.storeSizesGiven = true
            case "--store-samples":
                options.storeSamples = try count(value(for: name, inline: inline), for: name, minimum: 10)
                options.storeSamplesGiven = true
            case "--report":
                options.peers = true
                options.zeitgeist = true
            case "--peers":
                options.peers = true
            case "--zeitgeist":
                options.zeitgeist = true
            case "--libdbus-peer":
                options.libdbusPeerPath = try value(for: name, inline: inline)
            case "--gdbus-peer":
                options.gdbusPeerPath = try value(for: name, inline: inline)
            case "--zeitgeist-daemon":
                options.zeitgeistDaemonPath = try value(for: name, inline: inline)
            case "--zeitgeist-fts":
                options.zeitgeistFtsPath = try value(for: name, inline: inline)
            case "--quick":
                options.quick = true
            case "--pipeline-depth":
                options.pipelineDepth = try count(value(for: name, inline: inline), for: name, minimum: 1)
            case "--pipeline-calls":
                options.pipelineCalls = try count(value(for: name, inline: inline), for: name, minimum: 100)
            case "--insert-samples":
                options.insertSamples = try count(value(for: name, inline: inline), for: name, minimum: 8)
            case "--zeitgeist-batch":
                options.zeitgeistBatch = try count(value(for: name, inline: inline), for: name, minimum: 1)
            case "--list-scenarios":
                options.listScenarios = true
            case "-h", "--help":
                options.help = true
            default:
                throw UsageError(description: "unknown argument '\(argument)'")
            }
        }
        return options
    }
}
