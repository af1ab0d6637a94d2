/// Carries a reference the host actor owns through a task that touches it only back on that
/// actor (tasks started with `Task(executorPreference:)` do not inherit the actor's isolation).
struct ActorOwned<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
