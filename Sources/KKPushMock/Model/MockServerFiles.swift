import Foundation
public import KKPushCore
import KKPushSystem

/// The files a mock server is started with, named by path: its config file, its certificates (a folder, or the
/// chain and key files), the CAs it reports and checks clients against, and extra provider keys. ``apply(to:)``
/// checks every one before the server starts, so a wrong path or a file of the wrong kind is said first, naming the
/// input (an unusable input: a `KKPushError` of kind `.input`), rather than as a listener that cannot start.
///
/// Messages name each input by its API name in parentheses (`(certificateFile)`, `(keyFiles)`), as ``label`` says:
/// a caller with its own words for them (a command line's flags) gives a ``label`` that maps them.
public struct MockServerFiles: Sendable {
    /// A JSON config file (``MockServerConfiguration/apply(configFile:)``); its settings come first, the other
    /// files here override its `certificates_directory`.
    public var configFile: String?
    /// ``MockServerConfiguration/certificatesDirectory``: must be a folder, holding `server.crt` and `server.key`
    /// unless ``certificateFile`` names the chain.
    public var certificatesDirectory: String?
    /// ``MockServerConfiguration/certificateFile`` and the other PEM files: each must hold its PEM block.
    public var certificateFile: String?
    public var privateKeyFile: String?
    public var productionCertificateFile: String?
    public var productionPrivateKeyFile: String?
    public var caFile: String?
    public var clientCAFile: String?
    /// ``MockServerConfiguration/savedPushesFile`` (read when the server starts; a new path is created).
    public var savedPushesFile: String?
    /// Provider keys to accept besides the default ones, each from a file.
    public var keyFiles: [KeyFile] = []
    /// How messages name an input, given its API name (`certificateFile`); by default the name in parentheses.
    public var label: @Sendable (String) -> String = { "(\($0))" }

    /// A provider key in a file (a `.p8`, or a public key PEM) with its ids and the environments it may serve
    /// (empty: both).
    public struct KeyFile: Sendable {
        public var path: String
        public var keyID: String
        public var teamID: String
        public var environments: Set<APNsEnvironment>

        public init(path: String, keyID: String, teamID: String, environments: Set<APNsEnvironment> = []) {
            self.path = path
            self.keyID = keyID
            self.teamID = teamID
            self.environments = environments
        }
    }

    /// No files.
    public init() {}

    /// The markers of the PEM blocks a file must hold.
    static let certificateMarker = "-----BEGIN CERTIFICATE-----"
    static let privateKeyMarker = "PRIVATE KEY-----"

    /// Checks every file and folder named, reads the config file into `configuration`, then sets the files and
    /// adds the keys (each checked: the mock must be able to verify tokens with it). Throws a ``KKPushError``
    /// naming the input and its fix.
    public func apply(to configuration: inout MockServerConfiguration) throws {
        try checkCertificates()
        if let configFile { try configuration.apply(configFile: configFile) }
        if let savedPushesFile { configuration.savedPushesFile = savedPushesFile }
        if let certificatesDirectory { configuration.certificatesDirectory = certificatesDirectory }
        configuration.certificateFile = certificateFile
        configuration.privateKeyFile = privateKeyFile
        configuration.productionCertificateFile = productionCertificateFile
        configuration.productionPrivateKeyFile = productionPrivateKeyFile
        configuration.caFile = caFile
        configuration.clientCAFile = clientCAFile
        configuration.keys += try keys()
    }

    /// Checks the certificate files and the certificates folder: each exists, is readable and holds its PEM block;
    /// the folder is one and, without ``certificateFile``, holds `server.crt` and `server.key`.
    public func checkCertificates() throws {
        func pem(_ path: String?, _ name: String, what: String, marker: String, holds: String) throws {
            guard let path else { return }
            let text = try InputFile.readText(path, what: what, label: label(name), maximumSize: 4 << 20)
            guard text.contains(marker) else {
                throw KKPushError(
                    code: .mockPemInvalid, message: "The \(what) \(label(name)) \(path) holds no \(holds).",
                    fix: "Give a PEM file with a \(holds) ('\(marker)'), e.g. from the Certificates folder.")
            }
        }
        let certificate = (marker: Self.certificateMarker, holds: "PEM certificate")
        let key = (marker: Self.privateKeyMarker, holds: "PEM private key")
        for (path, name, what, kind) in [
            (certificateFile, "certificateFile", "server certificate", certificate),
            (privateKeyFile, "privateKeyFile", "server key", key),
            (productionCertificateFile, "productionCertificateFile", "production server certificate", certificate),
            (productionPrivateKeyFile, "productionPrivateKeyFile", "production server key", key),
            (caFile, "caFile", "CA certificate", certificate), (clientCAFile, "clientCAFile", "client CA", certificate),
        ] {
            try pem(path, name, what: what, marker: kind.marker, holds: kind.holds)
        }
        guard let folder = certificatesDirectory else { return }
        let named = label("certificatesDirectory")
        let fix =
            "Give the folder that holds server.crt and server.key, or name the files with \(label("certificateFile")) and \(label("privateKeyFile"))."
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else {
            throw KKPushError(
                code: .fileMissing, message: "The certificates folder \(named) \(folder) does not exist.",
                fix: "Give the folder with server.crt, server.key and ca.crt (the repository's Certificates folder).")
        }
        guard isDirectory.boolValue else {
            throw KKPushError(
                code: .mockCertificatesInvalid, message: "\(named) \(folder) is a file, not a folder.", fix: fix)
        }
        if certificateFile == nil {
            for name in ["server.crt", "server.key"] where !FileManager.default.fileExists(atPath: folder + "/" + name)
            {
                throw KKPushError(
                    code: .mockCertificatesInvalid,
                    message: "The certificates folder \(named) \(folder) has no \(name).",
                    fix: fix)
            }
        }
    }

    /// The keys of ``keyFiles``, read and checked: the mock can verify tokens with each.
    public func keys() throws -> [MockKey] {
        try keyFiles.map { file in
            let pem = try InputFile.readText(
                file.path, what: "provider key", label: label("keyFiles"), maximumSize: 1 << 20)
            let key = MockKey(teamID: file.teamID, keyID: file.keyID, pem: pem, environments: file.environments)
            do {
                try key.validate()
            } catch let error as KKPushError {
                throw KKPushError(
                    code: .mockKeyFileInvalid, message: "\(label("keyFiles")) \(file.path): \(error.message)",
                    fix: error.fix)
            }
            return key
        }
    }
}
