public import Foundation

/// A network namespace joined to this host by a veth pair: a second "host" on this machine, for tests of what
/// crosses a network (a sender that reaches the mock by a host name, not by loopback).
///
/// The host side gets `10.231.N.1/30`, the namespace side `10.231.N.2/30`; the namespace's `/etc/hosts`
/// (`/etc/netns/NAME/hosts`, which `ip netns exec` mounts over `/etc/hosts`) maps the names given to the host
/// side. Needs root and iproute2 (without them the initializer throws, and the test fails). ``remove()`` deletes the
/// namespace, the pair and the hosts file.
public final class NetworkNamespace: @unchecked Sendable {
    /// The namespace's name (`kkpush-…`).
    public let name: String
    /// The host side's address (what the namespace reaches this host at).
    public let hostAddress: String
    /// The namespace side's address.
    public let namespaceAddress: String
    private let hostLink: String

    /// Whether namespaces can be made here: running as root with `ip` installed.
    static var isAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: ip)
    }

    static let ip = "/usr/sbin/ip"

    /// Creates the namespace and the veth pair; `hosts` maps each name to the host side's address. Runs `ip`
    /// and waits for it: call it through ``offThread(_:)``, as ``remove()``.
    public init(hosts: [String]) throws {
        guard Self.isAvailable else {
            throw NamespaceError(
                message:
                    "A network namespace needs root and iproute2's \(Self.ip) (bash .ci/setup --tests installs it).")
        }
        let tag = String(UInt32.random(in: 0..<0xFFFF_FF), radix: 36)
        name = "kkpush-\(tag)"
        hostLink = "kkh\(tag)"
        let namespaceLink = "kkn\(tag)"
        let subnet = Int.random(in: 1...63) * 4
        hostAddress = "10.231.\(Int.random(in: 0...255)).\(subnet + 1)"
        namespaceAddress = hostAddress.split(separator: ".").dropLast().joined(separator: ".") + ".\(subnet + 2)"
        do {
            try Self.run(["netns", "add", name])
            try Self.run(["link", "add", hostLink, "type", "veth", "peer", "name", namespaceLink])
            try Self.run(["link", "set", namespaceLink, "netns", name])
            try Self.run(["addr", "add", "\(hostAddress)/30", "dev", hostLink])
            try Self.run(["link", "set", hostLink, "up"])
            try Self.run([
                "netns", "exec", name, Self.ip, "addr", "add", "\(namespaceAddress)/30", "dev", namespaceLink,
            ])
            try Self.run(["netns", "exec", name, Self.ip, "link", "set", namespaceLink, "up"])
            try Self.run(["netns", "exec", name, Self.ip, "link", "set", "lo", "up"])
            let folder = "/etc/netns/\(name)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let lines = ["127.0.0.1 localhost"] + hosts.map { "\(hostAddress) \($0)" }
            try (lines.joined(separator: "\n") + "\n").write(
                toFile: folder + "/hosts", atomically: true, encoding: .utf8)
        } catch {
            remove()
            throw error
        }
    }

    /// The arguments that run `command` inside the namespace (`ip netns exec NAME command…`).
    public func exec(_ command: [String]) -> (URL, [String]) {
        (URL(fileURLWithPath: Self.ip), ["netns", "exec", name] + command)
    }

    /// Deletes the namespace (and with it the veth pair) and its hosts file.
    public func remove() {
        try? Self.run(["link", "del", hostLink])
        try? Self.run(["netns", "del", name])
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(name)")
    }

    private static func run(_ arguments: [String]) throws {
        let result = try runProcessBlocking(
            URL(fileURLWithPath: ip), arguments, stdin: nil, environment: nil, currentDirectory: nil, timeout: 20)
        guard result.status == 0 else {
            throw NamespaceError(
                message:
                    "ip \(arguments.joined(separator: " ")) failed: \(String(decoding: result.stderr, as: UTF8.self))")
        }
    }

    struct NamespaceError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
