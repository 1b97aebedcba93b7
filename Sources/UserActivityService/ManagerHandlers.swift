// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import TypedValues
import UserActivityCore

/// Handlers of `org.example.UserActivity`: decode, call the core, and hand
/// what changed to ``UserActivityService/finish(_:_:reply:)``.
extension UserActivityService {
    func createActivity(_ invocation: Invocation) {
        create(invocation, becomeCurrent: false)
    }

    func createAndBecomeCurrent(_ invocation: Invocation) {
        create(invocation, becomeCurrent: true)
    }

    private func create(_ invocation: Invocation, becomeCurrent: Bool) {
        let type = invocation.string(0)
        let entries = invocation.entries(1)
        withCaller(invocation) { [unowned self] identity in
            let patch = try ActivityPatch.parse(entries, allowsAppIDClaim: true)
            if let claim = patch.appIDClaim { try ReverseDNSName.validate(claim, as: "app-id") }
            try ReverseDNSName.validate(type, as: "activity type")
            let app = try identity.actingApp(claim: patch.appIDClaim, catalog: catalog)
            let now = scheduler.now
            let (activity, created) = try registry.create(type: type, properties: patch, app: app,
                                                          connection: invocation.sender,
                                                          confinedApp: identity.isConfined ? identity.process.appID ?? "" : nil,
                                                          now: now)
            var events = created
            if becomeCurrent {
                events += try registry.becomeCurrent(activity.id, now: now)
            }
            do {
                try finish(invocation, Changes(events), reply: [.objectPath(Self.path(of: activity.id))])
            } catch {
                // Nothing half-applied: without its saved copy the activity is not kept.
                events += (try? registry.invalidate(activity.id)) ?? []
                afterReply(Changes(events))
                throw error
            }
        }
    }

    func registerApplication(_ invocation: Invocation) {
        let app = invocation.string(0)
        withCaller(invocation) { [unowned self] identity in
            try identity.register(app: app, catalog: catalog)
            invocation.reply()
        }
    }

    func donate(_ invocation: Invocation) {
        let type = invocation.string(0)
        let entries = invocation.entries(1)
        withCaller(invocation) { [unowned self] identity in
            // Donations are for prediction unless the donor says otherwise.
            var withDefaults: [(String, TypedValue)] = [("eligible-for-prediction", .boolean(true))]
            withDefaults += entries
            if entries.contains(where: { $0.0 == "eligible-for-prediction" }) { withDefaults.removeFirst() }
            let patch = try ActivityPatch.parse(withDefaults, allowsAppIDClaim: true)
            if let claim = patch.appIDClaim { try ReverseDNSName.validate(claim, as: "app-id") }
            try ReverseDNSName.validate(type, as: "activity type")
            let app = try identity.actingApp(claim: patch.appIDClaim, catalog: catalog)
            try registry.requireDeclared(app: app, type: type)
            let properties = try patch.applied(to: ActivityProperties(), limits: registry.limits)
            try SystemActivityType.validate(type: type, properties: properties)
            let now = scheduler.now
            if properties.expirationDate != 0 && properties.expirationDate <= now {
                throw UserActivityError.expired("expiration-date \(properties.expirationDate) is already past; use a future time or 0 for never")
            }
            // A sandboxed app's share of the store's writes; only a valid donation takes from it.
            if identity.isConfined, let refusal = context.takeDonation(app: app) { throw refusal }
            // Answered once written (donations that arrive together share one commit).
            saved.donate(type: type, app: app, properties: properties, now: now) { [unowned self] result in
                switch result {
                case .success(let savedID):
                    invocation.reply([.string(savedID)])
                    afterReply(Changes(savedActivitiesChanged: true))
                case .failure(let error):
                    invocation.fail(error)
                }
            }
        }
    }

    func search(_ invocation: Invocation) {
        let query = invocation.string(0)
        let entries = invocation.entries(1)
        withCaller(invocation) { [unowned self] identity in
            let options = try SearchOptions.parse(entries)
            let results = try saved.search(query: query, options: options, visibleApp: identity.visibleApp(),
                                           now: scheduler.now)
            invocation.reply([.array(elementType: "a{sv}", results)])
        }
    }

    func getSuggestions(_ invocation: Invocation) {
        let entries = invocation.entries(0)
        withCaller(invocation) { [unowned self] identity in
            let options = try SuggestionOptions.parse(entries)
            let results = try saved.suggestions(options: options, visibleApp: identity.visibleApp(),
                                                now: scheduler.now)
            invocation.reply([.array(elementType: "a{sv}", results)])
        }
    }

    func deleteSavedActivities(_ invocation: Invocation) {
        let identifiers = invocation.arguments[0].stringArrayValue ?? []
        withCaller(invocation) { [unowned self] identity in
            let app = try identity.actingApp(claim: nil, catalog: catalog)
            try saved.delete(app: app, persistentIdentifiers: identifiers)
            let deleted = Set(identifiers)
            recentFiles?.dropQueued { $0.appID == app && deleted.contains($0.uri) }
            invocation.reply()
        }
    }

    func deleteAllSavedActivities(_ invocation: Invocation) {
        withCaller(invocation) { [unowned self] identity in
            let app = try identity.actingApp(claim: nil, catalog: catalog)
            try saved.deleteAll(app: app)
            recentFiles?.dropQueued { $0.appID == app }
            invocation.reply()
        }
    }

    // MARK: Manager properties

    private static let privacyAccessMessage =
        "the privacy controls belong to the user: only unconfined callers (the shell, useractivityctl) may read or change them"

    /// Runs `body` for an unconfined caller; a sandboxed app gets `AccessDenied`.
    private func asUnconfined(_ invocation: Invocation, _ body: @escaping () throws -> Void) {
        withCaller(invocation) { identity in
            guard !identity.isConfined else { throw UserActivityError.accessDenied(Self.privacyAccessMessage) }
            try body()
        }
    }

    private func managerProperty(_ name: String, for identity: ConnectionIdentity) throws -> TypedValue {
        switch name {
        case "CurrentActivity": return currentActivityPath(for: identity)
        case "Version": return .string(configuration.version)
        default:
            if let value = saved.privacy.settings.value(of: name) { return value }
            throw UserActivityError(.unknownProperty, "no property '\(name.prefix(200))' on \(Interfaces.managerName)")
        }
    }

    private func requireManagerInterface(_ interface: String) throws {
        guard interface == Interfaces.managerName || interface.isEmpty else {
            throw UserActivityError(.unknownProperty, "\(Interfaces.managerPath) has properties only on \(Interfaces.managerName), not '\(interface.prefix(200))'")
        }
    }

    /// Every read goes through the caller's identity: `CurrentActivity`
    /// depends on it. A connection that reads the manager's properties (as a
    /// `GDBusProxy` does when it loads them) is sent their `PropertiesChanged`
    /// from then on.
    func managerPropertyGet(_ invocation: Invocation) {
        let interface = invocation.string(0)
        let name = invocation.string(1)
        withCaller(invocation) { [unowned self] identity in
            if PrivacySettings.signature(of: name) != nil, identity.isConfined {
                throw UserActivityError.accessDenied(Self.privacyAccessMessage)
            }
            try requireManagerInterface(interface)
            invocation.reply([.variant(try managerProperty(name, for: identity))])
            callers.subscriptions.subscribeToManagerProperties(invocation.sender)
        }
    }

    func managerPropertyGetAll(_ invocation: Invocation) {
        let interface = invocation.string(0)
        withCaller(invocation) { [unowned self] identity in
            guard interface == Interfaces.managerName || interface.isEmpty else {
                invocation.reply([.stringVariantDictionary([])])
                return
            }
            // A sandboxed app sees the public properties only.
            let names = Interfaces.manager.properties.map(\.name)
                .filter { !identity.isConfined || PrivacySettings.signature(of: $0) == nil }
            invocation.reply([.stringVariantDictionary(try names.map { ($0, try managerProperty($0, for: identity)) })])
            callers.subscriptions.subscribeToManagerProperties(invocation.sender)
        }
    }

    func managerPropertySet(_ invocation: Invocation) {
        let interface = invocation.string(0)
        let name = invocation.string(1)
        let value = invocation.arguments[2].unwrappedVariantOnce
        guard PrivacySettings.signature(of: name) != nil else {
            if Interfaces.manager.property(name) != nil {
                invocation.fail(UserActivityError(.propertyReadOnly, "the property \(name) is read-only"))
            } else {
                invocation.fail(UserActivityError(.unknownProperty, "no property '\(name.prefix(200))' on \(Interfaces.managerName)"))
            }
            return
        }
        asUnconfined(invocation) { [unowned self] in
            try requireManagerInterface(interface)
            try saved.privacy.set(name, to: value)
            invocation.reply()
        }
    }

    // MARK: Privacy controls

    func forgetApplication(_ invocation: Invocation) {
        let app = invocation.string(0)
        asUnconfined(invocation) { [unowned self] in
            try ReverseDNSName.validate(app, as: "app ID")
            let deleted = try saved.forget(app: app)
            recentFiles?.dropQueued { $0.appID == app }
            invocation.reply([.uint32(UInt32(clamping: deleted))])
        }
    }

    func forgetRange(_ invocation: Invocation) {
        let from = invocation.arguments[0].int64Value ?? 0
        let to = invocation.arguments[1].int64Value ?? 0
        asUnconfined(invocation) { [unowned self] in
            guard from <= to else {
                throw UserActivityError.invalidArgument("from_usec (\(from)) is after to_usec (\(to)); the range is [from, to) in Unix microseconds")
            }
            let deleted = try saved.forget(lastUsedFrom: from, to: to)
            recentFiles?.dropQueued { $0.lastUsed >= from && $0.lastUsed < to }
            invocation.reply([.uint32(UInt32(clamping: deleted))])
        }
    }

    func forgetAll(_ invocation: Invocation) {
        asUnconfined(invocation) { [unowned self] in
            let now = scheduler.now
            let deleted = try saved.forgetAll(now: now)
            recentFiles?.forgotten(watermark: now)
            invocation.reply([.uint32(UInt32(clamping: deleted))])
        }
    }

    // MARK: Object manager and introspection

    func getManagedObjects(_ invocation: Invocation) {
        withCaller(invocation) { [unowned self] identity in
            let visible = identity.visibleApp()
            let objects = registry.activities.values
                .filter { visible == nil || $0.appID == visible }
                .sorted { $0.id.count == $1.id.count ? $0.id < $1.id : $0.id.count < $1.id.count }
                .map { activity in
                    TypedValue.DictionaryEntry(
                        key: .objectPath(Self.path(of: activity.id)),
                        value: .dictionary(keyType: "s", valueType: "a{sv}", [
                            .init(key: .string(Interfaces.activityName), value: allProperties(of: activity)),
                        ]))
                }
            invocation.reply([.dictionary(keyType: "o", valueType: "a{sa{sv}}", objects)])
            // What GDBusObjectManagerClient calls first: from now on it follows every change it may see.
            callers.subscriptions.subscribeToEverything(invocation.sender)
        }
    }

    /// `Subscribe`: every activity signal the caller may read, until
    /// `Unsubscribe` or its connection closes. The identity is resolved
    /// first, since only an identified connection can be sent anything.
    func subscribe(_ invocation: Invocation) {
        withCaller(invocation) { [unowned self] _ in
            callers.subscriptions.subscribeToEverything(invocation.sender)
            invocation.reply()
        }
    }

    /// `Unsubscribe`: no more activity signals, whatever subscribed the
    /// caller (also `GetManagedObjects` and property reads); a no-op for a
    /// connection that was not subscribed.
    func unsubscribe(_ invocation: Invocation) {
        callers.subscriptions.unsubscribe(invocation.sender)
        invocation.reply()
    }

    func introspectManager(_ invocation: Invocation) {
        var xml = StandardInterfacesXML.doctype + "<node>\n"
        xml += Interfaces.manager.xml()
        xml += StandardInterfacesXML.objectManager + StandardInterfacesXML.properties
        xml += StandardInterfacesXML.introspectable + StandardInterfacesXML.peer
        xml += "  <node name=\"activity\"/>\n"
        for path in extraObjects.keys.sorted() {
            xml += "  <node name=\"\(path.dropFirst(Interfaces.managerPath.count + 1))\"/>\n"
        }
        invocation.reply([.string(xml + "</node>\n")])
    }

    func introspectActivity(_ invocation: Invocation) {
        var xml = StandardInterfacesXML.doctype + "<node>\n"
        xml += Interfaces.activity.xml()
        xml += StandardInterfacesXML.properties + StandardInterfacesXML.introspectable + StandardInterfacesXML.peer
        xml += "</node>\n"
        invocation.reply([.string(xml)])
    }

    /// `/org/example/UserActivity/activity`: a node per live activity the
    /// caller may read (`visibleApp` nil: all; a confined caller only its
    /// own app's, so it cannot enumerate the others).
    func activityContainerXML(visibleApp: String?) -> String {
        var xml = StandardInterfacesXML.doctype + "<node>\n"
        xml += StandardInterfacesXML.introspectable + StandardInterfacesXML.peer
        let ids = registry.activities.values.filter { visibleApp == nil || $0.appID == visibleApp }.map(\.id)
            .sorted { $0.count == $1.count ? $0 < $1 : $0.count < $1.count }
        for id in ids { xml += "  <node name=\"\(id)\"/>\n" }
        return xml + "</node>\n"
    }
}
