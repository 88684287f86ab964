import Foundation
import KKPushCore
import KKPushHTTP
import NIOHTTP1

/// The device side's admin routes: a device's connectivity and app state, and the rules where Apple gives no number.
///
/// - `GET /devices/{token}/state`: `{"token", "connectivity", "app", "stored", "held_for_power", "deferred",
///   "background_runs_in_window", "background_budget", "starts_in_window", "push_to_start_budget",
///   "push_to_start_stale", "activities", "activity_of"}` (`activities`: the Live Activities the token's starts created,
///   each with its `update_token` and `phase`; `activity_of`: for an activity's update token, its push-to-start token).
/// - `PUT /devices/{token}/state` with `{"connectivity": "online"|"offline", "app":
///   "foreground"|"background"|"suspended"|"force-quit", "push_to_start_stale": true|false}` (any may be left out):
///   applied at once (a device that comes online gets its stored push; a stale push-to-start token's Live Activity
///   pushes are discarded from now on); answers the state as `GET` does.
/// - `GET /device-rules`, `PUT /device-rules` with any of `{"storage_limit_s", "background_budget",
///   "background_budget_window_s", "low_priority_hold_s", "push_to_start_budget", "push_to_start_budget_window_s"}`
///   (the others unchanged).
extension MockAdminAPI {
    func addDeviceSideRoutes(to router: inout HTTPRouter) {
        let state = self.state
        router.get("/devices/:token/state") { request in
            let token = request[parameter: "token"].lowercased()
            guard let device = state.deviceState(token: token) else { throw Self.unknownDevice() }
            return Self.json(device)
        }
        router.put("/devices/:token/state") { request in
            struct StateIn: Decodable {
                var connectivity: String?
                var app: String?
                var push_to_start_stale: Bool?
            }
            let body = try Self.decode(
                StateIn.self, request.body, shape: .fields(["connectivity", "app", "push_to_start_stale"]))
            let (connectivity, app) = try Self.deviceState(connectivity: body.connectivity, app: body.app)
            guard connectivity != nil || app != nil || body.push_to_start_stale != nil else {
                throw KKPushError(
                    code: .adminDeviceState,
                    message: "The body sets neither connectivity, app nor push_to_start_stale.",
                    fix: #"Send e.g. {"connectivity":"offline"}, {"app":"background"} or {"push_to_start_stale":true}."#
                )
            }
            let token = request[parameter: "token"].lowercased()
            if let stale = body.push_to_start_stale, state.setPushToStartStale(token: token, stale: stale) == nil {
                throw Self.unknownDevice()
            }
            guard let device = state.setDeviceState(token: token, connectivity: connectivity, app: app) else {
                throw Self.unknownDevice()
            }
            return Self.json(device)
        }
        router.get("/device-rules") { _ in Self.json(state.deviceRules) }
        router.put("/device-rules") { request in
            struct RulesIn: Decodable {
                var storage_limit_s: Double?
                var background_budget: Int?
                var background_budget_window_s: Double?
                var low_priority_hold_s: Double?
                var push_to_start_budget: Int?
                var push_to_start_budget_window_s: Double?
            }
            let body = try Self.decode(RulesIn.self, request.body, shape: MockDeviceRules.shape)
            var rules = state.deviceRules
            if let v = body.storage_limit_s { rules.storageLimit = v }
            if let v = body.background_budget { rules.backgroundBudget = v }
            if let v = body.background_budget_window_s { rules.backgroundBudgetWindow = v }
            if let v = body.low_priority_hold_s { rules.lowPriorityHold = v }
            if let v = body.push_to_start_budget { rules.pushToStartBudget = v }
            if let v = body.push_to_start_budget_window_s { rules.pushToStartBudgetWindow = v }
            try rules.validate()
            state.deviceRules = rules
            state.settleDevices()
            return Self.json(rules)
        }
    }

    static func unknownDevice() -> Refusal {
        Refusal(
            status: .notFound,
            error: KKPushError(
                code: .adminDeviceUnknown, message: "The mock does not know that token.",
                fix: "Mint or register it first (POST /devices)."))
    }

    /// The `connectivity` and `app` words of a body, checked (nil: not given).
    static func deviceState(connectivity: String?, app: String?) throws -> (MockConnectivity?, MockAppState?) {
        var c: MockConnectivity? = nil
        var a: MockAppState? = nil
        if let connectivity {
            guard let value = MockConnectivity(rawValue: connectivity.lowercased()) else {
                throw KKPushError(
                    code: .adminDeviceState, message: "connectivity '\(connectivity)' is unknown.",
                    fix: "Use online or offline.")
            }
            c = value
        }
        if let app {
            guard let value = MockAppState(rawValue: app.lowercased()) else {
                throw KKPushError(
                    code: .adminDeviceState, message: "app '\(app)' is unknown.",
                    fix: "Use foreground, background, suspended or force-quit.")
            }
            a = value
        }
        return (c, a)
    }

    /// A `state=` filter of `GET /log`: a delivery state's words or its category (`stored`, `discarded`, …).
    static func deliveryStateQuery(_ text: String) throws -> String {
        let query = text.lowercased()
        guard DeliveryState.allCases.contains(where: { $0.matches(query) }) else {
            let categories = Set(
                DeliveryState.allCases.map { $0.rawValue.split(separator: ":").first.map(String.init)! })
            throw KKPushError(
                code: .adminQuery, message: "state=\(text) names no delivery state.",
                fix: "Use a state's words or its first word: \(categories.sorted().joined(separator: ", ")).")
        }
        return query
    }
}
