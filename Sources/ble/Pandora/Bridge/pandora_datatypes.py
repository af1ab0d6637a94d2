"""Pandora's DataTypes (pandora/host.proto) and the AD structures they stand for (Core spec
Vol 3 Part C §11, Core Specification Supplement Part A §1), both ways, for pandora_bridge.py.
"""

from pandora import host_pb2

# Assigned numbers: AD types (Core Specification Supplement Part A §1), URI scheme names.

URI_SCHEMES = {0x01: '', 0x16: 'http:', 0x17: 'https:', 0x13: 'ftp:', 0x2D: 'mailto:', 0x31: 'tel:', 0x3B: 'ws:', 0x3C: 'wss:'}

UUID_LISTS = [
    # (field, AD type, bytes per UUID)
    ('incomplete_service_class_uuids16', 0x02, 2),
    ('complete_service_class_uuids16', 0x03, 2),
    ('incomplete_service_class_uuids32', 0x04, 4),
    ('complete_service_class_uuids32', 0x05, 4),
    ('incomplete_service_class_uuids128', 0x06, 16),
    ('complete_service_class_uuids128', 0x07, 16),
    ('service_solicitation_uuids16', 0x14, 2),
    ('service_solicitation_uuids32', 0x1F, 4),
    ('service_solicitation_uuids128', 0x15, 16),
]
SERVICE_DATA = [('service_data_uuid16', 0x16, 2), ('service_data_uuid32', 0x20, 4), ('service_data_uuid128', 0x21, 16)]


def uuid_text(raw):
    """A little-endian UUID as Pandora writes it: 183A, FFFF183A, or the 128-bit form."""
    h = raw[::-1].hex().upper()
    if len(raw) == 16:
        return f'{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}'
    return h


def uuid_bytes(text, size):
    raw = bytes.fromhex(text.replace('-', ''))
    if len(raw) != size:
        raise ValueError(f'{text} is not a {size * 8}-bit UUID')
    return raw[::-1]


def decode_data(ad):
    """AD structures (Core spec Vol 3 Part C §11) as DataTypes; what it cannot hold is left out."""
    fields = {}
    by_type = {kind: (field, size) for field, kind, size in UUID_LISTS}
    data_by_type = {kind: (field, size) for field, kind, size in SERVICE_DATA}
    service_data = {field: {} for field, _, _ in SERVICE_DATA}
    offset = 0
    while offset < len(ad):
        length = ad[offset]
        if length == 0 or offset + 1 + length > len(ad):
            break
        kind, value = ad[offset + 1], ad[offset + 2: offset + 1 + length]
        offset += 1 + length
        if kind in by_type:
            field, size = by_type[kind]
            fields.setdefault(field, []).extend(uuid_text(value[i:i + size]) for i in range(0, len(value) - size + 1, size))
        elif kind in data_by_type:
            field, size = data_by_type[kind]
            if len(value) >= size:
                service_data[field][uuid_text(value[:size])] = bytes(value[size:])
        elif kind == 0x01 and value:
            mode = host_pb2.DISCOVERABLE_LIMITED if value[0] & 0x01 else host_pb2.DISCOVERABLE_GENERAL if value[0] & 0x02 else host_pb2.NOT_DISCOVERABLE
            fields['le_discoverability_mode'] = mode
        elif kind == 0x08:
            fields['shortened_local_name'] = value.decode('utf-8', 'replace')
        elif kind == 0x09:
            fields['complete_local_name'] = value.decode('utf-8', 'replace')
        elif kind == 0x0A and len(value) == 1:
            fields['tx_power_level'] = int.from_bytes(value, 'little', signed=True)
        elif kind == 0x0D and len(value) == 3:
            fields['class_of_device'] = int.from_bytes(value, 'little')
        elif kind == 0x12 and len(value) == 4:
            fields['peripheral_connection_interval_min'] = int.from_bytes(value[:2], 'little')
            fields['peripheral_connection_interval_max'] = int.from_bytes(value[2:], 'little')
        elif kind == 0x17:
            fields.setdefault('public_target_addresses', []).extend(bytes(value[i:i + 6][::-1]) for i in range(0, len(value) - 5, 6))
        elif kind == 0x18:
            fields.setdefault('random_target_addresses', []).extend(bytes(value[i:i + 6][::-1]) for i in range(0, len(value) - 5, 6))
        elif kind == 0x19 and len(value) == 2:
            fields['appearance'] = int.from_bytes(value, 'little')
        elif kind == 0x1A and len(value) in (2, 3):
            fields['advertising_interval'] = int.from_bytes(value, 'little')
        elif kind == 0x24 and value:
            text = value.decode('utf-8', 'replace')
            scheme = URI_SCHEMES.get(ord(text[0]))
            fields['uri'] = scheme + text[1:] if scheme is not None else text
        elif kind == 0x27:
            fields['le_supported_features'] = bytes(value)
        elif kind == 0xFF:
            fields['manufacturer_specific_data'] = bytes(value)
    for field, entries in service_data.items():
        if entries:
            fields[field] = entries
    return host_pb2.DataTypes(**fields)


def encode_data(data):
    """DataTypes as AD structures; INVALID_ARGUMENT-worthy values raise ValueError."""
    out = bytearray()

    def add(kind, value):
        if len(value) > 254:
            raise ValueError(f'AD type 0x{kind:02X} is too long')
        out.extend(bytes([len(value) + 1, kind]) + bytes(value))

    if data.le_discoverability_mode:
        add(0x01, bytes([(0x01 if data.le_discoverability_mode == host_pb2.DISCOVERABLE_LIMITED else 0x02) | 0x04]))
    for field, kind, size in UUID_LISTS:
        uuids = getattr(data, field)
        if uuids:
            add(kind, b''.join(uuid_bytes(u, size) for u in uuids))
    if data.HasField('shortened_local_name'):
        add(0x08, data.shortened_local_name.encode())
    if data.HasField('complete_local_name'):
        add(0x09, data.complete_local_name.encode())
    if data.HasField('tx_power_level'):
        add(0x0A, data.tx_power_level.to_bytes(1, 'little', signed=True))
    if data.HasField('class_of_device'):
        add(0x0D, data.class_of_device.to_bytes(3, 'little'))
    if data.peripheral_connection_interval_min or data.peripheral_connection_interval_max:
        add(0x12, data.peripheral_connection_interval_min.to_bytes(2, 'little') + data.peripheral_connection_interval_max.to_bytes(2, 'little'))
    if data.public_target_addresses:
        add(0x17, b''.join(bytes(a)[::-1] for a in data.public_target_addresses))
    if data.random_target_addresses:
        add(0x18, b''.join(bytes(a)[::-1] for a in data.random_target_addresses))
    if data.appearance:
        add(0x19, data.appearance.to_bytes(2, 'little'))
    if data.HasField('advertising_interval'):
        add(0x1A, data.advertising_interval.to_bytes(2, 'little'))
    if data.uri:
        scheme = next((code for code, name in URI_SCHEMES.items() if name and data.uri.startswith(name)), None)
        add(0x24, (chr(scheme) + data.uri[len(URI_SCHEMES[scheme]):] if scheme else chr(0x01) + data.uri).encode())
    if data.le_supported_features:
        add(0x27, data.le_supported_features)
    for field, kind, size in SERVICE_DATA:
        for uuid, value in getattr(data, field).items():
            add(kind, uuid_bytes(uuid, size) + value)
    if data.manufacturer_specific_data:
        add(0xFF, data.manufacturer_specific_data)
    return bytes(out)
