"""Our own Avatar cases for what Avatar's LE suites leave out, run by scripts/avatar.sh on the
same test bed (a Pandora DUT, a Bumble reference):

- LeL2capTest: LE credit-based channels both ways through pandora.l2cap.L2CAP (the DUT opens
  one to the reference, then the reference to the DUT), SDUs each way, a disconnection each
  side sees.
- PandoraBadInputTest: calls a client may get wrong (a cookie of another server, a connection
  that does not exist, BR/EDR levels, advertising data that does not fit its field, a second
  OnPairing stream) each end with a gRPC error, and the server keeps serving.
"""

import asyncio

import avatar
import grpc
from avatar import PandoraDevices
from avatar import pandora_snippet
from google.protobuf import any_pb2
from mobly import base_test
from mobly.asserts import assert_equal, assert_in, assert_is_not_none, fail
from pandora import l2cap_grpc_aio
from pandora.host_pb2 import RANDOM, Connection, DataTypes
from pandora.l2cap_pb2 import CreditBasedChannelRequest
from pandora.security_pb2 import LE_LEVEL3, LEVEL2


def l2cap(device):
    return l2cap_grpc_aio.L2CAP(device.aio.channel)


async def connected(initiator, acceptor):
    """An LE connection from `initiator` to `acceptor` (advertising); both sides' tokens."""
    advertisement = acceptor.aio.host.Advertise(legacy=True, connectable=True, own_address_type=RANDOM,
                                                data=DataTypes(manufacturer_specific_data=b'l2cap'))
    scan = initiator.aio.host.Scan(own_address_type=RANDOM)
    found = await anext((x async for x in scan if x.data.manufacturer_specific_data == b'l2cap'))
    scan.cancel()
    return await pandora_snippet.connect_le(initiator, advertisement, found, RANDOM)


class LeL2capTest(base_test.BaseTestClass):  # type: ignore[misc]
    def setup_class(self) -> None:
        self.devices = PandoraDevices(self)
        self.dut, self.ref, *_ = self.devices

    def teardown_class(self) -> None:
        self.devices.stop_all()

    @avatar.asynchronous
    async def setup_test(self) -> None:
        await asyncio.gather(self.dut.reset(), self.ref.reset())

    async def exchange(self, opener, opener_link, listener, listener_link, spsm):
        request = CreditBasedChannelRequest(spsm=spsm, mtu=512, mps=247, initial_credit=8)
        waiting = asyncio.ensure_future(l2cap(listener).WaitConnection(connection=listener_link, le_credit_based=request))
        await asyncio.sleep(0.2)  # the listener's server is registered before the request comes
        opened = await l2cap(opener).Connect(connection=opener_link, le_credit_based=request)
        assert_equal(opened.WhichOneof('result'), 'channel', msg=f'Connect: {opened}')
        accepted = await asyncio.wait_for(waiting, 10)
        assert_equal(accepted.WhichOneof('result'), 'channel', msg=f'WaitConnection: {accepted}')
        ours, theirs = opened.channel, accepted.channel

        for sender, sender_channel, receiver, receiver_channel, data in (
            (opener, ours, listener, theirs, b'hello from the opener'),
            # Text: Bumble's Receive logs each SDU decoded as UTF-8 and fails on other bytes.
            # 400 octets: two K-frames at an MPS of 247.
            (listener, theirs, opener, ours, b'0123456789' * 40),
        ):
            stream = l2cap(receiver).Receive(channel=receiver_channel)
            sent = await l2cap(sender).Send(channel=sender_channel, data=data)
            assert_equal(sent.WhichOneof('result'), 'success')
            received = await asyncio.wait_for(anext(aiter(stream)), 10)
            stream.cancel()
            assert_equal(received.data, data)

        closing = asyncio.ensure_future(l2cap(listener).WaitDisconnection(channel=theirs))
        closed = await l2cap(opener).Disconnect(channel=ours)
        assert_equal(closed.WhichOneof('result'), 'success')
        gone = await asyncio.wait_for(closing, 10)
        assert_equal(gone.WhichOneof('result'), 'success')

    @avatar.asynchronous
    async def test_dut_opens_a_channel_to_the_reference(self) -> None:
        dut_ref, ref_dut = await connected(self.dut, self.ref)
        await self.exchange(self.dut, dut_ref, self.ref, ref_dut, 0x81)

    @avatar.asynchronous
    async def test_reference_opens_a_channel_to_the_dut(self) -> None:
        ref_dut, dut_ref = await connected(self.ref, self.dut)
        await self.exchange(self.ref, ref_dut, self.dut, dut_ref, 0x83)


class PandoraBadInputTest(base_test.BaseTestClass):  # type: ignore[misc]
    def setup_class(self) -> None:
        self.devices = PandoraDevices(self)
        self.dut, *_ = self.devices

    def teardown_class(self) -> None:
        self.devices.stop_all()

    @avatar.asynchronous
    async def setup_test(self) -> None:
        await self.dut.reset()

    async def expect(self, code, call):
        try:
            result = await call
        except grpc.aio.AioRpcError as e:
            assert_equal(e.code(), code, msg=e.details())
            return
        fail(f'expected {code}, got {result}')

    @avatar.asynchronous
    async def test_bad_calls_get_errors_and_the_server_keeps_serving(self) -> None:
        host, security = self.dut.aio.host, self.dut.aio.security
        foreign = Connection(cookie=any_pb2.Any(value=b'\x01\x02'))
        unknown = Connection(cookie=any_pb2.Any(value=(4242).to_bytes(8, 'big')))
        await self.expect(grpc.StatusCode.INVALID_ARGUMENT, host.Disconnect(connection=foreign))
        await self.expect(grpc.StatusCode.NOT_FOUND, host.Disconnect(connection=unknown))
        await self.expect(grpc.StatusCode.NOT_FOUND, security.Secure(connection=unknown, le=LE_LEVEL3))
        await self.expect(grpc.StatusCode.UNIMPLEMENTED, security.Secure(connection=unknown, classic=LEVEL2))
        await self.expect(grpc.StatusCode.INVALID_ARGUMENT, host.ConnectLE(public=b'\x00\x01'))
        stream = host.Advertise(legacy=True, data=DataTypes(tx_power_level=300))
        await self.expect(grpc.StatusCode.INVALID_ARGUMENT, anext(aiter(stream)))
        stream = host.Advertise(legacy=True, data=DataTypes(manufacturer_specific_data=bytes(40)))
        await self.expect(grpc.StatusCode.INVALID_ARGUMENT, anext(aiter(stream)))
        first = security.OnPairing()
        second = security.OnPairing()
        await asyncio.sleep(0.5)
        await self.expect(grpc.StatusCode.FAILED_PRECONDITION, anext(aiter(second)))
        first.cancel()
        parameters = await host.GetConnectionParameters(connection=unknown)
        assert_equal(parameters.WhichOneof('result'), 'connection_not_found')
        address = await host.ReadLocalAddress()
        assert_is_not_none(address.address)
        assert_in(len(address.address), (6,))
