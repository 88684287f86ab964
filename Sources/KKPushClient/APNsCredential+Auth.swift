import Foundation
public import KKPushAuth
import KKPushCore

extension ProviderTokenCache: BearerTokenSource {
    /// The cache's current token and its generation.
    public func currentBearer() throws -> (value: String, generation: Int) {
        let token = try currentToken()
        return (token.value, token.generation)
    }

    /// Mints a new token after APNs answered `ExpiredProviderToken` to `token`.
    public func refreshBearer(afterExpired token: String) throws {
        _ = try refreshAfterExpired(rejected: token)
    }
}

extension APNsCredential {
    /// Provider-token authentication: every request carries the cache's current JWT, and
    /// `ExpiredProviderToken` makes the cache mint a new one (once per notification).
    public static func token(_ cache: ProviderTokenCache) -> APNsCredential {
        APNsCredential(storage: .token(cache))
    }

    /// Provider-token authentication from any ``BearerTokenSource``.
    public static func token(source: any BearerTokenSource) -> APNsCredential {
        APNsCredential(storage: .token(source))
    }
}

extension APNsCredential {
    /// Certificate authentication with a loaded ``ClientCredential``: its certificate (and chain) and
    /// key go to libcurl in memory (`CURLOPT_SSLCERT_BLOB`/`CURLOPT_SSLKEY_BLOB`); its topics drive
    /// pre-flight (`apns-topic` required when it covers several).
    public static func certificate(_ credential: ClientCredential) throws -> APNsCredential {
        let certificate = try credential.certificatePEM() + credential.chainPEM()
        let key = try credential.privateKeyPEM()
        return .certificate(
            certificatePEM: Array(certificate.utf8), privateKeyPEM: Array(key.utf8),
            topics: credential.info.topics.isEmpty ? nil : Set(credential.info.topics),
            label: credential.info.commonName ?? "client certificate")
    }
}
