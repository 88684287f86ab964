import Foundation
import KKPushCore
import KantineKoning

/// The app's refresh on push, done right (README: Multi-Tenant Architectuur, Data-Driven
/// Architectuur): one diensten request per enrollment, each with **that enrollment's own JWT** for
/// its own tenant (the backend filters by the JWT's team codes, so a tenant with a manager and a
/// member enrollment is asked twice), then merge, dedup by dienst id, order with the future first,
/// and publish the result as the app's single source of truth, `upcoming`.
package struct DienstenRefreshHandler: PushHandler {
    /// Which pushes trigger a refresh.
    package enum Trigger: String, Sendable {
        /// Every push, as the app does ("Notificaties verversen automatisch de lijst met diensten").
        case everyPush = "every-push"
        /// Only `dienst_update` pushes.
        case dienstUpdatesOnly = "dienst-updates-only"
    }

    /// `diensten-refresh`.
    package let name = "diensten-refresh"
    /// Which pushes trigger a refresh.
    package var trigger: Trigger

    /// Creates the handler; by default every push refreshes, as in the app.
    package init(trigger: Trigger = .everyPush) { self.trigger = trigger }

    /// Refreshes the diensten (or skips a non-dienst push if ``trigger`` says so).
    package func handle(_ push: ReceivedPush, in app: SimulatedApp) async -> HandlerOutcome {
        if trigger == .dienstUpdatesOnly, case .dienstUpdate = push.kind {
        } else if trigger == .dienstUpdatesOnly {
            return .skipped("not a dienst update")
        }
        return .refreshed(await refresh(app: app, push: push))
    }

    /// One refresh of `app`'s diensten, timed from `push`'s acceptance if given.
    package func refresh(app: SimulatedApp, push: ReceivedPush?) async -> RefreshResult {
        let fetches = await app.enrollments.map {
            DienstenFetch(tenant: $0.tenantSlug, deviceID: $0.deviceID, bearer: $0.signedDeviceToken)
        }
        return await performRefresh(handler: name, fetches: fetches, push: push, app: app)
    }
}

/// The README's deprecated pattern, kept on purpose to reproduce its most common bug: every tenant
/// is asked with `primaryAuthToken`, the JWT of the **first** enrollment. The backend refuses the
/// other tenants (`403 jwt-wrong-tenant`) and filters the first tenant to the first enrollment's
/// teams, so the other enrollments' diensten go missing from `upcoming`. Used by the
/// `primary-token` scenario; never a default handler.
package struct PrimaryTokenRefreshHandler: PushHandler {
    /// `primary-token-refresh`.
    package let name = "primary-token-refresh"

    /// Creates the handler.
    package init() {}

    /// Refreshes every tenant with the first enrollment's JWT.
    package func handle(_ push: ReceivedPush, in app: SimulatedApp) async -> HandlerOutcome {
        .refreshed(await refresh(app: app, push: push))
    }

    /// One refresh with the primary token.
    package func refresh(app: SimulatedApp, push: ReceivedPush?) async -> RefreshResult {
        let enrollments = await app.enrollments
        guard let primary = enrollments.first else {
            return await performRefresh(handler: name, fetches: [], push: push, app: app)
        }
        var seen = Set<String>()
        let tenants = enrollments.map(\.tenantSlug).filter { seen.insert($0).inserted }
        let fetches = tenants.map {
            DienstenFetch(tenant: $0, deviceID: primary.deviceID, bearer: primary.signedDeviceToken)
        }
        return await performRefresh(handler: name, fetches: fetches, push: push, app: app)
    }
}
