// SPDX-License-Identifier: Apache-2.0
import BrowserHost
import BrowserHostProtocol
import GLibSupport
import SchedulerTestSupport
import Testing

final class RecordingPublisher: PagePublisher {
    enum Event: Equatable { case publish(PageState), withdraw }
    var events: [Event] = []
    func publish(_ page: PageState) { events.append(.publish(page)) }
    func withdraw() { events.append(.withdraw) }
}

@Suite struct CoalescingTests {
    let scheduler = ManualScheduler(now: 1_800_000_000_000_000)
    let publisher = RecordingPublisher()

    func page(_ n: Int) -> BrowserMessage { .page(PageState(url: "https://example.com/\(n)", title: "Page \(n)")) }

    @Test func aBurstReadAtOnceIsOneUpdateWithTheLastState() {
        let coalescer = PageCoalescer(scheduler: scheduler, publisher: publisher)
        for n in 1...1_000 { coalescer.submit(page(n)) }
        #expect(publisher.events.isEmpty, "nothing before the input is read")
        scheduler.runIdle()
        #expect(publisher.events == [.publish(PageState(url: "https://example.com/1000", title: "Page 1000"))])
        #expect(scheduler.pendingCount == 0, "no timer while idle")
    }

    @Test func changesWithinTheIntervalWaitForItsEnd() {
        let coalescer = PageCoalescer(scheduler: scheduler, publisher: publisher)
        coalescer.submit(page(1))
        scheduler.runIdle()
        for n in 2...500 { coalescer.submit(page(n)) }
        scheduler.runIdle()
        #expect(publisher.events.count == 1)
        #expect(scheduler.pendingCount == 1)
        scheduler.advance(byMilliseconds: 99)
        #expect(publisher.events.count == 1)
        scheduler.advance(byMilliseconds: 1)
        #expect(publisher.events.last == .publish(PageState(url: "https://example.com/500", title: "Page 500")))
        #expect(publisher.events.count == 2)
        #expect(scheduler.pendingCount == 0, "no timer while idle")
    }

    @Test func neverMoreThanOneUpdatePerIntervalAndTheLastStateAlwaysArrives() {
        var g = SplitMix64(state: 5)
        for _ in 0..<50 {
            let scheduler = ManualScheduler(now: 1_800_000_000_000_000)
            let publisher = RecordingPublisher()
            var last: BrowserMessage = .none
            final class Times: PagePublisher {
                let inner: RecordingPublisher; let scheduler: ManualScheduler; var times: [Int64] = []
                init(_ inner: RecordingPublisher, _ scheduler: ManualScheduler) { self.inner = inner; self.scheduler = scheduler }
                func publish(_ page: PageState) { times.append(scheduler.now); inner.publish(page) }
                func withdraw() { times.append(scheduler.now); inner.withdraw() }
            }
            let timed = Times(publisher, scheduler)
            let timedCoalescer = PageCoalescer(scheduler: scheduler, publisher: timed)
            for _ in 0..<200 {
                let message: BrowserMessage = Int.random(in: 0..<8, using: &g) == 0 ? .none : page(Int.random(in: 0..<20, using: &g))
                last = message
                timedCoalescer.submit(message)
                if Bool.random(using: &g) { scheduler.runIdle() }
                scheduler.advance(byMilliseconds: Int64.random(in: 0...60, using: &g))
            }
            scheduler.advance(byMilliseconds: 200)
            for (a, b) in zip(timed.times, timed.times.dropFirst()) { #expect(b - a >= PageCoalescer.interval) }
            let expectedLast: RecordingPublisher.Event
            switch last {
            case .page(let p): expectedLast = .publish(p)
            case .none: expectedLast = .withdraw
            }
            if let final = publisher.events.last { #expect(final == expectedLast) }
            #expect(scheduler.pendingCount == 0)
        }
    }

    @Test func anUnchangedPageIsNotSentAgain() {
        let coalescer = PageCoalescer(scheduler: scheduler, publisher: publisher)
        coalescer.submit(page(1))
        scheduler.advance(byMilliseconds: 500)
        coalescer.submit(page(1))
        scheduler.advance(byMilliseconds: 500)
        coalescer.submit(.none)
        scheduler.advance(byMilliseconds: 500)
        coalescer.submit(.none)
        scheduler.advance(byMilliseconds: 500)
        #expect(publisher.events == [.publish(PageState(url: "https://example.com/1", title: "Page 1")), .withdraw])
    }

    @Test func badInputGetsAnErrorReplyAndTheSessionGoesOn() throws {
        let coalescer = PageCoalescer(scheduler: scheduler, publisher: publisher)
        var replies: [[UInt8]] = []
        let session = HostSession(coalescer: coalescer) { replies.append($0) }
        var stream: [UInt8] = []
        stream += NativeMessaging.frame(Array("garbage".utf8))!
        stream += withUnsafeBytes(of: UInt32(NativeMessaging.maximumIncomingBytes + 1)) { Array($0) }
        stream += [UInt8](repeating: 0x7B, count: NativeMessaging.maximumIncomingBytes + 1)
        stream += NativeMessaging.frame(Array(#"{"type":"page","url":"https://example.com/ok","title":"OK"}"#.utf8))!
        session.received(stream)
        scheduler.runIdle()
        #expect(replies.count == 2)
        for reply in replies {
            let value = try JSONReader.parse(Array(reply.dropFirst(4)))
            #expect(value["type"] == .string("error"))
        }
        #expect(publisher.events == [.publish(PageState(url: "https://example.com/ok", title: "OK"))])
    }
}
