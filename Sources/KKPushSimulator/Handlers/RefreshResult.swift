package import Foundation
package import KKPushBackend
import KKPushCore
import KKPushMock

/// One diensten request of a refresh: which tenant, with which enrollment's JWT, and what came back.
package struct DienstenRequestResult: Sendable, Hashable {
    /// The tenant asked for (`?tenant=`).
    package var tenant: String
    /// The enrollment whose JWT was sent.
    package var deviceID: String
    /// The JWT's first 12 characters and `…`.
    package var bearerPrefix: String
    /// The HTTP status.
    package var status: Int
    /// How many diensten came back.
    package var count: Int
    /// The backend's error code, if it refused (for example `jwt-wrong-tenant`).
    package var errorCode: String?
    /// The backend's error message, if it refused.
    package var errorMessage: String?

    /// True if the backend answered with diensten.
    package var succeeded: Bool { errorCode == nil && (200..<300).contains(status) }
}

/// What a refresh of the diensten did: the requests, the merged list, and how long it took from the
/// push's acceptance at the mock APNs server to the refreshed `upcoming` list.
package struct RefreshResult: Sendable {
    /// The handler that refreshed (`diensten-refresh` or `primary-token-refresh`).
    package var handler: String
    /// The `apns-id` of the push that triggered it (nil for a manual refresh).
    package var apnsID: String?
    /// One entry per request, in the order of the app's enrollments.
    package var requests: [DienstenRequestResult]
    /// How many diensten `upcoming` holds after the refresh.
    package var dienstenCount: Int
    /// How many duplicates (same dienst id from several responses) were dropped.
    package var duplicatesRemoved: Int
    /// When the mock accepted the push (nil for a manual refresh).
    package var acceptedAt: Date?
    /// When the refreshed list was published.
    package var refreshedAt: Date

    /// The tenants whose diensten were refreshed (a successful request), in order, each once.
    package var tenants: [String] {
        var seen = Set<String>()
        return requests.filter(\.succeeded).map(\.tenant).filter { seen.insert($0).inserted }
    }

    /// The tenants asked for whose request failed.
    package var failedTenants: [String] {
        var seen = Set<String>()
        return requests.filter { !$0.succeeded }.map(\.tenant).filter { seen.insert($0).inserted }
    }

    /// True if every request succeeded.
    package var isComplete: Bool { requests.allSatisfy(\.succeeded) }

    /// Seconds from the push's acceptance at the mock to the published list (nil for a manual refresh).
    package var latency: TimeInterval? { acceptedAt.map { refreshedAt.timeIntervalSince($0) } }
}

/// The app's client-side aggregation of per-enrollment diensten (README: "Client-side dedup en
/// sortering (toekomst eerst)").
package enum DienstenAggregation {
    /// Merges the lists, keeping the first copy of each dienst id, and orders the result with
    /// ``isOrderedBefore(_:_:now:)``. Returns the list and how many duplicates were dropped.
    package static func merge(_ lists: [[Dienst]], now: Date) -> (diensten: [Dienst], duplicatesRemoved: Int) {
        var seen = Set<String>()
        var merged: [Dienst] = []
        var duplicates = 0
        for list in lists {
            for dienst in list {
                if seen.insert(dienst.id).inserted { merged.append(dienst) } else { duplicates += 1 }
            }
        }
        merged.sort { isOrderedBefore($0, $1, now: now) }
        return (merged, duplicates)
    }

    /// The app's order: diensten that have not started yet first, soonest first; then past diensten,
    /// most recent first; ties by id.
    package static func isOrderedBefore(_ a: Dienst, _ b: Dienst, now: Date) -> Bool {
        let aFuture = a.startTime >= now
        let bFuture = b.startTime >= now
        if aFuture != bFuture { return aFuture }
        if a.startTime != b.startTime { return aFuture ? a.startTime < b.startTime : a.startTime > b.startTime }
        return a.id < b.id
    }
}

/// One request a refresh makes: a tenant, asked with one enrollment's JWT.
struct DienstenFetch: Sendable {
    var tenant: String
    var deviceID: String
    var bearer: String
}

/// Runs the requests concurrently, merges, publishes to `app.upcoming` and times it.
func performRefresh(
    handler: String, fetches: [DienstenFetch], push: ReceivedPush?, app: SimulatedApp
) async -> RefreshResult {
    let api = app.api
    var answers = [(DienstenRequestResult, [Dienst])?](repeating: nil, count: fetches.count)
    await withTaskGroup(of: (Int, DienstenRequestResult, [Dienst]).self) { group in
        for (index, fetch) in fetches.enumerated() {
            group.addTask {
                let prefix = Redaction.prefix(fetch.bearer)
                do {
                    let answer = try await api.diensten(tenant: fetch.tenant, bearer: fetch.bearer)
                    return (
                        index,
                        DienstenRequestResult(
                            tenant: fetch.tenant, deviceID: fetch.deviceID, bearerPrefix: prefix, status: answer.status,
                            count: answer.diensten.count, errorCode: answer.error?.code.rawValue,
                            errorMessage: answer.error?.message),
                        answer.diensten
                    )
                } catch let error as KKPushError {
                    return (
                        index,
                        DienstenRequestResult(
                            tenant: fetch.tenant, deviceID: fetch.deviceID, bearerPrefix: prefix, status: 0, count: 0,
                            errorCode: error.code.rawValue, errorMessage: error.message), []
                    )
                } catch {
                    return (
                        index,
                        DienstenRequestResult(
                            tenant: fetch.tenant, deviceID: fetch.deviceID, bearerPrefix: prefix, status: 0, count: 0,
                            errorCode: "simulate-request-failed", errorMessage: ErrorWords.describe(error)), []
                    )
                }
            }
        }
        for await (index, result, diensten) in group { answers[index] = (result, diensten) }
    }
    let results = answers.compactMap { $0 }
    let merged = DienstenAggregation.merge(results.map(\.1), now: app.clock.now())
    await app.publish(upcoming: merged.diensten)
    let refreshedAt = app.clock.now()
    return RefreshResult(
        handler: handler, apnsID: push?.notification.apnsID, requests: results.map(\.0),
        dienstenCount: merged.diensten.count, duplicatesRemoved: merged.duplicatesRemoved,
        acceptedAt: push?.acceptedAt, refreshedAt: refreshedAt)
}
