// SPDX-License-Identifier: Apache-2.0
import BrowserHost
import BrowserHostProtocol
import Foundation
import GLibSupport
import UserActivity
#if canImport(Glibc)
import Glibc
#endif

/// `useractivity-browser-host`: started by Firefox or Chromium for the
/// extension's `connectNative` port; publishes the profile's page as one live
/// activity until the browser closes its standard input.
enum BrowserHostCommand {
    static func main(arguments: [String]) -> Int32 {
        if arguments.dropFirst().first == "--help" {
            print("""
                Usage: useractivity-browser-host ORIGIN [EXTENSION-ID]

                The native-messaging host of the UserActivity browser extension: the
                browser starts it (Chromium passes the extension's origin, Firefox the
                manifest path and the extension's ID) and talks to it on standard input
                and output. It publishes the page of the focused tab as the browser's
                current activity on the session bus, and exits when the browser closes
                its standard input.
                """)
            return 0
        }
        signal(SIGPIPE, SIG_IGN)
        let environment = processEnvironment()
        let loop = MainLoop()
        let output = OutputQueue(fd: 1, loop: loop)
        let appID = BrowserIdentity.appID(arguments: arguments, parentExecutable: BrowserIdentity.parentExecutableName(),
                                          environment: environment)

        let client: UserActivityClient
        do {
            client = try UserActivityClient(appID: appID, mainLoop: loop)
        } catch {
            if let framed = NativeMessaging.frame(HostReply.error("cannot reach the UserActivity service: \(error)")) {
                output.write(framed)
            }
            return 1
        }
        let trace = HostTrace(environment: environment)
        let publisher = ActivityPublisher(client: client, trace: trace)
        let coalescer = PageCoalescer(scheduler: GLibScheduler(loop: loop), publisher: publisher)
        let session = HostSession(coalescer: coalescer) { output.write($0) }
        // The client is attached to this loop: its callbacks run on this thread.
        let onLoop = LoopBound((session, loop))
        client.onError = { error, request in
            onLoop.value.0.send(HostReply.error("\(request) failed: \(error)"))
        }
        client.onDisconnected = { onLoop.value.1.quit() }
        session.send(HostReply.ready(appID: appID ?? ""))

        let stdinFlags = fcntl(0, F_GETFL)
        if stdinFlags >= 0 { _ = fcntl(0, F_SETFL, stdinFlags | O_NONBLOCK) }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let input = loop.onFileDescriptor(0, events: [.readable, .hangUp, .error]) {
            while true {
                let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if count > 0 {
                    trace?.mark("read")
                    session.received(buffer[0..<count])
                    continue
                }
                if count < 0 && errno == EINTR { continue }
                if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return true }
                // End of input (or a broken pipe): the browser let go of the port.
                loop.quit()
                return false
            }
        }
        loop.run()
        input.cancel()
        // The service ends the activity with the connection.
        client.close()
        return 0
    }
}

/// The activity of one browser profile: created on the first page, then
/// updated in place; resigned, not ended, while there is nothing to show.
final class ActivityPublisher: PagePublisher {
    private let client: UserActivityClient
    private var activity: UserActivity?
    private let trace: HostTrace?

    init(client: UserActivityClient, trace: HostTrace? = nil) {
        self.client = client
        self.trace = trace
    }

    func publish(_ page: PageState) {
        let activity = self.activity ?? {
            let created = UserActivity(activityType: "org.example.UserActivity.browsing-web", client: client)
            created.isEligibleForHandoff = true
            created.isEligibleForPrediction = false
            self.activity = created
            return created
        }()
        // Current again even if another app became current meanwhile: the
        // person is looking at this page now. Inside one batch the changes
        // travel with becomeCurrent(): its Update and BecomeCurrent leave
        // together, without a round trip to the service between them.
        activity.performBatchUpdates {
            activity.webpageURL = URL(string: page.url)
            activity.title = page.title
            activity.isEligibleForSearch = page.searchable
            activity.becomeCurrent()
        }
        trace?.mark("sent")
    }

    func withdraw() {
        activity?.resignCurrent()
    }
}

/// Objects used only on the loop's thread, handed to callbacks that the
/// client library declares `@Sendable` but runs on that same thread.
final class LoopBound<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
