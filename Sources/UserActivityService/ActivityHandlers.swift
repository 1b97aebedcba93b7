// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import TypedValues
import UserActivityCore

/// Handlers of `org.example.UserActivity.Activity` and its properties.
extension UserActivityService {
    /// Runs `body` with the addressed activity when the caller may change it.
    private func asOwner(_ invocation: Invocation, claim: String? = nil,
                         _ body: @escaping (LiveActivity) throws -> Void) {
        withCaller(invocation) { [unowned self] identity in
            guard let id = invocation.activityID, let activity = registry.activity(id) else {
                throw UserActivityError(.unknownObject, "no activity at \(invocation.message.path ?? "?"): it was invalidated or its connection closed")
            }
            if let claim {
                let app = try identity.actingApp(claim: claim, catalog: catalog)
                guard app == activity.appID else { throw Self.notOwner(activity, tellingConfined: identity.isConfined) }
            } else if !identity.mayActFor(app: activity.appID) {
                throw Self.notOwner(activity, tellingConfined: identity.isConfined)
            }
            try body(activity)
        }
    }

    /// A sandboxed caller is not told whose activity it is (nor its type): it
    /// may not read another app's activities, so the error must not either.
    static func notOwner(_ activity: LiveActivity, tellingConfined confined: Bool) -> UserActivityError {
        if confined {
            return .accessDenied("this activity belongs to another app; a sandboxed app may change only its own app's activities")
        }
        return .accessDenied("the activity \(activity.activityType) belongs to the app \(activity.appID); only that app may change it")
    }

    private func apply(_ patch: ActivityPatch, to activity: LiveActivity, _ invocation: Invocation) throws {
        try finish(invocation, Changes(try registry.update(activity.id, with: patch, now: scheduler.now)))
    }

    func update(_ invocation: Invocation) {
        do {
            let patch = try ActivityPatch.parse(invocation.entries(0), allowsAppIDClaim: true)
            asOwner(invocation, claim: patch.appIDClaim) { [unowned self] activity in
                try apply(patch, to: activity, invocation)
            }
        } catch {
            invocation.fail(error)
        }
    }

    func addUserInfoEntries(_ invocation: Invocation) {
        let entries = invocation.entries(0)
        asOwner(invocation) { [unowned self] activity in
            try apply(try ActivityPatch.mergingUserInfo(entries, into: activity.properties), to: activity, invocation)
        }
    }

    func becomeCurrent(_ invocation: Invocation) {
        asOwner(invocation) { [unowned self] activity in
            try finish(invocation, Changes(try registry.becomeCurrent(activity.id, now: scheduler.now)))
        }
    }

    func resignCurrent(_ invocation: Invocation) {
        asOwner(invocation) { [unowned self] activity in
            try finish(invocation, Changes(try registry.resignCurrent(activity.id)))
        }
    }

    func invalidate(_ invocation: Invocation) {
        asOwner(invocation) { [unowned self] activity in
            try finish(invocation, Changes(try registry.invalidate(activity.id)))
        }
    }

    // MARK: Properties

    /// A confined caller reads only its own app's activities.
    private func asReader(_ invocation: Invocation, _ body: @escaping (LiveActivity) throws -> Void) {
        withCaller(invocation) { [unowned self] identity in
            guard let id = invocation.activityID, let activity = registry.activity(id) else {
                throw UserActivityError(.unknownObject, "no activity at \(invocation.message.path ?? "?")")
            }
            if let visible = identity.visibleApp(), visible != activity.appID {
                throw UserActivityError.accessDenied("this activity belongs to another app; a sandboxed app may read only its own app's activities")
            }
            try body(activity)
        }
    }

    private func requireActivityInterface(_ interface: String) throws {
        guard interface == Interfaces.activityName || interface.isEmpty else {
            throw UserActivityError(.unknownProperty, "activities have properties only on \(Interfaces.activityName), not '\(interface.prefix(200))'")
        }
    }

    func activityPropertyGet(_ invocation: Invocation) {
        let interface = invocation.string(0)
        let name = invocation.string(1)
        asReader(invocation) { [unowned self] activity in
            try requireActivityInterface(interface)
            guard let field = ActivityField(propertyName: name) else {
                throw UserActivityError(.unknownProperty, "no property '\(name.prefix(200))' on \(Interfaces.activityName)")
            }
            invocation.reply([.variant(activity.value(of: field, isCurrent: registry.currentID == activity.id))])
            callers.subscriptions.subscribe(invocation.sender, toActivity: activity.id)
        }
    }

    func activityPropertyGetAll(_ invocation: Invocation) {
        let interface = invocation.string(0)
        asReader(invocation) { [unowned self] activity in
            guard interface == Interfaces.activityName || interface.isEmpty else {
                invocation.reply([.stringVariantDictionary([])])
                return
            }
            invocation.reply([allProperties(of: activity)])
            callers.subscriptions.subscribe(invocation.sender, toActivity: activity.id)
        }
    }

    func activityPropertySet(_ invocation: Invocation) {
        let interface = invocation.string(0)
        let name = invocation.string(1)
        let value = invocation.arguments[2].unwrappedVariantOnce
        do {
            try requireActivityInterface(interface)
            let patch = try ActivityPatch.setting(propertyName: name, to: value)
            asOwner(invocation) { [unowned self] activity in
                try apply(patch, to: activity, invocation)
            }
        } catch {
            invocation.fail(error)
        }
    }
}

extension TypedValue {
    /// The content of one variant level (`Properties.Set` wraps the value once).
    var unwrappedVariantOnce: TypedValue {
        if case .variant(let inner) = self { return inner }
        return self
    }
}
