// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport
import HandoffCore
import Logging
import TypedValues
import UserActivityCore
import UserActivityInterfaces

/// The current activity between paired devices: this device's advert sent
/// to them, theirs shown on their device objects (``Advert``), a person's
/// `ContinueActivity` fetching and continuing one here, a fetch from them
/// answered, and what follows a fetch (continuation streams through
/// ``StreamRelay``, documents brought along: ``FileTransfers``).
final class ActivityExchange {
    let context: HandoffContext
    /// Continuation streams relayed to and from paired devices.
    lazy var streams = StreamRelay(loop: loop, log: log)
    /// Documents of open-document activities sent to and brought from paired devices.
    var transfers = FileTransfers()
    /// Drops a link whose device broke the protocol (``PeerLinks/misbehaved(_:_:)``, which makes it wait before it links again).
    var onProtocolError: (PeerLink, String) -> Void = { link, reason in link.close(reason: reason) }

    init(context: HandoffContext) {
        self.context = context
    }

    // The context's parts by the names the exchange's code uses.
    var log: Logger { context.log }
    var loop: MainLoop { context.loop }
    var scheduler: Scheduler { context.scheduler }
    var now: Int64 { context.now }
    var state: HandoffState { context.state }
    var environment: [String: String] { context.environment }
    var devices: [String: DeviceObject] { context.devices }
    var notifier: Notifier? { context.notifier }
    var activitySource: ActivitySource? { context.activitySource }
    func nextRequest() -> UInt32 { context.nextRequest() }

    /// Where each frame of the exchange goes.
    func received(_ frame: Frame, on link: PeerLink) {
        switch frame.kind {
        case .advert: receivedAdvert(frame, on: link)
        case .fetch, .fetchReply, .continued, .error, .continueFailed: receivedContinuation(frame, on: link)
        case .streamOpen, .streamData, .streamCredit, .streamClose: receivedStream(frame, on: link)
        case .fileRequest, .fileHeader, .fileData, .fileCredit, .fileEnd, .fileHashRequest: receivedFile(frame, on: link)
        default: break
        }
    }

    /// A link closed: its streams and transfers end.
    func linkClosed(_ link: PeerLink, reason: String) {
        streams.linkClosed(link, deviceName: devices[link.peerDeviceID]?.name ?? link.address, reason: reason)
        fileLinkClosed(link, reason: reason)
    }

    /// Apps were installed or removed here: whether a shown advert can be continued may have changed.
    func reloadCatalog() {
        context.catalog = HandoffContext.loadCatalog(environment: environment)
        for device in devices.values where device.advert != nil {
            let before = device.currentActivity[Advert.continuableKey]
            showAdvert(on: device)
            if device.currentActivity[Advert.continuableKey] != before { context.emitDeviceChanged(device, [.currentActivity]) }
        }
    }

    // MARK: Deadlines

    /// Fetches waiting for an answer and documents being received.
    var deadlines: [Int64] {
        devices.values.flatMap { $0.fetchDeadlines.values } + fileTransferDeadlines
    }

    /// Fetches an origin did not answer in time.
    func expireFetches(now: Int64) {
        for device in devices.values {
            for (request, deadline) in device.fetchDeadlines where now >= deadline {
                device.fetchDeadlines[request] = nil
                device.fetches.removeValue(forKey: request)?(.failure(HandoffError("HandoffFailed", "\(device.name) did not send the activity in time")))
            }
        }
    }

    // MARK: Adverts

    func advertiseIfChanged() {
        guard let source = activitySource else { return }
        let next = AdvertDecision.advert(for: source.current, conditions: source.conditions)
        guard next != context.advertised else { return }
        context.advertised = next
        let frame = Advert.frame(for: next)
        for device in devices.values where device.paired && device.reachable { device.link?.send(frame) }
    }

    /// An advert from a paired device: shown at once after a quiet spell;
    /// within ``HandoffLimits/advertIntervalMicroseconds`` of the last one
    /// shown it waits, replaced by any later one, and the latest is shown
    /// when the interval ends. A device that keeps sending more than any
    /// desktop would is dropped (and waits before it may link again).
    private func receivedAdvert(_ frame: Frame, on link: PeerLink) {
        guard let device = devices[link.peerDeviceID], device.paired else { return }
        let read = Advert(frame: frame)
        let activity = read.flatMap(AdvertDecision.bounded)
        if read != nil && activity == nil { return protocolError(link, "an advert over the service's limits") }
        if device.advertPace.arrivalFloods(at: now) {
            return protocolError(link, "more than \(HandoffLimits.maximumAdvertsPerWindow) adverts in \(HandoffLimits.advertFloodWindowMicroseconds / 1_000_000) s")
        }
        let due = device.advertPace.shownAt == .min ? now : device.advertPace.shownAt + HandoffLimits.advertIntervalMicroseconds
        guard now < due else { return show(activity, on: device) }
        device.advertPace.held = activity
        device.advertPace.isHolding = true
        guard device.advertPace.timer?.isPending != true else { return }
        device.advertPace.timer = scheduler.after(milliseconds: UInt32(clamping: (due - now + 999) / 1000)) { [weak self, weak device, weak link] in
            guard let self, let device, let link else { return }
            device.advertPace.timer = nil
            // Its link closed or it was unpaired meanwhile: nothing of it is shown any more.
            guard device.advertPace.isHolding, device.paired, device.link === link, !link.isClosed else { return }
            self.show(device.advertPace.held, on: device)
        }
    }

    /// Shows a device's advert: its CurrentActivity, then the offer to continue it (or none).
    private func show(_ activity: Advert?, on device: DeviceObject) {
        // Whatever waited is older than this (its timer may be due but not run yet).
        device.advertPace.shownAt = now
        device.advertPace.isHolding = false
        device.advertPace.held = nil
        device.advertPace.timer?.cancel()
        device.advertPace.timer = nil
        device.advert = activity
        let continuable = showAdvert(on: device)
        // The signal before the notification: the bus routes what it gets in order.
        context.emitDeviceChanged(device, [.currentActivity])
        if let activity, continuable && state.notifyContinuable {
            notifier?.offerContinue(deviceID: device.id, title: activity.title, deviceName: device.name) { [weak self, weak device] in
                guard let self, let device else { return }
                self.continueActivity(on: device, options: []) { result in
                    if case .failure(let error) = result { self.log.info("continue from notification failed: \(error.name): \(error.message)") }
                }
            }
        } else {
            notifier?.withdraw(device.id)
        }
    }

    /// Sets the device's CurrentActivity from its advert, with whether it can be continued here.
    @discardableResult
    func showAdvert(on device: DeviceObject) -> Bool {
        guard let activity = device.advert else {
            device.currentActivity = [:]
            return false
        }
        // An open-document's file is brought here and opened by the app for its type.
        let continuable = activity.activityType == AdvertDecision.openDocumentType
            || (AdvertDecision.refusalFromAnotherDevice(activityType: activity.activityType, webpageURL: activity.webpageURL) == nil
                && (!activity.webpageURL.isEmpty || isContinuableHere(activity)))
        device.currentActivity = activity.currentActivity(continuable: continuable)
        return continuable
    }

    /// An installed app declares the type within the publisher's team.
    func isContinuableHere(_ activity: Advert) -> Bool {
        let publisherTeam = context.catalog.app(activity.appID)?.team ?? AppCatalog.implicitTeam(of: activity.appID)
        return context.catalog.apps(declaring: activity.activityType).contains { candidate in
            activity.appID.isEmpty || candidate.id == activity.appID || candidate.team == publisherTeam
        }
    }

    // MARK: Continuing

    /// Receiver side: fetch from the origin, continue through the local useractivityd, tell the origin.
    func continueActivity(on device: DeviceObject, options: [(String, TypedValue)], completion: @escaping (Result<String, HandoffError>) -> Void) {
        guard device.paired else { return completion(.failure(HandoffError("NotPaired", "\(device.name) is not paired"))) }
        guard let link = device.link, device.reachable else {
            return completion(.failure(HandoffError("ConnectionUnavailable", "\(device.name) is not reachable")))
        }
        guard let remote = device.advert else {
            return completion(.failure(HandoffError("HandoffFailed", "\(device.name) has no current activity")))
        }
        if remote.activityType != AdvertDecision.openDocumentType,
           let refusal = AdvertDecision.refusalFromAnotherDevice(activityType: remote.activityType, webpageURL: remote.webpageURL) {
            return completion(.failure(HandoffError("HandoffFailed", refusal)))
        }
        let request = nextRequest()
        let timeout = min(options.first { $0.0 == "timeout-ms" }?.1.uint32Value ?? 10_000, HandoffLimits.maximumTimeoutMilliseconds)
        device.fetches[request] = { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error): completion(.failure(error))
            case .success(let reply):
                guard let type = reply.string("activity-type"), let properties = reply.body["properties"],
                      let handoff = reply.string("handoff"), !handoff.isEmpty else {
                    return completion(.failure(HandoffError("HandoffFailed", "\(device.name) sent an incomplete activity")))
                }
                // What is continued is what the person saw, and only what may be opened from another device.
                let fields = Dictionary(properties.stringVariantEntries ?? [], uniquingKeysWith: { $1 })
                guard AdvertDecision.matches(remote, activityType: type, properties: fields) else {
                    completion(.failure(HandoffError("HandoffFailed", "\(device.name) sent another activity than the one it showed")))
                    return self.protocolError(link, "another activity than the one it advertised")
                }
                func continueHere(_ properties: TypedValue) {
                    let relay = self.streamRelayPath(for: properties, from: device, handoff: handoff)
                    let options = options + (relay.map { [("stream-relay", TypedValue.objectPath($0))] } ?? [])
                    self.activitySource?.continueLocally(type: type, properties: properties, options: options,
                                                        timeoutMilliseconds: Int32(min(Int(timeout == 0 ? 10_000 : timeout) * 2 + 1000, 1_300_000))) { result in
                        switch result {
                        case .success(let appID):
                            link.send(Frame(.continued, ["handoff": .string(handoff), "app-id": .string(appID)]))
                            completion(.success(appID))
                        case .failure(let error):
                            if let relay { self.streams.unregister(relay) }
                            link.send(Frame(.continueFailed, ["handoff": .string(handoff), "name": .string(error.name), "message": .string(error.message)]))
                            completion(.failure(HandoffError(error.name, error.message)))
                        }
                    }
                }
                // A document is opened here only from a copy brought from the origin (or the same bytes already here).
                if type == AdvertDecision.openDocumentType {
                    let uri = ActivityExchange.documentURI(in: properties) ?? ""
                    switch self.documentPath(in: properties) {
                    case .failure(let error): return completion(.failure(error))
                    case .success(let path):
                        self.bringDocument(path: path, activityID: remote.id, uri: uri, from: device, link: link) { brought in
                            switch brought {
                            case .failure(let error):
                                link.send(Frame(.continueFailed, ["handoff": .string(handoff), "name": .string(error.name), "message": .string(error.message)]))
                                completion(.failure(error))
                            case .success(let local):
                                continueHere(ActivityExchange.replacingDocumentURI(in: properties, with: local))
                            }
                        }
                        return
                    }
                }
                if let refusal = AdvertDecision.refusalFromAnotherDevice(activityType: type, webpageURL: fields[Advert.key(.webpageURL)]?.stringValue ?? "") {
                    return completion(.failure(HandoffError("HandoffFailed", refusal)))
                }
                continueHere(properties)
            }
        }
        // The origin's owner may take timeout-ms to save; then the reply has to travel.
        device.fetchDeadlines[request] = now + Int64(timeout == 0 ? 10_000 : timeout) * 1000 + 10_000_000
        link.send(Frame(.fetch, ["request": .uint32(request), "id": .string(remote.id), "timeout-ms": .uint32(timeout)]))
        context.rescheduleTick()
    }

    /// A frame from a peer that cannot be served: the link drops (logged once), nothing else is affected.
    private func protocolError(_ link: PeerLink, _ what: String) {
        onProtocolError(link, "\(link.address) sent \(what): disconnected")
    }

    private func receivedContinuation(_ frame: Frame, on link: PeerLink) {
        guard let device = devices[link.peerDeviceID], device.paired else { return }
        switch frame.kind {
        case .fetch:
            let request = frame.uint32("request") ?? 0
            let id = frame.string("id") ?? ""
            // The owner's SaveActivity may take as long as a local continuation allows, not more.
            let timeout = min(frame.uint32("timeout-ms") ?? 10_000, HandoffLimits.maximumTimeoutMilliseconds)
            guard let advertised = context.advertised, advertised.id == id, let source = activitySource else {
                link.send(Frame(.error, ["request": .uint32(request), "name": .string(HandoffInterfaces.errorPrefix + "HandoffFailed"),
                                         "message": .string("the activity ended or is no longer current")]))
                return
            }
            source.fetchForHandoff(activityID: advertised.id, timeoutMilliseconds: Int32(timeout)) { result in
                switch result {
                case .success(let (type, properties)):
                    let handoff = device.recordHandoff(of: id)
                    self.streams.grant(device: device.id, handoff: handoff, activityID: id, now: self.now)
                    self.grantDocument(of: properties, type: type, activityID: id, to: device)
                    if !link.send(Frame(.fetchReply, ["request": .uint32(request), "activity-type": .string(type), "properties": properties,
                                                      "handoff": .string(handoff)])) {
                        link.send(Frame(.error, ["request": .uint32(request), "name": .string(HandoffInterfaces.errorPrefix + "UserInfoTooLarge"),
                                                 "message": .string("the activity is larger than a handoff frame may be (\(FrameCodec.pairedLimit / 1024) KiB)")]))
                    }
                case .failure(let error):
                    // Without its session bus this device is going away, not failing to provide the activity.
                    guard self.context.bus.isConnected else { return link.close(reason: "this device lost its session bus") }
                    link.send(Frame(.error, ["request": .uint32(request), "name": .string(error.name), "message": .string(error.message)]))
                }
            }
        case .fetchReply:
            guard let request = frame.uint32("request"), let completion = device.fetches.removeValue(forKey: request) else { return }
            device.fetchDeadlines[request] = nil
            // Everything in it goes to useractivityd and on to an app: checked before libdbus sees it.
            if let problem = HandoffLimits.problem(inPeerValue: frame.body["properties"] ?? .stringVariantDictionary([])) {
                completion(.failure(HandoffError("HandoffFailed", "\(device.name) sent an activity that cannot be continued: \(problem)")))
                return protocolError(link, "an activity with \(problem)")
            }
            completion(.success(frame))
        case .error:
            guard let request = frame.uint32("request"), let completion = device.fetches.removeValue(forKey: request) else { return }
            device.fetchDeadlines[request] = nil
            // Only the errors an origin may give are passed on, by a name libdbus accepts; anything else is HandoffFailed.
            let name = frame.string("name") ?? ""
            let known = HandoffLimits.originErrors.contains(name) ? name : "HandoffFailed"
            completion(.failure(HandoffError(known, (frame.string("message") ?? "").prefix(utf8Bytes: HandoffLimits.maximumMessageBytes))))
            if !DBusValueCheck.isValidErrorName(name) { protocolError(link, "an error reply whose name is not an error name") }
        case .continued:
            // Only for a fetch this device made from here (by the handoff id its reply gave), and once.
            guard let handoff = frame.string("handoff"), let id = device.takeHandoff(handoff),
                  let app = frame.string("app-id"), app.isEmpty || (try? ReverseDNSName.validate(app, as: "app-id")) != nil else {
                return protocolError(link, "a continued frame for an activity it did not fetch")
            }
            activitySource?.markContinued(activityID: id, byApp: app)
        case .continueFailed:
            guard let handoff = frame.string("handoff"), let id = device.takeHandoff(handoff) else {
                return protocolError(link, "a continue-failed frame for an activity it did not fetch")
            }
            receivedContinueFailed(frame, handoff: handoff, activityID: id, from: device)
        default: break
        }
    }
}
