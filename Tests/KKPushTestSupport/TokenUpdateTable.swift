public import Foundation
public import Testing

/// One row of the token-update table (``TokenUpdateTable``).
public struct TokenUpdateCase: Sendable, CustomTestStringConvertible {
    public var name: String
    public var valid: Bool
    public var errors: [String]
    public var warnings: [String]
    public var infos: [String]
    public var resolvedEnvironment: String?
    public var knownEnvironment: String?
    public var forceEnv: String?
    public var legacyEnv: String?
    public var body: String

    public init(
        name: String, valid: Bool, errors: [String], warnings: [String], infos: [String], resolvedEnvironment: String?,
        knownEnvironment: String?, forceEnv: String?, legacyEnv: String?, body: String
    ) {
        self.name = name
        self.valid = valid
        self.errors = errors
        self.warnings = warnings
        self.infos = infos
        self.resolvedEnvironment = resolvedEnvironment
        self.knownEnvironment = knownEnvironment
        self.forceEnv = forceEnv
        self.legacyEnv = legacyEnv
        self.body = body
    }

    public var testDescription: String { name }

    public static func all() -> [TokenUpdateCase] { TokenUpdateTable.cases }

    public func data() -> Data { Data(body.utf8) }

    public static func named(_ name: String) -> TokenUpdateCase { all().first { $0.name == name }! }
}

// The token-update table: captured bodies, valid and broken, with the verdict and codes each must get.
// (Inline rather than files so the test target has no unhandled resources.)

public enum TokenUpdateTable {
    public static let cases: [TokenUpdateCase] = [
        TokenUpdateCase(
            name: "valid-development", valid: true, errors: [],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "valid-production-required-only", valid: true, errors: [],
            warnings: [], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "production",
                  "app_version": "2.0",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C"
                }
                """#),
        TokenUpdateCase(
            name: "valid-160-hex-token", valid: true, errors: [],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "abababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababab",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "valid-version-with-build", valid: true, errors: [],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2 (57)",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "valid-version-plus-build", valid: true, errors: [],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "3+112",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "uppercase-token-warns", valid: true, errors: [],
            warnings: ["token-normalized"], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3F0A9C1BE2D4F6A8B0C2E4F6A8B0C2D4E6F8A0B2C4D6E8F0A2B4C6D8E0F2A4B6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "description-brackets-and-spaces", valid: false, errors: ["token-description-form"],
            warnings: ["token-normalized"], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "<3f0a9c1b e2d4f6a8 b0c2e4f6 a8b0c2d4 e6f8a0b2 c4d6e8f0 a2b4c6d8 e0f2a4b6>",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "ios13-description-string", valid: false, errors: ["BadDeviceToken", "token-description-form"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "{length = 32, bytes = 0x3f0a9c1b e2d4f6a8 ... e0f2a4b6 }",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "token-not-hex", valid: false, errors: ["BadDeviceToken"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "zz0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "token-too-short", valid: false, errors: ["BadDeviceToken"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "token-odd-length", valid: false, errors: ["BadDeviceToken"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "token-empty", valid: false, errors: ["MissingDeviceToken"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "build-environment-unknown", valid: false, errors: ["build-environment-unknown"],
            warnings: [], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "staging",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "build-environment-capitalized", valid: true, errors: [],
            warnings: ["build-environment-not-normalized"], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "Development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "build-environment-testing", valid: true, errors: [],
            warnings: ["build-environment-testing"], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "testing",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "build-environment-debug", valid: true, errors: [],
            warnings: ["build-environment-nonstandard"], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "debug",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "production-but-token-works-in-sandbox", valid: false,
            errors: ["build-environment-contradicts-token"],
            warnings: [], infos: [], resolvedEnvironment: "production",
            knownEnvironment: "sandbox", forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "production",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "development-and-known-sandbox", valid: true, errors: [],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: "sandbox", forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "force-env-sandbox-for-production-token", valid: false,
            errors: ["force-env-override", "build-environment-contradicts-token"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: "production", forceEnv: "sandbox", legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "production",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "legacy-apns-env-matches", valid: true, errors: [],
            warnings: ["server-env-legacy"], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: "production",
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "production",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "app-version-word", valid: false, errors: ["app-version-invalid"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "latest",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "app-version-four-parts", valid: false, errors: ["app-version-invalid"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2.7",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "app-version-v-prefix", valid: false, errors: ["app-version-invalid"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "v1.4",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "app-version-number", valid: false, errors: ["wrong-type"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": 142,
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "missing-token-and-version", valid: false, errors: ["missing-field"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "build_environment": "development",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "missing-build-environment", valid: false, errors: ["missing-field"],
            warnings: [], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "camel-case-build-environment", valid: false, errors: ["missing-field", "field-not-snake-case"],
            warnings: [], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true,
                  "buildEnvironment": "development"
                }
                """#),
        TokenUpdateCase(
            name: "device-token-instead-of-token", valid: false, errors: ["missing-field"],
            warnings: [], infos: ["unknown-field"], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true,
                  "device_token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6"
                }
                """#),
        TokenUpdateCase(
            name: "hardware-identifier-concatenated", valid: false, errors: ["hardware-identifier-not-uuid"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "nl.kantinekoning.app-8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "hardware-identifier-not-uuid", valid: false, errors: ["hardware-identifier-not-uuid"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "iPhone_ABC123",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "platform-android", valid: false, errors: ["platform-unsupported"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "android",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "other-bundle-id", valid: false, errors: ["bundle-id-mismatch"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "com.example.other",
                  "platform": "ios",
                  "is_new_token": true
                }
                """#),
        TokenUpdateCase(
            name: "is-new-token-string", valid: false, errors: ["wrong-type"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "platform": "ios",
                  "is_new_token": "yes"
                }
                """#),
        // aps_environment: what the app is signed for, preferred by the backend where it is exact.
        TokenUpdateCase(
            name: "aps-production-debug-configuration-on-testflight", valid: true, errors: [],
            warnings: ["build-environment-contradicts-signature"], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": "production"
                }
                """#),
        TokenUpdateCase(
            name: "aps-development-run-from-xcode", valid: true, errors: [],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": "development"
                }
                """#),
        TokenUpdateCase(
            name: "aps-development-release-configuration-from-xcode", valid: true, errors: [],
            warnings: ["build-environment-contradicts-signature"], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "production",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": "development"
                }
                """#),
        TokenUpdateCase(
            name: "aps-production-capitalized", valid: false, errors: ["aps-environment-unknown"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": "Production"
                }
                """#),
        TokenUpdateCase(
            name: "aps-sandbox-is-not-an-entitlement-value", valid: false, errors: ["aps-environment-unknown"],
            warnings: [], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "production",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": "sandbox"
                }
                """#),
        TokenUpdateCase(
            name: "aps-not-a-string", valid: false, errors: ["wrong-type"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": true
                }
                """#),
        TokenUpdateCase(
            name: "aps-null-is-absent", valid: true, errors: [],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": null
                }
                """#),
        TokenUpdateCase(
            name: "aps-contradicts-known-environment", valid: false, errors: ["build-environment-contradicts-token"],
            warnings: [], infos: [], resolvedEnvironment: "production",
            knownEnvironment: "sandbox", forceEnv: nil, legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "production",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": "production"
                }
                """#),
        TokenUpdateCase(
            name: "aps-force-env-overrides-signature", valid: false, errors: ["force-env-override"],
            warnings: [], infos: [], resolvedEnvironment: "sandbox",
            knownEnvironment: nil, forceEnv: "sandbox", legacyEnv: nil,
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": "production"
                }
                """#),
        TokenUpdateCase(
            name: "aps-agrees-with-legacy-env", valid: true, errors: [],
            warnings: ["server-env-legacy"], infos: [], resolvedEnvironment: "production",
            knownEnvironment: nil, forceEnv: nil, legacyEnv: "production",
            body: #"""
                {
                  "token": "3f0a9c1be2d4f6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6",
                  "build_environment": "development",
                  "app_version": "1.4.2",
                  "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C",
                  "bundle_id": "nl.kantinekoning.app",
                  "aps_environment": "production"
                }
                """#),
        TokenUpdateCase(
            name: "not-json", valid: false, errors: ["body-not-json"],
            warnings: [], infos: [], resolvedEnvironment: nil,
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                token=3f0a&build_environment=development
                """#),
        TokenUpdateCase(
            name: "json-array", valid: false, errors: ["body-not-json"],
            warnings: [], infos: [], resolvedEnvironment: nil,
            knownEnvironment: nil, forceEnv: nil, legacyEnv: nil,
            body: #"""
                [1,2,3]
                """#),
    ]
}
