package import KKPushSystem

/// A stand-in chain written into a folder: `server.crt` (the leaf, then the intermediate: what a server serves),
/// `server.key`, `leaf.crt`, `intermediate.crt` and `root.crt` (``write(shape:hostNames:addresses:days:out:replace:)``).
/// One value a command line prints as text or JSON; its coding keys are the stable field names. It keeps the
/// certificates' facts and the files' paths, never a key.
package struct StandInChainReport: Encodable, Sendable {
    /// The shape's name (`usertrust`).
    package var chain: String
    package var certificateChain: String
    package var privateKey: String
    package var leaf: String
    package var intermediate: String
    package var root: String
    /// The leaf's DNS names and IP addresses.
    package var hostNames: [String]
    package var addresses: [String]
    /// Root, intermediate and leaf, as ``StandInChain/certificates`` lists them.
    package var certificates: [ServerCertificate]

    /// The files, in the order written into the folder.
    package static let files = ["server.crt", "server.key", "leaf.crt", "intermediate.crt", "root.crt"]

    /// Makes a chain of `shape` for `hostNames` and `addresses` (checked names: the leaf's subjectAltName) valid for
    /// `days`, and writes it into `out`, replacing files only with `replace`.
    package static func write(
        shape: StandInChain.Shape, hostNames: [String], addresses: [String], days: Int, out: OutputFolder,
        replace: Bool
    ) throws -> StandInChainReport {
        try out.prepare(files, replace: replace)
        let made = try StandInChain.make(shape: shape, hostNames: hostNames, addresses: addresses, days: days)
        try out.write(made.leafKeyPEM, to: "server.key", mode: 0o600)
        try out.write(made.chainPEM, to: "server.crt", mode: 0o644)
        try out.write(made.leafPEM, to: "leaf.crt", mode: 0o644)
        try out.write(made.intermediatePEM, to: "intermediate.crt", mode: 0o644)
        try out.write(made.rootPEM, to: "root.crt", mode: 0o644)
        return StandInChainReport(
            chain: shape.name, certificateChain: out.file("server.crt"), privateKey: out.file("server.key"),
            leaf: out.file("leaf.crt"), intermediate: out.file("intermediate.crt"), root: out.file("root.crt"),
            hostNames: hostNames, addresses: addresses, certificates: made.certificates)
    }

    private enum CodingKeys: String, CodingKey {
        case chain
        case certificateChain = "certificate_chain"
        case privateKey = "private_key"
        case leaf, intermediate, root
        case hostNames = "host_names"
        case addresses, certificates
    }
}
