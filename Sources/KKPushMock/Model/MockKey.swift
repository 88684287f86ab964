public import KKPushCore

/// A provider key the mock accepts tokens from: team id, key id, the key's PEM and the
/// environments it may be used in (Apple's newer keys are limited to one) and the topics it may serve (Apple's
/// topic-specific keys).
public struct MockKey: Sendable, Hashable, Codable {
    /// The 10-character team id (`iss` of the token).
    public var teamID: String
    /// The 10-character key id (`kid` of the token).
    public var keyID: String
    /// The key as PEM: the P-256 public key, or the `.p8` private key (its public half is used).
    public var pem: String
    /// The environments the key may be used in; empty means both.
    public var environments: Set<APNsEnvironment>
    /// The bundle ids the key may serve (a topic-specific key); empty means any. A bundle id covers itself plus a
    /// documented push-type suffix too (`<bundle id>.voip`, `<bundle id>.push-type.liveactivity`, …), never another
    /// `<bundle id>.X` such as an extension's own bundle id (``TopicScope``).
    public var topics: Set<String>

    /// Creates a key entry.
    public init(
        teamID: String, keyID: String, pem: String, environments: Set<APNsEnvironment> = [], topics: Set<String> = []
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.pem = pem
        self.environments = environments
        self.topics = topics
    }

    /// Checks the PEM holds a P-256 key the mock can verify tokens with; throws the key loader's error otherwise.
    public func validate() throws {
        _ = try ProviderKeyVerifier(key: self)
    }

    /// True if the key may be used in `environment`.
    public func allows(_ environment: APNsEnvironment) -> Bool {
        environments.isEmpty || environments.contains(environment)
    }

    /// True if the key may serve `topic`: it lists no topics, or one of them covers `topic`
    /// (``TopicScope/covers(anyOf:topic:)``: the bundle id itself or with a push-type suffix; never an empty topic).
    public func allows(topic: String) -> Bool {
        topics.isEmpty || TopicScope.covers(anyOf: topics, topic: topic)
    }

    enum CodingKeys: String, CodingKey {
        case teamID = "team_id"
        case keyID = "key_id"
        case pem
        case environments
        case topics
    }

    /// Decodes the snake_case JSON form.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        teamID = try c.decode(String.self, forKey: .teamID)
        keyID = try c.decode(String.self, forKey: .keyID)
        pem = try c.decode(String.self, forKey: .pem)
        environments = try c.decodeIfPresent(Set<APNsEnvironment>.self, forKey: .environments) ?? []
        topics = try c.decodeIfPresent(Set<String>.self, forKey: .topics) ?? []
    }

    /// Encodes the snake_case JSON form.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(teamID, forKey: .teamID)
        try c.encode(keyID, forKey: .keyID)
        try c.encode(pem, forKey: .pem)
        try c.encode(environments.map(\.rawValue).sorted(), forKey: .environments)
        if !topics.isEmpty { try c.encode(topics.sorted(), forKey: .topics) }
    }
}
