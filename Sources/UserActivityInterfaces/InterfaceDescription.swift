// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// A D-Bus interface as data: members, argument names and signatures, and the
/// documentation that goes into the introspection XML.
public struct InterfaceDescription: Sendable {
    public struct Argument: Sendable {
        public let name: String
        public let signature: String
        public let doc: String
        public init(_ name: String, _ signature: String, _ doc: String) {
            self.name = name
            self.signature = signature
            self.doc = doc
        }
    }

    public struct Method: Sendable {
        public let name: String
        public let inputs: [Argument]
        public let outputs: [Argument]
        public let doc: String
        public init(name: String, inputs: [Argument], outputs: [Argument], doc: String) {
            self.name = name
            self.inputs = inputs
            self.outputs = outputs
            self.doc = doc
        }
        public var inputSignature: String { inputs.map(\.signature).joined() }
        public var outputSignature: String { outputs.map(\.signature).joined() }
    }

    public struct Signal: Sendable {
        public let name: String
        public let arguments: [Argument]
        public let doc: String
        public init(name: String, arguments: [Argument], doc: String) {
            self.name = name
            self.arguments = arguments
            self.doc = doc
        }
    }

    public struct Property: Sendable {
        public let name: String
        public let signature: String
        public let isWritable: Bool
        public let doc: String
        public init(name: String, signature: String, isWritable: Bool, doc: String) {
            self.name = name
            self.signature = signature
            self.isWritable = isWritable
            self.doc = doc
        }
    }

    public let name: String
    public let doc: String
    public let methods: [Method]
    public let signals: [Signal]
    public let properties: [Property]

    public init(name: String, doc: String, methods: [Method], signals: [Signal], properties: [Property]) {
        self.name = name
        self.doc = doc
        self.methods = methods
        self.signals = signals
        self.properties = properties
    }

    public func method(_ name: String) -> Method? { methods.first { $0.name == name } }
    public func property(_ name: String) -> Property? { properties.first { $0.name == name } }
}

/// The methods of one interface as an enum, each case's name, arguments and
/// documentation given by an exhaustive `switch` in ``method``. A service
/// pairs each case with its handler in another exhaustive `switch`, so a
/// method without a handler, or a handler without a method, does not compile.
public protocol InterfaceMember: CaseIterable, Sendable {
    /// The interface these are the methods of.
    static var interface: InterfaceDescription { get }
    var method: InterfaceDescription.Method { get }
}

extension InterfaceMember {
    /// The method called `name` (a call's member); nil when the interface has none.
    public init?(named name: String) {
        guard let member = Self.allCases.first(where: { $0.method.name == name }) else { return nil }
        self = member
    }
}

// MARK: - XML

extension InterfaceDescription {
    /// The `<interface>` element with a doc comment before each member.
    /// The same text is served by `Introspect` and kept in `dbus/`.
    public func xml(indent: String = "  ") -> String {
        var out = ""
        let inner = indent + "  "
        out += comment(doc, indent: indent)
        out += "\(indent)<interface name=\"\(name)\">\n"
        for method in methods {
            var text = method.doc
            for argument in method.inputs + method.outputs { text += "\n@\(argument.name): \(argument.doc)" }
            out += comment(text, indent: inner)
            out += "\(inner)<method name=\"\(method.name)\">\n"
            for argument in method.inputs {
                out += "\(inner)  <arg name=\"\(argument.name)\" type=\"\(escape(argument.signature))\" direction=\"in\"/>\n"
            }
            for argument in method.outputs {
                out += "\(inner)  <arg name=\"\(argument.name)\" type=\"\(escape(argument.signature))\" direction=\"out\"/>\n"
            }
            out += "\(inner)</method>\n"
        }
        for signal in signals {
            var text = signal.doc
            for argument in signal.arguments { text += "\n@\(argument.name): \(argument.doc)" }
            out += comment(text, indent: inner)
            out += "\(inner)<signal name=\"\(signal.name)\">\n"
            for argument in signal.arguments {
                out += "\(inner)  <arg name=\"\(argument.name)\" type=\"\(escape(argument.signature))\"/>\n"
            }
            out += "\(inner)</signal>\n"
        }
        for property in properties {
            out += comment(property.doc, indent: inner)
            out += "\(inner)<property name=\"\(property.name)\" type=\"\(escape(property.signature))\" access=\"\(property.isWritable ? "readwrite" : "read")\"/>\n"
        }
        out += "\(indent)</interface>\n"
        return out
    }

    private func comment(_ text: String, indent: String) -> String {
        // "--" may not appear inside an XML comment.
        let safe = text.replacing("--", with: "- -")
        let lines = safe.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.count == 1 { return "\(indent)<!-- \(safe) -->\n" }
        return "\(indent)<!--\n" + lines.map { "\(indent)    \($0)\n" }.joined() + "\(indent)-->\n"
    }

    private func escape(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;")
            .replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
    }
}

/// The standard interfaces every object serves, as libdbus and sd-bus spell them.
public enum StandardInterfacesXML {
    public static let doctype = "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n"

    public static let peer = """
      <interface name="org.freedesktop.DBus.Peer">
        <method name="Ping"/>
        <method name="GetMachineId">
          <arg name="machine_uuid" type="s" direction="out"/>
        </method>
      </interface>

    """
    public static let introspectable = """
      <interface name="org.freedesktop.DBus.Introspectable">
        <method name="Introspect">
          <arg name="xml_data" type="s" direction="out"/>
        </method>
      </interface>

    """
    public static let properties = """
      <interface name="org.freedesktop.DBus.Properties">
        <method name="Get">
          <arg name="interface_name" type="s" direction="in"/>
          <arg name="property_name" type="s" direction="in"/>
          <arg name="value" type="v" direction="out"/>
        </method>
        <method name="GetAll">
          <arg name="interface_name" type="s" direction="in"/>
          <arg name="props" type="a{sv}" direction="out"/>
        </method>
        <method name="Set">
          <arg name="interface_name" type="s" direction="in"/>
          <arg name="property_name" type="s" direction="in"/>
          <arg name="value" type="v" direction="in"/>
        </method>
        <signal name="PropertiesChanged">
          <arg name="interface_name" type="s"/>
          <arg name="changed_properties" type="a{sv}"/>
          <arg name="invalidated_properties" type="as"/>
        </signal>
      </interface>

    """
    public static let objectManager = """
      <interface name="org.freedesktop.DBus.ObjectManager">
        <method name="GetManagedObjects">
          <arg name="object_paths_interfaces_and_properties" type="a{oa{sa{sv}}}" direction="out"/>
        </method>
        <signal name="InterfacesAdded">
          <arg name="object_path" type="o"/>
          <arg name="interfaces_and_properties" type="a{sa{sv}}"/>
        </signal>
        <signal name="InterfacesRemoved">
          <arg name="object_path" type="o"/>
          <arg name="interfaces" type="as"/>
        </signal>
      </interface>

    """
}
