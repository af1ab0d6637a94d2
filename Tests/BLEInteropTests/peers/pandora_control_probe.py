#!/usr/bin/env python3
"""A stand-in for ble pandora's gRPC bridge (standard library only): ble starts it as its
bridge (`ble pandora --bridge`), and it sends the control server bad and good requests, then
prints one JSON line per probe: {"event": "probe", "name": ..., "replies": [...]}, and a last
{"event": "probe-done"} line. PandoraControlTests reads those lines.
"""
import argparse
import json
import os
import socket
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--port', type=int)
    parser.add_argument('--control', type=int, required=True)
    parser.add_argument('--mode', default='requests')
    arguments, _ = parser.parse_known_args()
    connection = socket.create_connection(('127.0.0.1', arguments.control), timeout=20)
    lines = connection.makefile('rb')

    def send(raw):
        connection.sendall(raw if isinstance(raw, bytes) else (json.dumps(raw) + '\n').encode())

    def replies(request_id, until=lambda m: 'result' in m or 'error' in m or 'end' in m):
        got = []
        while True:
            message = json.loads(lines.readline())
            if message.get('id') != request_id:
                continue
            got.append(message)
            if until(message):
                return got

    def probe(name, request):
        send(request)
        print(json.dumps({'event': 'probe', 'name': name, 'replies': replies(request['id'])}), flush=True)

    if os.environ.get('BLE_PANDORA_PROBE') == 'wrong-token':
        send(b'not-the-token\n')
        print(json.dumps({'event': 'probe', 'name': 'wrong token', 'closed': lines.readline() == b''}), flush=True)
        return 0
    send(os.environ['BLE_PANDORA_TOKEN'].encode() + b'\n')
    if arguments.mode == 'long-line' or os.environ.get('BLE_PANDORA_PROBE') == 'long-line':
        send(b'{"id": 1, "op": "' + b'x' * (2 << 20) + b'"}\n')
        print(json.dumps({'event': 'probe', 'name': 'long line', 'closed': lines.readline() == b''}), flush=True)
        return 0

    # Lines that are not requests get no reply; the next request still does.
    send(b'not json\n[1, 2]\n{"op": "readLocalAddress"}\n{"id": "7", "op": "readLocalAddress"}\n\n')
    probe('address', {'id': 1, 'op': 'readLocalAddress'})
    probe('unknown op', {'id': 2, 'op': 'nope'})
    probe('connection not a number', {'id': 3, 'op': 'disconnect', 'connection': 'x'})
    probe('unknown connection', {'id': 4, 'op': 'disconnect', 'connection': 99})
    probe('bad address', {'id': 5, 'op': 'connectLE', 'address': 'zz', 'addressType': 'public'})
    probe('bad level', {'id': 6, 'op': 'secure', 'connection': 1, 'level': 9})
    probe('bad hex', {'id': 7, 'op': 'advertise', 'legacy': True, 'connectable': True, 'data': 'zz'})
    probe('bad interval', {'id': 8, 'op': 'advertise', 'legacy': True, 'interval': 5})
    probe('bad own address type', {'id': 9, 'op': 'scan', 'ownAddressType': 7})
    probe('unknown channel', {'id': 10, 'op': 'l2capSend', 'channel': 5, 'data': '00'})
    probe('basic channel', {'id': 11, 'op': 'l2capWaitConnection', 'connection': 99, 'mode': 'basic', 'spsm': 1})
    probe('directed advertising', {'id': 12, 'op': 'advertise', 'legacy': True, 'connectable': True, 'target': 'C0:00:00:00:00:01'})
    # A running request's id may not be reused; cancel ends a stream.
    send({'id': 20, 'op': 'scan'})
    probe('id in use', {'id': 20, 'op': 'readLocalAddress'})
    send({'id': 0, 'op': 'cancel', 'target': 20})
    print(json.dumps({'event': 'probe', 'name': 'cancelled scan', 'replies': replies(20)}), flush=True)
    # One OnPairing stream at a time; an answer nobody waits for changes nothing.
    send({'id': 21, 'op': 'onPairing'})
    probe('second onPairing', {'id': 22, 'op': 'onPairing'})
    send({'id': 0, 'op': 'pairingAnswer', 'event': 4242, 'confirm': True})
    send({'id': 0, 'op': 'pairingAnswer', 'event': 'x'})
    send({'id': 0, 'op': 'cancel', 'target': 21})
    print(json.dumps({'event': 'probe', 'name': 'cancelled onPairing', 'replies': replies(21)}), flush=True)
    # A request whose line is not JSON but names its id is answered.
    send(b'{"id": 25, "op": "advertise", "interval": NaN}\n')
    print(json.dumps({'event': 'probe', 'name': 'not json with an id', 'replies': replies(25)}), flush=True)
    # A reset whose caller goes away still finishes, and resets run one after another.
    send({'id': 26, 'op': 'factoryReset'})
    send({'id': 0, 'op': 'cancel', 'target': 26})
    send({'id': 27, 'op': 'reset'})
    replies(26)
    print(json.dumps({'event': 'probe', 'name': 'reset after a cancelled one', 'replies': replies(27)}), flush=True)
    probe('factory reset', {'id': 23, 'op': 'factoryReset'})
    probe('address after reset', {'id': 24, 'op': 'readLocalAddress'})
    print(json.dumps({'event': 'probe-done'}), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
