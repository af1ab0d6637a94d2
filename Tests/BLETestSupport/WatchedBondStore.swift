import BLE

/// A bond store whose changes are events: it forwards everything to `base` and, after each save
/// or removal, publishes the bonds, so a test waits for a bond to be stored (`wait`) instead of
/// polling `bonds()`.
public final class WatchedBondStore: BondStore {
    public let base: any BondStore
    private let published: SharedValue<[Bond]>

    public init(_ base: any BondStore = InMemoryBondStore()) {
        self.base = base
        published = SharedValue((try? base.bonds()) ?? [])
    }

    public func bonds() throws -> [Bond] { try base.bonds() }
    public func save(_ bond: Bond) throws {
        defer { publish() }
        try base.save(bond)
    }
    @discardableResult public func remove(_ peer: DeviceAddress) throws -> Bool {
        defer { publish() }
        return try base.remove(peer)
    }
    public func localIdentity() throws -> LocalIdentity { try base.localIdentity() }
    public func problems() -> [String] { base.problems() }
    public func isPasskeyRetired(_ passkey: UInt32) throws -> Bool { try base.isPasskeyRetired(passkey) }
    public func retirePasskey(_ passkey: UInt32) throws { try base.retirePasskey(passkey) }

    private func publish() {
        guard let now = try? base.bonds() else { return }
        published.set(now)
    }

    /// Waits until `condition` holds of the stored bonds: checked now and after each save or
    /// removal; false, with a test failure, after `bound` of real time.
    @discardableResult
    public func wait(_ what: String, within bound: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                     until condition: @escaping @Sendable ([Bond]) -> Bool) async -> Bool {
        await published.wait(what, within: bound, file: file, line: line, until: condition)
    }

    /// True once `condition` holds of the stored bonds (false if cancelled first): for `firstOf`.
    public func becomes(_ condition: @escaping @Sendable ([Bond]) -> Bool) async -> Bool {
        await published.becomes(condition)
    }
}
