package import Foundation
import KKPushCore

/// A stand-in for a real server chain, with the real certificates' names and shape and keys made here: a root, an
/// intermediate it signs and a server certificate for loopback (and any names given) that the intermediate signs.
/// The mock serves it (the leaf then the intermediate, as APNs does) so a client's trust store and pins can be
/// tried against a chain shaped like Apple's without Apple's keys.
package struct StandInChain: Sendable {
    /// One certificate to make: its subject (RFC 2253 attribute pairs, most general first) and its RSA key size.
    package struct Subject: Sendable {
        package var attributes: [(String, String)]
        package var keyBits: Int
        package init(_ attributes: [(String, String)], keyBits: Int) {
            self.attributes = attributes
            self.keyBits = keyBits
        }
        package var commonName: String { attributes.last { $0.0 == "CN" }?.1 ?? "" }
    }

    /// A chain's shape: the root, the intermediate and the leaf's subject.
    package struct Shape: Sendable {
        package var name: String
        package var root: Subject
        package var intermediate: Subject
        /// The leaf's subject without its CN (which is the first host name given).
        package var leafAttributes: [(String, String)]
        package var leafKeyBits: Int
    }

    /// Apple's since 2025: "USERTrust RSA Certification Authority" (RSA 4096), an "Apple Public Server RSA CA 12 -
    /// G1" intermediate (RSA 2048), an RSA 2048 server certificate.
    package static let appleUSERTrust = Shape(
        name: "usertrust",
        root: Subject(
            [
                ("C", "US"), ("ST", "New Jersey"), ("L", "Jersey City"), ("O", "The USERTRUST Network"),
                ("CN", "USERTrust RSA Certification Authority"),
            ], keyBits: 4096),
        intermediate: Subject(
            [("C", "US"), ("ST", "California"), ("O", "Apple Inc."), ("CN", "Apple Public Server RSA CA 12 - G1")],
            keyBits: 2048),
        leafAttributes: [("C", "US"), ("ST", "California"), ("O", "kkpush stand-in")], leafKeyBits: 2048)

    /// The shapes by name.
    package static let shapes: [String: Shape] = [appleUSERTrust.name: appleUSERTrust]

    /// The PEM texts made: each certificate, the served chain (leaf then intermediate) and the leaf's key.
    package var rootPEM: String
    package var intermediatePEM: String
    package var leafPEM: String
    package var leafKeyPEM: String
    /// What a server serves: the leaf, then the intermediate.
    package var chainPEM: String { leafPEM + intermediatePEM }
    /// The certificates made, root first.
    package var certificates: [ServerCertificate]

    /// Makes a chain of `shape` for `hostNames` and `addresses` (the leaf's subjectAltName; its CN is the first),
    /// every certificate valid from an hour before `now` for `days` days. `rootKeyBits` replaces the shape's root
    /// key size (nil: the shape's). Throws ``KKPushError/Code/trustChainIssueFailed``.
    package static func make(
        shape: Shape = appleUSERTrust, hostNames: [String], addresses: [String], days: Int = 365,
        rootKeyBits: Int? = nil, now: Date = Date()
    ) throws -> StandInChain {
        guard !hostNames.isEmpty || !addresses.isEmpty else {
            throw KKPushError(
                code: .trustChainIssueFailed, message: "No host name or address for the stand-in's leaf.",
                fix: "Give at least one host name (hostNames) or address (addresses).")
        }
        var root = shape.root
        if let rootKeyBits { root.keyBits = rootKeyBits }
        return try ChainIssuing.make(
            root: root, intermediate: shape.intermediate,
            leaf: Subject(shape.leafAttributes + [("CN", hostNames.first ?? addresses[0])], keyBits: shape.leafKeyBits),
            hostNames: hostNames, addresses: addresses, days: days, now: now)
    }
}
