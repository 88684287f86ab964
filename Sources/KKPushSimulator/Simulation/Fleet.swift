import KKPushCore
package import KantineKoning

/// One simulated phone to set up: a name, a build and its enrollments.
package struct DeviceProfile: Sendable, Hashable {
    /// The display name.
    package var name: String
    /// The build.
    package var build: AppBuild
    /// The enrollments, in order.
    package var enrollments: [EnrollmentSpec]

    /// Creates a profile.
    package init(name: String, build: AppBuild, enrollments: [EnrollmentSpec]) {
        self.name = name
        self.build = build
        self.enrollments = enrollments
    }
}

/// The phones of a simulation.
package enum Fleet {
    /// The teams whose next dienst the standard run changes: every profile follows at least one.
    package static let changedTeams: [(tenant: String, team: String)] = [
        ("vvwilhelmus", "JO11-3"), ("agovv", "JO10-5"),
    ]

    /// The standard five phones: the README's phone (Release build; VV Wilhelmus manager JO11-3 and
    /// JO11-5, VV Wilhelmus member JO13-1, AGOVV member JO10-5), and four more across both tenants and
    /// both builds (Release Testing → sandbox, Release → production).
    package static let standard: [DeviceProfile] = [
        DeviceProfile(
            name: "Sanne's iPhone", build: AppBuild(scheme: .release), enrollments: EnrollmentSpec.readmePhone),
        DeviceProfile(
            name: "Test iPhone", build: AppBuild(scheme: .releaseTesting),
            enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .manager)]),
        DeviceProfile(
            name: "Ouder AGOVV", build: AppBuild(scheme: .release),
            enrollments: [EnrollmentSpec(tenant: "agovv", teams: ["JO10-5"], role: .member)]),
        DeviceProfile(
            name: "Trainer JO11-5", build: AppBuild(scheme: .releaseTesting),
            enrollments: [
                EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-5"], role: .manager),
                EnrollmentSpec(tenant: "agovv", teams: ["JO10-5"], role: .member),
            ]),
        DeviceProfile(
            name: "Ouder JO11-3", build: AppBuild(scheme: .release),
            enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3", "JO13-1"], role: .member)]),
    ]

    /// `count` phones: the standard ones first, then `Device NNNN` cycling through the standard
    /// profiles' builds and enrollments.
    package static func make(count: Int) -> [DeviceProfile] {
        (0..<max(0, count)).map { i in
            if i < standard.count { return standard[i] }
            let template = standard[i % standard.count]
            let number = String(i + 1)
            let name = "Device " + String(repeating: "0", count: max(0, 4 - number.count)) + number
            return DeviceProfile(name: name, build: template.build, enrollments: template.enrollments)
        }
    }
}
