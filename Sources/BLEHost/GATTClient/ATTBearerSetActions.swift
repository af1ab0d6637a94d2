import BLEWire

/// One action of an `ATTClientBearerSet`: what one of its bearers asks the owner to do.
public struct ATTBearerSetAction: Hashable, Sendable {
    /// The bearer the action belongs to: `.send` goes out on it, `.closeBearer` closes it.
    public var bearer: ATTBearerID
    /// What to do, as `ATTClientBearer` reports it.
    public var action: BearerAction

    /// Pairs an action with its bearer.
    public init(bearer: ATTBearerID, action: BearerAction) {
        self.bearer = bearer
        self.action = action
    }
}

/// The actions one call to an `ATTClientBearerSet` returns, in order.
///
/// Nearly every call asks for one or two (a notification; an indication and its confirmation,
/// Core spec Vol 3 Part F §3.4.7.2; a response's completion and the next request), so the
/// first two are kept inline and only a longer list allocates: a notification costs no array
/// on its way from the bearer to the owner (issue 12).
///
/// Invariant: `second` is set only when `first` is, and `rest` is empty unless both are, so
/// the synthesised equality is the equality of the sequences.
public struct ATTBearerSetActions: RandomAccessCollection, ExpressibleByArrayLiteral, Hashable, Sendable {
    private var first: ATTBearerSetAction?
    private var second: ATTBearerSetAction?
    private var rest: [ATTBearerSetAction] = []

    /// No actions.
    public init() {}

    /// One action, kept inline.
    public init(_ action: ATTBearerSetAction) {
        first = action
    }

    /// These actions, in order.
    public init(arrayLiteral elements: ATTBearerSetAction...) {
        append(contentsOf: elements)
    }

    /// The position of the first action (always 0).
    public var startIndex: Int { 0 }

    /// One past the last action.
    public var endIndex: Int {
        guard first != nil else { return 0 }
        guard second != nil else { return 1 }
        return 2 + rest.count
    }

    /// The action at `position` (0 ..< `endIndex`).
    public subscript(position: Int) -> ATTBearerSetAction {
        switch position {
        case 0 where first != nil: return first.unsafelyUnwrapped
        case 1 where second != nil: return second.unsafelyUnwrapped
        default: return rest[position - 2]
        }
    }

    /// Adds an action at the end.
    public mutating func append(_ action: ATTBearerSetAction) {
        if first == nil {
            first = action
        } else if second == nil {
            second = action
        } else {
            rest.append(action)
        }
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
