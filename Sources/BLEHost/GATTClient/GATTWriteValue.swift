import BLEWire

/// Write with response of any length up to 512 octets (Core spec Vol 3 Part G §4.9.3, §4.9.4,
/// §4.12.3, §4.12.4): one Write Request when the value fits ATT_MTU − 3 (Vol 3 Part F
/// §3.4.5.1), else a long write (Prepare Write Requests of ATT_MTU − 5 octets, then Execute
/// Write).
///
/// The choice is made in `start()` from the ATT_MTU of the bearer the procedure runs on, which
/// the bearer sets just before: with Enhanced ATT every bearer has its own ATT_MTU (Part F
/// §3.2.8, §3.2.11), so a value that fits one Write Request on the unenhanced bearer may need a
/// long write on an EATT bearer with a smaller MTU.
public struct WriteValueProcedure: GATTProcedure {
    public typealias Output = Void
    public var mtu: Int
    public let handle: UInt16
    public let value: [UInt8]
    private var long: PreparedWriteEngine?

    /// `mtu` is only used standalone; on a bearer it is that bearer's ATT_MTU.
    public init(handle: UInt16, value: [UInt8], mtu: Int = 23) {
        self.handle = handle
        self.value = value
        self.mtu = mtu
    }

    public mutating func start() -> ProcedureStep<Void> {
        guard value.count <= attMaximumAttributeValueLength else {
            return .failed(.invalidArgument("attribute values are at most \(attMaximumAttributeValueLength) octets (got \(value.count))"))
        }
        if value.count <= mtu - 3 {
            long = nil
            return .send(.writeRequest(handle: handle, value: value))
        }
        var engine = PreparedWriteEngine(writes: [(handle, 0, value)])
        let step = engine.start(mtu: mtu)
        long = engine
        return step
    }

    public mutating func receive(_ pdu: ATTPDU) -> ProcedureStep<Void> {
        if var engine = long {
            let step = engine.receive(pdu)
            long = engine
            return step
        }
        return .answeringWriteRequest(pdu)
    }

    public mutating func answerFailed(_ error: GATTError) -> ProcedureStep<Void> {
        guard var engine = long else { return .failed(error) }
        let step = engine.answerFailed(error)
        long = engine
        return step
    }

    public mutating func cleanupAfterCancel() -> ATTPDU? {
        guard var engine = long else { return nil }
        let pdu = engine.cleanupAfterCancel()
        long = engine
        return pdu
    }

    /// A write to a handle that may name another attribute now is not sent again here: the
    /// caller, which knows what it meant to write, finds it again.
    public mutating func serverDatabaseChanged(in range: ClosedRange<UInt16>, requestOutstanding: Bool) -> GATTDatabaseChangeEffect {
        .on(CollectionOfOne(handle), changedIn: range)
    }

    public static func gattOutput(_ output: Void) -> GATTOutput { .none }
}
