// The error codes kkpush throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Generated from the throw sites; a code is a stable string, the member is how Swift code names it.

extension KKPushError.Code {
    /// `admin-bad-request` (KKPushMock)
    public static let adminBadRequest: Self = "admin-bad-request"
    /// `admin-body-missing` (KKPushMock)
    public static let adminBodyMissing: Self = "admin-body-missing"
    /// `admin-body-too-large` (KKPushMock)
    public static let adminBodyTooLarge: Self = "admin-body-too-large"
    /// `admin-clock` (KKPushMock)
    public static let adminClock: Self = "admin-clock"
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
    /// `admin-token-invalid-characters` (KKPushCLI)
    public static let adminTokenInvalidCharacters: Self = "admin-token-invalid-characters"
    /// `admin-token-short` (KKPushCLI)
    public static let adminTokenShort: Self = "admin-token-short"
    /// `admin-topic` (KKPushMock)
    public static let adminTopic: Self = "admin-topic"
    /// `admin-unauthorized` (KKPushMock)
    public static let adminUnauthorized: Self = "admin-unauthorized"
    /// `backend-bind-failed` (KKPushBackend)
    public static let backendBindFailed: Self = "backend-bind-failed"
    /// `backend-db-empty` (KKPushCLI)
    public static let backendDbEmpty: Self = "backend-db-empty"
    /// `backend-not-loopback` (KKPushBackend)
    public static let backendNotLoopback: Self = "backend-not-loopback"
    /// `backend-port` (KKPushBackend)
    public static let backendPort: Self = "backend-port"
    /// `backend-secret-short` (KKPushCLI)
    public static let backendSecretShort: Self = "backend-secret-short"
    /// `batch-input-empty` (KKPushCLI)
    public static let batchInputEmpty: Self = "batch-input-empty"
    /// `batch-input-read-error` (KKPushCLI)
    public static let batchInputReadError: Self = "batch-input-read-error"
    /// `batch-input-unreadable` (KKPushCLI)
    public static let batchInputUnreadable: Self = "batch-input-unreadable"
    /// `batch-metrics-file-clash` (KKPushCLI)
    public static let batchMetricsFileClash: Self = "batch-metrics-file-clash"
    /// `batch-metrics-file-stdout` (KKPushCLI)
    public static let batchMetricsFileStdout: Self = "batch-metrics-file-stdout"
    /// `batch-metrics-file-unwritable` (KKPushCLI)
    public static let batchMetricsFileUnwritable: Self = "batch-metrics-file-unwritable"
    /// `batch-output-is-input` (KKPushCLI)
    public static let batchOutputIsInput: Self = "batch-output-is-input"
    /// `batch-output-unwritable` (KKPushCLI)
    public static let batchOutputUnwritable: Self = "batch-output-unwritable"
    /// `batch-preflight` (KKPushCLI)
    public static let batchPreflight: Self = "batch-preflight"
    /// `batch-resume-inconsistent` (KKPushCLI)
    public static let batchResumeInconsistent: Self = "batch-resume-inconsistent"
    /// `batch-resume-input-changed` (KKPushCLI)
    public static let batchResumeInputChanged: Self = "batch-resume-input-changed"
    /// `batch-resume-malformed` (KKPushCLI)
    public static let batchResumeMalformed: Self = "batch-resume-malformed"
    /// `batch-resume-truncated` (KKPushCLI)
    public static let batchResumeTruncated: Self = "batch-resume-truncated"
    /// `batch-stdin-unreadable` (KKPushCLI)
    public static let batchStdinUnreadable: Self = "batch-stdin-unreadable"
    /// `bench-faults-certificates` (KKPushCLI)
    public static let benchFaultsCertificates: Self = "bench-faults-certificates"
    /// `bench-faults-key` (KKPushCLI)
    public static let benchFaultsKey: Self = "bench-faults-key"
    /// `bench-faults-spawn` (KKPushCLI)
    public static let benchFaultsSpawn: Self = "bench-faults-spawn"
    /// `bench-faults-temp` (KKPushCLI)
    public static let benchFaultsTemp: Self = "bench-faults-temp"
    /// `bench-missing-setting` (KKPushCLI)
    public static let benchMissingSetting: Self = "bench-missing-setting"
    /// `bench-number-range` (KKPushCLI)
    public static let benchNumberRange: Self = "bench-number-range"
    /// `bench-url` (KKPushCLI)
    public static let benchUrl: Self = "bench-url"
    /// `cert-issue-ca-key-invalid` (KKPushAuth)
    public static let certIssueCaKeyInvalid: Self = "cert-issue-ca-key-invalid"
    /// `cert-issue-ca-key-unreadable` (KKPushAuth)
    public static let certIssueCaKeyUnreadable: Self = "cert-issue-ca-key-unreadable"
    /// `cert-issue-days-range` (KKPushAuth)
    public static let certIssueDaysRange: Self = "cert-issue-days-range"
    /// `cert-issue-failed` (KKPushAuth)
    public static let certIssueFailed: Self = "cert-issue-failed"
    /// `cert-issue-host` (KKPushAuth)
    public static let certIssueHost: Self = "cert-issue-host"
    /// `cert-issue-ip` (KKPushAuth)
    public static let certIssueIp: Self = "cert-issue-ip"
    /// `cert-issue-no-names` (KKPushAuth)
    public static let certIssueNoNames: Self = "cert-issue-no-names"
    /// `cert-key-with-p12` (KKPushCLI)
    public static let certKeyWithP12: Self = "cert-key-with-p12"
    /// `certificate-encode` (KKPushAuth)
    public static let certificateEncode: Self = "certificate-encode"
    /// `certificate-key-mismatch` (KKPushAuth)
    public static let certificateKeyMismatch: Self = "certificate-key-mismatch"
    /// `certificate-missing` (KKPushAuth)
    public static let certificateMissing: Self = "certificate-missing"
    /// `certificate-unreadable` (KKPushAuth)
    public static let certificateUnreadable: Self = "certificate-unreadable"
    /// `client-max-connections` (KKPushClient)
    public static let clientMaxConnections: Self = "client-max-connections"
    /// `client-max-in-flight` (KKPushClient)
    public static let clientMaxInFlight: Self = "client-max-in-flight"
    /// `client-proxy-url` (KKPushClient)
    public static let clientProxyUrl: Self = "client-proxy-url"
    /// `client-timeout` (KKPushClient)
    public static let clientTimeout: Self = "client-timeout"
    /// `credential-unreadable` (KKPushCLI)
    public static let credentialUnreadable: Self = "credential-unreadable"
    /// `curl-global-init` (KKPushClient)
    public static let curlGlobalInit: Self = "curl-global-init"
    /// `curl-init` (KKPushClient)
    public static let curlInit: Self = "curl-init"
    /// `curl-multi-setopt` (KKPushClient)
    public static let curlMultiSetopt: Self = "curl-multi-setopt"
    /// `curl-out-of-memory` (KKPushClient)
    public static let curlOutOfMemory: Self = "curl-out-of-memory"
    /// `curl-setopt` (KKPushClient)
    public static let curlSetopt: Self = "curl-setopt"
    /// `custom-key-taken` (KKPushCLI)
    public static let customKeyTaken: Self = "custom-key-taken"
    /// `diagnose-no-input` (KKPushCLI)
    public static let diagnoseNoInput: Self = "diagnose-no-input"
    /// `diagnose-timeout-range` (KKPushCLI)
    public static let diagnoseTimeoutRange: Self = "diagnose-timeout-range"
    /// `diensten-unreadable` (KKPushSimulator)
    public static let dienstenUnreadable: Self = "diensten-unreadable"
    /// `endpoint-host` (KKPushCore)
    public static let endpointHost: Self = "endpoint-host"
    /// `endpoint-port` (KKPushCore)
    public static let endpointPort: Self = "endpoint-port"
    /// `endpoint-scheme` (KKPushCore)
    public static let endpointScheme: Self = "endpoint-scheme"
    /// `enrollment-exists` (KKPushCLI)
    public static let enrollmentExists: Self = "enrollment-exists"
    /// `enrollment-invalid` (KKPushBackend)
    public static let enrollmentInvalid: Self = "enrollment-invalid"
    /// `enrollment-malformed` (KKPushCLI, KantineKoning)
    public static let enrollmentMalformed: Self = "enrollment-malformed"
    /// `enrollment-not-found` (KKPushBackend, KKPushCLI)
    public static let enrollmentNotFound: Self = "enrollment-not-found"
    /// `enrollments-json-invalid` (KKPushBackend)
    public static let enrollmentsJsonInvalid: Self = "enrollments-json-invalid"
    /// `file-empty` (KKPushCLI, KKPushCore, KantineKoning)
    public static let fileEmpty: Self = "file-empty"
    /// `file-is-directory` (KKPushCLI, KKPushCore, KantineKoning)
    public static let fileIsDirectory: Self = "file-is-directory"
    /// `file-missing` (KKPushCLI, KKPushCore)
    public static let fileMissing: Self = "file-missing"
    /// `file-not-folder` (KKPushCLI)
    public static let fileNotFolder: Self = "file-not-folder"
    /// `file-not-pem` (KKPushCLI)
    public static let fileNotPem: Self = "file-not-pem"
    /// `file-not-sqlite` (KKPushCLI)
    public static let fileNotSqlite: Self = "file-not-sqlite"
    /// `file-not-text` (KKPushCore)
    public static let fileNotText: Self = "file-not-text"
    /// `file-not-writable` (KKPushCLI)
    public static let fileNotWritable: Self = "file-not-writable"
    /// `file-path-empty` (KKPushCLI, KKPushCore, KantineKoning)
    public static let filePathEmpty: Self = "file-path-empty"
    /// `file-too-large` (KKPushCore)
    public static let fileTooLarge: Self = "file-too-large"
    /// `file-unreadable` (KKPushCLI, KKPushCore, KantineKoning)
    public static let fileUnreadable: Self = "file-unreadable"
    /// `hmac-failed` (KKPushAuth)
    public static let hmacFailed: Self = "hmac-failed"
    /// `hmac-key-empty` (KKPushAuth)
    public static let hmacKeyEmpty: Self = "hmac-key-empty"
    /// `jwt-bad-signature` (KKPushBackend)
    public static let jwtBadSignature: Self = "jwt-bad-signature"
    /// `jwt-expired` (KKPushBackend)
    public static let jwtExpired: Self = "jwt-expired"
    /// `jwt-iat-out-of-range` (KKPushAuth)
    public static let jwtIatOutOfRange: Self = "jwt-iat-out-of-range"
    /// `jwt-lifetime` (KKPushBackend)
    public static let jwtLifetime: Self = "jwt-lifetime"
    /// `jwt-malformed` (KKPushBackend)
    public static let jwtMalformed: Self = "jwt-malformed"
    /// `jwt-not-yet-valid` (KKPushBackend)
    public static let jwtNotYetValid: Self = "jwt-not-yet-valid"
    /// `jwt-secret-empty` (KKPushBackend)
    public static let jwtSecretEmpty: Self = "jwt-secret-empty"
    /// `jwt-secret-short` (KKPushBackend)
    public static let jwtSecretShort: Self = "jwt-secret-short"
    /// `jwt-unsupported-alg` (KKPushBackend)
    public static let jwtUnsupportedAlg: Self = "jwt-unsupported-alg"
    /// `jwt-wrong-tenant` (KKPushBackend)
    public static let jwtWrongTenant: Self = "jwt-wrong-tenant"
    /// `key-empty` (KKPushAuth)
    public static let keyEmpty: Self = "key-empty"
    /// `key-encode` (KKPushAuth)
    public static let keyEncode: Self = "key-encode"
    /// `key-encrypted` (KKPushAuth)
    public static let keyEncrypted: Self = "key-encrypted"
    /// `key-environment-without-key` (KKPushCLI)
    public static let keyEnvironmentWithoutKey: Self = "key-environment-without-key"
    /// `key-generate` (KKPushAuth)
    public static let keyGenerate: Self = "key-generate"
    /// `key-incomplete` (KKPushCLI)
    public static let keyIncomplete: Self = "key-incomplete"
    /// `key-inconsistent` (KKPushAuth)
    public static let keyInconsistent: Self = "key-inconsistent"
    /// `key-is-certificate` (KKPushAuth)
    public static let keyIsCertificate: Self = "key-is-certificate"
    /// `key-is-public` (KKPushAuth)
    public static let keyIsPublic: Self = "key-is-public"
    /// `key-multiple` (KKPushAuth)
    public static let keyMultiple: Self = "key-multiple"
    /// `key-not-ec` (KKPushAuth)
    public static let keyNotEc: Self = "key-not-ec"
    /// `key-not-p256` (KKPushAuth)
    public static let keyNotP256: Self = "key-not-p256"
    /// `key-unreadable` (KKPushAuth)
    public static let keyUnreadable: Self = "key-unreadable"
    /// `kk-bad-cta-token` (KantineKoning)
    public static let kkBadCtaToken: Self = "kk-bad-cta-token"
    /// `kk-bad-dienst-id` (KantineKoning)
    public static let kkBadDienstId: Self = "kk-bad-dienst-id"
    /// `kk-bad-tenant` (KantineKoning)
    public static let kkBadTenant: Self = "kk-bad-tenant"
    /// `libcurl-no-http2` (KKPushClient)
    public static let libcurlNoHttp2: Self = "libcurl-no-http2"
    /// `libcurl-no-tls` (KKPushClient)
    public static let libcurlNoTls: Self = "libcurl-no-tls"
    /// `link-empty` (KantineKoning)
    public static let linkEmpty: Self = "link-empty"
    /// `link-malformed` (KantineKoning)
    public static let linkMalformed: Self = "link-malformed"
    /// `link-missing-parameter` (KantineKoning)
    public static let linkMissingParameter: Self = "link-missing-parameter"
    /// `link-nested-too-deep` (KantineKoning)
    public static let linkNestedTooDeep: Self = "link-nested-too-deep"
    /// `link-not-https` (KantineKoning)
    public static let linkNotHttps: Self = "link-not-https"
    /// `link-unknown` (KantineKoning)
    public static let linkUnknown: Self = "link-unknown"
    /// `link-unknown-scheme` (KantineKoning)
    public static let linkUnknownScheme: Self = "link-unknown-scheme"
    /// `link-wrong-host` (KantineKoning)
    public static let linkWrongHost: Self = "link-wrong-host"
    /// `migrate-mapped-table` (KKPushCLI)
    public static let migrateMappedTable: Self = "migrate-mapped-table"
    /// `mock-admin-token` (KKPushMock)
    public static let mockAdminToken: Self = "mock-admin-token"
    /// `mock-admin-token-required` (KKPushMock)
    public static let mockAdminTokenRequired: Self = "mock-admin-token-required"
    /// `mock-bind` (KKPushMock)
    public static let mockBind: Self = "mock-bind"
    /// `mock-certificate-missing` (KKPushMock)
    public static let mockCertificateMissing: Self = "mock-certificate-missing"
    /// `mock-certificates-invalid` (KKPushCLI)
    public static let mockCertificatesInvalid: Self = "mock-certificates-invalid"
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
    /// `mock-key-file-invalid` (KKPushCLI)
    public static let mockKeyFileInvalid: Self = "mock-key-file-invalid"
    /// `mock-key-missing` (KKPushMock)
    public static let mockKeyMissing: Self = "mock-key-missing"
    /// `mock-log-capacity` (KKPushMock)
    public static let mockLogCapacity: Self = "mock-log-capacity"
    /// `mock-max-connections` (KKPushMock)
    public static let mockMaxConnections: Self = "mock-max-connections"
    /// `mock-max-streams` (KKPushMock)
    public static let mockMaxStreams: Self = "mock-max-streams"
    /// `mock-pem-invalid` (KKPushCLI)
    public static let mockPemInvalid: Self = "mock-pem-invalid"
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
    /// `openssl-alloc` (KKPushAuth)
    public static let opensslAlloc: Self = "openssl-alloc"
    /// `openssl-speed-failed` (KKPushCLI)
    public static let opensslSpeedFailed: Self = "openssl-speed-failed"
    /// `output-exists` (KKPushCLI)
    public static let outputExists: Self = "output-exists"
    /// `output-folder-missing` (KKPushCore)
    public static let outputFolderMissing: Self = "output-folder-missing"
    /// `output-is-directory` (KKPushCore)
    public static let outputIsDirectory: Self = "output-is-directory"
    /// `output-is-file` (KKPushCLI)
    public static let outputIsFile: Self = "output-is-file"
    /// `output-not-writable` (KKPushCore)
    public static let outputNotWritable: Self = "output-not-writable"
    /// `output-path-empty` (KKPushCore)
    public static let outputPathEmpty: Self = "output-path-empty"
    /// `output-write-failed` (KKPushCLI)
    public static let outputWriteFailed: Self = "output-write-failed"
    /// `p12-legacy` (KKPushAuth)
    public static let p12Legacy: Self = "p12-legacy"
    /// `p12-no-certificate` (KKPushAuth)
    public static let p12NoCertificate: Self = "p12-no-certificate"
    /// `p12-no-key` (KKPushAuth)
    public static let p12NoKey: Self = "p12-no-key"
    /// `p12-password` (KKPushAuth)
    public static let p12Password: Self = "p12-password"
    /// `p12-unreadable` (KKPushAuth)
    public static let p12Unreadable: Self = "p12-unreadable"
    /// `payload-aps-not-object` (KKPushCore)
    public static let payloadApsNotObject: Self = "payload-aps-not-object"
    /// `payload-not-json` (KKPushCore)
    public static let payloadNotJson: Self = "payload-not-json"
    /// `payload-not-object` (KKPushCore)
    public static let payloadNotObject: Self = "payload-not-object"
    /// `probe-no-credential` (KKPushCLI)
    public static let probeNoCredential: Self = "probe-no-credential"
    /// `probe-no-token` (KKPushCLI)
    public static let probeNoToken: Self = "probe-no-token"
    /// `proxy-url` (KKPushCLI)
    public static let proxyUrl: Self = "proxy-url"
    /// `schema-map-invalid` (KKPushBackend)
    public static let schemaMapInvalid: Self = "schema-map-invalid"
    /// `schema-map-unreadable` (KKPushBackend)
    public static let schemaMapUnreadable: Self = "schema-map-unreadable"
    /// `secret-conflict` (KKPushCLI)
    public static let secretConflict: Self = "secret-conflict"
    /// `secret-file-empty` (KKPushCLI)
    public static let secretFileEmpty: Self = "secret-file-empty"
    /// `secret-file-unreadable` (KKPushCLI)
    public static let secretFileUnreadable: Self = "secret-file-unreadable"
    /// `send-ca-file-invalid` (KKPushCLI)
    public static let sendCaFileInvalid: Self = "send-ca-file-invalid"
    /// `send-data-flag` (KKPushCLI)
    public static let sendDataFlag: Self = "send-data-flag"
    /// `send-no-credential` (KKPushCLI)
    public static let sendNoCredential: Self = "send-no-credential"
    /// `send-no-payload` (KKPushCLI)
    public static let sendNoPayload: Self = "send-no-payload"
    /// `send-no-topic` (KKPushCLI)
    public static let sendNoTopic: Self = "send-no-topic"
    /// `send-timeout-range` (KKPushCLI)
    public static let sendTimeoutRange: Self = "send-timeout-range"
    /// `sign-failed` (KKPushAuth)
    public static let signFailed: Self = "sign-failed"
    /// `sign-setup` (KKPushAuth)
    public static let signSetup: Self = "sign-setup"
    /// `signature-encode` (KKPushAuth)
    public static let signatureEncode: Self = "signature-encode"
    /// `signature-length` (KKPushAuth)
    public static let signatureLength: Self = "signature-length"
    /// `signature-malformed` (KKPushAuth)
    public static let signatureMalformed: Self = "signature-malformed"
    /// `simulate-backend-answer` (KKPushSimulator)
    public static let simulateBackendAnswer: Self = "simulate-backend-answer"
    /// `simulate-backend-host` (KKPushSimulator)
    public static let simulateBackendHost: Self = "simulate-backend-host"
    /// `simulate-backend-refused` (KKPushSimulator)
    public static let simulateBackendRefused: Self = "simulate-backend-refused"
    /// `simulate-backend-timeout` (KKPushSimulator)
    public static let simulateBackendTimeout: Self = "simulate-backend-timeout"
    /// `simulate-backend-unreachable` (KKPushSimulator)
    public static let simulateBackendUnreachable: Self = "simulate-backend-unreachable"
    /// `simulate-backend-url` (KKPushSimulator)
    public static let simulateBackendUrl: Self = "simulate-backend-url"
    /// `simulate-certificates-empty` (KKPushCLI)
    public static let simulateCertificatesEmpty: Self = "simulate-certificates-empty"
    /// `simulate-certificates-missing` (KKPushSimulator)
    public static let simulateCertificatesMissing: Self = "simulate-certificates-missing"
    /// `simulate-devices` (KKPushSimulator)
    public static let simulateDevices: Self = "simulate-devices"
    /// `simulate-no-dienst` (KKPushSimulator)
    public static let simulateNoDienst: Self = "simulate-no-dienst"
    /// `simulate-no-push-sender` (KKPushSimulator)
    public static let simulateNoPushSender: Self = "simulate-no-push-sender"
    /// `simulate-request-failed` (KKPushSimulator)
    public static let simulateRequestFailed: Self = "simulate-request-failed"
    /// `simulate-token-update-failed` (KKPushSimulator)
    public static let simulateTokenUpdateFailed: Self = "simulate-token-update-failed"
    /// `store-auth-failed` (KKPushBackend)
    public static let storeAuthFailed: Self = "store-auth-failed"
    /// `store-closed` (KKPushBackend)
    public static let storeClosed: Self = "store-closed"
    /// `store-database-missing` (KKPushBackend)
    public static let storeDatabaseMissing: Self = "store-database-missing"
    /// `store-malformed` (KKPushCLI, KantineKoning)
    public static let storeMalformed: Self = "store-malformed"
    /// `store-missing` (KKPushCLI, KantineKoning)
    public static let storeMissing: Self = "store-missing"
    /// `store-not-migrated` (KKPushBackend)
    public static let storeNotMigrated: Self = "store-not-migrated"
    /// `store-open-failed` (KKPushBackend)
    public static let storeOpenFailed: Self = "store-open-failed"
    /// `store-query-failed` (KKPushBackend)
    public static let storeQueryFailed: Self = "store-query-failed"
    /// `store-read-only` (KKPushBackend)
    public static let storeReadOnly: Self = "store-read-only"
    /// `store-row-invalid` (KKPushBackend)
    public static let storeRowInvalid: Self = "store-row-invalid"
    /// `store-schema-mismatch` (KKPushBackend)
    public static let storeSchemaMismatch: Self = "store-schema-mismatch"
    /// `store-unreachable` (KKPushBackend)
    public static let storeUnreachable: Self = "store-unreachable"
    /// `store-url-invalid` (KKPushBackend)
    public static let storeUrlInvalid: Self = "store-url-invalid"
    /// `token-update-malformed` (KantineKoning)
    public static let tokenUpdateMalformed: Self = "token-update-malformed"
}
