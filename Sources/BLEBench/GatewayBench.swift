#if canImport(Glibc)
import Glibc
#endif
import BLEMQTT
import Foundation
import Synchronization

/// The PID of the broker `ble-bench gateway` started, for the interrupt handler to stop it.
private let startedBroker = Atomic<Int32>(0)

/// `ble-bench gateway`: several `Gateway`s, each on a virtual radio of its own with hundreds of
/// advertisers and a few notifying devices, publishing to one broker, measured by one
/// subscriber (GatewayBenchPasses, GatewayBenchReport). Without `--broker` it starts a
/// `mosquitto` of its own on a free loopback port and stops it (by PID) at the end, also on
/// Ctrl-C.
func gatewayBench(_ arguments: [String]) async throws {
    let parsed = Result { () throws(GatewayBenchError) in try GatewayBenchOptions(parsing: arguments) }
    guard case let .success(options) = parsed else {
        if case let .failure(error) = parsed { FileHandle.standardError.write(Data("ble-bench gateway: \(error)\n".utf8)) }
        exit(2)
    }
    var mosquitto: MosquittoProcess?
    let broker: MQTTBrokerURL
    if let given = options.broker {
        broker = given
    } else {
        do {
            let m = try MosquittoProcess()
            mosquitto = m
            broker = m.url
        } catch {
            FileHandle.standardError.write(Data("ble-bench gateway: \(error)\n".utf8))
            exit(1)
        }
    }
    let signals = stopBrokerOnInterrupt(mosquitto)
    defer { signals.forEach { $0.cancel() } }
    let brokerCPU: @Sendable () -> Double? = { [mosquitto] in mosquitto?.cpuSeconds() }
    let passes = GatewayBenchPasses(options: options, broker: broker)
    var report = GatewayBenchReport(options: options, broker: broker, mosquitto: mosquitto.map { ($0.version, $0.pid) })
    report.printHeader()
    do {
        // Radio only before and after the gateways: the machine's load drifts (other work shares
        // the cores), and the two brackets show by how much.
        report.radioOnly.append(try await passes.radioOnly(brokerCPU: brokerCPU))
        report.printRadioOnly(0)
        report.gateways = try await passes.gateways(brokerCPU: brokerCPU)
        report.printGateways()
        report.radioOnly.append(try await passes.radioOnly(brokerCPU: brokerCPU))
        report.printRadioOnly(1)
        report.printCPU()
    } catch {
        mosquitto?.stop()
        throw error
    }
    mosquitto?.stop()
}

/// On SIGINT or SIGTERM: stop the broker we started (by its PID) and exit.
private func stopBrokerOnInterrupt(_ mosquitto: MosquittoProcess?) -> [any DispatchSourceSignal] {
    guard let mosquitto else { return [] }
    startedBroker.store(mosquitto.pid, ordering: .relaxed)
    return [SIGINT, SIGTERM].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            let pid = startedBroker.load(ordering: .relaxed)
            if pid > 0 { kill(pid, SIGTERM) }
            FileHandle.standardError.write(Data("ble-bench gateway: interrupted; stopped mosquitto (PID \(pid))\n".utf8))
            exit(130)
        }
        source.resume()
        return source
    }
}
