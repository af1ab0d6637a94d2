import Foundation

/// Keeps an L2CAP channel open while anything the app holds uses it: the `CBL2CAPChannel` and
/// its two streams each keep one of these; when the last is released, the channel closes once
/// what was written has gone (as on Apple platforms, where the app must retain the channel to
/// keep it).
final class L2CAPChannelLifetime: Sendable {
    let pipe: L2CAPStreamBridge

    init(pipe: L2CAPStreamBridge) { self.pipe = pipe }

    deinit { pipe.shutDown() }
}

/// The bytes an L2CAP channel's peer sends (`CBL2CAPChannel.inputStream`): `open()`, schedule it
/// in a run loop, and the delegate hears `.openCompleted`, `.hasBytesAvailable` (read then),
/// `.endEncountered` once the channel has closed and everything is read, or `.errorOccurred`
/// when the link failed (`streamError` says why). Unlike a socket stream, `read` never blocks:
/// with nothing to read it returns 0 (check `hasBytesAvailable`, or read on the event).
final class L2CAPInputStream: InputStream, StreamDelegate {
    private let lifetime: L2CAPChannelLifetime
    private let delegateReference = WeakReference<AnyObject>(nil)

    init(lifetime: L2CAPChannelLifetime) {
        self.lifetime = lifetime
        super.init(data: Data())
        lifetime.pipe.inputStream.value = self
    }

    private var pipe: L2CAPStreamBridge { lifetime.pipe }

    /// Who hears the stream's events (kept weakly); nil makes the stream its own delegate again.
    override var delegate: (any StreamDelegate)? {
        get { (delegateReference.value as? any StreamDelegate) ?? self }
        set { delegateReference.value = newValue }
    }

    override func open() {
        pipe.open(.input)
    }

    override func close() {
        pipe.close(.input)
    }

    override var streamStatus: Stream.Status {
        pipe.status(.input)
    }

    override var streamError: (any Error)? {
        pipe.error(.input)
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        pipe.read(buffer, maxLength: len)
    }

    /// No internal buffer is lent out: always false (read with `read(_:maxLength:)`).
    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    override var hasBytesAvailable: Bool {
        pipe.hasBytesAvailable
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        pipe.schedule(.input, RunLoopTarget(runLoop: aRunLoop, mode: mode))
    }

    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        pipe.remove(.input, from: aRunLoop, mode: mode)
    }

    /// No properties: nil.
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? {
        nil
    }

    /// No properties can be set: false.
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool {
        false
    }
}

/// The bytes to an L2CAP channel's peer (`CBL2CAPChannel.outputStream`): `open()`, schedule it
/// in a run loop, and the delegate hears `.openCompleted`, `.hasSpaceAvailable` (write then),
/// and `.endEncountered` or `.errorOccurred` when the channel has ended. `write` takes what
/// there is room for (about one SDU waits beside the one being sent) and returns 0 when the
/// peer's credits hold the channel back; the next `.hasSpaceAvailable` says when to go on.
/// Closing both streams closes the channel once what was written has gone. (One made through
/// `OutputStream`'s required `init(toMemory:)` is a plain memory stream.)
final class L2CAPOutputStream: OutputStream, StreamDelegate {
    private let lifetime: L2CAPChannelLifetime?
    private let delegateReference = WeakReference<AnyObject>(nil)

    init(lifetime: L2CAPChannelLifetime) {
        self.lifetime = lifetime
        super.init(toMemory: ())
        lifetime.pipe.outputStream.value = self
    }

    required init(toMemory: ()) {
        self.lifetime = nil
        super.init(toMemory: ())
    }

    private var pipe: L2CAPStreamBridge? { lifetime?.pipe }

    /// Who hears the stream's events (kept weakly); nil makes the stream its own delegate again.
    override var delegate: (any StreamDelegate)? {
        get { (delegateReference.value as? any StreamDelegate) ?? self }
        set { delegateReference.value = newValue }
    }

    override func open() {
        guard let pipe else { return super.open() }
        pipe.open(.output)
    }

    override func close() {
        guard let pipe else { return super.close() }
        pipe.close(.output)
    }

    override var streamStatus: Stream.Status {
        guard let pipe else { return super.streamStatus }
        return pipe.status(.output)
    }

    override var streamError: (any Error)? {
        guard let pipe else { return super.streamError }
        return pipe.error(.output)
    }

    override func write(_ buffer: UnsafePointer<UInt8>, maxLength len: Int) -> Int {
        guard let pipe else { return super.write(buffer, maxLength: len) }
        return pipe.write(buffer, maxLength: len)
    }

    override var hasSpaceAvailable: Bool {
        guard let pipe else { return super.hasSpaceAvailable }
        return pipe.hasSpaceAvailable
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        guard let pipe else { return super.schedule(in: aRunLoop, forMode: mode) }
        pipe.schedule(.output, RunLoopTarget(runLoop: aRunLoop, mode: mode))
    }

    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        guard let pipe else { return super.remove(from: aRunLoop, forMode: mode) }
        pipe.remove(.output, from: aRunLoop, mode: mode)
    }

    /// No properties: nil.
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? {
        guard pipe != nil else { return super.property(forKey: key) }
        return nil
    }

    /// No properties can be set: false.
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool {
        guard pipe != nil else { return super.setProperty(property, forKey: key) }
        return false
    }
}
