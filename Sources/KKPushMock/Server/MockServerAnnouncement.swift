package import KKPushCore

/// Where a started mock listens and what it accepts: what `mock serve` announces (its banner, or one JSON line a
/// script reads for the ports). The admin token is shown as a hint only (``Redaction/hint(_:keep:)``).
package struct MockServerAnnouncement: Encodable, Sendable {
    /// The address the listeners are bound to, as given.
    package var listenHost: String
    package var sandbox: APNsEndpoint
    package var production: APNsEndpoint
    package var sandboxChannels: APNsEndpoint
    package var productionChannels: APNsEndpoint
    /// The admin API's base URL; nil without one.
    package var adminURL: String?
    /// The admin token's first characters and length; nil without one.
    package var adminTokenHint: String?
    /// The CA clients trust; nil when none was found.
    package var caFile: String?
    package var strictDeviceTokens: Bool
    package var keys: [MockKey]
    package var deliveryLogCapacity: Int
    package var rejectionLogCapacity: Int

    /// What `server`, started with `configuration` on `listenHost`, announces.
    package init(server: MockAPNsServer, configuration: MockServerConfiguration, listenHost: String) {
        self.listenHost = listenHost
        sandbox = server.sandboxEndpoint
        production = server.productionEndpoint
        sandboxChannels = server.sandboxChannelEndpoint
        productionChannels = server.productionChannelEndpoint
        adminURL = server.adminURL
        adminTokenHint = configuration.adminToken.map { Redaction.hint($0) }
        caFile = server.caFile
        strictDeviceTokens = server.strictDeviceTokens
        keys = server.keys
        deliveryLogCapacity = configuration.deliveryLogCapacity
        rejectionLogCapacity = configuration.rejectionLogCapacity
    }

    /// The web console's URL: the admin API's root page.
    package var consoleURL: String? { adminURL.map { $0 + "/" } }

    enum CodingKeys: String, CodingKey {
        case keys, strict
        case adminToken = "admin_token"
        case sandboxURL = "sandbox_url"
        case sandboxPort = "sandbox_port"
        case productionURL = "production_url"
        case productionPort = "production_port"
        case sandboxChannelsURL = "sandbox_channels_url"
        case productionChannelsURL = "production_channels_url"
        case adminURL = "admin_url"
        case consoleURL = "console_url"
        case listenHost = "listen_host"
        case caFile = "ca_file"
        case deliveryLogCapacity = "delivery_log_capacity"
        case rejectionLogCapacity = "rejection_log_capacity"
    }

    /// One key as announced: its ids, and its environments and topics sorted (empty: every one).
    private struct KeyFields: Encodable {
        var key: MockKey

        enum CodingKeys: String, CodingKey {
            case environments, topics
            case keyID = "key_id"
            case teamID = "team_id"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(key.keyID, forKey: .keyID)
            try c.encode(key.teamID, forKey: .teamID)
            try c.encode(key.environments.map(\.rawValue).sorted(), forKey: .environments)
            try c.encode(key.topics.sorted(), forKey: .topics)
        }
    }

    /// Every field; the admin token, the admin and console URLs and the CA file `null` when there is none.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(adminTokenHint, forKey: .adminToken)
        try c.encode(sandbox.baseURL, forKey: .sandboxURL)
        try c.encode(sandbox.port, forKey: .sandboxPort)
        try c.encode(production.baseURL, forKey: .productionURL)
        try c.encode(production.port, forKey: .productionPort)
        try c.encode(sandboxChannels.baseURL, forKey: .sandboxChannelsURL)
        try c.encode(productionChannels.baseURL, forKey: .productionChannelsURL)
        try c.encode(adminURL, forKey: .adminURL)
        try c.encode(consoleURL, forKey: .consoleURL)
        try c.encode(listenHost, forKey: .listenHost)
        try c.encode(caFile, forKey: .caFile)
        try c.encode(strictDeviceTokens, forKey: .strict)
        try c.encode(keys.map(KeyFields.init(key:)), forKey: .keys)
        try c.encode(deliveryLogCapacity, forKey: .deliveryLogCapacity)
        try c.encode(rejectionLogCapacity, forKey: .rejectionLogCapacity)
    }
}
