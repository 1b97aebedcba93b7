// SPDX-License-Identifier: Apache-2.0
import BrowserHostProtocol
import GLibSupport

/// Where the browser's page goes: the service, or a test's recorder.
public protocol PagePublisher: AnyObject {
    /// Make `page` the profile's current activity (created once, then updated in place).
    func publish(_ page: PageState)
    /// Nothing may be published now: the activity stops being current.
    func withdraw()
}

/// Passes the extension's messages on at most once per ``interval``, the
/// last one always. A change is passed on once the loop has nothing else to
/// do (so a burst already read is one update, with its last state), and never
/// sooner than ``interval`` after the one before. No timer or idle source
/// exists unless a message is waiting, so an idle host wakes for nothing.
public final class PageCoalescer {
    /// At most one update per interval (microseconds).
    public static let interval: Int64 = 100_000

    private let scheduler: any Scheduler
    private let publisher: any PagePublisher
    private var lastSentAt: Int64?
    private var published: BrowserMessage?
    private var pending: BrowserMessage?
    private var timer: (any ScheduledWork)?

    /// Updates passed on and messages that changed nothing, for the benchmark and tests.
    public private(set) var sentCount = 0

    public init(scheduler: any Scheduler, publisher: any PagePublisher) {
        self.scheduler = scheduler
        self.publisher = publisher
    }

    /// Whether a message waits for the interval to end.
    public var isWaiting: Bool { timer != nil }

    public func submit(_ message: BrowserMessage) {
        pending = message
        guard timer == nil else { return }
        let now = scheduler.now
        // A clock set back counts as the interval having passed.
        let run: () -> Void = { [weak self] in
            self?.timer = nil
            self?.flush()
        }
        if let lastSentAt, now >= lastSentAt, now - lastSentAt < Self.interval {
            let wait = UInt32((Self.interval - (now - lastSentAt) + 999) / 1000)
            timer = scheduler.after(milliseconds: max(wait, 1), run)
        } else {
            // After the input already read: the client library sends the
            // update when the loop next turns, so it leaves now, not after a
            // long read that would shorten the gap to the next one.
            timer = scheduler.whenIdle(run)
        }
    }

    private func flush() {
        guard let message = pending else { return }
        pending = nil
        guard message != published else { return }
        switch message {
        case .page(let page): publisher.publish(page)
        case .none: publisher.withdraw()
        }
        published = message
        lastSentAt = scheduler.now
        sentCount += 1
    }
}
