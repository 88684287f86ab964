import Foundation
import KKPushBackend
import KKPushCore
import KKPushSimulator
import KKPushTestSupport
import KantineKoning

/// Fixtures for the simulator's tests: the repository's certificates, found from this file.
enum SimulatorFixtures {
    /// `Certificates/` of the repository.
    static let certificates: String = Repository.certificates.path

    /// A simulation configuration for tests: the repository's certificates, a 20-second deadline.
    static func configuration(settings: ServerAPNsSettings = ServerAPNsSettings()) -> SimulationConfiguration {
        SimulationConfiguration(certificatesDirectory: certificates, serverSettings: settings, timeout: .seconds(20))
    }

    /// A dienst starting `days` from `now`.
    static func dienst(_ id: String, tenant: String = "vvwilhelmus", team: String = "JO11-3", days: Double, now: Date)
        -> Dienst
    {
        let start = now.addingTimeInterval(days * 86_400)
        return Dienst(
            id: id, tenantSlug: tenant, teamCode: team, startTime: start, endTime: start.addingTimeInterval(3600))
    }
}
