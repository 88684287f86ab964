public import Foundation
public import KKPushCore
import KKPushSystem

/// One named entry of a credentials file: a provider key (token authentication) or a client certificate, and the
/// environments and topics it may serve (empty: any).
public struct ProviderCredential: Sendable, Hashable {
    /// How the entry authenticates. Paths are absolute (resolved against the credentials file's folder).
    public enum Kind: Sendable, Hashable {
        /// A `.p8` provider key of `teamID`, with Apple's Key ID.
        case token(teamID: String, keyID: String, keyPath: String)
        /// A `.p12`, or a PEM certificate with its key (`keyPath`), and where its password comes from (the name of
        /// an environment variable, or a file), if it has one.
        case certificate(path: String, keyPath: String?, passwordVariable: String?, passwordPath: String?)
    }

    /// The entry's name (unique in its file).
    public var name: String
    public var kind: Kind
    /// The environments the credential may serve; empty means both.
    public var environments: Set<APNsEnvironment>
    /// The bundle ids the credential may serve; empty means any. A bundle id also covers itself plus a documented
    /// push-type suffix (`.voip`, `.complication`, `.push-type.liveactivity`, …: the same app's topics), never another
    /// `<bundle id>.X` such as an extension's own bundle id (``TopicScope``).
    public var topics: Set<String>

    public init(name: String, kind: Kind, environments: Set<APNsEnvironment> = [], topics: Set<String> = []) {
        self.name = name
        self.kind = kind
        self.environments = environments
        self.topics = topics
    }

    /// The team of a provider key; nil for a certificate (its team is the certificate's).
    public var teamID: String? {
        if case .token(let team, _, _) = kind { return team }
        return nil
    }

    /// The Key ID of a provider key; nil for a certificate.
    public var keyID: String? {
        if case .token(_, let key, _) = kind { return key }
        return nil
    }

    /// True if the credential may be used in `environment`.
    public func allows(_ environment: APNsEnvironment) -> Bool {
        environments.isEmpty || environments.contains(environment)
    }

    /// True if the credential may serve `topic`: any push when it lists no topics (a push without a topic too: that
    /// is the request's own problem, which the pre-flight names `MissingTopic`); else only a topic one of its bundle
    /// ids covers (``TopicScope/covers(anyOf:topic:)``), which a missing or empty topic never is.
    public func allows(topic: String?) -> Bool {
        if topics.isEmpty { return true }
        guard let topic else { return false }
        return TopicScope.covers(anyOf: topics, topic: topic)
    }

    /// What the entry is, without secrets: "key KKTEST0001 of team KKTEAM0001", "certificate client.p12".
    public var summary: String {
        switch kind {
        case .token(let team, let key, _): "key \(key) of team \(team)"
        case .certificate(let path, _, _, _): "certificate \((path as NSString).lastPathComponent)"
        }
    }

    /// The environments in words ("sandbox and production" when unrestricted).
    public var environmentWords: String {
        let list =
            environments.isEmpty ? APNsEnvironment.allCases : APNsEnvironment.allCases.filter(environments.contains)
        return list.map(\.rawValue).joined(separator: " and ")
    }

    /// The topics in words ("any topic" when unrestricted).
    public var topicWords: String {
        topics.isEmpty ? "any topic" : topics.sorted().joined(separator: ", ")
    }
}

/// Why a credential cannot serve a push: the credential is not in the file, or its scope leaves out the environment
/// or the topic. APNs answers the last two with `403 BadEnvironmentKeyIdInToken` and `400 TopicDisallowed`.
public struct CredentialScopeProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// No entry has the name asked for.
        case unknownName = "unknown-credential"
        /// The credential's environments leave this environment out.
        case environment = "credential-environment"
        /// The credential's topics leave this topic out.
        case topic = "credential-topic"
        /// No entry of the file may serve this topic in this environment.
        case noneServes = "no-credential-serves"
    }

    public var kind: Kind
    /// The credential the problem is about (nil for ``Kind/noneServes``).
    public var credential: String?
    public var message: String
    public var fix: String

    /// The reason APNs gives when the push is sent anyway, if any.
    public var apnsReason: APNsReason? {
        switch kind {
        case .environment: .badEnvironmentKeyIdInToken
        case .topic: .topicDisallowed
        case .unknownName, .noneServes: nil
        }
    }

    public var description: String { message }

    /// As a ``KKPushError`` (code: the kind's raw value).
    public var error: KKPushError {
        let code: KKPushError.Code =
            switch kind {
            case .unknownName: .unknownCredential
            case .environment: .credentialEnvironment
            case .topic: .credentialTopic
            case .noneServes: .noCredentialServes
            }
        return KKPushError(code: code, message: message, fix: fix)
    }
}

/// The credentials of a credentials file: several apps, keys and teams for one sender, each entry scoped to
/// environments and topics. Answers which credential serves a (topic, environment) and why one cannot.
///
/// The file is JSON: `{"credentials": [entry, …]}`, each entry `{"name", "team_id", "key_id", "key_file"}` for a
/// provider key or `{"name", "certificate", "certificate_key"?, "password_env"?, "password_file"?}` for a client
/// certificate, with optional `"environments"` (`sandbox`, `production`) and `"topics"` (bundle ids); paths are
/// relative to the file. Loading checks every entry (and that each key file holds a P-256 key) and names the entry
/// and the field of the first problem. Key material is never put in a message.
public struct ProviderCredentialSet: Sendable {
    /// Where the file was read from (for messages).
    public let source: String
    /// The entries, in file order.
    public let credentials: [ProviderCredential]

    /// The names, in file order.
    public var names: [String] { credentials.map(\.name) }

    /// Makes a set from entries already built (names must be unique).
    public init(credentials: [ProviderCredential], source: String = "credentials") throws {
        self.source = source
        var seen = Set<String>()
        for c in credentials where !seen.insert(c.name).inserted {
            throw Self.invalid(source, "two entries are named \"\(c.name)\"", fix: "Give each entry its own name.")
        }
        try Self.checkKeyIDs(credentials, source: source)
        self.credentials = credentials
    }

    /// A Key ID names one key of one team (it is the token's `kid`, which APNs looks the key up by): two provider-key
    /// entries with one `key_id` must name the same team and a file holding the same key (two copies of one `.p8`
    /// are fine). Otherwise one of them is wrong, and which key signs a token of that `kid` would depend on the
    /// entry a push is routed to, so the file is refused naming both entries.
    private static func checkKeyIDs(_ credentials: [ProviderCredential], source: String) throws {
        var first: [String: (index: Int, team: String, path: String)] = [:]
        for (index, c) in credentials.enumerated() {
            guard case .token(let team, let keyID, let path) = c.kind else { continue }
            guard let earlier = first[keyID] else {
                first[keyID] = (index, team, path)
                continue
            }
            let both =
                "entries \(earlier.index + 1) (\"\(credentials[earlier.index].name)\") and \(index + 1) (\"\(c.name)\") both have `key_id` \(keyID)"
            if earlier.team != team {
                throw invalid(
                    source, "\(both), but the teams \(earlier.team) and \(team)",
                    fix:
                        "A key belongs to one team: correct the `team_id` or the `key_id` of one entry (the Key ID is the 10 characters in AuthKey_<KEYID>.p8)."
                )
            }
            if earlier.path != path, try !sameKey(earlier.path, path) {
                throw invalid(
                    source, "\(both), but their `key_file`s hold different keys (\(earlier.path), \(path))",
                    fix:
                        "A Key ID names one key: give both entries the key file of \(keyID), or give each entry the Key ID of the key its file holds (the 10 characters in AuthKey_<KEYID>.p8)."
                )
            }
        }
    }

    /// True if the two key files hold the same private key (compared by their public keys).
    private static func sameKey(_ a: String, _ b: String) throws -> Bool {
        try ES256PrivateKey(contentsOfFile: a, label: "key_file").publicKey.subjectPublicKeyInfo
            == ES256PrivateKey(contentsOfFile: b, label: "key_file").publicKey.subjectPublicKeyInfo
    }

    /// Reads and checks the credentials file at `path`.
    public static func load(path: String) throws -> ProviderCredentialSet {
        let bytes = try InputFile.read(path, what: "credentials file", maximumSize: 4 << 20)
        let folder = (path as NSString).deletingLastPathComponent
        return try ProviderCredentialSet(json: bytes, relativeTo: folder.isEmpty ? "." : folder, source: path)
    }

    /// The known keys of the file and of one entry.
    static let entryKeys: Set<String> = [
        "name", "team_id", "key_id", "key_file", "certificate", "certificate_key", "password_env", "password_file",
        "environments", "topics",
    ]

    /// Parses and checks the file's bytes; relative paths are taken from `folder`.
    public init(json bytes: [UInt8], relativeTo folder: String, source: String = "credentials") throws {
        let root: JSONValue
        do {
            root = try JSONInput.parse(
                bytes, what: "The credentials file '\(source)'", code: .credentialsInvalid,
                fix: #"Write it as {"credentials": [{"name": …, "team_id": …, "key_id": …, "key_file": …}]}."#)
        }
        guard let object = root.objectValue, let list = object["credentials"]?.arrayValue else {
            throw Self.invalid(
                source, "it has no list `credentials`",
                fix: #"Write it as {"credentials": [{"name": …, "team_id": …, "key_id": …, "key_file": …}, …]}."#)
        }
        if let extra = object.keys.first(where: { $0 != "credentials" }) {
            throw Self.invalid(source, "unknown field `\(extra)` at the top", fix: "The file holds only `credentials`.")
        }
        if list.isEmpty { throw Self.invalid(source, "`credentials` is empty", fix: "Add at least one entry.") }
        var entries: [ProviderCredential] = []
        for (index, value) in list.enumerated() {
            entries.append(try Self.entry(value, index: index, folder: folder, source: source))
        }
        try self.init(credentials: entries, source: source)
    }

    private static func entry(_ value: JSONValue, index: Int, folder: String, source: String) throws
        -> ProviderCredential
    {
        var label = "entry \(index + 1)"
        func fail(_ field: String, _ problem: String, _ fix: String) -> KKPushError {
            invalid(source, "\(label), field `\(field)`: \(problem)", fix: fix)
        }
        guard let members = value.objectValue else {
            throw invalid(source, "\(label) is not a JSON object", fix: "Write each entry as an object.")
        }
        func string(_ field: String, required: Bool) throws -> String? {
            guard let v = members[field] else {
                if required { throw fail(field, "missing", "Add `\(field)` to the entry.") }
                return nil
            }
            guard let s = v.stringValue, !s.trimmingWhitespace().isEmpty else {
                throw fail(field, "must be a non-empty string, not \(v.description)", "Give `\(field)` as a string.")
            }
            return s
        }
        func path(_ field: String, required: Bool) throws -> String? {
            guard let p = try string(field, required: required) else { return nil }
            return p.hasPrefix("/") ? p : (folder as NSString).appendingPathComponent(p)
        }
        guard let name = try string("name", required: true) else { fatalError("unreachable") }
        label = "entry \(index + 1) (\"\(name)\")"
        if let unknown = members.keys.sorted().first(where: { !entryKeys.contains($0) }) {
            let near = JSONInput.nearest(unknown, among: entryKeys.sorted()).map { " (did you mean `\($0)`?)" } ?? ""
            throw fail(unknown, "unknown field\(near)", "The fields are \(entryKeys.sorted().joined(separator: ", ")).")
        }
        var environments = Set<APNsEnvironment>()
        if let v = members["environments"] {
            guard let items = v.arrayValue else {
                throw fail("environments", "must be a list", #"Write ["sandbox"], ["production"] or [] (both)."#)
            }
            for item in items {
                guard let text = item.stringValue, let e = APNsEnvironment(lenient: text) else {
                    throw fail(
                        "environments", "\(item.description) is not an environment",
                        "The environments are sandbox and production.")
                }
                environments.insert(e)
            }
        }
        var topics = Set<String>()
        if let v = members["topics"] {
            guard let items = v.arrayValue else {
                throw fail("topics", "must be a list of bundle ids", #"Write ["com.example.app"] or [] (any)."#)
            }
            for item in items {
                guard let text = item.stringValue, !text.trimmingWhitespace().isEmpty, !text.contains(" ") else {
                    throw fail("topics", "\(item.description) is not a bundle id", "Give bundle ids as strings.")
                }
                topics.insert(text)
            }
        }
        let kind: ProviderCredential.Kind
        let isKey = members["key_file"] != nil || members["key_id"] != nil || members["team_id"] != nil
        let isCertificate = members["certificate"] != nil
        if isKey && isCertificate {
            throw fail(
                "certificate", "an entry is a provider key or a certificate, not both",
                "Split it into two entries.")
        } else if isKey {
            let team = try string("team_id", required: true)!
            let key = try string("key_id", required: true)!
            for (field, id) in [("team_id", team), ("key_id", key)] where !isAppleID(id) {
                throw fail(field, "'\(id)' is not 10 letters and digits", "Copy the id from Apple's developer site.")
            }
            let keyPath = try path("key_file", required: true)!
            do {
                _ = try ES256PrivateKey(contentsOfFile: keyPath, label: "key_file")
            } catch let error as KKPushError {
                throw KKPushError(
                    code: .credentialsInvalid,
                    message: "The credentials file '\(source)', \(label), field `key_file`: \(error.message)",
                    fix: error.fix)
            }
            kind = .token(teamID: team, keyID: key, keyPath: keyPath)
        } else if isCertificate {
            let certificate = try path("certificate", required: true)!
            let keyPath = try path("certificate_key", required: false)
            for (field, file) in [("certificate", certificate), ("certificate_key", keyPath)] {
                guard let file else { continue }
                do {
                    try InputFile.checkFile(file, what: field.replacingOccurrences(of: "_", with: " "), label: nil)
                } catch let error as KKPushError {
                    throw fail(field, error.message, error.fix ?? "Check the path (relative to the file).")
                }
            }
            let lower = certificate.lowercased()
            if keyPath == nil, !(lower.hasSuffix(".p12") || lower.hasSuffix(".pfx")) {
                throw fail(
                    "certificate_key", "missing for a PEM certificate",
                    "Give the key's file in `certificate_key`, or use a .p12.")
            }
            let variable = try string("password_env", required: false)
            let passwordPath = try path("password_file", required: false)
            if variable != nil, passwordPath != nil {
                throw fail("password_file", "give `password_env` or `password_file`, not both", "Keep one.")
            }
            kind = .certificate(
                path: certificate, keyPath: keyPath, passwordVariable: variable, passwordPath: passwordPath)
        } else {
            throw fail(
                "key_file", "the entry has neither a provider key nor a certificate",
                "Give `team_id`, `key_id` and `key_file`, or `certificate`.")
        }
        return ProviderCredential(name: name, kind: kind, environments: environments, topics: topics)
    }

    private static func isAppleID(_ id: String) -> Bool {
        id.utf8.count == 10 && id.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) }
    }

    static func invalid(_ source: String, _ problem: String, fix: String) -> KKPushError {
        KKPushError(code: .credentialsInvalid, message: "The credentials file '\(source)': \(problem).", fix: fix)
    }

    // MARK: Routing

    /// The entry named `name`.
    public func credential(named name: String) -> ProviderCredential? {
        credentials.first { $0.name == name }
    }

    /// Why the credential named `name` cannot serve `topic` in `environment`; nil if it can.
    public func scopeProblem(credential name: String, topic: String?, environment: APNsEnvironment)
        -> CredentialScopeProblem?
    {
        guard let credential = credential(named: name) else {
            return CredentialScopeProblem(
                kind: .unknownName, credential: name,
                message:
                    "No credential is named \"\(name)\" in '\(source)'; its names are \(names.joined(separator: ", ")).",
                fix: "Name one of the file's credentials, or add an entry named \"\(name)\".")
        }
        if !credential.allows(environment) {
            return CredentialScopeProblem(
                kind: .environment, credential: name,
                message:
                    "Credential \"\(name)\" (\(credential.summary)) is scoped to \(credential.environmentWords), not \(environment.rawValue): APNs answers 403 BadEnvironmentKeyIdInToken.",
                fix:
                    "Send with a credential allowed in \(environment.rawValue) (\(nameList(servers(topic: topic, environment: environment)))), or make a key for \(environment.rawValue) on Apple's developer site and add it to the file."
            )
        }
        if !credential.allows(topic: topic) {
            guard let topic, !topic.isEmpty else {
                return CredentialScopeProblem(
                    kind: .topic, credential: name,
                    message:
                        "Credential \"\(name)\" (\(credential.summary)) is scoped to \(credential.topicWords), and the push has no topic: a scope of bundle ids never covers an empty topic.",
                    fix:
                        "Give the push its apns-topic (the app's bundle id, plus the push type's suffix for other types than alert and background)."
                )
            }
            return CredentialScopeProblem(
                kind: .topic, credential: name,
                message:
                    "Credential \"\(name)\" (\(credential.summary)) is scoped to \(credential.topicWords), not \(topic): APNs refuses the push (TopicDisallowed).",
                fix:
                    "Send with a credential for \(topic) (\(nameList(servers(topic: topic, environment: environment)))), or add the bundle id to the key's topics on Apple's developer site and to `topics` in the file\(Self.extensionHint(topic, scope: credential.topics))."
            )
        }
        return nil
    }

    /// The entries that may serve `topic` in `environment`: those naming the topic first, then those open to any
    /// topic, each group in file order.
    public func servers(topic: String?, environment: APNsEnvironment) -> [ProviderCredential] {
        let fitting = credentials.filter { $0.allows(environment) && $0.allows(topic: topic) }
        let specific = fitting.filter { !$0.topics.isEmpty }
        return specific + fitting.filter { $0.topics.isEmpty }
    }

    /// The credential to send `topic` in `environment` with: the one named (if it may serve it), else the first of
    /// ``servers(topic:environment:)``.
    public func resolve(credential name: String?, topic: String?, environment: APNsEnvironment)
        -> Result<ProviderCredential, CredentialScopeProblem>
    {
        if let name {
            if let problem = scopeProblem(credential: name, topic: topic, environment: environment) {
                return .failure(problem)
            }
            return .success(credential(named: name)!)
        }
        if let first = servers(topic: topic, environment: environment).first { return .success(first) }
        return .failure(
            CredentialScopeProblem(
                kind: .noneServes, credential: nil,
                message:
                    "No credential in '\(source)' may serve \(topic.flatMap { $0.isEmpty ? nil : "topic \($0)" } ?? "pushes without a topic") in \(environment.rawValue).",
                fix:
                    "Add an entry whose `environments` and `topics` cover it (empty lists mean any), or send to another topic or environment."
            ))
    }

    /// When `topic` is `<a bundle id of scope>.X` with X no push-type suffix: words saying it is another app's.
    private static func extensionHint(_ topic: String, scope: Set<String>) -> String {
        guard let parent = scope.sorted().first(where: { topic.hasPrefix($0 + ".") }) else { return "" }
        return
            " (\(topic) is not \(parent) plus a push type's suffix, such as .voip or .push-type.liveactivity, but a bundle id of its own, an extension's, which APNs treats as another app)"
    }

    private func nameList(_ list: [ProviderCredential]) -> String {
        list.isEmpty ? "none in the file" : list.map { "\"\($0.name)\"" }.joined(separator: ", ")
    }

    // MARK: Loading the secrets

    /// A token cache signing with the entry's key (it must be a provider key).
    public func tokenCache(for credential: ProviderCredential, clock: any WallClock = SystemWallClock()) throws
        -> ProviderTokenCache
    {
        guard case .token(let team, let key, let path) = credential.kind else {
            throw KKPushError(
                code: .credentialNotAKey,
                message: "Credential \"\(credential.name)\" is a certificate, not a provider key.",
                fix: "Name a provider-key entry.")
        }
        let signing = try ES256PrivateKey(contentsOfFile: path, label: "key_file")
        return ProviderTokenCache(key: signing, keyID: key, teamID: team, clock: clock)
    }

    /// The entry's client certificate and key (it must be a certificate); the password comes from the variable
    /// named in `password_env` (looked up in `environment`) or from `password_file`.
    public func clientCertificate(
        for credential: ProviderCredential, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> ClientCredential {
        guard case .certificate(let path, let keyPath, let variable, let passwordPath) = credential.kind else {
            throw KKPushError(
                code: .credentialNotACertificate,
                message: "Credential \"\(credential.name)\" is a provider key, not a certificate.",
                fix: "Name a certificate entry.")
        }
        var password: String? = nil
        if let variable {
            guard let value = environment[variable] else {
                throw KKPushError(
                    code: .credentialPasswordMissing,
                    message:
                        "Credential \"\(credential.name)\": the variable \(variable) (its `password_env`) is not set.",
                    fix: "Set \(variable) to the certificate's password.")
            }
            password = value
        } else if let passwordPath {
            password = try InputFile.readText(passwordPath, what: "password file").trimmingCharacters(in: .newlines)
        }
        let hint = "`password_env` or `password_file` of credential \"\(credential.name)\""
        if let keyPath {
            return try ClientCredential.loadPEM(
                certificatePath: path, keyPath: keyPath, password: password, passwordHint: hint)
        }
        return try ClientCredential.loadPKCS12(path: path, password: password, passwordHint: hint)
    }
}
