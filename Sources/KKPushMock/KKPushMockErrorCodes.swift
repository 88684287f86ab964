public import KKPushCore

// The error codes only KKPushMock throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `admin-bad-request` (KKPushMock)
    public static let adminBadRequest: Self = "admin-bad-request"
    /// `admin-body-missing` (KKPushMock)
    public static let adminBodyMissing: Self = "admin-body-missing"
    /// `admin-body-too-large` (KKPushMock)
    public static let adminBodyTooLarge: Self = "admin-body-too-large"
    /// `admin-channel-unknown` (KKPushMock)
    public static let adminChannelUnknown: Self = "admin-channel-unknown"
    /// `admin-channel-environment` (KKPushMock)
    public static let adminChannelEnvironment: Self = "admin-channel-environment"
    /// `admin-clock` (KKPushMock)
    public static let adminClock: Self = "admin-clock"
    /// `admin-delivery-unknown` (KKPushMock): no delivery with that sequence in the log.
    public static let adminDeliveryUnknown: Self = "admin-delivery-unknown"
    /// `admin-device-unknown` (KKPushMock)
    public static let adminDeviceUnknown: Self = "admin-device-unknown"
    /// `admin-environment` (KKPushMock)
    public static let adminEnvironment: Self = "admin-environment"
    /// `admin-json` (KKPushMock)
    public static let adminJson: Self = "admin-json"
    /// `admin-key-file` (KKPushMock)
    public static let adminKeyFile: Self = "admin-key-file"
    /// `admin-key-file-outside` (KKPushMock)
    public static let adminKeyFileOutside: Self = "admin-key-file-outside"
    /// `admin-method` (KKPushMock)
    public static let adminMethod: Self = "admin-method"
    /// `admin-not-found` (KKPushMock)
    public static let adminNotFound: Self = "admin-not-found"
    /// `admin-origin` (KKPushMock)
    public static let adminOrigin: Self = "admin-origin"
    /// `admin-query` (KKPushMock)
    public static let adminQuery: Self = "admin-query"
    /// `admin-reason` (KKPushMock)
    public static let adminReason: Self = "admin-reason"
    /// `admin-restart` (KKPushMock)
    public static let adminRestart: Self = "admin-restart"
    /// `admin-restart-unavailable` (KKPushMock)
    public static let adminRestartUnavailable: Self = "admin-restart-unavailable"
    /// `admin-send-unavailable` (KKPushMock)
    public static let adminSendUnavailable: Self = "admin-send-unavailable"
    /// `admin-timestamp` (KKPushMock)
    public static let adminTimestamp: Self = "admin-timestamp"
    /// `admin-token` (KKPushMock)
    public static let adminToken: Self = "admin-token"
    /// `admin-topic` (KKPushMock)
    public static let adminTopic: Self = "admin-topic"
    /// `admin-unauthorized` (KKPushMock)
    public static let adminUnauthorized: Self = "admin-unauthorized"
    /// `mock-admin-token` (KKPushMock)
    public static let mockAdminToken: Self = "mock-admin-token"
    /// `mock-admin-token-required` (KKPushMock)
    public static let mockAdminTokenRequired: Self = "mock-admin-token-required"
    /// `mock-bind` (KKPushMock)
    public static let mockBind: Self = "mock-bind"
    /// `mock-host-unknown` (KKPushMock): a listener's address is neither an address nor a resolvable name.
    public static let mockHostUnknown: Self = "mock-host-unknown"
    /// `mock-certificate-missing` (KKPushMock)
    public static let mockCertificateMissing: Self = "mock-certificate-missing"
    /// `mock-config-invalid` (KKPushMock)
    public static let mockConfigInvalid: Self = "mock-config-invalid"
    /// `mock-device-token` (KKPushMock)
    public static let mockDeviceToken: Self = "mock-device-token"
    /// `mock-device-unknown` (KKPushMock)
    public static let mockDeviceUnknown: Self = "mock-device-unknown"
    /// `mock-fault-count` (KKPushMock)
    public static let mockFaultCount: Self = "mock-fault-count"
    /// `mock-fault-delay` (KKPushMock)
    public static let mockFaultDelay: Self = "mock-fault-delay"
    /// `mock-fault-reason` (KKPushMock)
    public static let mockFaultReason: Self = "mock-fault-reason"
    /// `mock-fault-skip` (KKPushMock)
    public static let mockFaultSkip: Self = "mock-fault-skip"
    /// `mock-fault-status` (KKPushMock)
    public static let mockFaultStatus: Self = "mock-fault-status"
    /// `mock-fault-streams` (KKPushMock)
    public static let mockFaultStreams: Self = "mock-fault-streams"
    /// `mock-goaway-grace` (KKPushMock)
    public static let mockGoawayGrace: Self = "mock-goaway-grace"
    /// `mock-key-environment-invalid` (KKPushMock)
    public static let mockKeyEnvironmentInvalid: Self = "mock-key-environment-invalid"
    /// `mock-key-missing` (KKPushMock)
    public static let mockKeyMissing: Self = "mock-key-missing"
    /// `mock-log-capacity` (KKPushMock)
    public static let mockLogCapacity: Self = "mock-log-capacity"
    /// `mock-max-connections` (KKPushMock)
    public static let mockMaxConnections: Self = "mock-max-connections"
    /// `mock-max-channels` (KKPushMock)
    public static let mockMaxChannels: Self = "mock-max-channels"
    /// `mock-max-streams` (KKPushMock)
    public static let mockMaxStreams: Self = "mock-max-streams"
    /// `mock-port` (KKPushMock)
    public static let mockPort: Self = "mock-port"
    /// `mock-reset-limit` (KKPushMock)
    public static let mockResetLimit: Self = "mock-reset-limit"
    /// `mock-reset-window` (KKPushMock)
    public static let mockResetWindow: Self = "mock-reset-window"
    /// `mock-restart-busy` (KKPushMock)
    public static let mockRestartBusy: Self = "mock-restart-busy"
    /// `mock-stopped` (KKPushMock)
    public static let mockStopped: Self = "mock-stopped"
    /// `mock-timeout` (KKPushMock)
    public static let mockTimeout: Self = "mock-timeout"
    /// `mock-tls` (KKPushMock)
    public static let mockTls: Self = "mock-tls"
    /// `admin-saved-push-unknown` (KKPushMock): no saved push with that name.
    public static let adminSavedPushUnknown: Self = "admin-saved-push-unknown"
    /// `admin-saved-pushes-file` (KKPushMock): the saved pushes file cannot be read or written.
    public static let adminSavedPushesFile: Self = "admin-saved-pushes-file"
    /// `admin-saved-pushes-full` (KKPushMock): the console holds its most saved pushes.
    public static let adminSavedPushesFull: Self = "admin-saved-pushes-full"
}
