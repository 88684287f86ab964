import Foundation
import KKPushCore
import KKPushSystem
import NIOHTTP1

/// Who may use the admin API, and where `POST /keys` may read key files.
struct AdminPolicy: Sendable {
    /// The bearer token every request must carry, if any.
    var token: String?
    /// The certificates folder: the only place `POST /keys` reads a `file` from (nil: none).
    var keysDirectory: String?

    /// The 403, 401 or nil for a request's headers. `needsToken` false: the web console's static files,
    /// which hold no data, are served without the admin token (the Origin rule still holds).
    func refusal(_ headers: HTTPHeaders, needsToken: Bool = true) -> (HTTPResponseStatus, KKPushError)? {
        if let origin = headers.first(name: "origin"), !isOwnOrigin(origin, host: headers.first(name: "host")) {
            return (
                .forbidden,
                KKPushError(
                    code: .adminOrigin,
                    message:
                        "Requests with an Origin header from another site are refused: a page in a browser could otherwise change the mock through its fixed loopback port.",
                    fix:
                        "Call the admin API from curl, a script or a test (no Origin header), or from the web console it serves at GET /."
                )
            )
        }
        guard let token, needsToken else { return nil }
        let given = headers.first(name: "authorization").flatMap { value -> String? in
            let v = value.trimmingCharacters(in: .whitespaces)
            guard v.count > 7, v.prefix(7).lowercased() == "bearer " else { return nil }
            return v.dropFirst(7).trimmingCharacters(in: .whitespaces)
        }
        guard let given, Self.constantTimeEqual(Array(given.utf8), Array(token.utf8)) else {
            return (
                .unauthorized,
                KKPushError(
                    code: .adminUnauthorized,
                    message: given == nil
                        ? "The admin API needs the admin token." : "The admin token given is not the mock's.",
                    fix:
                        "Send Authorization: Bearer <token>, with the admin token the mock was started with."
                )
            )
        }
        return nil
    }

    /// True if `origin` is the admin API's own (the web console it serves): `http://` and the request's
    /// Host, exactly. Without an admin token the Host must also be an address or `localhost`, so a page
    /// whose own name was pointed at 127.0.0.1 (DNS rebinding) is still a foreign origin.
    func isOwnOrigin(_ origin: String, host: String?) -> Bool {
        guard let host = host?.trimmingCharacters(in: .whitespaces).lowercased(), !host.isEmpty,
            origin.trimmingCharacters(in: .whitespaces).lowercased() == "http://" + host
        else { return false }
        if token != nil { return true }
        var name = Substring(host)
        if name.hasPrefix("["), let end = name.firstIndex(of: "]") {
            name = name[name.index(after: name.startIndex)..<end]
        } else if let colon = name.lastIndex(of: ":") {
            name = name[..<colon]
        }
        return name == "localhost" || IPAddressText.canonical(String(name)) != nil
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) {
            diff |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return diff == 0
    }

    /// The key file `name` resolved inside the certificates folder, or a KKPushError naming the rule.
    func keyFile(_ name: String) throws -> String {
        guard let dir = keysDirectory else {
            throw KKPushError(
                code: .adminKeyFile,
                message: "Key files are read only from the certificates folder, and the mock has none.",
                fix: "Send the key as \"pem\" instead of \"file\".")
        }
        let base = URL(fileURLWithPath: dir).standardizedFileURL.resolvingSymlinksInPath().path
        let url =
            name.hasPrefix("/") ? URL(fileURLWithPath: name) : URL(fileURLWithPath: base).appendingPathComponent(name)
        let path = url.standardizedFileURL.resolvingSymlinksInPath().path
        guard path.hasPrefix(base.hasSuffix("/") ? base : base + "/") else {
            throw KKPushError(
                code: .adminKeyFileOutside,
                message:
                    "The key file '\(name)' is outside the certificates folder; POST /keys reads key files only from inside it.",
                fix: "Put the .p8 in the certificates folder and give its name, or send the key as \"pem\".")
        }
        return path
    }
}
