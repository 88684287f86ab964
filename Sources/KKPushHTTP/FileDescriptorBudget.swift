import CKKPushSystem

/// How many connections a server of this process can hold: its caps are sized from the open-file limit, not
/// a fixed number, so a flood cannot exhaust descriptors the server needs (files, listeners, outgoing
/// connections) and a large machine is not held to a small cap.
package enum FileDescriptorBudget {
    /// Descriptors kept for everything but client connections.
    package static let reserve = 256

    /// The soft limit on open files, raised once to the hard limit (at most 2^20) as servers commonly do: the
    /// soft limit is often 1,024 while the hard one allows far more.
    package static let softLimit: Int = {
        let limit = kk_open_file_limit_raised(1 << 20)
        return limit < 0 ? 1024 : Int(clamping: limit)
    }()

    /// A cap for one server: `share` of the descriptors beyond ``reserve``, at least 64, at most 100,000.
    package static func connections(share: Double) -> Int {
        max(64, min(100_000, Int(Double(softLimit - reserve) * share)))
    }
}
