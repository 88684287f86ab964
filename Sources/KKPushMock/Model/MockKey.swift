public import KKPushCore

/// A provider key the mock accepts tokens from: team id, key id, the key's PEM and the
/// environments it may be used in (Apple's newer keys are limited to one).
public struct MockKey: Sendable, Hashable, Codable {
    /// The 10-character team id (`iss` of the token).
    public var teamID: String
    /// The 10-character key id (`kid` of the token).
    public var keyID: String
    /// The key as PEM: the P-256 public key, or the `.p8` private key (its public half is used).
    public var pem: String
    /// The environments the key may be used in; empty means both.
    public var environments: Set<APNsEnvironment>

    /// Creates a key entry.
    public init(teamID: String, keyID: String, pem: String, environments: Set<APNsEnvironment> = []) {
        self.teamID = teamID
        self.keyID = keyID
        self.pem = pem
        self.environments = environments
    }

    /// Checks the PEM holds a P-256 key the mock can verify tokens with; throws the key loader's error otherwise.
    public func validate() throws {
        _ = try ProviderKeyVerifier(key: self)
    }

    /// True if the key may be used in `environment`.
    public func allows(_ environment: APNsEnvironment) -> Bool {
        environments.isEmpty || environments.contains(environment)
    }

    enum CodingKeys: String, CodingKey {
        case teamID = "team_id"
        case keyID = "key_id"
        case pem
        case environments
    }

    /// Decodes the snake_case JSON form.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        teamID = try c.decode(String.self, forKey: .teamID)
        keyID = try c.decode(String.self, forKey: .keyID)
        pem = try c.decode(String.self, forKey: .pem)
        environments = try c.decodeIfPresent(Set<APNsEnvironment>.self, forKey: .environments) ?? []
    }

    /// Encodes the snake_case JSON form.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(teamID, forKey: .teamID)
        try c.encode(keyID, forKey: .keyID)
        try c.encode(pem, forKey: .pem)
        try c.encode(environments.map(\.rawValue).sorted(), forKey: .environments)
    }
}
