import BLEWire

/// One action of an `ATTClientBearerSet`: what one of its bearers asks the owner to do.
public struct ATTBearerSetAction: Hashable, Sendable {
    /// The bearer the action belongs to: `.send` goes out on it, `.closeBearer` closes it.
    public var bearer: ATTBearerID
    /// What to do, as `ATTClientBearer` reports it.
    public var action: BearerAction

    /// Pairs an action with its bearer.
    @inlinable public init(bearer: ATTBearerID, action: BearerAction) {
        self.bearer = bearer
        self.action = action
    }
}

/// The actions one call to an `ATTClientBearerSet` returns, in order.
///
/// Nearly every call asks for one or two (a notification; an indication and its confirmation,
/// Core spec Vol 3 Part F §3.4.7.2; a response's completion and the next request), so the
/// first two are kept inline and only a longer list allocates: a notification costs no array
/// on its way from the bearer to the owner.
///
/// Invariant: `first` is set when there are one or more actions, `second` when two or more,
/// `rest` holds the others, so the synthesised equality is the equality of the sequences.
public struct ATTBearerSetActions: RandomAccessCollection, ExpressibleByArrayLiteral, Hashable, Sendable {
    // Inlinable, with the storage visible to the host module: the owner walks the actions of
    // every PDU, and an opaque call per `endIndex` and per element cost more than the list.
    @usableFromInline var first: ATTBearerSetAction?
    @usableFromInline var second: ATTBearerSetAction?
    @usableFromInline var rest: [ATTBearerSetAction] = []
    /// How many actions there are (first, second, then `rest`).
    @usableFromInline var total: Int = 0

    /// No actions.
    @inlinable public init() {}

    /// One action, kept inline.
    @inlinable public init(_ action: ATTBearerSetAction) {
        first = action
        total = 1
    }

    /// These actions, in order.
    public init(arrayLiteral elements: ATTBearerSetAction...) {
        append(contentsOf: elements)
    }

    /// The position of the first action (always 0).
    @inlinable public var startIndex: Int { 0 }

    /// One past the last action.
    @inlinable public var endIndex: Int { total }

    /// The action at `position` (0 ..< `endIndex`); out of range traps, as an array's does.
    @inlinable public subscript(position: Int) -> ATTBearerSetAction {
        if position == 0, let first { return first }
        if position == 1, let second { return second }
        return rest[position - 2]
    }

    /// Adds an action at the end.
    public mutating func append(_ action: ATTBearerSetAction) {
        switch total {
        case 0: first = action
        case 1: second = action
        default: rest.append(action)
        }
        total += 1
    }

    /// Adds actions at the end, in order.
    public mutating func append<S: Sequence>(contentsOf actions: S) where S.Element == ATTBearerSetAction {
        for a in actions { append(a) }
    }

    /// Adds `bearer`'s actions at the end, each tagged with it.
    mutating func append(_ actions: [BearerAction], on bearer: ATTBearerID) {
        for a in actions { append(ATTBearerSetAction(bearer: bearer, action: a)) }
    }

    /// `lhs` followed by `rhs`.
    public static func + (lhs: ATTBearerSetActions, rhs: ATTBearerSetActions) -> ATTBearerSetActions {
        var out = lhs
        out.append(contentsOf: rhs)
        return out
    }

    /// Appends `rhs` to `lhs`.
    public static func += (lhs: inout ATTBearerSetActions, rhs: ATTBearerSetActions) {
        lhs.append(contentsOf: rhs)
    }
}

extension ATTBearerSetActions: CustomStringConvertible {
    /// The actions as a list, as an array prints them.
    public var description: String { Array(self).description }
}
