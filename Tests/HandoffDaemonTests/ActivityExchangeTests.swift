// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport
import HandoffCore
import Testing
import TypedValues
import UserActivityInterfaces
@testable import useractivity_handoffd

/// `useractivityd` as handoffd calls it for a handoff (`FetchForHandoff`,
/// `MarkContinued`, `ContinueActivity`), on the test's bus: it answers what
/// the test chooses and records every call.
final class FakeUserActivityd {
    struct NameTaken: Error {}
    let connection: Connection
    /// What `FetchForHandoff` answers: the activity's type and properties.
    var payload: (type: String, properties: TypedValue) = ("", variants([]))
    /// The activity paths fetched, the activities marked continued (and by which app), the activities continued here.
    var fetched: [String] = []
    var marked: [(path: String, app: String)] = []
    var continued: [(type: String, properties: TypedValue)] = []
    /// The app `ContinueActivity` says continued it.
    let continuingApp = "org.example.Editor"

    init(address: String, loop: MainLoop) throws {
        connection = try Connection.bus(address: address)
        try DBusMainLoopBridge.attach(connection, to: loop)
        guard try connection.requestName(Interfaces.busName) == .primaryOwner else { throw NameTaken() }
        try connection.registerFallback(path: Interfaces.managerPath) { [unowned self] message in
            let arguments = (try? message.arguments()) ?? []
            var reply: [TypedValue] = []
            switch message.member {
            case "FetchForHandoff":
                fetched.append(arguments.first?.objectPathValue ?? "")
                reply = [.string(payload.type), payload.properties]
            case "MarkContinued":
                marked.append((arguments.first?.objectPathValue ?? "", arguments.dropFirst().first?.stringValue ?? ""))
            case "ContinueActivity":
                continued.append((arguments.first?.stringValue ?? "", arguments.dropFirst().first ?? variants([])))
                reply = [.string(continuingApp)]
            default:
                break
            }
            if let answer = try? Message.methodReturn(to: message, reply) { _ = connection.send(answer) }
            return true
        }
    }
}

/// An `a{sv}` of `pairs`.
func variants(_ pairs: [(String, TypedValue)]) -> TypedValue {
    .dictionary(keyType: "s", valueType: "v", pairs.map { TypedValue.DictionaryEntry(key: .string($0.0), value: .variant($0.1)) })
}

/// ``ActivityExchange``'s own rules: two devices linked over 127.0.0.1 and
/// paired, `a` the origin of the activity and `b` where it is continued,
/// each with a real exchange and the same fake `useractivityd`; where a test
/// speaks for one device, the frames it sends are the peer's real input.
/// Time is a ``ManualScheduler``.
@Suite(.serialized) struct ActivityExchangeTests {
    final class Exchanges {
        let devices: TwoDevices
        let useractivityd: FakeUserActivityd
        /// a's exchange: the origin of the activity.
        let origin: ActivityExchange
        /// b's exchange: where it is continued.
        let receiver: ActivityExchange
        /// The exchange's frames each side got, in order.
        var atOrigin: [Frame] = []
        var atReceiver: [Frame] = []
        /// Whether a's (b's) exchange handles them; false where the test speaks for that device.
        var originAnswers = true
        var receiverAnswers = true

        /// a's current activity: a web page, continuable anywhere.
        static let webPage = Advert(id: "4d2f09a1", activityType: "org.example.Browse", appID: "org.example.Browser", title: "Release notes",
                                    webpageURL: "https://example.org/notes", timestamp: 1)
        static let document = Advert(id: "77b1c3e0", activityType: AdvertDecision.openDocumentType, appID: "org.example.Writer",
                                     title: "report.odt", webpageURL: "", timestamp: 2)

        init(_ devices: TwoDevices) throws {
            self.devices = devices
            let (a, b) = (devices.a!, devices.b!)
            useractivityd = try FakeUserActivityd(address: devices.bus.address, loop: devices.loop)
            origin = ActivityExchange(context: a.context)
            receiver = ActivityExchange(context: b.context)
            for (side, exchange) in [(a, origin), (b, receiver)] {
                side.context.activitySource = ActivitySource(bus: side.context.bus, log: side.context.log, scheduler: devices.scheduler) {}
                exchange.onProtocolError = { [unowned side] link, reason in side.links.misbehaved(link, reason) }
            }
            a.links.routes.activityFrame = { [unowned self] frame, link in
                atOrigin.append(frame)
                if originAnswers { origin.received(frame, on: link) }
            }
            b.links.routes.activityFrame = { [unowned self] frame, link in
                atReceiver.append(frame)
                if receiverAnswers { receiver.received(frame, on: link) }
            }
        }

        /// Two devices linked and paired, with their exchanges; the test speaks for `speaker` (its exchange only records).
        enum Speaker { case neither, origin, receiver }
        static func run(speakingFor speaker: Speaker = .neither, _ body: (Exchanges, TwoDevices) throws -> Void) throws {
            try TwoDevices.run { devices in
                let exchanges = try Exchanges(devices)
                exchanges.originAnswers = speaker != .origin
                exchanges.receiverAnswers = speaker != .receiver
                #expect(devices.meetPaired())
                try body(exchanges, devices)
            }
        }

        /// The failure a continue ended in (nil when it succeeded or never ended).
        func failure(of result: () -> Result<String, HandoffError>?) -> HandoffError? {
            guard devices.spin(until: { result() != nil }), case .failure(let error)? = result() else { return nil }
            return error
        }

        /// `side` dropped its link to the other device for a protocol error (`reason`), and makes it wait before it links again.
        func dropped(by side: DeviceUnderTest, saying reason: String) -> Bool {
            let other = side === a ? b : a
            return devices.spin { side.device(other)?.reachable == false }
                && side.closedLinks.contains { $0.contains(reason) } && side.links.isBackingOff(other.id)
        }

        var a: DeviceUnderTest { devices.a }
        var b: DeviceUnderTest { devices.b }
        /// a as b sees it.
        var seen: DeviceObject? { b.device(a) }

        /// a makes `advert` its current activity and sends it; true when b got it (and, if b's exchange answers, has shown it).
        func advertise(_ advert: Advert?) -> Bool {
            // After a quiet spell, so that it is shown at once rather than paced.
            devices.scheduler.advance(byMilliseconds: 1000)
            a.context.advertised = advert
            let before = atReceiver.count { $0.kind == .advert }
            guard a.device(b)?.link?.send(Advert.frame(for: advert)) == true else { return false }
            return devices.spin { atReceiver.count { $0.kind == .advert } > before } && (!receiverAnswers || seen?.advert == advert)
        }

        /// Everything `side` sent before has arrived at the other side: an
        /// empty advert sent after it has (the link keeps the order).
        func sync(from side: DeviceUnderTest) -> Bool {
            let (other, frames) = side === a ? (b, { self.atReceiver }) : (a, { self.atOrigin })
            let before = frames().count
            guard side.device(other)?.link?.send(Frame(.advert)) == true else { return false }
            return devices.spin { frames().count > before }
        }

        /// `side`'s calls to useractivityd sent so far have been handled (the bus keeps one sender's order).
        func settle(_ side: DeviceUnderTest) -> Bool {
            var answered = false
            let call = Message.methodCall(destination: Interfaces.busName, path: Interfaces.managerPath, interface: Interfaces.managerName, member: "Settle")
            side.context.bus.callAsync(call, timeoutMilliseconds: 30_000) { _ in answered = true }
            return devices.spin { answered }
        }

        /// b presses Continue on a's activity; the result once it is known.
        func continueOnB(options: [(String, TypedValue)] = []) -> (() -> Result<String, HandoffError>?) {
            var result: Result<String, HandoffError>?
            guard let seen else { return { nil } }
            receiver.continueActivity(on: seen, options: options) { result = $0 }
            return { result }
        }

        /// The fetch a got from b (the test answering for a).
        func fetchAtOrigin() -> Frame? {
            guard devices.spin(until: { atOrigin.contains { $0.kind == .fetch } }) else { return nil }
            return atOrigin.last { $0.kind == .fetch }
        }

        /// a answers b's fetch with `type` and `properties`.
        func answerFetch(type: String, properties: TypedValue, handoff: String = "0f1e2d3c4b5a69788796a5b4c3d2e1f0") -> Bool {
            guard let request = fetchAtOrigin()?.uint32("request") else { return false }
            return a.device(b)?.link?.send(Frame(.fetchReply, ["request": .uint32(request), "activity-type": .string(type),
                                                               "properties": properties, "handoff": .string(handoff)])) == true
        }

        /// The properties useractivityd gives for `advert`'s activity, as a fetch returns them.
        static func properties(of advert: Advert, userInfo: [(String, TypedValue)] = []) -> TypedValue {
            var fields: [(String, TypedValue)] = [(Advert.key(.appID), .string(advert.appID)), (Advert.key(.title), .string(advert.title)),
                                                  (Advert.key(.webpageURL), .string(advert.webpageURL))]
            if !userInfo.isEmpty { fields.append(("user-info", variants(userInfo))) }
            return variants(fields)
        }
    }

    @Test func anAdvertFromThePairedDeviceIsItsCurrentActivityUntilANewerOne() throws {
        try Exchanges.run { ex, devices in
            #expect(ex.advertise(Exchanges.webPage))
            let shown = try #require(ex.seen?.currentActivity)
            #expect(shown[Advert.key(.title)]?.stringValue == "Release notes")
            #expect(shown[Advert.key(.activityType)]?.stringValue == "org.example.Browse")
            #expect(shown[Advert.key(.appID)]?.stringValue == "org.example.Browser")
            #expect(shown[Advert.key(.webpageURL)]?.stringValue == "https://example.org/notes")
            #expect(shown[Advert.continuableKey] == .boolean(true))
            // Each newer one replaces it; only http(s) pages, an open-document or a type an app here declares can be continued.
            let continuable: [(String, String, Bool)] = [
                ("org.example.Browse", "file:///etc/passwd", false),
                ("org.example.Browse", "javascript:alert(1)", false),
                ("org.example.Browse", "smb://server/share", false),
                ("org.example.NobodyDeclaresThis", "", false),
                (AdvertDecision.openDocumentType, "", true),
                ("org.example.Browse", "HTTP://example.org/upper", true),
            ]
            for (index, (type, url, expected)) in continuable.enumerated() {
                let advert = Advert(id: "id\(index)", activityType: type, appID: "org.example.Browser", title: "title \(index)", webpageURL: url, timestamp: 3)
                #expect(ex.advertise(advert))
                #expect(ex.seen?.currentActivity[Advert.key(.title)]?.stringValue == "title \(index)")
                #expect(ex.seen?.currentActivity[Advert.continuableKey] == .boolean(expected), "\(type) \(url)")
            }
            // An empty advert: no current activity any more.
            #expect(ex.advertise(nil))
            #expect(ex.seen?.currentActivity.isEmpty == true)
        }
    }

    @Test func continuingAnActivityThatMayNotBeOpenedHereAsksNothingOfTheDevice() throws {
        try Exchanges.run(speakingFor: .origin) { ex, devices in
            var script = Exchanges.webPage
            script.webpageURL = "javascript:alert(document.cookie)"
            #expect(ex.advertise(script))
            let result = ex.continueOnB()
            let error = try #require(ex.failure(of: result))
            #expect(error.name == HandoffInterfaces.ErrorName.handoffFailed && error.message.contains("only http and https"), "\(error.name): \(error.message)")
            #expect(ex.seen?.fetches.isEmpty == true && ex.seen?.fetchDeadlines.isEmpty == true)
            #expect(ex.sync(from: ex.b))
            #expect(!ex.atOrigin.contains { $0.kind == .fetch })
        }
    }

    @Test func continuingFetchesFromTheOriginContinuesHereAndTellsTheOriginByTheHandoffId() throws {
        try Exchanges.run { ex, devices in
            let advert = Exchanges.webPage
            ex.useractivityd.payload = (advert.activityType, Exchanges.properties(of: advert))
            #expect(ex.advertise(advert))
            let result = ex.continueOnB()
            #expect(devices.spin { result() != nil })
            #expect((try? result()?.get()) == ex.useractivityd.continuingApp)
            #expect(ex.useractivityd.fetched == [Interfaces.activityPathPrefix + advert.id])
            #expect(ex.useractivityd.continued.map(\.type) == [advert.activityType])
            #expect(devices.spin { ex.useractivityd.marked.count == 1 })
            #expect(ex.useractivityd.marked.first?.path == Interfaces.activityPathPrefix + advert.id)
            #expect(ex.useractivityd.marked.first?.app == ex.useractivityd.continuingApp)
            // The report names the fetch by the handoff id a's reply gave, never by the activity's id.
            let handoff = ex.atReceiver.first { $0.kind == .fetchReply }?.string("handoff")
            #expect(handoff != nil && handoff != advert.id)
            #expect(ex.atOrigin.first { $0.kind == .continued }?.string("handoff") == handoff)
            #expect(ex.a.device(ex.b)?.handoffs.isEmpty == true)
        }
    }

    @Test func eachFetchGetsItsOwnHandoffIdAndOneContinuedForIt() throws {
        try Exchanges.run(speakingFor: .receiver) { ex, devices in
            let advert = Exchanges.webPage
            ex.useractivityd.payload = (advert.activityType, Exchanges.properties(of: advert))
            #expect(ex.advertise(advert))
            let link = try #require(ex.b.device(ex.a)?.link)
            // An activity a does not advertise is not asked of useractivityd.
            link.send(Frame(.fetch, ["request": .uint32(1), "id": .string("0badc0de"), "timeout-ms": .uint32(1000)]))
            #expect(devices.spin { ex.atReceiver.contains { $0.kind == .error } })
            #expect(ex.atReceiver.first { $0.kind == .error }?.string("name") == HandoffInterfaces.ErrorName.handoffFailed)
            for request in UInt32(2)...4 {
                link.send(Frame(.fetch, ["request": .uint32(request), "id": .string(advert.id), "timeout-ms": .uint32(1000)]))
            }
            #expect(devices.spin { ex.atReceiver.count { $0.kind == .fetchReply } == 3 })
            #expect(ex.useractivityd.fetched == Array(repeating: Interfaces.activityPathPrefix + advert.id, count: 3))
            let handoffs = ex.atReceiver.filter { $0.kind == .fetchReply }.compactMap { $0.string("handoff") }
            #expect(handoffs.count == 3 && Set(handoffs).count == 3, "\(handoffs)")
            #expect(!handoffs.contains(advert.id) && handoffs.allSatisfy { $0.count == 32 })
            // Each is reported once: the second report of the same fetch drops the link.
            link.send(Frame(.continued, ["handoff": .string(handoffs[1]), "app-id": .string("org.example.Browser")]))
            #expect(devices.spin { ex.useractivityd.marked.count == 1 })
            #expect(ex.useractivityd.marked.first?.path == Interfaces.activityPathPrefix + advert.id)
            link.send(Frame(.continued, ["handoff": .string(handoffs[1]), "app-id": .string("org.example.Browser")]))
            #expect(ex.dropped(by: ex.a, saying: "a continued frame for an activity it did not fetch"), "\(ex.a.closedLinks)")
            #expect(ex.settle(ex.a))
            #expect(ex.useractivityd.marked.count == 1)
        }
    }

    @Test(arguments: ["the activity's id", "a handoff id never given", "no handoff id"])
    func continuedForAFetchNeverMadeDropsTheLink(_ naming: String) throws {
        try Exchanges.run(speakingFor: .receiver) { ex, devices in
            let advert = Exchanges.webPage
            ex.useractivityd.payload = (advert.activityType, Exchanges.properties(of: advert))
            #expect(ex.advertise(advert))
            var body: [String: TypedValue] = ["app-id": .string("org.example.Browser")]
            switch naming {
            case "the activity's id": body["handoff"] = .string(advert.id)
            case "a handoff id never given": body["handoff"] = .string("9c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f")
            default: break
            }
            try #require(ex.b.device(ex.a)?.link).send(Frame(.continued, body))
            #expect(ex.dropped(by: ex.a, saying: "a continued frame for an activity it did not fetch"), "\(ex.a.closedLinks)")
            #expect(ex.settle(ex.a))
            #expect(ex.useractivityd.marked.isEmpty)
        }
    }

    @Test(arguments: ["type", "app", "web page"])
    func aFetchedActivityOtherThanTheAdvertIsRefusedAndDropsTheLink(_ differing: String) throws {
        try Exchanges.run(speakingFor: .origin) { ex, devices in
            let advert = Exchanges.webPage
            #expect(ex.advertise(advert))
            var fetched = advert
            switch differing {
            case "type": fetched.activityType = "org.example.Shell"
            case "app": fetched.appID = "org.example.Terminal"
            default: fetched.webpageURL = "https://attacker.example/notes"
            }
            let result = ex.continueOnB()
            #expect(ex.answerFetch(type: fetched.activityType, properties: Exchanges.properties(of: fetched)))
            let error = try #require(ex.failure(of: result))
            #expect(error.name == HandoffInterfaces.ErrorName.handoffFailed && error.message.contains("another activity than the one it showed"), "\(error.name): \(error.message)")
            #expect(ex.dropped(by: ex.b, saying: "another activity than the one it advertised"), "\(ex.b.closedLinks)")
            #expect(ex.settle(ex.b))
            #expect(ex.useractivityd.continued.isEmpty)
        }
    }

    @Test(arguments: ["a file descriptor", "an object path that is not one"])
    func aFetchedActivityWithAValueLibdbusWouldRefuseNeverReachesIt(_ kind: String) throws {
        try Exchanges.run(speakingFor: .origin) { ex, devices in
            let advert = Exchanges.webPage
            #expect(ex.advertise(advert))
            let result = ex.continueOnB()
            let value: TypedValue = kind == "a file descriptor" ? .unixFD(0) : .objectPath("not a path")
            #expect(ex.answerFetch(type: advert.activityType, properties: Exchanges.properties(of: advert, userInfo: [("position", value)])))
            let error = try #require(ex.failure(of: result))
            #expect(error.name == HandoffInterfaces.ErrorName.handoffFailed && error.message.contains("cannot be continued"), "\(error.name): \(error.message)")
            #expect(ex.dropped(by: ex.b, saying: "sent an activity with"), "\(ex.b.closedLinks)")
            #expect(ex.settle(ex.b))
            #expect(ex.useractivityd.continued.isEmpty)
        }
    }

    @Test(arguments: ["smb://server/share/report.odt", "https://example.org/report.odt", "file://otherhost/home/report.odt", ""])
    func anOpenDocumentIsBroughtOnlyFromALocalFileOfTheDevice(_ uri: String) throws {
        try Exchanges.run(speakingFor: .origin) { ex, devices in
            let advert = Exchanges.document
            #expect(ex.advertise(advert))
            #expect(ex.seen?.currentActivity[Advert.continuableKey] == .boolean(true))
            let result = ex.continueOnB()
            #expect(ex.answerFetch(type: advert.activityType, properties: Exchanges.properties(of: advert, userInfo: [("uri", .string(uri))])))
            let error = try #require(ex.failure(of: result))
            #expect(error.name == HandoffInterfaces.ErrorName.handoffFailed && error.message.contains("only a local file (file://)"), "\(error.name): \(error.message)")
            // Nothing is asked of the device and nothing is continued here.
            #expect(ex.sync(from: ex.b))
            #expect(!ex.atOrigin.contains { $0.kind == .fileRequest })
            #expect(ex.settle(ex.b))
            #expect(ex.useractivityd.continued.isEmpty)
        }
    }

    @Test func anOpenDocumentOfALocalFileIsAskedOfTheDeviceByItsURIAndItsRefusalPassedOn() throws {
        try Exchanges.run(speakingFor: .origin) { ex, devices in
            let advert = Exchanges.document
            #expect(ex.advertise(advert))
            let result = ex.continueOnB()
            let uri = "file:///home/someone/Documents/report.odt"
            #expect(ex.answerFetch(type: advert.activityType, properties: Exchanges.properties(of: advert, userInfo: [("uri", .string(uri))])))
            #expect(devices.spin { ex.atOrigin.contains { $0.kind == .fileRequest } })
            let request = try #require(ex.atOrigin.first { $0.kind == .fileRequest })
            #expect(request.string("uri") == uri && request.string("id") == advert.id)
            #expect(result() == nil)
            // a refuses it, by a name of its own and a long text: HandoffFailed, the text cut to the limit, and a is told.
            let long = "the document is not shared: " + String(repeating: "e\u{301}", count: 4 * HandoffLimits.maximumMessageBytes)
            let refusal = FileTransferMessage.end(request: try #require(request.uint32("request")),
                                                  failure: StreamFailure(name: "org.example.Elsewhere.Error.Nope", message: long))
            try #require(ex.a.device(ex.b)?.link).send(refusal.frame)
            let error = try #require(ex.failure(of: result))
            #expect(error.name == HandoffInterfaces.ErrorName.handoffFailed)
            #expect(error.message.utf8.count <= HandoffLimits.maximumMessageBytes && long.hasPrefix(error.message), "\(error.message.utf8.count) bytes")
            #expect(devices.spin { ex.atOrigin.contains { $0.kind == .continueFailed } })
            #expect(ex.atOrigin.first { $0.kind == .continueFailed }?.string("handoff") == "0f1e2d3c4b5a69788796a5b4c3d2e1f0")
            #expect(ex.settle(ex.b))
            #expect(ex.useractivityd.continued.isEmpty)
        }
    }

    @Test func aFetchNobodyAnswersFailsWhenItsDeadlineComes() throws {
        try Exchanges.run(speakingFor: .origin) { ex, devices in
            var armed = 0
            ex.b.context.onWorkAdded = { armed += 1 }
            #expect(ex.advertise(Exchanges.webPage))
            let start = devices.scheduler.monotonic
            let armedBefore = armed
            let result = ex.continueOnB(options: [("timeout-ms", .uint32(2000))])
            // The owner's 2 s to save, and 10 s for the reply to travel.
            let deadline = start + 12_000_000
            #expect(ex.receiver.deadlines == [deadline])
            // The daemon's timer is re-armed for it.
            #expect(armed > armedBefore)
            #expect(ex.fetchAtOrigin()?.uint32("timeout-ms") == 2000)
            devices.scheduler.advance(byMilliseconds: 11_999)
            ex.receiver.expireFetches(now: devices.scheduler.monotonic)
            #expect(result() == nil)
            devices.scheduler.advance(byMilliseconds: 1)
            ex.receiver.expireFetches(now: devices.scheduler.monotonic)
            let error = try #require(ex.failure(of: result))
            #expect(error.name == HandoffInterfaces.ErrorName.handoffFailed && error.message.contains("did not send the activity in time"), "\(error.name): \(error.message)")
            #expect(ex.receiver.deadlines.isEmpty && ex.seen?.fetches.isEmpty == true)
            // An answer after the deadline is nobody's: nothing is continued, and the link stays.
            #expect(ex.answerFetch(type: Exchanges.webPage.activityType, properties: Exchanges.properties(of: Exchanges.webPage)))
            #expect(ex.sync(from: ex.a))
            #expect(ex.settle(ex.b))
            #expect(ex.useractivityd.continued.isEmpty)
            #expect(ex.seen?.reachable == true)
        }
    }

    @Test func aTimeoutOverTheLimitIsCappedBeforeUse() throws {
        try Exchanges.run(speakingFor: .origin) { ex, devices in
            #expect(ex.advertise(Exchanges.webPage))
            let start = devices.scheduler.monotonic
            _ = ex.continueOnB(options: [("timeout-ms", .uint32(.max))])
            #expect(ex.receiver.deadlines == [start + Int64(HandoffLimits.maximumTimeoutMilliseconds) * 1000 + 10_000_000])
            #expect(ex.fetchAtOrigin()?.uint32("timeout-ms") == HandoffLimits.maximumTimeoutMilliseconds)
        }
    }

    @Test(arguments: [
        (ErrorNames.prefix + "UserInfoTooLarge", ErrorNames.prefix + "UserInfoTooLarge", true),
        ("org.freedesktop.DBus.Error.AccessDenied", HandoffInterfaces.ErrorName.handoffFailed, true),
        ("not an error name", HandoffInterfaces.ErrorName.handoffFailed, false),
    ])
    func anErrorFromTheOriginIsPassedOnOnlyByTheNamesAnOriginMayGive(_ sent: String, _ given: String, _ linkStays: Bool) throws {
        try Exchanges.run(speakingFor: .origin) { ex, devices in
            #expect(ex.advertise(Exchanges.webPage))
            let result = ex.continueOnB()
            let request = try #require(ex.fetchAtOrigin()?.uint32("request"))
            // Characters of three bytes each (e and a combining acute accent): the limit is in bytes, whatever the characters.
            let long = String(repeating: "e\u{301}", count: 4 * HandoffLimits.maximumMessageBytes)
            try #require(ex.a.device(ex.b)?.link).send(Frame(.error, ["request": .uint32(request), "name": .string(sent), "message": .string(long)]))
            let error = try #require(ex.failure(of: result))
            #expect(error.name == given)
            #expect(error.message.utf8.count <= HandoffLimits.maximumMessageBytes, "\(error.message.utf8.count) bytes")
            #expect(error.message.utf8.count > HandoffLimits.maximumMessageBytes - 3 && long.hasPrefix(error.message))
            if linkStays {
                #expect(ex.sync(from: ex.a))
                #expect(ex.seen?.reachable == true)
            } else {
                #expect(ex.dropped(by: ex.b, saying: "an error reply whose name is not an error name"), "\(ex.b.closedLinks)")
            }
        }
    }
}
