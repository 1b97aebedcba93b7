// SPDX-License-Identifier: Apache-2.0

/// The Handoff contract as data, its names defined once: useractivity-handoffd
/// dispatches and introspects with it (`--print-introspection` prints it into
/// `dbus/org.example.UserActivity.Handoff.xml`), useractivityctl calls with it.
public enum HandoffInterfaces {
    public static let busName = "org.example.UserActivity.Handoff"
    public static let managerPath = "/org/example/UserActivity/Handoff"
    public static let devicePathPrefix = "/org/example/UserActivity/Handoff/device/"
    public static let managerName = "org.example.UserActivity.Handoff"
    public static let deviceName = "org.example.UserActivity.Handoff.Device"
    public static let agentName = "org.example.UserActivity.Handoff.Agent"
    /// Handoff's errors share the service's namespace.
    public static let errorPrefix = ErrorNames.prefix

    /// The errors the handoff contract adds (`org.example.UserActivity.Error.<name>`).
    public enum ErrorName {
        public static let connectionUnavailable = errorPrefix + "ConnectionUnavailable"
        public static let handoffFailed = errorPrefix + "HandoffFailed"
        public static let notPaired = errorPrefix + "NotPaired"
        public static let pairingRefused = errorPrefix + "PairingRefused"
        public static let noAgent = errorPrefix + "NoAgent"
        public static let fileTooLarge = errorPrefix + "FileTooLarge"
    }

    private typealias A = InterfaceDescription.Argument
    private typealias M = InterfaceDescription.Method
    private typealias P = InterfaceDescription.Property

    public static let manager = InterfaceDescription(
        name: managerName,
        doc: """
        org.example.UserActivity.Handoff: continue on this device what a paired device is doing, and the reverse.
        Served by useractivity-handoffd, the project's only process that touches the network. Only unconfined
        callers (the shell, settings, the CLI) may use it; a confined (Flatpak, Snap) caller gets AccessDenied.
        """,
        methods: Manager.allCases.map(\.method),
        signals: [],
        properties: [
            P(name: "Enabled", signature: "b", isWritable: true, doc: "Default false; nothing is published, advertised or listened on while false; persisted. Cannot turn on while this device's key is damaged or missing (see ResetIdentity and IdentityError)."),
            P(name: "DeviceName", signature: "s", isWritable: true, doc: "Shown to other devices; default the machine's pretty host name; persisted."),
            P(name: "DeviceId", signature: "s", isWritable: false, doc: "This device's identity: lowercase hex SHA-256 of its public key (SPKI); empty until the first enable."),
            P(name: "Discoverable", signature: "b", isWritable: true, doc: "While true the device accepts pairing requests (and announces its name); turns itself off after DiscoverableTimeout."),
            P(name: "DiscoverableTimeout", signature: "u", isWritable: true, doc: "Seconds, default 120, 0 = until turned off."),
            P(name: "NotifyContinuable", signature: "b", isWritable: true, doc: "Addition to the contract: show a notification “Continue “Title” from DeviceName” when a paired device's activity can be continued here; default true; persisted."),
            P(name: "MaximumFileSize", signature: "t", isWritable: true, doc: "Addition to the contract: the largest document, in bytes, sent to or taken from a paired device when an open-document activity is continued (larger: FileTooLarge); default 1073741824 (1 GiB), 0 = no documents; persisted."),
            P(name: "ListenPort", signature: "q", isWritable: false, doc: "Addition to the contract: the TCP port the daemon listens on while Enabled, 0 otherwise (what AddPeer on another device needs)."),
            P(name: "IdentityError", signature: "s", isWritable: false, doc: "Addition to the contract: why this device's key cannot be used (damaged or missing), empty when it can; ResetIdentity clears it."),
        ])

    public static let device = InterfaceDescription(
        name: deviceName,
        doc: "org.example.UserActivity.Handoff.Device: one nearby or paired device, at /org/example/UserActivity/Handoff/device/<DeviceId>.",
        methods: Device.allCases.map(\.method),
        signals: [],
        properties: DeviceProperty.allCases.map(\.property))

    public static let agent = InterfaceDescription(
        name: agentName,
        doc: "org.example.UserActivity.Handoff.Agent: implemented by a pairing UI on the path given to RegisterAgent; useractivity-handoffd calls it.",
        methods: [
            M(name: "RequestConfirmation", inputs: [A("device", "o", "the device being paired"), A("code", "s", "the 6 digits both devices show")], outputs: [],
              doc: "A plain reply accepts, an error reply refuses. Called with a 60 s timeout."),
            M(name: "Cancel", inputs: [], outputs: [], doc: "The pairing request ended before an answer."),
        ],
        signals: [],
        properties: [])

    /// The manager's methods: a table giving each its handler is an exhaustive `switch`.
    public enum Manager: InterfaceMember {
        case registerAgent, unregisterAgent, addPeer, resetIdentity

        public static var interface: InterfaceDescription { manager }

        public var method: InterfaceDescription.Method {
            switch self {
            case .registerAgent:
                M(name: "RegisterAgent", inputs: [A("agent", "o", "an object of the caller implementing org.example.UserActivity.Handoff.Agent")], outputs: [],
                  doc: "The caller's object receives pairing confirmations while its connection lives; the latest registration wins.")
            case .unregisterAgent:
                M(name: "UnregisterAgent", inputs: [A("agent", "o", "the path given to RegisterAgent")], outputs: [],
                  doc: "Stops sending pairing confirmations to that agent.")
            case .addPeer:
                M(name: "AddPeer", inputs: [A("address", "s", "host:port of the device's handoff daemon (IPv6 as [addr]:port)")],
                  outputs: [A("device", "o", "the device object, once its key is known")],
                  doc: "Connects to a device reached without discovery (networks without mDNS, tests) and answers once its key and name are known; kept across restarts. Errors: InvalidArgument, ConnectionUnavailable.")
            case .resetIdentity:
                M(name: "ResetIdentity", inputs: [], outputs: [A("device_id", "s", "the new DeviceId")],
                  doc: "Addition to the contract: makes a new key and certificate for this device, forgetting every paired device (they must pair again). The only way out of a damaged or missing key, which otherwise keeps Enabled off.")
            }
        }

        /// The name on the bus.
        public var name: String { method.name }
    }

    /// A device object's methods: a table giving each its handler is an exhaustive `switch`.
    public enum Device: InterfaceMember {
        case pair, cancelPairing, unpair, continueActivity

        public static var interface: InterfaceDescription { device }

        public var method: InterfaceDescription.Method {
            switch self {
            case .pair:
                M(name: "Pair", inputs: [], outputs: [],
                  doc: "Starts pairing and answers once both sides confirmed the same 6-digit code. Errors: PairingRefused (a person or the other device refused, another pairing is in progress, or nobody answered in 60 s), ConnectionUnavailable (not reachable, or it went away before both answered), NoAgent.")
            case .cancelPairing:
                M(name: "CancelPairing", inputs: [], outputs: [], doc: "Ends a pairing in progress with this device (its Pair call gets PairingRefused).")
            case .unpair:
                M(name: "Unpair", inputs: [], outputs: [], doc: "Forgets the device's key here and tells the device when it is reachable. NotPaired when it was not paired.")
            case .continueActivity:
                M(name: "ContinueActivity", inputs: [A("options", "a{sv}", "as for every Continue method: target-app-id, timeout-ms, activation-token, desktop-startup-id")],
                  outputs: [A("app_id", "s", "the app that took it")],
                  doc: "Fetches the device's current activity in full and continues it here through useractivityd's ContinueActivity; the origin's live activity then emits Continued. Errors: NotPaired, ConnectionUnavailable (not reachable, or gone during the call), HandoffFailed (the activity ended or is no longer current, or its owner failed to save it or did not within timeout-ms), UserInfoTooLarge, FileTooLarge (an open-document's file is over MaximumFileSize here or there), NoHandler and the other errors of ContinueActivity. An open-document activity whose file:// document is not here is brought first: its file goes to the downloads folder (XDG_DOWNLOAD_DIR/<device name>), checked against the SHA-256 the origin sends, and is opened from there; the same bytes already at the same path are opened in place.")
            }
        }

        /// The name on the bus.
        public var name: String { method.name }
    }

    /// A device object's properties: their values come from one exhaustive `switch`.
    public enum DeviceProperty: CaseIterable, Sendable {
        case name, deviceID, address, paired, reachable, currentActivity

        public var property: InterfaceDescription.Property {
            switch self {
            case .name:
                P(name: "Name", signature: "s", isWritable: false, doc: "The device's DeviceName.")
            case .deviceID:
                P(name: "DeviceId", signature: "s", isWritable: false, doc: "The device's public-key fingerprint (hex SHA-256 of its SPKI).")
            case .address:
                P(name: "Address", signature: "s", isWritable: false, doc: "host:port last seen.")
            case .paired:
                P(name: "Paired", signature: "b", isWritable: false, doc: "Its key is pinned here.")
            case .reachable:
                P(name: "Reachable", signature: "b", isWritable: false, doc: "An authenticated connection is up.")
            case .currentActivity:
                P(name: "CurrentActivity", signature: "a{sv}", isWritable: false, doc: "The device's current handoff-eligible activity, empty when none: activity-type, app-id, title, webpage-url (empty when unset), timestamp (x, Unix µs), continuable (b: an installed app here declares the type within the publisher's team, or there is a webpage URL).")
            }
        }

        /// The name on the bus.
        public var name: String { property.name }
    }

    public static let all = [manager, device, agent]

    static let errors: [(String, String)] = [
        ("ConnectionUnavailable", "the device is not reachable, or went away during the call"),
        ("HandoffFailed", "the origin could not provide the activity: it ended, is no longer current or eligible, or its owner failed to save it"),
        ("NotPaired", "the device is not paired"),
        ("PairingRefused", "a person, or the other device, refused the pairing"),
        ("NoAgent", "no agent and no notification server to confirm a pairing"),
        ("FileTooLarge", "the document of an open-document activity is larger than MaximumFileSize on the device that has it or on this one"),
        ("AccessDenied", "a confined (Flatpak, Snap) caller"),
        ("InvalidArgument", "a malformed address or value"),
    ]

    public static func documentedXML() -> String {
        var out = StandardInterfacesXML.doctype
        out += "<!--\n  org.example.UserActivity.Handoff: generated by `useractivity-handoffd --print-introspection`;\n"
        out += "  scripts/test.sh fails when this file and the printed XML differ.\n\n"
        out += "  Errors (org.example.UserActivity.Error.<Name>):\n"
        for (name, doc) in errors { out += "    \(name): \(doc)\n" }
        out += "  UserInfoTooLarge, RemoteApplicationTimedOut, NoHandler, NotDeclared, ContinuationFailed keep\n"
        out += "  their meaning from org.example.UserActivity.\n-->\n<node>\n"
        for interface in all { out += interface.xml() }
        out += "</node>\n"
        return out
    }

    public static func servedXML(for path: String, children: [String]) -> String {
        var out = StandardInterfacesXML.doctype + "<node>\n"
        out += StandardInterfacesXML.peer + StandardInterfacesXML.introspectable + StandardInterfacesXML.properties
        if path == managerPath {
            out += StandardInterfacesXML.objectManager
            out += manager.xml()
        } else {
            out += device.xml()
        }
        for child in children { out += "  <node name=\"\(child)\"/>\n" }
        out += "</node>\n"
        return out
    }
}
