import Foundation
import KKPushAuth
import KKPushCore
import KKPushTestSupport
import Testing

/// The credentials file (`ProviderCredentialSet`): loading with errors naming the entry and the field, and the
/// routing answers (which credential serves a topic in an environment, and why one cannot).
@Suite("Credentials file: loading, validation, scope routing")
struct ProviderCredentialSetTests {
    /// A file in `Certificates/`'s folder naming its two keys and the universal certificate.
    static func load(_ json: String) throws -> ProviderCredentialSet {
        try ProviderCredentialSet(json: Array(json.utf8), relativeTo: Repository.certificates.path, source: "test.json")
    }

    static let valid = """
        {"credentials": [
          {"name": "main", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8",
           "topics": ["nl.kantinekoning.app"]},
          {"name": "sandbox-only", "team_id": "KKTEAM0001", "key_id": "KKTEST0002", "key_file": "AuthKey_KKTEST0002.p8",
           "environments": ["sandbox"]},
          {"name": "cert", "certificate": "client-universal.p12", "password_env": "KK_TEST_P12",
           "environments": ["production"], "topics": ["nl.kantinekoning.app"]}
        ]}
        """

    @Test("A valid file loads: kinds, absolute paths, scopes")
    func loads() throws {
        let set = try Self.load(Self.valid)
        #expect(set.names == ["main", "sandbox-only", "cert"])
        let main = try #require(set.credential(named: "main"))
        #expect(main.teamID == "KKTEAM0001" && main.keyID == "KKTEST0001")
        #expect(main.environments.isEmpty && main.topics == ["nl.kantinekoning.app"])
        guard case .token(_, _, let path) = main.kind else {
            Issue.record("not a key: \(main.kind)")
            return
        }
        #expect(path == Repository.certificate("AuthKey_KKTEST0001.p8"))
        let cert = try #require(set.credential(named: "cert"))
        #expect(cert.teamID == nil && cert.environments == [.production])
        // The certificate's password comes from the variable it names.
        let loaded = try set.clientCertificate(for: cert, environment: ["KK_TEST_P12": "kkpush"])
        #expect(loaded.info.topics.contains("nl.kantinekoning.app"))
        #expect(throws: KKPushError.self) { try set.clientCertificate(for: cert, environment: [:]) }
        // A token cache signs with the entry's ids.
        let token = try set.tokenCache(for: main).currentToken()
        let decoded = try ProviderToken.decode(token.value)
        #expect(decoded.kid == "KKTEST0001" && decoded.iss == "KKTEAM0001")
    }

    @Test("Routing: a named credential, or the first that may serve, topic-specific entries before open ones")
    func routing() throws {
        let set = try Self.load(Self.valid)
        // The topic-specific key comes before the open one for its topic.
        #expect(
            try set.resolve(credential: nil, topic: "nl.kantinekoning.app", environment: .sandbox).get().name == "main")
        // A suffixed topic belongs to the bundle id.
        #expect(
            try set.resolve(credential: nil, topic: "nl.kantinekoning.app.voip", environment: .production).get().name
                == "main")
        #expect(
            try set.resolve(credential: nil, topic: "nl.other.app", environment: .sandbox).get().name == "sandbox-only")
        #expect(set.servers(topic: "nl.other.app", environment: .production).isEmpty)
        #expect(
            try set.resolve(credential: "sandbox-only", topic: "nl.kantinekoning.app", environment: .sandbox).get().name
                == "sandbox-only")
    }

    @Test("A scoped credential covers its bundle id with a push-type suffix, not an extension's bundle id or no topic")
    func extensionAndEmptyTopics() throws {
        let set = try Self.load(Self.valid)
        let main = try #require(set.credential(named: "main"))
        #expect(main.allows(topic: "nl.kantinekoning.app.push-type.liveactivity"))
        for topic in ["nl.kantinekoning.app.widget", "nl.kantinekoning.app.NotificationService", "", nil] {
            #expect(!main.allows(topic: topic), "\(topic ?? "nil")")
            let problem = try #require(
                set.scopeProblem(credential: "main", topic: topic, environment: .sandbox), "\(topic ?? "nil")")
            #expect(problem.kind == .topic)
            // Routing: the extension's topic goes to the entry open to any topic, never to the scoped key.
            #expect(!set.servers(topic: topic, environment: .sandbox).map(\.name).contains("main"))
        }
        #expect(
            try set.resolve(credential: nil, topic: "nl.kantinekoning.app.widget", environment: .sandbox).get().name
                == "sandbox-only")
        let widget = try #require(
            set.scopeProblem(credential: "main", topic: "nl.kantinekoning.app.widget", environment: .sandbox))
        #expect(widget.message.contains("not nl.kantinekoning.app.widget"), "\(widget.message)")
        #expect(widget.fix.contains("a bundle id of its own"), "\(widget.fix)")
        let empty = try #require(set.scopeProblem(credential: "main", topic: "", environment: .sandbox))
        #expect(empty.message.contains("the push has no topic") && !empty.message.contains("not :"), "\(empty.message)")
        // An entry open to any topic takes a push without one: that is the request's own problem (MissingTopic).
        #expect(set.credential(named: "sandbox-only")?.allows(topic: "") == true)
    }

    @Test("One key named by two entries (one key_id, one team, the same key in one or two files) loads")
    func oneKeyTwoEntries() throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-credentials")
        defer { try? FileManager.default.removeItem(at: dir) }
        let copy = dir.appendingPathComponent("copy-of-KKTEST0001.p8").path
        try FileManager.default.copyItem(atPath: Repository.certificate("AuthKey_KKTEST0001.p8"), toPath: copy)
        let set = try Self.load(
            #"{"credentials": [{"name": "prod", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8", "environments": ["production"]}, {"name": "dev", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8", "environments": ["sandbox"]}, {"name": "copy", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "\#(copy)"}]}"#
        )
        #expect(set.names == ["prod", "dev", "copy"])
    }

    @Test("Scope problems name the credential, the scope and APNs's answer")
    func scopeProblems() throws {
        let set = try Self.load(Self.valid)
        let environment = try #require(
            set.scopeProblem(credential: "sandbox-only", topic: "x.y", environment: .production))
        #expect(environment.kind == .environment && environment.apnsReason == .badEnvironmentKeyIdInToken)
        #expect(
            environment.message.contains("\"sandbox-only\"") && environment.message.contains("sandbox, not production"))
        #expect(environment.message.contains("KKTEST0002"))
        let topic = try #require(set.scopeProblem(credential: "main", topic: "nl.other.app", environment: .sandbox))
        #expect(topic.kind == .topic && topic.apnsReason == .topicDisallowed)
        #expect(topic.message.contains("nl.kantinekoning.app, not nl.other.app"))
        #expect(topic.fix.contains("\"sandbox-only\""), "the fix names the credential that may: \(topic.fix)")
        let unknown = try #require(set.scopeProblem(credential: "mian", topic: nil, environment: .sandbox))
        #expect(unknown.kind == .unknownName && unknown.message.contains("main, sandbox-only, cert"))
        guard case .failure(let none) = set.resolve(credential: nil, topic: "nl.other.app", environment: .production)
        else {
            Issue.record("a credential was found")
            return
        }
        #expect(none.kind == .noneServes && none.error.code.rawValue == "no-credential-serves")
        #expect(set.scopeProblem(credential: "main", topic: "nl.kantinekoning.app", environment: .production) == nil)
    }

    @Test(
        "Bad files are refused naming the entry and the field",
        arguments: [
            (#"{"credentials": []}"#, "`credentials` is empty"),
            (#"{"keys": []}"#, "no list `credentials`"),
            (#"{"credentials": [{"team_id": "KKTEAM0001"}]}"#, "entry 1, field `name`: missing"),
            (
                #"{"credentials": [{"name": "a", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8", "topic": []}]}"#,
                "entry 1 (\"a\"), field `topic`: unknown field (did you mean `topics`?)"
            ),
            (
                #"{"credentials": [{"name": "a", "team_id": "kkteam", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8"}]}"#,
                "field `team_id`: 'kkteam' is not 10 letters and digits"
            ),
            (
                #"{"credentials": [{"name": "a", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "nope.p8"}]}"#,
                "entry 1 (\"a\"), field `key_file`"
            ),
            (
                #"{"credentials": [{"name": "a", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "bad/p384.p8"}]}"#,
                "field `key_file`"
            ),
            (
                #"{"credentials": [{"name": "a", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8", "environments": ["staging"]}]}"#,
                "field `environments`: \"staging\" is not an environment"
            ),
            (
                #"{"credentials": [{"name": "a", "certificate": "client-universal.crt"}]}"#,
                "field `certificate_key`: missing for a PEM certificate"
            ),
            (
                #"{"credentials": [{"name": "a", "certificate": "client-universal.p12", "key_file": "AuthKey_KKTEST0001.p8"}]}"#,
                "not both"
            ),
            (
                #"{"credentials": [{"name": "a", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8"}, {"name": "a", "certificate": "client-universal.p12"}]}"#,
                "two entries are named \"a\""
            ),
            (
                #"{"credentials": [{"name": "a", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8"}, {"name": "b", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0002.p8", "environments": ["sandbox"]}]}"#,
                "entries 1 (\"a\") and 2 (\"b\") both have `key_id` KKTEST0001, but their `key_file`s hold different keys"
            ),
            (
                #"{"credentials": [{"name": "a", "team_id": "KKTEAM0001", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8"}, {"name": "c", "certificate": "client-universal.p12"}, {"name": "b", "team_id": "KKTEAM0002", "key_id": "KKTEST0001", "key_file": "AuthKey_KKTEST0001.p8"}]}"#,
                "entries 1 (\"a\") and 3 (\"b\") both have `key_id` KKTEST0001, but the teams KKTEAM0001 and KKTEAM0002"
            ),
        ])
    func badFiles(_ json: String, expected: String) throws {
        do {
            _ = try Self.load(json)
            Issue.record("loaded: \(json)")
        } catch let error as KKPushError {
            #expect(error.code == .credentialsInvalid, "\(error.code)")
            #expect(error.message.contains(expected), "\(error.message)")
            #expect(error.message.contains("test.json"))
            #expect(!error.message.contains("PRIVATE KEY"), "key material in \(error.message)")
        }
    }
}
