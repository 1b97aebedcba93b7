// SPDX-License-Identifier: Apache-2.0
import TypedValues
import UserActivityCore

/// Handlers of `org.example.UserActivity`: decode, call the core, reply, emit.
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
            let now = configuration.clock()
            let (activity, created) = try registry.create(type: type, properties: patch, app: app,
                                                          connection: invocation.sender, now: now)
            var events = created
            if becomeCurrent {
                events += try registry.becomeCurrent(activity.id, now: now)
            }
            do {
                try persist(events)
            } catch {
                // Nothing half-applied: without its saved copy the activity is not kept.
                events += (try? registry.invalidate(activity.id)) ?? []
                emit(events)
                throw error
            }
            invocation.reply([.objectPath(Self.path(of: activity.id))])
            emit(events)
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
            let now = configuration.clock()
            if properties.expirationDate != 0 && properties.expirationDate <= now {
                throw UserActivityError.expired("expiration-date \(properties.expirationDate) is already past; use a future time or 0 for never")
            }
            let savedID = try saved.donate(type: type, app: app, properties: properties, now: now)
            invocation.reply([.string(savedID)])
            emit([])
        }
    }

    func search(_ invocation: Invocation) {
        let query = invocation.string(0)
        let entries = invocation.entries(1)
        withCaller(invocation) { [unowned self] identity in
            let options = try SearchOptions.parse(entries)
            let results = try saved.search(query: query, options: options, visibleApp: identity.visibleApp(),
                                           now: configuration.clock())
            invocation.reply([.array(elementType: "a{sv}", results)])
        }
    }

    func getSuggestions(_ invocation: Invocation) {
        let entries = invocation.entries(0)
        withCaller(invocation) { [unowned self] identity in
            let options = try SuggestionOptions.parse(entries)
            let results = try saved.suggestions(options: options, visibleApp: identity.visibleApp(),
                                                now: configuration.clock())
            invocation.reply([.array(elementType: "a{sv}", results)])
        }
    }

    func deleteSavedActivities(_ invocation: Invocation) {
        let identifiers = invocation.arguments[0].stringArrayValue ?? []
        withCaller(invocation) { [unowned self] identity in
            let app = try identity.actingApp(claim: nil, catalog: catalog)
            try saved.delete(app: app, persistentIdentifiers: identifiers)
            invocation.reply()
        }
    }

    func deleteAllSavedActivities(_ invocation: Invocation) {
        withCaller(invocation) { [unowned self] identity in
            let app = try identity.actingApp(claim: nil, catalog: catalog)
            try saved.deleteAll(app: app)
            invocation.reply()
        }
    }

    // MARK: Manager properties

    private func managerProperty(_ name: String) throws -> TypedValue {
        switch name {
        case "CurrentActivity": return currentActivityPath
        case "Version": return .string(configuration.version)
        default:
            throw UserActivityError(.unknownProperty, "no property '\(name.prefix(200))' on \(Interfaces.managerName); it has CurrentActivity and Version")
        }
    }

    func managerPropertyGet(_ invocation: Invocation) {
        let interface = invocation.string(0)
        do {
            guard interface == Interfaces.managerName || interface.isEmpty else {
                throw UserActivityError(.unknownProperty, "\(Interfaces.managerPath) has no properties on interface '\(interface.prefix(200))'")
            }
            invocation.reply([.variant(try managerProperty(invocation.string(1)))])
        } catch {
            invocation.fail(error)
        }
    }

    func managerPropertyGetAll(_ invocation: Invocation) {
        let interface = invocation.string(0)
        guard interface == Interfaces.managerName || interface.isEmpty else {
            invocation.reply([.stringVariantDictionary([])])
            return
        }
        invocation.reply([.stringVariantDictionary(Interfaces.manager.properties.map { ($0.name, (try? managerProperty($0.name)) ?? .string("")) })])
    }

    func managerPropertySet(_ invocation: Invocation) {
        let name = invocation.string(1)
        if Interfaces.manager.property(name) != nil {
            invocation.fail(UserActivityError(.propertyReadOnly, "the property \(name) is read-only"))
        } else {
            invocation.fail(UserActivityError(.unknownProperty, "no property '\(name.prefix(200))' on \(Interfaces.managerName)"))
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
        }
    }

    func introspectManager(_ invocation: Invocation) {
        var xml = StandardInterfacesXML.doctype + "<node>\n"
        xml += Interfaces.manager.xml()
        xml += StandardInterfacesXML.objectManager + StandardInterfacesXML.properties
        xml += StandardInterfacesXML.introspectable + StandardInterfacesXML.peer
        xml += "  <node name=\"activity\"/>\n</node>\n"
        invocation.reply([.string(xml)])
    }

    func introspectActivity(_ invocation: Invocation) {
        var xml = StandardInterfacesXML.doctype + "<node>\n"
        xml += Interfaces.activity.xml()
        xml += StandardInterfacesXML.properties + StandardInterfacesXML.introspectable + StandardInterfacesXML.peer
        xml += "</node>\n"
        invocation.reply([.string(xml)])
    }

    func activityContainerXML() -> String {
        var xml = StandardInterfacesXML.doctype + "<node>\n"
        xml += StandardInterfacesXML.introspectable + StandardInterfacesXML.peer
        let ids = registry.activities.keys.sorted { $0.count == $1.count ? $0 < $1 : $0.count < $1.count }
        for id in ids { xml += "  <node name=\"\(id)\"/>\n" }
        return xml + "</node>\n"
    }
}
