extension ServerCertificateIssuer {
    /// The names and addresses a server certificate for the mock gets: `hostNames` and `addresses` as given, then
    /// (with `loopback`) `localhost`, `127.0.0.1` and `::1` where missing, so the same certificate still serves a
    /// sender on this machine. Names are not checked here (``checkedHostName(_:)``, ``checkedAddress(_:)`` do that).
    package static func subjectNames(hostNames: [String], addresses: [String], loopback: Bool) -> (
        hostNames: [String], addresses: [String]
    ) {
        var names = hostNames
        var ips = addresses
        if loopback {
            if !names.contains(where: { $0.lowercased() == "localhost" }) { names.append("localhost") }
            for address in ["127.0.0.1", "::1"] where !ips.compactMap({ try? checkedAddress($0) }).contains(address) {
                ips.append(address)
            }
        }
        return (names, ips)
    }
}
