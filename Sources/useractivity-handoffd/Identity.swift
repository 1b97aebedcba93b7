// SPDX-License-Identifier: Apache-2.0
import CGnuTLS
#if canImport(Glibc)
import Glibc
#endif
import HandoffCore

/// A GnuTLS call that failed: which one and GnuTLS's words for it.
struct GnuTLSFailure: Error, CustomStringConvertible {
    let function: String
    let code: Int32
    var description: String { "\(function) failed: \(String(cString: gnutls_strerror(code)))" }
}

/// Every GnuTLS call that can fail goes through here.
@discardableResult
func gnutlsCheck(_ function: String, _ code: Int32) throws(GnuTLSFailure) -> Int32 {
    guard code >= 0 else { throw GnuTLSFailure(function: function, code: code) }
    return code
}

/// Owns one `gnutls_x509_crt_t`.
final class X509Certificate {
    let handle: gnutls_x509_crt_t

    init() throws(GnuTLSFailure) {
        var raw: gnutls_x509_crt_t?
        try gnutlsCheck("gnutls_x509_crt_init", gnutls_x509_crt_init(&raw))
        handle = raw!
    }

    deinit { gnutls_x509_crt_deinit(handle) }

    /// Parses a certificate (DER from GIO's `certificate` property, or PEM).
    convenience init(bytes: [UInt8], pem: Bool) throws(GnuTLSFailure) {
        try self.init()
        var copy = bytes
        let code = copy.withUnsafeMutableBytes { buffer in
            var datum = gnutls_datum_t(data: buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), size: UInt32(buffer.count))
            return gnutls_x509_crt_import(handle, &datum, pem ? GNUTLS_X509_FMT_PEM : GNUTLS_X509_FMT_DER)
        }
        try gnutlsCheck("gnutls_x509_crt_import", code)
    }

    /// The SHA-256 of the certificate's SubjectPublicKeyInfo.
    func publicKeyID() throws(GnuTLSFailure) -> [UInt8] {
        var id = [UInt8](repeating: 0, count: 32)
        var size = 32
        let code = id.withUnsafeMutableBytes { gnutls_x509_crt_get_key_id(handle, CGNUTLS_KEYID_USE_SHA256, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), &size) }
        try gnutlsCheck("gnutls_x509_crt_get_key_id", code)
        return Array(id.prefix(size))
    }
}

/// Owns one `gnutls_x509_privkey_t`.
final class PrivateKey {
    let handle: gnutls_x509_privkey_t

    init() throws(GnuTLSFailure) {
        var raw: gnutls_x509_privkey_t?
        try gnutlsCheck("gnutls_x509_privkey_init", gnutls_x509_privkey_init(&raw))
        handle = raw!
    }

    deinit { gnutls_x509_privkey_deinit(handle) }
}

/// Copies a datum GnuTLS allocated and frees it.
private func takeDatum(_ datum: inout gnutls_datum_t) -> [UInt8] {
    defer { cgnutls_free(datum.data) }
    guard let data = datum.data else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: Int(datum.size)))
}

/// This device's key and self-signed certificate, and its id.
struct DeviceIdentity {
    /// PEM of the certificate followed by the private key (what GIO loads).
    let certificatePEM: String
    let keyPEM: String
    let keyID: [UInt8]
    var deviceID: String { Hex.encode(keyID) }

    /// A key and certificate shown to devices that have not proved they are
    /// paired: a fresh key, a random name, valid two days; nothing in it
    /// is this device's (see docs/handoff.md, "Privacy on the network").
    static func generateEphemeral() throws(GnuTLSFailure) -> DeviceIdentity {
        try generate(commonName: Hex.encode(SecureRandom.bytes(8)), validSeconds: 2 * 86_400)
    }

    /// A new ECDSA P-256 key and a certificate for it, valid 20 years.
    static func generate(commonName: String, validSeconds: Int = 20 * 365 * 86_400) throws(GnuTLSFailure) -> DeviceIdentity {
        let key = try PrivateKey()
        try gnutlsCheck("gnutls_x509_privkey_generate2",
                        gnutls_x509_privkey_generate2(key.handle, GNUTLS_PK_ECDSA, cgnutls_curve_bits(GNUTLS_ECC_CURVE_SECP256R1), 0, nil, 0))
        let certificate = try X509Certificate()
        try gnutlsCheck("gnutls_x509_crt_set_version", gnutls_x509_crt_set_version(certificate.handle, 3))
        var serial = [UInt8](repeating: 0, count: 16)
        try gnutlsCheck("gnutls_rnd", serial.withUnsafeMutableBytes { gnutls_rnd(GNUTLS_RND_NONCE, $0.baseAddress, $0.count) })
        serial[0] &= 0x7f
        try gnutlsCheck("gnutls_x509_crt_set_serial", serial.withUnsafeBytes { gnutls_x509_crt_set_serial(certificate.handle, $0.baseAddress, $0.count) })
        let now = time(nil)
        try gnutlsCheck("gnutls_x509_crt_set_activation_time", gnutls_x509_crt_set_activation_time(certificate.handle, now - 86_400))
        try gnutlsCheck("gnutls_x509_crt_set_expiration_time", gnutls_x509_crt_set_expiration_time(certificate.handle, now + validSeconds))
        let dn = "CN=" + commonName.filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }
        try gnutlsCheck("gnutls_x509_crt_set_dn", gnutls_x509_crt_set_dn(certificate.handle, dn, nil))
        try gnutlsCheck("gnutls_x509_crt_set_key", gnutls_x509_crt_set_key(certificate.handle, key.handle))
        try gnutlsCheck("gnutls_x509_crt_sign2", gnutls_x509_crt_sign2(certificate.handle, certificate.handle, key.handle, GNUTLS_DIG_SHA256, 0))
        var certificateDatum = gnutls_datum_t()
        try gnutlsCheck("gnutls_x509_crt_export2", gnutls_x509_crt_export2(certificate.handle, GNUTLS_X509_FMT_PEM, &certificateDatum))
        let certificatePEM = String(decoding: takeDatum(&certificateDatum), as: UTF8.self)
        var keyDatum = gnutls_datum_t()
        try gnutlsCheck("gnutls_x509_privkey_export2_pkcs8",
                        gnutls_x509_privkey_export2_pkcs8(key.handle, GNUTLS_X509_FMT_PEM, nil, UInt32(GNUTLS_PKCS_PLAIN.rawValue), &keyDatum))
        let keyPEM = String(decoding: takeDatum(&keyDatum), as: UTF8.self)
        return DeviceIdentity(certificatePEM: certificatePEM, keyPEM: keyPEM, keyID: try certificate.publicKeyID())
    }

    /// Reads the certificate and checks the key parses; throws when either is damaged.
    static func load(certificatePEM: String, keyPEM: String) throws(GnuTLSFailure) -> DeviceIdentity {
        let certificate = try X509Certificate(bytes: Array(certificatePEM.utf8), pem: true)
        let key = try PrivateKey()
        var bytes = Array(keyPEM.utf8)
        let code = bytes.withUnsafeMutableBytes { buffer in
            var datum = gnutls_datum_t(data: buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), size: UInt32(buffer.count))
            return gnutls_x509_privkey_import(key.handle, &datum, GNUTLS_X509_FMT_PEM)
        }
        try gnutlsCheck("gnutls_x509_privkey_import", code)
        return DeviceIdentity(certificatePEM: certificatePEM, keyPEM: keyPEM, keyID: try certificate.publicKeyID())
    }

    /// The SPKI SHA-256 of a certificate in DER (a peer's, from GIO).
    static func keyID(ofDER der: [UInt8]) throws(GnuTLSFailure) -> [UInt8] {
        try X509Certificate(bytes: der, pem: false).publicKeyID()
    }
}

/// Why the identity cannot be used; Enabled stays off until ResetIdentity.
struct IdentityError: Error, CustomStringConvertible {
    let description: String
}

/// Loads this device's identity, or makes one when none ever existed.
enum IdentityStore {
    static let certificateFile = "certificate.pem"
    static let keyFile = "key.pem"

    /// `expectedID` is the DeviceId recorded in the state: when set, the
    /// files must exist and hold that key (no silent new identity).
    static func loadOrCreate(in directory: StateDirectory, expectedID: String, name: String) throws -> DeviceIdentity {
        let certificate = try directory.read(certificateFile)
        let key = try directory.read(keyFile)
        if let certificate, let key {
            let identity: DeviceIdentity
            do {
                identity = try DeviceIdentity.load(certificatePEM: String(decoding: certificate, as: UTF8.self),
                                                   keyPEM: String(decoding: key, as: UTF8.self))
            } catch {
                throw IdentityError(description: "this device's key in \(directory.path) is damaged (\(error)); call ResetIdentity() to make a new one (paired devices must then pair again)")
            }
            if !expectedID.isEmpty && identity.deviceID != expectedID {
                throw IdentityError(description: "the key in \(directory.path) is not this device's (\(expectedID)); call ResetIdentity() to make a new one (paired devices must then pair again)")
            }
            return identity
        }
        if !expectedID.isEmpty || certificate != nil || key != nil {
            throw IdentityError(description: "this device's key is missing from \(directory.path); call ResetIdentity() to make a new one (paired devices must then pair again)")
        }
        return try create(in: directory, name: name)
    }

    static func create(in directory: StateDirectory, name: String) throws -> DeviceIdentity {
        let identity = try DeviceIdentity.generate(commonName: name.isEmpty ? "useractivity-handoff" : name)
        try directory.write(keyFile, Array(identity.keyPEM.utf8))
        try directory.write(certificateFile, Array(identity.certificatePEM.utf8))
        return identity
    }
}
