#!/usr/bin/env python3
"""The gRPC side of `ble pandora`: Pandora's Host, Security, SecurityStorage and L2CAP
services (the bt-test-interfaces stubs) served with grpcio, each call passed on to `ble` over
the control protocol of docs/PANDORA.md (one JSON object per line on a loopback TCP
connection). `ble pandora` starts this script; it is not meant to be run by hand.

Everything Bluetooth happens in `ble`; this file only converts: protobuf messages to control
requests, control results to protobuf messages, AD structures to Pandora's DataTypes and
back, control errors to gRPC status codes.
"""

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys

try:
    import grpc
    import grpc.aio
    from google.protobuf import any_pb2, empty_pb2, wrappers_pb2
    from pandora import host_pb2, l2cap_pb2, security_pb2
    from pandora.host_grpc_aio import HostServicer, add_HostServicer_to_server
    from pandora.l2cap_grpc_aio import L2CAPServicer, add_L2CAPServicer_to_server
    from pandora.security_grpc_aio import (
        SecurityServicer,
        SecurityStorageServicer,
        add_SecurityServicer_to_server,
        add_SecurityStorageServicer_to_server,
    )
except ImportError as missing:
    print(f'pandora-bridge: {sys.executable} lacks {missing.name}: '
          'pip install grpcio bt-test-interfaces==0.0.6 (or give ble pandora --python)', file=sys.stderr)
    sys.exit(3)

from pandora_datatypes import decode_data, encode_data

log = logging.getLogger('pandora-bridge')


class ControlFailure(Exception):
    """A request `ble` answered with an error: a gRPC status name and a message."""

    def __init__(self, code, message):
        super().__init__(f'{code}: {message}')
        self.code = getattr(grpc.StatusCode, code, grpc.StatusCode.INTERNAL)
        self.message = message

    @staticmethod
    def of(reply):
        """The failure an error reply of ble carries."""
        return ControlFailure(reply['error'].get('code', 'INTERNAL'), reply['error'].get('message', ''))


class Control:
    """The control connection: requests out, results, stream items and errors in."""

    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer
        self.next_id = 1
        self.queues = {}
        self.closed = asyncio.get_running_loop().create_future()

    async def run(self):
        try:
            while line := await self.reader.readline():
                try:
                    message = json.loads(line)
                    queue = self.queues.get(message['id'])
                except (ValueError, KeyError, TypeError):
                    log.error('a control line that is not a reply: %r', line[:200])
                    continue
                if queue is not None:
                    if queue.qsize() >= self.STREAM_BACKLOG:
                        # The client reads too slowly: end the request rather than buffer without end.
                        self.send({'id': 0, 'op': 'cancel', 'target': message['id']})
                        while not queue.empty():
                            queue.get_nowait()
                        queue.put_nowait({'error': {'code': 'RESOURCE_EXHAUSTED',
                                                    'message': f'more than {self.STREAM_BACKLOG} replies unread'}})
                        self.queues.pop(message['id'], None)
                        continue
                    queue.put_nowait(message)
        finally:
            for queue in self.queues.values():
                queue.put_nowait({'error': {'code': 'UNAVAILABLE', 'message': 'ble closed the control connection'}})
            if not self.closed.done():
                self.closed.set_result(None)

    # Items a stream may have waiting for a slow client; beyond it the request is cancelled
    # and the stream fails with RESOURCE_EXHAUSTED.
    STREAM_BACKLOG = 4096

    def send(self, message):
        # Not a number (NaN, infinities) is not JSON: ValueError, which callers report as
        # INVALID_ARGUMENT.
        self.writer.write(json.dumps(message, allow_nan=False).encode() + b'\n')

    def _open(self, op, arguments):
        request_id = self.next_id
        self.next_id += 1
        try:
            line = json.dumps({'id': request_id, 'op': op, **arguments}, allow_nan=False)
        except ValueError as e:
            raise ControlFailure('INVALID_ARGUMENT', f'{op}: {e}') from None
        self.queues[request_id] = asyncio.Queue()
        self.writer.write(line.encode() + b'\n')
        return request_id

    async def call(self, op, **arguments):
        """A unary request: its result object, or ControlFailure."""
        request_id = self._open(op, arguments)
        queue = self.queues[request_id]
        try:
            message = await queue.get()
        except asyncio.CancelledError:
            self.send({'id': 0, 'op': 'cancel', 'target': request_id})
            raise
        finally:
            self.queues.pop(request_id, None)
        if 'error' in message:
            raise ControlFailure.of(message)
        return message.get('result', {})

    async def stream(self, op, **arguments):
        """A streaming request: yields its items until it ends; a client that goes away
        (cancellation) cancels it in ble."""
        request_id = self._open(op, arguments)
        # The queue itself, not its entry: run() drops the entry of a stream it ended (backlog).
        queue = self.queues[request_id]
        finished = False
        try:
            while True:
                message = await queue.get()
                if 'item' in message:
                    yield message['item']
                elif 'error' in message:
                    finished = True
                    raise ControlFailure.of(message)
                else:
                    finished = True
                    return
        finally:
            if not finished:
                self.send({'id': 0, 'op': 'cancel', 'target': request_id})
            self.queues.pop(request_id, None)


async def failing(context, failure):
    await context.abort(failure.code, failure.message)


async def call(control, context, op, **arguments):
    """A unary request; its failure ends the gRPC call with the request's status."""
    try:
        return await control.call(op, **arguments)
    except ControlFailure as f:
        await failing(context, f)


def cookie(number):
    return any_pb2.Any(value=number.to_bytes(8, 'big'))


async def number_of(context, message, what):
    """The integer our cookies carry; a cookie we did not make is INVALID_ARGUMENT."""
    value = message.cookie.value
    if len(value) != 8:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f'not a {what} of this server')
    return int.from_bytes(value, 'big')


def address_text(raw):
    return ':'.join(f'{b:02X}' for b in raw)


async def address_of(context, raw):
    if len(raw) != 6:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, 'an address is 6 bytes')
    return address_text(raw)


PHY_NAMES = {host_pb2.PRIMARY_1M: '1m', host_pb2.PRIMARY_CODED: 'coded'}
SECONDARY_NAMES = {host_pb2.SECONDARY_1M: '1m', host_pb2.SECONDARY_2M: '2m', host_pb2.SECONDARY_CODED: 'coded'}


# ------------------------------------------------------------------------------ services


class Host(HostServicer):
    def __init__(self, control):
        self.control = control

    async def FactoryReset(self, request, context):
        await call(self.control, context, 'factoryReset')
        return empty_pb2.Empty()

    async def Reset(self, request, context):
        await call(self.control, context, 'reset')
        return empty_pb2.Empty()

    async def ReadLocalAddress(self, request, context):
        result = await call(self.control, context, 'readLocalAddress')
        return host_pb2.ReadLocalAddressResponse(address=bytes.fromhex(result['address'].replace(':', '')))

    # BR/EDR calls: an LE-only host has none of them.
    async def Connect(self, request, context):
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, 'Connect (BR/EDR): this is an LE-only host')

    async def WaitConnection(self, request, context):
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, 'WaitConnection (BR/EDR): this is an LE-only host')

    async def SetDiscoverabilityMode(self, request, context):
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, 'SetDiscoverabilityMode (BR/EDR): this is an LE-only host')

    async def SetConnectabilityMode(self, request, context):
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, 'SetConnectabilityMode (BR/EDR): this is an LE-only host')

    async def Inquiry(self, request, context):
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, 'Inquiry (BR/EDR): this is an LE-only host')
        yield host_pb2.InquiryResponse()  # never reached: makes this a stream handler

    async def ConnectLE(self, request, context):
        kind = request.WhichOneof('address')
        if kind is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, 'ConnectLE needs an address')
        address = await address_of(context, getattr(request, kind))
        address_type = 'public' if kind in ('public', 'public_identity') else 'random'
        try:
            result = await self.control.call('connectLE', address=address, addressType=address_type,
                                             ownAddressType=request.own_address_type)
        except ControlFailure as f:
            await failing(context, f)
        if 'connection' in result:
            return host_pb2.ConnectLEResponse(connection=host_pb2.Connection(cookie=cookie(result['connection'])))
        if result.get('connectionAlreadyExists'):
            return host_pb2.ConnectLEResponse(connection_already_exists=empty_pb2.Empty())
        return host_pb2.ConnectLEResponse(peer_not_found=empty_pb2.Empty())

    async def Disconnect(self, request, context):
        number = await number_of(context, request.connection, 'connection')
        await call(self.control, context, 'disconnect', connection=number)
        return empty_pb2.Empty()

    async def WaitDisconnection(self, request, context):
        number = await number_of(context, request.connection, 'connection')
        await call(self.control, context, 'waitDisconnection', connection=number)
        return empty_pb2.Empty()

    async def _parameters(self, op, request, context, response):
        """GetConnectionParameters and WaitConnectionUpdate: the link's parameters as `response`,
        or its `connection_not_found` once the link is down or unknown."""
        number = await number_of(context, request.connection, 'connection')
        try:
            result = await self.control.call(op, connection=number)
        except ControlFailure as f:
            if f.code != grpc.StatusCode.NOT_FOUND:
                await failing(context, f)
            result = {'connectionNotFound': True}
        if result.get('connectionNotFound'):
            return response(connection_not_found=empty_pb2.Empty())
        return response(connection_parameters=host_pb2.ConnectionParameters(
            connection_interval=result['interval'], peripheral_latency=result['latency'],
            supervision_timeout=result['supervisionTimeout']))

    async def GetConnectionParameters(self, request, context):
        return await self._parameters('getConnectionParameters', request, context, host_pb2.GetConnectionParametersResponse)

    async def WaitConnectionUpdate(self, request, context):
        return await self._parameters('waitConnectionUpdate', request, context, host_pb2.WaitConnectionUpdateResponse)

    async def Advertise(self, request, context):
        arguments = {
            'legacy': request.legacy,
            'connectable': request.connectable,
            'ownAddressType': request.own_address_type,
            'interval': request.interval,
            'primaryPhy': PHY_NAMES.get(request.primary_phy, '1m'),
            'secondaryPhy': SECONDARY_NAMES.get(request.secondary_phy, '1m'),
        }
        try:
            arguments['data'] = encode_data(request.data).hex()
            if request.HasField('scan_response_data'):
                arguments['scanResponse'] = encode_data(request.scan_response_data).hex()
        except (ValueError, OverflowError) as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f'data: {e}')
        target = request.WhichOneof('target')
        if target is not None:
            arguments['target'] = await address_of(context, getattr(request, target))
            arguments['targetType'] = target
        try:
            async with contextlib.aclosing(self.control.stream('advertise', **arguments)) as items:
                async for item in items:
                    yield host_pb2.AdvertiseResponse(connection=host_pb2.Connection(cookie=cookie(item['connection'])))
        except ControlFailure as f:
            await failing(context, f)

    async def Scan(self, request, context):
        phys = []
        for phy in request.phys:
            if phy not in PHY_NAMES:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f'unknown primary PHY {phy}')
            phys.append(PHY_NAMES[phy])
        try:
            async with contextlib.aclosing(self.control.stream('scan', passive=request.passive, ownAddressType=request.own_address_type, phys=phys)) as items:
                async for item in items:
                    yield self.report(item)
        except ControlFailure as f:
            await failing(context, f)

    @staticmethod
    def report(item):
        fields = {
            'legacy': item['legacy'],
            'connectable': item['connectable'],
            'truncated': item['truncated'],
            'rssi': item.get('rssi', 0),
            'data': decode_data(bytes.fromhex(item['data'])),
            'primary_phy': host_pb2.PRIMARY_CODED if item.get('primaryPhy') == 'coded' else host_pb2.PRIMARY_1M,
            'secondary_phy': {'1m': host_pb2.SECONDARY_1M, '2m': host_pb2.SECONDARY_2M, 'coded': host_pb2.SECONDARY_CODED}.get(
                item.get('secondaryPhy'), host_pb2.SECONDARY_NONE),
            'sid': item.get('sid', 0),
            'tx_power': item.get('txPower', 0),
            'periodic_advertising_interval': item.get('periodicInterval', 0) * 1.25,
        }
        raw = bytes.fromhex(item['address'].replace(':', ''))
        if 'identity' in item:
            identity = bytes.fromhex(item['identity'].replace(':', ''))
            fields['public_identity' if item['identityType'] == 'public' else 'random_static_identity'] = identity
        else:
            fields['public' if item['addressType'] == 'public' else 'random'] = raw
        return host_pb2.ScanningResponse(**fields)


class Security(SecurityServicer):
    def __init__(self, control):
        self.control = control

    async def OnPairing(self, request_iterator, context):
        # Questions sent and not yet answered, by their bytes (an answer carries the event it
        # answers); two alike are answered oldest first.
        events = {}

        async def answers():
            async for answer in request_iterator:
                waiting = events.get(answer.event.SerializeToString(deterministic=True))
                if not waiting:
                    log.warning('an answer to a pairing event this server did not send')
                    continue
                message = {'id': 0, 'op': 'pairingAnswer', 'event': waiting.pop(0)}
                variant = answer.WhichOneof('answer')
                if variant == 'confirm':
                    message['confirm'] = answer.confirm
                elif variant == 'passkey':
                    if answer.passkey <= 999_999:
                        message['passkey'] = answer.passkey
                    else:
                        log.warning('a passkey of more than six digits is no answer')
                self.control.send(message)

        reading = asyncio.create_task(answers())
        try:
            async with contextlib.aclosing(self.control.stream('onPairing')) as items:
                async for item in items:
                    fields = {}
                    if 'connection' in item:
                        fields['connection'] = host_pb2.Connection(cookie=cookie(item['connection']))
                    kind = item['kind']
                    if kind in ('numeric_comparison', 'passkey_entry_notification'):
                        fields[kind] = item['value']
                    else:
                        fields[kind] = empty_pb2.Empty()
                    event = security_pb2.PairingEvent(**fields)
                    events.setdefault(event.SerializeToString(deterministic=True), []).append(item['event'])
                    yield event
        except ControlFailure as f:
            await failing(context, f)
        finally:
            reading.cancel()

    async def _level(self, request, context):
        if request.WhichOneof('level') != 'le':
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, 'BR/EDR security: this is an LE-only host')
        return request.le + 1

    async def Secure(self, request, context):
        number = await number_of(context, request.connection, 'connection')
        level = await self._level(request, context)
        result = await call(self.control, context, 'secure', connection=number, level=level)
        return security_pb2.SecureResponse(**{result['result']: empty_pb2.Empty()})

    async def WaitSecurity(self, request, context):
        number = await number_of(context, request.connection, 'connection')
        level = await self._level(request, context)
        result = await call(self.control, context, 'waitSecurity', connection=number, level=level)
        outcome = result['result'] if result['result'] != 'not_reached' else 'pairing_failure'
        return security_pb2.WaitSecurityResponse(**{outcome: empty_pb2.Empty()})


class SecurityStorage(SecurityStorageServicer):
    def __init__(self, control):
        self.control = control

    async def _address(self, request, context):
        kind = request.WhichOneof('address')
        if kind is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, 'an address is needed')
        return {'address': await address_of(context, getattr(request, kind)), 'addressType': kind}

    async def IsBonded(self, request, context):
        arguments = await self._address(request, context)
        result = await call(self.control, context, 'isBonded', **arguments)
        return wrappers_pb2.BoolValue(value=result['bonded'])

    async def DeleteBond(self, request, context):
        arguments = await self._address(request, context)
        await call(self.control, context, 'deleteBond', **arguments)
        return empty_pb2.Empty()


class L2CAP(L2CAPServicer):
    def __init__(self, control):
        self.control = control

    async def _channel_request(self, request, context):
        number = await number_of(context, request.connection, 'connection')
        mode = request.WhichOneof('type')
        if mode not in ('le_credit_based', 'enhanced_credit_based'):
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, f'{mode} channels: this is an LE-only host')
        spec = getattr(request, mode)
        return {'connection': number, 'mode': mode, 'spsm': spec.spsm, 'mtu': spec.mtu, 'mps': spec.mps,
                'initialCredit': spec.initial_credit}

    async def Connect(self, request, context):
        arguments = await self._channel_request(request, context)
        result = await call(self.control, context, 'l2capConnect', **arguments)
        if 'channel' in result:
            return l2cap_pb2.ConnectResponse(channel=l2cap_pb2.Channel(cookie=cookie(result['channel'])))
        log.info('L2CAP connect refused: %s', result.get('detail'))
        return l2cap_pb2.ConnectResponse(error=l2cap_pb2.COMMAND_NOT_UNDERSTOOD)

    async def WaitConnection(self, request, context):
        arguments = await self._channel_request(request, context)
        result = await call(self.control, context, 'l2capWaitConnection', **arguments)
        return l2cap_pb2.WaitConnectionResponse(channel=l2cap_pb2.Channel(cookie=cookie(result['channel'])))

    async def _channel(self, request, context, field):
        if request.WhichOneof(field) != 'channel':
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, 'fixed channels are not served')
        return await number_of(context, request.channel, 'channel')

    async def Send(self, request, context):
        number = await self._channel(request, context, 'sink')
        await call(self.control, context, 'l2capSend', channel=number, data=request.data.hex())
        return l2cap_pb2.SendResponse(success=empty_pb2.Empty())

    async def Receive(self, request, context):
        number = await self._channel(request, context, 'source')
        try:
            async with contextlib.aclosing(self.control.stream('l2capReceive', channel=number)) as items:
                async for item in items:
                    yield l2cap_pb2.ReceiveResponse(data=bytes.fromhex(item['data']))
        except ControlFailure as f:
            await failing(context, f)

    async def Disconnect(self, request, context):
        number = await number_of(context, request.channel, 'channel')
        await call(self.control, context, 'l2capDisconnect', channel=number)
        return l2cap_pb2.DisconnectResponse(success=empty_pb2.Empty())

    async def WaitDisconnection(self, request, context):
        number = await number_of(context, request.channel, 'channel')
        await call(self.control, context, 'l2capWaitDisconnection', channel=number)
        return l2cap_pb2.WaitDisconnectionResponse(success=empty_pb2.Empty())


async def main():
    parser = argparse.ArgumentParser(description='the gRPC bridge of ble pandora')
    parser.add_argument('--port', type=int, required=True, help='gRPC port on 127.0.0.1')
    parser.add_argument('--control', type=int, required=True, help="ble's control port on 127.0.0.1")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format='pandora-bridge: %(message)s')
    token = os.environ.get('BLE_PANDORA_TOKEN', '')

    reader, writer = await asyncio.open_connection('127.0.0.1', arguments.control, limit=1 << 21)
    control = Control(reader, writer)
    reading = asyncio.create_task(control.run())

    server = grpc.aio.server()
    add_HostServicer_to_server(Host(control), server)
    add_SecurityServicer_to_server(Security(control), server)
    add_SecurityStorageServicer_to_server(SecurityStorage(control), server)
    add_L2CAPServicer_to_server(L2CAP(control), server)
    if server.add_insecure_port(f'127.0.0.1:{arguments.port}') == 0:
        print(f'pandora-bridge: cannot listen on 127.0.0.1:{arguments.port}', file=sys.stderr)
        return 1
    await server.start()
    # The token goes first on the control connection, once the gRPC port is open: ble then
    # says it serves.
    writer.write(token.encode() + b'\n')
    await control.closed
    await server.stop(1)
    reading.cancel()
    return 0


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))
